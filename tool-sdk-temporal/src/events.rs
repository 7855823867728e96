//! A run's events, as its records reach the session store.
//!
//! Temporal records what activities return, not what they do meanwhile, and the workflow's
//! history carries only ids and counts. The session store, which every activity writes to as
//! it goes, is where a run shows: the client tails it. A turn shows once it has wholly
//! arrived (the model's text does not stream token by token across processes), a call as it
//! starts and as it ends, a question as it is asked.

use std::collections::VecDeque;
use std::time::Duration;

use futures::Stream;
use tool_sdk::model::{Message, MessageContent};
use tool_sdk::session::Record;
use tool_sdk::{ContentBlock, Elicitation};

use crate::client::{RunHandle, RunStatus};
use crate::error::TemporalError;

/// What a run did, in the order its records were stored: [`RunHandle::events`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// A model turn, whole: its text, its thinking and its calls.
    Turn(Message),
    /// A call started running.
    ToolStarted {
        /// The tool_use id.
        id: String,
        /// The tool.
        name: String,
    },
    /// A call ended (ran, was refused, or was answered as not run): its result, as the model
    /// gets it.
    ToolResult {
        /// The tool_use id.
        id: String,
        /// The result.
        content: Vec<ContentBlock>,
        /// Whether it is an error.
        is_error: bool,
    },
    /// A call waits for a person's answer: give it with [`RunHandle::answer_approval`].
    ApprovalAsked {
        /// The tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// The question's title (`Write src/main.rs`).
        title: String,
    },
    /// A call's question was answered.
    ApprovalAnswered {
        /// The tool_use id.
        id: String,
        /// Whether it may run.
        allowed: bool,
    },
    /// A call's tool asked the user a question: give the answer with
    /// [`RunHandle::answer_elicitation`].
    ElicitationAsked {
        /// The tool_use id.
        id: String,
        /// The question: a form, or a page to open.
        question: Elicitation,
    },
    /// A message joined the conversation as the user's: a stop hook sent the run on with it.
    Prompt(Message),
}

impl RunEvent {
    /// The events one record stands for (none for records that only count, like usage).
    fn of(record: Record) -> Vec<RunEvent> {
        match record {
            Record::ModelTurn { message } => vec![RunEvent::Turn(message)],
            Record::UserMessage { message } => vec![RunEvent::Prompt(message)],
            Record::ToolStarted { id, name } => vec![RunEvent::ToolStarted { id, name }],
            Record::ToolResult {
                block:
                    MessageContent::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    },
            } => vec![RunEvent::ToolResult {
                id: tool_use_id,
                content,
                is_error,
            }],
            Record::PermissionAsked { id, tool, title } => {
                vec![RunEvent::ApprovalAsked { id, tool, title }]
            }
            Record::PermissionAnswered { id, allowed, .. } => {
                vec![RunEvent::ApprovalAnswered { id, allowed }]
            }
            Record::ElicitationAsked { id, question } => {
                vec![RunEvent::ElicitationAsked { id, question }]
            }
            _ => Vec::new(),
        }
    }
}

/// Where a tail of a run's session is.
struct Tail<'a> {
    run: &'a RunHandle,
    every: Duration,
    /// How many of the session's records were seen.
    seen: usize,
    ready: VecDeque<RunEvent>,
    /// The run has ended and its last records were read.
    done: bool,
}

impl Tail<'_> {
    /// Reads the records stored since the last look.
    async fn look(&mut self) -> Result<(), TemporalError> {
        let records = self.run.store.load(&self.run.session_id).await?;
        for record in records.into_iter().skip(self.seen) {
            self.seen += 1;
            self.ready.extend(RunEvent::of(record));
        }
        Ok(())
    }

    async fn next(&mut self) -> Option<Result<RunEvent, TemporalError>> {
        loop {
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            if self.done {
                return None;
            }
            if let Err(error) = self.look().await {
                return Some(Err(error));
            }
            if !self.ready.is_empty() {
                continue;
            }
            // Nothing new: has the run ended? Its records are all stored before it does.
            match self.run.describe().await {
                Err(error) => return Some(Err(error)),
                Ok(info) if info.status != RunStatus::Running => {
                    if let Err(error) = self.look().await {
                        return Some(Err(error));
                    }
                    self.done = true;
                }
                Ok(_) => tokio::time::sleep(self.every).await,
            }
        }
    }
}

impl RunHandle {
    /// The run's events as its records reach the store, looked for every `every`; the
    /// stream ends once the run has ended and its last events came. A run started by this
    /// handle's client shows from its prompt on (the prompt excluded); an
    /// [attached](crate::AgentClient::attach) one from the session's start.
    ///
    /// An event comes about `every` after its record was stored: a model turn once it has
    /// wholly arrived, a call as it starts and as it ends (BENCHMARKS.md measures the
    /// delay).
    pub fn events(
        &self,
        every: Duration,
    ) -> impl Stream<Item = Result<RunEvent, TemporalError>> + Send + '_ {
        let tail = Tail {
            run: self,
            every,
            seen: self.from,
            ready: VecDeque::new(),
            done: false,
        };
        futures::stream::unfold(tail, |mut tail| async move {
            let event = tail.next().await?;
            Some((event, tail))
        })
    }
}
