//! The agent: a model, the tools it may call, and the loop between them.
//!
//! [`Agent::create`] starts one from an [`AgentConfig`]; [`Agent::prompt`] runs a prompt to
//! its answer, and [`Agent::run`] streams the same run as [`AgentEvent`]s (text as it comes,
//! each call, permission questions). A [`ScriptedModel`](crate::model::ScriptedModel) plays
//! the model offline:
//!
//! ```standalone_crate
//! use serde_json::json;
//! use tool_sdk::agent::{Agent, AgentConfig};
//! use tool_sdk::model::{ScriptedModel, ScriptedTurn};
//! use tool_sdk::tool;
//!
//! /// Adds two numbers.
//! #[tool(read_only)]
//! async fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let model = ScriptedModel::new([
//!     ScriptedTurn::tool_call("add", json!({"a": 2, "b": 3})),
//!     ScriptedTurn::text("2 + 3 = 5"),
//! ]);
//! let agent = Agent::create(AgentConfig::new().with_model(model).with_tools(["add"]))
//!     .await
//!     .unwrap();
//! let result = agent.prompt("What is 2 + 3?").await.unwrap();
//! assert_eq!(result.text, "2 + 3 = 5");
//! assert_eq!(result.tool_calls, 1);
//! # });
//! ```

// The doctests here are `standalone_crate`: merged doctests would share one global registry,
// where two examples' tools could clash by name.

use std::collections::HashMap;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::model::{
    History, Message, Model, ModelError, ModelEvent, ModelRequest, ModelResponse, OutputFormat,
    Role, StopReason, ToolSpec, Usage,
};
use crate::permission::PermissionAnswer;
use crate::permission::{ModeState, PermissionGate, PermissionMode, Rule, Sandbox};
use crate::pipeline::CallPolicy;
use crate::registry::near_matches;
use crate::session::{
    CallCheckpointer, FileCheckpoints, ForkPoint, NewSession, PendingApproval, Record,
    RewindReport, SessionError, SessionStore, push_user_message_to, records_for, restore,
};
use crate::validate::ValidationOptions;
use crate::{
    AgentId, FileStateTracker, RegistryError, SessionValues, StateMap, Tool, ToolContext,
    ToolRegistry,
};

mod budget;
mod config;
mod context;
mod early;
mod error;
mod events;
mod executor;
mod hold;
mod hooks;
#[cfg(feature = "mcp")]
mod mcp;
mod output;
mod project;
mod recorder;
mod run;
mod spans;
mod stored;
mod subagent;

pub use config::{
    AgentConfig, ModelSpec, ProviderKind, SessionLeasing, SessionSettings, SubagentConfig,
};
pub use context::{CompactDecision, CompactRequest, ContextSettings, IMAGE_TOKENS, PreCompact};
pub use error::{AgentError, ConfigError, StoreNeed};
pub use events::{AgentEvent, PermissionRequest};
pub use hooks::{
    PromptCheck, SessionEvent, SessionHook, SessionSource, StopCheck, StopContext, StopHook,
    UserPromptSubmit,
};
pub use output::TypedRun;
pub use project::{ClaudeSettings, MEMORY_FILES, MemoryFile, ProjectMemory};

/// How a run went.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// The model's final text.
    pub text: String,
    /// The whole conversation after the run: the agent's own, shared rather than copied
    /// (cheap to clone; `to_vec` for a `Vec`).
    pub messages: History,
    /// Tokens used by the run.
    pub usage: Usage,
    /// What [`usage`](Self::usage) cost, in USD; `None` when the model's price is unknown
    /// (see [`AgentConfig::with_model_info`]) or no turn ran.
    pub cost_usd: Option<f64>,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls made (including refused and failed ones).
    pub tool_calls: usize,
    /// Files the tools changed.
    pub files_modified: Vec<PathBuf>,
    /// Failed tool calls, as `name: message`.
    pub errors: Vec<String>,
    /// Why the run failed, if it did.
    pub error: Option<AgentError>,
    /// Why the model last stopped.
    pub stop_reason: Option<StopReason>,
    /// Wall-clock time of the run.
    pub duration: Duration,
    /// The typed answer, validated, when the run asked for one ([`Agent::prompt_as`]); read
    /// it with [`RunResult::output_as`].
    pub output: Option<serde_json::Value>,
}

/// An agent: create it once, then [`prompt`](Agent::prompt) or [`run`](Agent::run) it as many
/// times as needed; the conversation carries over between runs.
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
    /// What resuming left out of the stored history ([`Agent::resume_notes`]).
    resume_notes: Arc<[String]>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("model", &self.inner.model.model_id())
            .field("tools", &self.tool_names())
            .finish_non_exhaustive()
    }
}

pub(crate) struct AgentInner {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) registry: Arc<ToolRegistry>,
    /// The tools offered to the model; MCP servers change it at run time, each turn takes a
    /// snapshot.
    pub(crate) specs: Arc<std::sync::RwLock<Arc<[ToolSpec]>>>,
    /// The serialised size of a tool list, for the context estimate (`context.rs`); the list
    /// is kept so that a new one is told from it.
    pub(crate) tool_chars: std::sync::Mutex<Option<(Arc<[ToolSpec]>, usize)>>,
    pub(crate) config: AgentConfig,
    /// The permission gate and limits every call of this agent runs with.
    pub(crate) policy: CallPolicy,
    pub(crate) gate: Arc<PermissionGate>,
    pub(crate) state: Arc<StateMap>,
    pub(crate) files: Arc<FileStateTracker>,
    pub(crate) session: Arc<SessionValues>,
    pub(crate) sandbox: Arc<Sandbox>,
    pub(crate) session_id: Arc<str>,
    /// Where the run's records go; `None` keeps the conversation in memory only (and for
    /// sub-agents, whose work reaches the parent's session as the Task call's result).
    pub(crate) store: Option<Arc<dyn SessionStore>>,
    /// Records that go to the store with the next [`flush`](Self::flush): a model turn and
    /// its usage wait for the start of the turn's first calls, so that a step pays one commit
    /// for its turn rather than one a record.
    pub(crate) staged: std::sync::Mutex<Vec<Record>>,
    /// Held from taking the staged records until the store has them, so that records reach
    /// the store in the order they were staged even when calls running together flush.
    pub(crate) flushing: tokio::sync::Mutex<()>,
    /// The one writer of the session's records (`store` is it, as a store): fenced by the
    /// session's lease, stopped by its first failure.
    pub(crate) recorder: Option<Arc<recorder::Recorder>>,
    pub(crate) agent_id: AgentId,
    /// The content of files before the tools changed them, for [`Agent::rewind_files`];
    /// shared with sub-agents.
    pub(crate) checkpoints: Arc<FileCheckpoints>,
    /// The index of the message whose calls are running: what a file checkpoint is made at.
    /// A sub-agent shares its parent's (its changes belong to the parent's Task call) and
    /// leaves it alone.
    pub(crate) call_message: Arc<AtomicUsize>,
    pub(crate) working_dir: PathBuf,
    /// The conversation, shared with each model request (see [`History`]).
    pub(crate) messages: tokio::sync::Mutex<History>,
    /// Why the session starts, until the first run has told the session hooks.
    pub(crate) session_start: std::sync::Mutex<Option<SessionSource>>,
    /// Costs, token totals and budgets; shared with sub-agents.
    pub(crate) ledger: Arc<budget::Ledger>,
    /// The agent's MCP servers (none for sub-agents, which use a snapshot of the tools).
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Option<Arc<mcp::AgentMcp>>,
    /// What every call's context shares, made on the first call: each call then gets a copy
    /// (reference counts, no allocation) with its own parts set.
    pub(crate) call_context: std::sync::OnceLock<ToolContext>,
}

impl Agent {
    /// Builds an agent: resolves the model and the tools the model may see (exact names and
    /// globs; an unknown name is an error that lists the near matches), checks that the app
    /// state every tool needs is there, compiles the validators.
    pub async fn create(config: AgentConfig) -> Result<Agent, AgentError> {
        let store = config.resolve_session_store()?;
        if config.session.defer_approvals && store.is_none() {
            return Err(ConfigError::NoSessionStore {
                need: StoreNeed::DeferredApprovals,
            }
            .into());
        }
        let mut inner = AgentInner::build(config).await?;
        if let Some(store) = store {
            let session = store.create(NewSession::new(&inner.working_dir)).await?;
            let hold =
                hold::SessionHold::take(&store, &session.id, inner.config.session.lease).await?;
            let recorder = Arc::new(recorder::Recorder::new(store, hold));
            let store: Arc<dyn SessionStore> = recorder.clone();
            inner.session_id = Arc::from(session.id);
            inner.checkpoints = Arc::new(FileCheckpoints::stored(
                store.clone(),
                inner.session_id.clone(),
                &[],
            ));
            inner.store = Some(store);
            inner.recorder = Some(recorder);
        }
        Ok(Agent {
            inner: Arc::new(inner),
            resume_notes: Arc::new([]),
        })
    }

    /// The names of the tools the model can see, in the order offered.
    pub fn tool_names(&self) -> Vec<String> {
        self.inner.specs().iter().map(|s| s.name.clone()).collect()
    }

    /// The agent's own registry: its tools, their validators and call statistics.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The rules the user added this session by answering "allow always", to persist in the
    /// config file if the app wants them next time.
    pub fn remembered_rules(&self) -> Vec<Rule> {
        self.inner.gate.remembered()
    }

    /// What the permission chain would decide, now, for a call of `tool` with `input`, without
    /// asking anyone or running hooks (see [`PermissionGate::preview`]): for listings such as
    /// a `/tools` command. `None` when the agent has no such tool.
    ///
    /// [`PermissionGate::preview`]: crate::permission::PermissionGate::preview
    pub fn permission_preview(
        &self,
        tool: &str,
        input: &serde_json::Value,
    ) -> Option<crate::permission::PermissionPreview> {
        let tool = self.inner.registry.get(tool)?;
        Some(self.inner.gate.preview(
            tool.as_ref(),
            input,
            &self.inner.working_dir,
            self.permission_mode(),
        ))
    }

    /// The session's permission mode now (ExitPlanMode and [`set_permission_mode`] change it).
    ///
    /// [`set_permission_mode`]: Agent::set_permission_mode
    pub fn permission_mode(&self) -> PermissionMode {
        self.inner.session.get::<ModeState>().get()
    }

    /// Switches the session's permission mode, for a `/mode plan` command or a Shift+Tab key:
    /// it applies from the next permission decision on, also to a run in progress.
    pub fn set_permission_mode(&self, mode: PermissionMode) {
        self.inner.session.get::<ModeState>().set(mode);
    }

    /// The conversation so far.
    pub async fn messages(&self) -> Vec<Message> {
        self.inner.messages.lock().await.to_vec()
    }

    /// Starts a run and returns its events as a stream. The run goes on in a task of its own;
    /// dropping the stream cancels it. Needs a Tokio runtime.
    pub fn run(&self, prompt: impl Into<String>) -> AgentRun {
        self.run_with_cancellation(prompt, CancellationToken::new())
    }

    /// [`run`](Self::run), stopped when `cancel` fires (or the stream is dropped).
    pub fn run_with_cancellation(
        &self,
        prompt: impl Into<String>,
        cancel: CancellationToken,
    ) -> AgentRun {
        self.start(prompt.into(), None, cancel)
    }

    /// Asks for an answer of type `T` and waits for it: the model is asked in its provider's
    /// own way (Anthropic: a `final_answer` tool it must call; OpenAI: a strict
    /// `response_format` JSON schema), may call tools first, and its answer is checked with
    /// the validator tool inputs get. An answer that fails goes back to the model with the
    /// list of its problems, up to [`AgentConfig::max_output_retries`] times; then the run
    /// fails with [`AgentError::OutputInvalid`]. Permission questions are refused, as with
    /// [`prompt`](Self::prompt).
    ///
    /// `T`'s schema root need not be an object: a list or an enum is asked for wrapped in
    /// `{"value": ...}` and unwrapped.
    ///
    /// ```standalone_crate
    /// use serde::Deserialize;
    /// use serde_json::json;
    /// use tool_sdk::agent::{Agent, AgentConfig};
    /// use tool_sdk::model::{ScriptedModel, ScriptedTurn};
    /// use tool_sdk::{JsonSchema, schemars};
    ///
    /// /// A city's weather.
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Forecast {
    ///     city: String,
    ///     celsius: i32,
    /// }
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([
    ///     // Wrong: the model is told `/celsius: must be integer` and tries again.
    ///     ScriptedTurn::output(json!({"city": "Lisbon", "celsius": "warm"})),
    ///     ScriptedTurn::output(json!({"city": "Lisbon", "celsius": 21})),
    /// ]);
    /// let agent = Agent::create(AgentConfig::new().with_model(model).with_tools(["Read"]))
    ///     .await
    ///     .unwrap();
    /// let forecast: Forecast = agent.prompt_as("Weather in Lisbon?").await.unwrap();
    /// assert_eq!((forecast.city.as_str(), forecast.celsius), ("Lisbon", 21));
    /// # });
    /// ```
    pub async fn prompt_as<T: JsonSchema + DeserializeOwned>(
        &self,
        prompt: impl Into<String>,
    ) -> Result<T, AgentError> {
        let spec = output::OutputSpec::of::<T>(self.validation_options())?;
        self.prompt_with_output(Some(prompt.into()), Some(Arc::new(spec)))
            .await?
            .output_as()
    }

    /// [`prompt_as`](Self::prompt_as), streamed: the run's events (permission questions
    /// included, for the app to answer), then [`TypedRun::output`] or, in the
    /// [`Finished`](AgentEvent::Finished) event, [`RunResult::output_as`].
    pub fn prompt_as_stream<T: JsonSchema + DeserializeOwned>(
        &self,
        prompt: impl Into<String>,
    ) -> TypedRun<T> {
        let spec = output::OutputSpec::of::<T>(self.validation_options()).map(Arc::new);
        TypedRun::new(self.start(prompt.into(), Some(spec), CancellationToken::new()))
    }

    fn validation_options(&self) -> ValidationOptions {
        ValidationOptions {
            coerce: self.inner.config.coerce_inputs,
        }
    }

    /// Starts a run in a task of its own; `output` asks for a typed answer.
    fn start(
        &self,
        prompt: String,
        output: Option<Result<Arc<output::OutputSpec>, AgentError>>,
        cancel: CancellationToken,
    ) -> AgentRun {
        let (sender, receiver) = mpsc::unbounded_channel();
        let inner = self.inner.clone();
        let prompt = Some(prompt);
        let run_cancel = cancel.clone();
        // The run's span (`invoke_agent`) is a child of the caller's.
        tokio::spawn(
            async move {
                let emit = Emit::to(move |event| {
                    let _ = sender.send(event);
                });
                let result = match output.transpose() {
                    Ok(output) => {
                        inner
                            .run_for(prompt, output.as_deref(), emit.clone(), run_cancel)
                            .await
                    }
                    Err(error) => RunResult {
                        error: Some(error),
                        ..RunResult::default()
                    },
                };
                if let Some(error) = &result.error {
                    emit(AgentEvent::Error(error.clone()));
                }
                emit(AgentEvent::Finished(Box::new(result)));
            }
            .in_current_span(),
        );
        AgentRun {
            events: receiver,
            cancel: cancel.clone(),
            _guard: cancel.drop_guard(),
        }
    }

    /// Runs to the end and returns the result. Calls that need the user's permission are
    /// refused (use [`run`](Self::run) to answer them), or with
    /// [`AgentConfig::with_deferred_approvals`] stop the run until they are answered. Fails
    /// if the run failed.
    pub async fn prompt(&self, prompt: impl Into<String>) -> Result<RunResult, AgentError> {
        self.prompt_with(Some(prompt.into())).await
    }

    /// Asks the model to answer the conversation as it stands, with no new prompt: after a
    /// [`resume`](Agent::resume) whose history ends with the user's message or tool results
    /// (a model turn the crash cut off, sealed calls), this gets the answer that never came.
    ///
    /// After a run stopped for [deferred approvals](AgentConfig::with_deferred_approvals),
    /// all answered, this finishes the stopped turn first, from the store: allowed calls run,
    /// refused ones are answered with the refusal as an error, calls that waited behind them
    /// run in order (and may stop the run again if they need approval); then the model is
    /// asked. With approvals still unanswered it fails with
    /// [`AgentError::ApprovalsPending`] and runs nothing.
    ///
    /// Fails if the last message is the model's text: there is nothing to answer.
    pub async fn continue_run(&self) -> Result<RunResult, AgentError> {
        self.prompt_with(None).await
    }

    async fn prompt_with(&self, prompt: Option<String>) -> Result<RunResult, AgentError> {
        self.prompt_with_output(prompt, None).await
    }

    async fn prompt_with_output(
        &self,
        prompt: Option<String>,
        output: Option<Arc<output::OutputSpec>>,
    ) -> Result<RunResult, AgentError> {
        // As `run(..).result()`, without the event channel: nobody reads the events, so they
        // are dropped where they are made instead of waking this task once each. The run still
        // goes on in a task of its own, cancelled (and so left consistent) if this future is
        // dropped.
        let cancel = CancellationToken::new();
        let _stop_when_dropped = cancel.clone().drop_guard();
        let inner = self.inner.clone();
        let emit = Emit::questions_to(|event| {
            if let AgentEvent::PermissionRequested(request) = event {
                let message = crate::permission::not_allowed_message(&request.question);
                request.deny(message)
            }
        });
        // The run's span (`invoke_agent`) is a child of the caller's.
        let run = tokio::spawn(
            async move { inner.run_for(prompt, output.as_deref(), emit, cancel).await }
                .in_current_span(),
        );
        let result = run.await.unwrap_or_else(|_| RunResult {
            error: Some(AgentError::Cancelled),
            ..RunResult::default()
        });
        match &result.error {
            Some(error) => Err(error.clone()),
            None => Ok(result),
        }
    }
}

/// A run in progress: a stream of [`AgentEvent`]s ending with [`AgentEvent::Finished`].
pub struct AgentRun {
    events: mpsc::UnboundedReceiver<AgentEvent>,
    cancel: CancellationToken,
    _guard: tokio_util::sync::DropGuard,
}

impl std::fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun")
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl AgentRun {
    /// Stops the run: running calls are stopped, pending ones answered "cancelled", so the
    /// conversation stays valid for the next run.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The token that cancels this run, to hand to other tasks.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Drains the events and returns the result; permission requests are refused.
    pub async fn result(mut self) -> RunResult {
        let mut last = None;
        while let Some(event) = self.events.recv().await {
            match event {
                AgentEvent::PermissionRequested(request) => {
                    let message = crate::permission::not_allowed_message(&request.question);
                    request.deny(message)
                }
                AgentEvent::Finished(result) => last = Some(*result),
                _ => {}
            }
        }
        last.unwrap_or_else(|| RunResult {
            error: Some(AgentError::Cancelled),
            ..RunResult::default()
        })
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.events.poll_recv(cx)
    }
}

/// The most base64 image data one tool result sends the model: Anthropic refuses a request
/// past 32 MB, and images past this are rarely worth their tokens.
const MAX_RESULT_IMAGE_BYTES: usize = 10 << 20;

/// Where a run's events go. When nobody reads them (`Agent::prompt`), events that only
/// inform are not built at all ([`Emit::notify`]): building one clones the call's input and
/// renders its display, which would be most of a trivial call's cost. Questions (a
/// `PermissionRequested`) are always sent: they need an answer either way.
#[derive(Clone)]
pub(crate) struct Emit {
    sink: Arc<dyn Fn(AgentEvent) + Send + Sync>,
    listening: bool,
}

impl Emit {
    /// Events for someone who reads them all.
    pub(crate) fn to(sink: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Emit {
            sink: Arc::new(sink),
            listening: true,
        }
    }

    /// Questions only: events that only inform are dropped before they are built.
    pub(crate) fn questions_to(sink: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Emit {
            sink: Arc::new(sink),
            listening: false,
        }
    }

    /// Events for `sink`, heard as this one is (a sub-agent's, forwarded to its parent's).
    pub(crate) fn forward(&self, sink: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Emit {
            sink: Arc::new(sink),
            listening: self.listening,
        }
    }

    /// Whether events that only inform are read by anyone.
    pub(crate) fn listening(&self) -> bool {
        self.listening
    }

    /// Sends the event `make` builds, if anyone listens.
    pub(crate) fn notify(&self, make: impl FnOnce() -> AgentEvent) {
        if self.listening {
            (self.sink)(make());
        }
    }
}

impl std::ops::Deref for Emit {
    type Target = dyn Fn(AgentEvent) + Send + Sync;

    fn deref(&self) -> &Self::Target {
        &*self.sink
    }
}

/// Exact names, then globs, in the order written; every tool once.
fn resolve_tools(
    source: &ToolRegistry,
    patterns: Option<&[String]>,
) -> Result<Vec<Arc<dyn Tool>>, AgentError> {
    let Some(patterns) = patterns else {
        return Ok(source.get_tools(None)?);
    };
    let names = source.names();
    let mut chosen: Vec<String> = Vec::new();
    let mut errors = Vec::new();
    for pattern in patterns {
        if pattern.contains(['*', '?']) {
            let glob = globset::Glob::new(pattern)
                .map_err(|source| ConfigError::ToolPattern {
                    pattern: pattern.clone(),
                    source,
                })?
                .compile_matcher();
            let matched: Vec<&String> = names.iter().filter(|n| glob.is_match(n)).collect();
            if matched.is_empty() {
                // MCP servers may add matching tools later; a typo is still worth a warning.
                tracing::warn!(pattern, "no tool matches this pattern yet");
            }
            for name in matched {
                if !chosen.contains(name) {
                    chosen.push(name.clone());
                }
            }
        } else if names.contains(pattern) {
            if !chosen.contains(pattern) {
                chosen.push(pattern.clone());
            }
        } else if cfg!(feature = "mcp") && pattern.starts_with("mcp__") {
            // An MCP server's tool: checked once the servers are connected.
        } else {
            errors.push(RegistryError::UnknownTool {
                name: pattern.clone(),
                suggestions: near_matches(pattern, names.iter().map(String::as_str)),
                available: names.clone(),
            });
        }
    }
    match errors.len() {
        0 => {}
        1 => return Err(errors.remove(0).into()),
        _ => return Err(RegistryError::Multiple(errors).into()),
    }
    let refs: Vec<&str> = chosen.iter().map(String::as_str).collect();
    Ok(source.get_tools(Some(&refs))?)
}

impl AgentInner {
    /// Everything [`Agent::create`] does before the session: model, tools, MCP servers.
    async fn build(config: AgentConfig) -> Result<AgentInner, AgentError> {
        let config = config.load_project_files()?;
        let model = config.resolve_model()?;
        let source = match &config.registry {
            Some(registry) => registry.clone(),
            None => Arc::new(ToolRegistry::from_inventory_with(ValidationOptions {
                coerce: config.coerce_inputs,
            })?),
        };
        let tools = resolve_tools(&source, config.tools.as_deref())?;
        #[allow(unused_mut)]
        let mut inner = AgentInner::new(model, &source, tools, config, AgentId::Main)?;
        #[cfg(feature = "mcp")]
        {
            let mcp = mcp::AgentMcp::new(&inner);
            mcp.connect_configured(&inner.config).await?;
            inner.mcp = Some(Arc::new(mcp));
        }
        Ok(inner)
    }

    /// Appends the record `make` builds to the session, with those staged before it, when
    /// there is a store; without one nothing is built (a record copies the message or result
    /// it holds).
    pub(crate) async fn record(&self, make: impl FnOnce() -> Record) -> Result<(), SessionError> {
        self.stage(make);
        self.flush().await
    }

    /// Keeps the record `make` builds for the next [`flush`](Self::flush), when there is a
    /// store. Only for records that may be lost with the process until then: a model turn
    /// before its calls start (a crash re-requests it).
    pub(crate) fn stage(&self, make: impl FnOnce() -> Record) {
        if self.store.is_some() {
            self.staged
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(make());
        }
    }

    /// Appends the staged records to the session, in one `append_all`.
    pub(crate) async fn flush(&self) -> Result<(), SessionError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let _order = self.flushing.lock().await;
        let records = std::mem::take(&mut *self.staged.lock().unwrap_or_else(|p| p.into_inner()));
        if records.is_empty() {
            return Ok(());
        }
        store.append_all(&self.session_id, &records).await
    }

    pub(crate) fn new(
        model: Arc<dyn Model>,
        source: &ToolRegistry,
        tools: Vec<Arc<dyn Tool>>,
        config: AgentConfig,
        agent_id: AgentId,
    ) -> Result<Self, AgentError> {
        if let Some(problem) = config.problems.first() {
            return Err(problem.clone().into());
        }
        if config.max_turns == 0 {
            return Err(ConfigError::NoTurns.into());
        }
        let registry = ToolRegistry::with_options(ValidationOptions {
            coerce: config.coerce_inputs,
        });
        let mut specs = Vec::with_capacity(tools.len());
        for tool in tools {
            for requirement in tool.required_state() {
                if !config.state.contains(requirement.type_id) {
                    return Err(AgentError::MissingState {
                        tool: tool.name().to_owned(),
                        type_name: requirement.type_name,
                    });
                }
            }
            specs.push(ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                input_schema: tool.input_schema().clone(),
            });
            let defined_at = source
                .defined_at(tool.name())
                .unwrap_or_else(|| "the agent config".to_owned());
            registry.register_from(tool, defined_at)?;
        }
        let working_dir = match &config.working_dir {
            Some(dir) => dir.clone(),
            None => {
                std::env::current_dir().map_err(|error| ConfigError::CurrentDir(error.into()))?
            }
        };
        let mut sandbox =
            Sandbox::new(&working_dir).map_err(|error| ConfigError::BadDirectory {
                path: working_dir.clone(),
                additional: false,
                source: error.into(),
            })?;
        for dir in &config.additional_dirs {
            sandbox = sandbox
                .allow_dir(dir)
                .map_err(|error| ConfigError::BadDirectory {
                    path: dir.clone(),
                    additional: true,
                    source: error.into(),
                })?;
        }
        let session = Arc::new(SessionValues::default());
        session.get::<ModeState>().set(config.permission_mode);
        let plan_exit_offered = specs.iter().any(|spec| spec.name == "ExitPlanMode");
        let gate = Arc::new(
            PermissionGate::new(config.permissions.clone(), config.pre_hooks.clone())
                .with_plan_exit_offered(plan_exit_offered),
        );
        let mut policy = CallPolicy::new()
            .with_timeouts(config.tool_timeout, config.max_tool_timeout)
            .with_max_result_chars(config.max_result_chars)
            .with_max_result_image_bytes(MAX_RESULT_IMAGE_BYTES)
            .with_permission_gate(gate.clone());
        for hook in &config.post_hooks {
            policy = policy.with_post_hook(hook.clone());
        }
        // Sub-agents live inside their parent's session.
        let session_start = (agent_id == AgentId::Main).then_some(SessionSource::Startup);
        let ledger = Arc::new(budget::Ledger::new(&config, model.model_id())?);
        Ok(AgentInner {
            ledger,
            sandbox: Arc::new(sandbox),
            session,
            model,
            registry: Arc::new(registry),
            specs: Arc::new(std::sync::RwLock::new(specs.into())),
            tool_chars: std::sync::Mutex::default(),
            policy,
            gate,
            state: Arc::new(config.state.clone()),
            files: Arc::new(FileStateTracker::default()),
            session_id: Arc::from(format!("session-{:016x}", fastrand::u64(..))),
            store: None,
            staged: std::sync::Mutex::default(),
            flushing: tokio::sync::Mutex::default(),
            recorder: None,
            agent_id,
            checkpoints: Arc::new(FileCheckpoints::in_memory()),
            call_message: Arc::new(AtomicUsize::new(0)),
            working_dir,
            messages: tokio::sync::Mutex::new(History::new()),
            session_start: std::sync::Mutex::new(session_start),
            config,
            #[cfg(feature = "mcp")]
            mcp: None,
            call_context: std::sync::OnceLock::new(),
        })
    }

    /// The tools offered to the model now.
    pub(crate) fn specs(&self) -> Arc<[ToolSpec]> {
        self.specs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// What the calls of one turn share in their contexts: the agent's, plus the turn's file
    /// checkpointer and sub-agent runner (made once a turn, not once a call).
    pub(crate) fn turn_context(self: &Arc<Self>, emit: &Emit) -> ToolContext {
        let shared = self.call_context.get_or_init(|| {
            ToolContext::new(self.working_dir.clone())
                .with_session_id(self.session_id.clone())
                .with_agent_id(self.agent_id.clone())
                .with_state(self.state.clone())
                .with_file_tracker(self.files.clone())
                .with_session_values(self.session.clone())
                .with_sandbox(self.sandbox.clone())
        });
        shared
            .clone()
            .with_file_checkpointer(Arc::new(CallCheckpointer {
                checkpoints: self.checkpoints.clone(),
                message: self.call_message.load(Ordering::Relaxed),
            }))
            .with_subagents(Arc::new(subagent::Subagents::new(
                self.clone(),
                emit.clone(),
            )))
    }

    /// The context of one call, from its turn's.
    pub(crate) fn tool_context(
        &self,
        turn: &ToolContext,
        call_id: &str,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> ToolContext {
        let context = turn
            .clone()
            .with_tool_call_id(call_id)
            .with_cancellation(cancel.child_token());
        // Progress is an event that only informs: no sink when nobody listens.
        if !emit.listening() {
            return context;
        }
        let progress = emit.clone();
        let id = call_id.to_owned();
        context.with_updates(move |update| {
            progress(AgentEvent::ToolProgress {
                id: id.clone(),
                update: update.kind,
            })
        })
    }
}
