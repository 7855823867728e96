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
//!     messages: vec![Message::user("Hello!")],
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

use std::collections::BTreeMap;
use std::fmt;

use eventsource_stream::{EventStreamError, Eventsource};
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::retry::parse_retry_after;
use super::{
    Message, MessageContent, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ModelStream, RetryPolicy, Role, StopReason, ToolUse, Usage,
};
use crate::ContentBlock;
use crate::schema::{self, Provider};

/// The API's address when none is configured.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// The `max_tokens` sent when the request's is 0 (unless changed with
/// [`AnthropicModel::with_default_max_tokens`]).
pub const DEFAULT_MAX_TOKENS: u32 = 4096;

const API_KEY_VAR: &str = "ANTHROPIC_API_KEY";
const BASE_URL_VAR: &str = "ANTHROPIC_BASE_URL";

/// A Claude model behind the Anthropic Messages API.
///
/// Each [`stream`](Model::stream) call is one streamed `POST {base_url}/v1/messages`. Failures
/// before the response starts (429, 5xx, 529, connection errors) are retried with the
/// [`RetryPolicy`]; failures mid-stream end the stream with an error.
#[derive(Clone)]
pub struct AnthropicModel {
    model_id: String,
    api_key: String,
    base_url: String,
    client: reqwest::Client,
    retry: RetryPolicy,
    default_max_tokens: u32,
}

impl fmt::Debug for AnthropicModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicModel")
            .field("model_id", &self.model_id)
            .field("api_key", &"<redacted>")
            .field("base_url", &self.base_url)
            .field("retry", &self.retry)
            .field("default_max_tokens", &self.default_max_tokens)
            .finish_non_exhaustive()
    }
}

impl AnthropicModel {
    /// A client of `model_id` (such as `claude-sonnet-4-5`) using this API key, talking to
    /// [`DEFAULT_BASE_URL`] with the default [`RetryPolicy`].
    pub fn new(model_id: impl Into<String>, api_key: impl Into<String>) -> Self {
        AnthropicModel {
            model_id: model_id.into(),
            api_key: api_key.into(),
            base_url: DEFAULT_BASE_URL.to_owned(),
            client: reqwest::Client::new(),
            retry: RetryPolicy::default(),
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
        self.base_url = base_url.into().trim_end_matches('/').to_owned();
        self
    }

    /// Retries failed requests with this policy ([`RetryPolicy::none`] to never retry).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sends requests with this HTTP client (for timeouts, proxies, connection pools).
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    /// The `max_tokens` sent when a request's `max_tokens` is 0 (else [`DEFAULT_MAX_TOKENS`]).
    pub fn with_default_max_tokens(mut self, max_tokens: u32) -> Self {
        self.default_max_tokens = max_tokens;
        self
    }

    /// The address requests go to, without `/v1/messages`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    fn endpoint(&self) -> String {
        format!("{}/v1/messages", self.base_url)
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
        if let Some(temperature) = request.temperature.and_then(temperature_json) {
            body.insert("temperature".into(), temperature);
        }
        body.insert(
            "messages".into(),
            Value::Array(messages_json(&request.messages)),
        );
        if !request.tools.is_empty() {
            let tools = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "name": tool.name,
                        "description": tool.description,
                        "input_schema": schema::lower(&tool.input_schema, Provider::Anthropic),
                    })
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
        }
        body.insert("stream".into(), Value::Bool(true));
        Value::Object(body)
    }

    /// One attempt: sends the request and returns the response once it is a 200.
    async fn send(&self, body: &[u8]) -> Result<reqwest::Response, ModelError> {
        if self.api_key.trim().is_empty() {
            return Err(ModelError::MissingApiKey(format!(
                "the API key is empty; pass one to AnthropicModel::new or set {API_KEY_VAR}"
            )));
        }
        let mut api_key = HeaderValue::from_str(&self.api_key).map_err(|_| {
            ModelError::MissingApiKey(
                "the API key holds characters that cannot go in an HTTP header".into(),
            )
        })?;
        api_key.set_sensitive(true);
        let response = self
            .client
            .post(self.endpoint())
            .header("x-api-key", api_key)
            .header("anthropic-version", ANTHROPIC_VERSION)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body.to_vec())
            .send()
            .await
            .map_err(|error| ModelError::Transport(error_chain(&error)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = parse_retry_after(
            response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok()),
        );
        let text = response.text().await.unwrap_or_default();
        let error = http_error(status.as_u16(), retry_after, &text);
        tracing::debug!(status = status.as_u16(), %error, "anthropic request failed");
        Err(error)
    }
}

impl Model for AnthropicModel {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        Box::pin(async_stream::try_stream! {
            let body = self.request_body(request);
            let body = serde_json::to_vec(&body)
                .map_err(|error| ModelError::Stream(format!("could not encode the request: {error}")))?;
            tracing::debug!(
                model = %self.model_id,
                messages = request.messages.len(),
                tools = request.tools.len(),
                "anthropic request"
            );
            let response = self.retry.run(|| self.send(&body)).await?;
            let mut events = std::pin::pin!(read_turn(response.bytes_stream()));
            while let Some(event) = events.next().await {
                yield event?;
            }
        })
    }
}

/// The events of one streamed turn, read from the response body's bytes (chunked anyhow).
fn read_turn<S, B, E>(body: S) -> impl futures::Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    S: futures::Stream<Item = Result<B, E>> + Send,
    B: AsRef<[u8]> + Send,
    E: std::error::Error + Send,
{
    async_stream::try_stream! {
        // A stream whose last event lacks its blank line still delivers that event.
        let mut events = std::pin::pin!(body
            .map(|chunk| chunk.map(Chunk::Data))
            .chain(futures::stream::once(async { Ok(Chunk::End) }))
            .eventsource());
        let mut turn = Turn::default();
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| match error {
                EventStreamError::Transport(error) => ModelError::Transport(error_chain(&error)),
                other => ModelError::Stream(format!("unreadable server-sent events: {other}")),
            })?;
            for model_event in turn.on_event(&event.event, &event.data)? {
                yield model_event;
            }
            if turn.stopped {
                break;
            }
        }
        let response = turn.finish()?;
        tracing::debug!(
            stop_reason = ?response.stop_reason,
            input_tokens = response.usage.input_tokens,
            output_tokens = response.usage.output_tokens,
            "anthropic turn completed"
        );
        yield ModelEvent::Completed(response);
    }
}

/// A body chunk, or the blank line appended at the end of the body.
enum Chunk<B> {
    Data(B),
    End,
}

impl<B: AsRef<[u8]>> AsRef<[u8]> for Chunk<B> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Chunk::Data(bytes) => bytes.as_ref(),
            Chunk::End => b"\n\n",
        }
    }
}

/// An error's message with its causes, which reqwest keeps out of its own `Display`.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// `temperature` as the JSON number a person would write (`0.7`, not `0.699999988079071`).
fn temperature_json(temperature: f32) -> Option<Value> {
    if !temperature.is_finite() {
        return None;
    }
    let exact = temperature
        .to_string()
        .parse::<f64>()
        .unwrap_or(f64::from(temperature));
    serde_json::Number::from_f64(exact).map(Value::Number)
}

/// The API's `messages`: roles alternating (consecutive messages of one role merged), tool
/// results first in their user message, empty text blocks and empty messages left out.
fn messages_json(messages: &[Message]) -> Vec<Value> {
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

/// One block as the API wants it; `None` for an empty text block, which the API rejects.
fn content_json(content: &MessageContent) -> Option<Value> {
    Some(match content {
        MessageContent::Text { text } if text.is_empty() => return None,
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

/// The error of a non-2xx response; the message is the provider's `error.message` when the
/// body has one.
fn http_error(status: u16, retry_after: Option<std::time::Duration>, body: &str) -> ModelError {
    let message = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .map(|body| body.error.message)
        .filter(|message| !message.is_empty())
        .unwrap_or_else(|| {
            let body = body.trim();
            if body.is_empty() {
                format!("HTTP {status} with an empty body")
            } else {
                truncate(body, 500)
            }
        });
    ModelError::from_status(status, message, retry_after)
}

/// The error of an `error` event in the stream, by its `error.type`.
fn stream_error(kind: &str, message: String) -> ModelError {
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

fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
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

#[derive(Deserialize)]
struct ErrorBody {
    error: ErrorDetail,
}

#[derive(Deserialize)]
struct ErrorDetail {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    message: String,
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
    content_block: Value,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: u64,
    delta: Value,
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
    error: ErrorDetail,
}

/// A content block being streamed.
#[derive(Debug)]
enum Block {
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
        initial: Value,
    },
    /// A block type this client does not keep (server tools and the like).
    Ignored(String),
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
            } => Some(match initial {
                Value::Object(map) if json.trim().is_empty() && !map.is_empty() => {
                    MessageContent::ToolUse(ToolUse::new(id, name, Value::Object(map)))
                }
                _ => MessageContent::ToolUse(ToolUse::from_raw(id, name, &json)),
            }),
            Block::Ignored(_) => None,
            Block::Done(content) => content,
        }
    }
}

/// One turn being read from the stream.
#[derive(Debug, Default)]
struct Turn {
    blocks: BTreeMap<u64, Block>,
    usage: Usage,
    stop_reason: Option<StopReason>,
    started: bool,
    stopped: bool,
}

fn parse<'de, T: Deserialize<'de>>(kind: &str, data: &'de str) -> Result<T, ModelError> {
    serde_json::from_str(data)
        .map_err(|error| ModelError::Stream(format!("unreadable `{kind}` event: {error}")))
}

fn string_field(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl Turn {
    /// Takes one SSE event; returns the events to yield.
    fn on_event(&mut self, name: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let value: Value = serde_json::from_str(data).map_err(|error| {
            ModelError::Stream(format!("unreadable `{name}` event data: {error}"))
        })?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(name)
            .to_owned();
        let mut out = Vec::new();
        match kind.as_str() {
            "message_start" => {
                let start: MessageStart = parse(&kind, data)?;
                if let Some(usage) = start.message.usage {
                    usage.apply(&mut self.usage);
                }
                self.started = true;
            }
            "content_block_start" => {
                let start: BlockStart = parse(&kind, data)?;
                let block = &start.content_block;
                let block = match block.get("type").and_then(Value::as_str).unwrap_or("") {
                    "text" => {
                        let text = string_field(block, "text");
                        if !text.is_empty() {
                            out.push(ModelEvent::TextDelta(text.clone()));
                        }
                        Block::Text(text)
                    }
                    "thinking" => {
                        let thinking = string_field(block, "thinking");
                        if !thinking.is_empty() {
                            out.push(ModelEvent::ThinkingDelta(thinking.clone()));
                        }
                        Block::Thinking {
                            thinking,
                            signature: string_field(block, "signature"),
                        }
                    }
                    "redacted_thinking" => Block::RedactedThinking(string_field(block, "data")),
                    "tool_use" => {
                        let id = string_field(block, "id");
                        let name = string_field(block, "name");
                        if id.is_empty() || name.is_empty() {
                            return Err(ModelError::Stream(format!(
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
                            initial: block.get("input").cloned().unwrap_or(Value::Null),
                        }
                    }
                    other => {
                        tracing::debug!(
                            block_type = other,
                            "ignoring an unsupported content block"
                        );
                        Block::Ignored(other.to_owned())
                    }
                };
                self.blocks.insert(start.index, block);
            }
            "content_block_delta" => {
                let delta: BlockDelta = parse(&kind, data)?;
                let Some(block) = self.blocks.get_mut(&delta.index) else {
                    return Err(ModelError::Stream(format!(
                        "a delta for content block {} that never started",
                        delta.index
                    )));
                };
                let delta_type = delta
                    .delta
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                let field = |key: &str| -> Result<String, ModelError> {
                    delta
                        .delta
                        .get(key)
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .ok_or_else(|| {
                            ModelError::Stream(format!("a `{delta_type}` without `{key}`"))
                        })
                };
                match (delta_type, block) {
                    (_, Block::Ignored(_)) => {}
                    ("text_delta", Block::Text(text)) => {
                        let piece = field("text")?;
                        text.push_str(&piece);
                        if !piece.is_empty() {
                            out.push(ModelEvent::TextDelta(piece));
                        }
                    }
                    ("input_json_delta", Block::ToolUse { json, .. }) => {
                        json.push_str(&field("partial_json")?);
                    }
                    ("thinking_delta", Block::Thinking { thinking, .. }) => {
                        let piece = field("thinking")?;
                        thinking.push_str(&piece);
                        if !piece.is_empty() {
                            out.push(ModelEvent::ThinkingDelta(piece));
                        }
                    }
                    ("signature_delta", Block::Thinking { signature, .. }) => {
                        signature.push_str(&field("signature")?);
                    }
                    (
                        "text_delta" | "input_json_delta" | "thinking_delta" | "signature_delta",
                        block,
                    ) => {
                        return Err(ModelError::Stream(format!(
                            "a `{delta_type}` for content block {} which is {}",
                            delta.index,
                            block.describe()
                        )));
                    }
                    // Deltas this client does not keep, such as citations.
                    _ => {}
                }
            }
            "content_block_stop" => {
                let stop: BlockStop = parse(&kind, data)?;
                let Some(block) = self.blocks.remove(&stop.index) else {
                    return Err(ModelError::Stream(format!(
                        "a stop for content block {} that never started",
                        stop.index
                    )));
                };
                self.blocks.insert(stop.index, Block::Done(block.finish()));
            }
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
                return Err(stream_error(&error.error.kind, error.error.message));
            }
            other => tracing::debug!(event = other, "ignoring an unknown event"),
        }
        Ok(out)
    }

    /// The whole turn, once `message_stop` came. Blocks that never got their stop (the
    /// stream hit `max_tokens` mid-block) are kept as they are: a tool call's cut-off JSON
    /// becomes a malformed [`ToolUse`].
    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.stopped {
            return Err(ModelError::Stream(if self.started {
                "the response stream ended before message_stop".into()
            } else {
                "the response stream ended before message_start (and message_stop)".into()
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
        })
    }
}

impl Block {
    fn describe(&self) -> String {
        match self {
            Block::Text(_) => "a text block".into(),
            Block::Thinking { .. } => "a thinking block".into(),
            Block::RedactedThinking(_) => "a redacted_thinking block".into(),
            Block::ToolUse { .. } => "a tool_use block".into(),
            Block::Ignored(kind) => format!("a {kind} block"),
            Block::Done(_) => "already stopped".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(turn: &mut Turn, lines: &[(&str, &str)]) -> Result<Vec<ModelEvent>, ModelError> {
        let mut out = Vec::new();
        for (name, data) in lines {
            out.extend(turn.on_event(name, data)?);
        }
        Ok(out)
    }

    #[test]
    fn messages_merge_roles_and_put_tool_results_first() {
        let messages = vec![
            Message::user("hi"),
            Message::user(""),
            Message {
                role: Role::Assistant,
                content: vec![MessageContent::ToolUse(ToolUse::from_raw("t1", "read", ""))],
            },
            Message::user("note"),
            Message {
                role: Role::User,
                content: vec![MessageContent::ToolResult {
                    tool_use_id: "t1".into(),
                    content: vec![ContentBlock::text("ok")],
                    is_error: false,
                }],
            },
        ];
        let json = messages_json(&messages);
        assert_eq!(
            Value::Array(json),
            json!([
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1",
                     "content": [{"type": "text", "text": "ok"}]},
                    {"type": "text", "text": "note"}
                ]}
            ])
        );
    }

    #[test]
    fn temperature_is_written_as_given() {
        assert_eq!(temperature_json(0.7), Some(json!(0.7)));
        assert_eq!(temperature_json(1.0), Some(json!(1.0)));
        assert_eq!(temperature_json(f32::NAN), None);
    }

    #[test]
    fn http_errors_map_by_status_and_keep_the_provider_message() {
        let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
        assert_eq!(
            http_error(429, Some(std::time::Duration::from_secs(3)), body),
            ModelError::RateLimited {
                message: "slow down".into(),
                retry_after: Some(std::time::Duration::from_secs(3)),
            }
        );
        assert!(matches!(
            http_error(529, None, body),
            ModelError::Overloaded { .. }
        ));
        assert_eq!(
            http_error(502, None, "<html>bad gateway</html>"),
            ModelError::Server {
                status: 502,
                message: "<html>bad gateway</html>".into()
            }
        );
        assert!(matches!(
            http_error(401, None, ""),
            ModelError::Api { status: 401, message } if message.contains("401")
        ));
        assert_eq!(truncate(&"é".repeat(600), 500).chars().count(), 503);
    }

    #[test]
    fn stream_error_types_map_to_errors() {
        assert!(matches!(
            stream_error("overloaded_error", "Overloaded".into()),
            ModelError::Overloaded { message, .. } if message == "Overloaded"
        ));
        assert!(matches!(
            stream_error("api_error", "boom".into()),
            ModelError::Server { status: 500, .. }
        ));
        assert!(matches!(
            stream_error("invalid_request_error", "bad".into()),
            ModelError::Api { status: 400, .. }
        ));
    }

    #[test]
    fn turn_assembles_blocks_by_index() {
        let mut turn = Turn::default();
        let out = events(
            &mut turn,
            &[
                ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#),
                ("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"y","input":{}}}"#),
                ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"x","input":{}}}"#),
                ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"k\":"}}"#),
                ("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#),
                ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#),
                ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
                ("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
                ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":9}}"#),
                ("message_stop", r#"{"type":"message_stop"}"#),
            ],
        )
        .unwrap();
        assert_eq!(out.len(), 2, "{out:?}");
        let response = turn.finish().unwrap();
        assert_eq!(
            response.content,
            vec![
                MessageContent::ToolUse(ToolUse::from_raw("a", "x", r#"{"k":1}"#)),
                MessageContent::ToolUse(ToolUse::from_raw("b", "y", "")),
            ]
        );
        assert_eq!(response.stop_reason, StopReason::Other("pause_turn".into()));
        assert_eq!(
            (response.usage.input_tokens, response.usage.output_tokens),
            (5, 9)
        );
    }

    #[test]
    fn odd_server_input_is_an_error_never_a_panic() {
        let cases: &[(&str, &str)] = &[
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":7}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":-1,"content_block":{}}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use"}}"#,
            ),
            ("message_start", "{not json"),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":5}}"#,
            ),
            ("error", r#"{"type":"error"}"#),
        ];
        for (name, data) in cases {
            let mut turn = Turn::default();
            assert!(
                matches!(turn.on_event(name, data), Err(ModelError::Stream(_))),
                "{name}: {data}"
            );
        }
        // A text delta on a tool_use block is refused too.
        let mut turn = Turn::default();
        let result = events(
            &mut turn,
            &[
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"x"}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
                ),
            ],
        );
        assert!(matches!(result, Err(ModelError::Stream(m)) if m.contains("tool_use block")));
        // Unknown events and blocks are ignored.
        let mut turn = Turn::default();
        let out = events(
            &mut turn,
            &[
                ("future", r#"{"type":"future","x":1}"#),
                ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s"}}"#),
                ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#),
                ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
                ("message_stop", r#"{"type":"message_stop"}"#),
            ],
        )
        .unwrap();
        assert!(out.is_empty());
        assert!(turn.finish().unwrap().content.is_empty());
    }

    #[test]
    fn a_turn_without_message_stop_fails() {
        let turn = Turn {
            started: true,
            ..Turn::default()
        };
        assert!(
            matches!(turn.finish(), Err(ModelError::Stream(m)) if m.contains("before message_stop"))
        );
    }

    #[tokio::test]
    async fn chunk_boundaries_do_not_matter() {
        let body = concat!(
            "event: message_start\r\n",
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\r\n\r\n",
            "event: content_block_start\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "event: content_block_delta\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"68\u{b0}F \u{2600}\"}}  \n\n",
            "event: content_block_stop\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "event: message_stop\n",
            "data: {\"type\":\"message_stop\"}",
        );
        for size in [1, 2, 3, 7, 64, body.len()] {
            let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
                .as_bytes()
                .chunks(size)
                .map(|chunk| Ok(chunk.to_vec()))
                .collect();
            let events: Vec<_> = read_turn(futures::stream::iter(chunks)).collect().await;
            let texts: String = events
                .iter()
                .filter_map(|event| match event {
                    Ok(ModelEvent::TextDelta(text)) => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            assert_eq!(texts, "68\u{b0}F \u{2600}", "chunks of {size}");
            let Some(Ok(ModelEvent::Completed(response))) = events.last() else {
                panic!("chunks of {size}: {events:?}");
            };
            assert_eq!(
                response.content,
                [MessageContent::Text {
                    text: "68\u{b0}F \u{2600}".into()
                }]
            );
            assert_eq!(response.usage.input_tokens, 3);
        }
    }

    #[tokio::test]
    async fn a_broken_connection_mid_stream_is_a_transport_error() {
        let chunks: Vec<Result<&[u8], std::io::Error>> = vec![
            Ok(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"),
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "reset by peer",
            )),
        ];
        let events: Vec<_> = read_turn(futures::stream::iter(chunks)).collect().await;
        assert!(
            matches!(events.as_slice(), [Err(ModelError::Transport(m))] if m.contains("reset by peer")),
            "{events:?}"
        );
    }
}
