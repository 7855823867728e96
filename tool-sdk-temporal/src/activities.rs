//! The activities: one model turn, one tool call, and the answer to a call whose worker died.
//!
//! Each takes a session id and a position in it, reads the conversation from the store, and
//! appends what it adds; none receives or returns the conversation, so the workflow's history
//! stays linear in the number of steps. Each is idempotent against the store: an attempt that
//! finds its record already stored (an earlier attempt stored it, then its worker died before
//! reporting) returns what is stored instead of asking the model or running the tool again.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_common::error::ApplicationFailure;
use temporalio_macros::activities;
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tool_sdk::Tool;
use tool_sdk::agent::AgentEffects;
use tool_sdk::agent::decisions::not_run_message;
use tool_sdk::model::{
    Message, MessageContent, ModelEvent, ModelRequest, ModelResponse, Role, ToolInput, ToolUse,
    Usage,
};
use tool_sdk::permission::{
    CallFacts, PermissionAnswer, PermissionHandler, PermissionPreview, PermissionQuestion, Rule,
};
use tool_sdk::pipeline::{RawInput, run_call};
use tool_sdk::session::{Record, SessionStore, conversation};
use tool_sdk::{
    BoxFuture, CancellationToken, ContentBlock, Elicitation, ElicitationAnswer, Elicitor,
    ToolContext, ToolError,
};

use crate::parts::ACTIVITY_GRACE;
use crate::workflow::WORKER_STOPPED_MESSAGE;

/// The agent's activities, registered by [`AgentWorker`](crate::AgentWorker) with the parts
/// they run with.
pub struct AgentActivities {
    effects: AgentEffects,
    store: Arc<dyn SessionStore>,
}

impl AgentActivities {
    /// The activities of an agent's parts (built from an `AgentConfig`), with the
    /// conversation in `store`.
    pub fn new(effects: AgentEffects, store: Arc<dyn SessionStore>) -> Self {
        AgentActivities { effects, store }
    }
}

/// What a run takes from the worker's config, read once when it starts (and kept in the
/// workflow's history, so that a replay decides the same).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The config's `max_turns`.
    pub max_turns: u32,
    /// Whether the config has hooks (the stop hooks are asked only then).
    pub hooks: bool,
    /// How many times stop hooks may send a run on.
    pub max_stop_continuations: u32,
}

/// A run's prompt, to store at position `at` of its session once the prompt hooks let it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptInput {
    /// The session.
    pub session_id: String,
    /// The prompt.
    pub prompt: String,
    /// How many records the session held when the run started.
    pub at: u32,
}

/// A turn without calls, whose stop hooks are asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopInput {
    /// The session.
    pub session_id: String,
    /// Which model turn of the session it is (from 0).
    pub index: u32,
    /// How many times hooks sent this run on already.
    pub continued: u32,
}

/// Which model turn of a session to take: the `index`th (from 0) of the whole session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnInput {
    /// The session.
    pub session_id: String,
    /// How many model turns the session holds before this one.
    pub index: u32,
    /// The tokens the run used before this turn: what its budgets are checked against.
    #[serde(default)]
    pub run_usage: Usage,
}

/// What the workflow needs of a model turn: its calls (not their inputs), its usage, and
/// whether it spent a budget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnOutcome {
    /// The turn's calls, in order.
    pub calls: Vec<CallPlan>,
    /// The tokens the turn used.
    #[serde(default)]
    pub usage: Usage,
    /// The budget the run spent with this turn, if it did: why it stops, and what the model
    /// is told of the turn's calls, which do not run.
    #[serde(default)]
    pub budget: Option<BudgetStop>,
}

/// A run stopped by a budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetStop {
    /// Which budget, and what was spent.
    pub reason: String,
    /// What each call of the turn is answered.
    pub not_run: String,
}

/// One call as the workflow schedules it: from what its tool declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallPlan {
    /// The tool_use id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Whether the tool only reads: it runs beside the turn's other read-only calls.
    pub read_only: bool,
    /// Whether the call may be run again when its worker dies: read-only or idempotent.
    pub retry: bool,
    /// How long its activity may run, in milliseconds: the tool's timeout plus
    /// [`ACTIVITY_GRACE`].
    pub timeout_ms: u64,
}

/// A call of a session, by its tool_use id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallInput {
    /// The session.
    pub session_id: String,
    /// The tool_use id.
    pub call_id: String,
    /// The answer to the call's approval, once it was asked and answered.
    #[serde(default)]
    pub answer: Option<ApprovalAnswer>,
    /// For [`seal_call`](AgentActivities::seal_call): what the model is told (default:
    /// [`WORKER_STOPPED_MESSAGE`]).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A person's answer to the approval a call waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAnswer {
    /// The tool_use id.
    pub call_id: String,
    /// Whether the call may run.
    pub allow: bool,
    /// What the model is told when it may not.
    pub message: Option<String>,
    /// Whether calls the question's suggested rule covers may run unasked for the rest of
    /// the session ("allow always").
    #[serde(default)]
    pub always: bool,
    /// Whether this answers the call's tool's question ([`tool_sdk::ToolContext::elicit`]),
    /// stored in the session by the client, rather than a permission question: it only has
    /// the call run again.
    #[serde(default)]
    pub elicitation: bool,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallDone {
    /// Whether its result is an error for the model.
    pub is_error: bool,
    /// Whether this attempt ran the tool (or sealed the call); `false` when the result was
    /// stored already.
    pub ran: bool,
    /// Whether the call did not run because it waits for an approval (its question stored).
    #[serde(default)]
    pub waiting: bool,
    /// From [`seal_call`](AgentActivities::seal_call): the call never started (its worker
    /// died before), so nothing was sealed and it may simply run.
    #[serde(default)]
    pub not_started: bool,
}

impl CallDone {
    fn stored(is_error: bool) -> Self {
        CallDone {
            is_error,
            ran: false,
            waiting: false,
            not_started: false,
        }
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
        })
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
            return Ok(self.plan(stored, usage, input.run_usage));
        }
        let request = self.effects.request(conversation(&records).into());
        let never = CancellationToken::new();
        let model = &**self.effects.model();
        let response = heartbeating(&ctx, &never, complete(model, &request)).await?;
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
        store
            .append_all(&input.session_id, &add)
            .await
            .map_err(retry)?;
        Ok(self.plan(&message, response.usage, input.run_usage))
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
        let Some(at) = turn_position(&records, input.index as usize) else {
            return Err(fail(format!(
                "session {session} has no model turn {} to ask the stop hooks about",
                input.index
            )));
        };
        // An earlier attempt stored the hook's message: the run goes on with it.
        if records[at..].iter().any(is_prompt) {
            return Ok(true);
        }
        let Record::ModelTurn { message } = &records[at] else {
            unreachable!("turn_position finds model turns");
        };
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
        let tool_ctx = self
            .effects
            .tool_context(session, &call.id, token.clone(), &records)
            .with_elicitor(elicitor.clone());
        let answer = Answered(approved);
        let road = run_call(
            self.effects.registry(),
            &call.name,
            RawInput::from(&call.input),
            &tool_ctx,
            self.effects.policy(),
            Some(&answer),
        );
        let outcome = heartbeating(&ctx, &token, async { Ok(road.await) }).await?;
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
    /// What the gate says of `call` before it starts: it runs (approved by a person, now or
    /// "always" earlier in the session, or not a question at all), or how it ended (it waits
    /// for an answer, with its question stored; or it was refused).
    async fn permission(
        &self,
        records: &[Record],
        call: &ToolUse,
        input: &CallInput,
    ) -> Result<Permission, ActivityError> {
        let (store, session) = (&*self.store, input.session_id.as_str());
        // The answer to its tool's question (stored by the client) only wakes the call.
        let answer = input.answer.as_ref().filter(|answer| !answer.elicitation);
        if let Some(answer) = answer {
            let mut add = Vec::with_capacity(2);
            if !has(records, &call.id, |record| {
                matches!(record, Record::PermissionAnswered { .. })
            }) {
                add.push(Record::PermissionAnswered {
                    id: call.id.clone(),
                    allowed: answer.allow,
                    always: answer.allow && answer.always,
                    message: answer.message.clone(),
                });
            }
            if !answer.allow {
                let message = answer.message.as_deref().unwrap_or(REFUSED_MESSAGE);
                add.push(Record::ToolResult {
                    block: MessageContent::ToolResult {
                        tool_use_id: call.id.clone(),
                        content: vec![ContentBlock::text(message)],
                        is_error: true,
                    },
                });
            }
            store.append_all(session, &add).await.map_err(retry)?;
            let refused = CallDone {
                is_error: true,
                ran: true,
                waiting: false,
                not_started: false,
            };
            return Ok(match answer.allow {
                true => Permission::Approved,
                false => Permission::Ended(refused),
            });
        }
        let Some(tool) = self.effects.registry().get(&call.name) else {
            return Ok(Permission::Unasked);
        };
        let input_value = match &call.input {
            ToolInput::Parsed(value) => value,
            ToolInput::Malformed { .. } => return Ok(Permission::Unasked),
        };
        let (gate, mode) = (self.effects.gate(), self.effects.permission_mode());
        let dir = self.effects.working_dir();
        if gate.preview(&*tool, input_value, dir, mode) != PermissionPreview::Asks {
            return Ok(Permission::Unasked);
        }
        // Allowed before: the call runs again (its tool asked a question, or its worker died
        // before it started).
        let allowed = records.iter().any(|record| {
            matches!(record, Record::PermissionAnswered { id, allowed: true, .. } if *id == call.id)
        });
        if allowed {
            return Ok(Permission::Approved);
        }
        if self.allowed_always(records, &*tool, input_value) {
            return Ok(Permission::Approved);
        }
        if !has(records, &call.id, |record| {
            matches!(record, Record::PermissionAsked { .. })
        }) {
            let asked = [
                Record::PermissionAsked {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    title: tool.permission_prompt(input_value).title,
                },
                Record::ApprovalDeferred {
                    id: call.id.clone(),
                },
            ];
            store.append_all(session, &asked).await.map_err(retry)?;
        }
        Ok(Permission::Ended(CallDone {
            is_error: false,
            ran: false,
            waiting: true,
            not_started: false,
        }))
    }

    /// Whether a person answered "allow always" to an earlier call of the session whose
    /// rule (the one the question suggested) covers this one: the rules a session remembers
    /// are in its records, so any worker knows them.
    fn allowed_always(&self, records: &[Record], tool: &dyn Tool, input: &Value) -> bool {
        let dir = self.effects.working_dir();
        let facts = CallFacts::for_tool(tool, input, dir);
        records.iter().any(|record| {
            let Record::PermissionAnswered {
                id, always: true, ..
            } = record
            else {
                return false;
            };
            let Some(earlier) = find_call(records, id) else {
                return false;
            };
            let (Some(earlier_tool), Some(earlier_input)) = (
                self.effects.registry().get(&earlier.name),
                earlier.input.parsed(),
            ) else {
                return false;
            };
            let rule = Rule::for_call(&CallFacts::for_tool(&*earlier_tool, earlier_input, dir));
            rule.matches(&facts, input, dir)
        })
    }

    /// The calls of a stored turn, each with what its tool declares, and whether the turn's
    /// `usage` spent a budget of a run that used `run_usage` before it.
    fn plan(&self, turn: &Message, usage: Usage, run_usage: Usage) -> TurnOutcome {
        let calls = turn
            .tool_uses()
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
                CallPlan {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    read_only: read_only || tool.is_none(),
                    retry: read_only || idempotent || tool.is_none(),
                    timeout_ms: (timeout + ACTIVITY_GRACE).as_millis() as u64,
                }
            })
            .collect();
        let mut spent = run_usage;
        spent += usage;
        let budget = self.effects.budget_stop(&spent).map(|error| BudgetStop {
            reason: error.to_string(),
            not_run: not_run_message(&error),
        });
        TurnOutcome {
            calls,
            usage,
            budget,
        }
    }
}

/// The model's whole turn, from its stream.
async fn complete(
    model: &dyn tool_sdk::model::Model,
    request: &ModelRequest,
) -> Result<ModelResponse, ActivityError> {
    let mut stream = model.stream(request);
    while let Some(event) = stream.next().await {
        // The client retried what can be retried: a model error fails the run.
        match event.map_err(|error| fail(format!("the model failed: {error}")))? {
            ModelEvent::Completed(response) => return Ok(response),
            _ => continue,
        }
    }
    Err(retry("the model's stream ended without its turn"))
}

/// Runs `work` while heartbeating at a third of the activity's heartbeat timeout; the
/// activity's cancellation (which heartbeats bring) cancels `cancel`.
async fn heartbeating<T>(
    ctx: &ActivityContext,
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, ActivityError>>,
) -> Result<T, ActivityError> {
    let every = ctx
        .info()
        .heartbeat_timeout
        .filter(|timeout| !timeout.is_zero())
        .map_or(Duration::from_secs(10), |timeout| timeout / 3);
    let mut ticker = tokio::time::interval(every);
    let mut work = std::pin::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticker.tick() => {
                // A heartbeat that cannot be encoded only delays noticing a cancellation.
                let _ = ctx.record_heartbeat(()).await;
            }
            () = ctx.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
        }
    }
}

/// A call's tool's questions ([`tool_sdk::ToolContext::elicit`]) on Temporal: answered from
/// the session's `ElicitationAnswered` records, in order (a call that runs again after its
/// question was answered); a question beyond them is stored with `ApprovalDeferred`, as an
/// agent with deferred approvals stores it, and the tool gets an error: the call waits in the
/// server, holding no process, for `RunHandle::answer_elicitation`.
struct StoredElicitor {
    store: Arc<dyn SessionStore>,
    session: String,
    call: ToolUse,
    replies: Mutex<VecDeque<ElicitationAnswer>>,
    /// The question an earlier attempt stored that is still unanswered: not stored twice.
    unanswered: bool,
    deferred: AtomicBool,
    failure: Mutex<Option<String>>,
}

impl StoredElicitor {
    fn new(
        store: &Arc<dyn SessionStore>,
        session: &str,
        call: &ToolUse,
        records: &[Record],
    ) -> Self {
        let mut replies = VecDeque::new();
        let mut unanswered = false;
        for record in records {
            match record {
                Record::ElicitationAsked { id, .. } if *id == call.id => unanswered = true,
                Record::ElicitationAnswered { id, answer } if *id == call.id => {
                    replies.push_back(answer.clone());
                    unanswered = false;
                }
                _ => {}
            }
        }
        StoredElicitor {
            store: store.clone(),
            session: session.to_owned(),
            call: call.clone(),
            replies: Mutex::new(replies),
            unanswered,
            deferred: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    fn deferred(&self) -> bool {
        self.deferred.load(Ordering::SeqCst)
    }

    fn take_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl Elicitor for StoredElicitor {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        Box::pin(async move {
            let replay = self
                .replies
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front();
            if let Some(answer) = replay {
                return Ok(answer);
            }
            let waits = || {
                ToolError::failed(
                    "this question waits for the user's answer: the call runs again once it \
                     is given",
                )
            };
            if self.deferred.swap(true, Ordering::SeqCst) || self.unanswered {
                return Err(waits());
            }
            let id = self.call.id.clone();
            let asked = [
                Record::ElicitationAsked {
                    id: id.clone(),
                    question: question.clone(),
                },
                Record::ApprovalDeferred { id },
            ];
            if let Err(error) = self.store.append_all(&self.session, &asked).await {
                let message = format!("the question could not be stored ({error})");
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
                return Err(ToolError::failed(message));
            }
            Err(waits())
        })
    }
}

/// What the permission check before a call decided.
enum Permission {
    /// It runs with no question (the gate would not ask).
    Unasked,
    /// It runs: a person allowed it, or allowed such calls always in this session.
    Approved,
    /// It does not run now.
    Ended(CallDone),
}

/// What the model is told of a call a person refused without a message.
const REFUSED_MESSAGE: &str = "the user refused this call";

/// The gate's questions during a call: answered by the approval the call was given (the gate
/// was previewed before the call started, so a question without one came from a hook).
struct Answered(bool);

impl PermissionHandler for Answered {
    fn ask<'a>(&'a self, _question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer> {
        let answer = match self.0 {
            true => PermissionAnswer::Allow,
            false => PermissionAnswer::Deny("no approval was given for this call".to_owned()),
        };
        Box::pin(std::future::ready(answer))
    }
}

/// Whether a record of the call `id` matching `kind` is stored.
fn has(records: &[Record], id: &str, kind: impl Fn(&Record) -> bool) -> bool {
    records.iter().any(|record| {
        kind(record)
            && match record {
                Record::PermissionAsked { id: of, .. }
                | Record::PermissionAnswered { id: of, .. } => of == id,
                _ => false,
            }
    })
}

/// Where the `index`th model turn (from 0) is in `records`.
fn turn_position(records: &[Record], index: usize) -> Option<usize> {
    records
        .iter()
        .enumerate()
        .filter(|(_, record)| matches!(record, Record::ModelTurn { .. }))
        .nth(index)
        .map(|(at, _)| at)
}

/// The `index`th model turn and the usage stored with it.
fn stored_turn(records: &[Record], index: usize) -> Option<(&Message, Usage)> {
    let at = turn_position(records, index)?;
    let Record::ModelTurn { message } = &records[at] else {
        return None;
    };
    let usage = records[at..].iter().find_map(|record| match record {
        Record::Usage { usage } => Some(*usage),
        _ => None,
    });
    Some((message, usage.unwrap_or_default()))
}

/// Whether `record` is a prompt (tool results are records of their own).
fn is_prompt(record: &Record) -> bool {
    matches!(record, Record::UserMessage { .. })
}

fn model_turns(records: &[Record]) -> impl Iterator<Item = &Message> {
    records.iter().filter_map(|record| match record {
        Record::ModelTurn { message } => Some(message),
        _ => None,
    })
}

/// Whether the call `id` has a stored result, and whether it is an error.
fn stored_result(records: &[Record], id: &str) -> Option<bool> {
    records.iter().rev().find_map(|record| match record {
        Record::ToolResult {
            block:
                MessageContent::ToolResult {
                    tool_use_id,
                    is_error,
                    ..
                },
        } if tool_use_id == id => Some(*is_error),
        _ => None,
    })
}

fn find_call<'r>(records: &'r [Record], id: &str) -> Option<&'r ToolUse> {
    model_turns(records)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find_map(|turn| turn.tool_uses().find(|call| call.id == id))
}

fn started(records: &[Record], call: &str) -> bool {
    records
        .iter()
        .any(|record| matches!(record, Record::ToolStarted { id, .. } if id == call))
}

/// An error another attempt may not have (the store was busy, the stream was cut).
fn retry(error: impl std::fmt::Display) -> ActivityError {
    ActivityError::application(ApplicationFailure::new(error.to_string()))
}

/// An error every attempt would have.
fn fail(message: String) -> ActivityError {
    ActivityError::application(ApplicationFailure::non_retryable(message))
}
