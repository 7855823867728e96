//! The agent loop as a workflow: the decisions of `tool_sdk::agent::decisions`, each effect an
//! activity.
//!
//! Deterministic by construction: the workflow sees only its input and its activities'
//! results (ids, flags, counts), which the server records, and decides with pure functions.

use std::collections::HashMap;
use std::time::Duration;

use futures::FutureExt;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use temporalio_common::RetryPolicy;
use temporalio_common::error::ActivityExecutionError;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::workflows::join_all;
use temporalio_sdk::{
    ActivityOptions, ContinueAsNewOptions, LocalActivityOptions, SyncWorkflowContext,
    WorkflowContext, WorkflowResult,
};
use tool_sdk::agent::OutputSchema;
use tool_sdk::agent::decisions::{
    AfterStop, AfterTurn, after_stop, after_turn, asks_stop_hooks, before_request, next_batch,
};
use tool_sdk::model::Usage;

use crate::activities::{
    AgentActivities, ApprovalAnswer, CallDone, CallInput, CallPlan, PromptInput, RunSettings,
    StopInput, TurnInput, TurnOutcome, TypedAnswer,
};

/// The result a call gets when the worker running it died and its tool may not run twice
/// (neither read-only nor idempotent): it may have run in part.
pub const WORKER_STOPPED_MESSAGE: &str =
    "the worker running this call stopped; it may have partly happened";

/// The agent workflow's type, as the server lists it.
pub const WORKFLOW_TYPE: &str = "tool_sdk.agent";

/// A run of the agent workflow: which session, from which turn, and how.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInput {
    /// The session, whose conversation ends with the prompt to answer.
    pub session_id: String,
    /// How many model turns the session held when the run started.
    pub turns_before: u32,
    /// The most model turns the run takes; 0: the worker's config's.
    pub max_turns: u32,
    /// How long an activity may go without a heartbeat, in milliseconds.
    pub heartbeat_timeout_ms: u64,
    /// How long one model turn may take, in milliseconds.
    pub model_timeout_ms: u64,
    /// How many times a call that may run again is attempted in all.
    pub retry_attempts: u32,
    /// After how many model turns a workflow run continues as a new one (with an empty
    /// history); 0: only when the server suggests it (its history grew large).
    #[serde(default)]
    pub continue_after: u32,
    /// What the runs this one continues did (continue-as-new).
    #[serde(default)]
    pub carried: RunSummary,
    /// The prompt this run answers, stored by its first activity after the prompt hooks;
    /// `None`: the session already ends with it.
    #[serde(default)]
    pub prompt: Option<String>,
    /// How many records the session held when the run was started: where its prompt goes.
    #[serde(default)]
    pub records_before: u32,
    /// The typed answer the run asks for, if it does (the model's answer is checked against
    /// it, and sent back while it is refused, as `Agent::prompt_as` does).
    #[serde(default)]
    pub output: Option<OutputSchema>,
    /// Approvals answered before the run continued as new, for calls yet to ask.
    #[serde(default)]
    pub answers: Vec<ApprovalAnswer>,
    /// What the run took from the worker's config, once read (carried by continue-as-new).
    #[serde(default)]
    pub settings: Option<RunSettings>,
    /// Whether read-only calls run as local activities ([`RunOptions::local_reads`]).
    ///
    /// [`RunOptions::local_reads`]: crate::RunOptions::local_reads
    #[serde(default)]
    pub local_reads: bool,
}

/// How a run ended, as the workflow returns it (the answer's text is in the session).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Model turns taken.
    pub turns: u32,
    /// Calls answered because their worker died ([`WORKER_STOPPED_MESSAGE`]).
    pub sealed: u32,
    /// Why the run stopped before the model finished (`max_turns` reached, a budget
    /// spent), if it did.
    pub stopped: Option<String>,
    /// The tokens the run's turns used.
    #[serde(default)]
    pub usage: Usage,
    /// How many times stop hooks sent the run on.
    #[serde(default)]
    pub continued: u32,
    /// A typed run's answer, taken.
    #[serde(default)]
    pub output: Option<Value>,
    /// How many of a typed run's answers were refused.
    #[serde(default)]
    pub refused: u32,
    /// Why a typed run ended without an answer (its answers were refused until no retry was
    /// left), if it did.
    #[serde(default)]
    pub output_failed: Option<String>,
}

/// The agent workflow (type `tool_sdk.agent`): model turns and tool calls as activities, in
/// the agent's order: read-only calls of a turn together, others one at a time.
#[workflow]
#[derive(Default)]
pub struct AgentWorkflow {
    /// The approvals answered by signal, by call id, until their calls take them.
    answers: HashMap<String, ApprovalAnswer>,
}

#[workflow_methods]
impl AgentWorkflow {
    /// Runs the loop until the model answers without calls or `max_turns` is reached.
    #[run(name = WORKFLOW_TYPE)]
    pub async fn run(
        ctx: &mut WorkflowContext<Self>,
        input: RunInput,
    ) -> WorkflowResult<RunSummary> {
        let answers = input.answers.iter().cloned();
        ctx.state_mut(|state| {
            state
                .answers
                .extend(answers.map(|a| (a.call_id.clone(), a)))
        });
        let mut summary = input.carried.clone();
        let settings = match &input.settings {
            Some(settings) => settings.clone(),
            None => {
                // A new run (not a continued one): its prompt first.
                if let Some(prompt) = &input.prompt {
                    let submit = PromptInput {
                        session_id: input.session_id.clone(),
                        prompt: prompt.clone(),
                        at: input.records_before,
                    };
                    let options = store_options(&input);
                    ctx.execute_activity(AgentActivities::submit_prompt, submit, options)
                        .await?;
                }
                let options = store_options(&input);
                ctx.execute_activity(AgentActivities::run_settings, (), options)
                    .await?
            }
        };
        let max_turns = match input.max_turns {
            0 => settings.max_turns,
            set => set,
        };
        loop {
            let this_run = summary.turns - input.carried.turns;
            let full = input.continue_after > 0 && this_run >= input.continue_after;
            if this_run > 0 && (full || ctx.continue_as_new_suggested()) {
                // Between turns no call waits: the next run starts from the session as it is.
                let answers = ctx.state(|state| state.answers.values().cloned().collect());
                let next = RunInput {
                    carried: summary,
                    answers,
                    settings: Some(settings),
                    ..input.clone()
                };
                let Err(end) = ctx.continue_as_new(next, ContinueAsNewOptions::default());
                return Err(end);
            }
            if let Err(stop) = before_request(false, summary.turns, max_turns, None) {
                summary.stopped = Some(stop.to_string());
                return Ok(summary);
            }
            let index = input.turns_before + summary.turns;
            let Some(turn) = model_turn(ctx, &input, &settings, &mut summary, index).await? else {
                return Ok(summary);
            };
            // A typed run ends with its answer taken or refused for good, or asks again.
            match turn.answer {
                Some(TypedAnswer::Accepted(value)) => {
                    summary.output = Some(value);
                    return Ok(summary);
                }
                Some(TypedAnswer::Failed(reason)) => {
                    summary.output_failed = Some(reason);
                    return Ok(summary);
                }
                Some(TypedAnswer::Refused) => {
                    summary.refused += 1;
                    continue;
                }
                None => {}
            }
            match after_turn(turn.calls.len(), turn.budget.as_ref()) {
                AfterTurn::Finish => {
                    let goes_on = ask_stop_hooks(ctx, &input, &settings, &summary, index).await?;
                    match goes_on {
                        AfterStop::Finish => return Ok(summary),
                        AfterStop::GoOn(_) => summary.continued += 1,
                    }
                }
                AfterTurn::StopForBudget(stop) => {
                    // The turn's calls do not run: each is answered so, and the run ends.
                    for call in &turn.calls {
                        let mut not_run = call_input(&input, call, None);
                        not_run.reason = Some(stop.not_run.clone());
                        let options = store_options(&input);
                        ctx.execute_activity(AgentActivities::seal_call, not_run, options)
                            .await?;
                    }
                    summary.stopped = Some(stop.reason.clone());
                    return Ok(summary);
                }
                AfterTurn::RunCalls => {
                    summary.sealed += run_calls(ctx, &input, &turn.calls).await?;
                }
            }
        }
    }

    /// Answers the approval a call waits for. An answer may come before the call asks (it is
    /// kept until then); a second answer to the same call replaces the first until it is
    /// taken.
    #[signal(name = "tool_sdk.answer_approval")]
    pub fn answer_approval(
        &mut self,
        _ctx: &mut SyncWorkflowContext<Self>,
        answer: ApprovalAnswer,
    ) {
        self.answers.insert(answer.call_id.clone(), answer);
    }
}

/// The session's model turn `index`, counted in `summary`; its context prepared first when
/// the config manages the window (`None`: the summary spent a budget, the run stops).
async fn model_turn(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    input: &RunInput,
    settings: &RunSettings,
    summary: &mut RunSummary,
    index: u32,
) -> WorkflowResult<Option<TurnOutcome>> {
    let turn = |summary: &RunSummary| TurnInput {
        session_id: input.session_id.clone(),
        index,
        run_usage: summary.usage,
        output: input.output.clone(),
        refused: summary.refused,
    };
    if settings.manages_context {
        let prepare = AgentActivities::prepare_context;
        let prepared = ctx
            .execute_activity(prepare, turn(summary), model_options(input))
            .await?;
        summary.usage += prepared.usage;
        if let Some(stop) = prepared.budget {
            summary.stopped = Some(stop.reason);
            return Ok(None);
        }
    }
    let turn = ctx
        .execute_activity(
            AgentActivities::model_turn,
            turn(summary),
            model_options(input),
        )
        .await?;
    summary.turns += 1;
    summary.usage += turn.usage;
    Ok(Some(turn))
}

/// After the model's turn `index` made no calls: asks the stop hooks, if the config has some
/// and they may still send the run on; their message is in the session if they did.
async fn ask_stop_hooks(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    input: &RunInput,
    settings: &RunSettings,
    summary: &RunSummary,
    index: u32,
) -> WorkflowResult<AfterStop> {
    let asks =
        settings.hooks && asks_stop_hooks(summary.continued, settings.max_stop_continuations);
    if !asks {
        return Ok(AfterStop::Finish);
    }
    let stop = StopInput {
        session_id: input.session_id.clone(),
        index,
        continued: summary.continued,
    };
    let options = call_options_of(input, STOP_HOOKS_TIMEOUT, false);
    let went_on = ctx
        .execute_activity(AgentActivities::check_stop, stop, options)
        .await?;
    // The workflow only needs to know; the message is in the session.
    Ok(after_stop(went_on.then(String::new)))
}

/// Runs a turn's calls in batches; returns how many were sealed.
async fn run_calls(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    input: &RunInput,
    calls: &[CallPlan],
) -> WorkflowResult<u32> {
    let concurrent: Vec<bool> = calls.iter().map(|call| call.read_only).collect();
    let (mut start, mut sealed) = (0, 0);
    while start < calls.len() {
        let batch = next_batch(&concurrent, start);
        start = batch.end;
        let runs = calls[batch].iter().map(|call| {
            let call_input = call_input(input, call, None);
            if runs_locally(input, call) {
                let options = local_options(input, call);
                ctx.execute_local_activity(AgentActivities::call_tool, call_input, options)
                    .boxed_local()
            } else {
                let options = call_options(input, call);
                ctx.execute_activity(AgentActivities::call_tool, call_input, options)
                    .boxed_local()
            }
        });
        let ended = join_all(runs).await;
        let batch_calls = &calls[start - ended.len()..start];
        for (call, ended) in batch_calls.iter().zip(ended) {
            sealed += u32::from(finish_call(ctx, input, call, ended).await?);
        }
    }
    Ok(sealed)
}

/// Takes a call from its first attempt's end to its result: waits for its approval and runs
/// it with the answer, runs it again if its worker died before it started, or seals it
/// (`Ok(true)`) if it may have partly happened.
async fn finish_call(
    ctx: &mut WorkflowContext<AgentWorkflow>,
    input: &RunInput,
    call: &CallPlan,
    mut ended: Result<CallDone, ActivityExecutionError>,
) -> WorkflowResult<bool> {
    let mut answer = None;
    let mut restarts = 0;
    loop {
        match &ended {
            Ok(done) if done.waiting => {
                // No process waits: the workflow sleeps in the server until the signal.
                let id = call.id.clone();
                ctx.wait_condition(|state| state.answers.contains_key(&id))
                    .await?;
                answer = ctx.state_mut(|state| state.answers.remove(&call.id));
            }
            Ok(_) => return Ok(false),
            Err(_) => {
                // The call's worker died (no heartbeat) or it ran out of attempts: it is
                // answered, so that the conversation stays one the model accepts; unless it
                // never started, which a worker that died while storing its question leaves.
                let seal = call_input(input, call, None);
                let done = ctx
                    .execute_activity(AgentActivities::seal_call, seal, store_options(input))
                    .await?;
                if !done.not_started || restarts == MAX_RESTARTS {
                    // Its worker may have stored the result before it died: then it keeps it.
                    return Ok(done.ran);
                }
                restarts += 1;
            }
        }
        let again = call_input(input, call, answer.clone());
        ended = ctx
            .execute_activity(AgentActivities::call_tool, again, call_options(input, call))
            .await;
    }
}

/// Whether `call` runs as a local activity: in the workflow task of the worker that holds the
/// run, its result recorded with the task's completion, so that it costs no round trip through
/// the server. Only read-only calls (which may run again) with no retries of their own, and
/// only when the run asks for it: a local activity cannot heartbeat (its tool's progress does
/// not show), and a worker that dies in one is noticed at the workflow task's timeout.
fn runs_locally(input: &RunInput, call: &CallPlan) -> bool {
    input.local_reads && call.read_only && call.retries.is_none()
}

/// A local call's options: its tool's timeout, and as many attempts as any call that may run
/// again.
fn local_options(input: &RunInput, call: &CallPlan) -> LocalActivityOptions {
    LocalActivityOptions::builder()
        .start_to_close_timeout(Duration::from_millis(call.timeout_ms))
        .retry_policy(retry_policy(input.retry_attempts, FIRST_BACKOFF))
        .build()
}

/// How many times a call whose workers died before it started is run again.
const MAX_RESTARTS: u32 = 3;

fn call_input(input: &RunInput, call: &CallPlan, answer: Option<ApprovalAnswer>) -> CallInput {
    CallInput {
        session_id: input.session_id.clone(),
        call_id: call.id.clone(),
        answer,
        reason: None,
    }
}

/// How long the stop hooks may take (command hooks have their own, shorter, timeouts).
const STOP_HOOKS_TIMEOUT: Duration = Duration::from_secs(120);

fn model_options(input: &RunInput) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_millis(input.model_timeout_ms))
        .heartbeat_timeout(Duration::from_millis(input.heartbeat_timeout_ms))
        .build()
}

/// A call that may run again is retried up to `retry_attempts` attempts; another is
/// attempted once.
fn call_options(input: &RunInput, call: &CallPlan) -> ActivityOptions {
    let timeout = Duration::from_millis(call.timeout_ms);
    match call.retries {
        Some(retries) => options_of(input, timeout, retries.attempts, retries.first_backoff),
        None => call_options_of(input, timeout, call.retry),
    }
}

fn call_options_of(input: &RunInput, timeout: Duration, retry: bool) -> ActivityOptions {
    let attempts = if retry { input.retry_attempts } else { 1 };
    options_of(input, timeout, attempts, FIRST_BACKOFF)
}

/// The wait before a call's second attempt, unless its tool's retries say otherwise.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// `attempts` attempts in all (at least one), the first retry after `first_backoff`.
fn retry_policy(attempts: u32, first_backoff: Duration) -> RetryPolicy {
    RetryPolicy::builder()
        .initial_interval(first_backoff)
        .maximum_attempts(attempts.max(1))
        .build()
}

fn options_of(
    input: &RunInput,
    timeout: Duration,
    attempts: u32,
    first_backoff: Duration,
) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(timeout)
        .heartbeat_timeout(Duration::from_millis(input.heartbeat_timeout_ms))
        .retry_policy(retry_policy(attempts, first_backoff))
        .build()
}

fn store_options(input: &RunInput) -> ActivityOptions {
    ActivityOptions::with_start_to_close_timeout(Duration::from_millis(
        input.heartbeat_timeout_ms.max(30_000),
    ))
    .build()
}
