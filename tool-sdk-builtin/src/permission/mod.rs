//! Whether a call may run: modes, rules, hooks, the Bash classifier and the path sandbox.
//!
//! [`PermissionGate`] runs the decision chain (its module docs list the steps); it decides
//! from each call's [`CallFacts`] (what the tool declares it acts on), never from tool names.

pub mod bash;

// The sandbox sits on the floor below (`ToolContext` holds one); this is its public path.
pub use tool_sdk_core::sandbox::{
    PROTECTED_DIRS, PROTECTED_FILES, ProtectedPattern, Sandbox, SandboxError,
};

use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use tool_sdk_core::{BoxFuture, PermissionPrompt, Tool, ToolContext, ToolOutput};

mod facts;
mod gate;
mod rules;
mod secrets;
mod shell_reads;

pub use facts::{CallFacts, ShellFacts, Subject};
#[doc(hidden)]
pub use gate::not_allowed_message;
pub use gate::{PermissionGate, PermissionPreview, Revalidate};
pub use rules::{PermissionRules, Rule, RuleError, RuleVerdict};
pub use secrets::secret_marker;

/// How much runs without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// Rules decide; read-only tools run, others ask.
    #[default]
    Default,
    /// File edits (Write, Edit, NotebookEdit) run without asking; the rest as `Default`.
    AcceptEdits,
    /// Only read-only tools run; the model plans and presents the plan with ExitPlanMode.
    Plan,
    /// Everything runs except what deny rules and hooks refuse.
    BypassPermissions,
}

impl PermissionMode {
    /// Every mode by the name Claude Code and the config file use (`permission_mode`).
    const NAMES: [(&'static str, PermissionMode); 4] = [
        ("default", PermissionMode::Default),
        ("acceptEdits", PermissionMode::AcceptEdits),
        ("plan", PermissionMode::Plan),
        ("bypassPermissions", PermissionMode::BypassPermissions),
    ];

    /// The mode's name, as Claude Code and the config file write it (`acceptEdits`).
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, mode)| *mode == self)
            .map_or("default", |(name, _)| name)
    }
}

impl std::fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A permission mode's name that is not one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown permission mode `{0}`: the modes are default, acceptEdits, plan and \
     bypassPermissions"
)]
pub struct UnknownPermissionMode(pub String);

impl std::str::FromStr for PermissionMode {
    type Err = UnknownPermissionMode;

    /// Reads a mode by the name Claude Code uses (`--permission-mode`, `defaultMode` in
    /// `.claude/settings.json`), the same names as the config file's `permission_mode`:
    ///
    /// ```
    /// # extern crate tool_sdk_builtin as tool_sdk;
    /// use tool_sdk::permission::PermissionMode;
    ///
    /// assert_eq!("acceptEdits".parse(), Ok(PermissionMode::AcceptEdits));
    /// assert_eq!(PermissionMode::BypassPermissions.to_string(), "bypassPermissions");
    /// let error = "yolo".parse::<PermissionMode>().unwrap_err();
    /// assert!(error.to_string().contains("default, acceptEdits, plan and bypassPermissions"));
    /// ```
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::NAMES
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, mode)| *mode)
            .ok_or_else(|| UnknownPermissionMode(name.to_owned()))
    }
}

/// The session's current [`PermissionMode`]; ExitPlanMode changes it.
#[derive(Debug, Default)]
pub struct ModeState(Mutex<PermissionMode>);

impl ModeState {
    /// The current mode.
    pub fn get(&self) -> PermissionMode {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Switches mode.
    pub fn set(&self, mode: PermissionMode) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}

/// The directory the agent's shell is in, as the Bash tool last learnt it (a `cd` carries
/// over between calls); `None` before its first command. The permission gate resolves a
/// command's relative paths from there.
#[derive(Debug, Default)]
pub struct ShellDir(Mutex<Option<PathBuf>>);

impl ShellDir {
    /// The shell's directory, when known.
    pub fn get(&self) -> Option<PathBuf> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records where the shell is now (`None`: back to the working directory).
    pub fn set(&self, dir: Option<PathBuf>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = dir;
    }
}

/// What a `pre_tool_use` hook says about a call.
#[derive(Clone, Debug, PartialEq)]
pub enum HookDecision {
    /// No opinion: go on down the chain.
    Continue,
    /// Run it without asking (deny rules were already checked).
    Allow,
    /// Refuse it; the reason goes to the model.
    Deny(String),
    /// Use this input instead; it is validated again, then the chain goes on.
    Rewrite(Value),
}

/// A `pre_tool_use` hook: sees every call before it runs.
pub trait PreToolUse: Send + Sync {
    /// Decides about one call.
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, HookDecision>;
}

impl<F> PreToolUse for F
where
    F: Fn(&dyn Tool, &Value) -> HookDecision + Send + Sync,
{
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        input: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, HookDecision> {
        Box::pin(std::future::ready(self(tool, input)))
    }
}

/// A `post_tool_use` hook: sees every result (for logging, auditing, notifications).
pub trait PostToolUse: Send + Sync {
    /// Called after a call finished, successfully or not.
    fn after<'a>(
        &'a self,
        tool: &'a str,
        input: &'a Value,
        output: &'a ToolOutput,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ()>;
}

impl<F> PostToolUse for F
where
    F: Fn(&str, &Value, &ToolOutput) + Send + Sync,
{
    fn after<'a>(
        &'a self,
        tool: &'a str,
        input: &'a Value,
        output: &'a ToolOutput,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ()> {
        self(tool, input, output);
        Box::pin(std::future::ready(()))
    }
}

/// A call waiting for the user's decision.
#[derive(Clone, Debug, PartialEq)]
pub struct PermissionQuestion {
    /// The tool.
    pub tool: String,
    /// The input it would run with.
    pub input: Value,
    /// What to show: title, summary, content.
    pub prompt: PermissionPrompt,
    /// The rule "allow always" would remember.
    pub suggested_rule: Rule,
}

/// The user's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PermissionAnswer {
    /// Run it this once.
    Allow,
    /// Run it, and calls like it for the rest of the session (the rule can be persisted).
    AllowAlways,
    /// Refuse it, with a message for the model.
    Deny(String),
}

/// The app's way of asking the user.
pub trait PermissionHandler: Send + Sync {
    /// Asks and waits.
    fn ask<'a>(&'a self, question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer>;
}

impl<F> PermissionHandler for F
where
    F: Fn(&PermissionQuestion) -> PermissionAnswer + Send + Sync,
{
    fn ask<'a>(&'a self, question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer> {
        Box::pin(std::future::ready(self(question)))
    }
}
