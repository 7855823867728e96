//! From records back to a conversation, answering every call a crash left open.
//!
//! The rules, which make a resumed history valid for every provider and the same on every
//! resume:
//! - every `tool_use` gets exactly one `tool_result`, in the order of the calls: the stored
//!   one if there is one (the first, should a call have two), else a sealing error;
//! - a call with a [`Record::ToolStarted`] and no result may have partly happened:
//!   [`STOPPED_MESSAGE`]; a call never started, or stopped while waiting for a permission
//!   answer, did not run at all: [`NEVER_STARTED_MESSAGE`];
//! - except in a last turn the run stopped for deferred approvals
//!   ([`Record::ApprovalDeferred`]): there only calls that started and did not finish are
//!   sealed; the others stay open, listed in [`Restored::pending`] while unanswered, and run
//!   (or are refused) when the run continues;
//! - nothing is ever run again: recovery only writes results;
//! - a user message after a user message joins it (providers refuse two in a row);
//! - a model turn stored twice (the same calls again, or the same text right after itself)
//!   counts once, so no tool_use id is ever repeated;
//! - a record the store could not read ([`Record::Unreadable`]) is left out; an unreadable
//!   prompt leaves a note in its place, so the conversation still alternates. Both are told
//!   in [`Restored::skipped`].

use std::collections::{HashMap, HashSet};

use super::{PendingApproval, Record, SessionError, SessionStore};
use crate::ContentBlock;
use crate::model::{History, Message, MessageContent, Role, ToolUse};
use crate::permission::PermissionAnswer;

/// The result of a call that had started when the process stopped.
pub const STOPPED_MESSAGE: &str =
    "the process stopped while this call ran; it may have partly happened";

/// The result of a call that had not started when the process stopped.
pub const NEVER_STARTED_MESSAGE: &str = "this call did not run: the process stopped before it \
                                         started. Call the tool again if it is still needed.";

/// A conversation rebuilt from records.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct Restored {
    /// The messages, ready to send to a model — except when [`pending`](Self::pending) is
    /// not empty or the last turn's calls still wait to run after deferred approvals: then
    /// the last message is that turn's, its calls not yet answered, and
    /// [`Agent::continue_run`](crate::agent::Agent::continue_run) finishes it.
    pub messages: Vec<Message>,
    /// The `tool_result` records made for calls left open at the end of the records. Append
    /// them to the session so that the next restore finds them stored.
    pub seals: Vec<Record>,
    /// The calls of the last turn waiting for a deferred approval, in call order.
    pub pending: Vec<PendingApproval>,
    /// The last turn, when it waits for deferred approvals (answered or not).
    pub(crate) deferred: Option<DeferredTurn>,
    /// The last compaction ([`Record::Compacted`]): what the model is sent in place of the
    /// messages before [`Compaction::first_kept`]. `None` when the session never compacted.
    pub compaction: Option<Compaction>,
    /// The calls whose results the model is sent as a short note
    /// ([`Record::ToolResultsCleared`]), in the order they were cleared.
    pub cleared: Vec<String>,
    /// What was left out, one sentence each, for a person: records the store could not read,
    /// model turns stored twice. Empty for a session stored whole.
    pub skipped: Vec<String>,
}

/// What stands in the conversation for a prompt the store could not read.
pub const UNREADABLE_PROMPT: &str =
    "[a message of this conversation could not be read back from the session store]";

/// A [`Record::Compacted`]: the summary that stands in for the messages before `first_kept`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// The model's summary of the earlier messages.
    pub summary: String,
    /// The index of the first message sent verbatim.
    pub first_kept: usize,
}

/// A last turn left open by deferred approvals: what is known of each of its calls.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeferredTurn {
    /// Every call of the turn, in order.
    pub(crate) calls: Vec<ToolUse>,
    /// The stored results (seals included), by call id.
    pub(crate) results: HashMap<String, MessageContent>,
    /// The stored answers to deferred questions, by call id (and those to permission
    /// questions of calls that run again for their tool's questions).
    pub(crate) answers: HashMap<String, PermissionAnswer>,
    /// The stored answers to the questions each call's tool asked, in order: a call that runs
    /// again is given them instead of asking.
    pub(crate) replies: HashMap<String, Vec<crate::ElicitationAnswer>>,
}

/// Rebuilds the conversation from a session's records; see the module docs for the rules.
pub fn restore(records: &[Record]) -> Restored {
    let mut restored = restore_messages(records);
    for record in records {
        match record {
            Record::Compacted {
                summary,
                first_kept,
            } => {
                restored.compaction = Some(Compaction {
                    summary: summary.clone(),
                    first_kept: *first_kept,
                });
            }
            Record::ToolResultsCleared { ids } => restored.cleared.extend(ids.iter().cloned()),
            _ => {}
        }
    }
    restored
}

/// The stored session `id` as the conversation a resume would rebuild from it: calls a crash
/// left open are answered the way [`Agent::resume`](crate::agent::Agent::resume) answers them,
/// but only here: nothing is written, and no lease is taken, so a session another agent holds
/// can be read.
pub async fn stored_conversation(
    store: &dyn SessionStore,
    id: &str,
) -> Result<Vec<Message>, SessionError> {
    Ok(conversation(&store.load(id).await?))
}

/// [`stored_conversation`] of records already loaded, for a caller that reads them for more
/// than the conversation and should not load them twice.
pub fn conversation(records: &[Record]) -> Vec<Message> {
    restore(records).messages
}

/// The messages part of [`restore`].
fn restore_messages(records: &[Record]) -> Restored {
    let mut messages = Vec::new();
    let mut open: Option<OpenTurn> = None;
    let mut skipped = Vec::new();
    // Every tool_use id of the kept turns: a turn that repeats one was stored twice.
    let mut seen_calls = HashSet::new();
    for (index, record) in records.iter().enumerate() {
        match record {
            Record::UserMessage { message } => {
                close(&mut messages, open.take());
                push_user_message(&mut messages, message.clone());
            }
            Record::ModelTurn { message } => {
                let calls: Vec<ToolUse> = message.tool_uses().cloned().collect();
                // Checked before the open turn closes: the copy's records answer its calls.
                let repeated = match calls.is_empty() {
                    true => messages.last() == Some(message),
                    false => calls.iter().any(|call| seen_calls.contains(&call.id)),
                };
                if repeated {
                    tracing::warn!(
                        record = index,
                        "a model turn is stored twice; the copy is skipped"
                    );
                    skipped.push(format!(
                        "record {index}: a model turn stored a second time, left out"
                    ));
                    continue;
                }
                close(&mut messages, open.take());
                seen_calls.extend(calls.iter().map(|call| call.id.clone()));
                messages.push(message.clone());
                if !calls.is_empty() {
                    open = Some(OpenTurn {
                        calls,
                        ..OpenTurn::default()
                    });
                }
            }
            Record::ToolStarted { id, .. } => {
                if let Some(turn) = &mut open {
                    turn.started.insert(id.clone());
                }
            }
            Record::ToolResult { block } => result(open.as_mut(), block),
            // A call waiting for an answer has not run yet; it runs once allowed.
            Record::PermissionAsked { id, title, .. } => {
                if let Some(turn) = &mut open {
                    turn.started.remove(id);
                    turn.titles.insert(id.clone(), title.clone());
                }
            }
            Record::PermissionAnswered {
                id,
                allowed,
                always,
                message,
            } => {
                if let Some(turn) = &mut open {
                    turn.answered(id, *allowed, *always, message.as_deref());
                }
            }
            Record::ElicitationAsked { .. }
            | Record::ElicitationAnswered { .. }
            | Record::ApprovalDeferred { .. } => {
                if let Some(turn) = &mut open {
                    turn.question(record);
                }
            }
            Record::Usage { .. }
            | Record::FileBlob { .. }
            | Record::FileCheckpoint { .. }
            | Record::FilesRewound { .. }
            | Record::Compacted { .. }
            | Record::ToolResultsCleared { .. }
            | Record::ModelFallback { .. } => {}
            Record::Unreadable {
                seq,
                stored_kind,
                detail,
            } => {
                skipped.push(format!(
                    "record {seq} ({stored_kind}) cannot be read, left out: {detail}"
                ));
                // A lost prompt still takes its turn, or two answers would follow each other.
                if stored_kind == "user_message" {
                    close(&mut messages, open.take());
                    push_user_message(&mut messages, Message::user(UNREADABLE_PROMPT));
                }
            }
        }
    }
    let mut restored = restore_turn(messages, open);
    restored.skipped = skipped;
    restored
}

/// A stored tool result, kept if it answers a call of the open turn (the first one stored).
fn result(open: Option<&mut OpenTurn>, block: &MessageContent) {
    if let (Some(turn), MessageContent::ToolResult { tool_use_id, .. }) = (open, block)
        && turn.calls.iter().any(|call| &call.id == tool_use_id)
    {
        turn.results
            .entry(tool_use_id.clone())
            .or_insert_with(|| block.clone());
    } else {
        tracing::warn!("a stored tool result answers no open call; it is skipped");
    }
}

impl OpenTurn {
    /// A question a call's tool asked, its answer, or a question deferred.
    fn question(&mut self, record: &Record) {
        match record {
            // A call that waits has not run (or runs again, when its tool's question waits).
            Record::ApprovalDeferred { id } => {
                self.started.remove(id);
                self.deferred.insert(id.clone());
            }
            Record::ElicitationAsked { id, question } => {
                let title = question.message().to_owned();
                self.titles.insert(id.clone(), title);
                self.asking.insert(id.clone(), question.clone());
            }
            Record::ElicitationAnswered { id, answer } if self.asking.remove(id).is_some() => {
                let replies = self.replies.entry(id.clone()).or_default();
                replies.push(answer.clone());
            }
            _ => {}
        }
    }

    /// A permission answer for the call `id` of this turn.
    fn answered(&mut self, id: &str, allowed: bool, always: bool, message: Option<&str>) {
        // Kept for a call that runs again (after a deferred question of its tool) too: it is
        // not asked twice. The first answer stored counts.
        let answer = match (allowed, always, message) {
            (true, false, _) => PermissionAnswer::Allow,
            (true, true, _) => PermissionAnswer::AllowAlways,
            (false, _, message) => {
                PermissionAnswer::Deny(message.unwrap_or("the user refused this call").to_owned())
            }
        };
        self.answers.entry(id.to_owned()).or_insert(answer);
        // Answered later, maybe elsewhere: the call has not run; it starts (with a
        // `ToolStarted`) when the run continues.
        if !self.deferred.contains(id) && allowed {
            self.started.insert(id.to_owned());
        }
    }
}

/// The end of [`restore_messages`]: the last turn, if its calls are open, sealed or left
/// pending.
fn restore_turn(mut messages: Vec<Message>, open: Option<OpenTurn>) -> Restored {
    let Some(mut turn) = open else {
        return Restored {
            messages,
            ..Restored::default()
        };
    };
    if turn.deferred.is_empty() {
        let seals = close(&mut messages, Some(turn))
            .into_iter()
            .map(|block| Record::ToolResult { block })
            .collect();
        return Restored {
            messages,
            seals,
            ..Restored::default()
        };
    }
    // The run stopped for approvals: calls that had started (after their answer) and have no
    // result may have partly happened and are sealed; the others stay open, to run (or be
    // refused) when the run continues.
    let mut seals = Vec::new();
    for call in &turn.calls {
        if turn.started.contains(&call.id) && !turn.results.contains_key(&call.id) {
            let seal = seal(&call.id, STOPPED_MESSAGE);
            turn.results.insert(call.id.clone(), seal.clone());
            seals.push(Record::ToolResult { block: seal });
        }
    }
    if turn.calls.iter().all(|c| turn.results.contains_key(&c.id)) {
        close(&mut messages, Some(turn));
        return Restored {
            messages,
            seals,
            ..Restored::default()
        };
    }
    let pending = turn
        .calls
        .iter()
        .filter(|call| {
            // For its tool's question; else, if its tool asked none, for permission.
            let waits = turn.asking.contains_key(&call.id)
                || !(turn.answers.contains_key(&call.id) || turn.replies.contains_key(&call.id));
            turn.deferred.contains(&call.id) && waits && !turn.results.contains_key(&call.id)
        })
        .map(|call| PendingApproval {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            title: turn
                .titles
                .get(&call.id)
                .cloned()
                .unwrap_or_else(|| call.name.clone()),
            input: call.input.json_or_empty().into_owned(),
            elicitation: turn.asking.get(&call.id).cloned(),
        })
        .collect();
    Restored {
        messages,
        seals,
        pending,
        deferred: Some(DeferredTurn {
            calls: turn.calls,
            results: turn.results,
            answers: turn.answers,
            replies: turn.replies,
        }),
        ..Restored::default()
    }
}

/// The records that rebuild `messages` (well formed: each assistant turn's calls answered by
/// the next user message), for a fork.
pub fn records_for(messages: &[Message]) -> Vec<Record> {
    let mut records = Vec::new();
    for message in messages {
        match message.role {
            Role::Assistant => records.push(Record::model_turn(message.clone())),
            Role::User => {
                let (results, rest): (Vec<_>, Vec<_>) = message
                    .content
                    .iter()
                    .cloned()
                    .partition(|block| matches!(block, MessageContent::ToolResult { .. }));
                records.extend(
                    results
                        .into_iter()
                        .map(|block| Record::ToolResult { block }),
                );
                if !rest.is_empty() {
                    records.push(Record::user(Message {
                        role: Role::User,
                        content: rest,
                    }));
                }
            }
        }
    }
    records
}

/// Adds a user message, joining it to a user message the conversation ends with.
pub(crate) fn push_user_message(messages: &mut Vec<Message>, message: Message) {
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.extend(message.content),
        _ => messages.push(message),
    }
}

/// [`push_user_message`] for a shared [`History`]: a joined message replaces the last one.
pub(crate) fn push_user_message_to(messages: &mut History, message: Message) {
    match messages.last() {
        Some(last) if last.role == Role::User => {
            let mut joined = last.clone();
            joined.content.extend(message.content);
            messages.truncate(messages.len() - 1);
            messages.push(joined);
        }
        _ => messages.push(message),
    }
}

/// The calls of the last model turn, and what is known of them so far.
#[derive(Default)]
struct OpenTurn {
    calls: Vec<ToolUse>,
    started: HashSet<String>,
    results: HashMap<String, MessageContent>,
    /// Calls whose permission question was deferred.
    deferred: HashSet<String>,
    /// Answers to deferred questions.
    answers: HashMap<String, PermissionAnswer>,
    /// The titles of the questions asked.
    titles: HashMap<String, String>,
    /// The question each call's tool asked last and nobody answered yet.
    asking: HashMap<String, crate::Elicitation>,
    /// The answers to each call's tool's questions, in order.
    replies: HashMap<String, Vec<crate::ElicitationAnswer>>,
}

/// An error result saying `message`.
fn seal(id: &str, message: &str) -> MessageContent {
    MessageContent::ToolResult {
        tool_use_id: id.to_owned(),
        content: vec![ContentBlock::text(message)],
        is_error: true,
    }
}

/// Answers every call of `turn`, in call order, with its stored result or a seal; returns the
/// seals.
fn close(messages: &mut Vec<Message>, turn: Option<OpenTurn>) -> Vec<MessageContent> {
    let Some(mut turn) = turn else {
        return Vec::new();
    };
    let mut content = Vec::with_capacity(turn.calls.len());
    let mut seals = Vec::new();
    for call in &turn.calls {
        match turn.results.remove(&call.id) {
            Some(block) => content.push(block),
            None => {
                let message = match turn.started.contains(&call.id) {
                    true => STOPPED_MESSAGE,
                    false => NEVER_STARTED_MESSAGE,
                };
                let seal = seal(&call.id, message);
                seals.push(seal.clone());
                content.push(seal);
            }
        }
    }
    messages.push(Message {
        role: Role::User,
        content,
    });
    seals
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(id: &str) -> ToolUse {
        ToolUse::new(id, "write", json!({}))
    }

    fn turn(ids: &[&str]) -> Message {
        Message {
            role: Role::Assistant,
            content: ids
                .iter()
                .map(|id| MessageContent::ToolUse(call(id)))
                .collect(),
        }
    }

    fn result(id: &str, text: &str, is_error: bool) -> MessageContent {
        MessageContent::ToolResult {
            tool_use_id: id.into(),
            content: vec![ContentBlock::text(text)],
            is_error,
        }
    }

    #[test]
    fn open_calls_are_sealed_by_whether_they_started() {
        let records = vec![
            Record::user(Message::user("go")),
            Record::model_turn(turn(&["a", "b", "c"])),
            Record::ToolStarted {
                id: "a".into(),
                name: "write".into(),
            },
            Record::ToolStarted {
                id: "b".into(),
                name: "write".into(),
            },
            // Results arrive in completion order; the message keeps call order.
            Record::ToolResult {
                block: result("b", "done", false),
            },
        ];
        let restored = restore(&records);
        assert_eq!(restored.messages.len(), 3);
        assert_eq!(
            restored.messages[2].content,
            vec![
                result("a", STOPPED_MESSAGE, true),
                result("b", "done", false),
                result("c", NEVER_STARTED_MESSAGE, true),
            ]
        );
        assert_eq!(restored.seals.len(), 2);

        // With the seals stored, a second restore sees the same history and seals nothing.
        let mut again = records.clone();
        again.extend(restored.seals.clone());
        let second = restore(&again);
        assert_eq!(second.messages, restored.messages);
        assert!(second.seals.is_empty());
    }

    #[test]
    fn a_stored_result_is_kept_once_and_strays_are_skipped() {
        let records = vec![
            Record::user(Message::user("go")),
            Record::model_turn(turn(&["a"])),
            Record::ToolResult {
                block: result("a", "first", false),
            },
            Record::ToolResult {
                block: result("a", "second", false),
            },
            Record::ToolResult {
                block: result("zzz", "stray", false),
            },
        ];
        let restored = restore(&records);
        assert_eq!(
            restored.messages[2].content,
            vec![result("a", "first", false)]
        );
        assert!(restored.seals.is_empty());
    }

    #[test]
    fn a_prompt_after_tool_results_joins_their_message() {
        let records = vec![
            Record::user(Message::user("go")),
            Record::model_turn(turn(&["a"])),
            Record::user(Message::user("and then?")),
        ];
        let restored = restore(&records);
        assert_eq!(restored.messages.len(), 3);
        assert_eq!(
            restored.messages[2].content,
            vec![
                result("a", NEVER_STARTED_MESSAGE, true),
                MessageContent::Text {
                    text: "and then?".into()
                }
            ]
        );
        // A mid-history seal is not a tail seal: nothing to append.
        assert!(restored.seals.is_empty());
    }

    #[test]
    fn records_for_round_trips_a_conversation() {
        let mut messages = vec![Message::user("go"), turn(&["a", "b"])];
        messages.push(Message {
            role: Role::User,
            content: vec![
                result("a", "one", false),
                result("b", "two", true),
                MessageContent::Text {
                    text: "more".into(),
                },
            ],
        });
        messages.push(Message::assistant("done"));
        let restored = restore(&records_for(&messages));
        assert_eq!(restored.messages, messages);
        assert!(restored.seals.is_empty());
    }

    fn deferred(id: &str) -> [Record; 3] {
        [
            Record::ToolStarted {
                id: id.into(),
                name: "write".into(),
            },
            Record::PermissionAsked {
                id: id.into(),
                tool: "write".into(),
                title: format!("Write {id}"),
            },
            Record::ApprovalDeferred { id: id.into() },
        ]
    }

    #[test]
    fn a_turn_stopped_for_approvals_stays_open_and_lists_them() {
        let mut records = vec![
            Record::user(Message::user("go")),
            Record::model_turn(turn(&["a", "b", "c"])),
            Record::ToolStarted {
                id: "a".into(),
                name: "write".into(),
            },
            Record::ToolResult {
                block: result("a", "done", false),
            },
        ];
        records.extend(deferred("b"));
        let restored = restore(&records);
        assert_eq!(restored.messages.len(), 2, "no results message yet");
        assert!(restored.seals.is_empty());
        let ids: Vec<_> = restored.pending.iter().map(|p| &p.call_id).collect();
        assert_eq!(ids, ["b"]);
        assert_eq!(restored.pending[0].title, "Write b");
        let turn = restored.deferred.expect("the turn is open");
        assert_eq!(turn.results.len(), 1);

        // Answered: nothing pending, the answer is kept for the continuation.
        records.push(Record::PermissionAnswered {
            id: "b".into(),
            allowed: false,
            always: false,
            message: Some("no".into()),
        });
        let answered = restore(&records);
        assert!(answered.pending.is_empty());
        assert_eq!(
            answered.deferred.unwrap().answers["b"],
            PermissionAnswer::Deny("no".into())
        );

        // Killed while the continuation ran `c`: it is sealed as maybe done, `b` (refused but
        // not yet answered with a result) stays open.
        records.push(Record::ToolStarted {
            id: "c".into(),
            name: "write".into(),
        });
        let killed = restore(&records);
        assert_eq!(
            killed.seals,
            vec![Record::ToolResult {
                block: result("c", STOPPED_MESSAGE, true)
            }]
        );
        assert_eq!(killed.messages.len(), 2);

        // Once every call has a result, the turn closes as usual.
        records.extend(killed.seals);
        records.push(Record::ToolResult {
            block: result("b", "no", true),
        });
        let closed = restore(&records);
        assert!(closed.deferred.is_none() && closed.seals.is_empty());
        assert_eq!(
            closed.messages[2].content,
            vec![
                result("a", "done", false),
                result("b", "no", true),
                result("c", STOPPED_MESSAGE, true),
            ]
        );
    }

    #[test]
    fn a_call_stopped_at_its_tools_question_waits_and_runs_again_with_the_answers() {
        let form = |message: &str| crate::Elicitation::Form {
            message: message.into(),
            schema: json!({"type": "object", "properties": {}}),
        };
        let yes = crate::ElicitationAnswer::Accept { content: json!({}) };
        let mut records = vec![
            Record::user(Message::user("go")),
            Record::model_turn(turn(&["a"])),
            Record::ToolStarted {
                id: "a".into(),
                name: "write".into(),
            },
            // Its first question was answered as it ran; the second waits.
            Record::ElicitationAsked {
                id: "a".into(),
                question: form("First?"),
            },
            Record::ElicitationAnswered {
                id: "a".into(),
                answer: yes.clone(),
            },
            Record::ElicitationAsked {
                id: "a".into(),
                question: form("Second?"),
            },
            Record::ApprovalDeferred { id: "a".into() },
        ];
        let waiting = restore(&records);
        assert!(waiting.seals.is_empty(), "a call that waits is not sealed");
        assert_eq!(waiting.pending.len(), 1);
        assert_eq!(waiting.pending[0].title, "Second?");
        assert_eq!(waiting.pending[0].elicitation, Some(form("Second?")));

        records.push(Record::ElicitationAnswered {
            id: "a".into(),
            answer: crate::ElicitationAnswer::Decline,
        });
        let answered = restore(&records);
        assert!(answered.pending.is_empty() && answered.seals.is_empty());
        let turn = answered.deferred.expect("the call runs again");
        assert_eq!(
            turn.replies["a"],
            vec![yes, crate::ElicitationAnswer::Decline]
        );
    }

    #[test]
    fn the_last_compaction_and_every_cleared_result_are_restored() {
        let records = vec![
            Record::user(Message::user("go")),
            Record::ToolResultsCleared {
                ids: vec!["a".into()],
            },
            Record::Compacted {
                summary: "first".into(),
                first_kept: 1,
            },
            Record::model_turn(Message::assistant("ok")),
            Record::ToolResultsCleared {
                ids: vec!["b".into(), "c".into()],
            },
            Record::Compacted {
                summary: "second".into(),
                first_kept: 3,
            },
        ];
        let restored = restore(&records);
        assert_eq!(restored.messages.len(), 2, "markers add no message");
        assert_eq!(
            restored.compaction,
            Some(Compaction {
                summary: "second".into(),
                first_kept: 3
            })
        );
        assert_eq!(restored.cleared, ["a", "b", "c"]);
        let json = serde_json::to_value(&records[1]).unwrap();
        assert_eq!(json, json!({"kind": "tool_results_cleared", "ids": ["a"]}));
        assert_eq!(records[2].kind(), "compacted");
    }

    /// Every tool_use id of `messages`, in order.
    fn call_ids(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .flat_map(|m| m.tool_uses().map(|call| call.id.clone()))
            .collect()
    }

    #[test]
    fn a_model_turn_stored_twice_counts_once() {
        let records = vec![
            Record::user(Message::user("go")),
            Record::model_turn(turn(&["a", "b"])),
            Record::ToolResult {
                block: result("a", "one", false),
            },
            // The same turn again, its second result after the copy.
            Record::model_turn(turn(&["a", "b"])),
            Record::ToolResult {
                block: result("b", "two", false),
            },
            Record::user(Message::user("and?")),
            Record::model_turn(Message::assistant("Done.")),
            Record::model_turn(Message::assistant("Done.")),
        ];
        let restored = restore(&records);
        assert_eq!(call_ids(&restored.messages), ["a", "b"]);
        let roles: Vec<_> = restored.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::User, Role::Assistant, Role::User, Role::Assistant]
        );
        assert_eq!(
            restored.messages[2].content[..2],
            [result("a", "one", false), result("b", "two", false)]
        );
        assert!(restored.seals.is_empty());
        assert_eq!(restored.skipped.len(), 2, "{:?}", restored.skipped);
        assert!(restored.skipped[0].starts_with("record 3:"));

        // The same words in a later turn are not a copy.
        let mut again = records.clone();
        again.push(Record::user(Message::user("once more")));
        again.push(Record::model_turn(Message::assistant("Done.")));
        assert_eq!(restore(&again).messages.len(), 6);
    }

    #[test]
    fn an_unreadable_record_is_left_out_and_said_so() {
        let bad = |seq, kind: &str| Record::Unreadable {
            seq,
            stored_kind: kind.into(),
            detail: "expected value at line 1 column 1".into(),
        };
        let records = vec![
            bad(0, "user_message"),
            Record::model_turn(turn(&["a"])),
            Record::ToolResult {
                block: result("a", "one", false),
            },
            bad(3, "model_turn"),
            Record::ToolResult {
                block: result("lost", "of the lost turn", false),
            },
            Record::user(Message::user("next")),
            Record::model_turn(Message::assistant("ok")),
        ];
        let restored = restore(&records);
        // The lost prompt leaves a note, so the history still starts with the user and
        // alternates; the lost turn's result has no call to answer.
        assert_eq!(
            restored.messages,
            vec![
                Message::user(UNREADABLE_PROMPT),
                turn(&["a"]),
                Message {
                    role: Role::User,
                    content: vec![
                        result("a", "one", false),
                        MessageContent::Text {
                            text: "next".into()
                        },
                    ],
                },
                Message::assistant("ok"),
            ]
        );
        assert!(restored.seals.is_empty());
        assert_eq!(restored.skipped.len(), 2);
        assert!(
            restored.skipped[1].contains("record 3 (model_turn) cannot be read"),
            "{:?}",
            restored.skipped
        );
    }
}
