//! The loop's decisions, apart from its effects.
//!
//! Everything here is a pure function of what the loop knows (counts, sizes, limits, which
//! calls are read-only): no model, no tool, no store, no clock, no runtime. The driver
//! (`run.rs`, `executor.rs`, `early.rs`, `compact.rs`) asks these functions what happens next
//! and then performs it: sends the request, runs the calls, stores the records, calls the
//! hooks. Another driver (a durable engine's workflow) can make the same decisions from the
//! same facts. The decisions:
//!
//! - how a run starts ([`start`]); whether another request is sent, or what stops the run
//!   ([`before_request`],
//!   [`Budget::stop`], [`after_turn`], [`compact_and_retry`]);
//! - which calls start now and which wait: the batches of a turn ([`next_batch`]), when their
//!   starts are stored ([`store_starts_first`]), which calls start while the turn still
//!   streams ([`starts_early`]) and which are left to run once it has arrived ([`to_run`]);
//! - when the view is cleared or compacted and how far ([`context_window`], [`prompt_room`],
//!   [`Thresholds`], [`results_to_clear`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;

use super::error::{AgentError, ConfigError};
use crate::model::{ModelError, Price, ToolUse, Usage};

/// How a run starts.
#[derive(Debug, PartialEq)]
pub(crate) enum Start {
    /// The prompt joins the conversation (after the prompt hooks), then the first request.
    Prompt,
    /// No prompt, and the conversation ends with a user message or results: it is answered.
    Continue,
    /// No prompt, and the last turn's calls wait for deferred approvals: they run (from the
    /// store) first.
    FinishDeferred,
    /// A prompt while the last turn's calls wait for deferred approvals: refused, since it
    /// would leave them unanswered, which providers refuse.
    WaitForApprovals,
    /// No prompt, and the conversation ends with the model's answer: nothing to do.
    NothingToContinue,
}

/// How a run starts, with a prompt or not (`continue_run`), from a conversation whose last
/// message is a turn with calls (`open_turn`) or the user's (`ends_with_user`).
pub(crate) fn start(prompt: bool, open_turn: bool, ends_with_user: bool) -> Start {
    match (prompt, open_turn) {
        (true, true) => Start::WaitForApprovals,
        (true, false) => Start::Prompt,
        (false, true) => Start::FinishDeferred,
        (false, false) if ends_with_user => Start::Continue,
        (false, false) => Start::NothingToContinue,
    }
}

/// Whether the run sends its next request, `turns` taken so far: `Err` with what stops it
/// (cancelled, `max_turns` reached, a budget spent, in that order).
pub(crate) fn before_request(
    cancelled: bool,
    turns: u32,
    max_turns: u32,
    budget: Option<AgentError>,
) -> Result<(), AgentError> {
    if cancelled {
        return Err(AgentError::Cancelled);
    }
    if turns >= max_turns {
        return Err(AgentError::MaxTurns(max_turns));
    }
    budget.map_or(Ok(()), Err)
}

/// A run's budgets: the money its turns may cost (known only with the model's price) and the
/// tokens they may use.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Budget {
    pub(crate) price: Option<Price>,
    pub(crate) max_usd: Option<f64>,
    pub(crate) max_tokens: Option<u64>,
}

impl Budget {
    /// The error that stops a run which used `usage`, once it reached a budget.
    pub(crate) fn stop(&self, usage: &Usage) -> Option<AgentError> {
        if let (Some(limit_usd), Some(price)) = (self.max_usd, &self.price) {
            let spent_usd = price.cost_usd(usage);
            if spent_usd >= limit_usd {
                return Some(AgentError::BudgetExceeded {
                    spent_usd,
                    limit_usd,
                });
            }
        }
        let limit = self.max_tokens?;
        let spent = usage.total_tokens();
        (spent >= limit).then_some(AgentError::TokenLimitExceeded { spent, limit })
    }
}

/// What follows a model turn that has wholly arrived.
#[derive(Debug)]
pub(crate) enum AfterTurn {
    /// No call is left to run: the run ends, unless a stop hook has it go on.
    Finish,
    /// The turn spent a budget: its calls that did not start are answered as not run, and
    /// the run fails with this error.
    StopForBudget(AgentError),
    /// The calls run; then the next request.
    RunCalls,
}

/// What follows a turn that left `calls` to run, once its usage is counted (`budget`: what a
/// spent budget stops the run with).
pub(crate) fn after_turn(calls: usize, budget: Option<AgentError>) -> AfterTurn {
    match (calls, budget) {
        (0, _) => AfterTurn::Finish,
        (_, Some(error)) => AfterTurn::StopForBudget(error),
        (_, None) => AfterTurn::RunCalls,
    }
}

/// Whether a request that failed with `error` is sent again after a compaction: only when the
/// provider said the prompt is too long, and not twice in a row.
pub(crate) fn compact_and_retry(error: &AgentError, compacted_already: bool) -> bool {
    !compacted_already && matches!(error, AgentError::Model(ModelError::PromptTooLong { .. }))
}

/// The batch that starts at `start`: the run of read-only calls (`concurrent`) from there, or
/// the one call that is not. Batches run one after the other; the calls of one together.
pub(crate) fn next_batch(concurrent: &[bool], start: usize) -> Range<usize> {
    match concurrent.get(start) {
        Some(true) => start..start + concurrent[start..].iter().take_while(|c| **c).count(),
        Some(false) => start..start + 1,
        None => start..start,
    }
}

/// Whether a batch's starts are stored before it runs. A mutating call's are: a call whose
/// start is not stored does not run. A read-only batch starts at once, and its starts go
/// with its first record (or after `READ_ONLY_COMMIT_DELAY`).
pub(crate) fn store_starts_first(read_only: bool) -> bool {
    !read_only
}

/// Whether the call `id`, whose block has just arrived while the turn streams, starts now:
/// it must be read-only (`concurrent`), every call announced before it must have started early
/// (`started` of the `announced` did, in order), and fewer than `limit` may be running.
pub(crate) fn starts_early(
    announced: &[String],
    started: usize,
    id: &str,
    running: usize,
    limit: usize,
    concurrent: bool,
) -> bool {
    announced.get(started).map(String::as_str) == Some(id) && running < limit && concurrent
}

/// The calls of a turn still to run: those neither `answered` already nor `started` early.
pub(crate) fn to_run<'a, 'c, V>(
    calls: &'c [&'a ToolUse],
    answered: &HashMap<String, V>,
    started: &[String],
) -> Cow<'c, [&'a ToolUse]> {
    if answered.is_empty() && started.is_empty() {
        return Cow::Borrowed(calls);
    }
    calls
        .iter()
        .filter(|call| !answered.contains_key(&call.id) && !started.contains(&call.id))
        .copied()
        .collect()
}

/// The context window to stay inside, when the agent manages it (`enabled`): the configured
/// one, else the model's.
pub(crate) fn context_window(
    enabled: bool,
    configured: Option<u64>,
    model: Option<u64>,
) -> Option<u64> {
    enabled.then(|| configured.or(model)).flatten()
}

/// The room a request's prompt has in `window`: what `max_tokens` leaves of it. An error
/// when it leaves nothing.
pub(crate) fn prompt_room(window: u64, max_tokens: u32) -> Result<u64, AgentError> {
    let answer = u64::from(max_tokens);
    match window.checked_sub(answer) {
        Some(room) if room > 0 => Ok(room),
        _ => Err(ConfigError::NoPromptRoom { max_tokens, window }.into()),
    }
}

/// The sizes, in tokens, at which the view changes, from the room the prompt has and the
/// shares of it the settings give.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Thresholds {
    /// Above this, older tool results are cleared...
    pub(crate) clear_above: u64,
    /// ...down to this.
    pub(crate) clear_to: u64,
    /// Above this (after clearing), the conversation is compacted.
    pub(crate) compact_above: u64,
    /// What a compaction keeps verbatim, at most (but at least one message).
    pub(crate) keep_recent: u64,
}

impl Thresholds {
    /// The thresholds of `room`, each a share of it.
    pub(crate) fn of(room: u64, clear_at: f64, clear_to: f64, compact_at: f64, keep: f64) -> Self {
        let share = |share: f64| (share * room as f64) as u64;
        Thresholds {
            clear_above: share(clear_at),
            clear_to: share(clear_to),
            compact_above: share(compact_at),
            keep_recent: share(keep),
        }
    }
}

/// A tool result as clearing sees it: its call's id, its size in characters, and whether the
/// model has read it (it was sent before the last turn).
pub(crate) type ResultSize<'a> = (&'a str, usize, bool);

/// The results to clear, in one batch, oldest first, until a request of `tokens` is estimated
/// at `low` or under: never the `keep` most recent, nor one the model has not read yet, nor
/// one `cleared` already or under `min_chars` (its note would save nothing).
pub(crate) fn results_to_clear(
    results: &[ResultSize<'_>],
    keep: usize,
    mut tokens: u64,
    low: u64,
    cleared: &HashSet<String>,
    min_chars: usize,
) -> Vec<String> {
    let keep = keep.min(results.len());
    let mut ids = Vec::new();
    for &(id, chars, was_read) in &results[..results.len() - keep] {
        if tokens <= low || !was_read {
            break;
        }
        if chars >= min_chars && !cleared.contains(id) {
            ids.push(id.to_owned());
            // The note left in its place is about a hundred characters.
            tokens = tokens.saturating_sub(chars.saturating_sub(100) as u64 / 4);
        }
    }
    ids
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
