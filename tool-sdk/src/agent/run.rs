//! The loop of one run: the prompt, then model turns and tool calls until the model stops, a
//! limit is hit or the run is cancelled; and the finishing of a turn that waited for approvals.
//! What happens next is decided in `step.rs`; this file and `turn.rs` do it.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::error::{AgentError, ConfigError, StoreNeed};
use super::events::{AgentEvent, Emit, RunResult};
use super::executor;
use super::hooks::SessionStart;
use super::inner::AgentInner;
use super::output::OutputSpec;
use super::spans;
use super::step::{self, Recorded, Start};
use super::turn::Progress;
use crate::AgentId;
use crate::model::{History, Message, OutputFormat, Role, ToolUse};
use crate::session::{Record, push_user_message_to};

impl AgentInner {
    /// One run: the loop of model turns and tool calls. `None` asks the model to answer the
    /// conversation as it stands. Its span (`invoke_agent`) is a child of the current one: a
    /// sub-agent's, of the Task call that runs it.
    pub(crate) async fn run(
        self: &Arc<Self>,
        prompt: Option<String>,
        emit: Emit,
        cancel: CancellationToken,
    ) -> RunResult {
        self.run_for(prompt, None, emit, cancel).await
    }

    /// [`run`](Self::run), asking for a typed answer when `output` is given
    /// (`output.rs`).
    pub(crate) async fn run_for(
        self: &Arc<Self>,
        prompt: Option<String>,
        output: Option<&OutputSpec>,
        emit: Emit,
        cancel: CancellationToken,
    ) -> RunResult {
        let span = spans::invoke_agent(self);
        let result = self
            .run_in_span(prompt, output, emit, cancel)
            .instrument(span.clone())
            .await;
        spans::end_run(&span, &result);
        result
    }

    async fn run_in_span(
        self: &Arc<Self>,
        prompt: Option<String>,
        output: Option<&OutputSpec>,
        emit: Emit,
        cancel: CancellationToken,
    ) -> RunResult {
        let started = Instant::now();
        let mut messages = self.messages.lock().await;
        let start = self
            .session_start
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(source) = start {
            let session_id = self.recorder.stored_id();
            let start = SessionStart { session_id, source };
            self.config.hooks.session_start(start).await;
        }
        let written_before = self.files.written().len();
        let mut result = RunResult::default();
        // A run goes on only from the conversation as stored: one that an earlier failure
        // left behind in memory is taken back from the store first.
        let ran = match self.reload_if_unstored(&mut messages).await {
            Ok(()) => {
                self.turns(prompt, output, &mut messages, &mut result, &emit, &cancel)
                    .await
            }
            Err(error) => Err(error),
        };
        if let Err(error) = ran {
            result.error = Some(error);
        }
        // A record that could not be stored stopped the run before its next effect; what
        // memory holds beyond the store goes, so the two agree again (or, if the store still
        // fails, at the start of the next run).
        if let Err(error) = self.reload_if_unstored(&mut messages).await {
            tracing::warn!(%error, "the conversation could not be read back from the store");
        }
        result.messages = messages.clone();
        result.files_modified = self.files.written().split_off(written_before);
        result.duration = started.elapsed();
        result
    }

    /// The prompt, then model turns and tool calls until the model stops, a limit is hit or
    /// the run is cancelled. Each step is stored before any effect that follows it (a call
    /// starts only once its turn and its start are stored); a record that cannot be stored
    /// ends the run before its next effect, and [`run_in_span`](Self::run_in_span) then takes
    /// the conversation in memory back from the store (or, if the store is still down, the
    /// next run does before anything else): no run goes on from a history the store lacks.
    async fn turns(
        self: &Arc<Self>,
        prompt: Option<String>,
        output: Option<&OutputSpec>,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        if output.is_some()
            && self
                .specs()
                .iter()
                .any(|s| s.name == OutputFormat::TOOL_NAME)
        {
            return Err(ConfigError::OutputToolTaken(OutputFormat::TOOL_NAME).into());
        }
        self.begin(prompt, messages, result, emit, cancel).await?;
        let mut progress = Progress::default();
        loop {
            // A run cancelled before (or between) turns sends no further request: the stream
            // of a model that answers at once would otherwise win the race in `model_turn`.
            let (turns, max_turns) = (result.turns, self.config.limits.max_turns);
            let budget = self.ledger.stop(result);
            step::before_request(cancel.is_cancelled(), turns, max_turns, budget)?;
            result.turns += 1;
            emit(AgentEvent::TurnStarted { turn: result.turns });
            let view = self.context_view(messages, result, emit, cancel).await?;
            let at = messages.len();
            let (response, early) = match self.request(view, output, at, emit, cancel).await {
                Ok(turn) => {
                    progress.compacted_for_overflow = false;
                    turn
                }
                Err(error) => {
                    if step::compact_and_retry(&error, progress.compacted_for_overflow)
                        && self
                            .compact_after(&error, messages, result, emit, cancel)
                            .await?
                    {
                        progress.compacted_for_overflow = true;
                        result.turns -= 1;
                        continue;
                    }
                    return Err(error);
                }
            };
            let turn = (response, early, output);
            let next = self
                .take_turn(turn, &mut progress, messages, result, emit, cancel)
                .await?;
            if let ControlFlow::Break(()) = next {
                return Ok(());
            }
        }
    }

    /// Takes the run's prompt (`None`: go on from the conversation as it stands), or finishes
    /// the turn that waited for deferred approvals.
    async fn begin(
        self: &Arc<Self>,
        prompt: Option<String>,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        let open_turn = messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.tool_uses().next().is_some());
        let ends_with_user = messages.last().is_some_and(|m| m.role == Role::User);
        match (
            step::start(prompt.is_some(), open_turn, ends_with_user),
            prompt,
        ) {
            (Start::WaitForApprovals, _) => {
                let pending = self.recorder.stored_turn().await?.pending;
                return Err(match pending.is_empty() {
                    false => AgentError::ApprovalsPending(pending),
                    true => AgentError::ContinueFirst,
                });
            }
            (Start::FinishDeferred, _) => {
                self.finish_deferred_turn(messages, result, emit, cancel)
                    .await?
            }
            (Start::Prompt, Some(prompt)) => {
                let contexts = self
                    .config
                    .hooks
                    .check_prompt(&prompt)
                    .await
                    .map_err(AgentError::PromptBlocked)?;
                let mut prompt = Message::user(prompt);
                prompt.content.extend(
                    contexts
                        .into_iter()
                        .map(|text| crate::model::MessageContent::Text { text }),
                );
                self.recorder
                    .write(Recorded::Prompt, || Record::user(prompt.clone()))
                    .await?;
                // Joins tool results (or an unanswered prompt) the conversation may end with:
                // providers refuse two user messages in a row.
                push_user_message_to(messages, prompt);
            }
            (Start::Continue, _) => {}
            // (`Start::Prompt` always comes with its prompt.)
            (Start::NothingToContinue | Start::Prompt, _) => {
                return Err(AgentError::NothingToContinue);
            }
        }
        Ok(())
    }

    /// The calls about to run are the last message's: file checkpoints are made at it.
    pub(super) fn note_call_message(&self, messages: &History) {
        if self.agent_id == AgentId::Main {
            self.call_message
                .store(messages.len().saturating_sub(1), Ordering::Relaxed);
        }
    }

    /// After an append failed ([`recorder`](super::recorder)), takes the conversation back
    /// from the store: what memory holds beyond it is dropped, calls whose start was stored
    /// and whose result was not are answered as a resume answers them, and appends go through
    /// again. Does nothing when every append succeeded.
    async fn reload_if_unstored(&self, messages: &mut History) -> Result<(), AgentError> {
        if let Some(restored) = self.recorder.reload().await? {
            self.context.restore(&restored);
            *messages = restored.messages.into();
        }
        Ok(())
    }

    /// Finishes the last turn, stopped for deferred approvals, from what the store says (which
    /// another process may have added to): see [`Agent::continue_run`](super::Agent::continue_run).
    async fn finish_deferred_turn(
        self: &Arc<Self>,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        if self.recorder.stored_id().is_none() {
            // Deferring needs a store (checked when the agent is built); never drop the
            // conversation in memory for the empty one a missing store would give.
            return Err(ConfigError::NoSessionStore {
                need: StoreNeed::Continue,
            }
            .into());
        }
        let restored = self.recorder.stored_turn().await?;
        if !restored.pending.is_empty() {
            return Err(AgentError::ApprovalsPending(restored.pending));
        }
        *messages = restored.messages.into();
        let Some(turn) = restored.deferred else {
            // Another process finished the turn already; the stored history is the truth.
            return match messages.last() {
                Some(last) if last.role == Role::User => Ok(()),
                _ => Err(AgentError::NothingToContinue),
            };
        };
        let calls: Vec<&ToolUse> = turn.calls.iter().collect();
        let to_run: Vec<&ToolUse> = calls
            .iter()
            .filter(|call| !turn.results.contains_key(&call.id))
            .copied()
            .collect();
        result.tool_calls += to_run.len();
        self.note_call_message(messages);
        let answers = executor::Answers {
            permissions: Some(&turn.answers),
            replies: Some(&turn.replies),
        };
        let outcomes = executor::execute(self, &to_run, &answers, emit, cancel).await;
        self.take_outcomes(&calls, turn.results, outcomes, messages, result)
    }
}
