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

use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::ToolRegistry;
use crate::model::{Message, ModelInfo, Usage};
use crate::permission::{ModeState, PermissionMode, Rule};
use crate::session::NewSession;
use crate::validate::ValidationOptions;

use events::Emit;
use inner::AgentInner;
use recorder::Recorder;

// The layers, each importing only those below it: this facade (`mod.rs`, `stored.rs`, `effects.rs`); the
// driver, which performs effects (`run.rs`, `turn.rs`, `executor.rs`, `early.rs`,
// `compact.rs`, `output.rs`, `subagent.rs`, `spans.rs`); `inner.rs`, the parts assembled;
// the parts, each owning its state (`recorder.rs` with `hold.rs`, `context.rs`, `budget.rs`,
// `hooks.rs`, `mcp.rs`); the decisions (`step.rs`: pure, no IO); and what all of them speak
// (`error.rs`, `events.rs`, `config.rs`, `project.rs`).
mod asker;
mod budget;
mod command_hooks;
mod compact;
mod config;
mod context;
mod early;
mod effects;
mod error;
mod events;
mod executor;
mod hold;
mod hooks;
mod inner;
#[cfg(test)]
mod layers_tests;
#[cfg(feature = "mcp-client")]
mod mcp;
mod model_table;
mod output;
mod project;
mod recorder;
mod run;
mod spans;
mod step;
mod stored;
mod subagent;
mod turn;

/// The loop's decisions that another driver makes as the agent does (a durable engine's
/// workflow, such as `tool-sdk-temporal`'s): pure functions of counts and flags, no IO. The
/// rest of the agent's decisions stay internal until another driver needs them.
pub mod decisions {
    pub use super::step::{
        AfterStop, AfterTurn, after_stop, after_turn, asks_stop_hooks, before_request, next_batch,
        not_run_message,
    };
}

pub use command_hooks::CommandHooks;
#[cfg(feature = "mcp-client")]
pub use config::McpSettings;
pub use config::{
    AgentConfig, ContextSettings, Limits, ModelSettings, ModelSource, ModelSpec,
    PermissionSettings, ProviderKind, SessionLeasing, SessionSettings, StoreSource, SubagentConfig,
};
pub use context::{CompactDecision, CompactRequest, IMAGE_TOKENS};
pub use effects::AgentEffects;
pub use error::{AgentError, ConfigError, StoreNeed};
pub use events::{AgentEvent, AgentRun, ElicitationRequest, PermissionRequest, RunResult};
pub use hooks::{
    Hook, Hooks, Notification, NotificationKind, PromptCheck, SessionEnd, SessionEndReason,
    SessionSource, SessionStart, StopCheck, StopContext, SubagentStart, ToolCall, ToolFailure,
    ToolResult,
};
pub use output::{OutputNext, OutputSchema, OutputVerdict, TypedRun};
pub use project::{ClaudeSettings, MEMORY_FILES, MemoryFile, ProjectMemory};

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
            inner.recorder = Recorder::stored(Arc::from(session.id), store, hold);
            inner.checkpoints = Arc::new(inner.recorder.checkpoints(&[]));
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
    /// list of its problems, up to [`Limits::max_output_retries`] times; then the run
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
        AgentRun::new(receiver, cancel)
    }

    /// Runs to the end and returns the result. Calls that need the user's permission are
    /// refused (use [`run`](Self::run) to answer them), or with
    /// [`SessionSettings::with_deferred_approvals`] stop the run until they are answered. Fails
    /// if the run failed.
    pub async fn prompt(&self, prompt: impl Into<String>) -> Result<RunResult, AgentError> {
        self.prompt_with(Some(prompt.into())).await
    }

    /// Asks the model to answer the conversation as it stands, with no new prompt: after a
    /// [`resume`](Agent::resume) whose history ends with the user's message or tool results
    /// (a model turn the crash cut off, sealed calls), this gets the answer that never came.
    ///
    /// After a run stopped for [deferred approvals](SessionSettings::with_deferred_approvals),
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

impl Agent {
    /// Tokens used by the whole conversation: every run of this agent, its sub-agents', and
    /// with a session store, the runs before a [`resume`](Agent::resume).
    pub fn total_usage(&self) -> Usage {
        self.inner.ledger.totals()
    }

    /// What [`total_usage`](Self::total_usage) cost, in USD; `None` when the model's price is
    /// unknown (see [`ModelSettings::with_model_info`]).
    pub fn total_cost_usd(&self) -> Option<f64> {
        self.inner.ledger.cost_usd(&self.total_usage())
    }

    /// The id of the agent's model, as its provider knows it: what the catalog looks up.
    pub fn model_id(&self) -> &str {
        self.inner.ledger.model_id()
    }

    /// The agent's model as the catalog knows it (window and prices), if it does.
    pub fn model_info(&self) -> Option<ModelInfo> {
        self.inner.ledger.info().copied()
    }
}

#[cfg(feature = "mcp-client")]
impl Agent {
    /// Connects (or reconnects, with a new config) the MCP server `name` and offers its
    /// tools to the model from the next turn on; returns their names. On failure the old
    /// server, if any, stays.
    pub async fn add_or_update_mcp_server(
        &self,
        name: &str,
        config: crate::mcp::McpServerConfig,
        scope: crate::mcp::McpScope,
    ) -> Result<Vec<String>, AgentError> {
        self.mcp()?.add(name, config, scope).await
    }

    /// Disconnects the MCP server `name` and withdraws its tools; returns whether it was
    /// connected. [`McpScope::Project`](crate::mcp::McpScope::Project) also removes it from
    /// `.mcp.json`.
    pub async fn remove_mcp_server(
        &self,
        name: &str,
        scope: crate::mcp::McpScope,
    ) -> Result<bool, AgentError> {
        self.mcp()?.remove(name, scope).await
    }

    /// The names of the connected MCP servers.
    pub async fn mcp_servers(&self) -> Vec<String> {
        match &self.inner.mcp {
            Some(mcp) => mcp.servers().await,
            None => Vec::new(),
        }
    }

    fn mcp(&self) -> Result<&mcp::AgentMcp, AgentError> {
        Ok(self.inner.mcp.as_deref().ok_or(ConfigError::NoMcp)?)
    }
}
