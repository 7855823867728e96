//! The Responses stream's events and objects as they come over the wire, and the errors OpenAI
//! sends in their place.

use serde::Deserialize;
use serde_json::Value;

use crate::http::{
    ErrorBody, ErrorCode, MAX_ERROR_BODY, WireError, lenient, lenient_list, truncate,
};
use crate::{ModelError, Usage};

// Every field optional and forgiving: one odd field must not cost the rest of an event.

/// One streamed event (its `type` says which), or an error in its place.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Event {
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(super) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) output_index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(super) item_id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) summary_index: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(super) delta: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) arguments: Option<String>,
    /// A whole output item, kept as it came: reasoning goes back verbatim.
    #[serde(deserialize_with = "lenient")]
    pub(super) item: Option<Value>,
    #[serde(deserialize_with = "lenient")]
    pub(super) response: Option<WireResponse>,
    /// An `error` event's code.
    #[serde(deserialize_with = "lenient")]
    pub(super) code: Option<ErrorCode>,
    /// `error`, `message`, `detail`: an `error` event's message, or an error in place of an
    /// event.
    #[serde(flatten)]
    pub(super) error: ErrorBody,
}

/// The response object of `response.completed`, `.incomplete`, `.failed` (or a whole JSON
/// answer).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireResponse {
    #[serde(deserialize_with = "lenient_list")]
    pub(super) output: Vec<Value>,
    #[serde(deserialize_with = "lenient")]
    pub(super) usage: Option<WireUsage>,
    #[serde(deserialize_with = "lenient")]
    pub(super) incomplete_details: Option<IncompleteDetails>,
    #[serde(deserialize_with = "lenient")]
    pub(super) error: Option<FailedError>,
    #[serde(deserialize_with = "lenient")]
    pub(super) status: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct IncompleteDetails {
    #[serde(deserialize_with = "lenient")]
    pub(super) reason: Option<String>,
}

/// `response.error` of a failed response.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct FailedError {
    #[serde(deserialize_with = "lenient")]
    pub(super) code: Option<ErrorCode>,
    #[serde(deserialize_with = "lenient")]
    pub(super) message: Option<String>,
}

/// An output item's fields this reader needs (the item itself is kept as JSON).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireItem {
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(super) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) call_id: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) name: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) arguments: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) encrypted_content: Option<String>,
    /// A message's parts.
    #[serde(deserialize_with = "lenient_list")]
    pub(super) content: Vec<WirePart>,
    /// A reasoning item's summary parts.
    #[serde(deserialize_with = "lenient_list")]
    pub(super) summary: Vec<WirePart>,
}

/// A part of a message (`output_text`, `refusal`) or of a reasoning summary (`summary_text`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WirePart {
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(super) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) text: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(super) refusal: Option<String>,
}

/// Usage as the Responses API reports it: `input_tokens` counts cached tokens too, and
/// `output_tokens` reasoning tokens.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct WireUsage {
    #[serde(deserialize_with = "lenient")]
    pub(super) input_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(super) input_tokens_details: Option<TokenDetails>,
    #[serde(deserialize_with = "lenient")]
    pub(super) output_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(super) output_tokens_details: Option<TokenDetails>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct TokenDetails {
    #[serde(deserialize_with = "lenient")]
    pub(super) cached_tokens: Option<u64>,
    #[serde(deserialize_with = "lenient")]
    pub(super) reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for Usage {
    /// Cached tokens split out of `input_tokens`, as for the Chat client, so they are not
    /// counted twice. Reasoning tokens stay in `output_tokens`: they are billed as output.
    fn from(usage: WireUsage) -> Usage {
        let input = usage.input_tokens.unwrap_or(0);
        let cached = usage
            .input_tokens_details
            .and_then(|details| details.cached_tokens)
            .unwrap_or(0)
            .min(input);
        if let Some(reasoning) = usage
            .output_tokens_details
            .and_then(|details| details.reasoning_tokens)
        {
            tracing::debug!(reasoning_tokens = reasoning, "openai responses usage");
        }
        Usage {
            input_tokens: input - cached,
            output_tokens: usage.output_tokens.unwrap_or(0),
            cache_read_input_tokens: cached,
            cache_creation_input_tokens: 0,
        }
    }
}

/// A `response.failed` event's error.
pub(super) fn failed(error: Option<FailedError>) -> ModelError {
    let error = error.unwrap_or_default();
    let message = error
        .message
        .filter(|message| !message.is_empty())
        .unwrap_or_else(|| "no message".to_owned());
    classify(error.code.as_ref(), None, "response failed", message)
}

/// An `error` event, or an error object in place of an event.
pub(super) fn error_event(event: &Event, data: &str) -> ModelError {
    let (code, kind) = match &event.error.error {
        Some(WireError::Object(object)) => (object.code.as_ref(), object.kind.as_deref()),
        _ => (event.code.as_ref(), None),
    };
    let message = event
        .error
        .message()
        .unwrap_or_else(|| truncate(data, MAX_ERROR_BODY));
    classify(code, kind, "stream error", message)
}

/// The [`ModelError`] of an error OpenAI sent after the HTTP status was already 200, by its
/// code (else its type); its message names OpenAI and the code.
fn classify(
    code: Option<&ErrorCode>,
    kind: Option<&str>,
    what: &str,
    message: String,
) -> ModelError {
    let text = match code {
        Some(ErrorCode::Text(code)) => Some(code.as_str()),
        Some(ErrorCode::Number(_)) => None,
        None => kind,
    };
    let message = match (code, text) {
        (_, Some(text)) => format!("OpenAI {what} ({text}): {message}"),
        (Some(ErrorCode::Number(number)), _) => format!("OpenAI {what} ({number}): {message}"),
        _ => format!("OpenAI {what}: {message}"),
    };
    if let Some(status) = code.and_then(ErrorCode::status) {
        return ModelError::from_status(status, message, None);
    }
    match text.unwrap_or("") {
        "context_length_exceeded" => ModelError::PromptTooLong {
            status: 400,
            message,
        },
        code if code.contains("rate_limit") => ModelError::RateLimited {
            message,
            retry_after: None,
        },
        code if code.contains("overloaded") => ModelError::Overloaded {
            message,
            retry_after: None,
        },
        code if code.is_empty() || code.contains("server") || code.contains("internal") => {
            ModelError::Server {
                status: 500,
                message,
            }
        }
        _ => ModelError::Api {
            status: 400,
            message,
        },
    }
}
