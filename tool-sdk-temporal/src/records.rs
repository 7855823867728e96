//! What a session's records say of its turns and calls.

use tool_sdk::model::{Message, MessageContent, ToolUse, Usage};
use tool_sdk::session::Record;

/// Whether a record of the call `id` matching `kind` is stored.
pub(crate) fn has(records: &[Record], id: &str, kind: impl Fn(&Record) -> bool) -> bool {
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
pub(crate) fn turn_position(records: &[Record], index: usize) -> Option<usize> {
    records
        .iter()
        .enumerate()
        .filter(|(_, record)| matches!(record, Record::ModelTurn { .. }))
        .nth(index)
        .map(|(at, _)| at)
}

/// The `index`th model turn and the usage stored with it.
pub(crate) fn stored_turn(records: &[Record], index: usize) -> Option<(&Message, Usage)> {
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
pub(crate) fn is_prompt(record: &Record) -> bool {
    matches!(record, Record::UserMessage { .. })
}

pub(crate) fn model_turns(records: &[Record]) -> impl Iterator<Item = &Message> {
    records.iter().filter_map(|record| match record {
        Record::ModelTurn { message } => Some(message),
        _ => None,
    })
}

/// Whether the call `id` has a stored result, and whether it is an error.
pub(crate) fn stored_result(records: &[Record], id: &str) -> Option<bool> {
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

pub(crate) fn find_call<'r>(records: &'r [Record], id: &str) -> Option<&'r ToolUse> {
    model_turns(records)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .find_map(|turn| turn.tool_uses().find(|call| call.id == id))
}

pub(crate) fn started(records: &[Record], call: &str) -> bool {
    records
        .iter()
        .any(|record| matches!(record, Record::ToolStarted { id, .. } if id == call))
}
