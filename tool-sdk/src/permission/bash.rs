//! Safety classification of Bash commands: may a shell command an LLM wants to run go
//! ahead without asking?
//!
//! [`classify`] parses the command with the tree-sitter Bash grammar and walks the whole
//! tree: every simple command of every list, pipeline, subshell, group, command or process
//! substitution, and the bodies of `if`/`while`/`for`/`case` and functions. It fails
//! closed:
//!
//! * [`Decision::Deny`] when any simple command anywhere is destructive beyond repair
//!   (`sudo`, `mkfs`, `rm -rf ~`, `dd of=/dev/sda`, fork bombs, …);
//! * [`Decision::Allow`] only when every simple command is a known read-only command with
//!   flags known to be safe and nothing else in the tree (file redirections, substitutions,
//!   variable assignments, function definitions, unknown syntax) could act;
//! * [`Decision::Ask`] otherwise, including whenever the parser cannot vouch for the text.
//!
//! Deny beats Ask beats Allow across the whole command.
//!
//! ```
//! use tool_sdk::permission::bash::{classify, Decision};
//!
//! assert_eq!(classify("git status && ls -la | head").decision, Decision::Allow);
//! assert_eq!(classify("ls; rm -rf ~").decision, Decision::Deny);
//! assert_eq!(classify("echo pwned > ~/.bashrc").decision, Decision::Ask);
//! ```

use std::cell::RefCell;
use std::fmt;

use tree_sitter::{Node, Parser};

/// Longest command (in bytes) that is parsed at all; longer ones are [`Decision::Ask`].
pub const MAX_COMMAND_LEN: usize = 100_000;

/// Deepest syntax nesting (and `bash -c`/`eval` re-parsing) that is followed; deeper
/// parts make the command [`Decision::Ask`].
pub const MAX_DEPTH: usize = 64;

/// What to do with a command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Run it without asking: every part is known to be read-only.
    Allow,
    /// Ask the user: the classifier cannot vouch for it.
    Ask,
    /// Refuse it: some part is destructive beyond repair.
    Deny,
}

impl Decision {
    fn rank(self) -> u8 {
        match self {
            Decision::Allow => 0,
            Decision::Ask => 1,
            Decision::Deny => 2,
        }
    }
}

/// The verdict on a command and why, phrased for the user who may be asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// What to do.
    pub decision: Decision,
    /// Which command decided it and why, briefly.
    pub reason: String,
}

/// One simple command after unwrapping wrappers such as `env`, `timeout` or `xargs`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleCommand {
    /// The words of the command that runs, quotes and escapes removed. A word holding an
    /// expansion keeps its source text (`$HOME`) and sets [`SimpleCommand::dynamic`].
    pub argv: Vec<String>,
    /// The wrappers peeled off, outermost first (`["timeout"]` for `timeout 5 ls`).
    pub wrappers: Vec<String>,
    /// Whether some word's value is only known at run time (expansions, substitutions,
    /// globs, braces, or the arguments `xargs` appends).
    pub dynamic: bool,
}

/// Why [`simple_commands`] could not list the commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BashParseError {
    /// Longer than [`MAX_COMMAND_LEN`].
    TooLong,
    /// The grammar does not accept the text (the tree has ERROR or MISSING nodes).
    Syntax,
    /// Nested deeper than [`MAX_DEPTH`].
    TooDeep,
    /// The parser gave up.
    Parser,
}

impl fmt::Display for BashParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BashParseError::TooLong => "command is too long to analyze",
            BashParseError::Syntax => "command does not parse as Bash",
            BashParseError::TooDeep => "command is nested too deeply to analyze",
            BashParseError::Parser => "the Bash parser failed",
        })
    }
}

impl std::error::Error for BashParseError {}

/// Classifies a Bash command; see the [module docs](self).
pub fn classify(command: &str) -> Classification {
    let mut verdict = Verdict::default();
    analyze(command, 0, &mut verdict, &mut Vec::new());
    verdict.finish()
}

/// Every simple command of `command`, in source order, after unwrapping wrappers: the
/// argv a rule such as `Bash(git status:*)` must match, for each of them.
///
/// Commands inside substitutions, subshells, function bodies and the static scripts of
/// `bash -c '…'`/`eval '…'` are included. Errs when the text cannot be analyzed fully.
pub fn simple_commands(command: &str) -> Result<Vec<SimpleCommand>, BashParseError> {
    if command.len() > MAX_COMMAND_LEN {
        return Err(BashParseError::TooLong);
    }
    let mut verdict = Verdict::default();
    let mut out = Vec::new();
    analyze(command, 0, &mut verdict, &mut out);
    match verdict.parse_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// A command's verdict and its simple commands, from one parse: what the permission gate
/// computes once per Bash call and every rule and the classifier then read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandAnalysis {
    /// The classifier's verdict, as [`classify`] gives it.
    pub classification: Classification,
    /// The simple commands, as [`simple_commands`] gives them.
    pub commands: Result<Vec<SimpleCommand>, BashParseError>,
}

/// [`classify`] and [`simple_commands`] in one walk of the syntax tree.
pub fn analyze_command(command: &str) -> CommandAnalysis {
    let mut verdict = Verdict::default();
    let mut out = Vec::new();
    analyze(command, 0, &mut verdict, &mut out);
    let commands = match verdict.parse_error.clone() {
        Some(e) => Err(e),
        None => Ok(out),
    };
    CommandAnalysis {
        classification: verdict.finish(),
        commands,
    }
}

/// Rewrites a `git` argv so that repository configuration cannot run programs while a
/// read-only subcommand runs: no pager, no fsmonitor or hooks, no external diff or
/// textconv drivers. Returns `argv` unchanged unless `argv[0]` is `git`.
pub fn harden_git(argv: &[String]) -> Vec<String> {
    if argv.first().map(String::as_str) != Some("git") {
        return argv.to_vec();
    }
    let mut out: Vec<String> = [
        "git",
        "--no-pager",
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "core.pager=cat",
        "-c",
        "diff.external=",
        "-c",
        "core.sshCommand=false",
        "-c",
        "protocol.allow=never",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rest = &argv[1..];
    // The subcommand is the first word that is not a global option.
    let sub = rest.iter().position(|a| !a.starts_with('-'));
    match sub {
        Some(i) => {
            out.extend(rest[..=i].iter().cloned());
            if matches!(
                rest[i].as_str(),
                "diff" | "log" | "show" | "whatchanged" | "diff-tree" | "diff-files" | "diff-index"
            ) {
                out.push("--no-ext-diff".into());
                out.push("--no-textconv".into());
            }
            if rest[i] == "blame" || rest[i] == "annotate" {
                out.push("--no-textconv".into());
            }
            out.extend(rest[i + 1..].iter().cloned());
        }
        None => out.extend(rest.iter().cloned()),
    }
    out
}

// ---------------------------------------------------------------------------------------
// Verdict bookkeeping

#[derive(Default)]
struct Verdict {
    decision: Option<(Decision, String)>,
    allowed: Vec<String>,
    parse_error: Option<BashParseError>,
}

impl Verdict {
    fn escalate(&mut self, decision: Decision, reason: String) {
        let worse = match &self.decision {
            None => true,
            Some((d, _)) => decision.rank() > d.rank(),
        };
        if worse {
            self.decision = Some((decision, reason));
        }
    }

    fn ask(&mut self, reason: String) {
        self.escalate(Decision::Ask, reason);
    }

    fn deny(&mut self, reason: String) {
        self.escalate(Decision::Deny, reason);
    }

    fn parse_error(&mut self, e: BashParseError, reason: String) {
        self.parse_error.get_or_insert(e);
        self.ask(reason);
    }

    fn finish(self) -> Classification {
        match self.decision {
            Some((decision, reason)) if decision != Decision::Allow => {
                Classification { decision, reason }
            }
            _ if self.allowed.is_empty() => Classification {
                decision: Decision::Allow,
                reason: "no command to run".into(),
            },
            _ => {
                let mut names = self.allowed;
                names.dedup();
                Classification {
                    decision: Decision::Allow,
                    reason: format!("read-only: {}", names.join(", ")),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Parsing

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

fn analyze(command: &str, depth: usize, verdict: &mut Verdict, out: &mut Vec<SimpleCommand>) {
    if command.len() > MAX_COMMAND_LEN {
        verdict.parse_error(
            BashParseError::TooLong,
            format!("command is longer than {MAX_COMMAND_LEN} bytes"),
        );
        return;
    }
    if depth > MAX_DEPTH {
        verdict.parse_error(
            BashParseError::TooDeep,
            "nested too deeply to analyze".into(),
        );
        return;
    }
    if let Some(c) = command
        .chars()
        .find(|&c| (c.is_control() && c != '\t' && c != '\n') || is_invisible(c))
    {
        verdict.ask(format!(
            "contains the control or invisible character U+{:04X}",
            c as u32
        ));
    }
    // Bash joins `r\<newline>m` into `rm`; the grammar splits it into two words.
    let bytes = command.as_bytes();
    if bytes.windows(4).any(|w| {
        w[1] == b'\\' && w[2] == b'\n' && !w[0].is_ascii_whitespace() && !w[3].is_ascii_whitespace()
    }) {
        verdict.ask("a line continuation splits a word".into());
    }
    let tree = PARSER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            let mut p = Parser::new();
            if p.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
                return None;
            }
            *slot = Some(p);
        }
        let parser = slot.as_mut()?;
        parser.reset();
        parser.parse(command, None)
    });
    let Some(tree) = tree else {
        verdict.parse_error(BashParseError::Parser, "the Bash parser failed".into());
        return;
    };
    let mut walker = Walker {
        src: command,
        depth,
        verdict,
        out,
    };
    walker.walk(tree.root_node());
}

fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// An evaluated shell word.
#[derive(Clone, Debug, Default)]
struct Arg {
    /// Static value; expansions keep their source text.
    value: String,
    /// Some part is only known at run time.
    dynamic: bool,
    /// Holds an unquoted glob or brace character.
    glob: bool,
    /// Its first character is not a known literal (could turn into a `-flag`).
    lead_unknown: bool,
}

impl Arg {
    fn opaque(&self) -> bool {
        self.dynamic || self.glob
    }

    fn push_unknown(&mut self, text: &str) {
        if self.value.is_empty() {
            self.lead_unknown = true;
        }
        self.dynamic = true;
        self.value.push_str(text);
    }

    fn push_meta(&mut self, c: char) {
        if self.value.is_empty() {
            self.lead_unknown = true;
        }
        self.glob = true;
        self.value.push(c);
    }

    fn append(&mut self, other: Arg) {
        if self.value.is_empty() && other.lead_unknown {
            self.lead_unknown = true;
        }
        self.dynamic |= other.dynamic;
        self.glob |= other.glob;
        self.value.push_str(&other.value);
    }
}

struct Walker<'a, 'v> {
    src: &'a str,
    depth: usize,
    verdict: &'v mut Verdict,
    out: &'v mut Vec<SimpleCommand>,
}

/// Node kinds that are only structure: their children are judged, they add nothing.
const STRUCTURAL: &[&str] = &[
    "program",
    "list",
    "pipeline",
    "subshell",
    "compound_statement",
    "redirected_statement",
    "negated_command",
    "if_statement",
    "elif_clause",
    "else_clause",
    "while_statement",
    "case_statement",
    "case_item",
    "do_group",
    "comment",
    "command_name",
    "heredoc_redirect",
    "herestring_redirect",
    "heredoc_body",
    "heredoc_start",
    "heredoc_end",
    "heredoc_content",
    "variable_name",
    "word",
    "number",
    "string",
    "string_content",
    "raw_string",
    "ansi_c_string",
    "concatenation",
    "simple_expansion",
    "file_descriptor",
    "special_variable_name",
    "extglob_pattern",
];

impl Walker<'_, '_> {
    fn text(&self, node: Node) -> &str {
        self.src.get(node.byte_range()).unwrap_or("")
    }

    /// Visits the whole tree with an explicit stack (no recursion, so no stack overflow),
    /// in source order. Nesting other than lists and pipelines deeper than
    /// `MAX_DEPTH * 4` is not followed and makes the command Ask.
    fn walk(&mut self, root: Node) {
        let mut stack = vec![(root, 0usize)];
        while let Some((node, level)) = stack.pop() {
            if level > MAX_DEPTH * 4 {
                self.verdict.parse_error(
                    BashParseError::TooDeep,
                    "nested too deeply to analyze".into(),
                );
                continue;
            }
            if !self.visit(node) {
                continue;
            }
            let next = if matches!(node.kind(), "program" | "list" | "pipeline") {
                level
            } else {
                level + 1
            };
            let mut cursor = node.walk();
            let children: Vec<Node> = node.children(&mut cursor).collect();
            stack.extend(children.into_iter().rev().map(|c| (c, next)));
        }
    }

    /// Judges one node; returns whether its children are to be visited.
    fn visit(&mut self, node: Node) -> bool {
        if node.is_error() || node.is_missing() {
            self.verdict.parse_error(
                BashParseError::Syntax,
                "the command does not parse as Bash".into(),
            );
        }
        if !node.is_named() && !node.is_error() {
            return false;
        }
        let kind = node.kind();
        match kind {
            "command" => {
                self.command(node);
            }
            "file_redirect" => self.redirect(node),
            "command_substitution" | "process_substitution" => {
                let what = if kind == "command_substitution" {
                    "command"
                } else {
                    "process"
                };
                self.verdict.ask(format!(
                    "`{}` runs a {what} substitution",
                    short(self.text(node))
                ));
            }
            "expansion" => {
                let t = self.text(node);
                if !trivial_expansion(t) {
                    self.verdict.ask(format!(
                        "`{}` is a parameter expansion with operators",
                        short(t)
                    ));
                }
            }
            "arithmetic_expansion" => {
                let t = self.text(node);
                if constant_arithmetic(t) {
                    return false;
                }
                self.verdict
                    .ask(format!("`{}` evaluates arithmetic on variables", short(t)));
            }
            "test_command" => {
                let t = self.text(node);
                if simple_test(t) {
                    return false;
                }
                self.verdict.ask(format!(
                    "`{}` is a test whose operands are evaluated at run time",
                    short(t)
                ));
            }
            "function_definition" => self.function(node),
            "for_statement" => {
                let var = node
                    .child_by_field_name("variable")
                    .map(|n| self.text(n))
                    .unwrap_or("");
                let select = node.child(0).is_some_and(|k| k.kind() == "select");
                if select {
                    self.verdict.ask("`select` reads the terminal".into());
                } else if var.bytes().any(|b| b.is_ascii_uppercase()) {
                    self.verdict
                        .ask(format!("the loop sets the variable {}", short(var)));
                }
            }
            "variable_assignment" | "variable_assignments" => {
                self.verdict.ask(format!(
                    "`{}` sets a shell variable",
                    short(self.text(node))
                ));
            }
            "ERROR" => {}
            k if STRUCTURAL.contains(&k) => {}
            k => {
                self.verdict.ask(format!(
                    "`{}` uses shell syntax ({}) that is not analyzed",
                    short(self.text(node)),
                    k.replace('_', " ")
                ));
            }
        }
        true
    }

    fn function(&mut self, node: Node) {
        let name = node
            .child_by_field_name("name")
            .map(|n| self.text(n).to_string())
            .unwrap_or_default();
        self.verdict
            .ask(format!("defines the shell function `{}`", short(&name)));
        let Some(body) = node.child_by_field_name("body") else {
            return;
        };
        // A function that calls itself: the fork bomb `:(){ :|:& };:` and its kin.
        let mut stack = vec![body];
        while let Some(n) = stack.pop() {
            if n.kind() == "command_name" && self.text(n) == name {
                self.verdict.deny(format!(
                    "`{}` defines a function that calls itself (fork bomb)",
                    short(&name)
                ));
                return;
            }
            let mut cursor = n.walk();
            stack.extend(n.children(&mut cursor));
        }
    }

    fn eval(&self, node: Node) -> Arg {
        let mut arg = Arg::default();
        self.eval_into(node, &mut arg);
        arg
    }

    fn eval_into(&self, node: Node, arg: &mut Arg) {
        let text = self.text(node);
        match node.kind() {
            "word" | "number" | "command_name" if node.named_child_count() == 0 => {
                unescape_unquoted(text, arg);
            }
            "command_name" => {
                let mut cursor = node.walk();
                for c in node.named_children(&mut cursor) {
                    self.eval_into(c, arg);
                }
            }
            "raw_string" => {
                arg.value
                    .push_str(text.get(1..text.len().saturating_sub(1)).unwrap_or(""));
            }
            "ansi_c_string" => {
                let inner = text.get(2..text.len().saturating_sub(1)).unwrap_or("");
                if inner.contains('\\') {
                    arg.push_unknown(text);
                } else {
                    arg.value.push_str(inner);
                }
            }
            "string" => {
                // Copy everything between the quotes, judging the named children.
                let start = node.start_byte() + 1;
                let end = node.end_byte().saturating_sub(1).max(start);
                let mut at = start;
                let mut cursor = node.walk();
                let children: Vec<Node> = node.named_children(&mut cursor).collect();
                for c in children {
                    if c.start_byte() > at {
                        unescape_double(self.src.get(at..c.start_byte()).unwrap_or(""), arg);
                    }
                    match c.kind() {
                        "string_content" => unescape_double(self.text(c), arg),
                        _ => arg.push_unknown(self.text(c)),
                    }
                    at = at.max(c.end_byte());
                }
                if end > at {
                    unescape_double(self.src.get(at..end).unwrap_or(""), arg);
                }
            }
            "concatenation" => {
                let mut cursor = node.walk();
                let children: Vec<Node> = node.children(&mut cursor).collect();
                let mut brace = false;
                for (i, c) in children.iter().enumerate() {
                    if c.kind() == "word" && self.text(*c).contains('{') {
                        brace = true;
                        if i == 0 && self.text(*c).starts_with('{') && arg.value.is_empty() {
                            arg.lead_unknown = true;
                        }
                    }
                    let mut part = Arg::default();
                    self.eval_into(*c, &mut part);
                    arg.append(part);
                }
                if brace && text.contains('}') && (text.contains(',') || text.contains("..")) {
                    arg.glob = true;
                }
            }
            "brace_expression" => {
                for c in text.chars() {
                    arg.push_meta(c);
                }
                arg.dynamic = true;
            }
            _ => arg.push_unknown(text),
        }
    }

    fn redirect(&mut self, node: Node) {
        let mut op = String::new();
        let mut cursor = node.walk();
        for c in node.children(&mut cursor) {
            if !c.is_named() {
                op.push_str(c.kind());
            }
        }
        let Some(dest) = node.child_by_field_name("destination") else {
            if op.contains('>') && op != ">&-" {
                self.verdict
                    .ask(format!("`{}` redirects output", short(self.text(node))));
            }
            return;
        };
        let arg = self.eval(dest);
        let text = short(self.text(node)).to_string();
        if op == "<" {
            return;
        }
        if (op == ">&" || op == "<&") && !arg.opaque() {
            let v = arg.value.as_str();
            if v == "-" || (!v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())) {
                return;
            }
        }
        if arg.opaque() {
            self.verdict
                .ask(format!("`{text}` redirects to a computed file name"));
            return;
        }
        let v = arg.value.as_str();
        if is_block_device(v) {
            self.verdict.deny(format!("`{text}` writes to a device"));
        } else if matches!(v, "/dev/null" | "/dev/stdout" | "/dev/stderr")
            || v.strip_prefix("/dev/fd/")
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
        } else {
            self.verdict.ask(format!("`{text}` writes to the file {v}"));
        }
    }

    fn command(&mut self, node: Node) {
        let Some(name) = node.child_by_field_name("name") else {
            return;
        };
        let mut argv = vec![self.eval(name)];
        let mut cursor = node.walk();
        for a in node.children_by_field_name("argument", &mut cursor) {
            argv.push(self.eval(a));
        }
        let mut wrappers = Vec::new();
        let mut dynamic = false;
        let judged = judge(&argv, self.depth, &mut wrappers, &mut dynamic, self.out);
        let shown = argv
            .iter()
            .map(|a| a.value.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        match judged {
            Judged::Allow(name) => self.verdict.allowed.push(name),
            Judged::Ask(why) => self.verdict.ask(format!("`{}`: {why}", short(&shown))),
            Judged::Deny(why) => self.verdict.deny(format!("`{}`: {why}", short(&shown))),
            Judged::Nested(inner) => {
                if let Some((d, why)) = inner.decision
                    && d != Decision::Allow
                {
                    self.verdict
                        .escalate(d, format!("`{}` runs a script: {why}", short(&shown)));
                }
                self.verdict.ask(format!(
                    "`{}` runs a shell script given as text",
                    short(&shown)
                ));
                if let Some(e) = inner.parse_error {
                    self.verdict.parse_error.get_or_insert(e);
                }
            }
        }
    }
}

fn short(s: &str) -> &str {
    if s.len() <= 80 {
        return s;
    }
    let mut end = 77;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

fn unescape_unquoted(text: &str, arg: &mut Arg) {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some('\n') | None => {}
                Some(n) => arg.value.push(n),
            },
            '*' | '?' | '[' => arg.push_meta(c),
            '{' if text.contains(',') || text.contains("..") => arg.push_meta(c),
            '$' | '`' => arg.push_unknown(&c.to_string()),
            _ => arg.value.push(c),
        }
    }
}

fn unescape_double(text: &str, arg: &mut Arg) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.peek() {
                Some('\n') => {
                    chars.next();
                }
                Some(&n @ ('$' | '`' | '"' | '\\')) => {
                    chars.next();
                    arg.value.push(n);
                }
                _ => arg.value.push('\\'),
            },
            '$' | '`' => arg.push_unknown(&c.to_string()),
            _ => arg.value.push(c),
        }
    }
}

fn trivial_expansion(t: &str) -> bool {
    let Some(inner) = t.strip_prefix("${").and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    !inner.is_empty()
        && (inner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
            || matches!(inner, "?" | "#" | "@" | "*" | "$" | "!" | "-"))
}

fn constant_arithmetic(t: &str) -> bool {
    let inner = t
        .strip_prefix("$((")
        .and_then(|s| s.strip_suffix("))"))
        .or_else(|| t.strip_prefix("$[").and_then(|s| s.strip_suffix(']')));
    inner.is_some_and(|i| {
        i.bytes()
            .all(|b| b.is_ascii_digit() || b" \t()+-*/%<>=!&|^~".contains(&b))
    })
}

/// `[ … ]` / `[[ … ]]` over literal words only: nothing is expanded or evaluated.
fn simple_test(t: &str) -> bool {
    let inner = t
        .strip_prefix("[[")
        .and_then(|s| s.strip_suffix("]]"))
        .or_else(|| t.strip_prefix('[').and_then(|s| s.strip_suffix(']')));
    inner.is_some_and(|i| {
        !i.contains(['$', '`', '[', ']', '(', ')', '\\', '<', '>'])
            && !i.split_whitespace().any(|w| matches!(w, "-v" | "-R"))
    })
}

fn is_block_device(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/dev/") else {
        return false;
    };
    const PREFIXES: &[&str] = &[
        "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "mapper/", "loop", "md", "dm-", "sr",
        "nbd", "rbd", "zram", "mem", "kmem", "port", "fd0", "block/",
    ];
    PREFIXES.iter().any(|p| rest.starts_with(p))
}

// ---------------------------------------------------------------------------------------
// Judging one simple command

enum Judged {
    Allow(String),
    Ask(String),
    Deny(String),
    Nested(Verdict),
}

fn judge(
    argv: &[Arg],
    depth: usize,
    wrappers: &mut Vec<String>,
    dynamic: &mut bool,
    out: &mut Vec<SimpleCommand>,
) -> Judged {
    let push = |out: &mut Vec<SimpleCommand>, wrappers: &[String], dynamic: bool| {
        out.push(SimpleCommand {
            argv: argv.iter().map(|a| a.value.clone()).collect(),
            wrappers: wrappers.to_vec(),
            dynamic: dynamic || argv.iter().any(Arg::opaque),
        });
    };
    let Some(name) = argv.first() else {
        return Judged::Ask("empty command".into());
    };
    if name.dynamic {
        push(out, wrappers, *dynamic);
        return Judged::Ask("the command name is computed at run time".into());
    }
    let base = name.value.rsplit('/').next().unwrap_or("").to_string();
    let args = &argv[1..];
    if let Some(why) = deny_reason(&base, args) {
        push(out, wrappers, *dynamic);
        return Judged::Deny(why);
    }
    // Wrappers run another command: judge that one.
    match unwrap(&base, args) {
        Unwrap::NotWrapper => {}
        Unwrap::Alone => {
            push(out, wrappers, *dynamic);
            return if name.value.contains('/') || name.glob {
                Judged::Ask(format!("`{}` is not a plain command name", name.value))
            } else {
                Judged::Allow(base)
            };
        }
        Unwrap::Refuse(why) => {
            push(out, wrappers, *dynamic);
            return Judged::Ask(why);
        }
        Unwrap::Inner {
            start,
            appends,
            note,
        } => {
            wrappers.push(base.clone());
            let mut inner: Vec<Arg> = args[start..].to_vec();
            if appends {
                *dynamic = true;
                inner.push(Arg {
                    value: "…".into(),
                    dynamic: true,
                    glob: false,
                    lead_unknown: true,
                });
            }
            let judged = judge(&inner, depth, wrappers, dynamic, out);
            return match (judged, note) {
                (Judged::Allow(n), None) if !name.value.contains('/') => {
                    Judged::Allow(format!("{base} {n}"))
                }
                (Judged::Allow(_), Some(why)) => Judged::Ask(why),
                (Judged::Allow(_), None) => {
                    Judged::Ask(format!("`{}` is not a plain command name", name.value))
                }
                (other, _) => other,
            };
        }
    }
    push(out, wrappers, *dynamic);
    // Shells and eval run text: parse it, so that a Deny inside is seen.
    if let Some(script) = script_of(&base, args) {
        let mut verdict = Verdict::default();
        match script {
            Some(s) => analyze(&s, depth + 1, &mut verdict, out),
            None => verdict.ask("the script is computed at run time".into()),
        }
        return Judged::Nested(verdict);
    }
    if name.value.contains('/') {
        return Judged::Ask(format!("`{}` is a path, not a known command", name.value));
    }
    if name.glob && name.value != "[" {
        return Judged::Ask("the command name holds a glob".into());
    }
    match safe_check(&base, args) {
        None => Judged::Ask(format!("`{base}` is not a known read-only command")),
        Some(Err(why)) => Judged::Ask(why),
        Some(Ok(())) => {
            if *dynamic {
                Judged::Ask("runs with arguments only known at run time".into())
            } else {
                Judged::Allow(base)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Deny rules

fn deny_reason(base: &str, args: &[Arg]) -> Option<String> {
    let vals: Vec<&str> = args.iter().map(|a| a.value.as_str()).collect();
    match base {
        "sudo" | "su" | "doas" | "pkexec" | "run0" => {
            return Some(format!("`{base}` runs commands as another user"));
        }
        "shutdown" | "reboot" | "halt" | "poweroff" => {
            return Some(format!("`{base}` stops the machine"));
        }
        "init" | "telinit" if vals.iter().any(|v| matches!(*v, "0" | "6")) => {
            return Some(format!("`{base}` stops the machine"));
        }
        "systemctl"
            if vals.iter().any(|v| {
                matches!(
                    *v,
                    "poweroff" | "reboot" | "halt" | "kexec" | "suspend" | "hibernate"
                )
            }) =>
        {
            return Some("`systemctl` stops the machine".into());
        }
        b if b.starts_with("mkfs") || b == "mke2fs" || b == "mkswap" || b == "wipefs" => {
            return Some(format!("`{base}` formats a disk"));
        }
        "dd" => {
            if let Some(of) = vals.iter().find_map(|v| v.strip_prefix("of="))
                && is_block_device(of)
            {
                return Some(format!("`dd` writes to the device {of}"));
            }
        }
        "rm" => {
            if vals.contains(&"--no-preserve-root") {
                return Some("`rm --no-preserve-root`".into());
            }
            let recursive = args
                .iter()
                .any(|a| has_short(&a.value, &['r', 'R']) || long_matches(&a.value, "--recursive"));
            if recursive && let Some(t) = args.iter().find(|a| catastrophic_path(a)) {
                return Some(format!("recursively deletes {}", t.value));
            }
        }
        "chmod" | "chown" | "chgrp" => {
            let recursive = args
                .iter()
                .any(|a| has_short(&a.value, &['R']) || long_matches(&a.value, "--recursive"));
            if recursive && let Some(t) = args.iter().find(|a| catastrophic_path(a)) {
                return Some(format!("`{base}` recursively changes {}", t.value));
            }
        }
        "find" => {
            if vals.contains(&"-delete")
                && let Some(t) = args.iter().find(|a| catastrophic_path(a))
            {
                return Some(format!("`find -delete` deletes under {}", t.value));
            }
        }
        "shred" | "tee" | "cp" | "mv" | "truncate" | "blkdiscard" | "fdisk" | "sfdisk"
        | "parted" => {
            if let Some(d) = vals.iter().find(|v| is_block_device(v)) {
                return Some(format!("`{base}` writes to the device {d}"));
            }
        }
        _ => {}
    }
    None
}

/// `/`, `/*`, a top-level directory, `~` or `$HOME` (with `/`, `/*`, `/.` tails).
fn catastrophic_path(arg: &Arg) -> bool {
    if arg.lead_unknown && !arg.value.starts_with('$') {
        return false;
    }
    let mut v = arg.value.as_str();
    for home in ["~", "$HOME", "${HOME}"] {
        if let Some(rest) = v.strip_prefix(home) {
            let parts = components(rest);
            return match parts {
                Some(p) => p.is_empty() || (p.len() == 1 && p[0] == "*"),
                None => false,
            };
        }
    }
    if v.starts_with('~') && !v.contains('/') {
        return true; // ~user
    }
    if !v.starts_with('/') {
        return false;
    }
    v = v.trim_start_matches('/');
    match components(v) {
        Some(p) => p.len() <= 1,
        None => false,
    }
}

/// Path components after resolving `.` and `..`; `None` when `..` climbs past the start.
fn components(path: &str) -> Option<Vec<&str>> {
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------
// Wrappers

enum Unwrap {
    NotWrapper,
    /// The wrapper alone, running nothing else.
    Alone,
    /// An option this classifier does not follow.
    Refuse(String),
    /// Runs `args[start..]`.
    Inner {
        start: usize,
        /// Appends arguments read at run time (`xargs`).
        appends: bool,
        /// A reason to ask even when the inner command is safe.
        note: Option<String>,
    },
}

struct Opts {
    flags: &'static str,
    valued: &'static str,
    long_flags: &'static [&'static str],
    long_valued: &'static [&'static str],
}

/// Skips options; returns the index of the first operand.
fn skip_opts(args: &[Arg], spec: &Opts) -> Result<usize, String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.opaque() {
            return Err(format!("option `{}` is only known at run time", a.value));
        }
        let v = a.value.as_str();
        if v == "--" {
            return Ok(i + 1);
        }
        if let Some(long) = v.strip_prefix("--") {
            let key = long.split('=').next().unwrap_or("");
            if spec.long_flags.contains(&key) {
                i += 1;
                continue;
            }
            if spec.long_valued.contains(&key) {
                i += if long.contains('=') { 1 } else { 2 };
                continue;
            }
            return Err(format!("option `{v}` is not understood"));
        }
        if v.len() > 1 && v.starts_with('-') {
            let mut chars = v[1..].chars();
            let mut skip = 1;
            while let Some(c) = chars.next() {
                if spec.flags.contains(c) {
                    continue;
                }
                if spec.valued.contains(c) {
                    if chars.as_str().is_empty() {
                        skip = 2;
                    }
                    break;
                }
                return Err(format!("option `{v}` is not understood"));
            }
            i += skip;
            continue;
        }
        return Ok(i);
    }
    Ok(args.len())
}

fn inner_at(args: &[Arg], start: usize, appends: bool, note: Option<String>) -> Unwrap {
    if start >= args.len() {
        Unwrap::Alone
    } else {
        Unwrap::Inner {
            start,
            appends,
            note,
        }
    }
}

fn unwrap(base: &str, args: &[Arg]) -> Unwrap {
    let spec = match base {
        "env" => Opts {
            flags: "i0v",
            valued: "u",
            long_flags: &["ignore-environment", "null", "debug"],
            long_valued: &["unset"],
        },
        "timeout" => Opts {
            flags: "v",
            valued: "sk",
            long_flags: &["preserve-status", "foreground", "verbose"],
            long_valued: &["signal", "kill-after"],
        },
        "nice" => Opts {
            flags: "",
            valued: "n",
            long_flags: &[],
            long_valued: &["adjustment"],
        },
        "nohup" | "builtin" => Opts {
            flags: "",
            valued: "",
            long_flags: &[],
            long_valued: &[],
        },
        "command" => Opts {
            flags: "pvV",
            valued: "",
            long_flags: &[],
            long_valued: &[],
        },
        "exec" => Opts {
            flags: "cl",
            valued: "a",
            long_flags: &[],
            long_valued: &[],
        },
        "time" => Opts {
            flags: "pvq",
            valued: "f",
            long_flags: &["portability", "verbose", "quiet"],
            long_valued: &["format"],
        },
        "stdbuf" => Opts {
            flags: "",
            valued: "ioe",
            long_flags: &[],
            long_valued: &["input", "output", "error"],
        },
        "xargs" => Opts {
            flags: "0rtpxo",
            valued: "ILnPsdEa",
            long_flags: &[
                "null",
                "no-run-if-empty",
                "verbose",
                "interactive",
                "exit",
                "open-tty",
            ],
            long_valued: &[
                "arg-file",
                "delimiter",
                "max-args",
                "max-procs",
                "max-chars",
            ],
        },
        _ => return Unwrap::NotWrapper,
    };
    // `nice -5 cmd`: numeric adjustment.
    let (lead, rest) = if base == "nice"
        && args.first().is_some_and(|a| {
            !a.opaque()
                && a.value.len() > 1
                && a.value.starts_with('-')
                && a.value[1..].bytes().all(|b| b.is_ascii_digit())
        }) {
        (1, &args[1..])
    } else {
        (0, args)
    };
    let mut start = match skip_opts(rest, &spec) {
        Ok(i) => i + lead,
        Err(why) => return Unwrap::Refuse(format!("`{base}`: {why}")),
    };
    let unwrapped = match base {
        "env" => {
            let mut sets = false;
            while start < args.len() && args[start].value.contains('=') && !args[start].lead_unknown
            {
                sets = true;
                start += 1;
            }
            let note = sets.then(|| "`env` sets environment variables".to_string());
            if start >= args.len() {
                return match note {
                    Some(n) => Unwrap::Refuse(n),
                    None => Unwrap::Alone,
                };
            }
            inner_at(args, start, false, note)
        }
        "timeout" => inner_at(args, start + 1, false, None),
        "command"
            if args[..start].iter().any(|a| {
                a.value.starts_with('-') && (a.value.contains('v') || a.value.contains('V'))
            }) =>
        {
            Unwrap::Alone
        }
        "xargs" => {
            if start >= args.len() {
                Unwrap::Alone
            } else {
                inner_at(args, start, true, None)
            }
        }
        _ => inner_at(args, start, false, None),
    };
    // A word only known at run time before the wrapped command could split into more
    // words and change what runs (`timeout $T ls` with T="5 rm -rf ~").
    let fixed = match &unwrapped {
        Unwrap::Inner { start, .. } => &args[..*start],
        Unwrap::Alone => args,
        _ => &[],
    };
    if let Some(a) = fixed.iter().find(|a| a.opaque()) {
        return Unwrap::Refuse(format!(
            "`{base}` gets `{}`, only known at run time",
            short(&a.value)
        ));
    }
    unwrapped
}

/// For shells given `-c SCRIPT` and `eval`: `Some(Some(script))` when the script is static.
fn script_of(base: &str, args: &[Arg]) -> Option<Option<String>> {
    match base {
        "eval" => {
            if args.iter().any(Arg::opaque) {
                return Some(None);
            }
            Some(Some(
                args.iter()
                    .map(|a| a.value.as_str())
                    .collect::<Vec<_>>()
                    .join(" "),
            ))
        }
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox" => {
            let mut i = 0;
            let mut has_c = false;
            while i < args.len() {
                let v = &args[i].value;
                if args[i].opaque() {
                    return Some(None);
                }
                if v == "--" {
                    i += 1;
                    break;
                }
                if v.starts_with('-') || v.starts_with('+') {
                    if !v.starts_with("--") && v.contains('c') {
                        has_c = true;
                    }
                    if matches!(v.as_str(), "-o" | "+o" | "-O" | "+O") {
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                break;
            }
            if !has_c {
                return None;
            }
            match args.get(i) {
                Some(a) if !a.opaque() => Some(Some(a.value.clone())),
                _ => Some(None),
            }
        }
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------
// The safe list

fn has_short(v: &str, chars: &[char]) -> bool {
    v.len() > 1
        && v.starts_with('-')
        && !v.starts_with("--")
        && v[1..].chars().any(|c| chars.contains(&c))
}

/// `arg` names the long option `name` (`--output`), possibly abbreviated as GNU getopt and
/// git allow (`--out=x`).
fn long_matches(arg: &str, name: &str) -> bool {
    let Some(given) = arg.strip_prefix("--") else {
        return false;
    };
    let key = given.split('=').next().unwrap_or("");
    !key.is_empty() && name.trim_start_matches('-').starts_with(key)
}

fn forbid(args: &[Arg], base: &str, short: &[char], long: &[&str]) -> Result<(), String> {
    for a in args {
        if has_short(&a.value, short) || long.iter().any(|l| long_matches(&a.value, l)) {
            return Err(format!(
                "`{base} {}` can write files or run programs",
                a.value
            ));
        }
    }
    Ok(())
}

/// Arguments must be static; globs are fine unless they could expand to an option.
fn static_args(args: &[Arg], base: &str) -> Result<(), String> {
    for a in args {
        if a.dynamic || (a.glob && a.lead_unknown) {
            return Err(format!(
                "`{base}` gets the argument `{}` whose value is only known at run time",
                short(&a.value)
            ));
        }
    }
    Ok(())
}

/// Arguments must be static, but globs are fine: every option is harmless.
fn harmless_args(args: &[Arg], base: &str) -> Result<(), String> {
    for a in args {
        if a.dynamic {
            return Err(format!(
                "`{base}` gets the argument `{}` whose value is only known at run time",
                short(&a.value)
            ));
        }
    }
    Ok(())
}

fn max_operands(args: &[Arg], base: &str, n: usize) -> Result<(), String> {
    let operands = args
        .iter()
        .filter(|a| !a.value.starts_with('-') || a.value == "-")
        .count();
    if operands > n {
        return Err(format!(
            "`{base}` with {operands} operands may write a file"
        ));
    }
    Ok(())
}

fn safe_check(base: &str, args: &[Arg]) -> Option<Result<(), String>> {
    let r = match base {
        "echo" | "true" | "false" | ":" | "pwd" => Ok(()),
        "printf" => match args.first() {
            Some(a) if a.opaque() || a.value.starts_with("-v") => {
                Err("`printf -v` assigns a variable".into())
            }
            _ => Ok(()),
        },
        "ls" | "cat" | "head" | "tail" | "wc" | "cut" | "tr" | "nl" | "tac" | "rev" | "fold"
        | "paste" | "expand" | "unexpand" | "column" | "od" | "hexdump" | "strings"
        | "basename" | "dirname" | "realpath" | "readlink" | "stat" | "du" | "df" | "uname"
        | "whoami" | "id" | "groups" | "nproc" | "uptime" | "tty" | "arch" | "printenv"
        | "which" | "whereis" | "type" | "seq" | "sleep" | "cmp" | "comm" | "diff" | "md5sum"
        | "sha1sum" | "sha224sum" | "sha256sum" | "sha384sum" | "sha512sum" | "b2sum" | "cksum"
        | "sum" | "free" | "ps" | "locale" | "getconf" | "base64" | "base32" | "cd" | "jq"
        | "grep" | "egrep" | "fgrep" | "look" | "numfmt" => harmless_args(args, base),
        "test" | "[" => harmless_args(args, base).and_then(|()| {
            match args.iter().find(|a| {
                a.value.contains(['[', '$', '`']) && !(base == "[" && a.value == "]")
                    || a.value == "-v"
            }) {
                Some(a) => Err(format!("`{base} {}` may evaluate code", a.value)),
                None => Ok(()),
            }
        }),
        "file" => static_args(args, base).and_then(|()| forbid(args, base, &['C'], &["--compile"])),
        "sort" => static_args(args, base).and_then(|()| {
            forbid(
                args,
                base,
                &['o'],
                &["--output", "--compress-program", "--random-source"],
            )
        }),
        "uniq" | "xxd" => static_args(args, base).and_then(|()| max_operands(args, base, 1)),
        "tree" => static_args(args, base).and_then(|()| forbid(args, base, &['o', 'R'], &[])),
        "hostname" => static_args(args, base).and_then(|()| {
            max_operands(args, base, 0)
                .and_then(|()| forbid(args, base, &['F', 'b'], &["--file", "--boot"]))
        }),
        "date" => static_args(args, base).and_then(|()| {
            forbid(args, base, &['s'], &["--set"])?;
            let mut prev_takes_value = false;
            for a in args {
                let v = a.value.as_str();
                if !prev_takes_value && !v.starts_with('-') && !v.starts_with('+') {
                    return Err(format!("`date {v}` may set the clock"));
                }
                prev_takes_value =
                    matches!(v, "-d" | "--date" | "-r" | "--reference" | "-f" | "--file");
            }
            Ok(())
        }),
        "rg" => static_args(args, base)
            .and_then(|()| forbid(args, base, &[], &["--pre", "--hostname-bin"])),
        "find" => static_args(args, base).and_then(|()| {
            const BAD: &[&str] = &[
                "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf",
                "-fls",
            ];
            match args.iter().find(|a| BAD.contains(&a.value.as_str())) {
                Some(a) => Err(format!(
                    "`find {}` can run programs or write files",
                    a.value
                )),
                None => Ok(()),
            }
        }),
        "sed" => static_args(args, base).and_then(|()| sed_check(args)),
        "git" => static_args(args, base).and_then(|()| git_check(args)),
        "awk" | "gawk" | "mawk" | "nawk" => {
            Err(format!("`{base}` programs can run commands with system()"))
        }
        _ => return None,
    };
    Some(r)
}

fn git_check(args: &[Arg]) -> Result<(), String> {
    let mut i = 0;
    while i < args.len() {
        let v = args[i].value.as_str();
        match v {
            "--no-pager"
            | "-P"
            | "--no-optional-locks"
            | "--literal-pathspecs"
            | "--no-replace-objects"
            | "--glob-pathspecs"
            | "--noglob-pathspecs"
            | "--icase-pathspecs" => i += 1,
            "--version" => return Ok(()),
            _ if v.starts_with('-') => {
                return Err(format!("`git {v}` changes how git runs"));
            }
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return Err("`git` without a subcommand".into());
    };
    let sub = sub.value.as_str();
    let rest = &args[i + 1..];
    forbid(
        rest,
        "git",
        &[],
        &[
            "--output",
            "--ext-diff",
            "--exec-path",
            "--upload-pack",
            "--receive-pack",
            "--exec",
            "--open-files-in-pager",
            "--config-env",
        ],
    )?;
    let vals: Vec<&str> = rest.iter().map(|a| a.value.as_str()).collect();
    let listing = |allowed_flags: &[&str], selectors: &[&str]| -> Result<(), String> {
        let mut selecting = false;
        for v in &vals {
            if v.starts_with('-') {
                let key = v.split('=').next().unwrap_or(v);
                if selectors.contains(&key) {
                    selecting = true;
                } else if !allowed_flags.contains(&key) {
                    return Err(format!("`git {sub} {v}` may change the repository"));
                }
            } else if !selecting {
                return Err(format!("`git {sub} {v}` may change the repository"));
            }
        }
        Ok(())
    };
    match sub {
        "status" | "log" | "diff" | "show" | "rev-parse" | "ls-files" | "ls-tree" | "blame"
        | "annotate" | "shortlog" | "describe" | "rev-list" | "cat-file" | "show-ref"
        | "diff-tree" | "diff-files" | "diff-index" | "merge-base" | "name-rev"
        | "count-objects" | "check-ignore" | "whatchanged" | "cherry" | "version"
        | "for-each-ref" | "show-branch" | "var" => Ok(()),
        "grep" => forbid(rest, "git grep", &['O'], &[]),
        "branch" => listing(
            &[
                "-a",
                "-r",
                "-v",
                "-vv",
                "--all",
                "--remotes",
                "--verbose",
                "--show-current",
                "--sort",
                "--format",
                "--color",
                "--no-color",
                "--column",
                "--no-column",
                "--abbrev",
                "--no-abbrev",
                "-i",
                "--ignore-case",
                "--omit-empty",
            ],
            &[
                "--list",
                "-l",
                "--merged",
                "--no-merged",
                "--contains",
                "--no-contains",
                "--points-at",
            ],
        ),
        "tag" => listing(
            &[
                "-n",
                "--sort",
                "--format",
                "--color",
                "--no-color",
                "--column",
                "--no-column",
                "-i",
                "--ignore-case",
            ],
            &[
                "--list",
                "-l",
                "--merged",
                "--no-merged",
                "--contains",
                "--no-contains",
                "--points-at",
            ],
        ),
        "remote" => match vals.as_slice() {
            [] | ["-v"] | ["--verbose"] => Ok(()),
            ["get-url", ..] => Ok(()),
            _ => Err(format!(
                "`git remote {}` may change or contact remotes",
                vals.join(" ")
            )),
        },
        "stash" => match vals.first() {
            Some(&"list") | Some(&"show") => Ok(()),
            _ => Err("`git stash` changes the working tree".into()),
        },
        "reflog" => match vals.first() {
            None | Some(&"show") => Ok(()),
            Some(v) if v.starts_with('-') => Ok(()),
            _ => Err("`git reflog` may change the reflog".into()),
        },
        "worktree" => match vals.as_slice() {
            ["list", ..] => Ok(()),
            _ => Err("`git worktree` may change worktrees".into()),
        },
        _ => Err(format!("`git {sub}` is not a known read-only git command")),
    }
}

fn sed_check(args: &[Arg]) -> Result<(), String> {
    let mut scripts: Vec<&str> = Vec::new();
    let mut operands = 0;
    let mut i = 0;
    while i < args.len() {
        let v = args[i].value.as_str();
        if v == "-e" || v == "--expression" {
            match args.get(i + 1) {
                Some(s) => scripts.push(&s.value),
                None => return Err("`sed -e` without a script".into()),
            }
            i += 2;
            continue;
        }
        if let Some(s) = v.strip_prefix("--expression=") {
            scripts.push(s);
        } else if matches!(
            v,
            "-n" | "--quiet"
                | "--silent"
                | "-E"
                | "-r"
                | "--regexp-extended"
                | "-s"
                | "--separate"
                | "-u"
                | "--unbuffered"
                | "-z"
                | "--null-data"
                | "--posix"
                | "--debug"
                | "--sandbox"
                | "--"
        ) {
        } else if v.len() > 1 && v.starts_with('-') && !v.starts_with("--") {
            let cluster = &v[1..];
            if let Some(pos) = cluster.find('e') {
                if !cluster[..pos].chars().all(|c| "nErsuz".contains(c)) {
                    return Err(format!("`sed {v}` may edit files"));
                }
                let rest = &cluster[pos + 1..];
                if rest.is_empty() {
                    match args.get(i + 1) {
                        Some(s) => scripts.push(&s.value),
                        None => return Err("`sed -e` without a script".into()),
                    }
                    i += 2;
                    continue;
                }
                scripts.push(rest);
            } else if !cluster.chars().all(|c| "nErsuz".contains(c)) {
                return Err(format!("`sed {v}` may edit files or read scripts"));
            }
        } else if v.starts_with("--") {
            return Err(format!("`sed {v}` may edit files"));
        } else if scripts.is_empty() && operands == 0 {
            scripts.push(v);
            operands += 1;
        } else {
            operands += 1;
        }
        i += 1;
    }
    for s in scripts {
        sed_script(s).map_err(|why| format!("sed script `{}`: {why}", short(s)))?;
    }
    Ok(())
}

/// Accepts sed scripts of printing, deleting, quitting and `s`/`y` commands without the
/// `w`, `e`, `r`, … commands or flags that touch files or run programs.
fn sed_script(script: &str) -> Result<(), String> {
    let s: Vec<char> = script.chars().collect();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < s.len() && (s[*i] == ' ' || s[*i] == '\t') {
            *i += 1;
        }
    };
    // Reads a delimited part starting after the opening delimiter; returns index after the
    // closing one.
    let delimited = |mut i: usize, d: char| -> Result<usize, String> {
        while i < s.len() {
            if s[i] == '\\' {
                i += 2;
                continue;
            }
            if s[i] == d {
                return Ok(i + 1);
            }
            if s[i] == '\n' {
                return Err("unterminated".into());
            }
            i += 1;
        }
        Err("unterminated".into())
    };
    let address = |mut i: usize| -> Result<usize, String> {
        if i < s.len() && s[i].is_ascii_digit() {
            while i < s.len() && (s[i].is_ascii_digit() || s[i] == '~') {
                i += 1;
            }
        } else if i < s.len() && s[i] == '$' {
            i += 1;
        } else if i < s.len() && s[i] == '/' {
            i = delimited(i + 1, '/')?;
            while i < s.len() && (s[i] == 'I' || s[i] == 'M') {
                i += 1;
            }
        }
        Ok(i)
    };
    loop {
        while i < s.len() && matches!(s[i], ' ' | '\t' | '\n' | ';') {
            i += 1;
        }
        if i >= s.len() {
            return Ok(());
        }
        i = address(i)?;
        skip_ws(&mut i);
        if i < s.len() && s[i] == ',' {
            i = address(i + 1)?;
            skip_ws(&mut i);
        }
        if i < s.len() && s[i] == '!' {
            i += 1;
            skip_ws(&mut i);
        }
        let Some(&c) = s.get(i) else {
            return Err("address without a command".into());
        };
        i += 1;
        match c {
            'p' | 'd' | '=' | 'l' | 'n' | 'N' | 'P' | 'D' | 'g' | 'G' | 'h' | 'H' | 'x' | 'z'
            | '{' | '}' => {}
            'q' | 'Q' => {
                skip_ws(&mut i);
                while i < s.len() && s[i].is_ascii_digit() {
                    i += 1;
                }
            }
            's' | 'y' => {
                let Some(&d) = s.get(i) else {
                    return Err("unterminated".into());
                };
                if d == '\\' || d == '\n' {
                    return Err("unusual delimiter".into());
                }
                i = delimited(i + 1, d)?;
                i = delimited(i, d)?;
                if c == 's' {
                    while i < s.len() && "gpiImM0123456789".contains(s[i]) {
                        i += 1;
                    }
                }
            }
            other => return Err(format!("the `{other}` command is not known to be safe")),
        }
        skip_ws(&mut i);
        match s.get(i) {
            None | Some(';') | Some('\n') | Some('}') => {}
            Some(other) => return Err(format!("unexpected `{other}`")),
        }
    }
}
