//! Why an agent could not be built, or a run failed.

use std::path::PathBuf;

use crate::RegistryError;
use crate::error::{ErrorSource, Shared};
use crate::model::ModelError;
use crate::permission::RuleError;
use crate::session::PendingApproval;
use crate::validate::SchemaError;

/// Why an agent could not be built, or a run failed.
///
/// [`source`](std::error::Error::source) leads to the error beneath: the model's
/// [`ModelError`] and its `reqwest::Error`, the store's
/// [`SessionError`](crate::session::SessionError) and its SQLite, PostgreSQL or I/O error,
/// the `std::io::Error` of a config file that cannot be read.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The configuration is unusable.
    #[error("invalid agent config: {0}")]
    Config(#[from] ConfigError),
    /// The registry refused or could not find tools.
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A tool needs app state the config does not provide.
    #[error(
        "tool `{tool}` needs app state of type `{type_name}`: add it with \
         `AgentConfig::with_state(...)`"
    )]
    MissingState {
        /// The tool.
        tool: String,
        /// The state's type.
        type_name: &'static str,
    },
    /// The model failed (after retries).
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The run hit `max_turns` while the model still wanted tools.
    #[error("stopped after {0} turns (max_turns); the model still wanted to call tools")]
    MaxTurns(u32),
    /// A [`user_prompt_submit`](super::Hook::user_prompt_submit) hook refused the prompt; nothing of it
    /// was sent or stored.
    #[error("the prompt was blocked by a hook: {0}")]
    PromptBlocked(String),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// The run's turns cost its budget
    /// ([`Limits::with_max_budget_usd`](super::Limits::with_max_budget_usd)) or
    /// more. The last turn's tool calls did not run (the model was told so); the session is
    /// intact and a new prompt goes on with a fresh budget.
    #[error(
        "stopped: this run cost ${spent_usd:.4}, its budget is ${limit_usd:.4} \
         (max_budget_usd); the last tool calls did not run, and a new prompt continues"
    )]
    BudgetExceeded {
        /// What the run's turns cost, in USD.
        spent_usd: f64,
        /// The budget.
        limit_usd: f64,
    },
    /// The run's turns used its token limit
    /// ([`Limits::with_max_run_tokens`](super::Limits::with_max_run_tokens)) or
    /// more; as [`BudgetExceeded`](Self::BudgetExceeded).
    #[error(
        "stopped: this run used {spent} tokens, its limit is {limit} (max_run_tokens); the \
         last tool calls did not run, and a new prompt continues"
    )]
    TokenLimitExceeded {
        /// Tokens the run's turns used: prompt and output, cached or not.
        spent: u64,
        /// The limit.
        limit: u64,
    },
    /// The session store failed: the run stopped rather than lose what it could not store.
    #[error(transparent)]
    Session(#[from] crate::session::SessionError),
    /// The run stopped to wait for permission answers
    /// ([`SessionSettings::with_deferred_approvals`](super::SessionSettings::with_deferred_approvals)):
    /// answer each with [`Agent::answer_approval`](super::Agent::answer_approval), then go on
    /// with [`Agent::continue_run`](super::Agent::continue_run). The session is stored; this
    /// can happen in another process after [`Agent::resume`](super::Agent::resume).
    #[error(
        "the run is waiting for {} permission answer(s): {}; answer them with \
         `Agent::answer_approval`, then call `Agent::continue_run`",
        .0.len(),
        .0.iter().map(|p| format!("{} ({})", p.call_id, p.title)).collect::<Vec<_>>().join(", ")
    )]
    ApprovalsPending(Vec<PendingApproval>),
    /// A prompt while the last turn's tool calls wait for their deferred approvals.
    #[error(
        "the last turn's tool calls wait to run after deferred approvals: call \
         `continue_run` first"
    )]
    ContinueFirst,
    /// [`Agent::continue_run`](super::Agent::continue_run) with nothing to continue.
    #[error(
        "there is nothing to continue: the conversation does not end with a user message or \
         tool results"
    )]
    NothingToContinue,
    /// The model's typed answer ([`Agent::prompt_as`](super::Agent::prompt_as)) was refused
    /// `attempts` times in a row: more than
    /// [`Limits::max_output_retries`](super::Limits::max_output_retries). `errors`
    /// is what was wrong with the last one, AJV style.
    #[error(
        "the model's answer did not match the requested type after {attempts} attempt(s); \
         the last one:\n{errors}"
    )]
    OutputInvalid {
        /// How many answers were refused.
        attempts: u32,
        /// The last answer's problems.
        errors: crate::validate::InputErrors,
    },
    /// [`RunResult::output_as`](super::RunResult::output_as) of a run that asked for no
    /// typed answer.
    #[error("this run asked for no typed answer: start it with `prompt_as`")]
    NoTypedAnswer,
    /// [`RunResult::output_as`](super::RunResult::output_as) with a type the answer does not
    /// deserialize as.
    #[error("the answer does not deserialize as `{type_name}`: {source}")]
    AnswerType {
        /// The type asked for.
        type_name: &'static str,
        /// What serde said.
        source: Shared<serde_json::Error>,
    },
    /// An MCP server could not be started, reached or listed.
    #[cfg(feature = "mcp-client")]
    #[error(transparent)]
    Mcp(#[from] crate::mcp::McpError),
}

/// What is wrong with an agent's configuration. Each message says what to change.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// No model was configured.
    #[error("no model: set `[model]` in the config file or call `with_model(...)`")]
    MissingModel,
    /// A config file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: Shared<std::io::Error>,
    },
    /// A config file is not valid TOML or JSON, or does not fit the config's shape.
    #[error("{}: {source}", path.display())]
    BadFile {
        /// The file.
        path: PathBuf,
        /// What the parser said (a `toml::de::Error` or a `serde_json::Error`).
        source: ErrorSource,
    },
    /// A config file whose name ends in neither `.toml` nor `.json`.
    #[error("{}: the file must end in .toml or .json", path.display())]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
    /// A permission rule that does not parse.
    #[error(transparent)]
    BadRule(#[from] RuleError),
    /// The current directory, the default working directory, cannot be read.
    #[error("cannot read the current directory: {0}")]
    CurrentDir(#[source] Shared<std::io::Error>),
    /// The working directory, or an additional one, cannot be used.
    #[error(
        "the {} directory {} cannot be used: {source}",
        if *additional { "additional" } else { "working" },
        path.display()
    )]
    BadDirectory {
        /// The directory.
        path: PathBuf,
        /// Whether it is an additional directory rather than the working one.
        additional: bool,
        /// Why.
        source: Shared<std::io::Error>,
    },
    /// A `tools` pattern with `*` or `?` that is not a glob.
    #[error("the tool pattern `{pattern}` is not a glob: {source}")]
    ToolPattern {
        /// The pattern.
        pattern: String,
        /// What is wrong with it.
        source: globset::Error,
    },
    /// `max_turns` of 0.
    #[error("max_turns must be at least 1")]
    NoTurns,
    /// `max_tokens` as large as the model's context window, or larger.
    #[error(
        "max_tokens ({max_tokens}) leaves no room for the prompt in the context window of \
         {window} tokens (the provider counts the prompt and max_tokens together): lower \
         `max_tokens` (in the config file or on `AgentConfig`), or check the window"
    )]
    NoPromptRoom {
        /// The answer's room.
        max_tokens: u32,
        /// The model's context window.
        window: u64,
    },
    /// A `[context]` share that is not above 0 and at most 1.
    #[error(
        "[context] {name} is {value}, but it is a share of the context window: it must be \
         above 0 and at most 1"
    )]
    ContextShare {
        /// The setting: `clear_at`, `clear_to`, `compact_at` or `keep_recent`.
        name: &'static str,
        /// Its value.
        value: f64,
    },
    /// Two `[context]` shares in the wrong order: `lower` must not be above `upper`.
    #[error(
        "[context] {lower} ({lower_value}) must not be above {upper} ({upper_value}): {}",
        context_order_reason(lower)
    )]
    ContextOrder {
        /// The setting that must be the lower one (`clear_to` or `clear_at`).
        lower: &'static str,
        /// Its value.
        lower_value: f64,
        /// The setting that must be the higher one (`clear_at` or `compact_at`).
        upper: &'static str,
        /// Its value.
        upper_value: f64,
    },
    /// A model named as `provider:id` that does not parse.
    #[error("the model `{spec}` cannot be used: {why}")]
    BadModelSpec {
        /// The text given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A thinking budget under Anthropic's minimum,
    /// [`Thinking::MIN_BUDGET_TOKENS`](crate::model::Thinking::MIN_BUDGET_TOKENS).
    #[error(
        "a thinking budget of {budget_tokens} tokens is under the 1024 the API accepts: raise \
         it with `.model(|m| m.with_thinking(Thinking::budget(1024)))` or `thinking = 1024` in \
         the `[model]` table (or more), or use adaptive thinking"
    )]
    ThinkingBudgetTooSmall {
        /// The budget asked for.
        budget_tokens: u32,
    },
    /// A thinking budget as large as `max_tokens` or larger, which it is part of (for a
    /// model that does not think between tool calls, or an agent without tools).
    #[error(
        "a thinking budget of {budget_tokens} tokens leaves no room for the answer in \
         max_tokens ({max_tokens}), which the thinking is part of: raise `max_tokens` above \
         the budget (in the config file or with `.model(|m| m.with_max_tokens(...))`) or \
         lower the budget"
    )]
    ThinkingBudgetNotBelowMaxTokens {
        /// The budget asked for.
        budget_tokens: u32,
        /// The request's `max_tokens`.
        max_tokens: u32,
    },
    /// A sampling temperature other than 1 with thinking on, which the API refuses.
    #[error(
        "temperature {temperature} is set while thinking is on, and the API takes no \
         temperature but 1 with thinking: remove `temperature` (from the config file or the \
         `.model(...)` settings) or turn thinking off"
    )]
    TemperatureWithThinking {
        /// The temperature set.
        temperature: f32,
    },
    /// A `max_budget_usd` that is not a number of dollars.
    #[error("max_budget_usd must be a number of dollars, 0 or more (got {0})")]
    BadBudget(f64),
    /// A budget for a model whose price is unknown.
    #[error(
        "max_budget_usd is set, but the price of the model `{model}` is unknown, so the \
         budget could not be checked: add it with `.model(|m| m.with_model_info(\"{model}\", \
         ...))` or a `[models.\"{model}\"]` table in the config file"
    )]
    UnknownPrice {
        /// The model's id.
        model: String,
    },
    /// A session lease of 0 s.
    #[error(
        "a session lease of 0 s would expire as it is taken: give a ttl of a few seconds or \
         more, or `SessionLeasing::Off` to take none"
    )]
    ZeroLease,
    /// Resuming, forking or continuing a session, or deferring approvals, without a store.
    #[error("{}", store_message(*need))]
    NoSessionStore {
        /// What needed it.
        need: StoreNeed,
    },
    /// A project memory file (`CLAUDE.md`, ...) or its directory cannot be read.
    #[error("project memory: cannot read {}: {source}", path.display())]
    ProjectMemory {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: Shared<std::io::Error>,
    },
    /// A project memory file larger than it reads.
    #[error(
        "project memory: cannot read {}: it is {size} bytes, more than the {limit} read",
        path.display()
    )]
    MemoryTooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The most read.
        limit: u64,
    },
    /// A JSON file the agent reads or edits (`.claude/settings.json`, `.mcp.json`, an
    /// `mcpServers` file) cannot be read, is not JSON, or does not have the expected shape.
    #[error("{}: {problem}", path.display())]
    JsonFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, in words.
        problem: String,
        /// The I/O or JSON error beneath, if any.
        source: Option<ErrorSource>,
    },
    /// A call that needs MCP on an agent without it.
    #[error("this agent has no MCP support (it is a sub-agent)")]
    NoMcp,
    /// An MCP server's config that cannot be written to `.mcp.json`.
    #[error("cannot save the config: {0}")]
    McpConfig(#[source] Shared<serde_json::Error>),
    /// The type of [`Agent::prompt_as`](super::Agent::prompt_as) has a schema that cannot be
    /// used.
    #[error("the output type `{type_name}` has an unusable schema: {source}")]
    OutputSchema {
        /// The type.
        type_name: &'static str,
        /// What is wrong with its schema.
        source: SchemaError,
    },
    /// A typed answer asked for while a tool of the answer tool's name exists.
    #[error(
        "a typed answer is asked for with a tool named `{0}`, and the agent has a tool of that \
         name already"
    )]
    OutputToolTaken(&'static str),
}

/// What needed a session store ([`ConfigError::NoSessionStore`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreNeed {
    /// [`SessionSettings::with_deferred_approvals`](super::SessionSettings::with_deferred_approvals).
    DeferredApprovals,
    /// [`Agent::resume`](super::Agent::resume).
    Resume,
    /// [`Agent::fork`](super::Agent::fork).
    Fork,
    /// Finishing a turn whose tool calls waited for deferred approvals.
    Continue,
}

impl ConfigError {
    /// A [`ConfigError::JsonFile`].
    pub(crate) fn json_file(
        path: &std::path::Path,
        problem: impl Into<String>,
        source: Option<ErrorSource>,
    ) -> Self {
        ConfigError::JsonFile {
            path: path.to_owned(),
            problem: problem.into(),
            source,
        }
    }
}

/// Why the `[context]` share named `lower` comes below the other one.
fn context_order_reason(lower: &str) -> &'static str {
    if lower == "clear_to" {
        "clearing starts above clear_at and brings the request down to clear_to"
    } else {
        "tool results are cleared before the conversation is compacted"
    }
}

fn store_message(need: StoreNeed) -> String {
    const SET_ONE: &str = "set one with `.session(|s| s.with_store(...))` or \
                           `[session] store = \"sqlite:PATH\"`";
    match need {
        StoreNeed::DeferredApprovals => format!(
            "deferred approvals need a session store, where the questions wait for their \
             answers: {SET_ONE}"
        ),
        StoreNeed::Resume => format!("cannot resume a session without a session store: {SET_ONE}"),
        StoreNeed::Fork => format!("cannot fork a session without a session store: {SET_ONE}"),
        StoreNeed::Continue => "the last turn's tool calls are unanswered and there is no \
                                session store to finish them from"
            .to_owned(),
    }
}
