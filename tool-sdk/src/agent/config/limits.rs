//! `config.limits`: how far a run may go.

use std::time::Duration;

/// How far a run may go: turns, timeouts, concurrency, result sizes, retries of typed
/// answers, and budgets. In a config file these keys sit at the top level (`max_turns`,
/// `tool_timeout_secs`, `max_budget_usd`, ...).
///
/// ```
/// use std::time::Duration;
/// use tool_sdk::agent::AgentConfig;
///
/// let config = AgentConfig::new().limits(|limits| {
///     limits
///         .with_max_turns(20)
///         .with_tool_timeout(Duration::from_secs(30))
///         .with_max_budget_usd(0.50)
/// });
/// assert_eq!(config.limits.max_turns, 20);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Limits {
    /// The most model turns in one run (default 50).
    pub max_turns: u32,
    /// Timeout of a call whose tool sets none (default 120 s; `tool_timeout_secs` in a file).
    pub tool_timeout: Duration,
    /// The longest any call may run, whatever the tool says (default 600 s;
    /// `max_tool_timeout_secs` in a file).
    pub max_tool_timeout: Duration,
    /// How many read-only calls may run at once (default 8).
    pub max_concurrent_tools: usize,
    /// Tool results longer than this many characters keep their head and tail only (default
    /// 50 000).
    pub max_result_chars: usize,
    /// How many times a typed answer ([`Agent::prompt_as`](crate::agent::Agent::prompt_as))
    /// that does not match its type is sent back to the model before the run fails with
    /// [`AgentError::OutputInvalid`](crate::agent::AgentError::OutputInvalid) (default 2).
    pub max_output_retries: u32,
    /// The most a run may cost, in USD: see [`with_max_budget_usd`](Self::with_max_budget_usd).
    pub max_budget_usd: Option<f64>,
    /// The most tokens a run may use: see [`with_max_run_tokens`](Self::with_max_run_tokens).
    pub max_run_tokens: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_turns: 50,
            tool_timeout: Duration::from_secs(120),
            max_tool_timeout: Duration::from_secs(600),
            max_concurrent_tools: 8,
            max_result_chars: 50_000,
            max_output_retries: 2,
            max_budget_usd: None,
            max_run_tokens: None,
        }
    }
}

impl Limits {
    /// Sets the most model turns per run.
    pub fn with_max_turns(mut self, turns: u32) -> Self {
        self.max_turns = turns;
        self
    }

    /// Sets the timeout of a call whose tool sets none.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = timeout;
        self
    }

    /// Sets the longest any call may run, whatever its tool says.
    pub fn with_max_tool_timeout(mut self, timeout: Duration) -> Self {
        self.max_tool_timeout = timeout;
        self
    }

    /// Sets how many read-only calls may run at once.
    pub fn with_max_concurrent_tools(mut self, n: usize) -> Self {
        self.max_concurrent_tools = n;
        self
    }

    /// Sets the result size cap, in characters.
    pub fn with_max_result_chars(mut self, chars: usize) -> Self {
        self.max_result_chars = chars;
        self
    }

    /// Sets how many times a typed answer that does not match its type is sent back to the
    /// model (0 fails at the first wrong answer).
    pub fn with_max_output_retries(mut self, retries: u32) -> Self {
        self.max_output_retries = retries;
        self
    }

    /// Stops a run once its turns have cost `usd` or more (`max_budget_usd` in a file). The
    /// budget is per run: checked before each model request and after each turn; the calls
    /// of the turn that reached it do not run (the model is told why; read-only calls that
    /// started while the turn streamed, before its usage was known, finish) and the run fails
    /// with [`AgentError::BudgetExceeded`](crate::agent::AgentError::BudgetExceeded). A turn
    /// that ends the run anyway (no calls) is not an error. Needs the model's price:
    /// `Agent::create` fails for a model the catalog does not know.
    pub fn with_max_budget_usd(mut self, usd: f64) -> Self {
        self.max_budget_usd = Some(usd);
        self
    }

    /// Stops a run once its turns have used `tokens` or more, prompt and output, cached or
    /// not (`max_run_tokens` in a file); as [`with_max_budget_usd`](Self::with_max_budget_usd),
    /// ending with
    /// [`AgentError::TokenLimitExceeded`](crate::agent::AgentError::TokenLimitExceeded).
    /// Works whatever the model.
    pub fn with_max_run_tokens(mut self, tokens: u64) -> Self {
        self.max_run_tokens = Some(tokens);
        self
    }
}
