//! A run's events, as its records reach the session store and its activities heartbeat.
//!
//! Temporal records what activities return, not what they do meanwhile, and the workflow's
//! history carries only ids and counts. The session store, which every activity writes to as
//! it goes, is where a run shows: the client tails it. A turn shows once it has wholly
//! arrived, a call as it starts and as it ends, a question as it is asked. What a running
//! activity shows before it ends (the model's text as it streams, a tool's progress) comes
//! from the details of its last heartbeat, which the server returns with the workflow's
//! description (`live.rs`).

use std::collections::{HashSet, VecDeque};
use std::time::Duration;

use futures::Stream;
use temporalio_client::WorkflowDescribeOptions;
use temporalio_common::data_converters::{
    ActivitySerializationContext, DecodablePayloads, PayloadConverter, SerializationContextData,
};
use tool_sdk::model::{Message, MessageContent};
use tool_sdk::session::Record;
use tool_sdk::{ContentBlock, Elicitation};

use crate::client::{RunHandle, RunStatus};
use crate::error::TemporalError;
use crate::live::{Follow, Live};

/// What a run did, in the order its records were stored: [`RunHandle::events`].
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RunEvent {
    /// Text of the model's turn as it streams (from its worker's heartbeats, a few tenths of
    /// a second behind the model). The deltas of a turn, since its last
    /// [`TextRestarted`](Self::TextRestarted), add up to its text (`Message::text`): what did
    /// not stream in time comes just before the [`Turn`](Self::Turn).
    TextDelta(String),
    /// The model's thinking as it streams, before its text, as for
    /// [`TextDelta`](Self::TextDelta). What did not stream in time comes just before the
    /// [`Turn`](Self::Turn) when what did is the start of the turn's thinking (its blocks one
    /// after another); a provider that streams separators its stored thinking lacks gets none
    /// of that, and the turn carries the thinking whole.
    ThinkingDelta(String),
    /// The turn's request was sent again (the worker streaming it died, or its attempt
    /// failed): the text and thinking streamed of it so far are void, and they stream again
    /// from their start.
    TextRestarted,
    /// A model turn, whole: its text, its thinking and its calls.
    Turn(Message),
    /// A call started running.
    ToolStarted {
        /// The tool_use id.
        id: String,
        /// The tool.
        name: String,
    },
    /// A running call's tool reported progress
    /// ([`ToolContext::progress`](tool_sdk::ToolContext::progress)), as it runs. Live only:
    /// a line reported in the last moments before the call ends may not show, and none is
    /// stored.
    ToolProgress {
        /// The tool_use id.
        id: String,
        /// The line.
        message: String,
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
    /// What was shown of the turn that streams and the calls that run.
    follow: Follow,
    /// The calls that ended (their late heartbeats show nothing).
    ended: HashSet<String>,
    /// Whether the turns before the first record seen were counted.
    counted: bool,
}

impl Tail<'_> {
    /// Reads the records stored since the last look.
    async fn look(&mut self) -> Result<(), TemporalError> {
        let records = self.run.store.load(&self.run.session_id).await?;
        if !self.counted {
            self.counted = true;
            let before = &records[..self.seen.min(records.len())];
            let turns = before
                .iter()
                .filter(|r| matches!(r, Record::ModelTurn { .. }));
            self.follow.turns_before(turns.count());
        }
        for record in records.into_iter().skip(self.seen) {
            self.seen += 1;
            match &record {
                Record::ModelTurn { message } => {
                    self.ready.extend(self.follow.turn_stored(message));
                }
                Record::ToolResult {
                    block: MessageContent::ToolResult { tool_use_id, .. },
                } => {
                    self.follow.call_ended(tool_use_id);
                    self.ended.insert(tool_use_id.clone());
                }
                _ => {}
            }
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
            // The server first, then the store: what a heartbeat shows was stored before
            // it (a call's start, the turns before the one streaming), and so were all the
            // records of a run that ended.
            let (status, live) = match self.run.live().await {
                Ok(described) => described,
                Err(error) => return Some(Err(error)),
            };
            if let Err(error) = self.look().await {
                return Some(Err(error));
            }
            for details in live {
                let ended = matches!(&details, Live::Progress { call_id, .. }
                    if self.ended.contains(call_id));
                if !ended {
                    self.ready.extend(self.follow.heartbeat(details));
                }
            }
            if status != RunStatus::Running {
                self.done = true;
            } else if self.ready.is_empty() {
                tokio::time::sleep(self.every).await;
            }
        }
    }
}

impl RunHandle {
    /// The run's events as its records reach the store and its activities heartbeat,
    /// looked for every `every`; the stream ends once the run has ended and its last events
    /// came. A run started by this handle's client shows from its prompt on (the prompt
    /// excluded); an [attached](crate::AgentClient::attach) one from the session's start.
    ///
    /// An event comes about `every` after its record was stored: a model turn once it has
    /// wholly arrived, a call as it starts and as it ends. The model's text and thinking
    /// ([`RunEvent::TextDelta`], [`RunEvent::ThinkingDelta`]) and a tool's progress
    /// ([`RunEvent::ToolProgress`]) come as they happen, from the workers' heartbeats, up to
    /// `every` plus 150 ms later (BENCHMARKS.md measures both delays).
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
            follow: Follow::default(),
            ended: HashSet::new(),
            counted: false,
        };
        futures::stream::unfold(tail, |mut tail| async move {
            let event = tail.next().await?;
            Some((event, tail))
        })
    }
}

impl RunHandle {
    /// Whether the run runs, and what its pending activities' last heartbeats show.
    async fn live(&self) -> Result<(RunStatus, Vec<Live>), TemporalError> {
        let described = self
            .handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|error| self.failed(error))?;
        let converter = PayloadConverter::default();
        let context = SerializationContextData::Activity(ActivitySerializationContext::new());
        let live = described
            .raw()
            .pending_activities
            .iter()
            .filter_map(|pending| pending.heartbeat_details.as_ref())
            .filter_map(|details| {
                let payloads = details.payloads.clone();
                DecodablePayloads::new(payloads, converter.clone(), context.clone())
                    .deserialize::<Live>()
                    // An activity of an older worker heartbeats nothing to show.
                    .ok()
            })
            .collect();
        Ok((described.status().into(), live))
    }
}
