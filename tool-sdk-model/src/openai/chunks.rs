//! The chunks of a Chat Completions stream, read into typed structs and assembled into a turn.

use serde::Deserialize;
use serde_json::Value;

use crate::http::{
    ErrorBody, ErrorCode, MAX_ERROR_BODY, TurnReader, WireError, lenient, lenient_list, truncate,
};
use crate::{MessageContent, ModelError, ModelEvent, ModelResponse, StopReason, ToolUse, Usage};

// The chunks as compatible servers send them. Every field is optional and forgiving: servers
// differ, and one odd field must not cost the rest of a chunk.

/// A streamed chunk, a whole completion, or an error in their place.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Chunk {
    #[serde(deserialize_with = "lenient_list")]
    choices: Vec<Choice>,
    #[serde(deserialize_with = "lenient")]
    usage: Option<WireUsage>,
    /// `error`, `message`, `detail`: an error in place of a chunk.
    #[serde(flatten)]
    error: ErrorBody,
    /// The `type` of a chunk that is itself an error object (an `error` event).
    #[serde(rename = "type", deserialize_with = "lenient")]
    kind: Option<String>,
    /// The `code` of a chunk that is itself an error object.
    #[serde(deserialize_with = "lenient")]
    code: Option<ErrorCode>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Choice {
    #[serde(deserialize_with = "lenient")]
    index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    delta: Option<Delta>,
    /// A whole completion's message, in place of `delta`.
    #[serde(deserialize_with = "lenient")]
    message: Option<Delta>,
    #[serde(deserialize_with = "lenient")]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Delta {
    #[serde(deserialize_with = "lenient")]
    content: Option<String>,
    #[serde(deserialize_with = "lenient")]
    refusal: Option<String>,
    /// Reasoning text, as DeepSeek and vLLM name it.
    #[serde(deserialize_with = "lenient")]
    reasoning_content: Option<String>,
    /// Reasoning text, as llama.cpp and Ollama name it.
    #[serde(deserialize_with = "lenient")]
    reasoning: Option<String>,
    #[serde(deserialize_with = "lenient_list")]
    tool_calls: Vec<ToolCallDelta>,
}

/// One `tool_calls[]` entry: a new call, or more of one already started.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ToolCallDelta {
    #[serde(deserialize_with = "lenient")]
    index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FunctionDelta {
    #[serde(deserialize_with = "lenient")]
    name: Option<String>,
    arguments: Option<Arguments>,
}

/// Arguments are JSON text; some servers send them as an object instead.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Arguments {
    Text(String),
    Json(Value),
}

/// Usage as OpenAI reports it. `prompt_tokens` counts cached tokens too.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct WireUsage {
    #[serde(deserialize_with = "lenient")]
    prompt_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    completion_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    prompt_tokens_details: Option<PromptTokensDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct PromptTokensDetails {
    #[serde(deserialize_with = "lenient")]
    cached_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    /// Cached prompt tokens split out, so `input_tokens` means what it means for Anthropic:
    /// prompt tokens not read from the cache.
    fn from(usage: WireUsage) -> Usage {
        let prompt = usage.prompt_tokens.unwrap_or(0);
        let cached = usage
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0)
            .min(prompt);
        Usage {
            input_tokens: prompt - cached,
            output_tokens: usage.completion_tokens.unwrap_or(0),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        }
    }
}

/// A tool call being streamed.
#[derive(Debug, Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    /// Whether `id` was made up here because the server sent none.
    id_generated: bool,
    name: String,
    arguments: String,
    announced: bool,
    /// Sent as [`ModelEvent::ToolUseCompleted`]: a later call started and these arguments
    /// were a whole JSON object, which nothing more can extend.
    completed: bool,
}

/// What has arrived of one turn so far.
#[derive(Debug, Default)]
pub(super) struct TurnState {
    text: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    refused: bool,
    usage: Option<Usage>,
    done: bool,
}

impl TurnState {
    /// A chunk's data read, or an error when it is not JSON. JSON that is not an object
    /// carries nothing.
    fn parse(data: &str, what: &str) -> Result<Chunk, ModelError> {
        let value: Value = serde_json::from_str(data).map_err(|error| {
            ModelError::stream_from(
                format!("unreadable {what} ({error}): {}", truncate(data, 200)),
                error,
            )
        })?;
        Ok(Chunk::deserialize(value).unwrap_or_default())
    }

    fn apply_chunk(&mut self, chunk: Chunk) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        // Only the first choice: the SDK never asks for more than one.
        let Some(choice) = chunk
            .choices
            .into_iter()
            .find(|choice| choice.index.unwrap_or(0) == 0)
        else {
            return events;
        };
        if let Some(delta) = choice.delta {
            // Reasoning is shown live, not kept: the format cannot send it back.
            for thinking in [delta.reasoning_content, delta.reasoning]
                .into_iter()
                .flatten()
                .filter(|thinking| !thinking.is_empty())
            {
                events.push(ModelEvent::ThinkingDelta(thinking));
            }
            if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
                self.text.push_str(&text);
                events.push(ModelEvent::TextDelta(text));
            }
            if let Some(refusal) = delta.refusal.filter(|refusal| !refusal.is_empty()) {
                self.refused = true;
                self.text.push_str(&refusal);
                events.push(ModelEvent::TextDelta(refusal));
            }
            for call in delta.tool_calls {
                self.apply_tool_call(call, &mut events);
            }
        }
        if let Some(reason) = choice.finish_reason.filter(|reason| !reason.is_empty()) {
            self.finish_reason = Some(reason);
        }
        events
    }

    /// Takes one `delta.tool_calls[]` entry: a new call or more of one already started.
    fn apply_tool_call(&mut self, call: ToolCallDelta, events: &mut Vec<ModelEvent>) {
        let index = call.index;
        let id = call.id.as_deref().filter(|id| !id.is_empty());
        let (name, arguments) = match call.function {
            Some(function) => (
                function.name.filter(|name| !name.is_empty()),
                match function.arguments {
                    Some(Arguments::Text(arguments)) => arguments,
                    Some(Arguments::Json(arguments)) => arguments.to_string(),
                    None => String::new(),
                },
            ),
            None => (None, String::new()),
        };

        // The call this entry continues: the one with its index (or, without an index, its
        // id, else the last one), unless it brings a different id, which makes it a new call
        // (some servers number every parallel call 0).
        let existing = match index {
            Some(index) => self.calls.iter().rposition(|c| c.index == Some(index)),
            None => match id {
                Some(id) => self.calls.iter().rposition(|c| c.id == id),
                None => self.calls.len().checked_sub(1),
            },
        }
        .filter(|&position| {
            let known = &self.calls[position];
            match id {
                Some(id) => known.id_generated || known.id == id,
                None => true,
            }
        });
        let position = match existing {
            Some(position) => position,
            None => {
                // Calls stream one after another: a new one means those before are whole,
                // when their arguments are a JSON object.
                // In call order, stopping at the first that is not whole yet (empty
                // arguments may still be to come).
                for done in self.calls.iter_mut().filter(|c| !c.completed) {
                    let call = ToolUse::from_raw(&done.id, &done.name, &done.arguments);
                    if !done.announced
                        || done.arguments.trim().is_empty()
                        || call.input.is_malformed()
                    {
                        break;
                    }
                    done.completed = true;
                    events.push(ModelEvent::ToolUseCompleted(call));
                }
                let (id, id_generated) = match id {
                    Some(id) => (id.to_owned(), false),
                    None => (generated_call_id(), true),
                };
                self.calls.push(PartialCall {
                    index,
                    id,
                    id_generated,
                    ..PartialCall::default()
                });
                self.calls.len() - 1
            }
        };
        let partial = &mut self.calls[position];
        if let Some(name) = name
            && partial.name.is_empty()
        {
            partial.name = name;
        }
        if partial.completed && !arguments.trim().is_empty() {
            // Never seen: a call said to be whole must stay as it was sent. Kept apart, so
            // the turn's call is the one the agent may have started.
            tracing::warn!(id = %partial.id, "arguments for a tool call after it was whole");
            return;
        }
        partial.arguments.push_str(&arguments);
        if !partial.announced && !partial.name.is_empty() {
            partial.announced = true;
            events.push(ModelEvent::ToolUseStarted {
                id: partial.id.clone(),
                name: partial.name.clone(),
            });
        }
    }
}

impl TurnReader for TurnState {
    /// Takes one SSE event: a chunk, `[DONE]`, or an error object.
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk = Self::parse(data, "chunk")?;
        if let Some(error) = &chunk.error.error {
            return Err(stream_error(Some(error), &chunk, data));
        }
        if event == "error" {
            return Err(stream_error(None, &chunk, data));
        }
        Ok(self.apply_chunk(chunk))
    }

    fn is_done(&self) -> bool {
        self.done
    }

    /// Takes a whole (non-streamed) completion, as a server that ignores `stream` sends it.
    fn on_json_body(&mut self, body: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let body = body.trim();
        let mut completion = Self::parse(body, "response")?;
        if let Some(error) = &completion.error.error {
            return Err(stream_error(Some(error), &completion, body));
        }
        // As one chunk whose delta is the whole message, tool calls numbered by position.
        for choice in &mut completion.choices {
            if let Some(mut message) = choice.message.take() {
                for (position, call) in message.tool_calls.iter_mut().enumerate() {
                    call.index.get_or_insert(position as u64);
                }
                choice.delta = Some(message);
            }
        }
        let events = self.apply_chunk(completion);
        self.done = true;
        Ok(events)
    }

    /// The whole turn, once the stream has ended.
    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ModelError::stream(
                "the stream ended before the model finished (no finish_reason and no [DONE])"
                    .to_owned(),
            ));
        }
        let has_calls = !self.calls.is_empty();
        let stop_reason = match self.finish_reason.as_deref() {
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            // Ollama and others say "stop" even when the turn ends in tool calls.
            _ if has_calls => StopReason::ToolUse,
            _ if self.refused => StopReason::Refusal,
            None | Some("stop") => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some(other) => StopReason::Other(other.to_owned()),
        };
        let mut content = Vec::with_capacity(self.calls.len() + 1);
        if !self.text.is_empty() {
            content.push(MessageContent::Text { text: self.text });
        }
        for call in self.calls {
            content.push(MessageContent::ToolUse(ToolUse::from_raw(
                call.id,
                call.name,
                &call.arguments,
            )));
        }
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: self.usage.unwrap_or_default(),
            model: None,
        })
    }
}

/// An id for a tool call the server sent without one.
fn generated_call_id() -> String {
    let suffix: String = std::iter::repeat_with(fastrand::alphanumeric)
        .take(24)
        .collect();
    format!("call_{suffix}")
}

/// An error sent in place of a chunk, after the HTTP status was already 200: `error` is the
/// chunk's `error` field, or `None` when the chunk is itself the error. Its `code` gives the
/// status when it is one, its `type` says whether the server failed.
fn stream_error(error: Option<&WireError>, chunk: &Chunk, data: &str) -> ModelError {
    let (kind, code) = match error {
        Some(WireError::Object(object)) => (object.kind.as_deref(), object.code.as_ref()),
        Some(_) => (None, None),
        None => (chunk.kind.as_deref(), chunk.code.as_ref()),
    };
    let message = chunk
        .error
        .message()
        .unwrap_or_else(|| truncate(data.trim(), MAX_ERROR_BODY));
    let kind = kind.unwrap_or("").to_ascii_lowercase();
    match code.and_then(ErrorCode::status) {
        Some(429) => ModelError::RateLimited {
            message,
            retry_after: None,
        },
        Some(status @ 500..) => ModelError::Server { status, message },
        Some(status) => ModelError::Api { status, message },
        None if kind.contains("rate_limit") => ModelError::RateLimited {
            message,
            retry_after: None,
        },
        None if kind.is_empty() || kind.contains("server") || kind.contains("internal") => {
            ModelError::Server {
                status: 500,
                message,
            }
        }
        None => ModelError::Api {
            status: 400,
            message,
        },
    }
}
