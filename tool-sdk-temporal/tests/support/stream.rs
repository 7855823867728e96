//! A model that streams slowly, and a client that watches a run live: for the tests and the
//! benchmark of what reaches the client while an activity runs (the model's text as it
//! streams, a tool's progress).
//!
//! The model is a bare HTTP/1.1 server speaking Anthropic's SSE: a text turn is sent in
//! parts, and after its first part the server waits (20 s at most) until the watcher has
//! seen that part, so that a test knows the text showed before the turn ended.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tool_sdk_temporal::{RunEvent, RunHandle};

use crate::server::{RUN_LIMIT, Turn, anthropic_stream};

/// A turn of the slow model's script.
#[derive(Clone, Debug)]
pub enum Step {
    /// A whole turn, sent at once.
    Whole(Turn),
    /// A text turn sent in these parts: the first, then (once it was seen, or after 20 s)
    /// the others, 50 ms apart.
    Streamed(Vec<String>),
    /// A turn that thinks in these parts, sent as `Streamed`'s, then answers
    /// [`THOUGHT_ANSWER`] at once.
    Thought(Vec<String>),
}

/// The answer of a [`Step::Thought`].
pub const THOUGHT_ANSWER: &str = "Thought it through.";

/// What the slow model saw and did.
#[derive(Default)]
struct Log {
    /// When the first part of each streamed turn was sent.
    first_sent: Vec<SystemTime>,
    /// For each streamed turn: whether its first part was seen before the rest was sent.
    seen_in_time: Vec<bool>,
}

/// The slow model: a server on a free port, answering each request with the step of its
/// position (the `k`th step for a request of `2k + 1` messages).
pub struct SlowModel {
    pub url: String,
    seen: Arc<Notify>,
    log: Arc<Mutex<Log>>,
}

impl SlowModel {
    /// Starts it.
    pub async fn start(script: Vec<Step>) -> SlowModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let url = format!("http://{}", listener.local_addr().expect("an address"));
        let (seen, log) = (Arc::new(Notify::new()), Arc::new(Mutex::default()));
        let server = (Arc::new(script), seen.clone(), log.clone());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (script, seen, log) = server.clone();
                tokio::spawn(async move { answer(socket, &script, &seen, &log).await });
            }
        });
        SlowModel { url, seen, log }
    }

    /// The watcher saw the streaming turn's first part.
    pub fn seen(&self) {
        self.seen.notify_one();
    }

    /// When the first part of each streamed turn was sent.
    pub fn first_sent(&self) -> Vec<SystemTime> {
        self.log.lock().unwrap().first_sent.clone()
    }

    /// For each streamed turn: whether its first part was seen before the rest was sent.
    pub fn seen_in_time(&self) -> Vec<bool> {
        self.log.lock().unwrap().seen_in_time.clone()
    }
}

/// Reads one request, answers it with its step, and closes the connection.
async fn answer(mut socket: TcpStream, script: &[Step], seen: &Notify, log: &Mutex<Log>) {
    let Some(body) = read_request(&mut socket).await else {
        return;
    };
    let messages = body["messages"].as_array().map_or(0, Vec::len);
    let step = script
        .get(messages.saturating_sub(1) / 2)
        .unwrap_or_else(|| panic!("the script has no step for {messages} messages"));
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    if socket.write_all(head.as_bytes()).await.is_err() {
        return;
    }
    match step {
        Step::Whole(turn) => {
            let _ = chunk(&mut socket, &anthropic_stream(turn)).await;
        }
        Step::Streamed(parts) => {
            let _ = streamed(&mut socket, parts, Block::Text, seen, log).await;
        }
        Step::Thought(parts) => {
            let _ = streamed(&mut socket, parts, Block::Thinking, seen, log).await;
        }
    }
    let _ = socket.write_all(b"0\r\n\r\n").await;
    let _ = socket.shutdown().await;
}

/// The request's JSON body.
async fn read_request(socket: &mut TcpStream) -> Option<Value> {
    let mut data = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        let read = socket.read(&mut buffer).await.ok().filter(|n| *n > 0)?;
        data.extend_from_slice(&buffer[..read]);
        let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&data[..end]).to_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        if data.len() >= end + 4 + length {
            return serde_json::from_slice(&data[end + 4..end + 4 + length]).ok();
        }
    }
}

async fn chunk(socket: &mut TcpStream, data: &str) -> std::io::Result<()> {
    let framed = format!("{:x}\r\n{data}\r\n", data.len());
    socket.write_all(framed.as_bytes()).await?;
    socket.flush().await
}

/// What a streamed turn streams in parts.
#[derive(Clone, Copy, PartialEq)]
enum Block {
    Text,
    Thinking,
}

/// A turn whose first block (text or thinking) comes in `parts`: the first, then the rest
/// once it was seen; a thinking block is then signed and followed by [`THOUGHT_ANSWER`].
async fn streamed(
    socket: &mut TcpStream,
    parts: &[String],
    block: Block,
    seen: &Notify,
    log: &Mutex<Log>,
) -> std::io::Result<()> {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let delta = |index: u32, delta: Value| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let (first, part_delta) = match block {
        Block::Text => (
            json!({"type": "text", "text": ""}),
            (|text: &str| json!({"type": "text_delta", "text": text})) as fn(&str) -> Value,
        ),
        Block::Thinking => (
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            (|text: &str| json!({"type": "thinking_delta", "thinking": text})) as fn(&str) -> Value,
        ),
    };
    let start = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ) + &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": first}),
    );
    chunk(socket, &start).await?;
    for (at, part) in parts.iter().enumerate() {
        if at == 1 {
            let in_time = tokio::time::timeout(Duration::from_secs(20), seen.notified())
                .await
                .is_ok();
            log.lock().unwrap().seen_in_time.push(in_time);
        } else if at > 1 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        chunk(socket, &delta(0, part_delta(part))).await?;
        if at == 0 {
            log.lock().unwrap().first_sent.push(SystemTime::now());
        }
    }
    let stop = |index: u32| {
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        )
    };
    let mut end = String::new();
    if block == Block::Thinking {
        end += &delta(0, json!({"type": "signature_delta", "signature": "sig"}));
        end += &stop(0);
        end += &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1,
                "content_block": {"type": "text", "text": ""}}),
        );
        end += &delta(1, json!({"type": "text_delta", "text": THOUGHT_ANSWER}));
        end += &stop(1);
    } else {
        end += &stop(0);
    }
    end += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 5}}),
    );
    end += &event("message_stop", json!({"type": "message_stop"}));
    chunk(socket, &end).await
}

/// A call of the `report` tool: `lines` progress lines, each waiting to be seen in `dir`.
pub fn report(id: &str, dir: &Path, lines: u32) -> Turn {
    let input = json!({"dir": dir, "lines": lines});
    Turn::Calls(vec![(id.to_owned(), "report", input)])
}

/// What a watcher saw of a run, with when.
#[derive(Debug, Default)]
pub struct Watched {
    /// Every event, in order.
    pub events: Vec<RunEvent>,
    /// When each text delta arrived.
    pub deltas_at: Vec<SystemTime>,
    /// Each progress line's delay: from the tool reporting it to its event's arrival.
    pub progress_delays: Vec<Duration>,
}

/// Watches `run` to its end, tailing every 50 ms: tells `model` when the run's first text
/// delta arrives (a run streams one turn), and `report` (through `dir/seen-<i>`) when its line `i` does.
pub async fn watch(run: &RunHandle, model: &SlowModel, dir: &Path) -> Watched {
    let mut watched = Watched::default();
    let events = run.events(Duration::from_millis(50));
    let mut events = std::pin::pin!(events);
    let all = async {
        while let Some(event) = events.next().await {
            let event = event.expect("the events are read");
            let now = SystemTime::now();
            match &event {
                RunEvent::TextDelta(_) | RunEvent::ThinkingDelta(_) => {
                    // Once a run: each wakes one held turn.
                    if watched.deltas_at.is_empty() {
                        model.seen();
                    }
                    watched.deltas_at.push(now);
                }
                RunEvent::ToolProgress { message, .. } => {
                    let (line, reported) = parse_line(message);
                    let delay = now.duration_since(reported).unwrap_or_default();
                    watched.progress_delays.push(delay);
                    std::fs::write(seen_file(dir, line), "").expect("the mark is written");
                }
                _ => {}
            }
            watched.events.push(event);
        }
    };
    tokio::time::timeout(RUN_LIMIT, all)
        .await
        .expect("the run ended in time");
    watched
}

fn seen_file(dir: &Path, line: u32) -> PathBuf {
    dir.join(format!("seen-{line}"))
}

/// `line <i> at <µs>`: `i` and the time.
fn parse_line(message: &str) -> (u32, SystemTime) {
    let rest = message.strip_prefix("line ").expect("a report line");
    let (line, micros) = rest.split_once(" at ").expect("a report line");
    let micros: u64 = micros.parse().expect("a time");
    let at = SystemTime::UNIX_EPOCH + Duration::from_micros(micros);
    (line.parse().expect("a line number"), at)
}
