//! [`AgentInner`]: an agent's parts, assembled. Each part owns its state: the recorder (the
//! session's records), the context manager (what stands in for what in the model's view),
//! the ledger (usage, cost, budgets), the hooks (in the config), the MCP servers; the rest
//! is what every tool call shares. The driver (`run.rs`, `executor.rs`, `early.rs`) performs
//! the effects the decisions (`step.rs`) ask for, through these parts.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use super::budget::Ledger;
use super::config::AgentConfig;
use super::context::ContextManager;
use super::error::{AgentError, ConfigError};
use super::hooks::{SessionEnd, SessionEndReason, SessionSource};
#[cfg(feature = "mcp-client")]
use super::mcp::AgentMcp;
use super::recorder::Recorder;
use crate::model::{History, Model, ToolSpec};
use crate::permission::{ModeState, PermissionGate, Sandbox};
use crate::pipeline::CallPolicy;
use crate::registry::near_matches;
use crate::session::{FileCheckpoints, SessionStore};
use crate::validate::ValidationOptions;
use crate::{
    AgentId, FileStateTracker, RegistryError, SessionValues, StateMap, Tool, ToolContext,
    ToolRegistry,
};

/// An agent's parts and what its calls share; an [`Agent`](super::Agent) is an `Arc` of it.
pub(crate) struct AgentInner {
    pub(crate) model: Arc<dyn Model>,
    pub(crate) registry: Arc<ToolRegistry>,
    /// The tools offered to the model; MCP servers change it at run time, each turn takes a
    /// snapshot.
    pub(crate) specs: Arc<std::sync::RwLock<Arc<[ToolSpec]>>>,
    pub(crate) config: AgentConfig,
    /// The permission gate and limits every call of this agent runs with.
    pub(crate) policy: CallPolicy,
    pub(crate) gate: Arc<PermissionGate>,
    pub(crate) state: Arc<StateMap>,
    pub(crate) files: Arc<FileStateTracker>,
    pub(crate) session: Arc<SessionValues>,
    pub(crate) sandbox: Arc<Sandbox>,
    /// The one writer of the session's records: its store, staged records, lease and
    /// journals.
    pub(crate) recorder: Recorder,
    /// What stands in for what in the model's view of the conversation.
    pub(crate) context: ContextManager,
    pub(crate) agent_id: AgentId,
    /// The content of files before the tools changed them, for `Agent::rewind_files`;
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
    pub(crate) ledger: Arc<Ledger>,
    /// The agent's MCP servers (none for sub-agents, which use a snapshot of the tools).
    #[cfg(feature = "mcp-client")]
    pub(crate) mcp: Option<Arc<AgentMcp>>,
    /// What every call's context shares, made on the first call: each call then gets a copy
    /// (reference counts, no allocation) with its own parts set.
    pub(crate) call_context: std::sync::OnceLock<ToolContext>,
}

/// The most base64 image data one tool result sends the model: Anthropic refuses a request
/// past 32 MB, and images past this are rarely worth their tokens.
const MAX_RESULT_IMAGE_BYTES: usize = 10 << 20;

/// Exact names, then globs, in the order written; every tool once.
pub(crate) fn resolve_tools(
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
        } else if cfg!(feature = "mcp-client") && pattern.starts_with("mcp__") {
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
    /// Everything [`Agent::create`](super::Agent::create) does before the session: model, tools, MCP servers.
    pub(crate) async fn build(config: AgentConfig) -> Result<AgentInner, AgentError> {
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
        #[cfg(feature = "mcp-client")]
        {
            let mcp = AgentMcp::new(
                inner.registry.clone(),
                inner.specs.clone(),
                inner.config.tools.as_deref(),
                inner.working_dir.clone(),
                inner.config.mcp.oauth.clone(),
            );
            mcp.connect_configured(&inner.config).await?;
            inner.mcp = Some(Arc::new(mcp));
        }
        Ok(inner)
    }

    pub(crate) fn new(
        model: Arc<dyn Model>,
        source: &ToolRegistry,
        tools: Vec<Arc<dyn Tool>>,
        config: AgentConfig,
        agent_id: AgentId,
    ) -> Result<Self, AgentError> {
        if let Some(problem) = config.problem() {
            return Err(problem.into());
        }
        if config.limits.max_turns == 0 {
            return Err(ConfigError::NoTurns.into());
        }
        let (registry, specs) = offer(source, tools, &config)?;
        // The limits are Anthropic's: other providers take other budgets (or none).
        let anthropic = model.provider_name() == "anthropic";
        if anthropic
            && let Some(problem) =
                (config.model).thinking_problem(model.model_id(), !specs.is_empty())
        {
            return Err(problem.into());
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
        for dir in &config.permissions.additional_dirs {
            sandbox = sandbox
                .allow_dir(dir)
                .map_err(|error| ConfigError::BadDirectory {
                    path: dir.clone(),
                    additional: true,
                    source: error.into(),
                })?;
        }
        let session = Arc::new(SessionValues::default());
        session.get::<ModeState>().set(config.permissions.mode);
        let plan_exit_offered = specs.iter().any(|spec| spec.name == "ExitPlanMode");
        let gate = Arc::new(
            PermissionGate::new(
                config.permissions.rules.clone(),
                config.hooks.pre_tool_use(),
            )
            .with_plan_exit_offered(plan_exit_offered),
        );
        let mut policy = CallPolicy::new()
            .with_timeouts(config.limits.tool_timeout, config.limits.max_tool_timeout)
            .with_max_result_chars(config.limits.max_result_chars)
            .with_max_result_image_bytes(MAX_RESULT_IMAGE_BYTES)
            .with_permission_gate(gate.clone());
        for hook in config.hooks.post_tool_use() {
            policy = policy.with_post_hook(hook);
        }
        // Sub-agents live inside their parent's session.
        let session_start = (agent_id == AgentId::Main).then_some(SessionSource::Startup);
        let fallbacks = config.model.fallback_ids();
        let ledger = Arc::new(Ledger::new(&config, model.model_id(), &fallbacks)?);
        Ok(AgentInner {
            ledger,
            sandbox: Arc::new(sandbox),
            session,
            model,
            registry: Arc::new(registry),
            specs: Arc::new(std::sync::RwLock::new(specs.into())),
            policy,
            gate,
            state: Arc::new(config.state.clone()),
            files: Arc::new(FileStateTracker::default()),
            recorder: Recorder::in_memory(Arc::from(format!("session-{:016x}", fastrand::u64(..)))),
            context: ContextManager::default(),
            agent_id,
            checkpoints: Arc::new(FileCheckpoints::in_memory()),
            call_message: Arc::new(AtomicUsize::new(0)),
            working_dir,
            messages: tokio::sync::Mutex::new(History::new()),
            session_start: std::sync::Mutex::new(session_start),
            config,
            #[cfg(feature = "mcp-client")]
            mcp: None,
            call_context: std::sync::OnceLock::new(),
        })
    }

    /// These parts for one step of the stored session `session_id` taken elsewhere (a durable
    /// driver's activity): the same model, tools, config and policy, with a context view of
    /// its own and a recorder that writes to `store` (none: nothing is stored). It starts no
    /// session: dropped, it tells the session hooks nothing.
    pub(crate) fn for_session(
        &self,
        session_id: &str,
        store: Option<Arc<dyn SessionStore>>,
    ) -> Result<AgentInner, AgentError> {
        let fallbacks = self.config.model.fallback_ids();
        let ledger = Ledger::new(&self.config, self.model.model_id(), &fallbacks)?;
        Ok(AgentInner {
            model: self.model.clone(),
            registry: self.registry.clone(),
            specs: self.specs.clone(),
            config: self.config.clone(),
            policy: self.policy.clone(),
            gate: self.gate.clone(),
            state: self.state.clone(),
            files: Arc::new(FileStateTracker::default()),
            session: self.session.clone(),
            sandbox: self.sandbox.clone(),
            recorder: match store {
                Some(store) => Recorder::stored(Arc::from(session_id), store, None),
                None => Recorder::in_memory(Arc::from(session_id)),
            },
            context: ContextManager::default(),
            agent_id: AgentId::Main,
            checkpoints: Arc::new(FileCheckpoints::in_memory()),
            call_message: Arc::new(AtomicUsize::new(0)),
            working_dir: self.working_dir.clone(),
            messages: tokio::sync::Mutex::new(History::new()),
            // As if started already: its drop must not end a session it never began.
            session_start: std::sync::Mutex::new(Some(SessionSource::Startup)),
            ledger: Arc::new(ledger),
            #[cfg(feature = "mcp-client")]
            mcp: None,
            call_context: std::sync::OnceLock::new(),
        })
    }

    /// The tools offered to the model now.
    pub(crate) fn specs(&self) -> Arc<[ToolSpec]> {
        self.specs.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The agent's own registry of `tools` (taken from `source`) and their specs as the model is
/// offered them; an error when a tool needs app state the config lacks.
fn offer(
    source: &ToolRegistry,
    tools: Vec<Arc<dyn Tool>>,
    config: &AgentConfig,
) -> Result<(ToolRegistry, Vec<ToolSpec>), AgentError> {
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
    Ok((registry, specs))
}

/// A session started and not closed ends when the agent goes: its hooks see
/// [`SessionEndReason::Dropped`], on the runtime the agent was dropped in (without one there is
/// nothing to run them on).
impl Drop for AgentInner {
    fn drop(&mut self) {
        let pending = self
            .session_start
            .get_mut()
            .unwrap_or_else(|p| p.into_inner());
        if self.agent_id != AgentId::Main || pending.is_some() || self.config.hooks.is_empty() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let hooks = self.config.hooks.clone();
        let session_id: Option<String> = self.recorder.stored_id().map(str::to_owned);
        runtime.spawn(async move {
            let end = SessionEnd {
                session_id: session_id.as_deref(),
                reason: SessionEndReason::Dropped,
            };
            hooks.session_end(end).await;
        });
    }
}
