//! What a run reports as it goes ([`AgentEvent`], through an [`Emit`]), and how it went
//! ([`RunResult`]).

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::Stream;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::error::AgentError;
use crate::model::{History, StopReason, Usage};
use crate::permission::{PermissionAnswer, PermissionQuestion};
use crate::{
    AgentId, Elicitation, ElicitationAnswer, ResultDisplay, ToolErrorKind, ToolOutput,
    ToolUpdateKind,
};

/// One thing that happened during a run, in order.
#[derive(Debug)]
#[non_exhaustive]
pub enum AgentEvent {
    /// A model turn began.
    TurnStarted {
        /// 1-based.
        turn: u32,
    },
    /// Text from the model, as it streams.
    TextDelta(String),
    /// Reasoning from the model, as it streams.
    ThinkingDelta(String),
    /// The model failed before it streamed anything, its retries spent: this request goes
    /// to the next fallback model (see
    /// [`ModelSettings::with_fallback_models`](super::ModelSettings::with_fallback_models)).
    ModelFallback {
        /// The id of the model that failed.
        from: String,
        /// The id of the model the request goes to now.
        to: String,
        /// Why `from` failed.
        reason: String,
    },
    /// The model called a tool; it is about to be checked and run.
    ToolRequested {
        /// The tool_use id.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments as the model sent them.
        input: Value,
        /// The tool's display title for this call.
        title: String,
    },
    /// A call needs the user's permission: answer it with [`PermissionRequest::allow`],
    /// [`allow_always`](PermissionRequest::allow_always) or [`deny`](PermissionRequest::deny).
    /// Dropping it unanswered denies the call.
    PermissionRequested(PermissionRequest),
    /// A running tool asks the user a question ([`ToolContext::elicit`](crate::ToolContext::elicit)):
    /// answer it with [`ElicitationRequest::accept`], [`decline`](ElicitationRequest::decline)
    /// or [`cancel`](ElicitationRequest::cancel). Dropping it unanswered cancels it.
    ElicitationRequested(ElicitationRequest),
    /// A running tool reported progress or metadata (never sent to the model).
    ToolProgress {
        /// The tool_use id.
        id: String,
        /// What it reported.
        update: ToolUpdateKind,
    },
    /// A call finished and its result goes back to the model.
    ToolCompleted {
        /// The tool_use id.
        id: String,
        /// The tool's name.
        name: String,
        /// How long it took, checks included.
        duration: Duration,
        /// What the model gets.
        output: ToolOutput,
        /// How to show it.
        display: ResultDisplay,
    },
    /// A call failed (before or while running); the error goes back to the model.
    ToolFailed {
        /// The tool_use id.
        id: String,
        /// The tool's name.
        name: String,
        /// How long it took.
        duration: Duration,
        /// The kind of failure.
        kind: ToolErrorKind,
        /// What the model gets.
        output: ToolOutput,
    },
    /// A model turn ended.
    TurnCompleted {
        /// 1-based.
        turn: u32,
        /// Why the model stopped.
        stop_reason: StopReason,
        /// Tokens of this turn.
        usage: Usage,
        /// What they cost, in USD; `None` when the model's price is unknown.
        cost_usd: Option<f64>,
    },
    /// The model's typed answer ([`Agent::prompt_as`](super::Agent::prompt_as)) was refused
    /// and sent back with what is wrong with it.
    OutputRejected {
        /// 1-based: how many answers were refused so far.
        attempt: u32,
        /// What is wrong with it, AJV style.
        errors: crate::validate::InputErrors,
    },
    /// Token totals so far in this run.
    Usage(Usage),
    /// The conversation was compacted to fit the context window: the model is sent a summary
    /// in place of its older part from now on (see
    /// [`ContextSettings::with_compaction`](super::ContextSettings::with_compaction)).
    Compacted {
        /// The estimated size of the request before, in tokens.
        tokens_before: u64,
        /// The estimated size after.
        tokens_after: u64,
        /// Tokens of the request that wrote the summary (also in the run's
        /// [`AgentEvent::Usage`] totals that precede this event).
        usage: Usage,
        /// What they cost, in USD; `None` when the model's price is unknown.
        cost_usd: Option<f64>,
    },
    /// The content of older tool results was replaced by a short note in what the model is
    /// sent, to save context.
    ToolResultsCleared {
        /// How many results were cleared in this batch.
        count: usize,
    },
    /// An event of a sub-agent started by the Task tool.
    Subagent {
        /// The sub-agent.
        agent_id: AgentId,
        /// Its event.
        event: Box<AgentEvent>,
    },
    /// The run failed; [`AgentEvent::Finished`] follows.
    Error(AgentError),
    /// The run is over. Always the last event.
    Finished(Box<RunResult>),
}

/// A pending permission question, for apps that stream events instead of setting a
/// [`PermissionHandler`](crate::permission::PermissionHandler).
#[derive(Debug)]
pub struct PermissionRequest {
    /// The tool_use id.
    pub id: String,
    /// The tool, its (validated) input, what to show, and the rule "allow always" adds.
    pub question: PermissionQuestion,
    pub(crate) answer: oneshot::Sender<PermissionAnswer>,
}

impl PermissionRequest {
    /// Lets the call run, this once.
    pub fn allow(self) {
        let _ = self.answer.send(PermissionAnswer::Allow);
    }

    /// Lets the call run, and calls like it for the rest of the session.
    pub fn allow_always(self) {
        let _ = self.answer.send(PermissionAnswer::AllowAlways);
    }

    /// Answers with whatever the app decided.
    pub fn answer(self, answer: PermissionAnswer) {
        let _ = self.answer.send(answer);
    }

    /// Refuses the call; `reason` goes back to the model.
    pub fn deny(self, reason: impl Into<String>) {
        let _ = self.answer.send(PermissionAnswer::Deny(reason.into()));
    }
}

/// A question a running tool asks the user, for apps that stream events instead of setting an
/// [elicitation handler](super::PermissionSettings::with_elicitation_handler).
#[derive(Debug)]
pub struct ElicitationRequest {
    /// The tool_use id of the asking call.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// The question: a form to fill in, or a page to open.
    pub question: Elicitation,
    pub(crate) answer: oneshot::Sender<ElicitationAnswer>,
}

impl ElicitationRequest {
    /// Answers with the form's values (an object with the form's fields; `null` for a page).
    pub fn accept(self, content: Value) {
        self.answer(ElicitationAnswer::Accept { content });
    }

    /// The user said no.
    pub fn decline(self) {
        self.answer(ElicitationAnswer::Decline);
    }

    /// The user dismissed the question.
    pub fn cancel(self) {
        self.answer(ElicitationAnswer::Cancel);
    }

    /// Answers with whatever the app decided.
    pub fn answer(self, answer: ElicitationAnswer) {
        let _ = self.answer.send(answer);
    }
}

/// How a run went.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// The model's final text.
    pub text: String,
    /// The whole conversation after the run: the agent's own, shared rather than copied
    /// (cheap to clone; `to_vec` for a `Vec`).
    pub messages: History,
    /// Tokens used by the run.
    pub usage: Usage,
    /// What [`usage`](Self::usage) cost, in USD; `None` when the model's price is unknown
    /// (see [`ModelSettings::with_model_info`](super::ModelSettings::with_model_info)) or no turn ran.
    pub cost_usd: Option<f64>,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls made (including refused and failed ones).
    pub tool_calls: usize,
    /// Files the tools changed.
    pub files_modified: Vec<PathBuf>,
    /// Failed tool calls, as `name: message`.
    pub errors: Vec<String>,
    /// Why the run failed, if it did.
    pub error: Option<AgentError>,
    /// Why the model last stopped.
    pub stop_reason: Option<StopReason>,
    /// Wall-clock time of the run.
    pub duration: Duration,
    /// The typed answer, validated, when the run asked for one ([`Agent::prompt_as`](super::Agent::prompt_as)); read
    /// it with [`RunResult::output_as`].
    pub output: Option<serde_json::Value>,
}

/// A run in progress: a stream of [`AgentEvent`]s ending with [`AgentEvent::Finished`].
pub struct AgentRun {
    events: mpsc::UnboundedReceiver<AgentEvent>,
    cancel: CancellationToken,
    _guard: tokio_util::sync::DropGuard,
}

impl std::fmt::Debug for AgentRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentRun")
            .field("cancelled", &self.cancel.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl AgentRun {
    /// The run whose events come through `events`, cancelled by `cancel` (and when dropped).
    pub(crate) fn new(
        events: mpsc::UnboundedReceiver<AgentEvent>,
        cancel: CancellationToken,
    ) -> Self {
        AgentRun {
            events,
            cancel: cancel.clone(),
            _guard: cancel.drop_guard(),
        }
    }

    /// Stops the run: running calls are stopped, pending ones answered "cancelled", so the
    /// conversation stays valid for the next run.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// The token that cancels this run, to hand to other tasks.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.cancel.clone()
    }

    /// Drains the events and returns the result; permission requests are refused, tools'
    /// questions cancelled.
    pub async fn result(mut self) -> RunResult {
        let mut last = None;
        while let Some(event) = self.events.recv().await {
            match event {
                AgentEvent::PermissionRequested(request) => {
                    let message = crate::permission::not_allowed_message(&request.question);
                    request.deny(message)
                }
                AgentEvent::Finished(result) => last = Some(*result),
                // Dropped: cancelled.
                AgentEvent::ElicitationRequested(_) => {}
                _ => {}
            }
        }
        last.unwrap_or_else(|| RunResult {
            error: Some(AgentError::Cancelled),
            ..RunResult::default()
        })
    }
}

impl Stream for AgentRun {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        self.events.poll_recv(cx)
    }
}

/// Where a run's events go. When nobody reads them (`Agent::prompt`), events that only
/// inform are not built at all ([`Emit::notify`]): building one clones the call's input and
/// renders its display, which would be most of a trivial call's cost. Questions (a
/// `PermissionRequested`) are always sent: they need an answer either way.
#[derive(Clone)]
pub(crate) struct Emit {
    sink: Arc<dyn Fn(AgentEvent) + Send + Sync>,
    listening: bool,
}

impl Emit {
    /// Events for someone who reads them all.
    pub(crate) fn to(sink: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Emit {
            sink: Arc::new(sink),
            listening: true,
        }
    }

    /// Questions only: events that only inform are dropped before they are built.
    pub(crate) fn questions_to(sink: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Emit {
            sink: Arc::new(sink),
            listening: false,
        }
    }

    /// Events for `sink`, heard as this one is (a sub-agent's, forwarded to its parent's).
    pub(crate) fn forward(&self, sink: impl Fn(AgentEvent) + Send + Sync + 'static) -> Self {
        Emit {
            sink: Arc::new(sink),
            listening: self.listening,
        }
    }

    /// Whether events that only inform are read by anyone.
    pub(crate) fn listening(&self) -> bool {
        self.listening
    }

    /// Sends the event `make` builds, if anyone listens.
    pub(crate) fn notify(&self, make: impl FnOnce() -> AgentEvent) {
        if self.listening {
            (self.sink)(make());
        }
    }
}

impl std::ops::Deref for Emit {
    type Target = dyn Fn(AgentEvent) + Send + Sync;

    fn deref(&self) -> &Self::Target {
        &*self.sink
    }
}
