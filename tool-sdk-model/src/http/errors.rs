//! The shapes of the errors providers answer with, read into [`ModelError`]s.

use std::time::Duration;

use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

use super::{MAX_ERROR_BODY, truncate};
use crate::ModelError;

/// The error of a non-2xx response: 429 rate limited, 529 overloaded, other 5xx server
/// errors, anything else an API error; the message is the provider's when the body has one.
pub(crate) fn http_error(status: u16, retry_after: Option<Duration>, body: &str) -> ModelError {
    let message = error_message(body).unwrap_or_else(|| {
        let reason = reqwest::StatusCode::from_u16(status)
            .ok()
            .and_then(|status| status.canonical_reason())
            .map(|reason| format!(" {reason}"))
            .unwrap_or_default();
        format!("HTTP {status}{reason} with an empty body")
    });
    if prompt_too_long(status, body, &message) {
        return ModelError::PromptTooLong { status, message };
    }
    ModelError::from_status(status, message, retry_after)
}

/// Whether a 4xx says the prompt does not fit the context window: Anthropic's
/// `invalid_request_error` "prompt is too long: N tokens > M maximum" or, when the prompt fits
/// but not with `max_tokens` on top, "input length and `max_tokens` exceed context limit";
/// OpenAI's `context_length_exceeded` code, its "exceeds the context window" wording, or the
/// "maximum context length" wording compatible servers copy from it. A shorter prompt is the
/// cure for each.
fn prompt_too_long(status: u16, body: &str, message: &str) -> bool {
    if !(400..500).contains(&status) {
        return false;
    }
    let code = serde_json::from_str::<ErrorBody>(body)
        .ok()
        .and_then(|parsed| match parsed.error {
            Some(WireError::Object(ErrorObject {
                code: Some(ErrorCode::Text(code)),
                ..
            })) => Some(code),
            _ => None,
        });
    let message = message.to_ascii_lowercase();
    code.as_deref() == Some("context_length_exceeded")
        || message.contains("prompt is too long")
        || message.contains("maximum context length")
        || message.contains("exceed context limit")
        || message.contains("exceeds the context window")
}

/// The provider's message in an error body: in JSON, `error.message`, `error` as a string,
/// `message` or `detail`; else the body itself, shortened. `None` for an empty body.
pub(crate) fn error_message(body: &str) -> Option<String> {
    if let Ok(parsed) = serde_json::from_str::<ErrorBody>(body)
        && let Some(message) = parsed.message()
    {
        return Some(message);
    }
    let body = body.trim();
    (!body.is_empty()).then(|| truncate(body, MAX_ERROR_BODY))
}

/// A JSON error body, or a streamed chunk that may be one. Every field is optional and
/// forgiving: a server's odd error must still surface as an error.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ErrorBody {
    /// Any non-null `error`, whatever its shape.
    pub(crate) error: Option<WireError>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) message: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) detail: Option<String>,
}

impl ErrorBody {
    /// The first non-empty message of `error`, `message`, `detail`.
    pub(crate) fn message(&self) -> Option<String> {
        let error = match &self.error {
            Some(WireError::Text(text)) => Some(text),
            Some(WireError::Object(object)) => object.message.as_ref(),
            _ => None,
        };
        [error, self.message.as_ref(), self.detail.as_ref()]
            .into_iter()
            .flatten()
            .find(|message| !message.is_empty())
            .cloned()
    }
}

/// An `error` field: a message, an object, or anything else a server sends.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum WireError {
    Text(String),
    Object(ErrorObject),
    Other(serde::de::IgnoredAny),
}

/// An error object: `{"type", "message", "code"}`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ErrorObject {
    #[serde(rename = "type", deserialize_with = "lenient")]
    pub(crate) kind: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) message: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub(crate) code: Option<ErrorCode>,
}

/// An error `code`: a number, or text that may hold one.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ErrorCode {
    Number(u64),
    Text(String),
}

impl ErrorCode {
    /// The code as an HTTP error status, when it is one.
    pub(crate) fn status(&self) -> Option<u16> {
        let code = match self {
            ErrorCode::Number(code) => u16::try_from(*code).ok(),
            ErrorCode::Text(code) => code.trim().parse().ok(),
        };
        code.filter(|code| (400..600).contains(code))
    }
}

/// A field that is `None` when absent, null, or not of the expected shape: compatible servers
/// send odd things, and one odd field must not cost the rest of the event.
pub(crate) fn lenient<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    Ok(T::deserialize(value).ok())
}

/// A list whose entries of an unexpected shape are left out.
pub(crate) fn lenient_list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    Ok(match Value::deserialize(deserializer)? {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|item| T::deserialize(item).ok())
            .collect(),
        _ => Vec::new(),
    })
}
