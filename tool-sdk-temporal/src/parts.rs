//! What a worker runs an agent with, and what a run asks of the workflow.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tool_sdk::ToolRegistry;
use tool_sdk::agent::{AgentConfig, AgentEffects, Limits, PermissionSettings};
use tool_sdk::model::Model;
use tool_sdk::permission::PermissionMode;
use tool_sdk::session::SessionStore;

use crate::error::TemporalError;

/// What a worker runs an agent's activities with: an [`AgentConfig`], as
/// [`Agent::create`](tool_sdk::agent::Agent::create) takes it (model, tools by name,
/// permission mode and rules, hooks, limits and budgets, MCP servers), and the store the
/// conversation lives in. Every worker of a task queue should be given the same config: a
/// run's turns and calls go to whichever worker polls first.
///
/// What runs on Temporal, and where:
/// - the model turn (with fallbacks, thinking, prompt caching) and each call (MCP servers'
///   included) are activities, run on a worker with this config;
/// - the `user_prompt_submit` hooks see the prompt in the run's first activity, which stores
///   it with the context they add; a prompt they block fails the run and is not stored;
/// - permission rules and mode, and the `pre_tool_use`, `post_tool_use` and
///   `post_tool_use_failure` hooks, run in the call's activity; a call the rules would ask
///   about waits, holding no process, for [`RunHandle::answer_approval`];
/// - the `stop` hooks run in an activity when the model answers without calls, and may send
///   the run on ([`Hooks::max_stop_continuations`](tool_sdk::agent::Hooks) times at most);
/// - budgets (`max_budget_usd`, `max_run_tokens`) are counted per run by the workflow from
///   each turn's usage, priced at the model's price; a turn that spends one has its calls
///   answered as not run, and the run ends with [`RunSummary::stopped`](crate::RunSummary);
/// - a tool's questions ([`ToolContext::elicit`](tool_sdk::ToolContext::elicit)) are stored in
///   the session and wait in the server, holding no process, for
///   [`RunHandle::answer_elicitation`](crate::RunHandle::answer_elicitation); the call then
///   runs again from the start, its questions answered from the session (as in process);
/// - the context window is managed as in process: before a model turn, an activity of its
///   own clears old tool results or compacts the conversation (the `pre_compact` hooks
///   asked, the summary requested from the model), each change stored in the session
///   first; the summary's tokens count in the run's usage and budgets;
/// - the Task tool's sub-agents run inside its call's activity, as they do in process inside
///   the call (a worker that dies under one answers the call as one that may have partly
///   happened); a call of theirs that would ask is refused, naming the rule that allows it;
/// - `max_turns` is the config's, unless [`RunOptions::max_turns`] overrides it.
///
/// - `session_start` hooks are told as each run begins (a new session, or a resumed one), and
///   `notification` hooks when a permission question is stored; `permission_request` hooks
///   are not asked, every question waiting for a person, as with deferred approvals in
///   process. `session_end` hooks are not called: a session on Temporal is never closed.
///
/// [`RunHandle::answer_approval`]: crate::RunHandle::answer_approval
#[derive(Clone)]
pub struct AgentParts {
    pub(crate) config: AgentConfig,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) retries: HashMap<String, ToolRetries>,
}

/// How a tool's calls are retried when the worker running them dies (or the tool's activity
/// fails): set with [`AgentParts::with_tool_retries`]. A tool given one may run again, whatever
/// it declares: its app says running it twice is safe.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolRetries {
    /// How many attempts in all (at least 1).
    pub attempts: u32,
    /// How long before the second attempt; each next waits twice as long.
    pub first_backoff: Duration,
}

impl AgentParts {
    /// Parts from `config`, with the conversation in `store` (the store every worker and
    /// client of the task queue shares).
    pub fn from_config(config: AgentConfig, store: Arc<dyn SessionStore>) -> Self {
        AgentParts {
            config,
            store,
            retries: HashMap::new(),
        }
    }

    /// Retries the calls of the tool `name` as `retries` says when their worker dies, instead
    /// of answering them "may have partly happened" (a tool that is neither read-only nor
    /// idempotent), or instead of [`RunOptions::retry_attempts`] (one that is).
    pub fn with_tool_retries(mut self, name: impl Into<String>, retries: ToolRetries) -> Self {
        self.retries.insert(name.into(), retries);
        self
    }

    /// Parts of `model` and every tool of `registry`, with no permission checks (mode
    /// `BypassPermissions`) and the config's defaults otherwise: the short way for tests and
    /// trusted tools. [`from_config`](Self::from_config) takes the rest.
    pub fn new(
        model: Arc<dyn Model>,
        registry: Arc<ToolRegistry>,
        store: Arc<dyn SessionStore>,
    ) -> Self {
        let config = AgentConfig::new()
            .with_model(model)
            .with_registry(registry)
            .permissions(|p| p.with_mode(PermissionMode::BypassPermissions));
        AgentParts::from_config(config, store)
    }

    /// The system prompt of every request.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.config = self.config.model(|m| m.with_system_prompt(prompt));
        self
    }

    /// The most tokens the model may produce in a turn.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.config = self.config.model(|m| m.with_max_tokens(max_tokens));
        self
    }

    /// The directory the tools work in.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.config = self.config.with_working_dir(dir);
        self
    }

    /// Edits the limits: tool timeouts (a call's activity may run for its tool's timeout plus
    /// [`ACTIVITY_GRACE`] for the store's writes), result caps, turns, budgets.
    pub fn limits(mut self, edit: impl FnOnce(Limits) -> Limits) -> Self {
        self.config = self.config.limits(edit);
        self
    }

    /// Edits the permissions: mode and rules. A call they would ask about is not run: its
    /// question is stored in the session (as an agent with deferred approvals stores it, so
    /// `tool_sdk::session::pending_approvals` lists it) and the run waits, holding no process,
    /// until [`RunHandle::answer_approval`] answers it.
    ///
    /// [`RunHandle::answer_approval`]: crate::RunHandle::answer_approval
    pub fn permissions(
        mut self,
        edit: impl FnOnce(PermissionSettings) -> PermissionSettings,
    ) -> Self {
        self.config = self.config.permissions(edit);
        self
    }

    /// The config's parts, built as `Agent::create` builds them: what it refuses is an error
    /// here, before any run.
    pub(crate) async fn build(self) -> Result<crate::AgentActivities, TemporalError> {
        let effects = AgentEffects::build(self.config)
            .await
            .map_err(TemporalError::Config)?;
        Ok(crate::AgentActivities::new(effects, self.store).with_retries(self.retries))
    }
}

/// What a call's activity may take beyond its tool's timeout: loading the conversation and
/// storing the result. The tool's own timeout fires first, so the model gets its usual
/// "timed out" result; the activity's only catches a worker that hangs.
pub const ACTIVITY_GRACE: Duration = Duration::from_secs(10);

/// How one run goes, chosen by whoever starts it. Recorded in the workflow's input, so that a
/// replay makes the same decisions.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOptions {
    /// The most model turns the run takes; `None`: the worker's config's `max_turns`.
    pub max_turns: Option<u32>,
    /// How long an activity may go without a heartbeat before the server gives it to another
    /// worker (or, for a call that may not run twice, answers it as stopped). Activities
    /// heartbeat at a third of it. The time from a worker's death to its run going on
    /// elsewhere is about this plus a fifth of a second (the sticky queue's timeout), if the
    /// server's `history.timerProcessorMaxTimeShift` is short: its default (1 s) makes every
    /// timeout fire up to a second late (`temporal server start-dev --dynamic-config-value
    /// history.timerProcessorMaxTimeShift='"100ms"'`).
    pub heartbeat_timeout: Duration,
    /// How long one model turn may take, all retries of its request included.
    pub model_timeout: Duration,
    /// How many times in all a call of a read-only or idempotent tool is attempted when the
    /// workers running it die (at least 1).
    pub retry_attempts: u32,
    /// After how many model turns a workflow run continues as a new one, so that no history
    /// nears Temporal's limits (about 50,000 events, 50 MB); it also does when the server
    /// suggests it. 0: only then.
    pub continue_after: u32,
    /// The workflow's id; `None`: `agent-<session id>`.
    pub workflow_id: Option<String>,
    /// Runs read-only calls (of tools with no retries of their own) as local activities: the
    /// worker that holds the run runs them inside its workflow task and records their results
    /// with the task's completion, so that a step whose calls only read costs one round trip
    /// through the server instead of two (half the time on a dev server: BENCHMARKS.md). What
    /// it gives up: a local activity cannot heartbeat, so those tools' progress
    /// ([`RunEvent::ToolProgress`](crate::RunEvent::ToolProgress)) does not show, and a worker
    /// that dies in one is noticed when the workflow task times out (10 s) rather than at the
    /// heartbeat timeout; the call then runs again on another worker, as any read does.
    /// Off by default.
    pub local_reads: bool,
}

impl Default for RunOptions {
    /// The config's turns, a 10 s heartbeat timeout, 10 minutes a model turn, three attempts of a call
    /// that may run again, a new workflow run every 200 turns.
    fn default() -> Self {
        RunOptions {
            max_turns: None,
            heartbeat_timeout: Duration::from_secs(10),
            model_timeout: Duration::from_secs(600),
            retry_attempts: 3,
            continue_after: 200,
            workflow_id: None,
            local_reads: false,
        }
    }
}
