//! The activities: one model turn, one tool call, and the answer to a call whose worker died.
//!
//! Each takes a session id and a position in it, reads the conversation from the store, and
//! appends what it adds; none receives or returns the conversation, so the workflow's history
//! stays linear in the number of steps. Each is idempotent against the store: an attempt that
//! finds its record already stored (an earlier attempt stored it, then its worker died before
//! reporting) returns what is stored instead of asking the model or running the tool again.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use temporalio_common::error::ApplicationFailure;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tool_sdk::agent::decisions::not_run_message;
use tool_sdk::agent::{AgentEffects, OutputNext, OutputSchema, OutputVerdict};
use tool_sdk::model::{
    Message, MessageContent, ModelEvent, ModelRequest, ModelResponse, Role, Usage,
};
use tool_sdk::pipeline::{RawInput, run_call};
use tool_sdk::session::{Record, SessionStore};
use tool_sdk::{CancellationToken, ContentBlock, ToolUpdateKind};

use crate::live::{Shown, heartbeating};
use crate::parts::{ACTIVITY_GRACE, ToolRetries};
pub use crate::payloads::{
    ApprovalAnswer, BudgetStop, CallDone, CallInput, CallPlan, ContextOutcome, PromptInput,
    RunSettings, StopInput, TurnInput, TurnOutcome, TypedAnswer,
};
use crate::questions::{Answered, Permission, StoredElicitor};
use crate::records::{find_call, is_prompt, started, stored_result, stored_turn, turn_position};
use crate::workflow::WORKER_STOPPED_MESSAGE;

/// The agent's activities, registered by [`AgentWorker`](crate::AgentWorker) with the parts
/// they run with.
pub struct AgentActivities {
    pub(crate) effects: AgentEffects,
    pub(crate) store: Arc<dyn SessionStore>,
    retries: HashMap<String, ToolRetries>,
}

impl AgentActivities {
    /// The activities of an agent's parts (built from an `AgentConfig`), with the
    /// conversation in `store`.
    pub fn new(effects: AgentEffects, store: Arc<dyn SessionStore>) -> Self {
        AgentActivities {
            effects,
            store,
            retries: HashMap::new(),
        }
    }

    /// With the tools' own retries ([`AgentParts::with_tool_retries`](crate::AgentParts)).
    pub fn with_retries(mut self, retries: HashMap<String, ToolRetries>) -> Self {
        self.retries = retries;
        self
    }
}

#[activities]
impl AgentActivities {
    /// What a run takes from the worker's config: its first activity.
    #[activity(name = "tool_sdk.run_settings")]
    pub async fn run_settings(
        self: Arc<Self>,
        _ctx: ActivityContext,
        _input: (),
    ) -> Result<RunSettings, ActivityError> {
        let config = self.effects.config();
        Ok(RunSettings {
            max_turns: config.limits.max_turns,
            hooks: !config.hooks.is_empty(),
            max_stop_continuations: config.hooks.max_stop_continuations,
            manages_context: self.effects.manages_context(),
        })
    }

    /// Before a model turn, when the config manages the context window: clears old tool
    /// results or compacts the conversation if the turn's request would not fit (the
    /// `pre_compact` hooks asked, the summary requested from the model), each change stored;
    /// the workflow counts the summary's tokens in the run's.
    #[activity(name = "tool_sdk.prepare_context")]
    pub async fn prepare_context(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: TurnInput,
    ) -> Result<ContextOutcome, ActivityError> {
        let store = &*self.store;
        let records = store.load(&input.session_id).await.map_err(retry)?;
        // The turn was taken already (this attempt's worker died after it): nothing to do.
        if stored_turn(&records, input.index as usize).is_some() {
            return Ok(ContextOutcome::default());
        }
        let (session, shared) = (&input.session_id, self.store.clone());
        let prepared = self
            .effects
            .prepare_context(session, &records, shared, input.run_usage);
        let never = CancellationToken::new();
        let usage = heartbeating(&ctx, &never, None, async {
            prepared
                .await
                .map_err(|error| fail(format!("the context could not be prepared: {error}")))
        })
        .await?;
        let mut spent = input.run_usage;
        spent += usage;
        let budget = self.effects.budget_stop(&spent).map(|error| BudgetStop {
            reason: error.to_string(),
            not_run: not_run_message(&error),
        });
        Ok(ContextOutcome { usage, budget })
    }

    /// A run's prompt: the `user_prompt_submit` hooks see it first; one they block fails the
    /// run and is not stored, else it is stored with the context they add.
    #[activity(name = "tool_sdk.submit_prompt")]
    pub async fn submit_prompt(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: PromptInput,
    ) -> Result<(), ActivityError> {
        let (store, session) = (&*self.store, input.session_id.as_str());
        let records = store.load(session).await.map_err(retry)?;
        // An earlier attempt stored it.
        if matches!(
            records.get(input.at as usize),
            Some(Record::UserMessage { .. })
        ) {
            return Ok(());
        }
        // Each run begins as an agent's first run of the session does: new, or resumed.
        self.effects.session_started(session, input.at == 0).await;
        let contexts = self
            .effects
            .check_prompt(&input.prompt)
            .await
            .map_err(|reason| fail(format!("the prompt was blocked by a hook: {reason}")))?;
        let mut prompt = Message::user(input.prompt);
        let added = contexts
            .into_iter()
            .map(|text| MessageContent::Text { text });
        prompt.content.extend(added);
        store
            .append(session, &Record::user(prompt))
            .await
            .map_err(retry)
    }

    /// One model turn: the conversation so far, read from the store, goes to the model as
    /// the agent would send it; the whole turn and its usage are stored; the workflow gets
    /// its calls, and whether the run's budget is spent.
    #[activity(name = "tool_sdk.model_turn")]
    pub async fn model_turn(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: TurnInput,
    ) -> Result<TurnOutcome, ActivityError> {
        let store = &*self.store;
        let records = store.load(&input.session_id).await.map_err(retry)?;
        if let Some((stored, usage)) = stored_turn(&records, input.index as usize) {
            // What its answer came to is stored with it, and judged the same again.
            let verdict = self.judge(&input, stored)?;
            return Ok(self.plan(stored, usage, &input, verdict.map(|v| v.next)));
        }
        // The conversation as the model is sent it: cleared or compacted first if the window
        // is managed and the request would not fit (those records stored before it is sent).
        let view = self
            .effects
            .context_view(
                &input.session_id,
                &records,
                self.store.clone(),
                input.run_usage,
            )
            .await
            .map_err(|error| fail(format!("the context could not be prepared: {error}")))?;
        let mut request = self.effects.request(view);
        request.output = input.output.as_ref().map(OutputSchema::format);
        let never = CancellationToken::new();
        let model = &**self.effects.model();
        // Its text reaches the client as it streams, in the heartbeats' details.
        let shown = Shown::text(&ctx, input.index);
        let streamed = complete(model, &request, &shown);
        let response = heartbeating(&ctx, &never, Some(&shown), streamed).await?;
        let message = Message {
            role: Role::Assistant,
            content: response.content,
        };
        let mut add = Vec::with_capacity(2);
        if !message.content.is_empty() {
            add.push(Record::model_turn(message.clone()));
        }
        add.push(Record::Usage {
            usage: response.usage,
        });
        // A typed run's answer is judged, and what the model is told of it stored with the
        // turn (one append: an attempt that finds the turn finds them too).
        let verdict = self.judge(&input, &message)?;
        let next = verdict.map(|verdict| {
            add.extend(verdict.records);
            verdict.next
        });
        store
            .append_all(&input.session_id, &add)
            .await
            .map_err(retry)?;
        Ok(self.plan(&message, response.usage, &input, next))
    }

    /// The stop hooks, on a turn without calls: when one has the run go on, its message is
    /// stored as a prompt and the activity says so.
    #[activity(name = "tool_sdk.check_stop")]
    pub async fn check_stop(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: StopInput,
    ) -> Result<bool, ActivityError> {
        let (store, session) = (&*self.store, input.session_id.as_str());
        let records = store.load(session).await.map_err(retry)?;
        let turn =
            turn_position(&records, input.index as usize).and_then(|at| match &records[at] {
                Record::ModelTurn { message } => Some((at, message)),
                _ => None,
            });
        let Some((at, message)) = turn else {
            return Err(fail(format!(
                "session {session} has no model turn {} to ask the stop hooks about",
                input.index
            )));
        };
        // An earlier attempt stored the hook's message: the run goes on with it.
        if records[at..].iter().any(is_prompt) {
            return Ok(true);
        }
        let text = message.text();
        match self.effects.check_stop(&text, input.continued).await {
            Some(go_on) => {
                let prompt = Record::user(Message::user(go_on));
                store.append(session, &prompt).await.map_err(retry)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// One call, down `tool_sdk::pipeline::run_call`: its start is stored before it runs, its
    /// result as it ends. Cancelling the activity (the workflow was cancelled) cancels the
    /// tool's `CancellationToken`.
    #[activity(name = "tool_sdk.call_tool")]
    pub async fn call_tool(
        self: Arc<Self>,
        ctx: ActivityContext,
        input: CallInput,
    ) -> Result<CallDone, ActivityError> {
        let (store, session) = (&*self.store, input.session_id.as_str());
        let records = store.load(session).await.map_err(retry)?;
        if let Some(is_error) = stored_result(&records, &input.call_id) {
            return Ok(CallDone::stored(is_error));
        }
        let call = find_call(&records, &input.call_id).ok_or_else(|| {
            fail(format!(
                "session {session} has no call {} to run",
                input.call_id
            ))
        })?;
        let approved = match self.permission(&records, call, &input).await? {
            Permission::Ended(done) => return Ok(done),
            Permission::Approved => true,
            Permission::Unasked => false,
        };
        if !started(&records, &call.id) {
            let start = Record::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            };
            store.append(session, &start).await.map_err(retry)?;
        }
        let token = CancellationToken::new();
        // The tool's questions: answered from the session, or stored for a person.
        let elicitor = Arc::new(StoredElicitor::new(&self.store, session, call, &records));
        // Its progress reaches the client as it comes, in the heartbeats' details.
        let shown = Shown::progress(&ctx, &call.id);
        let progress = shown.clone();
        let tool_ctx = self
            .effects
            .tool_context(session, &call.id, token.clone(), &records)
            .with_elicitor(elicitor.clone())
            .with_updates(move |update| {
                if let ToolUpdateKind::Progress(line) = update.kind {
                    progress.push_line(&line);
                }
            });
        let answer = Answered(approved);
        let road = run_call(
            self.effects.registry(),
            &call.name,
            RawInput::from(&call.input),
            &tool_ctx,
            self.effects.policy(),
            Some(&answer),
        );
        let outcome = heartbeating(&ctx, &token, Some(&shown), async { Ok(road.await) }).await?;
        if let Some(failure) = elicitor.take_failure() {
            return Err(retry(failure));
        }
        if elicitor.deferred() {
            // The tool asked a question nobody here can answer: the call runs again, from the
            // start, once it is answered (the tool asks before it acts, as in process).
            return Ok(CallDone {
                is_error: false,
                ran: false,
                waiting: true,
                not_started: false,
            });
        }
        let effects = &self.effects;
        let error = outcome.error.as_ref();
        effects
            .tool_ended(&call.name, &call.id, &outcome.input, error)
            .await;
        let is_error = outcome.output.is_error;
        let block = MessageContent::ToolResult {
            tool_use_id: call.id.clone(),
            content: outcome.output.content,
            is_error,
        };
        store
            .append(session, &Record::ToolResult { block })
            .await
            .map_err(retry)?;
        Ok(CallDone {
            is_error,
            ran: true,
            waiting: false,
            not_started: false,
        })
    }

    /// Answers a call that may not be run again, whose worker died: the model gets
    /// [`WORKER_STOPPED_MESSAGE`]. A call that has a result keeps it.
    #[activity(name = "tool_sdk.seal_call")]
    pub async fn seal_call(
        self: Arc<Self>,
        _ctx: ActivityContext,
        input: CallInput,
    ) -> Result<CallDone, ActivityError> {
        let (store, session) = (&*self.store, input.session_id.as_str());
        let records = store.load(session).await.map_err(retry)?;
        if let Some(is_error) = stored_result(&records, &input.call_id) {
            return Ok(CallDone::stored(is_error));
        }
        // A call whose worker died before it started (while its question was being stored,
        // say) did not happen at all: the workflow runs it again instead.
        if input.reason.is_none() && !started(&records, &input.call_id) {
            return Ok(CallDone {
                not_started: true,
                ..CallDone::stored(false)
            });
        }
        let message = input.reason.as_deref().unwrap_or(WORKER_STOPPED_MESSAGE);
        let block = MessageContent::ToolResult {
            tool_use_id: input.call_id.clone(),
            content: vec![ContentBlock::text(message)],
            is_error: true,
        };
        store
            .append(session, &Record::ToolResult { block })
            .await
            .map_err(retry)?;
        Ok(CallDone {
            is_error: true,
            ran: true,
            waiting: false,
            not_started: false,
        })
    }
}

impl AgentActivities {
    /// Of a typed run: what the answer `turn` gives comes to.
    fn judge(
        &self,
        input: &TurnInput,
        turn: &Message,
    ) -> Result<Option<OutputVerdict>, ActivityError> {
        let Some(schema) = &input.output else {
            return Ok(None);
        };
        let verdict = self.effects.judge_output(schema, turn, input.refused);
        verdict
            .map(Some)
            .map_err(|error| fail(format!("the typed answer cannot be checked: {error}")))
    }

    /// The calls of a stored turn that run (of a typed run, those its answer's verdict
    /// `next` leaves), each with what its tool declares; what became of its typed answer;
    /// whether the turn's `usage` spent a budget of the run.
    fn plan(
        &self,
        turn: &Message,
        usage: Usage,
        input: &TurnInput,
        next: Option<OutputNext>,
    ) -> TurnOutcome {
        let (runs, answer) = match next {
            None => (None, None),
            Some(OutputNext::RunCalls(ids)) => (Some(ids), None),
            Some(OutputNext::Accepted(value)) => (Some(vec![]), Some(TypedAnswer::Accepted(value))),
            Some(OutputNext::Failed(error)) => {
                (Some(vec![]), Some(TypedAnswer::Failed(error.to_string())))
            }
            Some(_) => (Some(vec![]), Some(TypedAnswer::Refused)),
        };
        let calls = turn
            .tool_uses()
            .filter(|call| runs.as_ref().is_none_or(|ids| ids.contains(&call.id)))
            .map(|call| {
                let tool = self.effects.registry().get(&call.name);
                let read_only = tool.as_ref().is_some_and(|tool| tool.is_read_only());
                let idempotent = tool
                    .as_ref()
                    .is_some_and(|tool| tool.annotations().idempotent == Some(true));
                // An unknown tool is answered at once by the pipeline, which only reads.
                let timeout = tool.as_ref().map_or(Duration::from_secs(60), |tool| {
                    self.effects.policy().timeout_for(&**tool)
                });
                let retries = self.retries.get(&call.name).copied();
                CallPlan {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    read_only: read_only || tool.is_none(),
                    retry: read_only || idempotent || tool.is_none() || retries.is_some(),
                    retries,
                    timeout_ms: (timeout + ACTIVITY_GRACE).as_millis() as u64,
                }
            })
            .collect();
        let mut spent = input.run_usage;
        spent += usage;
        let budget = self.effects.budget_stop(&spent).map(|error| BudgetStop {
            reason: error.to_string(),
            not_run: not_run_message(&error),
        });
        TurnOutcome {
            calls,
            usage,
            budget,
            answer,
        }
    }
}

/// The model's whole turn, from its stream, its text shown as it comes.
async fn complete(
    model: &dyn tool_sdk::model::Model,
    request: &ModelRequest,
    shown: &Shown,
) -> Result<ModelResponse, ActivityError> {
    let mut stream = model.stream(request);
    while let Some(event) = stream.next().await {
        // The client retried what can be retried: a model error fails the run.
        match event.map_err(|error| fail(format!("the model failed: {error}")))? {
            ModelEvent::Completed(response) => return Ok(response),
            ModelEvent::TextDelta(text) => shown.push_text(&text),
            ModelEvent::ThinkingDelta(thinking) => shown.push_thinking(&thinking),
            _ => continue,
        }
    }
    Err(retry("the model's stream ended without its turn"))
}

/// An error another attempt may not have (the store was busy, the stream was cut).
pub(crate) fn retry(error: impl std::fmt::Display) -> ActivityError {
    ActivityError::application(ApplicationFailure::new(error.to_string()))
}

/// An error every attempt would have.
pub(crate) fn fail(message: String) -> ActivityError {
    ActivityError::application(ApplicationFailure::non_retryable(message))
}
