//! OpenAI Responses API client, streaming over SSE.
//!
//! What OpenAI recommends for its reasoning models: the model's reasoning comes back as
//! `reasoning` items that the next request carries, so it is not lost between tool calls.
//! Nothing is stored at OpenAI (`store: false`): each reasoning item comes encrypted
//! (`include: ["reasoning.encrypted_content"]`), is kept in the conversation as a
//! [`MessageContent::ProviderItem`] and goes back unchanged, before the calls it preceded.
//! Chat Completions ([`OpenAiModel`](super::openai::OpenAiModel)) stays the client of
//! compatible servers (Ollama, vLLM, llama.cpp).
//!
//! ```no_run
//! use tool_sdk::model::openai_responses::{
//!     OpenAiResponsesModel, ReasoningEffort, ReasoningSummary,
//! };
//!
//! // With OPENAI_API_KEY from the environment:
//! let model = OpenAiResponsesModel::from_env("gpt-5")?
//!     .with_reasoning_effort(ReasoningEffort::High)
//!     .with_reasoning_summary(ReasoningSummary::Auto);
//! # Ok::<(), tool_sdk::model::ModelError>(())
//! ```

use std::fmt;

use serde_json::{Map, Value, json};

use self::events::TurnState;
use super::http::{Auth, HttpClient, f32_json};
use super::openai::tool_result_text;
use super::{Message, MessageContent, Model, ModelError, ModelRequest, ModelStream, Role};
use crate::schema::{Provider, lower};

/// The default base URL: OpenAI's own API; requests go to `{base_url}/responses`.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// What [`MessageContent::ProviderItem::provider`] says for the items this client keeps.
pub const PROVIDER: &str = "openai";

/// How much a reasoning model thinks before it answers (`reasoning.effort`). Which levels a
/// model takes is OpenAI's to say: older reasoning models know only low, medium and high.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningEffort {
    /// `none`: no reasoning, on the models that allow it.
    None,
    /// `minimal`.
    Minimal,
    /// `low`.
    Low,
    /// `medium`: OpenAI's default.
    Medium,
    /// `high`.
    High,
    /// `xhigh`, on the models that have it.
    XHigh,
}

impl ReasoningEffort {
    /// The word the API takes.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::None => "none",
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
            ReasoningEffort::XHigh => "xhigh",
        }
    }
}

/// Whether the model's reasoning is summarised for display (`reasoning.summary`): summaries
/// stream as [`ModelEvent::ThinkingDelta`](super::ModelEvent::ThinkingDelta).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReasoningSummary {
    /// `auto`: the most detailed summary the model offers.
    Auto,
    /// `concise`.
    Concise,
    /// `detailed`.
    Detailed,
}

impl ReasoningSummary {
    /// The word the API takes.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningSummary::Auto => "auto",
            ReasoningSummary::Concise => "concise",
            ReasoningSummary::Detailed => "detailed",
        }
    }
}

/// A model behind OpenAI's Responses API (`POST {base_url}/responses`).
#[derive(Clone)]
pub struct OpenAiResponsesModel {
    model_id: String,
    http: HttpClient,
    strict_tools: bool,
    effort: Option<ReasoningEffort>,
    summary: Option<ReasoningSummary>,
    encrypted_reasoning: Option<bool>,
}

impl fmt::Debug for OpenAiResponsesModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiResponsesModel")
            .field("model_id", &self.model_id)
            .field("api_key", &self.http.api_key.as_ref().map(|_| "<redacted>"))
            .field("base_url", &self.http.base_url)
            .field("strict_tools", &self.strict_tools)
            .field("effort", &self.effort)
            .field("summary", &self.summary)
            .field("encrypted_reasoning", &self.encrypted_reasoning())
            .field("retry", &self.http.retry)
            .finish()
    }
}

impl OpenAiResponsesModel {
    /// A client of `model_id` at OpenAI ([`DEFAULT_BASE_URL`]), the key sent as
    /// `Authorization: Bearer <key>`.
    pub fn new(model_id: impl Into<String>, api_key: impl Into<String>) -> Self {
        // Named apart from the Chat client in logs and recorded cassettes' file names.
        let mut http = HttpClient::new("openai-responses", DEFAULT_BASE_URL, Auth::Bearer);
        http.api_key = Some(api_key.into());
        http.key_hint = "pass one to OpenAiResponsesModel::new or set OPENAI_API_KEY";
        OpenAiResponsesModel {
            model_id: model_id.into(),
            http,
            strict_tools: false,
            effort: None,
            summary: None,
            encrypted_reasoning: None,
        }
    }

    /// A client with the key from `OPENAI_API_KEY` and, when set, the server from
    /// `OPENAI_BASE_URL`.
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
        let Some(api_key) = api_key.filter(|key| !key.trim().is_empty()) else {
            return Err(ModelError::MissingApiKey(
                "set OPENAI_API_KEY to use OpenAI's Responses API".to_owned(),
            ));
        };
        let model = OpenAiResponsesModel::new(model_id, api_key);
        Ok(match base_url.filter(|url| !url.trim().is_empty()) {
            Some(url) => model.with_base_url(url),
            None => model,
        })
    }

    /// Another server speaking the Responses API (a proxy, Azure OpenAI's `/openai/v1`).
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.http.set_base_url(&base_url.into());
        self
    }

    /// Sends tools with `strict: true` and their schemas lowered to the Structured Outputs
    /// subset ([`Provider::OpenAiStrict`]), so the arguments always match the schema. Off by
    /// default, as in the Chat client: the tools' own schemas, `strict: false`.
    pub fn with_strict_tools(mut self, strict: bool) -> Self {
        self.strict_tools = strict;
        self
    }

    /// Asks the model to reason this much (`reasoning.effort`); by default the model's own.
    pub fn with_reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.effort = Some(effort);
        self
    }

    /// Asks for summaries of the model's reasoning (`reasoning.summary`), streamed as
    /// thinking; by default none are asked for.
    pub fn with_reasoning_summary(mut self, summary: ReasoningSummary) -> Self {
        self.summary = Some(summary);
        self
    }

    /// Whether requests ask for the reasoning items' `encrypted_content`, which is what lets
    /// them go back with `store: false`. On by default, except for model ids that do not
    /// reason (`gpt-4…`, `gpt-3.5…`, `chatgpt-…`), which OpenAI refuses it for.
    pub fn with_encrypted_reasoning(mut self, on: bool) -> Self {
        self.encrypted_reasoning = Some(on);
        self
    }

    super::http::http_builders!();

    /// The base URL requests go to.
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    fn encrypted_reasoning(&self) -> bool {
        self.encrypted_reasoning.unwrap_or_else(|| {
            let id = self.model_id.to_ascii_lowercase();
            !["gpt-4", "gpt-3.5", "chatgpt-"]
                .iter()
                .any(|prefix| id.starts_with(prefix))
        })
    }

    /// The JSON body of a streaming Responses request.
    fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        body.insert("model".into(), self.model_id.clone().into());
        if let Some(system) = &request.system {
            body.insert("instructions".into(), system.clone().into());
        }
        body.insert("input".into(), input_items(&request.messages).into());
        body.insert("stream".into(), true.into());
        // Nothing is kept at OpenAI: the conversation, reasoning included, is ours to send.
        body.insert("store".into(), false.into());
        if self.encrypted_reasoning() {
            body.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        body.insert("max_output_tokens".into(), request.max_tokens.into());
        if let Some(temperature) = request.temperature.and_then(f32_json) {
            body.insert("temperature".into(), temperature);
        }
        if !request.tools.is_empty() {
            let provider = match self.strict_tools {
                true => Provider::OpenAiStrict,
                false => Provider::OpenAi,
            };
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({
                        "type": "function",
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": lower(&tool.input_schema, provider),
                        "strict": self.strict_tools,
                    })
                })
                .collect();
            body.insert("tools".into(), tools.into());
        }
        // The client's own effort, else the agent's (`ModelSettings::with_effort`), whose
        // `max` is OpenAI's highest, `xhigh`.
        let effort = self
            .effort
            .map(ReasoningEffort::as_str)
            .or(match request.effort {
                Some(crate::Effort::Max) => Some("xhigh"),
                Some(effort) => Some(effort.as_str()),
                None => None,
            });
        if effort.is_some() || self.summary.is_some() {
            let mut reasoning = Map::new();
            if let Some(effort) = effort {
                reasoning.insert("effort".into(), effort.into());
            }
            if let Some(summary) = self.summary {
                reasoning.insert("summary".into(), summary.as_str().into());
            }
            body.insert("reasoning".into(), reasoning.into());
        }
        if let Some(output) = &request.output {
            // Structured Outputs: the answer's text is JSON of this schema, lowered strictly.
            let mut format = Map::new();
            format.insert("type".into(), "json_schema".into());
            format.insert("name".into(), output.name.clone().into());
            if let Some(description) = &output.description {
                format.insert("description".into(), description.clone().into());
            }
            format.insert(
                "schema".into(),
                lower(&output.schema, Provider::OpenAiStrict),
            );
            format.insert("strict".into(), true.into());
            body.insert("text".into(), json!({ "format": format }));
        }
        Value::Object(body)
    }
}

impl Model for OpenAiResponsesModel {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn provider_name(&self) -> &str {
        PROVIDER
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let body = self.request_body(request);
        self.http
            .stream_turn("/responses", request, body, TurnState::default())
    }
}

/// Our conversation as Responses `input` items, in order.
fn input_items<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        match message.role {
            Role::User => push_user(&mut out, &message.content),
            Role::Assistant => push_assistant(&mut out, &message.content),
        }
    }
    out
}

/// A user message: its tool results first, as `function_call_output` items right after the
/// calls they answer, then its text and images as one message.
fn push_user(out: &mut Vec<Value>, content: &[MessageContent]) {
    let mut parts = Vec::new();
    for block in content {
        match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => out.push(json!({
                "type": "function_call_output",
                "call_id": tool_use_id,
                "output": tool_result_text(content, *is_error),
            })),
            MessageContent::Text { text } => {
                parts.push(json!({"type": "input_text", "text": text}));
            }
            MessageContent::Image { media_type, data } => parts.push(json!({
                "type": "input_image",
                "image_url": format!("data:{media_type};base64,{data}"),
            })),
            MessageContent::ToolUse(_)
            | MessageContent::Thinking { .. }
            | MessageContent::RedactedThinking { .. }
            | MessageContent::ThoughtSignature { .. }
            | MessageContent::ProviderItem { .. } => {}
        }
    }
    if !parts.is_empty() {
        out.push(json!({"type": "message", "role": "user", "content": parts}));
    }
}

/// An assistant message, its blocks in their order: our own reasoning items back as they came,
/// text as an assistant message, each call as a `function_call` item. Another provider's
/// reasoning cannot be read here and is left out, and so is a reasoning item that nothing
/// followed (a turn cut off while it reasoned): the API refuses a reasoning item without the
/// item it preceded.
fn push_assistant(out: &mut Vec<Value>, content: &[MessageContent]) {
    let answered = content.iter().rposition(|block| match block {
        MessageContent::Text { text } => !text.is_empty(),
        MessageContent::ToolUse(_) => true,
        _ => false,
    });
    let mut text = String::new();
    for (position, block) in content.iter().enumerate() {
        match block {
            MessageContent::Text { text: part } => text.push_str(part),
            MessageContent::ProviderItem { provider, item }
                if provider == PROVIDER && answered.is_some_and(|last| position < last) =>
            {
                flush_text(out, &mut text);
                out.push(item.clone());
            }
            MessageContent::ToolUse(call) => {
                flush_text(out, &mut text);
                out.push(json!({
                    "type": "function_call",
                    "call_id": call.id,
                    "name": call.name,
                    // The parsed input, never the malformed raw text, which the API would
                    // refuse; the error result answering the call says what was wrong.
                    "arguments": call.input.json_or_empty().to_string(),
                }));
            }
            MessageContent::Image { .. }
            | MessageContent::ToolResult { .. }
            | MessageContent::Thinking { .. }
            | MessageContent::RedactedThinking { .. }
            | MessageContent::ThoughtSignature { .. }
            | MessageContent::ProviderItem { .. } => {}
        }
    }
    flush_text(out, &mut text);
}

fn flush_text(out: &mut Vec<Value>, text: &mut String) {
    if text.is_empty() {
        return;
    }
    let text = std::mem::take(text);
    out.push(json!({
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }));
}

mod events;
#[cfg(test)]
mod tests;
mod wire;
