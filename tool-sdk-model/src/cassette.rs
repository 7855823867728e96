//! Cassettes: a model provider's HTTP conversation, recorded to be played back in tests.
//!
//! A cassette is a JSON Lines file, one line an HTTP attempt (a retried request is two lines):
//! the request (method, path, the headers that are not secrets, the JSON body) and the
//! response (status, headers, the body as it came, server-sent events and all). A line of the
//! form `{"note": "..."}` is a comment: where the cassette came from.
//!
//! Any HTTP model of this crate records when the environment variable `TOOL_SDK_RECORD_DIR`
//! names a directory (or its `with_recording(dir)` was called): each model writes its own file
//! there, `<provider>-<time>-<pid>-<n>.jsonl`. API keys and other credentials are never
//! written ([`is_secret_header`]). With the `testing` feature, `testing::ReplayServer` plays a
//! cassette back to a client pointed at it.
//!
//! ```
//! use tool_sdk::model::cassette::Cassette;
//!
//! let cassette = Cassette::parse(concat!(
//!     r#"{"note": "hand-written"}"#, "\n",
//!     r#"{"request": {"method": "POST", "path": "/v1/messages"}, "#,
//!     r#""response": {"status": 529, "body": "{\"type\":\"error\"}"}}"#, "\n",
//! ))
//! .unwrap();
//! assert_eq!(cassette.notes, ["hand-written"]);
//! assert_eq!(cassette.interactions[0].response.status, 529);
//! assert_eq!(Cassette::parse(&cassette.to_jsonl()).unwrap(), cassette);
//! ```

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A recorded conversation: its notes and its HTTP attempts, in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cassette {
    /// The `{"note": ...}` lines: where it came from.
    pub notes: Vec<String>,
    /// The attempts, in the order they were made.
    pub interactions: Vec<Interaction>,
}

/// One HTTP attempt: what was sent and what came back.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interaction {
    /// What was sent.
    pub request: RecordedRequest,
    /// What came back.
    pub response: RecordedResponse,
}

/// A request as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedRequest {
    /// `POST`, ...
    pub method: String,
    /// The path and query, without the host.
    pub path: String,
    /// Its headers, lowercase, without secrets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Its JSON body. A replay checks a request against it: every key it has must be there
    /// with the same value (keys it lacks are not checked), so a hand-written cassette can
    /// hold only what matters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
}

/// A response as recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RecordedResponse {
    /// The HTTP status.
    pub status: u16,
    /// Its headers, lowercase, without secrets.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The body as it came: server-sent events, or a JSON error.
    #[serde(default)]
    pub body: String,
}

/// Why a cassette cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file cannot be read.
    #[error("cannot read the cassette {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is neither a note nor an interaction.
    #[error("line {line} of the cassette is neither a note nor an interaction: {source}")]
    Line {
        /// 1-based.
        line: usize,
        /// What the parser said.
        source: serde_json::Error,
    },
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Line {
    Note { note: String },
    Interaction(Box<Interaction>),
}

impl Cassette {
    /// Reads a cassette file.
    pub fn load(path: impl AsRef<Path>) -> Result<Cassette, CassetteError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| CassetteError::Read {
            path: path.to_owned(),
            source,
        })?;
        Cassette::parse(&text)
    }

    /// Reads a cassette's text.
    pub fn parse(text: &str) -> Result<Cassette, CassetteError> {
        let mut cassette = Cassette::default();
        for (index, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let parsed = serde_json::from_str(line).map_err(|source| CassetteError::Line {
                line: index + 1,
                source,
            })?;
            match parsed {
                Line::Note { note } => cassette.notes.push(note),
                Line::Interaction(interaction) => cassette.interactions.push(*interaction),
            }
        }
        Ok(cassette)
    }

    /// The cassette as JSON Lines: its notes, then its interactions.
    pub fn to_jsonl(&self) -> String {
        let notes = self
            .notes
            .iter()
            .map(|note| Line::Note { note: note.clone() });
        let interactions = (self.interactions.iter().cloned())
            .map(|interaction| Line::Interaction(Box::new(interaction)));
        let mut text = String::new();
        for line in notes.chain(interactions) {
            // A `Line` is strings, numbers and JSON values: it always serialises.
            text.push_str(&serde_json::to_string(&line).unwrap_or_default());
            text.push('\n');
        }
        text
    }
}

/// Whether a header holds a credential, and so is never recorded: `authorization`,
/// `x-api-key`, `x-goog-api-key`, cookies, and any whose name says key, token or secret.
pub fn is_secret_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "authorization" | "proxy-authorization" | "cookie" | "set-cookie"
    ) || ["key", "token", "secret", "session"]
        .iter()
        .any(|word| name.contains(word))
}

/// The headers of `map` that are not secrets, lowercase.
pub(crate) fn public_headers<'a>(
    map: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> BTreeMap<String, String> {
    map.into_iter()
        .filter(|(name, _)| !is_secret_header(name))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect()
}

/// Where one model's attempts are appended, a line each.
#[derive(Debug)]
pub(crate) struct CassetteWriter {
    file: PathBuf,
    lock: Mutex<()>,
}

impl CassetteWriter {
    /// A new file in `dir` (created if need be) for `provider`'s attempts.
    pub(crate) fn in_dir(dir: &Path, provider: &str) -> CassetteWriter {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_millis());
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{provider}-{millis}-{}-{n}.jsonl", std::process::id());
        CassetteWriter {
            file: dir.join(name),
            lock: Mutex::new(()),
        }
    }

    /// The file written to.
    pub(crate) fn path(&self) -> &Path {
        &self.file
    }

    /// Appends one attempt. A recording that fails is logged, never the request's failure.
    pub(crate) fn append(&self, interaction: Interaction) {
        let line = Line::Interaction(Box::new(interaction));
        let Ok(mut text) = serde_json::to_string(&line) else {
            return;
        };
        text.push('\n');
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        let written = (|| {
            if let Some(dir) = self.file.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.file)?;
            file.write_all(text.as_bytes())
        })();
        if let Err(error) = written {
            tracing::warn!(file = %self.file.display(), %error, "could not record the model's HTTP attempt");
        }
    }
}

/// A successful attempt whose body is still streaming: its bytes are gathered as they are read,
/// and the attempt is appended once the body has been read or dropped.
pub(crate) struct PendingBody {
    writer: std::sync::Arc<CassetteWriter>,
    interaction: Option<Interaction>,
    bytes: Vec<u8>,
}

impl PendingBody {
    pub(crate) fn new(writer: std::sync::Arc<CassetteWriter>, interaction: Interaction) -> Self {
        PendingBody {
            writer,
            interaction: Some(interaction),
            bytes: Vec::new(),
        }
    }

    /// More of the body.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.bytes.extend_from_slice(chunk);
    }
}

impl Drop for PendingBody {
    fn drop(&mut self) {
        if let Some(mut interaction) = self.interaction.take() {
            interaction.response.body = String::from_utf8_lossy(&self.bytes).into_owned();
            self.writer.append(interaction);
        }
    }
}

/// Whether `actual` has everything `expected` has: the same scalars, objects with at least
/// `expected`'s keys (each matching), arrays of the same length matching item by item. The
/// first difference, as a path and the two values, when it does not.
pub fn first_difference(expected: &Value, actual: &Value) -> Option<String> {
    fn walk(expected: &Value, actual: &Value, at: &mut String) -> Option<String> {
        match (expected, actual) {
            (Value::Object(want), Value::Object(got)) => {
                for (key, want) in want {
                    let len = at.len();
                    at.push('/');
                    at.push_str(key);
                    let found = match got.get(key) {
                        Some(got) => walk(want, got, at),
                        None => Some(format!("{at}: missing, expected {want}")),
                    };
                    at.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            (Value::Array(want), Value::Array(got)) if want.len() == got.len() => {
                for (index, (want, got)) in want.iter().zip(got).enumerate() {
                    let len = at.len();
                    at.push_str(&format!("/{index}"));
                    let found = walk(want, got, at);
                    at.truncate(len);
                    if found.is_some() {
                        return found;
                    }
                }
                None
            }
            _ if expected == actual => None,
            _ => {
                let at = if at.is_empty() { "/" } else { at.as_str() };
                Some(format!("{at}: expected {expected}, got {actual}"))
            }
        }
    }
    walk(expected, actual, &mut String::new())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_matches_when_it_has_everything_recorded() {
        let recorded = json!({"model": "m", "messages": [{"role": "user"}], "stream": true});
        let sent = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}],
            "stream": true, "max_tokens": 10});
        assert_eq!(first_difference(&recorded, &sent), None);
        let other = json!({"model": "n", "messages": [{"role": "user"}], "stream": true});
        assert_eq!(
            first_difference(&recorded, &other).unwrap(),
            "/model: expected \"m\", got \"n\""
        );
        let fewer = json!({"model": "m", "messages": [], "stream": true});
        assert!(
            first_difference(&recorded, &fewer)
                .unwrap()
                .starts_with("/messages: expected")
        );
        let missing = json!({"model": "m", "messages": [{"role": "user"}]});
        assert_eq!(
            first_difference(&recorded, &missing).unwrap(),
            "/stream: missing, expected true"
        );
    }

    #[test]
    fn credentials_are_never_recorded() {
        for name in [
            "Authorization",
            "x-api-key",
            "x-goog-api-key",
            "Cookie",
            "OpenAI-Session",
        ] {
            assert!(is_secret_header(name), "{name}");
        }
        for name in ["content-type", "anthropic-version", "anthropic-beta"] {
            assert!(!is_secret_header(name), "{name}");
        }
        let kept = public_headers([("X-Api-Key", "test-key"), ("Content-Type", "text/plain")]);
        assert_eq!(kept.len(), 1);
        assert_eq!(kept["content-type"], "text/plain");
    }

    #[test]
    fn a_bad_line_is_named() {
        let error = Cassette::parse("{\"note\": \"ok\"}\n\n[1, 2]\n")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("line 3 of the cassette"), "{error}");
    }

    #[test]
    fn attempts_are_appended_a_line_each_and_bodies_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let writer = std::sync::Arc::new(CassetteWriter::in_dir(dir.path(), "anthropic"));
        let interaction = |status| Interaction {
            request: RecordedRequest {
                method: "POST".into(),
                path: "/v1/messages".into(),
                headers: BTreeMap::new(),
                body: Some(json!({"stream": true})),
            },
            response: RecordedResponse {
                status,
                headers: BTreeMap::new(),
                body: String::new(),
            },
        };
        writer.append(interaction(529));
        let mut pending = PendingBody::new(writer.clone(), interaction(200));
        pending.push(b"event: ping\n");
        pending.push(b"data: {}\n\n");
        drop(pending);
        let name = writer.path().file_name().unwrap().to_string_lossy();
        assert!(name.starts_with("anthropic-") && name.ends_with(".jsonl"));
        let cassette = Cassette::load(writer.path()).unwrap();
        let statuses: Vec<u16> = cassette
            .interactions
            .iter()
            .map(|i| i.response.status)
            .collect();
        assert_eq!(statuses, [529, 200]);
        assert_eq!(
            cassette.interactions[1].response.body,
            "event: ping\ndata: {}\n\n"
        );
    }
}
