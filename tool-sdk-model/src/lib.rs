//! The model clients of [tool-sdk](https://docs.rs/tool-sdk): models behind one trait, a
//! request of messages and tool specs in, a stream of events out. Apps use them as
//! `tool_sdk::model`, which re-exports this crate and adds `TestModel`.
//!
//! Clients: [`anthropic::AnthropicModel`] (Messages API, SSE), [`openai::OpenAiModel`] (Chat
//! Completions, SSE; any compatible server through `base_url`), [`gemini::GeminiModel`]
//! (Gemini API `streamGenerateContent`, SSE),
//! [`openai_responses::OpenAiResponsesModel`] (OpenAI's Responses API, SSE, reasoning carried
//! across turns), [`FallbackModel`], which tries the next model when one fails, and
//! [`ScriptedModel`], which plays back turns for tests and offline demos.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use tool_sdk_core::ContentBlock;

pub mod anthropic;
pub mod cassette;
mod catalog;
mod error;
mod fallback;
pub mod gemini;
mod history;
mod http;
pub mod openai;
pub mod openai_responses;
mod retry;
#[doc(hidden)]
pub mod schema;
mod scripted;
mod thinking;
mod tool_use;
mod usage;

pub use catalog::{Catalog, ModelInfo, Price};
pub use error::ModelError;
pub use fallback::FallbackModel;
pub use history::{History, Iter as HistoryIter};
pub use retry::RetryPolicy;
pub use scripted::{ScriptedModel, ScriptedTurn};

/// What tool-sdk's own models use, not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::scripted::play;
}
pub use thinking::{Effort, Thinking};
pub use tool_use::{ToolInput, ToolUse};
pub use usage::Usage;

/// A boxed stream of model events.
pub type ModelStream<'a> = Pin<Box<dyn Stream<Item = Result<ModelEvent, ModelError>> + Send + 'a>>;

/// A language model the agent can talk to.
///
/// One call of [`stream`](Model::stream) is one assistant turn. The stream yields deltas for
/// live display and ends with exactly one [`ModelEvent::Completed`] carrying the whole turn;
/// or it ends with an error. A stream that sends [`ModelEvent::ToolUseCompleted`] as each tool
/// call arrives lets the agent start read-only calls before the turn ends.
pub trait Model: Send + Sync + 'static {
    /// The model's id, such as `claude-sonnet-4-5` or `gpt-4.1`.
    fn model_id(&self) -> &str;

    /// Who serves the model, as OpenTelemetry's GenAI conventions name it in
    /// `gen_ai.provider.name` (`anthropic`, `openai`): the agent's spans carry it. The
    /// default, `_OTHER`, is the conventions' word for a provider they do not list.
    fn provider_name(&self) -> &str {
        "_OTHER"
    }

    /// Runs one turn.
    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a>;
}

/// A shared model is a model: an `Arc<dyn Model>` goes wherever a model does.
impl<M: Model + ?Sized> Model for Arc<M> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }

    fn provider_name(&self) -> &str {
        (**self).provider_name()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        (**self).stream(request)
    }
}

/// What the model is asked.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ModelRequest {
    /// The system prompt.
    pub system: Option<String>,
    /// The conversation so far; the last message is the user's (or tool results).
    ///
    /// A [`History`]: the agent hands each request a snapshot of its conversation that shares
    /// the messages instead of copying them (build one with `History::from(vec![...])` or
    /// `.into()`).
    pub messages: History,
    /// The tools the model may call, with canonical schemas (each client lowers them).
    ///
    /// Shared like `messages`: the agent hands every request the same list (build one with
    /// `vec![...].into()` or by collecting).
    pub tools: Arc<[ToolSpec]>,
    /// The most tokens the model may produce in this turn.
    pub max_tokens: u32,
    /// Sampling temperature, when set.
    pub temperature: Option<f32>,
    /// The shape the final answer must have, when the caller wants a typed answer
    /// (`agent::Agent::prompt_as`). Each client asks for it in its
    /// provider's own way: Anthropic gets a [`OutputFormat::TOOL_NAME`] tool it must call
    /// (`tool_choice`; offered without forcing while [`thinking`](Self::thinking) is on, since
    /// the API refuses forced tool use with thinking), OpenAI a strict `response_format` JSON
    /// schema, Gemini a `responseSchema` (or, beside tools, the same tool as Anthropic).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputFormat>,
    /// Whether the model thinks first, and how much (Anthropic's `thinking`; other clients
    /// ignore it).
    #[serde(skip_serializing_if = "Thinking::is_off")]
    pub thinking: Thinking,
    /// How eagerly the model spends tokens, when set (Anthropic's `output_config.effort`,
    /// OpenAI's `reasoning_effort`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<Effort>,
    /// Whether, and from what length, the provider should cache the prompt's prefix, so each
    /// turn of a long run pays full price only for what is new. The agent sets it unless
    /// `agent::ModelSettings::with_prompt_caching`
    /// turned it off. Anthropic gets `cache_control` breakpoints; OpenAI and Gemini cache on
    /// their own and ignore it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache: Option<PromptCache>,
}

/// Prompt caching asked of the provider: see [`ModelRequest::cache`].
///
/// A prefix shorter than [`min_prefix_tokens`](Self::min_prefix_tokens) gets no breakpoint:
/// Anthropic ignores one below the model's minimum
/// ([`ModelInfo::min_cacheable_tokens`]) and each breakpoint spends one of its four.
///
/// ```
/// use tool_sdk::model::PromptCache;
///
/// let cache = PromptCache::new(1024);
/// assert_eq!(cache.min_prefix_tokens, 1024);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PromptCache {
    /// The fewest prompt tokens (estimated, about 4 characters each) worth a breakpoint.
    pub min_prefix_tokens: u64,
}

impl PromptCache {
    /// The minimum when the model is not in the [`Catalog`]: Anthropic's for most models.
    pub const DEFAULT_MIN_PREFIX_TOKENS: u64 = 1024;

    /// Caching of prefixes at least `min_prefix_tokens` long.
    pub fn new(min_prefix_tokens: u64) -> Self {
        PromptCache { min_prefix_tokens }
    }

    /// Caching as `model_id` allows it, by the default [`Catalog`]'s minimum (else
    /// [`DEFAULT_MIN_PREFIX_TOKENS`](Self::DEFAULT_MIN_PREFIX_TOKENS)).
    pub fn for_model(model_id: &str) -> Self {
        Self::for_info(Catalog::default().lookup(model_id))
    }

    /// Caching as a model with this catalog entry allows it (an unknown model: `None`, the
    /// [`DEFAULT_MIN_PREFIX_TOKENS`](Self::DEFAULT_MIN_PREFIX_TOKENS)).
    pub fn for_info(info: Option<&ModelInfo>) -> Self {
        PromptCache::new(info.map_or(Self::DEFAULT_MIN_PREFIX_TOKENS, |info| {
            info.min_cacheable_tokens
        }))
    }
}

/// The shape of a typed final answer: a JSON Schema whose root is an object.
///
/// The answer comes back as a call of the [`TOOL_NAME`](Self::TOOL_NAME) tool (Anthropic, and
/// any model that answers with that call) or as the turn's text, which is JSON (OpenAI's
/// `response_format`); the agent validates either against [`schema`](Self::schema).
///
/// ```
/// use serde_json::json;
/// use tool_sdk::model::OutputFormat;
///
/// let format = OutputFormat::new("Forecast", json!({
///     "type": "object",
///     "properties": {"city": {"type": "string"}},
///     "required": ["city"],
/// }));
/// assert_eq!(format.name, "Forecast");
/// assert_eq!(OutputFormat::TOOL_NAME, "final_answer");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OutputFormat {
    /// A name for the shape, `^[a-zA-Z0-9_-]{1,64}$` (OpenAI's `json_schema.name`).
    pub name: String,
    /// What the answer is, when known (the type's doc comment).
    pub description: Option<String>,
    /// The canonical JSON Schema of the answer; its root is an object.
    pub schema: Value,
}

impl OutputFormat {
    /// The name of the tool a model calls to give its final answer, where the answer is asked
    /// for as a tool call.
    pub const TOOL_NAME: &'static str = "final_answer";

    /// A format named `name` (characters outside `[a-zA-Z0-9_-]` become `_`, at most 64 are
    /// kept) with this schema.
    pub fn new(name: &str, schema: Value) -> Self {
        let mut name: String = name
            .chars()
            .map(|c| match c {
                'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
                _ => '_',
            })
            .take(64)
            .collect();
        if name.is_empty() {
            name = "output".into();
        }
        let description = schema
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned);
        OutputFormat {
            name,
            description,
            schema,
        }
    }

    /// What the [`TOOL_NAME`](Self::TOOL_NAME) tool says to the model.
    pub fn tool_description(&self) -> String {
        let mut text = "Gives your final answer. Call it once your work is done, alone, with                         the whole answer as its input; it must match the input schema."
            .to_owned();
        if let Some(description) = &self.description {
            text.push_str(" The answer: ");
            text.push_str(description);
        }
        text
    }
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
    /// An opaque token a provider attached to one part of its turn, to be sent back on that
    /// same part (Gemini's `thoughtSignature`, which carries the model's reasoning across tool
    /// calls). It belongs to the block right after it: a text or a tool call; with no such
    /// block after it, it stood on a part of its own (an empty text). Only the client of
    /// `provider` reads it; every other client leaves it out, so a conversation that moves to
    /// another provider (a fallback model) never sends it there.
    ThoughtSignature {
        /// Who issued it, as [`Model::provider_name`] says (`gcp.gemini`).
        provider: String,
        /// The token, as it came.
        signature: String,
    },
    /// An item of a provider's own turn kept whole, to be sent back as it came on the next
    /// request (OpenAI Responses' `reasoning` items with their `encrypted_content`, which carry
    /// the model's reasoning across tool calls when nothing is stored at OpenAI). It sits where
    /// it came in the turn, before the blocks it preceded. Only the client of `provider` reads
    /// it; every other client leaves it out, so a conversation that moves to another provider
    /// (a fallback model) never sends it there.
    ProviderItem {
        /// Who issued it, as [`Model::provider_name`] says (`openai`).
        provider: String,
        /// The item, verbatim.
        item: Value,
    },
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
    /// A tool call has wholly arrived, while the rest of the turn may still be streaming: the
    /// agent starts read-only calls on it. The same call comes again, identical, in
    /// [`Completed`](ModelEvent::Completed). These events name the turn's first calls in
    /// order, with no gap: a call is sent only once every call before it was. Optional: a
    /// model that never sends it only makes the agent wait for the whole turn.
    ToolUseCompleted(ToolUse),
    /// The turn, complete. Always the last event of a successful stream.
    Completed(ModelResponse),
    /// A [`FallbackModel`]'s model `from` failed before it streamed anything, its retries
    /// spent: the request goes to `to`, whose events follow.
    ModelFallback {
        /// The id of the model that failed.
        from: String,
        /// The id of the model the request goes to now.
        to: String,
        /// Why `from` failed (its [`ModelError`], displayed).
        reason: String,
    },
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
    /// The id of the model that produced the turn, when the model that was asked is made of
    /// several (a [`FallbackModel`] says which answered); `None` from a single model.
    pub model: Option<String>,
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

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        })
    }
}
