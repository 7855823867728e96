//! OpenAI Chat Completions client, streaming over SSE.
//!
//! Works with OpenAI itself and with any server that speaks the same API (Ollama, vLLM,
//! llama.cpp, LM Studio, OpenRouter...) through [`OpenAiModel::with_base_url`].
//!
//! ```no_run
//! use tool_sdk::model::openai::OpenAiModel;
//!
//! // OpenAI, with OPENAI_API_KEY from the environment:
//! let gpt = OpenAiModel::from_env("gpt-4.1")?;
//! // A local server that needs no key:
//! let local = OpenAiModel::new("qwen3", None).with_base_url("http://localhost:11434/v1");
//! # Ok::<(), tool_sdk::model::ModelError>(())
//! ```

use std::fmt;
use std::time::Duration;

use eventsource_stream::Eventsource as _;
use futures::StreamExt as _;
use serde_json::{Map, Value, json};

use super::retry::parse_retry_after;
use super::{
    Message, MessageContent, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ModelStream, RetryPolicy, Role, StopReason, ToolUse, Usage,
};
use crate::ContentBlock;
use crate::schema::{Provider, tool_definition};

/// The default base URL: OpenAI's own API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The longest provider error text kept in a [`ModelError`] when the body is not JSON.
const MAX_ERROR_BODY: usize = 1000;

/// Which request field carries [`ModelRequest::max_tokens`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_completion_tokens`: what OpenAI wants (its reasoning models reject `max_tokens`).
    MaxCompletionTokens,
    /// `max_tokens`: the older name, the one every compatible server understands (Ollama,
    /// for one, ignores `max_completion_tokens`).
    MaxTokens,
}

/// A model behind the OpenAI Chat Completions API, or any server compatible with it.
#[derive(Clone)]
pub struct OpenAiModel {
    model_id: String,
    api_key: Option<String>,
    base_url: String,
    strict_tools: bool,
    retry: RetryPolicy,
    client: reqwest::Client,
    max_tokens_field: Option<MaxTokensField>,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model_id", &self.model_id)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.base_url)
            .field("strict_tools", &self.strict_tools)
            .field("retry", &self.retry)
            .field("max_tokens_field", &self.max_tokens_field())
            .finish()
    }
}

impl OpenAiModel {
    /// A client of `model_id` at OpenAI ([`DEFAULT_BASE_URL`]). The key is sent as
    /// `Authorization: Bearer <key>` when given; local servers usually need none.
    pub fn new(model_id: impl Into<String>, api_key: Option<String>) -> Self {
        OpenAiModel {
            model_id: model_id.into(),
            api_key: api_key.filter(|key| !key.is_empty()),
            base_url: DEFAULT_BASE_URL.to_owned(),
            strict_tools: false,
            retry: RetryPolicy::default(),
            client: reqwest::Client::new(),
            max_tokens_field: None,
        }
    }

    /// A client configured from the environment: `OPENAI_API_KEY` for the key and
    /// `OPENAI_BASE_URL` for the server. The key is required unless `OPENAI_BASE_URL` points
    /// somewhere other than OpenAI.
    pub fn from_env(model_id: impl Into<String>) -> Result<Self, ModelError> {
        Self::from_vars(
            model_id.into(),
            std::env::var("OPENAI_API_KEY").ok(),
            std::env::var("OPENAI_BASE_URL").ok(),
        )
    }

    fn from_vars(
        model_id: String,
        api_key: Option<String>,
        base_url: Option<String>,
    ) -> Result<Self, ModelError> {
        let api_key = api_key.filter(|key| !key.trim().is_empty());
        let base_url = base_url.filter(|url| !url.trim().is_empty());
        let is_openai = base_url.as_deref().is_none_or(is_openai_url);
        if api_key.is_none() && is_openai {
            return Err(ModelError::MissingApiKey(
                "set OPENAI_API_KEY (or set OPENAI_BASE_URL to a compatible server that needs \
                 no key)"
                    .to_owned(),
            ));
        }
        let model = OpenAiModel::new(model_id, api_key);
        Ok(match base_url {
            Some(url) => model.with_base_url(url),
            None => model,
        })
    }

    /// The server's base URL, such as `http://localhost:11434/v1` for Ollama; requests go to
    /// `{base_url}/chat/completions`.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.base_url = base_url.into().trim().trim_end_matches('/').to_owned();
        self
    }

    /// Sends tools with `strict: true` and their schemas lowered to the Structured Outputs
    /// subset ([`Provider::OpenAiStrict`]), so the arguments always match the schema.
    pub fn with_strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// How failed requests are retried (429, 5xx and connection failures).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The HTTP client to use, for timeouts, proxies or custom certificates.
    pub fn with_client(mut self, client: reqwest::Client) -> Self {
        self.client = client;
        self
    }

    /// Which field carries the token limit. By default `max_completion_tokens` for OpenAI
    /// itself and `max_tokens` for any other base URL.
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = Some(field);
        self
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    // OpenAI deprecated `max_tokens` and its reasoning models reject it, so OpenAI gets
    // `max_completion_tokens`. Compatible servers all accept `max_tokens`, while some of them
    // (Ollama, older vLLM and llama.cpp builds) silently ignore `max_completion_tokens`, so
    // every other base URL gets `max_tokens`. Sending both is no way out: OpenAI's reasoning
    // models reject a request that carries `max_tokens` at all.
    fn max_tokens_field(&self) -> MaxTokensField {
        self.max_tokens_field
            .unwrap_or(if is_openai_url(&self.base_url) {
                MaxTokensField::MaxCompletionTokens
            } else {
                MaxTokensField::MaxTokens
            })
    }

    /// The JSON body of a streaming Chat Completions request.
    fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), self.model_id.clone().into());
        body.insert(
            "messages".into(),
            chat_messages(request.system.as_deref(), &request.messages).into(),
        );
        body.insert("stream".into(), true.into());
        body.insert("stream_options".into(), json!({"include_usage": true}));
        let field = match self.max_tokens_field() {
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            MaxTokensField::MaxTokens => "max_tokens",
        };
        body.insert(field.into(), request.max_tokens.into());
        if let Some(temperature) = request.temperature.and_then(f32_to_json) {
            body.insert("temperature".into(), temperature);
        }
        if !request.tools.is_empty() {
            let provider = if self.strict_tools {
                Provider::OpenAiStrict
            } else {
                Provider::OpenAi
            };
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    tool_definition(
                        &tool.name,
                        &tool.description,
                        &tool.input_schema,
                        provider,
                        None,
                        None,
                    )
                })
                .collect();
            body.insert("tools".into(), tools.into());
        }
        Value::Object(body)
    }

    /// One attempt at starting the stream: the response once its status is a success.
    async fn send(&self, body: &Value) -> Result<reqwest::Response, ModelError> {
        let mut builder = self
            .client
            .post(format!("{}/chat/completions", self.base_url))
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .json(body);
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = builder
            .send()
            .await
            .map_err(|error| ModelError::Transport(error_chain(&error)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let headers = response.headers();
        let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
        let retry_after = header("retry-after-ms")
            .and_then(|ms| ms.trim().parse::<f64>().ok())
            .filter(|ms| ms.is_finite() && *ms >= 0.0)
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .or_else(|| parse_retry_after(header("retry-after")));
        let text = response.text().await.unwrap_or_default();
        let message = http_error_message(&text).unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("no error message")
                .to_owned()
        });
        Err(ModelError::from_status(
            status.as_u16(),
            message,
            retry_after,
        ))
    }
}

impl Model for OpenAiModel {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        Box::pin(async_stream::stream! {
            let body = self.request_body(request);
            let response = match self.retry.run(|| self.send(&body)).await {
                Ok(response) => response,
                Err(error) => {
                    yield Err(error);
                    return;
                }
            };
            let mut turn = TurnState::default();

            // A server that ignored `stream: true` answers with one JSON completion.
            let is_json = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|value| value.to_str().ok())
                .is_some_and(|value| value.trim_start().starts_with("application/json"));
            if is_json {
                let text = match response.text().await {
                    Ok(text) => text,
                    Err(error) => {
                        yield Err(ModelError::Stream(error_chain(&error)));
                        return;
                    }
                };
                match turn.apply_completion(&text) {
                    Ok(events) => {
                        for event in events {
                            yield Ok(event);
                        }
                    }
                    Err(error) => {
                        yield Err(error);
                        return;
                    }
                }
                yield turn.finish().map(ModelEvent::Completed);
                return;
            }

            let mut events = response.bytes_stream().eventsource();
            while let Some(event) = events.next().await {
                let event = match event {
                    Ok(event) => event,
                    Err(error) => {
                        yield Err(ModelError::Stream(format!("the connection broke: {error}")));
                        return;
                    }
                };
                match turn.apply(&event.event, &event.data) {
                    Ok(events) => {
                        for event in events {
                            yield Ok(event);
                        }
                    }
                    Err(error) => {
                        yield Err(error);
                        return;
                    }
                }
                if turn.done {
                    break;
                }
            }
            yield turn.finish().map(ModelEvent::Completed);
        })
    }
}

/// Whether a base URL is OpenAI's own API.
fn is_openai_url(url: &str) -> bool {
    let rest = url.trim();
    let rest = rest.split_once("://").map_or(rest, |(_, rest)| rest);
    let host = rest.split(['/', ':', '?']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

/// An `f32` as the JSON number it reads as (`0.2`, not `0.20000000298023224`).
fn f32_to_json(value: f32) -> Option<Value> {
    if !value.is_finite() {
        return None;
    }
    let value: f64 = value.to_string().parse().ok()?;
    serde_json::Number::from_f64(value).map(Value::Number)
}

/// An error and its causes, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The provider's message in an error body: `error.message`, `error` as a string, `message`
/// or `detail`; else the body itself, shortened.
fn http_error_message(body: &str) -> Option<String> {
    if let Ok(value) = serde_json::from_str::<Value>(body)
        && let Some(message) = json_error_message(&value)
    {
        return Some(message);
    }
    let body = body.trim();
    (!body.is_empty()).then(|| truncate(body, MAX_ERROR_BODY))
}

fn json_error_message(value: &Value) -> Option<String> {
    let error = value.get("error");
    let message = match error {
        Some(Value::String(message)) => Some(message.as_str()),
        Some(error) => error.get("message").and_then(Value::as_str),
        None => None,
    }
    .or_else(|| value.get("message").and_then(Value::as_str))
    .or_else(|| value.get("detail").and_then(Value::as_str))?;
    Some(message.to_owned())
}

fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Our conversation as Chat Completions messages.
fn chat_messages(system: Option<&str>, messages: &[Message]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = system {
        out.push(json!({"role": "system", "content": system}));
    }
    for message in messages {
        match message.role {
            Role::User => push_user_message(&mut out, &message.content),
            Role::Assistant => push_assistant_message(&mut out, &message.content),
        }
    }
    out
}

/// A user message: its tool results first, each as its own `tool` message (the API wants them
/// right after the assistant message that made the calls), then its text and images.
fn push_user_message(out: &mut Vec<Value>, content: &[MessageContent]) {
    let mut parts = Vec::new();
    let mut has_image = false;
    for block in content {
        match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => out.push(json!({
                "role": "tool",
                "tool_call_id": tool_use_id,
                "content": tool_result_text(content, *is_error),
            })),
            MessageContent::Text { text } => {
                parts.push(json!({"type": "text", "text": text}));
            }
            MessageContent::Image { media_type, data } => {
                has_image = true;
                parts.push(json!({
                    "type": "image_url",
                    "image_url": {"url": format!("data:{media_type};base64,{data}")},
                }));
            }
            // Reasoning and tool calls have no place in a user message of this format.
            MessageContent::ToolUse(_)
            | MessageContent::Thinking { .. }
            | MessageContent::RedactedThinking { .. } => {}
        }
    }
    if parts.is_empty() {
        return;
    }
    // Plain text goes as a string, which every compatible server accepts; content parts only
    // when there are images.
    let content = if has_image {
        Value::Array(parts)
    } else {
        let texts: Vec<&str> = parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect();
        Value::String(texts.join("\n"))
    };
    out.push(json!({"role": "user", "content": content}));
}

/// An assistant message: its text, or `null` beside tool calls. Reasoning blocks are dropped:
/// the format has no way to send them back.
fn push_assistant_message(out: &mut Vec<Value>, content: &[MessageContent]) {
    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for block in content {
        match block {
            MessageContent::Text { text: part } => text.push_str(part),
            MessageContent::ToolUse(tool_use) => tool_calls.push(json!({
                "id": tool_use.id,
                "type": "function",
                "function": {
                    "name": tool_use.name,
                    // The parsed input, never the malformed raw text: several compatible
                    // servers parse these arguments and reject the request when they are not
                    // JSON. The error result answering such a call tells the model what was
                    // wrong.
                    "arguments": tool_use.input.json_or_empty().to_string(),
                },
            })),
            MessageContent::Image { .. }
            | MessageContent::ToolResult { .. }
            | MessageContent::Thinking { .. }
            | MessageContent::RedactedThinking { .. } => {}
        }
    }
    if text.is_empty() && tool_calls.is_empty() {
        return;
    }
    let mut message = Map::new();
    message.insert("role".into(), "assistant".into());
    message.insert(
        "content".into(),
        if text.is_empty() {
            Value::Null
        } else {
            Value::String(text)
        },
    );
    if !tool_calls.is_empty() {
        message.insert("tool_calls".into(), tool_calls.into());
    }
    out.push(Value::Object(message));
}

/// A tool result as the text a `tool` message carries: text blocks joined by newlines, images
/// noted as omitted (these messages take text only), failures prefixed with `Error: `.
fn tool_result_text(content: &[ContentBlock], is_error: bool) -> String {
    let text = content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.as_str(),
            ContentBlock::Image { .. } => "[image omitted]",
        })
        .collect::<Vec<_>>()
        .join("\n");
    match (is_error, text.is_empty()) {
        (true, true) => "Error".to_owned(),
        (true, false) => format!("Error: {text}"),
        (false, _) => text,
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
}

/// What has arrived of one turn so far.
#[derive(Debug, Default)]
struct TurnState {
    text: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    refused: bool,
    usage: Option<Usage>,
    done: bool,
}

impl TurnState {
    /// Takes one SSE event: a chunk, `[DONE]`, or an error object.
    fn apply(&mut self, event: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(Vec::new());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|error| {
            ModelError::Stream(format!(
                "unreadable chunk ({error}): {}",
                truncate(data, 200)
            ))
        })?;
        if let Some(error) = chunk.get("error").filter(|error| !error.is_null()) {
            return Err(stream_error(error, &chunk));
        }
        if event == "error" {
            return Err(stream_error(&chunk, &chunk));
        }
        Ok(self.apply_chunk(&chunk))
    }

    /// Takes a whole (non-streamed) completion, as a server that ignores `stream` sends it.
    fn apply_completion(&mut self, body: &str) -> Result<Vec<ModelEvent>, ModelError> {
        let completion: Value = serde_json::from_str(body).map_err(|error| {
            ModelError::Stream(format!(
                "unreadable response ({error}): {}",
                truncate(body.trim(), 200)
            ))
        })?;
        if let Some(error) = completion.get("error").filter(|error| !error.is_null()) {
            return Err(stream_error(error, &completion));
        }
        // As one chunk whose delta is the whole message, tool calls numbered by position.
        let mut chunk = completion.clone();
        if let Some(choices) = chunk.get_mut("choices").and_then(Value::as_array_mut) {
            for choice in choices {
                let Some(choice) = choice.as_object_mut() else {
                    continue;
                };
                let Some(mut message) = choice.remove("message") else {
                    continue;
                };
                if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
                    for (position, call) in calls.iter_mut().enumerate() {
                        if let Some(call) = call.as_object_mut() {
                            call.entry("index").or_insert(position.into());
                        }
                    }
                }
                choice.insert("delta".into(), message);
            }
        }
        let events = self.apply_chunk(&chunk);
        self.done = true;
        Ok(events)
    }

    fn apply_chunk(&mut self, chunk: &Value) -> Vec<ModelEvent> {
        let mut events = Vec::new();
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Some(parse_usage(usage));
        }
        // Only the first choice: the SDK never asks for more than one.
        let choice = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|choices| {
                choices
                    .iter()
                    .find(|choice| choice.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        let Some(choice) = choice else {
            return events;
        };
        if let Some(delta) = choice.get("delta").filter(|delta| delta.is_object()) {
            // Reasoning text, as DeepSeek, vLLM, llama.cpp and Ollama stream it: shown live,
            // not kept, since the format cannot send it back.
            for key in ["reasoning_content", "reasoning"] {
                if let Some(thinking) = delta.get(key).and_then(Value::as_str)
                    && !thinking.is_empty()
                {
                    events.push(ModelEvent::ThinkingDelta(thinking.to_owned()));
                }
            }
            if let Some(text) = delta.get("content").and_then(Value::as_str)
                && !text.is_empty()
            {
                self.text.push_str(text);
                events.push(ModelEvent::TextDelta(text.to_owned()));
            }
            if let Some(refusal) = delta.get("refusal").and_then(Value::as_str)
                && !refusal.is_empty()
            {
                self.refused = true;
                self.text.push_str(refusal);
                events.push(ModelEvent::TextDelta(refusal.to_owned()));
            }
            if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                for call in calls {
                    self.apply_tool_call(call, &mut events);
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str)
            && !reason.is_empty()
        {
            self.finish_reason = Some(reason.to_owned());
        }
        events
    }

    /// Takes one `delta.tool_calls[]` entry: a new call or more of one already started.
    fn apply_tool_call(&mut self, call: &Value, events: &mut Vec<ModelEvent>) {
        if !call.is_object() {
            return;
        }
        let index = call.get("index").and_then(Value::as_u64);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        let function = call.get("function");
        let name = function
            .and_then(|function| function.get("name"))
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty());
        let arguments = match function.and_then(|function| function.get("arguments")) {
            Some(Value::String(arguments)) => arguments.clone(),
            None | Some(Value::Null) => String::new(),
            // Some servers send the arguments as an object rather than JSON text.
            Some(other) => other.to_string(),
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
            partial.name = name.to_owned();
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

    /// The whole turn, once the stream has ended.
    fn finish(self) -> Result<ModelResponse, ModelError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(ModelError::Stream(
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

/// Usage as OpenAI reports it. `prompt_tokens` counts cached tokens too; here they are split
/// out, so `input_tokens` means what it means for Anthropic: prompt tokens not read from the
/// cache.
fn parse_usage(usage: &Value) -> Usage {
    let count = |pointer: &str| usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let prompt = count("/prompt_tokens");
    let cached = count("/prompt_tokens_details/cached_tokens").min(prompt);
    Usage {
        input_tokens: prompt - cached,
        output_tokens: count("/completion_tokens"),
        cache_read_input_tokens: cached,
        cache_creation_input_tokens: 0,
    }
}

/// An error object sent in place of a chunk (`{"error": {...}}`), after the HTTP status was
/// already 200: its `code` gives the status when it is one, its `type` says whether the
/// server failed.
fn stream_error(error: &Value, chunk: &Value) -> ModelError {
    let message = match error {
        Value::String(message) => message.clone(),
        _ => json_error_message(chunk)
            .or_else(|| {
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .unwrap_or_else(|| truncate(&error.to_string(), MAX_ERROR_BODY)),
    };
    let code = error
        .get("code")
        .and_then(|code| {
            code.as_u64()
                .or_else(|| code.as_str().and_then(|code| code.parse().ok()))
        })
        .and_then(|code| u16::try_from(code).ok())
        .filter(|code| (400..600).contains(code));
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    match code {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> (Vec<ModelEvent>, Result<ModelResponse, ModelError>) {
        let mut turn = TurnState::default();
        let mut events = Vec::new();
        for line in lines {
            match turn.apply("message", line) {
                Ok(more) => events.extend(more),
                Err(error) => return (events, Err(error)),
            }
        }
        (events, turn.finish())
    }

    #[test]
    fn from_env_needs_a_key_only_for_openai() {
        let missing = OpenAiModel::from_vars("gpt-4.1".into(), None, None).unwrap_err();
        assert!(
            matches!(&missing, ModelError::MissingApiKey(message) if message.contains("OPENAI_API_KEY")),
            "{missing:?}"
        );
        let missing = OpenAiModel::from_vars(
            "gpt-4.1".into(),
            Some(" ".into()),
            Some("https://api.openai.com/v1/".into()),
        )
        .unwrap_err();
        assert!(matches!(missing, ModelError::MissingApiKey(_)));

        let local = OpenAiModel::from_vars(
            "qwen3".into(),
            None,
            Some("http://localhost:11434/v1/".into()),
        )
        .unwrap();
        assert_eq!(local.base_url(), "http://localhost:11434/v1");
        assert_eq!(local.api_key, None);
        assert_eq!(local.max_tokens_field(), MaxTokensField::MaxTokens);

        let openai =
            OpenAiModel::from_vars("gpt-4.1".into(), Some("sk-test".into()), None).unwrap();
        assert_eq!(openai.base_url(), DEFAULT_BASE_URL);
        assert_eq!(openai.api_key.as_deref(), Some("sk-test"));
        assert_eq!(
            openai.max_tokens_field(),
            MaxTokensField::MaxCompletionTokens
        );
        assert!(!format!("{openai:?}").contains("sk-test"), "key redacted");
    }

    #[test]
    fn openai_urls_are_recognised_by_host() {
        assert!(is_openai_url("https://api.openai.com/v1"));
        assert!(is_openai_url("HTTPS://API.OPENAI.COM:443/v1"));
        assert!(!is_openai_url("https://api.openai.com.example.org/v1"));
        assert!(!is_openai_url("http://localhost:8000/v1"));
    }

    #[test]
    fn temperature_is_sent_as_written() {
        assert_eq!(f32_to_json(0.2), Some(json!(0.2)));
        assert_eq!(f32_to_json(1.0), Some(json!(1.0)));
        assert_eq!(f32_to_json(f32::NAN), None);
    }

    #[test]
    fn messages_keep_tool_results_right_after_the_calls() {
        let messages = vec![
            Message::user("weather?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    MessageContent::Thinking {
                        thinking: "hmm".into(),
                        signature: "sig".into(),
                    },
                    MessageContent::ToolUse(ToolUse::from_raw("a", "get", r#"{"x":1}"#)),
                    MessageContent::ToolUse(ToolUse::from_raw("b", "get", "{oops")),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    MessageContent::ToolResult {
                        tool_use_id: "a".into(),
                        content: vec![
                            ContentBlock::text("sunny"),
                            ContentBlock::Image {
                                media_type: "image/png".into(),
                                data: "AAAA".into(),
                            },
                        ],
                        is_error: false,
                    },
                    MessageContent::ToolResult {
                        tool_use_id: "b".into(),
                        content: vec![ContentBlock::text("bad arguments")],
                        is_error: true,
                    },
                    MessageContent::Text {
                        text: "and tomorrow?".into(),
                    },
                ],
            },
        ];
        let out = chat_messages(Some("be brief"), &messages);
        assert_eq!(
            Value::Array(out),
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "get", "arguments": "{\"x\":1}"}},
                    {"id": "b", "type": "function", "function": {"name": "get", "arguments": "{}"}},
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "sunny\n[image omitted]"},
                {"role": "tool", "tool_call_id": "b", "content": "Error: bad arguments"},
                {"role": "user", "content": "and tomorrow?"},
            ])
        );
    }

    #[test]
    fn user_images_become_data_urls() {
        let out = chat_messages(
            None,
            &[Message {
                role: Role::User,
                content: vec![
                    MessageContent::Text {
                        text: "what is this?".into(),
                    },
                    MessageContent::Image {
                        media_type: "image/png".into(),
                        data: "iVBOR".into(),
                    },
                ],
            }],
        );
        assert_eq!(
            out,
            vec![json!({"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
            ]})]
        );
    }

    #[test]
    fn one_index_with_a_new_id_is_a_new_call() {
        let (events, response) = run(&[
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{\"k\":1}"}}]},"finish_reason":"tool_calls"}]}"#,
        ]);
        assert_eq!(events.len(), 2, "{events:?}");
        let response = response.unwrap();
        let calls: Vec<_> = response
            .content
            .iter()
            .filter_map(|block| match block {
                MessageContent::ToolUse(call) => {
                    Some((call.id.as_str(), call.input.json_or_empty().into_owned()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(calls, vec![("a", json!({})), ("b", json!({"k": 1}))]);
    }

    #[test]
    fn odd_input_never_panics() {
        let odd = [
            "null",
            "[]",
            "42",
            r#"{"choices":null}"#,
            r#"{"choices":[null,1,"x"]}"#,
            r#"{"choices":[{"delta":null,"finish_reason":7}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[null,{"index":-1},{"function":null}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":18446744073709551615,"function":{"arguments":{"a":1}}}]}}]}"#,
            r#"{"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":99}}}"#,
            r#"{"choices":[{"delta":{"content":"ü"},"finish_reason":"stop"}]}"#,
        ];
        let (_, response) = run(&odd);
        let response = response.unwrap();
        assert_eq!(response.usage.input_tokens, 0);
        assert_eq!(response.usage.cache_read_input_tokens, 1);

        assert!(matches!(run(&["{not json"]).1, Err(ModelError::Stream(_))));
        assert!(matches!(
            run(&[r#"{"error":{"message":"boom","type":"server_error"}}"#]).1,
            Err(ModelError::Server { status: 500, ref message }) if message == "boom"
        ));
        assert!(matches!(
            run(&[r#"{"error":{"message":"bad","type":"BadRequestError","code":400}}"#]).1,
            Err(ModelError::Api { status: 400, ref message }) if message == "bad"
        ));
    }

    #[test]
    fn http_error_messages_are_found_in_any_common_shape() {
        assert_eq!(
            http_error_message(
                r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#
            )
            .as_deref(),
            Some("Incorrect API key")
        );
        assert_eq!(
            http_error_message(r#"{"error":"model not found"}"#).as_deref(),
            Some("model not found")
        );
        assert_eq!(
            http_error_message(r#"{"detail":"Not Found"}"#).as_deref(),
            Some("Not Found")
        );
        assert_eq!(
            http_error_message("upstream timed out").as_deref(),
            Some("upstream timed out")
        );
        assert_eq!(http_error_message("  "), None);
        assert_eq!(truncate("éééé", 2), "éé...");
    }
}
