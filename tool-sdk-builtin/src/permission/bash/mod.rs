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
//! # extern crate tool_sdk_builtin as tool_sdk;
//! use tool_sdk::permission::bash::{classify, Decision};
//!
//! assert_eq!(classify("git status && ls -la | head").decision, Decision::Allow);
//! assert_eq!(classify("ls; rm -rf ~").decision, Decision::Deny);
//! assert_eq!(classify("echo pwned > ~/.bashrc").decision, Decision::Ask);
//! ```

mod git;
mod judge;
mod parse;
mod safe_list;
mod sed;

use std::fmt;

use parse::analyze;
pub(crate) use parse::may_match as glob_may_match;

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
/// computes once per shell call and every rule and the classifier then read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandAnalysis {
    /// The classifier's verdict, as [`classify`] gives it.
    pub classification: Classification,
    /// The simple commands, as [`simple_commands`] gives them.
    pub commands: Result<Vec<SimpleCommand>, BashParseError>,
    /// The files input redirections (`< file`) read, as written (globs kept).
    pub input_files: Vec<String>,
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
    let input_files = std::mem::take(&mut verdict.inputs);
    CommandAnalysis {
        classification: verdict.finish(),
        commands,
        input_files,
    }
}

// ---------------------------------------------------------------------------------------
// Verdict bookkeeping

#[derive(Default)]
struct Verdict {
    pub(super) decision: Option<(Decision, String)>,
    pub(super) allowed: Vec<String>,
    pub(super) parse_error: Option<BashParseError>,
    /// The files `<` redirections read, as written.
    pub(super) inputs: Vec<String>,
}

impl Verdict {
    pub(super) fn escalate(&mut self, decision: Decision, reason: String) {
        let worse = match &self.decision {
            None => true,
            Some((d, _)) => decision.rank() > d.rank(),
        };
        if worse {
            self.decision = Some((decision, reason));
        }
    }

    pub(super) fn ask(&mut self, reason: String) {
        self.escalate(Decision::Ask, reason);
    }

    pub(super) fn deny(&mut self, reason: String) {
        self.escalate(Decision::Deny, reason);
    }

    pub(super) fn parse_error(&mut self, e: BashParseError, reason: String) {
        self.parse_error.get_or_insert(e);
        self.ask(reason);
    }

    fn finish(mut self) -> Classification {
        // The Bash tool disarms the git drivers of the repository the command starts in
        // only: a `cd` could lead git into another.
        let runs = |name: &str| {
            self.allowed
                .iter()
                .any(|n| n.rsplit(' ').next() == Some(name))
        };
        if runs("git") && runs("cd") {
            self.ask(
                "runs git after changing directory: the programs the other repository's \
                 configuration runs were not checked"
                    .into(),
            );
        }
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
