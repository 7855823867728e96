//! One model turn, as the driver does it: the request, streamed (read-only calls may start
//! while it streams, `early.rs`), then the turn kept (stored, counted), its typed answer
//! looked for (`output.rs`), and its calls run (`executor.rs`), answered as not run when a
//! budget stops the run, or the stop hooks asked. `step.rs` decides which.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::early::EarlyCalls;
use super::error::AgentError;
use super::events::{AgentEvent, Emit, RunResult};
use super::executor::{self, Outcome};
use super::hooks::StopContext;
use super::inner::AgentInner;
use super::output::{OutputSpec, OutputStep};
use super::spans;
use super::step::{self, AfterStop, AfterTurn, FlushPoint, Recorded};
use crate::ToolOutput;
use crate::model::{
    History, Message, MessageContent, ModelError, ModelEvent, ModelRequest, ModelResponse, Role,
    ToolUse,
};
use crate::session::{Record, SessionError, push_user_message_to};

/// What a run keeps between its turns.
#[derive(Default)]
pub(super) struct Progress {
    /// Typed answers refused so far.
    pub(super) refused: u32,
    /// Times the stop hooks had the run go on.
    pub(super) stop_continued: u32,
    /// A request refused as too long is sent again once, after a compaction; a turn that
    /// then arrives allows the next refusal its own compaction.
    pub(super) compacted_for_overflow: bool,
}

/// A turn that has arrived: the model's answer, the calls it started early, and the typed
/// answer the run asks for, if any.
pub(super) type Arrived<'a, 'o> = (ModelResponse, EarlyCalls<'a>, Option<&'o OutputSpec>);

/// The turn a budget stopped: the error, its calls, the results it has already (by call id:
/// stored ones, then outcomes of calls that ran), and the calls that started early.
pub(super) type StoppedTurn<'a> = (
    AgentError,
    &'a [&'a ToolUse],
    HashMap<String, MessageContent>,
    Vec<Outcome>,
    &'a [String],
);

impl AgentInner {
    /// Sends the next request, with the messages of `view`, and streams its answer; calls
    /// that may start early are handed to the [`EarlyCalls`] returned, whose turn's message
    /// will be message `at`. When it fails they are cancelled and awaited first.
    pub(super) async fn request<'a>(
        self: &'a Arc<Self>,
        view: History,
        output: Option<&OutputSpec>,
        at: usize,
        emit: &'a Emit,
        cancel: &'a CancellationToken,
    ) -> Result<(ModelResponse, EarlyCalls<'a>), AgentError> {
        let request = ModelRequest {
            system: self.config.model.system_prompt.clone(),
            messages: view,
            tools: self.specs(),
            max_tokens: self.config.model.max_tokens,
            temperature: self.config.model.temperature,
            output: output.map(|spec| spec.format.clone()),
            cache: self.config.prompt_cache(self.ledger.info()),
            thinking: self.config.model.thinking,
            effort: self.config.model.effort,
        };
        let span = spans::chat(self, &request);
        // Read-only calls may start while the turn streams (see `early`).
        let mut early = EarlyCalls::new(self, emit, cancel, at);
        let response = self
            .model_turn(&request, emit, cancel, &mut early)
            .instrument(span.clone())
            .await;
        spans::end_chat(&span, &response);
        match response {
            Ok(response) => Ok((response, early)),
            Err(error) => {
                early.abandon().await;
                Err(error)
            }
        }
    }

    /// Takes a turn that has arrived: keeps it, then ends the run, goes on to the next
    /// request, or runs its calls first, as [`step::after_turn`] decides.
    pub(super) async fn take_turn(
        self: &Arc<Self>,
        (response, early, output): Arrived<'_, '_>,
        progress: &mut Progress,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<ControlFlow<()>, AgentError> {
        let assistant = match self.keep_turn(response, messages, result, emit).await {
            Ok(assistant) => assistant,
            Err(error) => {
                early.abandon().await;
                return Err(error.into());
            }
        };
        let calls: Vec<&ToolUse> = assistant.tool_uses().collect();
        // Calls started while the turn streamed: their records, held until now, follow
        // the turn; they end before the typed answer is looked at or other calls run.
        let started: Vec<String> = early.started().to_vec();
        let mut outcomes = early.finish().await;
        let to_answer: Vec<ToolUse>;
        let (calls, answered) = match output {
            None => (calls, HashMap::new()),
            Some(spec) => {
                let text = assistant.text();
                let refused = &mut progress.refused;
                match self
                    .take_output(spec, &calls, &text, refused, messages, result, emit)
                    .await?
                {
                    OutputStep::Accepted => return Ok(ControlFlow::Break(())),
                    OutputStep::Retry => return Ok(ControlFlow::Continue(())),
                    OutputStep::Run { calls, answered } => {
                        to_answer = calls;
                        (to_answer.iter().collect(), answered)
                    }
                }
            }
        };
        match step::after_turn(calls.len(), self.ledger.stop(result)) {
            AfterTurn::Finish => self.finish_or_go_on(progress, messages, result).await,
            AfterTurn::StopForBudget(error) => {
                let stop = (error, &calls[..], answered, outcomes, &started[..]);
                let stopped = self.stop_for_budget(stop, messages, result).await;
                stopped.map(|()| ControlFlow::Break(()))
            }
            AfterTurn::RunCalls => {
                result.tool_calls += calls.len() - answered.len();
                // The executor stores each batch's starts (with the staged turn) before the
                // batch runs and each result as its call ends, so all results are stored
                // before the next request.
                self.note_call_message(messages);
                let to_run = step::to_run(&calls, &answered, &started);
                let ran = executor::execute(self, &to_run, &Default::default(), emit, cancel).await;
                outcomes.extend(ran);
                self.take_outcomes(&calls, answered, outcomes, messages, result)?;
                match cancel.is_cancelled() {
                    true => Err(AgentError::Cancelled),
                    false => Ok(ControlFlow::Continue(())),
                }
            }
        }
    }

    /// Counts a turn that has arrived (usage, cost, events) and keeps it: in the history, and
    /// staged for the store. Only a whole turn is stored: one cut mid-stream never got here.
    /// It goes to the store with the start of its first calls (one commit): no call runs
    /// before its turn is stored.
    async fn keep_turn(
        &self,
        response: ModelResponse,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
    ) -> Result<Arc<Message>, SessionError> {
        result.usage += response.usage;
        let served_by = response.model.as_deref();
        let cost_usd = self.ledger.add_turn(response.usage, served_by, result);
        result.stop_reason = Some(response.stop_reason.clone());
        emit(AgentEvent::TurnCompleted {
            turn: result.turns,
            stop_reason: response.stop_reason,
            usage: response.usage,
            cost_usd,
        });
        emit(AgentEvent::Usage(result.usage));
        // Shared with the history: the calls are borrowed from it, not copied.
        let assistant = Arc::new(Message {
            role: Role::Assistant,
            content: response.content,
        });
        if assistant.tool_uses().next().is_none() {
            result.text = assistant.text();
        }
        if !assistant.content.is_empty() {
            let turn = || Record::model_turn(Message::clone(&assistant));
            self.recorder.write(Recorded::ModelTurn, turn).await?;
            messages.push_shared(assistant.clone());
        }
        let usage = || Record::Usage {
            usage: response.usage,
        };
        self.recorder.write(Recorded::ModelTurn, usage).await?;
        Ok(assistant)
    }

    /// A turn without calls: the run ends, unless a stop hook has it go on with a message.
    async fn finish_or_go_on(
        &self,
        progress: &mut Progress,
        messages: &mut History,
        result: &RunResult,
    ) -> Result<ControlFlow<()>, AgentError> {
        self.recorder.flush_at(FlushPoint::NoCalls).await?;
        let hooks = &self.config.hooks;
        let continued = progress.stop_continued;
        let go_on = match step::asks_stop_hooks(continued, hooks.max_stop_continuations) {
            true => {
                let (agent, text) = (&self.agent_id, &result.text);
                let stop = StopContext {
                    agent,
                    text,
                    continued,
                };
                hooks.check_stop(&stop).await
            }
            false => None,
        };
        let AfterStop::GoOn(message) = step::after_stop(go_on) else {
            return Ok(ControlFlow::Break(()));
        };
        progress.stop_continued += 1;
        let message = Message::user(message);
        self.recorder
            .write(Recorded::Prompt, || Record::user(message.clone()))
            .await?;
        push_user_message_to(messages, message);
        Ok(ControlFlow::Continue(()))
    }

    /// Puts one turn's results (`known` ones stored earlier, then the `outcomes` just run) in
    /// a user message, in call order. Fails when a record could not be stored, or when calls
    /// stopped for deferred approvals: then no message is added, the turn stays open.
    pub(super) fn take_outcomes(
        &self,
        calls: &[&ToolUse],
        mut known: HashMap<String, crate::model::MessageContent>,
        outcomes: Vec<executor::Outcome>,
        messages: &mut History,
        result: &mut RunResult,
    ) -> Result<(), AgentError> {
        let mut store_error = None;
        let mut pending = Vec::new();
        // Usually every call was answered just now, in call order: the blocks are the
        // message as they come. Otherwise they are put in call order by id.
        let mut in_order = known.is_empty() && outcomes.len() == calls.len();
        let mut content = Vec::with_capacity(calls.len());
        for (index, outcome) in outcomes.into_iter().enumerate() {
            if let Some(error) = outcome.error {
                result.errors.push(error);
            }
            if store_error.is_none() {
                store_error = outcome.store_error;
            }
            let next_in_order = calls.get(index).is_some_and(|c| c.id == outcome.call_id);
            if in_order && !(next_in_order && outcome.deferred.is_none()) {
                // Those taken in order so far go back under their ids.
                in_order = false;
                for (call, block) in calls.iter().zip(content.drain(..)) {
                    known.insert(call.id.clone(), block);
                }
            }
            match outcome.deferred {
                Some(approval) => pending.push(approval),
                None if in_order => content.push(outcome.block),
                None => {
                    known.insert(outcome.call_id, outcome.block);
                }
            }
        }
        if !in_order {
            content.extend(calls.iter().filter_map(|c| known.remove(&c.id)));
        }
        if let Some(error) = store_error {
            // The executor answered every call (in memory) even then: keep the history valid.
            if pending.is_empty() {
                messages.push(Message {
                    role: Role::User,
                    content,
                });
            }
            return Err(error.into());
        }
        if !pending.is_empty() {
            return Err(AgentError::ApprovalsPending(pending));
        }
        messages.push(Message {
            role: Role::User,
            content,
        });
        Ok(())
    }

    /// Ends a run whose budget the last turn reached: its calls that did not start are
    /// answered as not run (and stored), so the history stays valid, and the run fails with
    /// `error`. `known` and `outcomes` are the results the turn has already.
    pub(super) async fn stop_for_budget(
        &self,
        (error, calls, known, mut outcomes, started): StoppedTurn<'_>,
        messages: &mut History,
        result: &mut RunResult,
    ) -> Result<(), AgentError> {
        result.tool_calls += started.len();
        let output = ToolOutput::error(step::not_run_message(&error));
        let mut stored = Ok(());
        for call in calls {
            if known.contains_key(&call.id) || started.contains(&call.id) {
                continue;
            }
            let block = MessageContent::ToolResult {
                tool_use_id: call.id.clone(),
                content: output.content.clone(),
                is_error: true,
            };
            let not_run = || Record::ToolResult {
                block: block.clone(),
            };
            let written = self.recorder.write(Recorded::NotRun, not_run).await;
            stored = stored.and(written);
            outcomes.push(Outcome {
                call_id: call.id.clone(),
                block,
                error: None,
                store_error: None,
                deferred: None,
            });
        }
        // The turn (staged) and its answers go to the store together; the answers join the
        // history even when they could not be stored, which ends the run with that error.
        let stored = stored.and(self.recorder.flush_at(FlushPoint::Stop).await);
        self.take_outcomes(calls, known, outcomes, messages, result)?;
        stored?;
        Err(error)
    }

    /// One model turn, streamed; calls that may start early are handed to `early` as their
    /// blocks arrive, and run while the rest streams.
    async fn model_turn(
        &self,
        request: &ModelRequest,
        emit: &Emit,
        cancel: &CancellationToken,
        early: &mut EarlyCalls<'_>,
    ) -> Result<ModelResponse, AgentError> {
        let mut stream = self.model.stream(request);
        // One waiter on the token for the whole turn, polled only while nothing else is
        // ready: registering a fresh one for every event cost more than the event itself.
        let cancelled = cancel.cancelled();
        tokio::pin!(cancelled);
        loop {
            // Checked before each event all the same: a stream that is always ready (a
            // scripted model, a buffered body) must not outrun a cancellation.
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
            let next = tokio::select! {
                biased;
                _ = early.next_done(), if early.is_running() => continue,
                next = stream.next() => next,
                _ = &mut cancelled => return Err(AgentError::Cancelled),
            };
            match next {
                Some(Ok(ModelEvent::TextDelta(text))) => emit(AgentEvent::TextDelta(text)),
                Some(Ok(ModelEvent::ThinkingDelta(text))) => emit(AgentEvent::ThinkingDelta(text)),
                Some(Ok(ModelEvent::ToolUseStarted { id, .. })) => early.announce(&id),
                Some(Ok(ModelEvent::ToolUseCompleted(call))) => early.offer(call),
                Some(Ok(ModelEvent::Completed(response))) => return Ok(response),
                Some(Ok(ModelEvent::ModelFallback { from, to, reason })) => {
                    self.note_fallback(from, to, reason, emit).await?;
                }
                Some(Err(error)) => return Err(error.into()),
                None => {
                    return Err(ModelError::stream(
                        "the model's stream ended without a complete turn",
                    )
                    .into());
                }
            }
        }
    }
}

impl AgentInner {
    /// A request moved on to a fallback model: said, and staged to be stored with the turn
    /// it brings (a request that fails in the end leaves no record).
    async fn note_fallback(
        &self,
        from: String,
        to: String,
        reason: String,
        emit: &Emit,
    ) -> Result<(), AgentError> {
        tracing::warn!(%from, %to, %reason, "falling back to another model");
        let record = || Record::ModelFallback {
            from: from.clone(),
            to: to.clone(),
            reason: reason.clone(),
        };
        self.recorder.write(Recorded::ModelTurn, record).await?;
        emit(AgentEvent::ModelFallback { from, to, reason });
        Ok(())
    }
}
