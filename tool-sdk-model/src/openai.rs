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

use serde_json::{Map, Value, json};

use self::chunks::TurnState;
use super::http::{Auth, HttpClient, f32_json};
use super::{Effort, Message, MessageContent, Model, ModelError, ModelRequest, ModelStream, Role};
use crate::schema::{Provider, lower, tool_definition};
use tool_sdk_core::ContentBlock;

/// The default base URL: OpenAI's own API.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

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
    http: HttpClient,
    strict_tools: bool,
    max_tokens_field: Option<MaxTokensField>,
}

impl fmt::Debug for OpenAiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiModel")
            .field("model_id", &self.model_id)
            .field("api_key", &self.http.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.http.base_url)
            .field("strict_tools", &self.strict_tools)
            .field("retry", &self.http.retry)
            .field("max_tokens_field", &self.max_tokens_field())
            .finish()
    }
}

impl OpenAiModel {
    /// A client of `model_id` at OpenAI ([`DEFAULT_BASE_URL`]). The key is sent as
    /// `Authorization: Bearer <key>` when given; local servers usually need none.
    pub fn new(model_id: impl Into<String>, api_key: Option<String>) -> Self {
        let mut http = HttpClient::new("openai", DEFAULT_BASE_URL, Auth::Bearer);
        http.api_key = api_key.filter(|key| !key.is_empty());
        http.key_hint = "pass one to OpenAiModel::new or set OPENAI_API_KEY";
        OpenAiModel {
            model_id: model_id.into(),
            http,
            strict_tools: false,
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
        self.http.set_base_url(&base_url.into());
        self
    }

    /// Sends tools with `strict: true` and their schemas lowered to the Structured Outputs
    /// subset ([`Provider::OpenAiStrict`]), so the arguments always match the schema.
    pub fn with_strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    super::http::http_builders!();

    /// Which field carries the token limit. By default `max_completion_tokens` for OpenAI
    /// itself and `max_tokens` for any other base URL.
    pub fn with_max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = Some(field);
        self
    }

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    // OpenAI deprecated `max_tokens` and its reasoning models reject it, so OpenAI gets
    // `max_completion_tokens`. Compatible servers all accept `max_tokens`, while some of them
    // (Ollama, older vLLM and llama.cpp builds) silently ignore `max_completion_tokens`, so
    // every other base URL gets `max_tokens`. Sending both is no way out: OpenAI's reasoning
    // models reject a request that carries `max_tokens` at all.
    fn max_tokens_field(&self) -> MaxTokensField {
        self.max_tokens_field
            .unwrap_or(if is_openai_url(&self.http.base_url) {
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
        if let Some(temperature) = request.temperature.and_then(f32_json) {
            body.insert("temperature".into(), temperature);
        }
        // Chat Completions has no thinking budget; effort is its `reasoning_effort`, whose
        // highest level is `xhigh`.
        if let Some(effort) = request.effort {
            let level = match effort {
                Effort::Max => Effort::XHigh,
                level => level,
            };
            body.insert("reasoning_effort".into(), level.as_str().into());
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
        if let Some(output) = &request.output {
            // Structured Outputs: the answer's text is JSON of this schema, lowered strictly.
            let mut format = Map::new();
            format.insert("name".into(), output.name.clone().into());
            if let Some(description) = &output.description {
                format.insert("description".into(), description.clone().into());
            }
            format.insert(
                "schema".into(),
                lower(&output.schema, Provider::OpenAiStrict),
            );
            format.insert("strict".into(), true.into());
            body.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": format}),
            );
        }
        Value::Object(body)
    }
}

impl Model for OpenAiModel {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// `openai` for any OpenAI-compatible server too, as the conventions ask (the request
    /// goes through OpenAI's API).
    fn provider_name(&self) -> &str {
        "openai"
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let body = self.request_body(request);
        self.http
            .stream_turn("/chat/completions", request, body, TurnState::default())
    }
}

/// Whether a base URL is OpenAI's own API.
fn is_openai_url(url: &str) -> bool {
    let rest = url.trim();
    let rest = rest.split_once("://").map_or(rest, |(_, rest)| rest);
    let host = rest.split(['/', ':', '?']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.openai.com")
}

/// Our conversation as Chat Completions messages.
fn chat_messages<'a>(
    system: Option<&str>,
    messages: impl IntoIterator<Item = &'a Message>,
) -> Vec<Value> {
    let messages = messages.into_iter();
    let mut out = Vec::with_capacity(messages.size_hint().0 + 1);
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
            | MessageContent::RedactedThinking { .. }
            | MessageContent::ThoughtSignature { .. } => {}
            MessageContent::ProviderItem { .. } => {}
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
            | MessageContent::RedactedThinking { .. }
            | MessageContent::ThoughtSignature { .. } => {}
            MessageContent::ProviderItem { .. } => {}
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
pub(super) fn tool_result_text(content: &[ContentBlock], is_error: bool) -> String {
    let text = content
        .iter()
        .map(|block| {
            block
                .readable()
                .unwrap_or(std::borrow::Cow::Borrowed("[image omitted]"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    match (is_error, text.is_empty()) {
        (true, true) => "Error".to_owned(),
        (true, false) => format!("Error: {text}"),
        (false, _) => text,
    }
}

mod chunks;
#[cfg(test)]
mod tests;
