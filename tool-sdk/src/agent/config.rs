//! [`AgentConfig`]: everything an agent is made of, as a builder or a TOML/JSON file, in
//! groups like the file's tables: [`model`](AgentConfig::model),
//! [`limits`](AgentConfig::limits), [`permissions`](AgentConfig::permissions),
//! [`session`](AgentConfig::session), [`context`](AgentConfig::context),
//! [`hooks`](AgentConfig::hooks) and [`mcp`](AgentConfig::mcp), each with its builder methods
//! beside its fields.

mod context;
mod file;
mod limits;
#[cfg(feature = "mcp-client")]
mod mcp;
mod model;
mod permissions;
mod session;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use context::ContextSettings;
pub use limits::Limits;
#[cfg(feature = "mcp-client")]
pub use mcp::McpSettings;
pub use model::{ModelSettings, ModelSource, ModelSpec, ProviderKind};
pub use permissions::PermissionSettings;
pub use session::{SessionLeasing, SessionSettings, StoreSource};

use super::error::{AgentError, ConfigError};
use super::hooks::Hooks;
use crate::model::Model;
use crate::session::SessionStore;
use crate::{StateMap, ToolRegistry};

/// How an agent is built. Load it from a file with [`AgentConfig::from_file`] or build it in
/// code; the two mix (load, then set what a file cannot hold: a model instance, app state,
/// hooks, a permission handler, a registry).
///
/// The settings come in groups, like a config file's tables, each a public field with its
/// builder methods beside it; [`AgentConfig`]'s method of the same name edits one in a
/// chain: `.limits(|limits| limits.with_max_turns(20))`. Each setting has one setter.
///
/// Two lists answer two different questions, and mixing them up is the classic mistake:
/// - [`tools`](Self::tools) is what the model can **see** and call at all;
/// - permission rules ([`permissions`](Self::permissions)) decide which of those calls run
///   **without asking**.
///
/// ```
/// use tool_sdk::agent::AgentConfig;
///
/// let config: AgentConfig = toml::from_str(r#"
///     system_prompt = "You are terse."
///     tools = ["Read", "Glob", "mcp__github__*"]
///     max_turns = 20
///     [model]
///     provider = "anthropic"
///     id = "claude-sonnet-4-5"
/// "#).unwrap();
/// assert_eq!(config.limits.max_turns, 20);
/// assert_eq!(config.model.system_prompt.as_deref(), Some("You are terse."));
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[serde(from = "file::ConfigFile", into = "file::ConfigFile")]
#[non_exhaustive]
pub struct AgentConfig {
    /// The agent's name, for traces (`gen_ai.agent.name`); a sub-agent is named after its
    /// kind (`general-purpose` or the name given to [`with_subagent`](Self::with_subagent)).
    pub name: Option<String>,
    /// The model and what its requests ask (`[model]`, `system_prompt`, `max_tokens`,
    /// `temperature`, `prompt_caching`, `[models."<prefix>"]` in a file).
    pub model: ModelSettings,
    /// The tools the model can see: exact names and globs (`mcp__github__*`). `None` means
    /// every tool in the registry.
    pub tools: Option<Vec<String>>,
    /// The directory tools work in (default: the current directory).
    pub working_dir: Option<PathBuf>,
    /// Whether `"5"` is coerced to `5` (etc.) where a schema asks for it (default: on).
    pub coerce_inputs: bool,
    /// How far a run may go: turns, timeouts, concurrency, sizes, budgets.
    pub limits: Limits,
    /// Permission mode, rules, more directories, and who is asked.
    pub permissions: PermissionSettings,
    /// Where the conversation is kept durably (`[session]` in a file).
    pub session: SessionSettings,
    /// How requests are kept inside the model's context window (`[context]` in a file).
    pub context: ContextSettings,
    /// Hooks on the agent's events (code only; `.claude/settings.json`'s command hooks join
    /// them with [`with_claude_settings`](Self::with_claude_settings)).
    pub hooks: Hooks,
    /// MCP servers whose tools the agent gets (`mcpServers` in JSON, `[mcp_servers.NAME]`
    /// in TOML).
    #[cfg(feature = "mcp-client")]
    pub mcp: McpSettings,
    /// Kinds of sub-agent the Task tool can start, by name (`[subagents.NAME]` in a file).
    pub subagents: BTreeMap<String, SubagentConfig>,
    /// Whether the project's instruction files are added to the system prompt: see
    /// [`with_project_memory`](Self::with_project_memory).
    pub project_memory: bool,
    /// Whether Claude Code's `.claude/settings.json` files are read: see
    /// [`with_claude_settings`](Self::with_claude_settings).
    pub claude_settings: bool,
    pub(crate) registry: Option<Arc<ToolRegistry>>,
    pub(crate) state: StateMap,
}

/// A kind of sub-agent the Task tool can start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SubagentConfig {
    /// When to use it: shown to the model in the Task tool's description.
    pub description: String,
    /// Its system prompt.
    pub system_prompt: Option<String>,
    /// Its tools (names and globs); `None` means the parent's tools minus Task.
    pub tools: Option<Vec<String>>,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            name: None,
            model: ModelSettings::default(),
            tools: None,
            working_dir: None,
            coerce_inputs: true,
            limits: Limits::default(),
            permissions: PermissionSettings::default(),
            session: SessionSettings::default(),
            context: ContextSettings::default(),
            hooks: Hooks::default(),
            #[cfg(feature = "mcp-client")]
            mcp: McpSettings::default(),
            subagents: BTreeMap::new(),
            project_memory: false,
            claude_settings: false,
            registry: None,
            state: StateMap::new(),
        }
    }
}

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("model", &self.model.source)
            .field("tools", &self.tools)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl AgentConfig {
    /// A config with the defaults: every registered tool, 50 turns, 8 tools at once.
    pub fn new() -> Self {
        Self::default()
    }

    /// Loads a `.toml` or `.json` file.
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, AgentError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError::ReadFile {
            path: path.to_owned(),
            source: error.into(),
        })?;
        let parsed = match path.extension().and_then(|e| e.to_str()) {
            Some("json") => serde_json::from_str(&text).map_err(crate::error::source),
            Some("toml") => toml::from_str(&text).map_err(crate::error::source),
            _ => return Err(ConfigError::UnknownFormat { path: path.into() }.into()),
        };
        Ok(parsed.map_err(|source| ConfigError::BadFile {
            path: path.to_owned(),
            source,
        })?)
    }

    /// Uses this model: a model instance, an `Arc<dyn Model>`, or a [`ModelSpec`] to build
    /// from the environment when the agent is created (as a file's `[model]` table).
    pub fn with_model(mut self, model: impl Into<ModelSource>) -> Self {
        self.model.source = Some(model.into());
        self
    }

    /// Edits the [model settings](ModelSettings): system prompt, `max_tokens`, temperature,
    /// thinking, effort, retries, caching, catalog.
    pub fn model(mut self, edit: impl FnOnce(ModelSettings) -> ModelSettings) -> Self {
        self.model = edit(self.model);
        self
    }

    /// Edits the [limits](Limits): turns, timeouts, concurrency, sizes, budgets.
    pub fn limits(mut self, edit: impl FnOnce(Limits) -> Limits) -> Self {
        self.limits = edit(self.limits);
        self
    }

    /// Edits the [permission settings](PermissionSettings): mode, rules, directories,
    /// handler.
    pub fn permissions(
        mut self,
        edit: impl FnOnce(PermissionSettings) -> PermissionSettings,
    ) -> Self {
        self.permissions = edit(self.permissions);
        self
    }

    /// Edits the [session settings](SessionSettings): store, lease, deferred approvals.
    pub fn session(mut self, edit: impl FnOnce(SessionSettings) -> SessionSettings) -> Self {
        self.session = edit(self.session);
        self
    }

    /// Edits the [context settings](ContextSettings): window, compaction, thresholds.
    pub fn context(mut self, edit: impl FnOnce(ContextSettings) -> ContextSettings) -> Self {
        self.context = edit(self.context);
        self
    }

    /// Edits the [hooks](Hooks): `.hooks(|hooks| hooks.with_hook(MyHook).on_stop(|stop| ...))`.
    pub fn hooks(mut self, edit: impl FnOnce(Hooks) -> Hooks) -> Self {
        self.hooks = edit(self.hooks);
        self
    }

    /// Edits the [MCP servers](McpSettings).
    #[cfg(feature = "mcp-client")]
    pub fn mcp(mut self, edit: impl FnOnce(McpSettings) -> McpSettings) -> Self {
        self.mcp = edit(self.mcp);
        self
    }

    /// Names the agent in its traces (see [`telemetry`](crate::telemetry)'s spans).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the tools the model can see (names and globs).
    pub fn with_tools<I, S>(mut self, tools: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tools = Some(tools.into_iter().map(Into::into).collect());
        self
    }

    /// Sets the working directory.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets whether `"5"` is coerced to `5` (etc.) where a schema asks for it.
    pub fn with_coerce_inputs(mut self, on: bool) -> Self {
        self.coerce_inputs = on;
        self
    }

    /// Takes tools from this registry instead of the global one.
    pub fn with_registry(mut self, registry: Arc<ToolRegistry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Adds app state for tools' `State<T>` parameters.
    pub fn with_state<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Lets the AskUserQuestion tool ask the user: `handler` gets the questions and returns
    /// the answers. Without one, AskUserQuestion tells the model no one can answer.
    pub fn with_question_handler(mut self, handler: impl crate::builtin::QuestionHandler) -> Self {
        self.state
            .insert(crate::builtin::UserQuestions::new(handler));
        self
    }

    /// Adds a kind of sub-agent for the Task tool.
    pub fn with_subagent(mut self, name: impl Into<String>, subagent: SubagentConfig) -> Self {
        self.subagents.insert(name.into(), subagent);
        self
    }

    /// Adds the project's instruction files to the system prompt when the agent is created:
    /// `AGENTS.md` and `CLAUDE.md` from the repository root (the nearest directory above the
    /// working directory holding `.git`; without one, the working directory only) down to the
    /// working directory, outermost first, each delimited and named by its path, after the
    /// [system prompt](ModelSettings::with_system_prompt). A file that cannot be read fails
    /// `Agent::create`, naming it. (`project_memory = true` in a file.)
    ///
    /// ```
    /// use tool_sdk::agent::AgentConfig;
    ///
    /// let config = AgentConfig::new().with_project_memory().with_claude_settings();
    /// assert!(config.project_memory && config.claude_settings);
    /// ```
    pub fn with_project_memory(mut self) -> Self {
        self.project_memory = true;
        self
    }

    /// Reads Claude Code's `.claude/settings.json` and `.claude/settings.local.json` in the
    /// working directory when the agent is created, so a team's existing files apply as they
    /// are: their permission rules (`permissions.allow`, `ask`, `deny`) join the agent's, and
    /// their command hooks (`hooks`) run after the hooks set in code; see
    /// [`ClaudeSettings`](super::ClaudeSettings) for what is read and what is an error.
    /// (`claude_settings = true` in a file.)
    pub fn with_claude_settings(mut self) -> Self {
        self.claude_settings = true;
        self
    }

    /// The first mistake a builder method found, for `Agent::create` to report.
    pub(crate) fn problem(&self) -> Option<ConfigError> {
        self.permissions
            .problems
            .first()
            .cloned()
            .or_else(|| self.session.problem())
            .or_else(|| self.context.problem())
    }

    /// What a request to a model with catalog entry `info` asks of the cache.
    pub(crate) fn prompt_cache(
        &self,
        info: Option<&crate::model::ModelInfo>,
    ) -> Option<crate::model::PromptCache> {
        self.model.prompt_cache(info)
    }

    /// The catalog with the config's own entries.
    pub(crate) fn catalog(&self) -> crate::model::Catalog {
        self.model.full_catalog()
    }

    /// The session store, opened if need be; `None` without one.
    pub(crate) fn resolve_session_store(
        &self,
    ) -> Result<Option<Arc<dyn SessionStore>>, AgentError> {
        self.session.resolve_store()
    }

    /// The model, built from its spec if need be.
    pub(crate) fn resolve_model(&self) -> Result<Arc<dyn Model>, AgentError> {
        self.model.resolve()
    }

    /// Reads the project files the config asks for ([`with_project_memory`],
    /// [`with_claude_settings`]) into the system prompt, the rules and the hooks.
    ///
    /// [`with_project_memory`]: Self::with_project_memory
    /// [`with_claude_settings`]: Self::with_claude_settings
    pub(crate) fn load_project_files(mut self) -> Result<Self, AgentError> {
        if !self.project_memory && !self.claude_settings {
            return Ok(self);
        }
        let dir = match &self.working_dir {
            Some(dir) => dir.clone(),
            None => {
                std::env::current_dir().map_err(|error| ConfigError::CurrentDir(error.into()))?
            }
        };
        if self.project_memory
            && let Some(memory) = super::project::ProjectMemory::load(&dir)?.to_prompt()
        {
            self.model.system_prompt = Some(match self.model.system_prompt.take() {
                Some(prompt) => format!("{prompt}\n\n{memory}"),
                None => memory,
            });
        }
        if self.claude_settings {
            let settings = super::project::ClaudeSettings::load(&dir)?;
            for warning in &settings.warnings {
                tracing::warn!("{warning}");
            }
            if !settings.hooks.is_empty() {
                self.hooks = self.hooks.with_hook(settings.hooks);
            }
            let rules = settings.permissions;
            for (mine, theirs) in [
                (&mut self.permissions.rules.allow, rules.allow),
                (&mut self.permissions.rules.ask, rules.ask),
                (&mut self.permissions.rules.deny, rules.deny),
            ] {
                for rule in theirs {
                    if !mine.contains(&rule) {
                        mine.push(rule);
                    }
                }
            }
        }
        // Read once: a config used again (a resume) does not add them twice.
        self.project_memory = false;
        self.claude_settings = false;
        Ok(self)
    }
}
