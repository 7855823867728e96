//! The facts of one call, computed once from what the tool declares ([`ActsOn`]): the path it
//! touches, the shell command it runs (parsed once), the host it fetches. Rules, modes and
//! the classifier read these; nothing downstream looks at tool names or re-parses input.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::bash::{self, Classification, CommandAnalysis, Decision};
use super::shell_reads;
use tool_sdk_core::sandbox::Sandbox;
use tool_sdk_core::{ActsOn, Tool};

/// What one call is about, as the permission gate sees it.
#[derive(Clone, Debug)]
pub struct CallFacts<'a> {
    /// The tool's name (rules that name a tool match it exactly).
    pub tool: &'a str,
    /// Whether the tool says it only reads.
    pub read_only: bool,
    /// What the call acts on.
    pub subject: Subject,
}

/// The thing a call acts on, taken from its input.
#[derive(Clone, Debug)]
pub enum Subject {
    /// The tool declares nothing: rules with a specifier compare it with the whole input.
    Undeclared,
    /// Only the agent's own state.
    AgentState,
    /// A file or directory, resolved against the working directory and normalised
    /// lexically (the sandbox resolves symlinks when the tool opens it).
    Path {
        /// The absolute path.
        path: PathBuf,
        /// Whether the call writes it.
        writes: bool,
    },
    /// A shell command, parsed once.
    Shell(ShellFacts),
    /// A URL.
    Url {
        /// Its host, lower-cased; `None` when the URL has none.
        host: Option<String>,
    },
}

/// A shell command and what one parse of it found.
#[derive(Clone, Debug)]
pub struct ShellFacts {
    /// The command as written.
    pub command: String,
    analysis: CommandAnalysis,
}

impl ShellFacts {
    fn new(command: &str) -> Self {
        ShellFacts {
            command: command.to_owned(),
            analysis: bash::analyze_command(command),
        }
    }

    /// The classifier's verdict.
    pub fn classification(&self) -> &Classification {
        &self.analysis.classification
    }

    /// The simple commands as allow rules see them: `None` when any word is only known at run
    /// time or the command does not parse, so that no specific allow rule matches (the call
    /// asks).
    pub fn commands_for_allow(&self) -> Option<Vec<String>> {
        let commands = self.analysis.commands.as_ref().ok()?;
        if commands.iter().any(|c| c.dynamic || c.argv.is_empty()) {
            return None;
        }
        Some(commands.iter().map(|c| c.argv.join(" ")).collect())
    }

    /// Where the command may read that `sandbox` does not let file tools read, and why:
    /// the Read tool's refusal of a path is the reason the same read through the shell asks.
    /// Relative words are taken from `shell_dir`, where the command starts. `None` when
    /// every path passes, or the command does not parse (it asks anyway).
    pub fn read_outside(&self, sandbox: &Sandbox, shell_dir: &Path) -> Option<String> {
        let commands = self.analysis.commands.as_ref().ok()?;
        shell_reads::read_outside(commands, &self.analysis.input_files, sandbox, shell_dir)
    }

    /// The simple commands as deny rules see them: every command, run-time words kept as
    /// written; when the command does not parse, the raw text, so `Bash(rm:*)` still catches
    /// `rm -rf x; (`.
    pub fn commands_for_deny(&self) -> Vec<String> {
        match &self.analysis.commands {
            Ok(commands) => commands
                .iter()
                .filter(|c| !c.argv.is_empty())
                .map(|c| c.argv.join(" "))
                .collect(),
            Err(_) => vec![self.command.trim().to_owned()],
        }
    }
}

impl<'a> CallFacts<'a> {
    /// The facts of calling `tool` with `input` in `working_dir`.
    pub fn of(
        tool: &'a str,
        read_only: bool,
        acts_on: ActsOn,
        input: &Value,
        working_dir: &Path,
    ) -> Self {
        let text = |field: &str| input.get(field).and_then(Value::as_str);
        let path = |field: &str, writes| Subject::Path {
            path: normalize(&working_dir.join(text(field).unwrap_or("."))),
            writes,
        };
        let subject = match acts_on {
            ActsOn::AgentState => Subject::AgentState,
            ActsOn::ReadsPath(field) => path(field, false),
            ActsOn::WritesPath(field) => path(field, true),
            ActsOn::ShellCommand(field) => {
                Subject::Shell(ShellFacts::new(text(field).unwrap_or("")))
            }
            ActsOn::FetchesUrl(field) => Subject::Url {
                host: text(field).and_then(host_of),
            },
            ActsOn::Unspecified => Subject::Undeclared,
            // Non-exhaustive (defined in tool-sdk-core): what is not understood is undeclared.
            _ => Subject::Undeclared,
        };
        CallFacts {
            tool,
            read_only,
            subject,
        }
    }

    /// [`of`](Self::of) with what `tool` declares.
    pub fn for_tool(tool: &'a dyn Tool, input: &Value, working_dir: &Path) -> Self {
        Self::of(
            tool.name(),
            tool.is_read_only(),
            tool.acts_on(),
            input,
            working_dir,
        )
    }

    /// Whether the call writes files (what `acceptEdits` lets through).
    pub fn writes_files(&self) -> bool {
        matches!(self.subject, Subject::Path { writes: true, .. })
    }

    /// The classifier's verdict on a shell call.
    pub fn shell(&self) -> Option<&ShellFacts> {
        match &self.subject {
            Subject::Shell(shell) => Some(shell),
            _ => None,
        }
    }

    /// Whether the call only touches the agent's own state.
    pub fn about_agent_state(&self) -> bool {
        matches!(self.subject, Subject::AgentState)
    }

    /// Whether the classifier refuses the call's command outright.
    pub(crate) fn forbidden_command(&self) -> Option<&Classification> {
        self.shell()
            .map(ShellFacts::classification)
            .filter(|verdict| verdict.decision == Decision::Deny)
    }

    /// What the call does when no rule speaks: `true` when it may run without asking.
    pub(crate) fn runs_unasked(&self) -> bool {
        match &self.subject {
            Subject::AgentState => true,
            Subject::Shell(shell) => shell.classification().decision == Decision::Allow,
            _ => self.read_only,
        }
    }
}

/// The host of a URL, lower-cased, without port, user or trailing dot.
pub(crate) fn host_of(url: &str) -> Option<String> {
    let after_scheme = url.split_once("://")?.1;
    let authority = after_scheme.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host.split(':').next()?.trim_end_matches('.');
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// Folds `.` and `..` without touching the filesystem.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}
