//! The walk over the tree-sitter parse of a command: every node is judged, every simple
//! command's words are evaluated and handed to [`judge`](super::judge).

use std::cell::RefCell;

use tree_sitter::{Node, Parser};

use super::judge::{Judged, judge};
use super::{BashParseError, Decision, MAX_COMMAND_LEN, MAX_DEPTH, SimpleCommand, Verdict};

mod words;

pub(crate) use words::may_match;
use words::{
    constant_arithmetic, expanded_name, simple_test, trivial_expansion, unescape_double,
    unescape_unquoted,
};
pub(super) use words::{is_block_device, names_environ, short};

thread_local! {
    static PARSER: RefCell<Option<Parser>> = const { RefCell::new(None) };
}

pub(super) fn analyze(
    command: &str,
    depth: usize,
    verdict: &mut Verdict,
    out: &mut Vec<SimpleCommand>,
) {
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
pub(super) struct Arg {
    /// Static value; expansions keep their source text.
    pub(super) value: String,
    /// Some part is only known at run time.
    pub(super) dynamic: bool,
    /// Holds an unquoted glob or brace character.
    pub(super) glob: bool,
    /// Its first character is not a known literal (could turn into a `-flag`).
    pub(super) lead_unknown: bool,
}

impl Arg {
    pub(super) fn opaque(&self) -> bool {
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
            "simple_expansion" | "expansion" => {
                let src = self.src;
                let t = src.get(node.byte_range()).unwrap_or("");
                let name = expanded_name(t);
                if let Some(mark) = crate::permission::secret_marker(name) {
                    self.verdict.ask(format!(
                        "`{}` expands ${name}, whose name ({mark}) says it holds a secret",
                        short(t)
                    ));
                }
                if kind == "expansion" && !trivial_expansion(t) {
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
            if arg.dynamic {
                self.verdict
                    .ask(format!("`{text}` reads a file named only at run time"));
            } else if names_environ(&arg.value) {
                self.verdict.ask(format!(
                    "`{text}` may read a process's environment, secrets included"
                ));
            } else {
                self.verdict.inputs.push(arg.value);
            }
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
