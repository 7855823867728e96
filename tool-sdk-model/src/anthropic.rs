//! Anthropic Messages API client: `POST /v1/messages` with `stream: true`, read as SSE.
//!
//! ```no_run
//! use futures::StreamExt;
//! use tool_sdk::model::{Message, Model, ModelEvent, ModelRequest};
//! use tool_sdk::model::anthropic::AnthropicModel;
//!
//! # async fn demo() -> Result<(), tool_sdk::model::ModelError> {
//! let model = AnthropicModel::from_env("claude-sonnet-4-5")?;
//! let request = ModelRequest {
//!     messages: vec![Message::user("Hello!")].into(),
//!     max_tokens: 1024,
//!     ..ModelRequest::default()
//! };
//! let mut stream = model.stream(&request);
//! while let Some(event) = stream.next().await {
//!     match event? {
//!         ModelEvent::TextDelta(text) => print!("{text}"),
//!         ModelEvent::Completed(response) => println!("\n{:?}", response.stop_reason),
//!         _ => {}
//!     }
//! }
//! # Ok(())
//! # }
//! ```

use std::fmt;

use serde_json::{Map, Value, json};

use self::events::Turn;
use super::http::{Auth, HttpClient, f32_json};
use super::{
    Message, MessageContent, Model, ModelError, ModelRequest, ModelStream, OutputFormat, Role,
    Thinking,
};
use crate::schema::{Provider, tool_definition};
use tool_sdk_core::ContentBlock;

/// The API's address when none is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The `max_tokens` sent when the request's is 0 (unless changed with
/// [`AnthropicModel::with_default_max_tokens`]).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

/// The `anthropic-beta` header that lets a Claude 4 model think between tool calls with a
/// thinking budget: see [`interleaved_thinking`].
pub const INTERLEAVED_THINKING_BETA: &str = "interleaved-thinking-2025-05-14";

const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";
const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";

/// A Claude model behind the Anthropic Messages API.
///
/// Each [`stream`](Model::stream) call is one streamed `POST {base_url}/v1/messages`. Failures
/// before the response starts (429, 5xx, 529, connection errors) are retried with the
/// [`RetryPolicy`](super::RetryPolicy); failures mid-stream end the stream with an error.
#[derive(Clone)]
pub struct AnthropicModel {
    model_id: String,
    http: HttpClient,
    default_max_tokens: u32,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model_id", &self.model_id)
            .field("api_key", &"<redacted>")
            .field("base_url", &self.http.base_url)
            .field("retry", &self.http.retry)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// A client of `model_id` (such as `claude-sonnet-4-5`) using this API key, talking to
    /// [`DEFAULT_BASE_URL`] with the default [`RetryPolicy`](super::RetryPolicy).
    pub fn new(model_id: impl Into<String>, api_key: impl Into<String>) -> Self {
        let mut http = HttpClient::new("anthropic", DEFAULT_BASE_URL, Auth::Header("x-api-key"));
        http.api_key = Some(api_key.into());
        http.headers = &[("anthropic-version", ANTHROPIC_VERSION)];
        http.key_hint = "pass one to AnthropicModel::new or set ANTHROPIC_API_KEY";
        AnthropicModel {
            model_id: model_id.into(),
            http,
            default_max_tokens: DEFAULT_MAX_TOKENS,
        }
    }

    /// A client whose key comes from `ANTHROPIC_API_KEY` and, when set, whose address comes
    /// from `ANTHROPIC_BASE_URL`.
    ///
    /// Fails with [`ModelError::MissingApiKey`] when `ANTHROPIC_API_KEY` is unset or empty.
    pub fn from_env(model_id: impl Into<String>) -> Result<Self, ModelError> {
        let api_key = std::env::var(API_KEY_VAR)
            .ok()
            .filter(|key| !key.trim().is_empty())
            .ok_or_else(|| {
                ModelError::MissingApiKey(format!(
                    "set the {API_KEY_VAR} environment variable to your Anthropic API key"
                ))
            })?;
        let mut model = AnthropicModel::new(model_id, api_key.trim());
        if let Ok(base_url) = std::env::var(BASE_URL_VAR)
            && !base_url.trim().is_empty()
        {
            model = model.with_base_url(base_url.trim());
        }
        Ok(model)
    }

    /// Talks to this address instead (a proxy or a test server); `/v1/messages` is appended.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.http.set_base_url(&base_url.into());
        self
    }

    super::http::http_builders!();

    /// The `max_tokens` sent when a request's `max_tokens` is 0 (else [`DEFAULT_MAX_TOKENS`]).
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }

    /// The address requests go to, without `/v1/messages`.
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    /// The JSON body of a streamed request.
    fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), Value::from(self.model_id.as_str()));
        let max_tokens = match request.max_tokens {
            0 if self.default_max_tokens == 0 => DEFAULT_MAX_TOKENS,
            0 => self.default_max_tokens,
            n => n,
        };
        body.insert("max_tokens".into(), Value::from(max_tokens));
        if let Some(system) = &request.system {
            body.insert("system".into(), Value::from(system.as_str()));
        }
        if let Some(temperature) = request.temperature.and_then(f32_json) {
            body.insert("temperature".into(), temperature);
        }
        thinking_fields(&mut body, request);
        body.insert(
            "messages".into(),
            Value::Array(messages_json(&request.messages)),
        );
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                tool_definition(
                    &tool.name,
                    &tool.description,
                    &tool.input_schema,
                    Provider::Anthropic,
                    None,
                    None,
                )
            })
            .collect();
        match &request.output {
            // A typed answer is a call of the output tool, which the model must make: alone
            // when it is the only tool, else any tool call each turn (the output tool last).
            // The API refuses forced tool use while the model thinks: then the tool is only
            // offered, and an answer given as text is taken as JSON (or sent back).
            Some(output) => {
                let choice = match tools.is_empty() {
                    true => json!({"type": "tool", "name": OutputFormat::TOOL_NAME}),
                    false => json!({"type": "any"}),
                };
                tools.push(output_tool(output));
                if request.thinking.is_off() {
                    body.insert("tool_choice".into(), choice);
                }
            }
            // The API refuses a conversation with tool calls and no tools: an earlier typed
            // answer's call keeps its tool defined.
            None if tools.is_empty() && has_output_call(&request.messages) => {
                tools.push(json!({
                    "name": OutputFormat::TOOL_NAME,
                    "description": "Gave a typed final answer earlier; do not call it now.",
                    "input_schema": {"type": "object"},
                }));
            }
            None => {}
        }
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        if let Some(cache) = request.cache {
            cache::place_breakpoints(&mut body, cache);
        }
        body.insert("stream".into(), Value::Bool(true));
        Value::Object(body)
    }
}

impl Model for AnthropicModel {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn provider_name(&self) -> &str {
        "anthropic"
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let body = self.request_body(request);
        let headers: &[(&str, &str)] = match self.needs_interleaved_beta(request, &body) {
            true => &[("anthropic-beta", INTERLEAVED_THINKING_BETA)],
            false => &[],
        };
        self.http
            .stream_turn_with("/v1/messages", request, body, headers, Turn::default())
    }
}

impl AnthropicModel {
    /// Whether this request thinks with a budget and offers tools to a model that needs the
    /// beta header to think between tool calls.
    fn needs_interleaved_beta(&self, request: &ModelRequest, body: &Value) -> bool {
        matches!(request.thinking, Thinking::Budget { .. })
            && body.get("tools").is_some()
            && interleaved_thinking(&self.model_id)
    }
}

/// Whether `model_id` thinks between tool calls with a thinking budget only when asked with
/// the [`INTERLEAVED_THINKING_BETA`] header: the Claude 4 models (`claude-opus-4-...`,
/// `claude-sonnet-4-...`, `claude-haiku-4-...`). The client sends the header with budget
/// thinking when tools are offered; with it, a budget may exceed `max_tokens`. Adaptive
/// thinking interleaves without it (the 4.6 models ignore it), Claude 3.7 refuses it, and the
/// models after 4.6 take no budget at all.
///
/// ```
/// use tool_sdk::model::anthropic::interleaved_thinking;
///
/// assert!(interleaved_thinking("claude-sonnet-4-5"));
/// assert!(interleaved_thinking("claude-opus-4-20250514"));
/// assert!(!interleaved_thinking("claude-3-7-sonnet-20250219"));
/// ```
pub fn interleaved_thinking(model_id: &str) -> bool {
    let Some((_, name)) = model_id.split_once("claude-") else {
        return false;
    };
    let mut parts = name.split('-');
    matches!(parts.next(), Some("opus" | "sonnet" | "haiku")) && parts.next() == Some("4")
}

/// `thinking` and `output_config.effort`, when the request asks for them.
fn thinking_fields(body: &mut Map<String, Value>, request: &ModelRequest) {
    match request.thinking {
        Thinking::Off => {}
        Thinking::Budget { budget_tokens } => {
            body.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget_tokens}),
            );
        }
        Thinking::Adaptive => {
            body.insert("thinking".into(), json!({"type": "adaptive"}));
        }
    }
    if let Some(effort) = request.effort {
        body.insert("output_config".into(), json!({"effort": effort.as_str()}));
    }
}

/// The output tool of a typed answer.
fn output_tool(output: &OutputFormat) -> Value {
    tool_definition(
        OutputFormat::TOOL_NAME,
        &output.tool_description(),
        &output.schema,
        Provider::Anthropic,
        None,
        None,
    )
}

/// Whether the conversation holds a call of the output tool.
fn has_output_call(messages: &super::History) -> bool {
    messages
        .iter()
        .flat_map(Message::tool_uses)
        .any(|call| call.name == OutputFormat::TOOL_NAME)
}

/// The API's `messages`: roles alternating (consecutive messages of one role merged), tool
/// results first in their user message, empty text blocks and empty messages left out.
fn messages_json<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Value> {
    let mut merged: Vec<(Role, Vec<Value>)> = Vec::new();
    for message in messages {
        let blocks: Vec<Value> = message.content.iter().filter_map(content_json).collect();
        if blocks.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((role, content)) if *role == message.role => content.extend(blocks),
            _ => merged.push((message.role, blocks)),
        }
    }
    merged
        .into_iter()
        .map(|(role, mut content)| {
            if role == Role::User {
                // A stable partition: tool results first, everything else after, in order.
                let (mut first, rest): (Vec<Value>, Vec<Value>) = content
                    .into_iter()
                    .partition(|block| block["type"] == "tool_result");
                first.extend(rest);
                content = first;
            }
            json!({ "role": role.to_string(), "content": content })
        })
        .collect()
}

fn image_json(media_type: &str, data: &str) -> Value {
    json!({
        "type": "image",
        "source": { "type": "base64", "media_type": media_type, "data": data },
    })
}

/// One block as the API wants it; `None` for an empty text block, which the API rejects, and
/// for another provider's signature or item, which is not Anthropic's to read.
fn content_json(content: &MessageContent) -> Option<Value> {
    Some(match content {
        MessageContent::Text { text } if text.is_empty() => return None,
        MessageContent::ThoughtSignature { .. } => return None,
        MessageContent::ProviderItem { .. } => return None,
        MessageContent::Text { text } => json!({ "type": "text", "text": text }),
        MessageContent::Image { media_type, data } => image_json(media_type, data),
        MessageContent::ToolUse(tool_use) => json!({
            "type": "tool_use",
            "id": tool_use.id,
            "name": tool_use.name,
            "input": tool_use.input.json_or_empty(),
        }),
        MessageContent::ToolResult {
            tool_use_id,
            content,
            is_error,
        } => {
            let mut block = Map::new();
            block.insert("type".into(), "tool_result".into());
            block.insert("tool_use_id".into(), tool_use_id.as_str().into());
            let content: Vec<Value> = content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } if text.is_empty() => None,
                    ContentBlock::Text { text } => Some(json!({ "type": "text", "text": text })),
                    ContentBlock::Image { media_type, data } => Some(image_json(media_type, data)),
                    // Resources, which a tool_result cannot hold: their readable form.
                    other => other
                        .readable()
                        .map(|text| json!({ "type": "text", "text": text })),
                })
                .collect();
            if !content.is_empty() {
                block.insert("content".into(), Value::Array(content));
            }
            if *is_error {
                block.insert("is_error".into(), Value::Bool(true));
            }
            Value::Object(block)
        }
        MessageContent::Thinking {
            thinking,
            signature,
        } => json!({ "type": "thinking", "thinking": thinking, "signature": signature }),
        MessageContent::RedactedThinking { data } => {
            json!({ "type": "redacted_thinking", "data": data })
        }
    })
}

mod cache;
mod events;
#[cfg(test)]
mod tests;
