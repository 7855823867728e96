//! Helpers for testing apps built on the SDK (feature `testing`): a server that plays a
//! recorded [`Cassette`] back to an HTTP model pointed at it.
//!
//! ```no_run
//! use tool_sdk::agent::{Agent, AgentConfig};
//! use tool_sdk::model::anthropic::AnthropicModel;
//! use tool_sdk::testing::ReplayServer;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! // Recorded once with TOOL_SDK_RECORD_DIR=tests/cassettes and a real key.
//! let server = ReplayServer::from_file("tests/cassettes/refund.jsonl").await?;
//! let model = AnthropicModel::new("claude-sonnet-4-5", "test-key").with_base_url(server.uri());
//! let agent = Agent::create(AgentConfig::new().with_model(model)).await?;
//! let answer = agent.prompt("Refund order 1234.").await?;
//! server.finish()?; // every recorded request came, and as recorded
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::model::cassette::{Cassette, CassetteError, Interaction, first_difference};

/// A local HTTP server that answers the requests of a [`Cassette`] in order with their
/// recorded responses. Each request is checked against the recorded one (method, path, and
/// every key of the recorded body); one that differs is answered with HTTP 400 and the first
/// difference, which the model's client reports as the provider's message, and
/// [`finish`](Self::finish) fails.
pub struct ReplayServer {
    server: MockServer,
    state: Arc<Mutex<Replay>>,
}

struct Replay {
    cassette: Cassette,
    played: usize,
    mismatches: Vec<String>,
    bodies: Vec<Value>,
}

/// What went wrong in a replay.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    /// Requests differed from the recorded ones.
    #[error("the requests differed from the cassette's: {}", .0.join("; "))]
    Mismatched(Vec<String>),
    /// Recorded requests never came.
    #[error("{played} of the cassette's {recorded} requests came; the rest never did")]
    NotPlayed {
        /// How many came.
        played: usize,
        /// How many the cassette holds.
        recorded: usize,
    },
}

impl ReplayServer {
    /// Starts a server playing `cassette`.
    pub async fn start(cassette: Cassette) -> ReplayServer {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(Replay {
            cassette,
            played: 0,
            mismatches: Vec::new(),
            bodies: Vec::new(),
        }));
        Mock::given(wiremock::matchers::any())
            .respond_with(Player(state.clone()))
            .mount(&server)
            .await;
        ReplayServer { server, state }
    }

    /// Starts a server playing the cassette file at `path`.
    pub async fn from_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<ReplayServer, CassetteError> {
        Ok(ReplayServer::start(Cassette::load(path)?).await)
    }

    /// The server's address, `http://127.0.0.1:<port>`: the model's base URL (with `/v1`
    /// after it for an OpenAI-compatible client).
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    /// The JSON bodies of the requests that came, in order.
    pub fn bodies(&self) -> Vec<Value> {
        self.lock().bodies.clone()
    }

    /// How many recorded requests have been answered.
    pub fn played(&self) -> usize {
        self.lock().played
    }

    /// `Ok` when every recorded request came, and each as recorded.
    pub fn finish(&self) -> Result<(), ReplayError> {
        let replay = self.lock();
        if !replay.mismatches.is_empty() {
            return Err(ReplayError::Mismatched(replay.mismatches.clone()));
        }
        let recorded = replay.cassette.interactions.len();
        match replay.played == recorded {
            true => Ok(()),
            false => Err(ReplayError::NotPlayed {
                played: replay.played,
                recorded,
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Replay> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct Player(Arc<Mutex<Replay>>);

impl Respond for Player {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let mut replay = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        replay.bodies.push(body.clone());
        let index = replay.played;
        let Some(expected) = replay.cassette.interactions.get(index).cloned() else {
            let recorded = replay.cassette.interactions.len();
            return refuse(
                &mut replay,
                format!(
                    "request {} came, but the cassette holds {recorded}",
                    index + 1
                ),
            );
        };
        if let Some(difference) = differs(&expected, request, &body) {
            return refuse(&mut replay, format!("request {}: {difference}", index + 1));
        }
        replay.played += 1;
        let recorded = &expected.response;
        let content_type = recorded
            .headers
            .get("content-type")
            .map_or("text/event-stream", String::as_str);
        let mut response = ResponseTemplate::new(recorded.status)
            .set_body_raw(recorded.body.clone().into_bytes(), content_type);
        for (name, value) in &recorded.headers {
            // The server frames the body itself.
            if !matches!(
                name.as_str(),
                "content-type" | "content-length" | "transfer-encoding" | "connection"
            ) {
                response = response.insert_header(name.as_str(), value.as_str());
            }
        }
        response
    }
}

/// How `request` differs from the recorded one, if it does.
fn differs(expected: &Interaction, request: &Request, body: &Value) -> Option<String> {
    let method = request.method.as_str();
    if !method.eq_ignore_ascii_case(&expected.request.method) {
        return Some(format!(
            "method {method}, recorded {}",
            expected.request.method
        ));
    }
    let mut path = request.url.path().to_owned();
    if let Some(query) = request.url.query() {
        path = format!("{path}?{query}");
    }
    if path != expected.request.path {
        return Some(format!("path {path}, recorded {}", expected.request.path));
    }
    let recorded = expected.request.body.as_ref()?;
    first_difference(recorded, body).map(|difference| format!("body {difference}"))
}

/// Answers a request the cassette does not have with HTTP 400 and why, in the error shape
/// every client reads its provider's message from.
fn refuse(replay: &mut Replay, why: String) -> ResponseTemplate {
    replay.mismatches.push(why.clone());
    ResponseTemplate::new(400).set_body_json(json!({
        "type": "error",
        "error": {"type": "cassette_mismatch", "message": format!("replay: {why}")},
    }))
}
