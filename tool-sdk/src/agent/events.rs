//! What a run reports as it goes.

use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::{AgentError, RunResult};
use crate::model::{StopReason, Usage};
use crate::permission::{PermissionAnswer, PermissionQuestion};
use crate::{AgentId, ResultDisplay, ToolErrorKind, ToolOutput, ToolUpdateKind};

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
