//! The events of a Responses stream, read into typed structs and assembled into a turn.
//!
//! A turn is a list of output items (`reasoning`, `message`, `function_call`), each announced
//! by `response.output_item.added`, filled by deltas, and given whole by
//! `response.output_item.done`; `response.completed` (or `.incomplete`) ends it with the usage.

use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER;
use super::wire::{Event, WireItem, WireResponse, error_event, failed};
use crate::http::{TurnReader, truncate};
use crate::{MessageContent, ModelError, ModelEvent, ModelResponse, StopReason, ToolUse, Usage};

/// One output item as it arrives.
#[derive(Debug)]
enum Item {
    /// Kept whole once done, when it carries `encrypted_content` (without it, it cannot go
    /// back while nothing is stored at OpenAI).
    Reasoning(Option<Value>),
    Message(String),
    Call(Call),
    /// An item of a kind this client does not ask for (a built-in tool's call).
    Other,
}

#[derive(Debug, Default)]
struct Call {
    call_id: String,
    name: String,
    arguments: String,
    announced: bool,
    /// Its arguments are whole (`.arguments.done` or the item's `.done`).
    done: bool,
    /// Sent as [`ModelEvent::ToolUseCompleted`].
    sent: bool,
}

#[derive(Debug)]
struct Slot {
    index: u64,
    id: String,
    item: Item,
}

/// What has arrived of one turn so far.
#[derive(Debug, Default)]
pub(super) struct TurnState {
    /// By `output_index`.
    slots: Vec<Slot>,
    refused: bool,
    /// Where the last thinking came from, so a new summary part starts a new paragraph.
    thinking_at: Option<(u64, u64)>,
    usage: Option<Usage>,
    /// `response.incomplete`'s reason.
    incomplete: Option<String>,
    /// The response ended (completed or incomplete).
    ended: bool,
    /// Nothing more is read.
    done: bool,
}

impl TurnState {
    fn parse(data: &str, what: &str) -> Result<Event, ModelError> {
        let value: Value = serde_json::from_str(data).map_err(|error| {
            ModelError::stream_from(
                format!(
                    "unreadable OpenAI {what} ({error}): {}",
                    truncate(data, 200)
                ),
                error,
            )
        })?;
        Ok(Event::deserialize(value).unwrap_or_default())
    }

    /// The slot of an event's item: by `output_index`, else by `item_id`; made when new.
    fn slot(&mut self, index: Option<u64>, id: Option<&str>, new: fn() -> Item) -> &mut Slot {
        let found = match (index, id) {
            (Some(index), _) => self.slots.iter().position(|slot| slot.index == index),
            (None, Some(id)) => self.slots.iter().position(|slot| slot.id == id),
            (None, None) => self.slots.len().checked_sub(1),
        };
        let position = found.unwrap_or_else(|| {
            let index = index.unwrap_or_else(|| self.slots.last().map_or(0, |s| s.index + 1));
            let position = self.slots.partition_point(|slot| slot.index < index);
            let id = id.unwrap_or_default().to_owned();
            let item = new();
            self.slots.insert(position, Slot { index, id, item });
            position
        });
        &mut self.slots[position]
    }

    fn apply(&mut self, event: Event) -> Result<Vec<ModelEvent>, ModelError> {
        let mut events = Vec::new();
        let kind = event.kind.as_deref().unwrap_or("");
        let (index, id) = (event.output_index, event.item_id.as_deref());
        match kind {
            "response.output_item.added" | "response.output_item.done" => {
                if let Some(item) = event.item {
                    let done = kind.ends_with(".done");
                    self.take_item(index, item, done, &mut events);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let Some(delta) = event.delta.filter(|delta| !delta.is_empty()) else {
                    return Ok(events);
                };
                self.refused |= kind == "response.refusal.delta";
                if let Item::Message(text) = &mut self.slot(index, id, message).item {
                    text.push_str(&delta);
                }
                events.push(ModelEvent::TextDelta(delta));
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                if let Some(delta) = event.delta.filter(|delta| !delta.is_empty()) {
                    let at = (index.unwrap_or(0), event.summary_index.unwrap_or(0));
                    if self.thinking_at.is_some_and(|last| last != at) {
                        events.push(ModelEvent::ThinkingDelta("\n\n".into()));
                    }
                    self.thinking_at = Some(at);
                    events.push(ModelEvent::ThinkingDelta(delta));
                }
            }
            "response.function_call_arguments.delta" | "response.function_call_arguments.done" => {
                let done = kind.ends_with(".done");
                if let Item::Call(call) = &mut self.slot(index, id, call).item
                    && !call.sent
                {
                    match (done, event.arguments) {
                        (true, Some(whole)) => call.arguments = whole,
                        _ => call
                            .arguments
                            .push_str(event.delta.as_deref().unwrap_or("")),
                    }
                    call.done |= done;
                }
                self.send_completed(&mut events);
            }
            "response.completed" | "response.incomplete" => {
                let response = event.response.unwrap_or_default();
                self.end(response, &mut events);
            }
            "response.failed" => {
                let response = event.response.unwrap_or_default();
                return Err(failed(response.error));
            }
            _ => {}
        }
        Ok(events)
    }

    /// Takes a whole item (or the head of one, when `done` is false) at `index`.
    fn take_item(
        &mut self,
        index: Option<u64>,
        value: Value,
        done: bool,
        events: &mut Vec<ModelEvent>,
    ) {
        let wire = WireItem::deserialize(&value).unwrap_or_default();
        let id = wire.id.clone().unwrap_or_default();
        // An item that says neither where nor which is a new one, after the others.
        let index = match index {
            None if id.is_empty() => Some(self.slots.last().map_or(0, |slot| slot.index + 1)),
            index => index,
        };
        let new: fn() -> Item = match wire.kind.as_deref() {
            Some("reasoning") => || Item::Reasoning(None),
            Some("message") => message,
            Some("function_call") => call,
            _ => || Item::Other,
        };
        let seen = self.slots.iter().any(|slot| match index {
            Some(index) => slot.index == index,
            None => !id.is_empty() && slot.id == id,
        });
        let mut refused = false;
        let slot = self.slot(index, Some(id.as_str()).filter(|id| !id.is_empty()), new);
        if slot.id.is_empty() {
            slot.id = id;
        }
        match &mut slot.item {
            Item::Reasoning(kept) => {
                if done
                    && wire
                        .encrypted_content
                        .as_deref()
                        .is_some_and(|c| !c.is_empty())
                {
                    *kept = Some(value);
                }
                if done && !seen {
                    // Given whole without deltas (a JSON answer): its summary is shown now.
                    let summary: Vec<&str> = wire
                        .summary
                        .iter()
                        .filter_map(|p| p.text.as_deref())
                        .collect();
                    if !summary.is_empty() {
                        events.push(ModelEvent::ThinkingDelta(summary.join("\n\n")));
                    }
                }
            }
            Item::Message(text) => {
                if done && text.is_empty() {
                    for part in wire.content {
                        let piece = match part.kind.as_deref() {
                            Some("refusal") => part.refusal,
                            _ => part.text,
                        };
                        if let Some(piece) = piece.filter(|piece| !piece.is_empty()) {
                            refused |= part.kind.as_deref() == Some("refusal");
                            text.push_str(&piece);
                            events.push(ModelEvent::TextDelta(piece));
                        }
                    }
                }
            }
            Item::Call(call) => {
                if let Some(call_id) = wire.call_id.filter(|id| !id.is_empty()) {
                    call.call_id = call_id;
                }
                if let Some(name) = wire.name.filter(|name| !name.is_empty()) {
                    call.name = name;
                }
                if done && !call.sent {
                    if let Some(arguments) = wire.arguments {
                        call.arguments = arguments;
                    }
                    call.done = true;
                }
                if !call.announced && !call.name.is_empty() {
                    call.announced = true;
                    if call.call_id.is_empty() {
                        call.call_id = slot.id.clone();
                    }
                    events.push(ModelEvent::ToolUseStarted {
                        id: call.call_id.clone(),
                        name: call.name.clone(),
                    });
                }
            }
            Item::Other => {}
        }
        self.refused |= refused;
        self.send_completed(events);
    }

    /// Sends the calls whose arguments are whole, in order, stopping at the first that is
    /// not (or whose arguments are not a JSON object).
    fn send_completed(&mut self, events: &mut Vec<ModelEvent>) {
        for slot in &mut self.slots {
            let Item::Call(call) = &mut slot.item else {
                continue;
            };
            if call.sent {
                continue;
            }
            let tool_use = ToolUse::from_raw(&call.call_id, &call.name, &call.arguments);
            if !call.done || !call.announced || tool_use.input.is_malformed() {
                break;
            }
            call.sent = true;
            events.push(ModelEvent::ToolUseCompleted(tool_use));
        }
    }

    /// The response ended: its usage, its reason when incomplete, and any item it holds that
    /// the stream did not give.
    fn end(&mut self, response: WireResponse, events: &mut Vec<ModelEvent>) {
        // Each item again, whole: what the stream gave is kept, what it missed is taken.
        for (index, item) in response.output.into_iter().enumerate() {
            self.take_item(Some(index as u64), item, true, events);
        }
        if let Some(usage) = response.usage {
            self.usage = Some(usage.into());
        }
        let incomplete = response.status.as_deref() == Some("incomplete");
        self.incomplete = match response.incomplete_details.and_then(|d| d.reason) {
            Some(reason) => Some(reason),
            None if incomplete => Some("unknown".to_owned()),
            None => None,
        };
        self.ended = true;
        self.done = true;
    }
}

/// The slot of a message item.
fn message() -> Item {
    Item::Message(String::new())
}

/// The slot of a function call item.
fn call() -> Item {
    Item::Call(Call::default())
}

impl TurnReader for TurnState {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let mut parsed = Self::parse(data, "event")?;
        if parsed.kind.is_none() && event != "message" {
            parsed.kind = Some(event.to_owned());
        }
        if parsed.kind.as_deref() == Some("error") || parsed.error.error.is_some() {
            return Err(error_event(&parsed, data));
        }
        self.apply(parsed)
    }

    fn is_done(&self) -> bool {
        self.done
    }

    /// Takes a whole (non-streamed) response object.
    fn on_json_body(&mut self, body: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let body = body.trim();
        let parsed = Self::parse(body, "response")?;
        if parsed.error.error.is_some() {
            return Err(error_event(&parsed, body));
        }
        let response =
            WireResponse::deserialize(serde_json::from_str::<Value>(body).unwrap_or(Value::Null))
                .unwrap_or_default();
        if response.status.as_deref() == Some("failed") {
            return Err(failed(response.error));
        }
        let mut events = Vec::new();
        self.end(response, &mut events);
        Ok(events)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.ended {
            return Err(ModelError::stream(
                "the OpenAI stream ended before the response did (no response.completed)",
            ));
        }
        let mut content = Vec::with_capacity(self.slots.len());
        let mut has_calls = false;
        for slot in self.slots {
            match slot.item {
                Item::Reasoning(Some(item)) => content.push(MessageContent::ProviderItem {
                    provider: PROVIDER.to_owned(),
                    item,
                }),
                Item::Message(text) if !text.is_empty() => {
                    content.push(MessageContent::Text { text });
                }
                Item::Call(call) => {
                    has_calls = true;
                    let id = match call.call_id.is_empty() {
                        true => slot.id,
                        false => call.call_id,
                    };
                    content.push(MessageContent::ToolUse(ToolUse::from_raw(
                        id,
                        call.name,
                        &call.arguments,
                    )));
                }
                Item::Reasoning(None) | Item::Message(_) | Item::Other => {}
            }
        }
        let stop_reason = match self.incomplete.as_deref() {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            Some(other) => StopReason::Other(other.to_owned()),
            None if has_calls => StopReason::ToolUse,
            None if self.refused => StopReason::Refusal,
            None => StopReason::EndTurn,
        };
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: self.usage.unwrap_or_default(),
            model: None,
        })
    }
}
