//! Hooks: one trait, [`Hook`], with a default method for each of Claude Code's events.

mod closures;

use std::future::ready;
use std::sync::Arc;

use serde_json::Value;

use super::context::{CompactDecision, CompactRequest};
use crate::permission::{
    HookDecision, PermissionAnswer, PermissionHandler, PermissionQuestion, PostToolUse, PreToolUse,
};
use crate::{AgentId, BoxFuture, Tool, ToolContext, ToolError, ToolOutput};

/// What a `user_prompt_submit` hook says about a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptCheck {
    /// Send it as it is.
    Continue,
    /// Send it with this text after it, in the same user message (and in the session).
    AddContext(String),
    /// Do not send it: the run fails with [`AgentError::PromptBlocked`](super::AgentError)
    /// carrying this reason, and nothing of the prompt is stored.
    Block(String),
}

/// The model has stopped: what a `stop` or `subagent_stop` hook is shown.
#[derive(Debug)]
#[non_exhaustive]
pub struct StopContext<'a> {
    /// Which agent stopped: [`AgentId::Main`], or the sub-agent a Task call ran.
    pub agent: &'a AgentId,
    /// The model's last text.
    pub text: &'a str,
    /// How many times hooks already sent this run on; the agent stops asking at
    /// [`Hooks::max_stop_continuations`].
    pub continued: u32,
}

/// What a `stop` hook says when the model stops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopCheck {
    /// Let the run end.
    Stop,
    /// Send this to the model as a user message and go on.
    Continue(String),
}

/// Why a session started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionSource {
    /// A new conversation's first run.
    Startup,
    /// The first run after [`Agent::resume`](super::Agent::resume).
    Resume,
}

/// A session starts: before the first run of an agent does anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionStart<'a> {
    /// The session's id, when the agent has a store.
    pub session_id: Option<&'a str>,
    /// New or resumed.
    pub source: SessionSource,
}

/// Why a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEndReason {
    /// [`Agent::close`](super::Agent::close) was called.
    Closed,
    /// The last handle to the agent was dropped with a session started and not closed.
    Dropped,
}

/// A session ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionEnd<'a> {
    /// The session's id, when the agent has a store.
    pub session_id: Option<&'a str>,
    /// Closed or dropped.
    pub reason: SessionEndReason,
}

/// A call the permission gate is about to decide on: what `pre_tool_use` sees.
#[non_exhaustive]
pub struct ToolCall<'a> {
    /// The tool (its name, annotations, schema).
    pub tool: &'a dyn Tool,
    /// The input it would run with.
    pub input: &'a Value,
    /// The call's context (working directory, session values, call id).
    pub ctx: &'a ToolContext,
}

/// A call that returned: what `post_tool_use` sees (an output with `is_error` set is a
/// result too: the tool answered).
#[non_exhaustive]
pub struct ToolResult<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The input it ran with.
    pub input: &'a Value,
    /// What it returned.
    pub output: &'a ToolOutput,
    /// The call's context.
    pub ctx: &'a ToolContext,
}

/// A call that failed (refused, invalid, timed out, panicked, or the tool's error): what
/// `post_tool_use_failure` sees.
#[derive(Debug)]
#[non_exhaustive]
pub struct ToolFailure<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The input the model sent.
    pub input: &'a Value,
    /// Why it failed, as the model is told.
    pub error: &'a str,
}

/// What a `notification` hook is told.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Notification {
    /// What kind of notice.
    pub kind: NotificationKind,
    /// The notice, for a person.
    pub message: String,
}

/// The kinds of [`Notification`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotificationKind {
    /// The agent is about to ask the user for permission to run a call.
    PermissionPrompt,
}

impl NotificationKind {
    /// Claude Code's name for it (`notification_type` of a command hook's input).
    pub fn as_str(self) -> &'static str {
        match self {
            NotificationKind::PermissionPrompt => "permission_prompt",
        }
    }
}

/// A sub-agent (a Task call) is about to run: what `subagent_start` sees.
#[derive(Debug)]
#[non_exhaustive]
pub struct SubagentStart<'a> {
    /// The sub-agent's id.
    pub agent: &'a AgentId,
    /// Its kind: `general-purpose` or a name given to
    /// [`AgentConfig::with_subagent`](super::AgentConfig::with_subagent).
    pub kind: &'a str,
    /// The prompt it is given.
    pub prompt: &'a str,
}

/// Sees the agent's events and may decide some of them. Every method has a default that
/// observes nothing and decides nothing, so a hook implements only the events it wants; the
/// run awaits each. Added with [`Hooks::with_hook`]; a closure is a hook for one event with the
/// `on_*` methods of [`Hooks`] ([`Hooks::on_stop`] and the others); `.claude/settings.json`'s
/// command hooks run through the same trait (see [`CommandHooks`](super::CommandHooks)).
///
/// Hooks run in the order they were added (settings.json's after those added in code), each
/// awaited before the next. Their decisions combine so that the most cautious one wins:
/// - `pre_tool_use`: the first [`HookDecision::Allow`] or [`HookDecision::Deny`] ends the
///   chain; a [`HookDecision::Rewrite`] replaces the input (validated again) for the hooks
///   after it.
/// - `permission_request`: the first that answers wins; none: the user is asked.
/// - `user_prompt_submit`: the first [`PromptCheck::Block`] wins; added contexts add up.
/// - `stop`, `subagent_stop`: the first [`StopCheck::Continue`] wins.
/// - `pre_compact`: the first [`CompactDecision::Veto`] wins; instructions add up.
/// - the others only observe; all of them run.
///
/// ```
/// use tool_sdk::agent::{AgentConfig, Hook, PromptCheck, StopCheck, StopContext};
/// use tool_sdk::BoxFuture;
///
/// /// Two events in one type.
/// struct Guard;
///
/// impl Hook for Guard {
///     fn user_prompt_submit<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, PromptCheck> {
///         Box::pin(async move {
///             match prompt.contains("password") {
///                 true => PromptCheck::Block("prompts must not carry secrets".into()),
///                 false => PromptCheck::AddContext("Today is Monday.".into()),
///             }
///         })
///     }
///
///     fn stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
///         let check = match stop.text.contains("TODO") {
///             true => StopCheck::Continue("Finish the TODOs first.".into()),
///             false => StopCheck::Stop,
///         };
///         Box::pin(std::future::ready(check))
///     }
/// }
///
/// let config = AgentConfig::new().hooks(|hooks| {
///     hooks
///         .with_hook(Guard)
///         // One event, one closure.
///         .on_session_end(|end| eprintln!("session over: {:?}", end.reason))
/// });
/// # let _ = config;
/// ```
pub trait Hook: Send + Sync {
    /// Before the permission gate decides on a call (after deny rules): allow it, refuse
    /// it, rewrite its input, or say nothing.
    fn pre_tool_use<'a>(&'a self, call: &'a ToolCall<'a>) -> BoxFuture<'a, HookDecision> {
        let _ = call;
        Box::pin(ready(HookDecision::Continue))
    }

    /// After a call returned a result.
    fn post_tool_use<'a>(&'a self, result: &'a ToolResult<'a>) -> BoxFuture<'a, ()> {
        let _ = result;
        Box::pin(ready(()))
    }

    /// After a call failed.
    fn post_tool_use_failure<'a>(&'a self, failure: &'a ToolFailure<'a>) -> BoxFuture<'a, ()> {
        let _ = failure;
        Box::pin(ready(()))
    }

    /// A call needs the user's permission: answer for them, or `None` to let them be asked.
    /// A question [deferred](super::SessionSettings::with_deferred_approvals) waits in the
    /// store for its answer instead: hooks are not asked.
    fn permission_request<'a>(
        &'a self,
        question: &'a PermissionQuestion,
    ) -> BoxFuture<'a, Option<PermissionAnswer>> {
        let _ = question;
        Box::pin(ready(None))
    }

    /// A prompt, before the model or the session sees it.
    fn user_prompt_submit<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, PromptCheck> {
        let _ = prompt;
        Box::pin(ready(PromptCheck::Continue))
    }

    /// A notice for the user (the agent is about to ask for permission).
    fn notification<'a>(&'a self, notification: &'a Notification) -> BoxFuture<'a, ()> {
        let _ = notification;
        Box::pin(ready(()))
    }

    /// The agent's model stopped (a turn without tool calls): let the run end or send it on,
    /// at most [`Hooks::max_stop_continuations`] times a run.
    fn stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        let _ = stop;
        Box::pin(ready(StopCheck::Stop))
    }

    /// A sub-agent is about to run.
    fn subagent_start<'a>(&'a self, start: &'a SubagentStart<'a>) -> BoxFuture<'a, ()> {
        let _ = start;
        Box::pin(ready(()))
    }

    /// A sub-agent's model stopped: as [`stop`](Self::stop), for sub-agents.
    fn subagent_stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        let _ = stop;
        Box::pin(ready(StopCheck::Stop))
    }

    /// The conversation is about to be compacted: add instructions to the summary request,
    /// or veto it.
    fn pre_compact<'a>(&'a self, request: &'a CompactRequest) -> BoxFuture<'a, CompactDecision> {
        let _ = request;
        Box::pin(ready(CompactDecision::Proceed))
    }

    /// A session starts (an agent's first run, new or resumed, and the first after
    /// [`Agent::close`](super::Agent::close)).
    fn session_start<'a>(&'a self, start: &'a SessionStart<'a>) -> BoxFuture<'a, ()> {
        let _ = start;
        Box::pin(ready(()))
    }

    /// A session ends: [`Agent::close`](super::Agent::close), or the agent dropped with its
    /// session started.
    fn session_end<'a>(&'a self, end: &'a SessionEnd<'a>) -> BoxFuture<'a, ()> {
        let _ = end;
        Box::pin(ready(()))
    }
}

/// The `[hooks]` of a config: the hooks, in order, and the bound on stop continuations.
#[derive(Clone)]
pub struct Hooks {
    list: Vec<Arc<dyn Hook>>,
    /// How many times a run's `stop` hooks may send it on before it ends anyway (3 by
    /// default): a hook that always says "go on" cannot keep a run alive forever.
    pub max_stop_continuations: u32,
    /// A sub-agent's hooks: `stop` goes to [`Hook::subagent_stop`]; prompts and sessions are
    /// the parent's.
    sub: bool,
}

impl Default for Hooks {
    fn default() -> Self {
        Hooks {
            list: Vec::new(),
            max_stop_continuations: 3,
            sub: false,
        }
    }
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("hooks", &self.list.len())
            .field("max_stop_continuations", &self.max_stop_continuations)
            .finish()
    }
}

impl Hooks {
    /// Adds a hook (it runs after those added before it).
    pub fn with_hook(mut self, hook: impl Hook + 'static) -> Self {
        self.list.push(Arc::new(hook));
        self
    }

    /// Sets [`max_stop_continuations`](Self::max_stop_continuations).
    pub fn with_max_stop_continuations(mut self, continuations: u32) -> Self {
        self.max_stop_continuations = continuations;
        self
    }

    /// Whether there are no hooks.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The same hooks, for a sub-agent a Task call runs.
    pub(crate) fn for_subagent(&self) -> Hooks {
        Hooks {
            sub: true,
            ..self.clone()
        }
    }

    /// The hooks as the permission gate's `pre_tool_use` chain.
    pub(crate) fn pre_tool_use(&self) -> Vec<Arc<dyn PreToolUse>> {
        self.list
            .iter()
            .map(|hook| Arc::new(ToolHook(hook.clone())) as Arc<dyn PreToolUse>)
            .collect()
    }

    /// The hooks as the pipeline's `post_tool_use` hooks.
    pub(crate) fn post_tool_use(&self) -> Vec<Arc<dyn PostToolUse>> {
        self.list
            .iter()
            .map(|hook| Arc::new(ToolHook(hook.clone())) as Arc<dyn PostToolUse>)
            .collect()
    }

    /// Tells the `post_tool_use_failure` hooks about a call that failed (`error` is `None`
    /// when it did not).
    pub(crate) async fn tool_failed(
        &self,
        tool: &str,
        call_id: &str,
        input: &Value,
        error: Option<&ToolError>,
    ) {
        let Some(error) = error.filter(|_| !self.list.is_empty()) else {
            return;
        };
        let error = error.to_string();
        let failure = ToolFailure {
            tool,
            call_id,
            input,
            error: &error,
        };
        for hook in &self.list {
            hook.post_tool_use_failure(&failure).await;
        }
    }

    /// Runs the prompt hooks in order: the first block wins; contexts add up.
    pub(crate) async fn check_prompt(&self, prompt: &str) -> Result<Vec<String>, String> {
        let mut contexts = Vec::new();
        if self.sub {
            return Ok(contexts);
        }
        for hook in &self.list {
            match hook.user_prompt_submit(prompt).await {
                PromptCheck::Continue => {}
                PromptCheck::AddContext(context) => contexts.push(context),
                PromptCheck::Block(reason) => return Err(reason),
            }
        }
        Ok(contexts)
    }

    /// Runs the stop hooks (a sub-agent's: the `subagent_stop` ones) in order: the first that
    /// sends the run on wins. Whether they are asked at all is [`step::asks_stop_hooks`]'s
    /// to say.
    ///
    /// [`step::asks_stop_hooks`]: super::step::asks_stop_hooks
    pub(crate) async fn check_stop(&self, stop: &StopContext<'_>) -> Option<String> {
        for hook in &self.list {
            let check = match self.sub {
                true => hook.subagent_stop(stop).await,
                false => hook.stop(stop).await,
            };
            if let StopCheck::Continue(message) = check {
                return Some(message);
            }
        }
        None
    }

    /// Runs the compaction hooks: `Err` on the first veto, else the instructions added.
    pub(crate) async fn check_compact(&self, request: &CompactRequest) -> Result<Vec<String>, ()> {
        let mut instructions = Vec::new();
        for hook in &self.list {
            match hook.pre_compact(request).await {
                CompactDecision::Proceed => {}
                CompactDecision::Instruct(more) => instructions.push(more),
                CompactDecision::Veto => return Err(()),
            }
        }
        Ok(instructions)
    }

    /// Tells the `notification` hooks.
    pub(crate) async fn notify(&self, notification: &Notification) {
        for hook in &self.list {
            hook.notification(notification).await;
        }
    }

    pub(crate) async fn session_start(&self, start: SessionStart<'_>) {
        if !self.sub {
            for hook in &self.list {
                hook.session_start(&start).await;
            }
        }
    }

    pub(crate) async fn session_end(&self, end: SessionEnd<'_>) {
        if !self.sub {
            for hook in &self.list {
                hook.session_end(&end).await;
            }
        }
    }

    pub(crate) async fn subagent_start(&self, start: &SubagentStart<'_>) {
        for hook in &self.list {
            hook.subagent_start(start).await;
        }
    }

    /// `ask` with the `permission_request` hooks in front and a notification before the
    /// user is asked.
    pub(crate) fn asker<'a>(&'a self, ask: &'a dyn PermissionHandler) -> HookedAsker<'a> {
        HookedAsker { hooks: self, ask }
    }
}

/// A [`Hook`] as the permission gate's and the pipeline's tool hooks.
struct ToolHook(Arc<dyn Hook>);

impl PreToolUse for ToolHook {
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, HookDecision> {
        Box::pin(async move { self.0.pre_tool_use(&ToolCall { tool, input, ctx }).await })
    }
}

impl PostToolUse for ToolHook {
    fn after<'a>(
        &'a self,
        tool: &'a str,
        input: &'a Value,
        output: &'a ToolOutput,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let result = ToolResult {
                tool,
                input,
                output,
                ctx,
            };
            self.0.post_tool_use(&result).await
        })
    }
}

/// The app's way of asking, behind the `permission_request` hooks and a notification.
pub(crate) struct HookedAsker<'a> {
    hooks: &'a Hooks,
    ask: &'a dyn PermissionHandler,
}

impl PermissionHandler for HookedAsker<'_> {
    fn ask<'a>(&'a self, question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer> {
        Box::pin(async move {
            for hook in &self.hooks.list {
                if let Some(answer) = hook.permission_request(question).await {
                    return answer;
                }
            }
            let notification = Notification {
                kind: NotificationKind::PermissionPrompt,
                message: format!("The agent needs your permission to use {}", question.tool),
            };
            self.hooks.notify(&notification).await;
            self.ask.ask(question).await
        })
    }
}
