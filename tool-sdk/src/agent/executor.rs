//! Running one turn's tool calls: each down the call pipeline ([`crate::pipeline`]),
//! consecutive read-only calls together, results in tool_use order, exactly one result per
//! call whatever happens. This file only batches calls, turns outcomes into events, and
//! stores each call's start, permission question and result in the session as they happen.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::asker::{CallElicitor, EventAsker, RecordingAsker, record};
use super::events::{AgentEvent, Emit};
use super::inner::AgentInner;
use super::recorder::Journal;
use super::spans;
use super::step::{self, FlushPoint, Recorded};
use super::subagent::Subagents;
use crate::model::{MessageContent, ToolUse};
use crate::permission::PermissionAnswer;
use crate::pipeline::{CallOutcome, RawInput, contain, run_call};
use crate::session::{CallCheckpointer, PendingApproval, Record, SessionError};
use crate::tool::{ElicitationAnswer, ResultDisplay, ToolContext, ToolError, ToolOutput};

/// One call's result block, its error line for the run result, and why the session store
/// could not take its records (which ends the run).
pub(crate) struct Outcome {
    pub(crate) call_id: String,
    pub(crate) block: MessageContent,
    pub(crate) error: Option<String>,
    pub(crate) store_error: Option<SessionError>,
    /// The call's permission question was deferred: it did not run, `block` means nothing
    /// and no result was stored.
    pub(crate) deferred: Option<PendingApproval>,
}

/// What a turn's calls were answered before they run (again): stored answers to deferred
/// permission questions, given to the gate instead of asking, and to the questions their tools
/// asked, given to the tools in order.
#[derive(Default)]
pub(crate) struct Answers<'a> {
    pub(crate) permissions: Option<&'a HashMap<String, PermissionAnswer>>,
    pub(crate) replies: Option<&'a HashMap<String, Vec<ElicitationAnswer>>>,
}

/// Runs `calls` in order. `answers` are stored answers to deferred questions. When a call's question is deferred, the calls after its
/// batch are not run (they run, in order, when the run continues): the outcomes are then
/// fewer than the calls.
pub(crate) async fn execute(
    agent: &Arc<AgentInner>,
    calls: &[&ToolUse],
    answers: &Answers<'_>,
    emit: &Emit,
    cancel: &CancellationToken,
) -> Vec<Outcome> {
    // Asked once per call, before batching, with tool code contained: a tool whose metadata
    // panics runs alone and fails there.
    let concurrent: Vec<bool> = calls
        .iter()
        .map(|call| runs_concurrently(agent, call))
        .collect();
    let mut outcomes = Vec::with_capacity(calls.len());
    let mut index = 0;
    while index < calls.len() {
        // A run of read-only calls goes together; anything else goes alone.
        let end = step::next_batch(&concurrent, index).end;
        let batch = &calls[index..end];
        let read_only = concurrent[index];
        // Each start is stored with the staged turn, so that after a crash a call that may
        // have partly happened is told from one that never ran: when, `step::commit` says (a
        // call whose start cannot be stored does not run, nor do the rest).
        let kind = match read_only {
            true => Recorded::ReadOnlyStart,
            false => Recorded::MutatingStart,
        };
        let mut flushed = Ok(());
        for call in batch {
            let started = || Record::ToolStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            };
            flushed = agent.recorder.write(kind, started).await;
            if flushed.is_err() {
                break;
            }
        }
        if let Err(error) = flushed {
            let first = outcomes.len();
            outcomes.extend(
                calls[index..]
                    .iter()
                    .map(|call| not_started(agent, call, &error, emit)),
            );
            outcomes[first].store_error = Some(error);
            break;
        }
        let mut results = run_batch(agent, batch, read_only, answers, emit, cancel).await;
        let deferred = results.iter().any(|outcome| outcome.deferred.is_some());
        let unstored = results
            .iter()
            .find_map(|outcome| outcome.store_error.clone());
        outcomes.append(&mut results);
        if let Some(error) = unstored {
            // The run cannot record what it does: nothing after this batch starts (see
            // `recorder`).
            outcomes.extend(
                calls[end..]
                    .iter()
                    .map(|call| not_started(agent, call, &error, emit)),
            );
            break;
        }
        if deferred {
            // A later call may depend on the one waiting (a mutating call waits for the calls
            // before it): they all wait.
            break;
        }
        index = end;
    }
    outcomes
}

/// Runs one batch: its calls together (at most `max_concurrent_tools` at once), results in
/// call order.
async fn run_batch(
    agent: &Arc<AgentInner>,
    batch: &[&ToolUse],
    read_only: bool,
    answers: &Answers<'_>,
    emit: &Emit,
    cancel: &CancellationToken,
) -> Vec<Outcome> {
    let limit = agent.config.limits.max_concurrent_tools.max(1);
    let turn = agent.turn_context(emit);
    // Futures built up front: a closure inside the stream combinator would trip the
    // compiler's higher-ranked lifetime check for `Send`. Each call's span is made here,
    // a child of the run's, though the calls then run together.
    let runs: Vec<_> = batch
        .iter()
        .map(|call| {
            let answer = answers.permissions.and_then(|a| a.get(&call.id));
            let replies = answers.replies.and_then(|r| r.get(&call.id));
            run_one(agent, &turn, call, (answer, replies), emit, cancel, None)
                .instrument(spans::execute_tool(call))
        })
        .collect();
    // Under the limit, all at once: `join_all` keeps them in one allocation, where the
    // stream would make a task node for each.
    let run = async move {
        match runs.len() <= limit {
            true => futures::future::join_all(runs).await,
            false => futures::stream::iter(runs).buffered(limit).collect().await,
        }
    };
    stored_while(agent, FlushPoint::Batch { read_only }, run).await
}

/// Runs the calls of `run` while the records staged for them wait as [`step::flush_within`]
/// says for `point`. A record that could not be stored ends the run (the first outcome
/// carries the error).
pub(crate) async fn stored_while(
    agent: &AgentInner,
    point: FlushPoint,
    run: impl std::future::Future<Output = Vec<Outcome>>,
) -> Vec<Outcome> {
    let (mut results, stored) = agent.recorder.flush_while(point, run).await;
    if let (Err(error), Some(first)) = (stored, results.first_mut()) {
        first.store_error.get_or_insert(error);
    }
    results
}

/// Read-only tools, and calls that will not run at all (unknown tool, bad JSON).
pub(crate) fn runs_concurrently(agent: &AgentInner, call: &ToolUse) -> bool {
    if call.input.is_malformed() {
        return true;
    }
    match agent.registry.get(&call.name) {
        None => true,
        Some(tool) => contain(|| tool.is_read_only()).unwrap_or(false),
    }
}

/// [`run_one`] for a call started before its turn was stored: its start and other records
/// wait in `journal` (see `early.rs`).
pub(crate) async fn run_one_held(
    agent: &Arc<AgentInner>,
    call: &ToolUse,
    emit: &Emit,
    cancel: &CancellationToken,
    journal: &Arc<Journal>,
) -> Outcome {
    let started = || Record::ToolStarted {
        id: call.id.clone(),
        name: call.name.clone(),
    };
    let span = spans::execute_tool(call);
    match journal
        .write(&agent.recorder, Recorded::ReadOnlyStart, started)
        .await
    {
        Ok(()) => {
            let turn = agent.turn_context(emit);
            run_one(
                agent,
                &turn,
                call,
                (None, None),
                emit,
                cancel,
                Some(journal),
            )
            .instrument(span)
            .await
        }
        Err(error) => {
            let mut outcome = not_started(agent, call, &error, emit);
            outcome.store_error = Some(error);
            outcome
        }
    }
}

/// Tells the app a call is about to run (`ToolRequested`, with the tool's title for it), if
/// anyone listens; returns the tool, when the name is known.
fn announce(agent: &AgentInner, call: &ToolUse, emit: &Emit) -> Option<Arc<dyn crate::Tool>> {
    let tool = agent.registry.get(&call.name);
    emit.notify(|| {
        let title = tool
            .as_ref()
            .and_then(|tool| contain(|| tool.display_title(&call.input.json_or_empty())).ok())
            .unwrap_or_else(|| call.name.clone());
        AgentEvent::ToolRequested {
            id: call.id.clone(),
            name: call.name.clone(),
            input: call.input.json_or_empty().into_owned(),
            title,
        }
    });
    tool
}

/// The outcome of a call that did not run because its start could not be stored.
fn not_started(agent: &AgentInner, call: &ToolUse, error: &SessionError, emit: &Emit) -> Outcome {
    announce(agent, call, emit);
    let output = ToolOutput::error(format!(
        "this call did not run: the session could not be stored ({error})"
    ));
    spans::end_tool_unstored(&spans::execute_tool(call), &output.to_text());
    emit.notify(|| AgentEvent::ToolFailed {
        id: call.id.clone(),
        name: call.name.clone(),
        duration: std::time::Duration::ZERO,
        kind: crate::ToolErrorKind::ExecutionFailed,
        output: output.clone(),
    });
    Outcome {
        call_id: call.id.clone(),
        block: result_block(&call.id, &output),
        error: Some(format!("{}: {error}", call.name)),
        store_error: None,
        deferred: None,
    }
}

/// Runs one call, inside its `execute_tool` span (the current one). Its records go to the
/// store, or to `journal` when the call started before its turn was stored.
async fn run_one(
    agent: &Arc<AgentInner>,
    turn: &ToolContext,
    call: &ToolUse,
    (answer, replies): (Option<&PermissionAnswer>, Option<&Vec<ElicitationAnswer>>),
    emit: &Emit,
    cancel: &CancellationToken,
    journal: Option<&Arc<Journal>>,
) -> Outcome {
    let span = tracing::Span::current();
    let tool = announce(agent, call, emit);

    let elicitor = CallElicitor::for_call(agent, call, emit, journal, replies);
    let ctx = agent
        .tool_context(turn, &call.id, emit, cancel)
        .with_elicitor(elicitor.clone());
    let asker = EventAsker {
        call_id: &call.id,
        emit,
    };
    let hooked = agent
        .config
        .hooks
        .asker(match &agent.config.permissions.handler {
            Some(handler) => handler.as_ref(),
            None => &asker,
        });
    let ask = RecordingAsker {
        agent,
        call,
        asker: &hooked,
        answer,
        journal: journal.map(|journal| &**journal),
        defer: agent.config.session.defer_approvals && agent.config.permissions.handler.is_none(),
        deferred: Mutex::new(None),
        failure: Mutex::new(None),
    };
    let CallOutcome {
        output,
        error,
        input,
        duration,
        ..
    } = run_call(
        &agent.registry,
        &call.name,
        RawInput::from(&call.input),
        &ctx,
        &agent.policy,
        Some(&ask),
    )
    .await;

    let (deferred, unstored) = ask.finish(&elicitor);
    if let Some(deferred) = deferred {
        // No result: the call did not run (or stopped at its tool's question); it will.
        return Outcome {
            call_id: call.id.clone(),
            block: result_block(&call.id, &output),
            error: None,
            store_error: unstored,
            deferred: Some(deferred),
        };
    }
    spans::end_tool(&span, error.as_ref(), &output);
    (agent.config.hooks)
        .tool_failed(&call.name, &call.id, &input, error.as_ref())
        .await;
    let error_line = error_line(call, &output, error.as_ref());
    let (block, output) = blocks(&call.id, output, emit.listening());
    // Stored as soon as the call ends: before the next model request, and before the other
    // calls of the turn end.
    let store_error = match unstored {
        Some(error) => Some(error),
        None => record(agent, journal.map(|j| &**j), Recorded::Result, || {
            Record::ToolResult {
                block: block.clone(),
            }
        })
        .await
        .err(),
    };
    if let Some(output) = output {
        emit(ended(
            call,
            tool.as_deref(),
            &input,
            output,
            error.as_ref(),
            duration,
        ));
    }
    Outcome {
        call_id: call.id.clone(),
        block,
        error: error_line,
        store_error,
        deferred: None,
    }
}

/// The line a failed call adds to the run's errors.
fn error_line(call: &ToolUse, output: &ToolOutput, error: Option<&ToolError>) -> Option<String> {
    match error {
        None => output
            .is_error
            .then(|| format!("{}: {}", call.name, output.to_text())),
        Some(error) => Some(format!("{}: {error}", call.name)),
    }
}

/// The call's result block, and its output again when an event needs it too (`listening`);
/// else the output goes into the block whole.
fn blocks(id: &str, output: ToolOutput, listening: bool) -> (MessageContent, Option<ToolOutput>) {
    match listening {
        true => (result_block(id, &output), Some(output)),
        false => (into_result_block(id, output), None),
    }
}

/// The event that tells how a call ended: `ToolCompleted` with the tool's display of its
/// result, or `ToolFailed`.
fn ended(
    call: &ToolUse,
    tool: Option<&dyn crate::Tool>,
    input: &Value,
    output: ToolOutput,
    error: Option<&ToolError>,
    duration: std::time::Duration,
) -> AgentEvent {
    let Some(error) = error else {
        let display = tool
            .and_then(|tool| contain(|| tool.result_display(input, &output)).ok())
            .unwrap_or_else(|| ResultDisplay {
                title: call.name.clone(),
                summary: String::new(),
                content: Value::String(output.to_text().into_owned()),
            });
        return AgentEvent::ToolCompleted {
            id: call.id.clone(),
            name: call.name.clone(),
            duration,
            output,
            display,
        };
    };
    AgentEvent::ToolFailed {
        id: call.id.clone(),
        name: call.name.clone(),
        duration,
        kind: error.kind(),
        output,
    }
}

/// [`result_block`], taking the output's content instead of copying it.
fn into_result_block(id: &str, output: ToolOutput) -> MessageContent {
    MessageContent::ToolResult {
        tool_use_id: id.to_owned(),
        content: output.content,
        is_error: output.is_error,
    }
}

fn result_block(id: &str, output: &ToolOutput) -> MessageContent {
    MessageContent::ToolResult {
        tool_use_id: id.to_owned(),
        content: output.content.clone(),
        is_error: output.is_error,
    }
}

impl AgentInner {
    /// What the calls of one turn share in their contexts: the agent's (with its file
    /// checkpointer, which reads the calls' message when a file changes), plus the run's
    /// sub-agent runner (made once a batch, not once a call).
    pub(crate) fn turn_context(self: &Arc<Self>, emit: &Emit) -> ToolContext {
        let shared = self.call_context.get_or_init(|| {
            ToolContext::new(self.working_dir.clone())
                .with_session_id(self.recorder.session_id().clone())
                .with_agent_id(self.agent_id.clone())
                .with_state(self.state.clone())
                .with_file_tracker(self.files.clone())
                .with_session_values(self.session.clone())
                .with_sandbox(self.sandbox.clone())
                .with_file_checkpointer(Arc::new(CallCheckpointer {
                    checkpoints: self.checkpoints.clone(),
                    message: self.call_message.clone(),
                }))
        });
        shared
            .clone()
            .with_subagents(Arc::new(Subagents::new(self.clone(), emit.clone())))
    }

    /// The context of one call, from its turn's.
    pub(crate) fn tool_context(
        &self,
        turn: &ToolContext,
        call_id: &str,
        emit: &Emit,
        cancel: &CancellationToken,
    ) -> ToolContext {
        let context = turn
            .clone()
            .with_tool_call_id(call_id)
            .with_cancellation(cancel.child_token());
        // Progress is an event that only informs: no sink when nobody listens.
        if !emit.listening() {
            return context;
        }
        let progress = emit.clone();
        let id = call_id.to_owned();
        context.with_updates(move |update| {
            progress(AgentEvent::ToolProgress {
                id: id.clone(),
                update: update.kind,
            })
        })
    }
}
