//! Gemini API client: `POST /v1beta/models/{id}:streamGenerateContent?alt=sse`, read as SSE.
//!
//! ```no_run
//! use tool_sdk::model::gemini::GeminiModel;
//!
//! // GEMINI_API_KEY (else GOOGLE_API_KEY) from the environment:
//! let flash = GeminiModel::from_env("gemini-2.5-flash")?;
//! // A key of your own, through a proxy:
//! let pro = GeminiModel::new("gemini-2.5-pro", "test-key").with_base_url("http://localhost:8080/v1beta");
//! # Ok::<(), tool_sdk::model::ModelError>(())
//! ```
//!
//! What differs from the other clients, and how it is bridged:
//!
//! - **Call ids.** Gemini names no call: each call it makes gets an id made up here (the
//!   turn's number, the call's place in it, and random letters, so ids stay unique in a
//!   conversation that was compacted or forked), and results are answered by the call's name,
//!   which is looked up by that id in the conversation.
//! - **Thought signatures.** Gemini 2.5 and 3 put a `thoughtSignature` on parts of their turn
//!   (the first function call of a step, a text part, an empty text part at the end); it must
//!   come back on the same part. Each one is kept as a [`MessageContent::ThoughtSignature`]
//!   right before the block of its part, which survives the session store; a signed text part
//!   is never merged with the text around it. The other clients leave these blocks out.
//! - **Thinking.** [`ModelRequest::thinking`] sets `thinkingConfig`: a budget's
//!   `thinkingBudget`, or `-1` (the model decides) for adaptive, with `includeThoughts` so the
//!   summaries come; off sends nothing and the model's default applies. [`Effort`](super::Effort)
//!   is not sent (Gemini 3's `thinkingLevel` is refused by 2.5).
//! - **Thought summaries** (`thought: true` parts, when the model is asked for them) stream as
//!   [`ModelEvent::ThinkingDelta`](super::ModelEvent::ThinkingDelta) and are not kept: the
//!   signature carries the model's reasoning, the summary is for reading.
//! - **Typed output.** Without tools, `responseMimeType: application/json` and the lowered
//!   `responseSchema`. With tools, the answer is a [`OutputFormat::TOOL_NAME`] function the
//!   model must call (`functionCallingConfig.mode: ANY`), as for Anthropic: Gemini 2.5 cannot
//!   combine JSON mode with function calling (only Gemini 3 documents the combination).

use std::collections::HashMap;
use std::fmt;

use serde_json::{Map, Value, json};

use self::stream::Turn;
use super::http::{Auth, HttpClient, f32_json};
use super::{
    History, Message, MessageContent, Model, ModelError, ModelRequest, ModelStream, OutputFormat,
    Role, Thinking,
};
use crate::schema::{Provider, lower, tool_definition};
use tool_sdk_core::ContentBlock;

/// The API's address when none is configured.
pub const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// The provider name of this client ([`Model::provider_name`]), as OpenTelemetry's GenAI
/// conventions name the Gemini API; also the `provider` of the
/// [`MessageContent::ThoughtSignature`] blocks it keeps.
pub const PROVIDER_NAME: &str = "gcp.gemini";

const API_KEY_VARS: [&str; 2] = ["GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// A Gemini model behind the Gemini API (Google AI Studio keys).
///
/// Each [`stream`](Model::stream) call is one streamed `POST
/// {base_url}/models/{id}:streamGenerateContent?alt=sse`, the key in the `x-goog-api-key`
/// header (never in the URL, where logs and proxies would keep it). Failures before the
/// response starts (429, 5xx, connection errors) are retried with the
/// [`RetryPolicy`](super::RetryPolicy),
/// waiting what a 429's `RetryInfo.retryDelay` asks.
#[derive(Clone)]
pub struct GeminiModel {
    model_id: String,
    /// `/models/{id}:streamGenerateContent?alt=sse`, built once.
    path: String,
    http: HttpClient,
}

impl fmt::Debug for GeminiModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GeminiModel")
            .field("model_id", &self.model_id)
            .field("api_key", &"<redacted>")
            .field("base_url", &self.http.base_url)
            .field("retry", &self.http.retry)
            .finish_non_exhaustive()
    }
}

impl GeminiModel {
    /// A client of `model_id` (such as `gemini-2.5-flash`; a leading `models/` is dropped)
    /// using this API key, talking to [`DEFAULT_BASE_URL`] with the default [`RetryPolicy`](super::RetryPolicy).
    pub fn new(model_id: impl Into<String>, api_key: impl Into<String>) -> Self {
        let mut http = HttpClient::new("gemini", DEFAULT_BASE_URL, Auth::Header("x-goog-api-key"));
        http.api_key = Some(api_key.into());
        http.key_hint = "pass one to GeminiModel::new or set GEMINI_API_KEY";
        http.read_error = errors::read_error;
        let model_id: String = model_id.into();
        let model_id = model_id
            .strip_prefix("models/")
            .unwrap_or(&model_id)
            .to_owned();
        GeminiModel {
            path: format!(
                "/models/{}:streamGenerateContent?alt=sse",
                escape(&model_id)
            ),
            model_id,
            http,
        }
    }

    /// A client whose key comes from `GEMINI_API_KEY`, else `GOOGLE_API_KEY` (the two names
    /// Google's SDKs read).
    ///
    /// Fails with [`ModelError::MissingApiKey`] when neither is set to a key.
    pub fn from_env(model_id: impl Into<String>) -> Result<Self, ModelError> {
        let key = key_from(|name| std::env::var(name).ok())?;
        Ok(GeminiModel::new(model_id, key))
    }

    /// Talks to this address instead (a proxy or a test server), such as
    /// `http://localhost:8080/v1beta`; `/models/{id}:streamGenerateContent` is appended.
    pub fn with_base_url(mut self, base_url: impl Into<String>) -> Self {
        self.http.set_base_url(&base_url.into());
        self
    }

    super::http::http_builders!();

    /// The address requests go to, without `/models/...`.
    pub fn base_url(&self) -> &str {
        &self.http.base_url
    }

    /// The JSON body of a streamed request.
    fn request_body(&self, request: &ModelRequest) -> Value {
        let mut body = Map::new();
        if let Some(system) = request.system.as_deref().filter(|s| !s.is_empty()) {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system}]}),
            );
        }
        body.insert("contents".into(), contents(&request.messages).into());
        let mut declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| declaration(&tool.name, &tool.description, &tool.input_schema))
            .collect();
        let mut config = Map::new();
        if request.max_tokens > 0 {
            config.insert("maxOutputTokens".into(), request.max_tokens.into());
        }
        if let Some(temperature) = request.temperature.and_then(f32_json) {
            config.insert("temperature".into(), temperature);
        }
        // Gemini 2.5 and 3 think on their own; asking for thinking sets its budget (-1: the
        // model decides) and asks for the summaries, which stream as thinking.
        let budget = match request.thinking {
            Thinking::Off => None,
            Thinking::Budget { budget_tokens } => Some(i64::from(budget_tokens)),
            Thinking::Adaptive => Some(-1),
        };
        if let Some(budget) = budget {
            config.insert(
                "thinkingConfig".into(),
                json!({"thinkingBudget": budget, "includeThoughts": true}),
            );
        }
        match &request.output {
            // Gemini 2.5 cannot mix function calling with JSON mode: beside tools, the answer
            // is a call the model must make (any call each turn, the answer's among them).
            Some(output) if !declarations.is_empty() => {
                declarations.push(declaration(
                    OutputFormat::TOOL_NAME,
                    &output.tool_description(),
                    &output.schema,
                ));
                body.insert(
                    "toolConfig".into(),
                    json!({"functionCallingConfig": {"mode": "ANY"}}),
                );
            }
            Some(output) => {
                config.insert("responseMimeType".into(), "application/json".into());
                config.insert(
                    "responseSchema".into(),
                    lower(&output.schema, Provider::Gemini),
                );
            }
            // A function call in the history needs its declaration: an earlier typed answer's
            // call keeps its function declared.
            None if declarations.is_empty() && has_output_call(&request.messages) => {
                declarations.push(json!({
                    "name": OutputFormat::TOOL_NAME,
                    "description": "Gave a typed final answer earlier; do not call it now.",
                }));
            }
            None => {}
        }
        if !declarations.is_empty() {
            body.insert(
                "tools".into(),
                json!([{ "functionDeclarations": declarations }]),
            );
        }
        if !config.is_empty() {
            body.insert("generationConfig".into(), Value::Object(config));
        }
        Value::Object(body)
    }
}

impl Model for GeminiModel {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// `gcp.gemini`: the Gemini API, as OpenTelemetry's GenAI conventions name it (Vertex AI
    /// would be `gcp.vertex_ai`).
    fn provider_name(&self) -> &str {
        PROVIDER_NAME
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let body = self.request_body(request);
        let turn_number = request
            .messages
            .iter()
            .filter(|message| message.role == Role::Assistant)
            .count();
        self.http
            .stream_turn(&self.path, request, body, Turn::new(turn_number))
    }
}

/// The first of [`API_KEY_VARS`] `var` reads as a key, trimmed.
fn key_from(var: impl Fn(&str) -> Option<String>) -> Result<String, ModelError> {
    API_KEY_VARS
        .iter()
        .filter_map(|name| var(name))
        .map(|key| key.trim().to_owned())
        .find(|key| !key.is_empty())
        .ok_or_else(|| {
            ModelError::MissingApiKey(
                "set the GEMINI_API_KEY (or GOOGLE_API_KEY) environment variable to your Gemini \
                 API key"
                    .into(),
            )
        })
}

/// A model id as a path segment: anything outside the unreserved characters percent-encoded,
/// so an id cannot reach another path or the query.
fn escape(id: &str) -> String {
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        match byte {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// One entry of `functionDeclarations`, the schema lowered to Gemini's subset.
fn declaration(name: &str, description: &str, schema: &Value) -> Value {
    tool_definition(name, description, schema, Provider::Gemini, None, None)
}

/// Whether the conversation holds a call of the output tool.
fn has_output_call(messages: &History) -> bool {
    messages
        .iter()
        .flat_map(Message::tool_uses)
        .any(|call| call.name == OutputFormat::TOOL_NAME)
}

/// The API's `contents`: roles `user` and `model`, consecutive messages of one role merged,
/// function responses first in their user content, empty contents left out.
fn contents(messages: &History) -> Vec<Value> {
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(Message::tool_uses)
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let mut merged: Vec<(Role, Vec<Value>)> = Vec::new();
    for message in messages.iter() {
        let parts = match message.role {
            Role::User => user_parts(&message.content, &names),
            Role::Assistant => model_parts(&message.content),
        };
        if parts.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((role, content)) if *role == message.role => content.extend(parts),
            _ => merged.push((message.role, parts)),
        }
    }
    merged
        .into_iter()
        .map(|(role, mut parts)| {
            if role == Role::User {
                let (mut first, rest): (Vec<Value>, Vec<Value>) = parts
                    .into_iter()
                    .partition(|part| part.get("functionResponse").is_some());
                first.extend(rest);
                parts = first;
            }
            let role = match role {
                Role::User => "user",
                Role::Assistant => "model",
            };
            json!({"role": role, "parts": parts})
        })
        .collect()
}

/// A user message's parts: text, images as `inlineData`, tool results as `functionResponse`
/// parts named after the call they answer (`names`: each call's name by its id; Gemini
/// matches results by name, not id).
fn user_parts(content: &[MessageContent], names: &HashMap<&str, &str>) -> Vec<Value> {
    let mut parts = Vec::new();
    for block in content {
        match block {
            MessageContent::Text { text } if !text.is_empty() => {
                parts.push(json!({"text": text}));
            }
            MessageContent::Image { media_type, data } => {
                parts.push(json!({"inlineData": {"mimeType": media_type, "data": data}}));
            }
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text = result_text(content);
                match names.get(tool_use_id.as_str()) {
                    Some(name) => {
                        let key = if *is_error { "error" } else { "result" };
                        parts.push(json!({
                            "functionResponse": {"name": name, "response": {key: text}},
                        }));
                    }
                    // A result whose call is not in the conversation cannot be named: it
                    // still reaches the model, as text.
                    None => parts.push(json!({
                        "text": format!("Result of tool call {tool_use_id}: {text}"),
                    })),
                }
            }
            _ => {}
        }
    }
    parts
}

/// A tool result's text blocks joined; images noted as left out (a function response is JSON).
fn result_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|block| {
            block
                .readable()
                .unwrap_or(std::borrow::Cow::Borrowed("[image omitted]"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A model message's parts: text and `functionCall` parts, each Gemini signature back on the
/// part it came with (the block after it). Another provider's reasoning is left out.
fn model_parts(content: &[MessageContent]) -> Vec<Value> {
    let mut parts = Vec::new();
    let mut signature: Option<&str> = None;
    for block in content {
        let mut part = match block {
            MessageContent::ThoughtSignature {
                provider,
                signature: token,
            } if provider == PROVIDER_NAME => {
                if let Some(alone) = signature.replace(token) {
                    parts.push(json!({"text": "", "thoughtSignature": alone}));
                }
                continue;
            }
            MessageContent::Text { text } if !text.is_empty() || signature.is_some() => {
                json!({"text": text})
            }
            MessageContent::ToolUse(call) => json!({
                "functionCall": {"name": call.name, "args": call.input.json_or_empty()},
            }),
            _ => continue,
        };
        if let Some(token) = signature.take() {
            part["thoughtSignature"] = token.into();
        }
        parts.push(part);
    }
    if let Some(alone) = signature {
        parts.push(json!({"text": "", "thoughtSignature": alone}));
    }
    parts
}

mod errors;
mod stream;
#[cfg(test)]
mod tests;
