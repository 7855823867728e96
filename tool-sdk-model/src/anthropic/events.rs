//! The events of a Messages API stream, read into typed structs and assembled into a turn.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::http::{ErrorObject, TurnReader, lenient};
use crate::{
    MessageContent, ModelError, ModelEvent, ModelResponse, StopReason, ToolInput, ToolUse, Usage,
};

/// The error of an `error` event in the stream, by its `error.type`.
pub(super) fn stream_error(kind: &str, message: String) -> ModelError {
    let status = match kind {
        "overloaded_error" => {
            return ModelError::Overloaded {
                message,
                retry_after: None,
            };
        }
        "rate_limit_error" => {
            return ModelError::RateLimited {
                message,
                retry_after: None,
            };
        }
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "billing_error" => 402,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "timeout_error" => 504,
        _ => 500,
    };
    let message = if message.is_empty() {
        kind.to_owned()
    } else {
        message
    };
    if status >= 500 {
        ModelError::Server { status, message }
    } else {
        ModelError::Api { status, message }
    }
}

fn stop_reason(reason: &str) -> StopReason {
    match reason {
        "end_turn" => StopReason::EndTurn,
        "tool_use" => StopReason::ToolUse,
        "max_tokens" => StopReason::MaxTokens,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(other.to_owned()),
    }
}

// The events of the stream, as the API documents them. Each event's data carries its `type`
// (the SSE event name is only the fallback); the data is read into the struct of that type.

/// The `type` of an event's data.
#[derive(Deserialize)]
struct Tag {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Overwrites the counts this one carries (the API reports running totals).
    fn apply(&self, usage: &mut Usage) {
        let fields = [
            (self.input_tokens, &mut usage.input_tokens),
            (self.output_tokens, &mut usage.output_tokens),
            (
                self.cache_read_input_tokens,
                &mut usage.cache_read_input_tokens,
            ),
            (
                self.cache_creation_input_tokens,
                &mut usage.cache_creation_input_tokens,
            ),
        ];
        for (value, field) in fields {
            if let Some(value) = value {
                *field = value;
            }
        }
    }
}

#[derive(Deserialize)]
struct MessageStart {
    message: MessageStartBody,
}

#[derive(Deserialize)]
struct MessageStartBody {
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct BlockStart {
    index: u64,
    content_block: StartBlock,
}

/// A `content_block_start`'s block.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StartBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default, deserialize_with = "lenient")]
        input: Option<Map<String, Value>>,
    },
    /// Blocks this client does not keep (server tools and the like).
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: u64,
    delta: Delta,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    /// Deltas this client does not keep, such as citations.
    #[serde(other)]
    Other,
}

impl Delta {
    fn name(&self) -> &'static str {
        match self {
            Delta::Text { .. } => "text_delta",
            Delta::InputJson { .. } => "input_json_delta",
            Delta::Thinking { .. } => "thinking_delta",
            Delta::Signature { .. } => "signature_delta",
            Delta::Other => "unknown delta",
        }
    }
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
struct MessageDelta {
    #[serde(default)]
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: ErrorObject,
}

/// A content block being streamed.
#[derive(Debug)]
pub(super) enum Block {
    Text(String),
    Thinking {
        thinking: String,
        signature: String,
    },
    RedactedThinking(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
        /// The `input` of `content_block_start`, used when no JSON deltas come.
        initial: Option<Map<String, Value>>,
    },
    /// A block type this client does not keep.
    Ignored,
    /// Finished.
    Done(Option<MessageContent>),
}

impl Block {
    fn finish(self) -> Option<MessageContent> {
        match self {
            Block::Text(text) if text.is_empty() => None,
            Block::Text(text) => Some(MessageContent::Text { text }),
            Block::Thinking {
                thinking,
                signature,
            } => Some(MessageContent::Thinking {
                thinking,
                signature,
            }),
            Block::RedactedThinking(data) => Some(MessageContent::RedactedThinking { data }),
            Block::ToolUse {
                id,
                name,
                json,
                initial,
            } => {
                let input = match initial {
                    Some(map) if json.trim().is_empty() && !map.is_empty() => {
                        ToolInput::Parsed(Value::Object(map))
                    }
                    _ => ToolInput::from_raw(&json),
                };
                Some(MessageContent::ToolUse(ToolUse { id, name, input }))
            }
            Block::Ignored => None,
            Block::Done(content) => content,
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Block::Text(_) => "a text block",
            Block::Thinking { .. } => "a thinking block",
            Block::RedactedThinking(_) => "a redacted_thinking block",
            Block::ToolUse { .. } => "a tool_use block",
            Block::Ignored => "an unsupported block",
            Block::Done(_) => "already stopped",
        }
    }
}

/// One turn being read from the stream.
#[derive(Debug, Default)]
pub(super) struct Turn {
    pub(super) blocks: BTreeMap<u64, Block>,
    pub(super) usage: Usage,
    pub(super) stop_reason: Option<StopReason>,
    pub(super) started: bool,
    pub(super) stopped: bool,
    /// A block stopped before one ahead of it: no more [`ModelEvent::ToolUseCompleted`].
    pub(super) out_of_order: bool,
}

fn parse<'de, T: Deserialize<'de>>(kind: &str, data: &'de str) -> Result<T, ModelError> {
    serde_json::from_str(data).map_err(|error| {
        ModelError::stream_from(format!("unreadable `{kind}` event: {error}"), error)
    })
}

impl TurnReader for Turn {
    fn on_event(&mut self, name: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let tag: Tag = serde_json::from_str(data).map_err(|error| {
            ModelError::stream_from(format!("unreadable `{name}` event data: {error}"), error)
        })?;
        let kind = tag.kind.unwrap_or_else(|| name.to_owned());
        let mut out = Vec::new();
        match kind.as_str() {
            "message_start" => {
                let start: MessageStart = parse(&kind, data)?;
                if let Some(usage) = start.message.usage {
                    usage.apply(&mut self.usage);
                }
                self.started = true;
            }
            "content_block_start" => self.block_start(&kind, data, &mut out)?,
            "content_block_delta" => self.block_delta(&kind, data, &mut out)?,
            "content_block_stop" => self.block_stop(&kind, data, &mut out)?,
            "message_delta" => {
                let delta: MessageDelta = parse(&kind, data)?;
                if let Some(reason) = delta.delta.stop_reason {
                    self.stop_reason = Some(stop_reason(&reason));
                }
                if let Some(usage) = delta.usage {
                    usage.apply(&mut self.usage);
                }
            }
            "message_stop" => self.stopped = true,
            "ping" => {}
            "error" => {
                let error: ErrorEvent = parse(&kind, data)?;
                return Err(stream_error(
                    error.error.kind.as_deref().unwrap_or(""),
                    error.error.message.unwrap_or_default(),
                ));
            }
            other => tracing::debug!(event = other, "ignoring an unknown event"),
        }
        Ok(out)
    }

    fn is_done(&self) -> bool {
        self.stopped
    }

    /// The whole turn, once `message_stop` came. Blocks that never got their stop (the
    /// stream hit `max_tokens` mid-block) are kept as they are: a tool call's cut-off JSON
    /// becomes a malformed [`ToolUse`].
    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.stopped {
            return Err(ModelError::stream(if self.started {
                "the response stream ended before message_stop"
            } else {
                "the response stream ended before message_start (and message_stop)"
            }));
        }
        Ok(ModelResponse {
            content: self
                .blocks
                .into_values()
                .filter_map(Block::finish)
                .collect(),
            stop_reason: self.stop_reason.unwrap_or_default(),
            usage: self.usage,
            model: None,
        })
    }
}

impl Turn {
    /// A content block starts: text, thinking or a tool call.
    fn block_start(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let start: BlockStart = parse(kind, data)?;
        let block = match start.content_block {
            StartBlock::Text { text } => {
                if !text.is_empty() {
                    out.push(ModelEvent::TextDelta(text.clone()));
                }
                Block::Text(text)
            }
            StartBlock::Thinking {
                thinking,
                signature,
            } => {
                if !thinking.is_empty() {
                    out.push(ModelEvent::ThinkingDelta(thinking.clone()));
                }
                Block::Thinking {
                    thinking,
                    signature,
                }
            }
            StartBlock::RedactedThinking { data } => Block::RedactedThinking(data),
            StartBlock::ToolUse { id, name, input } => {
                if id.is_empty() || name.is_empty() {
                    return Err(ModelError::stream(format!(
                        "tool_use block {} has no id or name",
                        start.index
                    )));
                }
                out.push(ModelEvent::ToolUseStarted {
                    id: id.clone(),
                    name: name.clone(),
                });
                Block::ToolUse {
                    id,
                    name,
                    json: String::new(),
                    initial: input,
                }
            }
            StartBlock::Other => {
                tracing::debug!(index = start.index, "ignoring an unsupported content block");
                Block::Ignored
            }
        };
        self.blocks.insert(start.index, block);
        Ok(())
    }

    /// A piece of a content block: text, thinking, its signature, or a tool call's JSON.
    fn block_delta(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let delta: BlockDelta = parse(kind, data)?;
        let Some(block) = self.blocks.get_mut(&delta.index) else {
            return Err(ModelError::stream(format!(
                "a delta for content block {} that never started",
                delta.index
            )));
        };
        match (delta.delta, block) {
            (_, Block::Ignored) | (Delta::Other, _) => {}
            (Delta::Text { text: piece }, Block::Text(text)) => {
                text.push_str(&piece);
                if !piece.is_empty() {
                    out.push(ModelEvent::TextDelta(piece));
                }
            }
            (Delta::InputJson { partial_json }, Block::ToolUse { json, .. }) => {
                json.push_str(&partial_json);
            }
            (Delta::Thinking { thinking: piece }, Block::Thinking { thinking, .. }) => {
                thinking.push_str(&piece);
                if !piece.is_empty() {
                    out.push(ModelEvent::ThinkingDelta(piece));
                }
            }
            (Delta::Signature { signature: piece }, Block::Thinking { signature, .. }) => {
                signature.push_str(&piece);
            }
            (other, block) => {
                return Err(ModelError::stream(format!(
                    "a `{}` for content block {} which is {}",
                    other.name(),
                    delta.index,
                    block.describe()
                )));
            }
        }
        Ok(())
    }

    /// A content block ends; a tool call is announced whole once every block before it has.
    fn block_stop(
        &mut self,
        kind: &str,
        data: &str,
        out: &mut Vec<ModelEvent>,
    ) -> Result<(), ModelError> {
        let stop: BlockStop = parse(kind, data)?;
        let Some(block) = self.blocks.remove(&stop.index) else {
            return Err(ModelError::stream(format!(
                "a stop for content block {} that never started",
                stop.index
            )));
        };
        let already_done = matches!(block, Block::Done(_));
        let content = block.finish();
        // Whole calls are announced in content order, with no gap: only when every
        // block before this one has stopped (blocks stream one after another; a turn
        // that interleaves them announces nothing more).
        let in_order = self.blocks.range(..stop.index).count() as u64 == stop.index
            && self
                .blocks
                .range(..stop.index)
                .all(|(_, block)| matches!(block, Block::Done(_)));
        self.out_of_order |= !in_order;
        if let (Some(MessageContent::ToolUse(call)), false) = (&content, already_done)
            && !self.out_of_order
        {
            out.push(ModelEvent::ToolUseCompleted(call.clone()));
        }
        self.blocks.insert(stop.index, Block::Done(content));
        Ok(())
    }
}
