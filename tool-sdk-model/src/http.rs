//! The road both HTTP clients share: one request sent with retries, its server-sent events
//! read into a turn, and the shapes of the errors providers answer with.
//!
//! A provider brings only its wire format: the request body, and a [`TurnReader`] that turns
//! its events into [`ModelEvent`]s.

use std::time::Duration;

use eventsource_stream::{EventStreamError, Eventsource as _};
use futures::{Stream, StreamExt as _};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;

use std::path::Path;
use std::sync::Arc;

use super::cassette::{
    CassetteWriter, Interaction, PendingBody, RecordedRequest, RecordedResponse, public_headers,
};
use super::retry::parse_retry_after;
use super::{ModelError, ModelEvent, ModelRequest, ModelResponse, ModelStream, RetryPolicy};

mod builders;
mod errors;
pub(crate) use builders::http_builders;
pub(crate) use errors::{
    ErrorBody, ErrorCode, ErrorObject, WireError, error_message, http_error, lenient, lenient_list,
};

/// The longest provider error text kept in a [`ModelError`] when the body is not JSON.
pub(crate) const MAX_ERROR_BODY: usize = 1000;

/// How the API key goes into a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Auth {
    /// As is, in this header (Anthropic's `x-api-key`).
    Header(&'static str),
    /// `Authorization: Bearer <key>`.
    Bearer,
}

/// Where a provider's requests go and how they are sent.
#[derive(Clone)]
pub(crate) struct HttpClient {
    /// Lowercase provider name, for logs.
    pub(crate) provider: &'static str,
    pub(crate) client: reqwest::Client,
    /// Without a trailing slash.
    pub(crate) base_url: String,
    pub(crate) retry: RetryPolicy,
    /// `None`: no key is sent. An empty key is refused before any request.
    pub(crate) api_key: Option<String>,
    pub(crate) auth: Auth,
    /// Sent with every request.
    pub(crate) headers: &'static [(&'static str, &'static str)],
    /// How to set a key, for the error when it is empty.
    pub(crate) key_hint: &'static str,
    /// Reads a non-2xx answer (status, the wait the headers asked for, body) into its error:
    /// [`http_error`] unless the provider's errors have a shape of their own (Gemini's).
    pub(crate) read_error: fn(u16, Option<Duration>, &str) -> ModelError,
    /// Where each attempt is recorded, when it is (see [`cassette`](super::cassette)).
    pub(crate) recorder: Option<Arc<CassetteWriter>>,
}

/// The environment variable naming the directory HTTP models record their attempts in.
pub const RECORD_DIR_VAR: &str = "TOOL_SDK_RECORD_DIR";

impl HttpClient {
    /// A client of this provider with a fresh `reqwest::Client` and the default retries.
    pub(crate) fn new(provider: &'static str, base_url: &str, auth: Auth) -> Self {
        tool_sdk_core::tls::ensure_provider();
        HttpClient {
            provider,
            client: reqwest::Client::new(),
            base_url: normalize_base_url(base_url),
            retry: RetryPolicy::default(),
            api_key: None,
            auth,
            headers: &[],
            key_hint: "",
            read_error: http_error,
            recorder: std::env::var_os(RECORD_DIR_VAR)
                .filter(|dir| !dir.is_empty())
                .map(|dir| Arc::new(CassetteWriter::in_dir(Path::new(&dir), provider))),
        }
    }

    /// Records each attempt in a new cassette file in `dir`.
    pub(crate) fn record_to(&mut self, dir: &Path) {
        self.recorder = Some(Arc::new(CassetteWriter::in_dir(dir, self.provider)));
    }

    /// The cassette file attempts are recorded in, when they are.
    pub(crate) fn recording_path(&self) -> Option<&Path> {
        self.recorder.as_deref().map(CassetteWriter::path)
    }

    pub(crate) fn set_base_url(&mut self, base_url: &str) {
        self.base_url = normalize_base_url(base_url);
    }

    /// One streamed turn: `body` POSTed to `{base_url}{path}` (retried while no byte of the
    /// answer has been read), its events read by `turn`.
    pub(crate) fn stream_turn<'a, T: TurnReader + 'a>(
        &'a self,
        path: &'a str,
        request: &'a ModelRequest,
        body: Value,
        turn: T,
    ) -> ModelStream<'a> {
        self.stream_turn_with(path, request, body, &[], turn)
    }

    /// [`stream_turn`](Self::stream_turn), with `headers` sent beside the client's own (what
    /// one request needs, such as a beta header).
    pub(crate) fn stream_turn_with<'a, T: TurnReader + 'a>(
        &'a self,
        path: &'a str,
        request: &'a ModelRequest,
        body: Value,
        headers: &'a [(&'static str, &'static str)],
        turn: T,
    ) -> ModelStream<'a> {
        Box::pin(async_stream::try_stream! {
            let body = serde_json::to_vec(&body).map_err(|error| {
                ModelError::stream_from(format!("could not encode the request: {error}"), error)
            })?;
            tracing::debug!(
                provider = self.provider,
                messages = request.messages.len(),
                tools = request.tools.len(),
                "model request"
            );
            let response = self.retry.run(|| self.send(path, &body, headers)).await?;
            let mut pending = self.recorder.as_ref().map(|writer| {
                let status = response.status().as_u16();
                let interaction = self.recorded(path, &body, headers, status, response.headers());
                PendingBody::new(writer.clone(), interaction)
            });
            let events = if is_json(&response) {
                // A server that ignored `stream: true` answers with one JSON document.
                let text = response.text().await.map_err(transport_error)?;
                if let Some(pending) = &mut pending {
                    pending.push(text.as_bytes());
                }
                futures::stream::iter(read_json(turn, &text)).left_stream()
            } else {
                // The body is recorded as it is read; the attempt is written once it ends.
                let body = response.bytes_stream().inspect(move |chunk| {
                    if let (Some(pending), Ok(chunk)) = (&mut pending, chunk) {
                        pending.push(chunk);
                    }
                });
                read_turn(turn, body).right_stream()
            };
            let mut events = std::pin::pin!(events);
            while let Some(event) = events.next().await {
                // An error event mid-stream is the provider's too (Gemini's and the Responses
                // API's readers name theirs).
                let event = event.map_err(|error| match self.provider {
                    "anthropic" | "openai" => match self.who() {
                        Some(who) => error.said_by(&who),
                        None => error,
                    },
                    _ => error,
                })?;
                if let ModelEvent::Completed(response) = &event {
                    tracing::debug!(
                        provider = self.provider,
                        stop_reason = ?response.stop_reason,
                        input_tokens = response.usage.input_tokens,
                        output_tokens = response.usage.output_tokens,
                        "model turn completed"
                    );
                }
                yield event;
            }
        })
    }

    /// One attempt: the response once its status is a success.
    async fn send(
        &self,
        path: &str,
        body: &[u8],
        headers: &[(&'static str, &'static str)],
    ) -> Result<reqwest::Response, ModelError> {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base_url))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream");
        for (name, value) in self.headers.iter().chain(headers) {
            request = request.header(*name, *value);
        }
        if let Some((name, value)) = self.auth_header()? {
            request = request.header(name, value);
        }
        let response = request
            .body(body.to_vec())
            .send()
            .await
            .map_err(transport_error)?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = retry_after(response.headers());
        let recorded = (self.recorder.as_ref()).map(|writer| {
            (
                writer,
                self.recorded(path, body, headers, status.as_u16(), response.headers()),
            )
        });
        let text = response.text().await.unwrap_or_default();
        if let Some((writer, mut interaction)) = recorded {
            interaction.response.body = text.clone();
            writer.append(interaction);
        }
        let mut error = (self.read_error)(status.as_u16(), retry_after, &text);
        if let Some(who) = self.who() {
            error = error.said_by(&who);
        }
        tracing::debug!(provider = self.provider, status = status.as_u16(), %error, "model request failed");
        Err(error)
    }

    /// Who answered, as an error names it: `Anthropic`, `OpenAI`, or a Chat Completions server
    /// that is not OpenAI's (Ollama, vLLM...) by its address. `None` for a client whose errors
    /// name it already (Gemini's).
    fn who(&self) -> Option<String> {
        let host = reqwest::Url::parse(&self.base_url)
            .ok()
            .and_then(|url| Some(format!("{}{}", url.host_str()?, port(&url))));
        let official = |domain: &str| host.as_deref().is_some_and(|h| h.ends_with(domain));
        match self.provider {
            // A proxy in front of either relays the provider's own message.
            "anthropic" => Some("Anthropic".into()),
            "openai-responses" => Some("OpenAI".into()),
            "openai" if official("openai.com") => Some("OpenAI".into()),
            "gemini" => None,
            _ => Some(match host {
                Some(host) => format!("the {} server at {host}", provider_label(self.provider)),
                None => provider_label(self.provider).into(),
            }),
        }
    }

    /// An attempt as a cassette records it, its response body still to come.
    fn recorded(
        &self,
        path: &str,
        body: &[u8],
        extra: &[(&'static str, &'static str)],
        status: u16,
        headers: &reqwest::header::HeaderMap,
    ) -> Interaction {
        let sent = [
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
        ];
        let request_headers = (sent.into_iter())
            .chain(self.headers.iter().copied())
            .chain(extra.iter().copied());
        let response_headers = headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)));
        // The whole path, base URL's included (`/v1/chat/completions`), as a server sees it.
        let url = reqwest::Url::parse(&format!("{}{path}", self.base_url));
        let full_path = match &url {
            Ok(url) => match url.query() {
                Some(query) => format!("{}?{query}", url.path()),
                None => url.path().to_owned(),
            },
            Err(_) => path.to_owned(),
        };
        Interaction {
            request: RecordedRequest {
                method: "POST".into(),
                path: full_path,
                headers: public_headers(request_headers),
                body: serde_json::from_slice(body).ok(),
            },
            response: RecordedResponse {
                status,
                headers: public_headers(response_headers),
                body: String::new(),
            },
        }
    }

    fn auth_header(&self) -> Result<Option<(&'static str, HeaderValue)>, ModelError> {
        let Some(key) = &self.api_key else {
            return Ok(None);
        };
        if key.trim().is_empty() {
            return Err(ModelError::MissingApiKey(format!(
                "the API key is empty; {}",
                self.key_hint
            )));
        }
        let (name, value) = match self.auth {
            Auth::Header(name) => (name, key.clone()),
            Auth::Bearer => (AUTHORIZATION.as_str(), format!("Bearer {key}")),
        };
        let mut value = HeaderValue::from_str(&value).map_err(|_| {
            ModelError::MissingApiKey(
                "the API key holds characters that cannot go in an HTTP header".into(),
            )
        })?;
        value.set_sensitive(true);
        Ok(Some((name, value)))
    }
}

/// `:port`, when the URL names one.
fn port(url: &reqwest::Url) -> String {
    url.port()
        .map(|port| format!(":{port}"))
        .unwrap_or_default()
}

/// The API a client speaks, as a person names it.
fn provider_label(provider: &str) -> &str {
    match provider {
        "anthropic" => "Anthropic-compatible",
        "openai" | "openai-responses" => "OpenAI-compatible",
        other => other,
    }
}

fn normalize_base_url(base_url: &str) -> String {
    base_url.trim().trim_end_matches('/').to_owned()
}

fn is_json(response: &reqwest::Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.trim_start().starts_with("application/json"))
}

/// How long the provider asked to wait: `retry-after-ms` (OpenAI), else `retry-after` in
/// seconds.
fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    header("retry-after-ms")
        .and_then(|ms| ms.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map(|ms| Duration::from_secs_f64(ms / 1000.0))
        .or_else(|| parse_retry_after(header("retry-after")))
}

/// A provider's reading of one turn: its events in, [`ModelEvent`]s out.
pub(crate) trait TurnReader: Send {
    /// Takes one server-sent event (its `event:` name, `message` when none, and its data).
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<ModelEvent>, ModelError>;

    /// Whether the provider said the turn is over; nothing after that is read.
    fn is_done(&self) -> bool;

    /// Takes a whole JSON answer, as a server that ignores `stream: true` sends it.
    fn on_json_body(&mut self, body: &str) -> Result<Vec<ModelEvent>, ModelError> {
        Err(ModelError::stream(format!(
            "expected server-sent events, got JSON: {}",
            truncate(body.trim(), 200)
        )))
    }

    /// The whole turn, once the events have ended.
    fn finish(self) -> Result<ModelResponse, ModelError>;
}

fn read_json<T: TurnReader>(mut turn: T, body: &str) -> Vec<Result<ModelEvent, ModelError>> {
    match turn.on_json_body(body) {
        Ok(events) => {
            let mut out: Vec<_> = events.into_iter().map(Ok).collect();
            out.push(turn.finish().map(ModelEvent::Completed));
            out
        }
        Err(error) => vec![Err(error)],
    }
}

/// The events of one streamed turn, read from the body's bytes however they are chunked,
/// ending with [`ModelEvent::Completed`] or an error.
///
/// A body whose last event lacks its blank line still delivers that event. A connection that
/// breaks is a [`ModelError::Transport`], like one that cannot be made; bytes that are not
/// server-sent events are a [`ModelError::Stream`].
pub(crate) fn read_turn<T, S, B, E>(
    mut turn: T,
    body: S,
) -> impl Stream<Item = Result<ModelEvent, ModelError>> + Send
where
    T: TurnReader,
    S: Stream<Item = Result<B, E>> + Send,
    B: AsRef<[u8]> + Send,
    E: std::error::Error + Send + Sync + 'static,
{
    async_stream::try_stream! {
        let mut events = std::pin::pin!(body
            .map(|chunk| chunk.map(Chunk::Data))
            .chain(futures::stream::once(async { Ok(Chunk::End) }))
            .eventsource());
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| match error {
                EventStreamError::Transport(error) => transport_error(error),
                other => ModelError::stream(format!("unreadable server-sent events: {other}")),
            })?;
            for model_event in turn.on_event(&event.event, &event.data)? {
                yield model_event;
            }
            if turn.is_done() {
                break;
            }
        }
        yield ModelEvent::Completed(turn.finish()?);
    }
}

/// A body chunk, or the blank line appended at the end of the body.
enum Chunk<B> {
    Data(B),
    End,
}

impl<B: AsRef<[u8]>> AsRef<[u8]> for Chunk<B> {
    fn as_ref(&self) -> &[u8] {
        match self {
            Chunk::Data(bytes) => bytes.as_ref(),
            Chunk::End => b"\n\n",
        }
    }
}

fn transport_error(error: impl std::error::Error + Send + Sync + 'static) -> ModelError {
    ModelError::Transport {
        message: error_chain(&error),
        source: Some(tool_sdk_core::error::ErrorSource::of(error)),
    }
}

/// An error's message with its causes, which reqwest keeps out of its own `Display`.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !message.contains(&cause_text) {
            message.push_str(": ");
            message.push_str(&cause_text);
        }
        source = cause.source();
    }
    message
}

/// At most `max_chars` characters of `text`, with `...` when cut.
pub(crate) fn truncate(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// An `f32` as the JSON number a person would write (`0.7`, not `0.699999988079071`); `None`
/// when it is not finite.
pub(crate) fn f32_json(value: f32) -> Option<Value> {
    if !value.is_finite() {
        return None;
    }
    let exact = value.to_string().parse::<f64>().unwrap_or(f64::from(value));
    serde_json::Number::from_f64(exact).map(Value::Number)
}

#[cfg(test)]
mod tests;
