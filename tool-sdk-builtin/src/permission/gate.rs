//! The permission gate: whether one call may run. The call pipeline asks it for every call
//! that passed validation and the tool's own check.
//!
//! The chain, first answer wins (each step reads the call's [`CallFacts`], computed once):
//!
//! 1. **Deny rules** refuse (a shell command is refused when any of its simple commands
//!    matches), and so does the Bash classifier for a forbidden command (`rm -rf /`), whatever
//!    comes after.
//! 2. **`pre_tool_use` hooks** in order: deny, allow, or rewrite the input. A rewritten input
//!    is validated again, its facts recomputed, and step 1 applied to it.
//! 3. **The mode**: `plan` refuses every call that is neither read-only nor about the agent's
//!    own state; `bypassPermissions` allows; `acceptEdits` allows calls that write files.
//! 4. **Ask rules**, then **allow rules**, then the rules the user remembered with "allow
//!    always" (allow and ask rules must cover every simple command of a shell command).
//! 5. **The default**: a shell command the classifier vouches for runs (every simple command
//!    on its read-only list), unless it may read a path the sandbox refuses file tools (the
//!    Read tool's refusal makes the same read through the shell ask); calls about the agent's
//!    own state run; other read-only calls run; everything else asks.
//! 6. **The question**, to the app's [`PermissionHandler`] (the agent turns a missing handler
//!    into a `PermissionRequested` event): allow once, allow always (the suggested rule is
//!    remembered for the session), or deny with a message for the model.
//!
//! Approval only ever comes from rules, hooks or the user, never from the tool's arguments.

use std::borrow::Cow;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::facts::CallFacts;
use super::{
    HookDecision, ModeState, PermissionAnswer, PermissionHandler, PermissionMode,
    PermissionQuestion, PermissionRules, PreToolUse, Rule, RuleVerdict, ShellDir,
};
use tool_sdk_core::{Tool, ToolContext, ToolError};

/// The one tool plan mode names as the way out, when the model has it.
const EXIT_PLAN_MODE: &str = "ExitPlanMode";

/// Rules, hooks and remembered answers: everything that decides about calls for one agent.
pub struct PermissionGate {
    rules: PermissionRules,
    pre_hooks: Vec<Arc<dyn PreToolUse>>,
    remembered: Mutex<Vec<Rule>>,
    /// Whether the model can call ExitPlanMode (plan mode's refusal only names it then).
    plan_exit_offered: bool,
}

impl std::fmt::Debug for PermissionGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PermissionGate")
            .field("rules", &self.rules)
            .field("pre_hooks", &self.pre_hooks.len())
            .finish_non_exhaustive()
    }
}

/// Checks a rewritten input the way the model's own input was checked (schema, coercion, the
/// tool's own check).
pub type Revalidate<'a> =
    &'a (dyn Fn(Value) -> tool_sdk_core::BoxFuture<'a, Result<Value, ToolError>> + Send + Sync);

impl PermissionGate {
    /// A gate with these rules and hooks.
    pub fn new(rules: PermissionRules, pre_hooks: Vec<Arc<dyn PreToolUse>>) -> Self {
        PermissionGate {
            rules,
            pre_hooks,
            remembered: Mutex::new(Vec::new()),
            plan_exit_offered: true,
        }
    }

    /// Says whether the model has a way out of plan mode, so the refusal can name it.
    pub fn with_plan_exit_offered(mut self, offered: bool) -> Self {
        self.plan_exit_offered = offered;
        self
    }

    /// The rules the user added by answering "allow always".
    pub fn remembered(&self) -> Vec<Rule> {
        self.remembered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Runs the chain for one call. May rewrite `input` (hooks): the rewritten input, checked
    /// again by `revalidate`, replaces it (a borrowed input is only copied then). `ask` is who
    /// answers when the chain ends in a question; `None` refuses such calls, naming the rule
    /// that would allow them.
    pub async fn check(
        &self,
        tool: &dyn Tool,
        input: &mut Cow<'_, Value>,
        ctx: &ToolContext,
        revalidate: Revalidate<'_>,
        ask: Option<&dyn PermissionHandler>,
    ) -> Result<(), ToolError> {
        let working_dir = ctx.working_dir();
        let mut facts = CallFacts::for_tool(tool, input, working_dir);
        if let Some(error) = self.denied(&facts, input, working_dir) {
            return Err(error);
        }

        for hook in &self.pre_hooks {
            match hook.check(tool, input, ctx).await {
                HookDecision::Continue => {}
                HookDecision::Allow => return Ok(()),
                HookDecision::Deny(reason) => return Err(ToolError::permission_denied(reason)),
                HookDecision::Rewrite(rewritten) => {
                    *input = Cow::Owned(revalidate(rewritten).await?);
                    facts = CallFacts::for_tool(tool, input, working_dir);
                    if let Some(error) = self.denied(&facts, input, working_dir) {
                        return Err(error);
                    }
                }
            }
        }

        let mode = ctx.session::<ModeState>().get();
        let outside = || reads_outside(&facts, ctx);
        if self.decide(&facts, input, working_dir, mode, outside)? == PermissionPreview::Runs {
            return Ok(());
        }

        let question = PermissionQuestion {
            tool: tool.name().to_owned(),
            input: input.clone().into_owned(),
            prompt: tool.permission_prompt(input),
            suggested_rule: Rule::for_call(&facts),
        };
        let answer = match ask {
            Some(handler) => handler.ask(&question).await,
            None => PermissionAnswer::Deny(not_allowed_message(&question)),
        };
        match answer {
            PermissionAnswer::Allow => Ok(()),
            PermissionAnswer::AllowAlways => {
                self.remembered
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(question.suggested_rule);
                Ok(())
            }
            PermissionAnswer::Deny(reason) => Err(ToolError::permission_denied(reason)),
        }
    }

    /// What [`check`](Self::check) would decide for a call in `mode`, without asking anyone:
    /// for a listing such as the coder's `/tools`. The [`PreToolUse`] hooks are not run
    /// (they are async and may look at anything), so a hook can still change the outcome.
    pub fn preview(
        &self,
        tool: &dyn Tool,
        input: &Value,
        working_dir: &Path,
        mode: PermissionMode,
    ) -> PermissionPreview {
        let facts = CallFacts::for_tool(tool, input, working_dir);
        if self.denied(&facts, input, working_dir).is_some() {
            return PermissionPreview::Refused;
        }
        // Where the shell is now is not known here: the path check is check's alone.
        self.decide(&facts, input, working_dir, mode, || false)
            .unwrap_or(PermissionPreview::Refused)
    }

    /// Steps 3 to 5, after the deny rules and the hooks: whether the call runs or asks, or
    /// why it is refused. `reads_outside` is asked last, and only for a call that would run.
    fn decide(
        &self,
        facts: &CallFacts,
        input: &Value,
        working_dir: &Path,
        mode: PermissionMode,
        reads_outside: impl FnOnce() -> bool,
    ) -> Result<PermissionPreview, ToolError> {
        match mode {
            PermissionMode::Plan if !facts.read_only && !facts.about_agent_state() => {
                return Err(ToolError::permission_denied(self.plan_refusal()));
            }
            PermissionMode::BypassPermissions => return Ok(PermissionPreview::Runs),
            PermissionMode::AcceptEdits if facts.writes_files() => {
                return Ok(PermissionPreview::Runs);
            }
            _ => {}
        }
        Ok(match self.rules.verdict(facts, input, working_dir) {
            RuleVerdict::Deny(rule) => return Err(forbidden_by(&rule)),
            RuleVerdict::Ask(_) => PermissionPreview::Asks,
            RuleVerdict::Allow(_) => PermissionPreview::Runs,
            RuleVerdict::None if self.remembers(facts, input, working_dir) => {
                PermissionPreview::Runs
            }
            RuleVerdict::None if facts.runs_unasked() && !reads_outside() => {
                PermissionPreview::Runs
            }
            RuleVerdict::None => PermissionPreview::Asks,
        })
    }

    /// Step 1: deny rules, and commands the classifier forbids.
    fn denied(&self, facts: &CallFacts, input: &Value, working_dir: &Path) -> Option<ToolError> {
        if let Some(rule) = self.rules.deny_for(facts, input, working_dir) {
            return Some(forbidden_by(&rule));
        }
        facts
            .forbidden_command()
            .map(|verdict| ToolError::permission_denied(format!("refused: {}", verdict.reason)))
    }

    fn remembers(&self, facts: &CallFacts, input: &Value, working_dir: &Path) -> bool {
        self.remembered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|rule| rule.matches(facts, input, working_dir))
    }

    fn plan_refusal(&self) -> String {
        let mut message = "plan mode is on: only read-only tools run until the user approves \
                           a plan."
            .to_owned();
        if self.plan_exit_offered {
            message.push_str(&format!(
                " Finish researching, then present your plan with {EXIT_PLAN_MODE}"
            ));
        } else {
            message.push_str(" Finish researching, then present your plan in your reply");
        }
        message
    }
}

/// Whether a shell command the classifier vouches for reads where the sandbox would not let
/// the Read tool read (`cat ~/.ssh/id_rsa`): then it asks, as other reads there are refused.
fn reads_outside(facts: &CallFacts, ctx: &ToolContext) -> bool {
    let (Some(shell), Some(sandbox)) = (facts.shell(), ctx.sandbox()) else {
        return false;
    };
    let dir = ctx
        .session::<ShellDir>()
        .get()
        .filter(|dir| dir.is_dir())
        .unwrap_or_else(|| ctx.working_dir().to_owned());
    shell.read_outside(sandbox, &dir).is_some()
}

/// What the gate would do with a call, from [`PermissionGate::preview`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionPreview {
    /// It runs without asking.
    Runs,
    /// The user is asked first.
    Asks,
    /// It is refused (a deny rule, the classifier, or plan mode).
    Refused,
}

fn forbidden_by(rule: &Rule) -> ToolError {
    ToolError::permission_denied(format!("the rule `{rule}` forbids this call"))
}

/// What the model is told when no one could be asked.
pub fn not_allowed_message(question: &PermissionQuestion) -> String {
    format!(
        "`{}` needs the user's permission and no one could be asked. The app can allow it \
         with the rule `{}` (or run in another permission mode)",
        question.tool, question.suggested_rule
    )
}
