//! The context window's effects (see `context.rs` for what it keeps and why): before each
//! model turn, clearing old tool results or compacting the conversation, each change stored
//! before the view uses it; when to do either is decided in `step.rs`.

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

use super::context::{
    CompactRequest, MIN_CLEARED_CHARS, SUMMARY_INSTRUCTIONS, build_view, choose_cut, content_chars,
    kept_from,
};
use super::error::AgentError;
use super::events::{AgentEvent, Emit, RunResult};
use super::inner::AgentInner;
use super::step::{self, FlushPoint, Recorded};
use crate::model::{
    History, Message, MessageContent, ModelError, ModelEvent, ModelRequest, ModelResponse, Role,
};
use crate::session::{Compaction, Record, push_user_message_to};

impl AgentInner {
    /// The window to stay inside, when it is managed.
    fn context_window(&self) -> Option<u64> {
        let settings = &self.config.context;
        let model = self.ledger.info().map(|info| info.context_window);
        step::context_window(settings.compaction, settings.window, model)
    }

    /// When the view of a request's prompt changes, for `window`.
    fn thresholds(&self, window: u64) -> Result<step::Thresholds, AgentError> {
        let room = step::prompt_room(window, self.config.model.max_tokens)?;
        let settings = &self.config.context;
        Ok(step::Thresholds::of(
            room,
            settings.clear_at,
            settings.clear_to,
            settings.compact_at,
            settings.keep_recent,
        ))
    }

    /// The messages the next request is sent: `messages` as the view stands, after clearing
    /// tool results or compacting when the request would be too large (see the module docs).
    pub(crate) async fn context_view(
        &self,
        messages: &History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<History, AgentError> {
        let Some(window) = self.context_window() else {
            return Ok(messages.clone());
        };
        let at = self.thresholds(window)?;
        let mut tokens = self.estimate(messages);
        if tokens > at.clear_above
            && self
                .clear_results(messages, tokens, at.clear_to, emit)
                .await?
        {
            tokens = self.estimate(messages);
        }
        if tokens > at.compact_above
            && self
                .compact(messages, tokens, window, false, result, emit, cancel)
                .await?
        {
            // The summary was billed: a budget it used up stops the run before the turn.
            self.ledger.check(result)?;
        }
        Ok(build_view(messages, &self.context.view()))
    }

    /// After the provider refused a request as too long: compacts once, whatever the
    /// estimate says. `true` when it did, and the request may be sent again.
    pub(crate) async fn compact_after(
        &self,
        error: &AgentError,
        messages: &History,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<bool, AgentError> {
        let AgentError::Model(ModelError::PromptTooLong { .. }) = error else {
            return Ok(false);
        };
        let Some(window) = self.context_window() else {
            return Ok(false);
        };
        let at = self.thresholds(window)?;
        let tokens = self.estimate(messages);
        self.clear_results(messages, tokens, at.clear_to, emit)
            .await?;
        let tokens = self.estimate(messages);
        self.compact(messages, tokens, window, true, result, emit, cancel)
            .await
    }

    /// The estimated size, in tokens, of a request sending `messages` as the view stands.
    fn estimate(&self, messages: &History) -> u64 {
        let system = self
            .config
            .model
            .system_prompt
            .as_deref()
            .map_or(0, str::len);
        self.context.estimate(messages, system, self.specs())
    }

    /// Clears, in one batch, the results in the view oldest first until the request (of
    /// `tokens` now) is estimated under `low`: never the most recent ones, nor those the
    /// model has not read yet. `true` when any was cleared.
    async fn clear_results(
        &self,
        messages: &History,
        tokens: u64,
        low: u64,
        emit: &Emit,
    ) -> Result<bool, AgentError> {
        let view = self.context.view();
        let start = kept_from(messages, &view);
        // The results after the model's last turn go to it for the first time.
        let read = messages
            .iter()
            .rposition(|message| message.role == Role::Assistant)
            .unwrap_or(0);
        let results: Vec<(&str, usize, bool)> = messages
            .iter()
            .enumerate()
            .skip(start)
            .flat_map(|(index, message)| message.content.iter().map(move |block| (index, block)))
            .filter_map(|(index, block)| match block {
                MessageContent::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => Some((tool_use_id.as_str(), content_chars(content), index < read)),
                _ => None,
            })
            .collect();
        let keep = self.config.context.keep_tool_results;
        let ids = step::results_to_clear(
            &results,
            keep,
            tokens,
            low,
            &view.cleared,
            MIN_CLEARED_CHARS,
        );
        if ids.is_empty() {
            return Ok(false);
        }
        self.recorder
            .write(Recorded::ViewChange, || Record::ToolResultsCleared {
                ids: ids.clone(),
            })
            .await?;
        let count = ids.len();
        self.context.update(|state| state.cleared.extend(ids));
        emit(AgentEvent::ToolResultsCleared { count });
        Ok(true)
    }

    /// Replaces the older part of the view by a summary the model writes. `false` when there
    /// is nothing to compact or a hook vetoed it.
    #[allow(clippy::too_many_arguments)]
    async fn compact(
        &self,
        messages: &History,
        tokens_before: u64,
        window: u64,
        forced: bool,
        result: &mut RunResult,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> Result<bool, AgentError> {
        let view = self.context.view();
        let from = kept_from(messages, &view);
        let keep_tokens = self.thresholds(window)?.keep_recent;
        let Some(cut) = choose_cut(messages, from, keep_tokens) else {
            return Ok(false);
        };
        let request = CompactRequest {
            tokens: tokens_before,
            window,
            messages: cut - from,
            forced,
        };
        let mut instructions = SUMMARY_INSTRUCTIONS.to_owned();
        let Ok(more) = self.config.hooks.check_compact(&request).await else {
            return Ok(false);
        };
        for more in more {
            instructions.push_str("\n\n");
            instructions.push_str(&more);
        }

        // The older part as the model sees it now (an earlier summary, cleared results), then
        // the instructions. The tools go too: providers refuse tool_use blocks in a request
        // without tools, and the same prefix lets the provider's cache serve it.
        let older: Vec<Message> = messages.iter().take(cut).cloned().collect();
        let mut older = build_view(&History::from(older), &view);
        push_user_message_to(&mut older, Message::user(instructions));
        let summary_request = ModelRequest {
            system: self.config.model.system_prompt.clone(),
            messages: older,
            tools: self.specs(),
            max_tokens: self.config.model.max_tokens,
            temperature: self.config.model.temperature,
            output: None,
            // Its prefix is the requests' before it: the cache serves it.
            cache: self.config.prompt_cache(self.ledger.info()),
            thinking: self.config.model.thinking,
            effort: self.config.model.effort,
        };
        let response = self.summarise(&summary_request, cancel).await?;
        // Billed like a turn: in the run's and the agent's totals, and stored with the
        // compaction (below) so that a resumed agent's totals count it too.
        let usage = response.usage;
        result.usage += usage;
        let cost_usd = self
            .ledger
            .add_turn(usage, response.model.as_deref(), result);
        self.recorder
            .write(Recorded::ModelTurn, || Record::Usage { usage })
            .await?;
        emit(AgentEvent::Usage(result.usage));
        let summary = Message {
            role: Role::Assistant,
            content: response.content,
        }
        .text();
        let summary = summary.trim();
        if summary.is_empty() {
            self.recorder.flush_at(FlushPoint::Stop).await?;
            return Err(ModelError::stream(
                "the model answered the request to summarise the conversation (to compact it) \
                 with no text",
            )
            .into());
        }
        let compaction = Compaction {
            summary: summary.to_owned(),
            first_kept: cut,
        };
        self.recorder
            .write(Recorded::ViewChange, || Record::Compacted {
                summary: compaction.summary.clone(),
                first_kept: compaction.first_kept,
            })
            .await?;
        self.context
            .update(|state| state.compaction = Some(compaction));
        let tokens_after = self.estimate(messages);
        emit(AgentEvent::Compacted {
            tokens_before,
            tokens_after,
            usage,
            cost_usd,
        });
        Ok(true)
    }

    /// The summary request's answer, its stream kept from the app's events.
    async fn summarise(
        &self,
        request: &ModelRequest,
        cancel: &CancellationToken,
    ) -> Result<ModelResponse, AgentError> {
        let mut stream = self.model.stream(request);
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(AgentError::Cancelled),
                next = stream.next() => next,
            };
            match next {
                Some(Ok(ModelEvent::Completed(response))) => return Ok(response),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.into()),
                None => {
                    return Err(ModelError::stream(
                        "the stream of the summary request ended without a complete answer",
                    )
                    .into());
                }
            }
        }
    }
}
