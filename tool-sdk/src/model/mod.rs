//! Models behind one trait: a request of messages and tool specs in, a stream of events out.
//!
//! Clients: [`anthropic::AnthropicModel`] (Messages API, SSE), [`openai::OpenAiModel`] (Chat
//! Completions, SSE; any compatible server through `base_url`) and [`ScriptedModel`], which
//! plays back turns for tests and offline demos.

use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ContentBlock;

pub mod anthropic;
pub mod openai;
mod retry;
mod scripted;

pub use retry::RetryPolicy;
pub use scripted::{ScriptedModel, ScriptedTurn};

/// A boxed stream of model events.
pub type ModelStream<'a> = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send + 'a>>;

/// A language model the agent can talk to.
///
/// One call of [`stream`](Model::stream) is one assistant turn. The stream yields deltas for
/// live display and ends with exactly one [`ModelEvent::Completed`] carrying the whole turn;
/// or it ends with an error.
pub trait Model: Send + Sync + 'static {
    /// The model's id, such as `claude-sonnet-4-5` or `gpt-4.1`.
    fn model_id(&self) -> &str;

    /// Runs one turn.
    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a>;
}

/// What the model is asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far; the last message is the user's (or tool results).
    pub messages: Vec<Message>,
    /// The tools the model may call, with canonical schemas (each client lowers them).
    pub tools: Vec<ToolSpec>,
    /// The most tokens the model may produce in this turn.
    pub max_tokens: u32,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
}

/// A tool as offered to the model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolSpec {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its canonical input schema.
    pub input_schema: Value,
}

/// Who said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user, or tool results sent back on their behalf.
    User,
    /// The model.
    Assistant,
}

/// One message of the conversation, provider-neutral.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<MessageContent>,
}

impl Message {
    /// A user message of plain text.
    pub fn user(text: impl Into<String>) -> Self {
        Message {
            role: Role::User,
            content: vec![MessageContent::Text { text: text.into() }],
        }
    }

    /// An assistant message of plain text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![MessageContent::Text { text: text.into() }],
        }
    }

    /// The text blocks joined.
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| match block {
                MessageContent::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("")
    }

    /// The tool calls in this message.
    pub fn tool_uses(&self) -> impl Iterator<Item = &ToolUse> {
        self.content.iter().filter_map(|block| match block {
            MessageContent::ToolUse(tool_use) => Some(tool_use),
            _ => None,
        })
    }
}

/// One block of a message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum MessageContent {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (user messages).
    Image {
        /// Its MIME type.
        media_type: String,
        /// Base64 of its bytes.
        data: String,
    },
    /// A tool call by the model.
    ToolUse(ToolUse),
    /// The answer to a tool call.
    ToolResult {
        /// The call it answers.
        tool_use_id: String,
        /// The result.
        content: Vec<ContentBlock>,
        /// Whether it reports a failure.
        is_error: bool,
    },
    /// The model's visible reasoning, kept verbatim so it can be sent back.
    Thinking {
        /// The reasoning.
        thinking: String,
        /// The provider's signature over it.
        signature: String,
    },
    /// Reasoning the provider encrypted; sent back as it came.
    RedactedThinking {
        /// The opaque data.
        data: String,
    },
}

/// A tool call in an assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolUse {
    /// The call's id, echoed by its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments; `{}` when the model's JSON did not parse (see `malformed`).
    pub input: Value,
    /// The raw argument text when it was not a JSON object; the agent answers such a call
    /// with an error instead of running the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub malformed: Option<String>,
}

impl ToolUse {
    /// A call from the model's raw argument text: empty means `{}`, anything that is not a
    /// JSON object is kept as `malformed`.
    pub fn from_raw(id: impl Into<String>, name: impl Into<String>, raw: &str) -> Self {
        let (input, malformed) = if raw.trim().is_empty() {
            (Value::Object(Default::default()), None)
        } else {
            match serde_json::from_str::<Value>(raw) {
                Ok(value @ Value::Object(_)) => (value, None),
                _ => (Value::Object(Default::default()), Some(raw.to_owned())),
            }
        };
        ToolUse {
            id: id.into(),
            name: name.into(),
            input,
            malformed,
        }
    }
}

/// What a turn's stream yields.
#[derive(Clone, Debug, PartialEq)]
pub enum ModelEvent {
    /// Text as it arrives.
    TextDelta(String),
    /// Reasoning as it arrives.
    ThinkingDelta(String),
    /// A tool call has started streaming.
    ToolUseStarted {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// The turn, complete. Always the last event of a successful stream.
    Completed(ModelResponse),
}

/// A whole assistant turn.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelResponse {
    /// The blocks, in order.
    pub content: Vec<MessageContent>,
    /// Why the model stopped.
    pub stop_reason: StopReason,
    /// Tokens used by this turn.
    pub usage: Usage,
}

/// Why a turn ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished.
    #[default]
    EndTurn,
    /// The model wants tool results.
    ToolUse,
    /// `max_tokens` was reached.
    MaxTokens,
    /// A stop sequence was produced.
    StopSequence,
    /// The model refused.
    Refusal,
    /// Anything else the provider said.
    Other(String),
}

/// Tokens used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_creation_input_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
    }
}

/// Why a model call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// HTTP 429: too many requests.
    #[error("rate limited by the provider{}: {message}", retry_hint(*.retry_after))]
    RateLimited {
        /// What the provider said.
        message: String,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// The provider is overloaded (HTTP 529 or an `overloaded_error` event).
    #[error("the provider is overloaded: {message}")]
    Overloaded {
        /// What the provider said.
        message: String,
        /// How long the provider asked to wait.
        retry_after: Option<Duration>,
    },
    /// A 5xx from the provider.
    #[error("the provider failed with HTTP {status}: {message}")]
    Server {
        /// The HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
    },
    /// Any other API error (bad request, authentication, not found...).
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    Api {
        /// The HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
    },
    /// The connection failed.
    #[error("could not reach the provider: {0}")]
    Transport(String),
    /// The stream broke off or carried something unreadable.
    #[error("the response stream failed: {0}")]
    Stream(String),
    /// No API key was configured.
    #[error("no API key: {0}")]
    MissingApiKey(String),
}

fn retry_hint(retry_after: Option<Duration>) -> String {
    retry_after
        .map(|after| format!(" (retry after {}s)", after.as_secs_f64()))
        .unwrap_or_default()
}

impl ModelError {
    /// The error of a non-2xx HTTP response: 429 rate limited, 529 overloaded, other 5xx
    /// server errors, anything else an API error.
    pub fn from_status(status: u16, message: String, retry_after: Option<Duration>) -> Self {
        match status {
            429 => ModelError::RateLimited {
                message,
                retry_after,
            },
            529 => ModelError::Overloaded {
                message,
                retry_after,
            },
            500..=599 => ModelError::Server { status, message },
            _ => ModelError::Api { status, message },
        }
    }

    /// Whether trying again later may succeed: 429, 5xx, overloaded, transport failures.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Overloaded { .. }
                | ModelError::Server { .. }
                | ModelError::Transport(_)
        )
    }

    /// How long the provider asked to wait, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ModelError::RateLimited { retry_after, .. }
            | ModelError::Overloaded { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        })
    }
}
