//! Gemini's errors: `{"error": {"code", "message", "status", "details"}}` (Google's
//! `google.rpc.Status`), in a non-2xx answer or in place of a streamed chunk.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use crate::ModelError;
use crate::http::{error_message, lenient, lenient_list};

/// Google's error object.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(super) struct Status {
    #[serde(deserialize_with = "lenient")]
    code: Option<u16>,
    #[serde(deserialize_with = "lenient")]
    message: Option<String>,
    /// `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `INVALID_ARGUMENT`...
    #[serde(deserialize_with = "lenient")]
    status: Option<String>,
    #[serde(deserialize_with = "lenient_list")]
    details: Vec<Detail>,
}

/// One `details[]` entry; only `RetryInfo`'s `retryDelay` is read.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Detail {
    #[serde(rename = "@type", deserialize_with = "lenient")]
    kind: Option<String>,
    #[serde(rename = "retryDelay", deserialize_with = "lenient")]
    retry_delay: Option<String>,
}

#[derive(Deserialize)]
struct Body {
    error: Status,
}

/// The error of a non-2xx answer: 429 rate limited (waiting what `RetryInfo.retryDelay`
/// asks, unless a `retry-after` header said), 503 overloaded, a 400 about the input token
/// count too long a prompt, anything else as [`ModelError::from_status`] sorts it. The
/// message names Gemini and carries its status and its own words.
pub(super) fn read_error(status: u16, retry_after: Option<Duration>, body: &str) -> ModelError {
    match serde_json::from_str::<Body>(body) {
        Ok(Body { error }) => status_error(Some(status), retry_after, error),
        Err(_) => {
            let said = error_message(body).unwrap_or_else(|| "an empty error body".into());
            classify(status, None, format!("Gemini: {said}"), retry_after)
        }
    }
}

/// The error of a `google.rpc.Status`; `http_status` when it came with one (else its `code`).
pub(super) fn status_error(
    http_status: Option<u16>,
    retry_after: Option<Duration>,
    error: Status,
) -> ModelError {
    let status = http_status
        .or(error.code)
        .filter(|code| (400..600).contains(code))
        .unwrap_or(500);
    let retry_after = retry_after.or_else(|| {
        error
            .details
            .iter()
            .filter(|detail| {
                detail
                    .kind
                    .as_deref()
                    .is_some_and(|kind| kind.ends_with("google.rpc.RetryInfo"))
            })
            .find_map(|detail| parse_delay(detail.retry_delay.as_deref()?))
    });
    let what = error.message.filter(|m| !m.is_empty());
    let message = match (&error.status, what) {
        (Some(code), Some(what)) => format!("Gemini {code}: {what}"),
        (Some(code), None) => format!("Gemini {code}"),
        (None, Some(what)) => format!("Gemini: {what}"),
        (None, None) => format!("Gemini: HTTP {status}"),
    };
    classify(status, error.status.as_deref(), message, retry_after)
}

fn classify(
    status: u16,
    code: Option<&str>,
    message: String,
    retry_after: Option<Duration>,
) -> ModelError {
    let lower = message.to_ascii_lowercase();
    if status == 400
        && (lower.contains("input token count")
            || lower.contains("exceeds the maximum number of tokens"))
    {
        return ModelError::PromptTooLong { status, message };
    }
    if status == 503 || code == Some("UNAVAILABLE") || lower.contains("overloaded") {
        return ModelError::Overloaded {
            message,
            retry_after,
        };
    }
    if code == Some("RESOURCE_EXHAUSTED") {
        return ModelError::RateLimited {
            message,
            retry_after,
        };
    }
    ModelError::from_status(status, message, retry_after)
}

/// A `google.protobuf.Duration` in JSON: seconds with an `s`, such as `30s` or `1.5s`.
fn parse_delay(text: &str) -> Option<Duration> {
    let seconds: f64 = text.trim().strip_suffix('s')?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// The error object of a streamed chunk, when it is one.
pub(super) fn chunk_error(value: &Value) -> Option<ModelError> {
    let error = value.get("error")?;
    let status = Status::deserialize(error).unwrap_or_default();
    Some(status_error(None, None, status))
}
