//! The loop's decisions, apart from its effects.
//!
//! Everything here is a pure function of what the loop knows (counts, sizes, limits, which
//! calls are read-only, what kind a record is): no model, no tool, no store, no clock, no
//! runtime. The driver (`run.rs`, `turn.rs`, `executor.rs`, `early.rs`, `compact.rs`,
//! `output.rs`) and the recorder ask these functions what happens next and then perform it:
//! send the request, run the calls, store the records, call the hooks. Another driver (a
//! durable engine's workflow) can make the same decisions from the same facts. The decisions:
//!
//! - how a run starts ([`start`]); whether another request is sent, or what stops the run
//!   ([`before_request`], [`Budget::stop`], [`after_turn`], [`compact_and_retry`]);
//! - which calls start now and which wait: the batches of a turn ([`next_batch`]), which
//!   calls start while the turn still streams ([`starts_early`]) and which are left to run
//!   once it has arrived ([`to_run`]);
//! - what is recorded and when it is stored: each record, named by its kind ([`Recorded`]),
//!   is skipped, held, staged or stored now ([`commit`]), and staged records are written when
//!   [`flush_within`] says;
//! - the typed answer: where a turn gives it ([`find_answer`]), whether a refused one is sent
//!   back or fails the run ([`refuse_answer`]), and what each output call is answered
//!   ([`output_result`]);
//! - whether a turn without calls asks the stop hooks ([`asks_stop_hooks`]) and what follows
//!   their answer ([`after_stop`]);
//! - when the view is cleared or compacted and how far ([`context_window`], [`prompt_room`],
//!   [`Thresholds`], [`results_to_clear`]).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::time::Duration;

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
pub fn before_request(
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

/// What follows a model turn that has wholly arrived. `E` is what a spent budget stops the run
/// with: the agent's [`AgentError`], or what another driver keeps of it.
#[derive(Debug)]
pub enum AfterTurn<E = AgentError> {
    /// No call is left to run: the run ends, unless a stop hook has it go on.
    Finish,
    /// The turn spent a budget: its calls that did not start are answered as not run, and
    /// the run fails with this error.
    StopForBudget(E),
    /// The calls run; then the next request.
    RunCalls,
}

/// What follows a turn that left `calls` to run, once its usage is counted (`budget`: what a
/// spent budget stops the run with).
pub fn after_turn<E>(calls: usize, budget: Option<E>) -> AfterTurn<E> {
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
pub fn next_batch(concurrent: &[bool], start: usize) -> Range<usize> {
    match concurrent.get(start) {
        Some(true) => start..start + concurrent[start..].iter().take_while(|c| **c).count(),
        Some(false) => start..start + 1,
        None => start..start,
    }
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

/// A kind of session record, as the loop writes it: what [`commit`] decides for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Recorded {
    /// A user message: the run's prompt, or what a stop hook or a refused typed answer tells
    /// the model.
    Prompt,
    /// A model turn with its usage (and the switch to a fallback model that brought it), or a
    /// summary request's usage (which goes with its compaction).
    ModelTurn,
    /// A mutating call's start.
    MutatingStart,
    /// The start of a call of a read-only batch.
    ReadOnlyStart,
    /// A permission question, its answer, or its deferral.
    Permission,
    /// A call's result, as the call ends (an output call's too).
    Result,
    /// The result of a call that did not run because a budget stopped the run.
    NotRun,
    /// A change of the view: tool results cleared, a compaction.
    ViewChange,
}

/// Where the records of a call started while its turn streamed stand (`early.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Early {
    /// The turn is not staged yet: the call's records wait for it.
    Holding,
    /// The turn is staged, and the held records behind it.
    Released,
}

/// What becomes of one record.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Commit {
    /// Nothing is stored: the session is kept in memory only.
    Skip,
    /// Held with its call's until the call's turn is staged, then staged behind it.
    Hold,
    /// Staged: stored with the next flush, which the next record stored now, or
    /// [`flush_within`], brings.
    Stage,
    /// Stored before the loop goes on, with everything staged before it, in one commit.
    StoreNow,
}

/// What becomes of a record of `kind`, in a session that is `stored` or not, written by a
/// call that started `early` or by the loop (`None`). Each record is stored before the
/// effect that needs it: the prompt before the model sees it; a mutating call's start before
/// it runs (a call whose start cannot be stored does not run); permission questions and
/// answers before the call goes on; each result as its call ends. Records whose loss a crash
/// survives are staged, to share a commit: a model turn (asked for again) until its first
/// call starts, a read-only batch's starts (its calls may run again) until its first result.
pub(crate) fn commit(kind: Recorded, stored: bool, early: Option<Early>) -> Commit {
    use Recorded::*;
    match (stored, early, kind) {
        (false, _, _) => Commit::Skip,
        (true, Some(Early::Holding), _) => Commit::Hold,
        (true, Some(Early::Released), _) => Commit::StoreNow,
        (true, None, ModelTurn | ReadOnlyStart | NotRun) => Commit::Stage,
        (true, None, Prompt | MutatingStart | Permission | Result | ViewChange) => Commit::StoreNow,
    }
}

/// How long a read-only batch runs before the records staged for it (its turn, their starts)
/// are stored if no record of its calls took them along sooner. Most read-only calls end
/// within it, and then a step costs one commit. A process killed inside it loses the turn as
/// if the kill had come while it streamed: the turn is asked for again, and its calls, which
/// only read, may run again.
pub(crate) const READ_ONLY_COMMIT_DELAY: Duration = Duration::from_millis(10);

/// A point of the loop where records may be staged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum FlushPoint {
    /// A batch of calls runs, its starts recorded.
    Batch { read_only: bool },
    /// The calls started while the turn streamed run on, their held records staged behind it.
    EarlyCalls,
    /// A turn without calls: before the stop hooks are asked and the run ends.
    NoCalls,
    /// The run stops with an error: a budget's answers to the calls it did not run, or the
    /// usage of a summary that came back empty.
    Stop,
}

/// How long the records staged at `point` may wait before they are written: `None` when
/// nothing waits there (a mutating call's start was stored before it ran), else at the
/// latest after the duration (zero: now), beside what runs, and in any case once it has run.
pub(crate) fn flush_within(point: FlushPoint) -> Option<Duration> {
    match point {
        FlushPoint::Batch { read_only: false } => None,
        FlushPoint::Batch { read_only: true } | FlushPoint::EarlyCalls => {
            Some(READ_ONLY_COMMIT_DELAY)
        }
        FlushPoint::NoCalls | FlushPoint::Stop => Some(Duration::ZERO),
    }
}

/// Where a turn's typed answer is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Answer {
    /// In its text: the turn made no call (a provider's structured output).
    Text,
    /// In its first output call: the turn made no other call.
    OutputCall,
    /// Not in this turn: its calls run, and the answer is asked for after them.
    NotYet,
    /// Given beside other calls: the output calls are answered with [`OutputResult::CallAlone`],
    /// the others run, and the answer is asked for after them.
    TooSoon,
}

/// Where the typed answer of a turn with `output_calls` calls of the output tool and
/// `other_calls` other calls is.
pub(crate) fn find_answer(output_calls: usize, other_calls: usize) -> Answer {
    match (output_calls, other_calls) {
        (0, 0) => Answer::Text,
        (0, _) => Answer::NotYet,
        (_, 0) => Answer::OutputCall,
        (_, _) => Answer::TooSoon,
    }
}

/// What follows a refused typed answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Refusal {
    /// It goes back to the model with what is wrong, and the model answers again.
    Retry,
    /// The run fails with [`AgentError::OutputInvalid`].
    Fail,
}

/// What follows the `attempt`th refused answer (counting from 1), when `max_retries` may be
/// sent back.
pub(crate) fn refuse_answer(attempt: u32, max_retries: u32) -> Refusal {
    match attempt > max_retries {
        true => Refusal::Fail,
        false => Refusal::Retry,
    }
}

/// The result an output call gets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum OutputResult {
    /// The answer was taken.
    Received,
    /// The answer was refused: what is wrong (or, when the run fails, that it stopped).
    Refused,
    /// A later output call of the same turn: only the first counts.
    NotCounted,
    /// Made beside other calls: to be made again, alone, once their results are in.
    CallAlone,
}

impl OutputResult {
    /// Whether the result is an error for the model.
    pub(crate) fn is_error(self) -> bool {
        self != OutputResult::Received
    }
}

/// The result of the output call at `index` of a turn, made `alone` (no other call beside the
/// output calls) or not, whose first answer was `accepted` or not. Every output call gets one,
/// so the conversation stays valid whatever happened.
pub(crate) fn output_result(index: usize, alone: bool, accepted: bool) -> OutputResult {
    match (alone, index, accepted) {
        (false, _, _) => OutputResult::CallAlone,
        (true, 0, true) => OutputResult::Received,
        (true, 0, false) => OutputResult::Refused,
        (true, _, _) => OutputResult::NotCounted,
    }
}

/// Whether a turn without calls asks the stop hooks, which sent the run on `continued` times
/// already, at most `max` times a run: a hook that always says "go on" cannot keep a run
/// alive forever.
pub fn asks_stop_hooks(continued: u32, max: u32) -> bool {
    continued < max
}

/// What follows the stop hooks' answer.
#[derive(Debug, PartialEq)]
pub enum AfterStop {
    /// The run ends.
    Finish,
    /// The message joins the conversation (stored first, as a prompt) and the run sends its
    /// next request.
    GoOn(String),
}

/// What follows a turn without calls whose stop hooks answered `go_on` (the first hook's
/// message that has the run go on), or were not asked (`None`).
pub fn after_stop(go_on: Option<String>) -> AfterStop {
    go_on.map_or(AfterStop::Finish, AfterStop::GoOn)
}

/// What the model reads of a call that did not run because the run stopped with `error` (a
/// spent budget) after the turn that asked for it.
pub fn not_run_message(error: &AgentError) -> String {
    let reason = match error {
        AgentError::BudgetExceeded { limit_usd, .. } => {
            format!("it reached its budget of ${limit_usd:.2}")
        }
        AgentError::TokenLimitExceeded { limit, .. } => {
            format!("it reached its limit of {limit} tokens")
        }
        other => other.to_string(),
    };
    format!(
        "This call did not run: the run stopped because {reason}. Nothing was done; ask the user \
         before trying it again."
    )
}

#[cfg(test)]
#[path = "step_tests.rs"]
mod tests;
