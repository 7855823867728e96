//! [`AgentError`]: why an agent could not be built, or a run failed.

use crate::RegistryError;
use crate::model::ModelError;
use crate::session::PendingApproval;

/// Why an agent could not be built, or a run failed.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// The configuration is unusable.
    #[error("invalid agent config: {0}")]
    Config(String),
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
    /// A [`user_prompt_submit`](super::Hook::user_prompt_submit) hook refused the prompt; nothing of it was sent or stored.
    #[error("the prompt was blocked by a hook: {0}")]
    PromptBlocked(String),
    /// The run was cancelled.
    #[error("the run was cancelled")]
    Cancelled,
    /// The run's turns cost its budget ([`Limits::with_max_budget_usd`](super::Limits::with_max_budget_usd)) or more. The
    /// last turn's tool calls did not run (the model was told so); the session is intact and
    /// a new prompt goes on with a fresh budget.
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
    /// The run's turns used its token limit ([`Limits::with_max_run_tokens`](super::Limits::with_max_run_tokens)) or more;
    /// as [`BudgetExceeded`](Self::BudgetExceeded).
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
    /// ([`SessionSettings::with_deferred_approvals`](super::SessionSettings::with_deferred_approvals)): answer each with
    /// [`Agent::answer_approval`](super::Agent::answer_approval), then go on with [`Agent::continue_run`](super::Agent::continue_run). The session is
    /// stored; this can happen in another process after [`Agent::resume`](super::Agent::resume).
    #[error(
        "the run is waiting for {} permission answer(s): {}; answer them with \
         `Agent::answer_approval`, then call `Agent::continue_run`",
        .0.len(),
        .0.iter().map(|p| format!("{} ({})", p.call_id, p.title)).collect::<Vec<_>>().join(", ")
    )]
    ApprovalsPending(Vec<PendingApproval>),
    /// The model's typed answer ([`Agent::prompt_as`](super::Agent::prompt_as)) was refused `attempts` times in a row:
    /// more than [`Limits::max_output_retries`](super::Limits::max_output_retries). `errors` is what was wrong with the
    /// last one, AJV style.
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
    /// An MCP server could not be started, reached or listed.
    #[cfg(feature = "mcp")]
    #[error(transparent)]
    Mcp(#[from] crate::mcp::McpError),
}

// The dollar amounts of `BudgetExceeded` are never NaN (limits are checked, costs are sums
// of finite products): equality is an equivalence.
impl Eq for AgentError {}
