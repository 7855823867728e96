//! The chunks of a `streamGenerateContent?alt=sse` stream, read into typed structs and
//! assembled into a turn.
//!
//! Each event's data is a whole `GenerateContentResponse` holding the parts that are new; the
//! last one carries the `finishReason`, and every one the usage so far. There is no closing
//! event: the stream ends with the connection.

use serde::Deserialize;
use serde_json::Value;

use super::PROVIDER_NAME;
use super::errors::chunk_error;
use crate::http::{TurnReader, lenient, lenient_list, truncate};
use crate::{MessageContent, ModelError, ModelEvent, ModelResponse, StopReason, ToolUse, Usage};

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Chunk {
    #[serde(deserialize_with = "lenient_list")]
    candidates: Vec<Candidate>,
    #[serde(deserialize_with = "lenient")]
    usage_metadata: Option<WireUsage>,
    #[serde(deserialize_with = "lenient")]
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Candidate {
    #[serde(deserialize_with = "lenient")]
    index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    content: Option<Content>,
    #[serde(deserialize_with = "lenient")]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Content {
    #[serde(deserialize_with = "lenient_list")]
    parts: Vec<Part>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Part {
    #[serde(deserialize_with = "lenient")]
    text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    thought: Option<bool>,
    #[serde(deserialize_with = "lenient")]
    thought_signature: Option<String>,
    #[serde(deserialize_with = "lenient")]
    function_call: Option<FunctionCall>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FunctionCall {
    /// Set by some Gemini deployments; made up here when absent.
    #[serde(deserialize_with = "lenient")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    name: Option<String>,
    args: Option<Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(deserialize_with = "lenient")]
    block_reason: Option<String>,
}

/// `usageMetadata`: `promptTokenCount` counts the cached tokens too; thoughts are billed as
/// output but counted apart from `candidatesTokenCount`.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct WireUsage {
    #[serde(deserialize_with = "lenient")]
    prompt_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    candidates_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    cached_content_token_count: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    thoughts_token_count: Option<u64>,
    /// The prompt of the model's built-in tools, billed as input.
    #[serde(deserialize_with = "lenient")]
    tool_use_prompt_token_count: Option<u64>,
}

impl From<WireUsage> for Usage {
    fn from(usage: WireUsage) -> Usage {
        let prompt = usage.prompt_token_count.unwrap_or(0);
        let cached = usage.cached_content_token_count.unwrap_or(0).min(prompt);
        Usage {
            input_tokens: prompt - cached + usage.tool_use_prompt_token_count.unwrap_or(0),
            output_tokens: usage.candidates_token_count.unwrap_or(0)
                + usage.thoughts_token_count.unwrap_or(0),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        }
    }
}

/// What has arrived of one turn so far.
#[derive(Debug)]
pub(super) struct Turn {
    /// The conversation's assistant turns before this one, for call ids.
    number: usize,
    content: Vec<MessageContent>,
    /// Whether the last block is text more unsigned text may be added to.
    open_text: bool,
    calls: usize,
    finish_reason: Option<String>,
    block_reason: Option<String>,
    usage: Option<Usage>,
}

impl Turn {
    /// The reading of the conversation's turn after `number` assistant turns.
    pub(super) fn new(number: usize) -> Self {
        Turn {
            number,
            content: Vec::new(),
            open_text: false,
            calls: 0,
            finish_reason: None,
            block_reason: None,
            usage: None,
        }
    }

    fn apply(&mut self, chunk: Chunk) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        if let Some(usage) = chunk.usage_metadata {
            self.usage = Some(usage.into());
        }
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            self.block_reason = Some(reason);
        }
        // Only the first candidate: the SDK never asks for more than one.
        let Some(candidate) = chunk
            .candidates
            .into_iter()
            .find(|candidate| candidate.index.unwrap_or(0) == 0)
        else {
            return events;
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            self.apply_part(part, &mut events);
        }
        if let Some(reason) = candidate.finish_reason.filter(|r| !r.is_empty()) {
            self.finish_reason = Some(reason);
        }
        events
    }

    /// Takes one part: thought summary, text, or function call, with its signature.
    fn apply_part(&mut self, part: Part, events: &mut Vec<ModelEvent>) {
        let signature = part.thought_signature.filter(|s| !s.is_empty());
        if let Some(call) = part.function_call {
            self.sign(signature);
            let call = self.call(call);
            events.push(ModelEvent::ToolUseStarted {
                id: call.id.clone(),
                name: call.name.clone(),
            });
            // A call comes whole in one part: nothing can extend it.
            events.push(ModelEvent::ToolUseCompleted(call.clone()));
            self.content.push(MessageContent::ToolUse(call));
            self.open_text = false;
            return;
        }
        let text = part.text.unwrap_or_default();
        if part.thought == Some(true) {
            if !text.is_empty() {
                events.push(ModelEvent::ThinkingDelta(text));
            }
            // The summary is not kept, its signature is: on an empty text part of its own.
            if signature.is_some() {
                self.sign(signature);
                self.content.push(MessageContent::Text {
                    text: String::new(),
                });
                self.open_text = false;
            }
            return;
        }
        if !text.is_empty() {
            events.push(ModelEvent::TextDelta(text.clone()));
        }
        match signature {
            // A signed part stays apart from the text around it, as Gemini asks.
            Some(_) => {
                self.sign(signature);
                self.content.push(MessageContent::Text { text });
                self.open_text = false;
            }
            None if text.is_empty() => {}
            None => match self.content.last_mut() {
                Some(MessageContent::Text { text: last }) if self.open_text => {
                    last.push_str(&text);
                }
                _ => {
                    self.content.push(MessageContent::Text { text });
                    self.open_text = true;
                }
            },
        }
    }

    fn sign(&mut self, signature: Option<String>) {
        if let Some(signature) = signature {
            self.content.push(MessageContent::ThoughtSignature {
                provider: PROVIDER_NAME.into(),
                signature,
            });
        }
    }

    /// The call of a `functionCall` part, its id Gemini's or made up.
    fn call(&mut self, call: FunctionCall) -> ToolUse {
        self.calls += 1;
        let id = call.id.filter(|id| !id.is_empty()).unwrap_or_else(|| {
            let suffix: String = std::iter::repeat_with(fastrand::alphanumeric)
                .take(8)
                .collect();
            format!("call_{}_{}_{suffix}", self.number, self.calls)
        });
        let name = call.name.unwrap_or_default();
        match call.args {
            None | Some(Value::Null) => ToolUse::new(id, name, Value::Object(Default::default())),
            Some(args @ Value::Object(_)) => ToolUse::new(id, name, args),
            Some(other) => ToolUse::from_raw(id, name, &other.to_string()),
        }
    }

    fn parse(data: &str) -> Result<Value, ModelError> {
        serde_json::from_str(data).map_err(|error| {
            ModelError::stream_from(
                format!("unreadable Gemini chunk ({error}): {}", truncate(data, 200)),
                error,
            )
        })
    }

    fn apply_value(&mut self, value: Value) -> Result<Vec<ModelEvent>, ModelError> {
        if let Some(error) = chunk_error(&value) {
            return Err(error);
        }
        Ok(self.apply(Chunk::deserialize(value).unwrap_or_default()))
    }
}

impl TurnReader for Turn {
    fn on_event(&mut self, _event: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let value = Self::parse(data)?;
        self.apply_value(value)
    }

    /// Never: the stream ends with the connection.
    fn is_done(&self) -> bool {
        false
    }

    /// A whole answer: one response, or the JSON array `streamGenerateContent` sends without
    /// `alt=sse`.
    fn on_json_body(&mut self, body: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let mut events = Vec::new();
        match Self::parse(body.trim())? {
            Value::Array(chunks) => {
                for chunk in chunks {
                    events.extend(self.apply_value(chunk)?);
                }
            }
            chunk => events.extend(self.apply_value(chunk)?),
        }
        Ok(events)
    }

    fn finish(self) -> Result<ModelResponse, ModelError> {
        let stop_reason = match (self.finish_reason.as_deref(), &self.block_reason) {
            (Some(reason), _) => stop_reason(reason, self.calls > 0),
            // The prompt itself was blocked: no candidate comes.
            (None, Some(_)) => StopReason::Refusal,
            (None, None) => {
                return Err(ModelError::stream(
                    "the Gemini stream ended before the model finished (no finishReason)",
                ));
            }
        };
        let mut content = self.content;
        if let Some(MessageContent::ThoughtSignature { .. }) = content.last() {
            content.push(MessageContent::Text {
                text: String::new(),
            });
        }
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: self.usage.unwrap_or_default(),
            model: None,
        })
    }
}

/// A `finishReason` as a [`StopReason`]: a turn that ends normally with calls wants results.
fn stop_reason(reason: &str, has_calls: bool) -> StopReason {
    match reason {
        "STOP" if has_calls => StopReason::ToolUse,
        "STOP" => StopReason::EndTurn,
        "MAX_TOKENS" => StopReason::MaxTokens,
        "SAFETY" | "RECITATION" | "PROHIBITED_CONTENT" | "BLOCKLIST" | "SPII" => {
            StopReason::Refusal
        }
        other => StopReason::Other(other.to_owned()),
    }
}
