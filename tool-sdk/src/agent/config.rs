//! [`AgentConfig`]: everything an agent is made of, as a builder or a TOML/JSON file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::context::ContextSettings;
use super::error::{AgentError, ConfigError};
use crate::model::{
    Model, ModelError, RetryPolicy, anthropic::AnthropicModel, openai::OpenAiModel,
};
use crate::permission::{
    PermissionHandler, PermissionMode, PermissionRules, PostToolUse, PreToolUse, Rule,
};
use crate::session::{SessionStore, open_store};
use crate::{StateMap, ToolRegistry};

/// How an agent is built. Load it from a file with [`AgentConfig::from_file`] or build it in
/// code; the two mix (load, then set what a file cannot hold: a model instance, app state, a
/// permission policy, a registry).
///
/// Two lists answer two different questions, and mixing them up is the classic mistake:
/// - [`tools`](Self::tools) is what the model can **see** and call at all;
/// - permission rules ([`crate::permission`]) decide which of those calls run **without
///   asking**.
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
/// assert_eq!(config.max_turns, 20);
/// ```
#[derive(Clone, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// The agent's name, for traces (`gen_ai.agent.name`); a sub-agent is named after its
    /// kind (`general-purpose` or the name given to [`with_subagent`](Self::with_subagent)).
    pub name: Option<String>,
    /// Which model to use, when not given as an instance with [`with_model`](Self::with_model).
    pub model: Option<ModelSpec>,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The tools the model can see: exact names and globs (`mcp__github__*`). `None` means
    /// every tool in the registry.
    pub tools: Option<Vec<String>>,
    /// The directory tools work in (default: the current directory).
    pub working_dir: Option<PathBuf>,
    /// More directories tools may touch besides the working directory.
    pub additional_dirs: Vec<PathBuf>,
    /// The most model turns in one run.
    pub max_turns: u32,
    /// The most tokens per model turn.
    pub max_tokens: u32,
    /// Sampling temperature.
    pub temperature: Option<f32>,
    /// Timeout of a call whose tool sets none (`tool_timeout_secs` in a file, in seconds).
    #[serde(rename = "tool_timeout_secs", with = "seconds")]
    pub tool_timeout: Duration,
    /// The longest any call may run, whatever the tool says (`max_tool_timeout_secs` in a
    /// file, in seconds).
    #[serde(rename = "max_tool_timeout_secs", with = "seconds")]
    pub max_tool_timeout: Duration,
    /// How many read-only calls may run at once.
    pub max_concurrent_tools: usize,
    /// Tool results longer than this many characters keep their head and tail only.
    pub max_result_chars: usize,
    /// Whether `"5"` is coerced to `5` (etc.) where a schema asks for it.
    pub coerce_inputs: bool,
    /// How many times a typed answer ([`Agent::prompt_as`](super::Agent::prompt_as)) that
    /// does not match its type is sent back to the model to try again before the run fails
    /// with [`AgentError::OutputInvalid`](super::AgentError::OutputInvalid).
    pub max_output_retries: u32,
    /// How much runs without asking; `plan` lets only read-only tools run.
    pub permission_mode: PermissionMode,
    /// Allow, ask and deny rules (`[permissions]` in a file: `allow = ["Bash(git status:*)"]`).
    pub permissions: PermissionRules,
    /// Whether the project's instruction files, `AGENTS.md` and `CLAUDE.md` from the
    /// repository root down to the working directory, are added to the system prompt (see
    /// [`ProjectMemory`](super::ProjectMemory)).
    pub project_memory: bool,
    /// Whether the permission rules of Claude Code's `.claude/settings.json` and
    /// `.claude/settings.local.json` in the working directory are added to
    /// [`permissions`](Self::permissions) (see [`ClaudeSettings`](super::ClaudeSettings)).
    pub claude_settings: bool,
    /// Whether the provider is asked to cache the prompt's prefix (on by default;
    /// `prompt_caching = false` in a file): a long run re-sends its whole conversation every
    /// turn, and a cached prefix costs a tenth of the input price on Anthropic. Sub-agents
    /// inherit it. See [`with_prompt_caching`](Self::with_prompt_caching).
    pub prompt_caching: bool,
    /// Kinds of sub-agent the Task tool can start, by name.
    pub subagents: BTreeMap<String, SubagentConfig>,
    /// MCP servers whose tools the agent gets, by name (`mcpServers` in JSON, the shape of
    /// Claude Desktop and Claude Code; `[mcp_servers.NAME]` in TOML).
    #[cfg(feature = "mcp")]
    #[serde(
        rename = "mcpServers",
        alias = "mcp_servers",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub mcp_servers: BTreeMap<String, crate::mcp::McpServerConfig>,
    /// Where the conversation is kept durably (`[session] store = "sqlite:PATH"` in a file).
    #[serde(skip_serializing_if = "SessionSettings::is_empty")]
    pub session: SessionSettings,
    /// How requests are kept inside the model's context window (`[context]` in a file; see
    /// [`with_compaction`](Self::with_compaction)).
    #[serde(skip_serializing_if = "ContextSettings::is_default")]
    pub context: ContextSettings,
    /// Models whose window and prices the agent knows beyond (or instead of) the built-in
    /// [`Catalog`](crate::model::Catalog), by id prefix (`[models."<prefix>"]` in a file, with
    /// `context_window` and `input_per_million`, `output_per_million`, optional
    /// `cache_read_per_million` and `cache_write_per_million`): see
    /// [`with_model_info`](Self::with_model_info).
    #[serde(
        with = "super::model_table",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub models: BTreeMap<String, crate::model::ModelInfo>,
    /// The most a run may cost, in USD: see [`with_max_budget_usd`](Self::with_max_budget_usd).
    pub max_budget_usd: Option<f64>,
    /// The most tokens a run may use: see [`with_max_run_tokens`](Self::with_max_run_tokens).
    pub max_run_tokens: Option<u64>,
    /// Retries of failed model requests.
    #[serde(skip)]
    pub retry: Option<RetryPolicy>,
    #[serde(skip)]
    pub(crate) catalog: Option<crate::model::Catalog>,
    #[serde(skip)]
    pub(crate) model_instance: Option<Arc<dyn Model>>,
    #[serde(skip)]
    pub(crate) registry: Option<Arc<ToolRegistry>>,
    #[serde(skip)]
    pub(crate) state: StateMap,
    #[serde(skip)]
    pub(crate) pre_hooks: Vec<Arc<dyn PreToolUse>>,
    #[serde(skip)]
    pub(crate) post_hooks: Vec<Arc<dyn PostToolUse>>,
    #[serde(skip)]
    pub(crate) run_hooks: super::hooks::RunHooks,
    #[serde(skip)]
    pub(crate) session_store: Option<Arc<dyn SessionStore>>,
    #[serde(skip)]
    pub(crate) permission_handler: Option<Arc<dyn PermissionHandler>>,
    /// Mistakes found by builder methods, reported by `Agent::create`.
    #[serde(skip)]
    pub(crate) problems: Vec<ConfigError>,
}

/// The `[session]` table of a config file.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SessionSettings {
    /// The store: `sqlite:PATH` (a relative path is taken from the current directory). `None`
    /// keeps the conversation in memory only. A store set with
    /// [`AgentConfig::with_session_store`] takes precedence.
    pub store: Option<String>,
    /// Runs a session in one process at a time: the agent takes the session's lease and
    /// renews it while it lives (`lease_secs` in a file: absent for the default, seconds for
    /// a ttl of one's own, `0` for none). See [`SessionLeasing`].
    #[serde(
        rename = "lease_secs",
        with = "leasing_seconds",
        skip_serializing_if = "SessionLeasing::is_auto"
    )]
    pub lease: SessionLeasing,
    /// Permission questions wait in the store for an answer instead of being asked
    /// (`defer_approvals` in a file): see [`AgentConfig::with_deferred_approvals`].
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub defer_approvals: bool,
}

impl SessionSettings {
    fn is_empty(&self) -> bool {
        self.store.is_none() && self.lease.is_auto() && !self.defer_approvals
    }
}

/// Whether an agent with a session store takes its session's lease
/// ([`SessionLease`](crate::session::SessionLease)), so that two processes never run one
/// session at once: the second is refused with
/// [`SessionError::Busy`](crate::session::SessionError::Busy), which names the holder.
///
/// The lease is renewed every third of its ttl while the agent lives and released when it is
/// dropped. A holder that died on this host (its process is gone) is taken over at once; one
/// on another host, `ttl` after its last renewal. A holder that stalled past its ttl and
/// found its session taken over cannot store another record (every append checks the lease
/// in its own transaction), so its run stops before its next tool call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionLeasing {
    /// A lease of [`SessionLeasing::DEFAULT_TTL`] when the store has leases (both of this
    /// crate's do); with a store that has none, the agent runs without one.
    #[default]
    Auto,
    /// A lease of this ttl; a store without leases is an error.
    Ttl(Duration),
    /// No lease: the app keeps processes apart itself.
    Off,
}

impl SessionLeasing {
    /// The ttl of [`SessionLeasing::Auto`]'s lease: long enough for a stalled database or a
    /// busy machine, short enough that a crash on another host holds the session up briefly.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(30);

    fn is_auto(&self) -> bool {
        *self == SessionLeasing::Auto
    }
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

/// A model named in a config file.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Which API.
    pub provider: ProviderKind,
    /// The model id, such as `claude-sonnet-4-5` or `gpt-4.1`.
    pub id: String,
    /// Another endpoint, e.g. `http://localhost:11434/v1` for Ollama.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default: the provider's usual one,
    /// `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The API key itself. Prefer `api_key_env`: config files get committed.
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSpec")
            .field("provider", &self.provider)
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// The APIs a [`ModelSpec`] can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions, or any compatible server.
    OpenAi,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            name: None,
            model: None,
            system_prompt: None,
            tools: None,
            working_dir: None,
            additional_dirs: Vec::new(),
            max_turns: 50,
            max_tokens: 8192,
            temperature: None,
            tool_timeout: Duration::from_secs(120),
            max_tool_timeout: Duration::from_secs(600),
            max_concurrent_tools: 8,
            max_result_chars: 50_000,
            coerce_inputs: true,
            max_output_retries: 2,
            permission_mode: PermissionMode::Default,
            permissions: PermissionRules::default(),
            project_memory: false,
            claude_settings: false,
            prompt_caching: true,
            subagents: BTreeMap::new(),
            #[cfg(feature = "mcp")]
            mcp_servers: BTreeMap::new(),
            session: SessionSettings::default(),
            context: ContextSettings::default(),
            models: BTreeMap::new(),
            max_budget_usd: None,
            max_run_tokens: None,
            retry: None,
            catalog: None,
            model_instance: None,
            registry: None,
            state: StateMap::new(),
            pre_hooks: Vec::new(),
            post_hooks: Vec::new(),
            run_hooks: Default::default(),
            session_store: None,
            permission_handler: None,
            problems: Vec::new(),
        }
    }
}

impl std::fmt::Debug for AgentConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentConfig")
            .field("model", &self.model)
            .field(
                "model_instance",
                &self
                    .model_instance
                    .as_ref()
                    .map(|m| m.model_id().to_owned()),
            )
            .field("tools", &self.tools)
            .field("max_turns", &self.max_turns)
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

    /// Names the agent in its traces (see [`telemetry`](crate::telemetry)'s spans).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Uses this model instance (takes precedence over [`model`](Self::model)).
    pub fn with_model(mut self, model: impl Model) -> Self {
        self.model_instance = Some(Arc::new(model));
        self
    }

    /// Uses this shared model instance.
    pub fn with_model_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.model_instance = Some(model);
        self
    }

    /// Names the model to build from the environment.
    pub fn with_model_spec(mut self, spec: ModelSpec) -> Self {
        self.model = Some(spec);
        self
    }

    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
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

    /// Lets calls matching `rule` run without asking, e.g. `Bash(git status:*)`.
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
            Ok(rule) => list(&mut self.permissions).push(rule),
            Err(error) => self.problems.push(error.into()),
        }
        self
    }

    /// Adds the project's instruction files to the system prompt when the agent is created:
    /// `AGENTS.md` and `CLAUDE.md` from the repository root (the nearest directory above the
    /// working directory holding `.git`; without one, the working directory only) down to the
    /// working directory, outermost first, each delimited and named by its path, after the
    /// [system prompt](Self::with_system_prompt). A file that cannot be read fails
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

    /// Adds the permission rules of Claude Code's `.claude/settings.json` and
    /// `.claude/settings.local.json` in the working directory (`permissions.allow`, `ask`,
    /// `deny`) when the agent is created, so a team's existing files apply as they are; see
    /// [`ClaudeSettings`](super::ClaudeSettings) for what is read and what is an error.
    /// (`claude_settings = true` in a file.)
    pub fn with_claude_settings(mut self) -> Self {
        self.claude_settings = true;
        self
    }

    /// Reads the project files the config asks for ([`with_project_memory`],
    /// [`with_claude_settings`]) into the system prompt and the rules.
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
            self.system_prompt = Some(match self.system_prompt.take() {
                Some(prompt) => format!("{prompt}\n\n{memory}"),
                None => memory,
            });
        }
        if self.claude_settings {
            let settings = super::project::ClaudeSettings::load(&dir)?;
            for warning in &settings.warnings {
                tracing::warn!("{warning}");
            }
            let rules = settings.permissions;
            for (mine, theirs) in [
                (&mut self.permissions.allow, rules.allow),
                (&mut self.permissions.ask, rules.ask),
                (&mut self.permissions.deny, rules.deny),
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

    /// Adds a hook that sees each prompt before it is sent and may add context to it or
    /// block it (hooks run in the order added; see [`UserPromptSubmit`](super::UserPromptSubmit)).
    pub fn with_user_prompt_submit(
        mut self,
        hook: impl super::hooks::UserPromptSubmit + 'static,
    ) -> Self {
        self.run_hooks.prompt.push(Arc::new(hook));
        self
    }

    /// Adds a hook that sees the model stop and may send the run on (at most
    /// [`with_max_stop_continuations`](Self::with_max_stop_continuations) times a run).
    pub fn with_stop_hook(mut self, hook: impl super::hooks::StopHook + 'static) -> Self {
        self.run_hooks.stop.push(Arc::new(hook));
        self
    }

    /// Adds a hook that sees each sub-agent (a Task call's) stop and may send it on.
    pub fn with_subagent_stop(mut self, hook: impl super::hooks::StopHook + 'static) -> Self {
        self.run_hooks.subagent_stop.push(Arc::new(hook));
        self
    }

    /// How many times a run's stop hooks may send it on before it ends anyway (3 by
    /// default): a hook that always says "go on" cannot keep a run alive forever.
    pub fn with_max_stop_continuations(mut self, continuations: u32) -> Self {
        self.run_hooks.max_stop_continuations = continuations;
        self
    }

    /// Adds a hook that sees the session start (the first run, new or resumed) and end
    /// ([`Agent::close`](super::Agent::close)).
    pub fn with_session_hook(mut self, hook: impl super::hooks::SessionHook + 'static) -> Self {
        self.run_hooks.session.push(Arc::new(hook));
        self
    }

    /// Adds a `pre_tool_use` hook (they run in the order added).
    pub fn with_pre_tool_use(mut self, hook: impl PreToolUse + 'static) -> Self {
        self.pre_hooks.push(Arc::new(hook));
        self
    }

    /// Adds a `post_tool_use` hook.
    pub fn with_post_tool_use(mut self, hook: impl PostToolUse + 'static) -> Self {
        self.post_hooks.push(Arc::new(hook));
        self
    }

    /// Asks the user through `handler` when a call needs permission. Without one, streaming
    /// apps get `PermissionRequested` events, and `Agent::prompt` refuses such calls with a
    /// message saying which rule would allow them.
    pub fn with_permission_handler(mut self, handler: impl PermissionHandler + 'static) -> Self {
        self.permission_handler = Some(Arc::new(handler));
        self
    }

    /// Sets the permission mode.
    pub fn with_permission_mode(mut self, mode: PermissionMode) -> Self {
        self.permission_mode = mode;
        self
    }

    /// Lets the AskUserQuestion tool ask the user: `handler` gets the questions and returns
    /// the answers. Without one, AskUserQuestion tells the model no one can answer.
    pub fn with_question_handler(mut self, handler: impl crate::builtin::QuestionHandler) -> Self {
        self.state
            .insert(crate::builtin::UserQuestions::new(handler));
        self
    }

    /// Sets the working directory.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = Some(dir.into());
        self
    }

    /// Sets the most model turns per run.
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns;
        self
    }

    /// Sets how many read-only calls may run at once.
    pub fn with_max_concurrent_tools(mut self, n: usize) -> Self {
        self.max_concurrent_tools = n;
        self
    }

    /// Sets the default and the maximum tool timeout.
    pub fn with_tool_timeouts(mut self, default: Duration, max: Duration) -> Self {
        self.tool_timeout = default;
        self.max_tool_timeout = max;
        self
    }

    /// Sets the result size cap, in characters.
    pub fn with_max_result_chars(mut self, chars: usize) -> Self {
        self.max_result_chars = chars;
        self
    }

    /// Sets how many times a typed answer that does not match its type is sent back to the
    /// model (default 2; 0 fails at the first wrong answer).
    pub fn with_max_output_retries(mut self, retries: u32) -> Self {
        self.max_output_retries = retries;
        self
    }

    /// Sets how failed model requests are retried.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Adds a kind of sub-agent for the Task tool.
    pub fn with_subagent(mut self, name: impl Into<String>, subagent: SubagentConfig) -> Self {
        self.subagents.insert(name.into(), subagent);
        self
    }

    /// Adds (or replaces) the MCP server `name`; its tools join the agent as
    /// `mcp__<name>__<tool>`.
    #[cfg(feature = "mcp")]
    pub fn with_mcp_server(
        mut self,
        name: impl Into<String>,
        server: crate::mcp::McpServerConfig,
    ) -> Self {
        self.mcp_servers.insert(name.into(), server);
        self
    }

    /// Adds every server of an `mcpServers` set.
    #[cfg(feature = "mcp")]
    pub fn with_mcp_servers(mut self, servers: crate::mcp::McpServers) -> Self {
        self.mcp_servers.extend(servers.0);
        self
    }

    /// Adds the servers of a JSON file in the shape of Claude Desktop's and Claude Code's
    /// (`{"mcpServers": {"name": {"command": ..., "args": [...]}}}`, or the bare map). A file
    /// that cannot be read fails `Agent::create`, saying why.
    #[cfg(feature = "mcp")]
    pub fn with_mcp_servers_file(mut self, path: impl AsRef<Path>) -> Self {
        match crate::mcp::McpServers::from_file(path) {
            Ok(servers) => self.with_mcp_servers(servers),
            Err(error) => {
                self.problems.push(ConfigError::McpServers(error));
                self
            }
        }
    }

    /// Keeps the conversation in `store` as it happens, so that it can be resumed after a
    /// crash ([`Agent::resume`](super::Agent::resume)) or forked
    /// ([`Agent::fork`](super::Agent::fork)). Takes a store or an `Arc` of one, such as an
    /// `Arc<dyn SessionStore>` shared by many agents.
    pub fn with_session_store(mut self, store: impl SessionStore + 'static) -> Self {
        self.session_store = Some(Arc::new(store));
        self
    }

    /// Runs the session in one process at a time with a lease of `ttl` rather than the
    /// default [`SessionLeasing::DEFAULT_TTL`] (agents take one by default when their store
    /// has leases: see [`SessionLeasing`]). Creating, resuming or forking the agent takes the
    /// session's lease (see [`SessionLease`](crate::session::SessionLease)), renewed every
    /// third of `ttl` while the agent lives and released when it is dropped. Another agent,
    /// in this process or another (on another machine, with a shared PostgreSQL store), is
    /// refused with [`SessionError::Busy`](crate::session::SessionError::Busy) until then;
    /// if this process dies, the session can be taken at once from this host, and `ttl` after
    /// the last renewal from another. A lease that is lost (the process stalled past `ttl`
    /// and another took over) stops the run before it stores anything more. A store without
    /// leases is an error.
    pub fn with_session_lease(mut self, ttl: Duration) -> Self {
        if ttl.is_zero() {
            self.problems.push(ConfigError::ZeroLease);
        }
        self.session.lease = SessionLeasing::Ttl(ttl);
        self
    }

    /// Takes no session lease: two processes may then run one session at once and interleave
    /// their records, so only for apps that keep them apart themselves.
    pub fn without_session_lease(mut self) -> Self {
        self.session.lease = SessionLeasing::Off;
        self
    }

    /// Makes a run that needs a permission answer stop instead of waiting for one, so the
    /// answer can come later, from another process or machine: the human-in-the-loop of a
    /// web app. The question is stored, the run's calls after it wait too, and the run ends
    /// with [`AgentError::ApprovalsPending`](super::AgentError::ApprovalsPending) listing the
    /// questions. Then, with the same store, maybe after [`Agent::resume`](super::Agent::resume):
    /// [`Agent::pending_approvals`](super::Agent::pending_approvals) (or
    /// [`session::pending_approvals`](crate::session::pending_approvals)),
    /// [`Agent::answer_approval`](super::Agent::answer_approval) for each, and
    /// [`Agent::continue_run`](super::Agent::continue_run): allowed calls run, refused ones
    /// get the refusal as an error result, and the model is asked again.
    ///
    /// Needs a session store. A [permission handler](Self::with_permission_handler), when
    /// set, is asked instead and nothing is deferred. Sub-agents (the Task tool) do not defer:
    /// their questions go to the handler or the event stream as without this option.
    pub fn with_deferred_approvals(mut self) -> Self {
        self.session.defer_approvals = true;
        self
    }

    /// Asks the provider to cache the prompt's prefix, or not (default: on).
    ///
    /// On Anthropic each request then carries up to four `cache_control` breakpoints (the
    /// tools, the system prompt, the end of the conversation and the end the previous request
    /// had), placed only where the prefix reaches the model's minimum
    /// ([`ModelInfo::min_cacheable_tokens`](crate::model::ModelInfo), 1024 tokens for a model
    /// the [`Catalog`](crate::model::Catalog) does not know). Reads cost 0.1x the input price,
    /// writes 1.25x: turn it off for one-shot prompts that are never continued. OpenAI caches
    /// on its own whatever this says.
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// What a request to a model with catalog entry `info` asks of the cache: `None` when
    /// caching is off.
    pub(crate) fn prompt_cache(
        &self,
        info: Option<&crate::model::ModelInfo>,
    ) -> Option<crate::model::PromptCache> {
        self.prompt_caching
            .then(|| crate::model::PromptCache::for_info(info))
    }

    /// The store set in code, else the one the config file names, else none.
    pub(crate) fn resolve_session_store(
        &self,
    ) -> Result<Option<Arc<dyn SessionStore>>, AgentError> {
        if let Some(store) = &self.session_store {
            return Ok(Some(store.clone()));
        }
        match &self.session.store {
            Some(spec) => Ok(Some(open_store(spec)?)),
            None => Ok(None),
        }
    }

    pub(crate) fn resolve_model(&self) -> Result<Arc<dyn Model>, AgentError> {
        if let Some(model) = &self.model_instance {
            return Ok(model.clone());
        }
        let Some(spec) = &self.model else {
            return Err(ConfigError::MissingModel.into());
        };
        let key = |default_var: &str| -> Option<String> {
            if let Some(key) = &spec.api_key {
                return Some(key.clone());
            }
            let var = spec.api_key_env.as_deref().unwrap_or(default_var);
            std::env::var(var).ok().filter(|key| !key.is_empty())
        };
        let retry = self.retry.unwrap_or_default();
        let model: Arc<dyn Model> = match spec.provider {
            ProviderKind::Anthropic => {
                let var = spec.api_key_env.as_deref().unwrap_or("ANTHROPIC_API_KEY");
                let api_key = key("ANTHROPIC_API_KEY").ok_or_else(|| {
                    AgentError::Model(ModelError::MissingApiKey(format!(
                        "set {var} to use Anthropic's {}",
                        spec.id
                    )))
                })?;
                let mut model = AnthropicModel::new(&spec.id, api_key).with_retry(retry);
                if let Some(url) = &spec.base_url {
                    model = model.with_base_url(url);
                }
                Arc::new(model)
            }
            ProviderKind::OpenAi => {
                let api_key = key("OPENAI_API_KEY");
                if api_key.is_none() && spec.base_url.is_none() {
                    let var = spec.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
                    return Err(AgentError::Model(ModelError::MissingApiKey(format!(
                        "set {var} to use OpenAI's {} (or a base_url for a local server)",
                        spec.id
                    ))));
                }
                let mut model = OpenAiModel::new(&spec.id, api_key).with_retry(retry);
                if let Some(url) = &spec.base_url {
                    model = model.with_base_url(url);
                }
                Arc::new(model)
            }
        };
        Ok(model)
    }
}

/// [`SessionLeasing`] as `lease_secs`: absent for `Auto`, `0` for `Off`, else the ttl.
mod leasing_seconds {
    use serde::{Deserializer, Serializer};

    use super::SessionLeasing;

    pub(super) fn serialize<S: Serializer>(
        value: &SessionLeasing,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            SessionLeasing::Ttl(ttl) => super::seconds::serialize(ttl, serializer),
            SessionLeasing::Off => serializer.serialize_u64(0),
            SessionLeasing::Auto => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SessionLeasing, D::Error> {
        let ttl = super::optional_seconds::deserialize(deserializer)?;
        Ok(match ttl {
            None => SessionLeasing::Auto,
            Some(ttl) if ttl.is_zero() => SessionLeasing::Off,
            Some(ttl) => SessionLeasing::Ttl(ttl),
        })
    }
}

/// [`seconds`], for a setting that may be absent.
mod optional_seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Seconds(#[serde(with = "super::seconds")] Duration);
        Ok(Option::<Seconds>::deserialize(deserializer)?.map(|Seconds(value)| value))
    }
}

/// Durations as seconds in config files (`1.5` is 1.5 s), [`Duration`] in code.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value.subsec_nanos() {
            0 => serializer.serialize_u64(value.as_secs()),
            _ => serializer.serialize_f64(value.as_secs_f64()),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs)
            .map_err(|_| D::Error::custom(format!("{secs} is not a number of seconds (0 or more)")))
    }
}
