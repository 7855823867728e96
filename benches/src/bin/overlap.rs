//! Tools overlapping the stream (issue #15 item 1): a local server streams one Anthropic turn
//! of four tool_use blocks on a fixed timeline, each call runs a read-only tool of 1 s, and the
//! server times the turn from the first request it received to the second (the one carrying
//! the four results). Also the time from each tool_use block's last byte (its
//! `content_block_stop`, written and flushed) to its tool starting.
//!
//! Two timelines of 2 s each:
//! - `early`: the four blocks arrive in the first second (one every 250 ms), then the model
//!   writes text for another second. A call started as its block arrives is done when the
//!   stream ends: the turn can end at about 2 s (target <= 2.1 s), against 3 s when the calls
//!   wait for the whole turn.
//! - `spread`: the blocks fill the 2 s (one every 500 ms) and the turn stops right after the
//!   last one. Its call cannot start before 2 s, so no agent can end this turn before 3 s;
//!   starting the first three early only makes their results ready sooner.
//!
//! `overlap [RUNS]` prints one JSON line per timeline: medians over RUNS runs (default 5).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::RetryPolicy;
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::{State, ToolRegistry, tool};
use tool_sdk_benches::mock_http::{read_request_body, sse_event as event};

/// When each tool started, by its key.
#[derive(Default)]
struct Starts(Mutex<Vec<(String, Instant)>>);

/// Works for a second (read-only).
#[tool(read_only, register = false)]
async fn work(key: String, starts: State<Arc<Starts>>) -> String {
    let starts: &Starts = &starts;
    starts.0.lock().unwrap().push((key.clone(), Instant::now()));
    tokio::time::sleep(Duration::from_secs(1)).await;
    format!("{key} done")
}

/// Builds a timeline's writes.
type Layout = fn() -> Vec<Write>;

/// One write of the answer: at `at` after the request arrived; `block` when it is the last
/// byte of that tool_use block.
struct Write {
    at: Duration,
    text: String,
    block: Option<usize>,
}

/// The first turn on a timeline: block `i` streams over `[start(i), start(i) + span]`, in four
/// pieces, then text until `end`.
fn timeline(starts: [u64; 4], span: u64, end: u64) -> Vec<Write> {
    let ms = Duration::from_millis;
    let mut out = vec![Write {
        at: ms(0),
        text: event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m1", "type": "message",
                "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        block: None,
    }];
    for (i, start) in starts.into_iter().enumerate() {
        let input = json!({"key": format!("k{i}")}).to_string();
        let (head, tail) = input.split_at(input.len() / 2);
        let pieces = [
            event(
                "content_block_start",
                json!({"type": "content_block_start", "index": i, "content_block":
                    {"type": "tool_use", "id": format!("toolu_{i}"), "name": "work", "input": {}}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": head}}),
            ),
            event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": tail}}),
            ),
            event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": i}),
            ),
        ];
        for (n, text) in pieces.into_iter().enumerate() {
            out.push(Write {
                at: ms(start + span * n as u64 / 3),
                text,
                block: (n == 3).then_some(i),
            });
        }
    }
    let text_from = starts[3] + span;
    if end > text_from {
        out.push(Write {
            at: ms(text_from),
            text: event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 4,
                    "content_block": {"type": "text", "text": ""}}),
            ),
            block: None,
        });
        for step in 1..=4 {
            out.push(Write {
                at: ms(text_from + (end - text_from) * step / 4),
                text: event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 4,
                        "delta": {"type": "text_delta", "text": "more words "}}),
                ),
                block: None,
            });
        }
        out.push(Write {
            at: ms(end),
            text: event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 4}),
            ),
            block: None,
        });
    }
    out.push(Write {
        at: ms(end),
        text: [
            event(
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 50}}),
            ),
            event("message_stop", json!({"type": "message_stop"})),
        ]
        .concat(),
        block: None,
    });
    out
}

fn final_turn() -> String {
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m2", "type": "message",
                "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": "All done."}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 3}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

/// What the server saw of one run.
#[derive(Default)]
struct Seen {
    first_request: Option<Instant>,
    second_request: Option<Instant>,
    block_ends: [Option<Instant>; 4],
}

/// Serves the timeline to the first request and the final turn to the second.
async fn serve(listener: TcpListener, writes: Vec<Write>, seen: Arc<Mutex<Seen>>) {
    let mut writes = Some(writes);
    while let Ok((mut socket, _)) = listener.accept().await {
        if read_request_body(&mut socket).await.is_none() {
            continue;
        }
        let arrived = Instant::now();
        let _ = socket
            .write_all(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                  transfer-encoding: chunked\r\nconnection: close\r\n\r\n",
            )
            .await;
        let send = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
        match writes.take() {
            Some(writes) => {
                seen.lock().unwrap().first_request = Some(arrived);
                for write in writes {
                    tokio::time::sleep_until((arrived + write.at).into()).await;
                    let _ = socket.write_all(send(&write.text).as_bytes()).await;
                    let _ = socket.flush().await;
                    if let Some(block) = write.block {
                        seen.lock().unwrap().block_ends[block] = Some(Instant::now());
                    }
                }
            }
            None => {
                seen.lock().unwrap().second_request = Some(arrived);
                let _ = socket.write_all(send(&final_turn()).as_bytes()).await;
            }
        }
        let _ = socket.write_all(b"0\r\n\r\n").await;
        let _ = socket.flush().await;
    }
}

/// One run: (turn time, last byte to tool start of each block).
async fn run_once(writes: Vec<Write>) -> (Duration, Vec<Duration>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = tokio::spawn(serve(listener, writes, seen.clone()));
    let starts = Arc::new(Starts::default());
    let registry = ToolRegistry::new();
    registry.register(Arc::new(WorkTool)).expect("registers");
    let model = AnthropicModel::new("claude-test", "key")
        .with_base_url(format!("http://{addr}"))
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(Arc::new(registry))
            .with_state(starts.clone())
            .limits(|l| l.with_max_turns(2)),
    )
    .await
    .expect("the agent builds");
    let result = agent.prompt("go").await.expect("the run succeeds");
    assert_eq!(result.tool_calls, 4);
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    server.abort();
    let seen = seen.lock().unwrap();
    let turn = seen.second_request.expect("a second request") - seen.first_request.expect("one");
    let starts = starts.0.lock().unwrap();
    let gaps = (0..4)
        .map(|i| {
            let started = starts
                .iter()
                .find(|(key, _)| *key == format!("k{i}"))
                .expect("every tool ran")
                .1;
            started.saturating_duration_since(seen.block_ends[i].expect("every block sent"))
        })
        .collect();
    (turn, gaps)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

fn main() {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|r| r.parse().expect("RUNS"))
        .unwrap_or(5);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let layouts: [(&str, Layout); 2] = [
        ("early", || timeline([0, 250, 500, 750], 250, 2000)),
        ("spread", || timeline([0, 500, 1000, 1500], 500, 2000)),
    ];
    for (name, layout) in layouts {
        let mut turns = Vec::new();
        let mut gaps: Vec<Vec<f64>> = vec![Vec::new(); 4];
        for _ in 0..runs {
            let (turn, gap) = runtime.block_on(run_once(layout()));
            turns.push(turn.as_secs_f64() * 1e3);
            for (i, g) in gap.into_iter().enumerate() {
                gaps[i].push(g.as_secs_f64() * 1e3);
            }
        }
        println!(
            "{}",
            json!({
                "layout": name,
                "runs": runs,
                "turn_ms": median(turns.clone()),
                "turn_ms_all": turns,
                "last_byte_to_start_ms": gaps.into_iter().map(median).collect::<Vec<_>>(),
            })
        );
    }
}
