//! The loop of one run: the prompt, then model turns and tool calls until the model stops, a
//! limit is hit or the run is cancelled; and the finishing of a turn that waited for approvals.

use std::borrow::Cow;

use super::early::EarlyCalls;
use super::*;
use crate::model::ToolUse;

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
        output: Option<&output::OutputSpec>,
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
        output: Option<&output::OutputSpec>,
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
            let session_id = self.store.as_ref().map(|_| &*self.session_id);
            let event = SessionEvent::Start { session_id, source };
            self.config.run_hooks.session_event(event).await;
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
        output: Option<&output::OutputSpec>,
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
        let mut refused = 0;
        let mut stop_continued = 0;
        // A request refused as too long is sent again once, after a compaction; a turn that
        // then arrives allows the next refusal its own compaction.
        let mut compacted_for_overflow = false;
        let open_turn = messages
            .last()
            .is_some_and(|m| m.role == Role::Assistant && m.tool_uses().next().is_some());
        match prompt {
            // The last turn's calls wait for deferred approvals: a prompt now would leave them
            // unanswered, which providers refuse.
            Some(_) if open_turn => {
                let pending = self.stored_turn().await?.pending;
                return Err(match pending.is_empty() {
                    false => AgentError::ApprovalsPending(pending),
                    true => AgentError::ContinueFirst,
                });
            }
            None if open_turn => {
                self.finish_deferred_turn(messages, result, emit, cancel)
                    .await?
            }
            Some(prompt) => {
                let contexts = self
                    .config
                    .run_hooks
                    .check_prompt(&prompt)
                    .await
                    .map_err(AgentError::PromptBlocked)?;
                let mut prompt = Message::user(prompt);
                prompt.content.extend(
                    contexts
                        .into_iter()
                        .map(|text| crate::model::MessageContent::Text { text }),
                );
                self.record(|| Record::user(prompt.clone())).await?;
                // Joins tool results (or an unanswered prompt) the conversation may end with:
                // providers refuse two user messages in a row.
                push_user_message_to(messages, prompt);
            }
            None if messages.last().is_some_and(|m| m.role == Role::User) => {}
            None => {
                return Err(AgentError::NothingToContinue);
            }
        }

        loop {
            // A run cancelled before (or between) turns sends no further request: the stream
            // of a model that answers at once would otherwise win the race in `model_turn`.
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
            if result.turns == self.config.max_turns {
                return Err(AgentError::MaxTurns(self.config.max_turns));
            }
            self.ledger.check(result)?;
            result.turns += 1;
            let turn = result.turns;
            emit(AgentEvent::TurnStarted { turn });
            let view = self.context_view(messages, result, emit, cancel).await?;
            let request = ModelRequest {
                system: self.config.system_prompt.clone(),
                messages: view,
                tools: self.specs(),
                max_tokens: self.config.max_tokens,
                temperature: self.config.temperature,
                output: output.map(|spec| spec.format.clone()),
                cache: self.config.prompt_cache(self.ledger.info()),
            };
            let span = spans::chat(self, &request);
            // Read-only calls may start while the turn streams (see `early`).
            let mut early = EarlyCalls::new(self, emit, cancel, messages.len());
            let response = self
                .model_turn(&request, emit, cancel, &mut early)
                .instrument(span.clone())
                .await;
            spans::end_chat(&span, &response);
            let response = match response {
                Ok(response) => {
                    compacted_for_overflow = false;
                    response
                }
                Err(error) => {
                    early.abandon().await;
                    if !compacted_for_overflow
                        && self
                            .compact_after(&error, messages, result, emit, cancel)
                            .await?
                    {
                        compacted_for_overflow = true;
                        result.turns -= 1;
                        continue;
                    }
                    return Err(error);
                }
            };
            result.usage += response.usage;
            let cost_usd = self.ledger.add_turn(response.usage, result);
            result.stop_reason = Some(response.stop_reason.clone());
            emit(AgentEvent::TurnCompleted {
                turn,
                stop_reason: response.stop_reason.clone(),
                usage: response.usage,
                cost_usd,
            });
            emit(AgentEvent::Usage(result.usage));

            // Shared with the history: the calls below are borrowed from it, not copied.
            let assistant = Arc::new(Message {
                role: Role::Assistant,
                content: response.content,
            });
            let calls: Vec<&ToolUse> = assistant.tool_uses().collect();
            let text = assistant.text();
            if calls.is_empty() {
                result.text = text.clone();
            }
            // Only a whole turn is stored: one cut mid-stream never got here. It is staged,
            // and goes to the store with the start of its first calls (one commit): no call
            // runs before its turn is stored.
            if !assistant.content.is_empty() {
                self.stage(|| Record::model_turn(Message::clone(&assistant)));
                messages.push_shared(assistant.clone());
            }
            self.stage(|| Record::Usage {
                usage: response.usage,
            });
            // Calls started while the turn streamed: their records, held until now, follow
            // the turn; they end before the typed answer is looked at or other calls run.
            let started: Vec<String> = early.started().to_vec();
            let mut outcomes = early.finish().await;
            let to_answer: Vec<ToolUse>;
            let (calls, answered) = match output {
                None => (calls, HashMap::new()),
                Some(spec) => {
                    match self
                        .take_output(spec, &calls, &text, &mut refused, messages, result, emit)
                        .await?
                    {
                        output::OutputStep::Accepted => return Ok(()),
                        output::OutputStep::Retry => continue,
                        output::OutputStep::Run { calls, answered } => {
                            to_answer = calls;
                            (to_answer.iter().collect(), answered)
                        }
                    }
                }
            };
            if calls.is_empty() {
                self.flush().await?;
                let stop = StopContext {
                    agent: &self.agent_id,
                    text: &result.text,
                    continued: stop_continued,
                };
                match self.config.run_hooks.check_stop(&stop).await {
                    None => return Ok(()),
                    Some(message) => {
                        stop_continued += 1;
                        let message = Message::user(message);
                        self.record(|| Record::user(message.clone())).await?;
                        push_user_message_to(messages, message);
                        continue;
                    }
                }
            }

            if let Err(error) = self.ledger.check(result) {
                let stop = (error, &calls[..], answered, outcomes, &started[..]);
                return self.stop_for_budget(stop, messages, result).await;
            }
            result.tool_calls += calls.len() - answered.len();
            // The executor stores each batch's starts (with the staged turn) before the batch
            // runs and each result as its call ends, so all results are stored before the next
            // request.
            self.note_call_message(messages);
            let to_run: Cow<[_]> = match answered.is_empty() && started.is_empty() {
                true => Cow::Borrowed(&calls),
                false => calls
                    .iter()
                    .filter(|call| !answered.contains_key(&call.id) && !started.contains(&call.id))
                    .copied()
                    .collect(),
            };
            outcomes.extend(executor::execute(self, &to_run, &HashMap::new(), emit, cancel).await);
            self.take_outcomes(&calls, answered, outcomes, messages, result)?;
            if cancel.is_cancelled() {
                return Err(AgentError::Cancelled);
            }
        }
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
        let mut answers = Vec::with_capacity(outcomes.len());
        for outcome in outcomes {
            if let Some(error) = outcome.error {
                result.errors.push(error);
            }
            if store_error.is_none() {
                store_error = outcome.store_error;
            }
            match outcome.deferred {
                Some(approval) => pending.push(approval),
                None => answers.push((outcome.call_id, outcome.block)),
            }
        }
        // Usually every call was answered just now, in call order; otherwise by id.
        let in_order = known.is_empty()
            && answers.len() == calls.len()
            && answers
                .iter()
                .zip(calls)
                .all(|((id, _), call)| *id == call.id);
        let content: Vec<_> = match in_order {
            true => answers.into_iter().map(|(_, block)| block).collect(),
            false => {
                known.extend(answers);
                calls.iter().filter_map(|c| known.remove(&c.id)).collect()
            }
        };
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

    /// The calls about to run are the last message's: file checkpoints are made at it.
    fn note_call_message(&self, messages: &History) {
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
        let Some(recorder) = &self.recorder else {
            return Ok(());
        };
        if !recorder.failed() {
            return Ok(());
        }
        // Staged for the run that failed: they belong to a history that was not stored.
        self.staged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let restored = restore(&recorder.load(&self.session_id).await?);
        recorder.recovered();
        recorder
            .append_all(&self.session_id, &restored.seals)
            .await?;
        self.restore_context(&restored);
        *messages = restored.messages.into();
        Ok(())
    }

    /// The session as stored, with the seals a crash needs stored first.
    async fn stored_turn(&self) -> Result<crate::session::Restored, AgentError> {
        let Some(store) = &self.store else {
            return Ok(crate::session::Restored::default());
        };
        let restored = restore(&store.load(&self.session_id).await?);
        store.append_all(&self.session_id, &restored.seals).await?;
        Ok(restored)
    }

    /// Finishes the last turn, stopped for deferred approvals, from what the store says (which
    /// another process may have added to): see [`Agent::continue_run`].
    async fn finish_deferred_turn(
        self: &Arc<Self>,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<(), AgentError> {
        if self.store.is_none() {
            // Deferring needs a store (checked when the agent is built); never drop the
            // conversation in memory for the empty one a missing store would give.
            return Err(ConfigError::NoSessionStore {
                need: StoreNeed::Continue,
            }
            .into());
        }
        let restored = self.stored_turn().await?;
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
        let outcomes = executor::execute(self, &to_run, &turn.answers, emit, cancel).await;
        self.take_outcomes(&calls, turn.results, outcomes, messages, result)
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
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(AgentError::Cancelled),
                _ = early.next_done(), if early.is_running() => continue,
                next = stream.next() => next,
            };
            match next {
                Some(Ok(ModelEvent::TextDelta(text))) => emit(AgentEvent::TextDelta(text)),
                Some(Ok(ModelEvent::ThinkingDelta(text))) => emit(AgentEvent::ThinkingDelta(text)),
                Some(Ok(ModelEvent::ToolUseStarted { id, .. })) => early.announce(&id),
                Some(Ok(ModelEvent::ToolUseCompleted(call))) => early.offer(call),
                Some(Ok(ModelEvent::Completed(response))) => return Ok(response),
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
