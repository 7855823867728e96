//! Why a model call failed.

use std::time::Duration;

use tool_sdk_core::error::ErrorSource;

/// Why a model call failed. A failed connection keeps its `reqwest::Error` as its
/// [`source`](std::error::Error::source).
#[derive(Clone, Debug, thiserror::Error)]
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
    /// The connection failed: it could not be made, or it broke while the answer streamed.
    #[error("the connection to the provider failed: {message}")]
    Transport {
        /// What failed, with the causes beneath it.
        message: String,
        /// The error beneath, such as a `reqwest::Error`.
        source: Option<ErrorSource>,
    },
    /// The stream broke off or carried something unreadable.
    #[error("the response stream failed: {message}")]
    Stream {
        /// What was wrong.
        message: String,
        /// The error beneath, such as the `serde_json::Error` of an unreadable event.
        source: Option<ErrorSource>,
    },
    /// No API key was configured.
    #[error("no API key: {0}")]
    MissingApiKey(String),
    /// The request holds more tokens than the model's context window (Anthropic's 400
    /// `prompt is too long`, or `input length and max_tokens exceed context limit` when it
    /// fits only without the answer; OpenAI's `context_length_exceeded`). Sending it again as
    /// it is fails the same way; an agent compacts the conversation once and retries (see
    /// `agent::ContextSettings::with_compaction`).
    #[error("the prompt is too long for the model's context window (HTTP {status}): {message}")]
    PromptTooLong {
        /// The HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
    },
    /// Every model of a [`FallbackModel`](super::FallbackModel) failed, each after its own
    /// retries: why each did, in the order they were tried.
    #[error("every model failed: {}", list_failures(failures))]
    AllModelsFailed {
        /// Each model's id and its error, the main model first.
        failures: Vec<(String, ModelError)>,
    },
}

fn list_failures(failures: &[(String, ModelError)]) -> String {
    let each: Vec<String> = failures
        .iter()
        .map(|(model, error)| format!("{model}: {error}"))
        .collect();
    each.join("; ")
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

    /// The same error, its provider's message prefixed with who said it (`Anthropic: ...`),
    /// so that a user reading it knows which provider (or which server) answered.
    pub(crate) fn said_by(mut self, who: &str) -> Self {
        match &mut self {
            ModelError::RateLimited { message, .. }
            | ModelError::Overloaded { message, .. }
            | ModelError::Server { message, .. }
            | ModelError::Api { message, .. }
            | ModelError::PromptTooLong { message, .. } => *message = format!("{who}: {message}"),
            _ => {}
        }
        self
    }

    /// Whether trying again later may succeed: 429, 5xx, overloaded, transport failures.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            ModelError::RateLimited { .. }
                | ModelError::Overloaded { .. }
                | ModelError::Server { .. }
                | ModelError::Transport { .. }
        )
    }

    /// A [`Stream`](Self::Stream) error with nothing beneath it.
    pub fn stream(message: impl Into<String>) -> Self {
        ModelError::Stream {
            message: message.into(),
            source: None,
        }
    }

    /// A [`Stream`](Self::Stream) error that `source` caused.
    pub(crate) fn stream_from(
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        ModelError::Stream {
            message: message.into(),
            source: Some(ErrorSource::of(source)),
        }
    }

    /// A [`Transport`](Self::Transport) error with nothing beneath it.
    pub fn transport(message: impl Into<String>) -> Self {
        ModelError::Transport {
            message: message.into(),
            source: None,
        }
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
