//! `config.permissions`: what runs without asking, and who is asked.

use std::path::PathBuf;
use std::sync::Arc;

use crate::agent::ConfigError;
use crate::permission::{PermissionHandler, PermissionMode, PermissionRules, Rule};

/// What runs without asking and who is asked: the `[permissions]` table of a config file
/// (`allow`, `ask`, `deny`), with `permission_mode` and `additional_dirs` from its top level.
///
/// ```
/// use tool_sdk::agent::AgentConfig;
/// use tool_sdk::permission::PermissionMode;
///
/// let config = AgentConfig::new().permissions(|permissions| {
///     permissions
///         .with_mode(PermissionMode::AcceptEdits)
///         .allow("Bash(git status:*)")
///         .deny("Read(.env)")
///         .with_additional_dir("/tmp/scratch")
/// });
/// assert_eq!(config.permissions.rules.allow.len(), 1);
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct PermissionSettings {
    /// How much runs without asking; `plan` lets only read-only tools run.
    pub mode: PermissionMode,
    /// Allow, ask and deny rules.
    pub rules: PermissionRules,
    /// More directories tools may touch besides the working directory.
    pub additional_dirs: Vec<PathBuf>,
    /// Who is asked when a call needs permission: see [`with_handler`](Self::with_handler).
    pub handler: Option<Arc<dyn PermissionHandler>>,
    /// Who answers the questions tools ask: see
    /// [`with_elicitation_handler`](Self::with_elicitation_handler).
    pub elicitation_handler: Option<Arc<dyn crate::Elicitor>>,
    /// Rules that did not parse, reported by `Agent::create`.
    pub(crate) problems: Vec<ConfigError>,
}

impl std::fmt::Debug for PermissionSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionSettings")
            .field("mode", &self.mode)
            .field("rules", &self.rules)
            .field("additional_dirs", &self.additional_dirs)
            .field("handler", &self.handler.is_some())
            .field("elicitation_handler", &self.elicitation_handler.is_some())
            .finish()
    }
}

impl PermissionSettings {
    /// Sets the permission mode.
    pub fn with_mode(mut self, mode: PermissionMode) -> Self {
        self.mode = mode;
        self
    }

    /// Lets calls matching `rule` run without asking, e.g. `Bash(git status:*)`. A rule that
    /// does not parse fails `Agent::create`, saying why.
    pub fn allow(self, rule: &str) -> Self {
        self.add_rule(rule, |rules| &mut rules.allow)
    }

    /// Makes calls matching `rule` always ask, even when an allow rule matches.
    pub fn ask(self, rule: &str) -> Self {
        self.add_rule(rule, |rules| &mut rules.ask)
    }

    /// Refuses calls matching `rule`, whatever else says.
    pub fn deny(self, rule: &str) -> Self {
        self.add_rule(rule, |rules| &mut rules.deny)
    }

    fn add_rule(
        mut self,
        rule: &str,
        list: impl FnOnce(&mut PermissionRules) -> &mut Vec<Rule>,
    ) -> Self {
        match Rule::parse(rule) {
            Ok(rule) => list(&mut self.rules).push(rule),
            Err(error) => self.problems.push(error.into()),
        }
        self
    }

    /// Adds a directory tools may touch besides the working directory.
    pub fn with_additional_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.additional_dirs.push(dir.into());
        self
    }

    /// Asks the user through `handler` when a call needs permission. Without one, streaming
    /// apps get `PermissionRequested` events, and `Agent::prompt` refuses such calls with a
    /// message saying which rule would allow them.
    pub fn with_handler(mut self, handler: impl PermissionHandler + 'static) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// Answers the questions tools ask ([`ToolContext::elicit`](crate::ToolContext::elicit),
    /// and MCP servers' elicitations) through `handler`; each question and answer is stored in
    /// the session. Without one, streaming apps get `ElicitationRequested` events (stored, or
    /// deferred like approvals), and `Agent::prompt` cancels the questions.
    pub fn with_elicitation_handler(mut self, handler: impl crate::Elicitor + 'static) -> Self {
        self.elicitation_handler = Some(Arc::new(handler));
        self
    }
}
