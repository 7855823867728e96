//! What a worker runs an agent with, and what a run asks of the workflow.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tool_sdk::ToolRegistry;
use tool_sdk::model::Model;
use tool_sdk::permission::{PermissionGate, PermissionMode};
use tool_sdk::pipeline::CallPolicy;
use tool_sdk::session::SessionStore;

/// The parts a worker runs the agent's activities with: the model, the tools, the store the
/// conversation lives in, and how requests and calls are made. Every worker of a task queue
/// should be given the same tools and model: a run's turns and calls go to whichever worker
/// polls first.
#[derive(Clone)]
pub struct AgentParts {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) registry: Arc<ToolRegistry>,
    pub(crate) store: Arc<dyn SessionStore>,
    pub(crate) system_prompt: Option<String>,
    pub(crate) max_tokens: u32,
    pub(crate) working_dir: PathBuf,
    pub(crate) policy: CallPolicy,
    pub(crate) gate: Option<(Arc<PermissionGate>, PermissionMode)>,
}

impl AgentParts {
    /// Parts with no system prompt, 4096 tokens a turn, the process's working directory and
    /// the default [`CallPolicy`] (two minutes for a tool that sets no timeout).
    pub fn new(
        model: Arc<dyn Model>,
        registry: Arc<ToolRegistry>,
        store: Arc<dyn SessionStore>,
    ) -> Self {
        AgentParts {
            model,
            registry,
            store,
            system_prompt: None,
            max_tokens: 4096,
            working_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
            policy: CallPolicy::default(),
            gate: None,
        }
    }

    /// The system prompt of every request.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// The most tokens the model may produce in a turn.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = max_tokens;
        self
    }

    /// The directory the tools work in.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = dir.into();
        self
    }

    /// How calls are made: timeouts, result caps, hooks. A call's activity may run for the
    /// timeout this policy gives its tool, plus [`ACTIVITY_GRACE`] for the store's writes.
    pub fn with_call_policy(mut self, policy: CallPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Checks each call with `gate` in `mode`, as an agent's permissions do. A call the gate
    /// would ask about is not run: its question is stored in the session (as an agent with
    /// deferred approvals stores it, so `tool_sdk::session::pending_approvals` lists it) and
    /// the run waits, holding no process, until [`RunHandle::answer_approval`] answers it.
    ///
    /// [`RunHandle::answer_approval`]: crate::RunHandle::answer_approval
    pub fn with_permission_gate(mut self, gate: Arc<PermissionGate>, mode: PermissionMode) -> Self {
        self.gate = Some((gate, mode));
        self
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
    /// The most model turns the run takes (`AgentError::MaxTurns` past it).
    pub max_turns: u32,
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
}

impl Default for RunOptions {
    /// 50 turns, a 10 s heartbeat timeout, 10 minutes a model turn, three attempts of a call
    /// that may run again, a new workflow run every 200 turns.
    fn default() -> Self {
        RunOptions {
            max_turns: 50,
            heartbeat_timeout: Duration::from_secs(10),
            model_timeout: Duration::from_secs(600),
            retry_attempts: 3,
            continue_after: 200,
            workflow_id: None,
        }
    }
}
