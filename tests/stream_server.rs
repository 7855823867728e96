//! A model API server that streams each answer piece by piece, waiting where the test says:
//! for tests of what the agent does while a turn is still arriving. (wiremock sends a body in
//! one piece.) HTTP/1.1, one request per connection, chunked bodies.

use std::collections::VecDeque;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One step of an answer.
pub enum Piece {
    /// Bytes of the body, sent and flushed at once.
    Send(String),
    /// Waits for this before going on.
    Wait(Pin<Box<dyn Future<Output = ()> + Send>>),
    /// Appends a line to the shared log (to order what the server did against what tools did).
    Log(String),
    /// Closes the connection mid-body: the stream breaks.
    Break,
}

impl Piece {
    /// Waits for `future`.
    pub fn wait(future: impl Future<Output = ()> + Send + 'static) -> Piece {
        Piece::Wait(Box::pin(future))
    }
}

/// A running server: each request gets the next scripted answer.
pub struct StreamServer {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl StreamServer {
    /// Serves `answers` in order, one per request, logging into `log`.
    pub async fn start(answers: Vec<Vec<Piece>>, log: Arc<Mutex<Vec<String>>>) -> StreamServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
        let addr = listener.local_addr().expect("an address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let answers = Arc::new(Mutex::new(VecDeque::from(answers)));
        let seen = requests.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (seen, answers, log) = (seen.clone(), answers.clone(), log.clone());
                tokio::spawn(async move {
                    let _ = serve(socket, &seen, &answers, &log).await;
                });
            }
        });
        StreamServer { addr, requests }
    }

    /// The base URL.
    pub fn uri(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The JSON bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

async fn serve(
    mut socket: TcpStream,
    seen: &Mutex<Vec<Value>>,
    answers: &Mutex<VecDeque<Vec<Piece>>>,
    log: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let header_end = loop {
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            return Ok(());
        }
        buffer.extend_from_slice(&chunk[..read]);
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
    };
    let head = String::from_utf8_lossy(&buffer[..header_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|value| value.trim().parse().ok())
        .unwrap_or(0);
    while buffer.len() < header_end + length {
        let read = socket.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
    let body = serde_json::from_slice(&buffer[header_end..]).unwrap_or(Value::Null);
    seen.lock().unwrap().push(body);
    let Some(answer) = answers.lock().unwrap().pop_front() else {
        socket
            .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n")
            .await?;
        return Ok(());
    };
    socket
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
              transfer-encoding: chunked\r\nconnection: close\r\n\r\n",
        )
        .await?;
    for piece in answer {
        match piece {
            Piece::Send(text) => {
                socket
                    .write_all(format!("{:x}\r\n{text}\r\n", text.len()).as_bytes())
                    .await?;
                socket.flush().await?;
            }
            Piece::Wait(future) => future.await,
            Piece::Log(line) => log.lock().unwrap().push(line),
            Piece::Break => return Ok(()),
        }
    }
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await
}

/// Anthropic's server-sent events for a turn, built piece by piece.
pub mod anthropic {
    use serde_json::{Value, json};

    fn event(name: &str, data: Value) -> String {
        format!("event: {name}\ndata: {data}\n\n")
    }

    /// `message_start`.
    pub fn start() -> String {
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        )
    }

    /// A whole tool_use block at `index`.
    pub fn tool_use(index: u64, id: &str, name: &str, input: &Value) -> String {
        [
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ),
        ]
        .concat()
    }

    /// A whole text block at `index`.
    pub fn text(index: u64, text: &str) -> String {
        [
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "text", "text": ""}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index,
                    "delta": {"type": "text_delta", "text": text}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ),
        ]
        .concat()
    }

    /// `message_delta` with this stop reason, then `message_stop`.
    pub fn stop(stop_reason: &str) -> String {
        [
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                    "usage": {"output_tokens": 20}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]
        .concat()
    }

    /// A whole turn saying `text`.
    pub fn text_turn(text: &str) -> String {
        [start(), self::text(0, text), stop("end_turn")].concat()
    }
}
