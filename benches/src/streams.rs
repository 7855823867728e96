//! The model clients side by side: each client's own wire format served by a local server,
//! read by the real client. Per event: one streamed turn of [`EVENTS`] text deltas. Per step:
//! the whole agent loop over a conversation of tool turns, each request answered in the
//! client's format.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::gemini::GeminiModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::openai_responses::OpenAiResponsesModel;
use tool_sdk::model::{Message, Model, ModelEvent, ModelRequest};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::add_registry;

/// Text deltas in the per-event stream.
pub const EVENTS: usize = 10_000;

/// One client: how its server is reached and how its provider streams.
#[derive(Clone, Copy)]
pub struct Client {
    /// Its name in the report.
    pub name: &'static str,
    /// The path its requests go to.
    path: &'static str,
    /// The client of a server at this address.
    model: fn(&str) -> Arc<dyn Model>,
    /// A turn of `n` text deltas.
    text: fn(usize) -> String,
    /// A turn calling `add` once, with this call id.
    call: fn(&str) -> String,
}

/// Every client measured.
pub const CLIENTS: &[Client] = &[
    Client {
        name: "anthropic",
        path: "/v1/messages",
        model: |uri| {
            Arc::new(AnthropicModel::new("claude-sonnet-4-5", "bench-key").with_base_url(uri))
        },
        text: anthropic_text,
        call: anthropic_call,
    },
    Client {
        name: "openai-chat",
        path: "/v1/chat/completions",
        model: |uri| {
            Arc::new(
                OpenAiModel::new("gpt-4.1", Some("bench-key".into()))
                    .with_base_url(format!("{uri}/v1")),
            )
        },
        text: openai_text,
        call: openai_call,
    },
    Client {
        name: "openai-responses",
        path: "/v1/responses",
        model: |uri| {
            Arc::new(
                OpenAiResponsesModel::new("gpt-5", "bench-key").with_base_url(format!("{uri}/v1")),
            )
        },
        text: responses_text,
        call: responses_call,
    },
    Client {
        name: "gemini",
        path: "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
        model: |uri| {
            Arc::new(
                GeminiModel::new("gemini-2.5-flash", "bench-key")
                    .with_base_url(format!("{uri}/v1beta")),
            )
        },
        text: gemini_text,
        call: gemini_call,
    },
];

fn sse(name: Option<&str>, data: &Value) -> String {
    match name {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

fn anthropic_turn(blocks: impl FnOnce(&mut String), reason: &str) -> String {
    let mut body = sse(
        Some("message_start"),
        &json!({"type": "message_start", "message": {"id": "msg_bench", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    blocks(&mut body);
    body.push_str(&sse(
        Some("message_delta"),
        &json!({"type": "message_delta", "delta": {"stop_reason": reason},
            "usage": {"output_tokens": 50}}),
    ));
    body.push_str(&sse(Some("message_stop"), &json!({"type": "message_stop"})));
    body
}

fn anthropic_text(n: usize) -> String {
    anthropic_turn(
        |body| {
            body.push_str(&sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            ));
            let delta = sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": "word "}}),
            );
            for _ in 0..n {
                body.push_str(&delta);
            }
            body.push_str(&sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ));
        },
        "end_turn",
    )
}

fn anthropic_call(id: &str) -> String {
    anthropic_turn(
        |body| {
            body.push_str(&sse(
                Some("content_block_start"),
                &json!({"type": "content_block_start", "index": 0, "content_block":
                    {"type": "tool_use", "id": id, "name": "add", "input": {}}}),
            ));
            body.push_str(&sse(
                Some("content_block_delta"),
                &json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"a\":1,\"b\":2}"}}),
            ));
            body.push_str(&sse(
                Some("content_block_stop"),
                &json!({"type": "content_block_stop", "index": 0}),
            ));
        },
        "tool_use",
    )
}

fn openai_chunk(delta: Value, finish: Value) -> String {
    sse(
        None,
        &json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
            "model": "gpt-4.1", "choices": [{"index": 0, "delta": delta,
            "finish_reason": finish}]}),
    )
}

fn openai_end(body: &mut String, finish: &str) {
    body.push_str(&openai_chunk(json!({}), json!(finish)));
    body.push_str(&sse(
        None,
        &json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "model": "gpt-4.1",
            "choices": [], "usage": {"prompt_tokens": 100, "completion_tokens": 50,
            "total_tokens": 150}}),
    ));
    body.push_str("data: [DONE]\n\n");
}

fn openai_text(n: usize) -> String {
    let mut body = openai_chunk(json!({"role": "assistant", "content": ""}), Value::Null);
    let delta = openai_chunk(json!({"content": "word "}), Value::Null);
    for _ in 0..n {
        body.push_str(&delta);
    }
    openai_end(&mut body, "stop");
    body
}

fn openai_call(id: &str) -> String {
    let mut body = openai_chunk(
        json!({"role": "assistant", "tool_calls": [{"index": 0, "id": id, "type": "function",
            "function": {"name": "add", "arguments": "{\"a\":1,\"b\":2}"}}]}),
        Value::Null,
    );
    openai_end(&mut body, "tool_calls");
    body
}

fn gemini_chunk(parts: Value, finish: Option<&str>) -> String {
    let mut candidate = json!({"index": 0, "content": {"parts": parts, "role": "model"}});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    let mut chunk = json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash"});
    if finish.is_some() {
        chunk["usageMetadata"] =
            json!({"promptTokenCount": 100, "candidatesTokenCount": 50, "totalTokenCount": 150});
    }
    sse(None, &chunk)
}

fn gemini_text(n: usize) -> String {
    let delta = gemini_chunk(json!([{"text": "word "}]), None);
    let mut body = String::new();
    for _ in 1..n {
        body.push_str(&delta);
    }
    body.push_str(&gemini_chunk(json!([{"text": "word "}]), Some("STOP")));
    body
}

fn gemini_call(_id: &str) -> String {
    gemini_chunk(
        json!([{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}]),
        Some("STOP"),
    )
}

fn responses_event(event: Value) -> String {
    let name = event["type"].as_str().unwrap_or_default().to_owned();
    sse(Some(&name), &event)
}

/// A whole Responses stream: created, the items' events, completed with the items and usage.
fn responses_turn(events: impl FnOnce(&mut String), output: Value) -> String {
    let response = |status: &str, output: Value| {
        json!({"id": "resp_bench", "object": "response", "status": status, "model": "gpt-5",
            "output": output, "usage": {"input_tokens": 100, "output_tokens": 50,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}})
    };
    let mut body = responses_event(
        json!({"type": "response.created", "response": response("in_progress", json!([]))}),
    );
    events(&mut body);
    body.push_str(&responses_event(
        json!({"type": "response.completed", "response": response("completed", output)}),
    ));
    body
}

fn responses_text(n: usize) -> String {
    let item = |text: &str| {
        json!({"id": "msg_bench", "type": "message", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]})
    };
    responses_turn(
        |body| {
            body.push_str(&responses_event(
                json!({"type": "response.output_item.added",
                "output_index": 0, "item": {"id": "msg_bench", "type": "message",
                "status": "in_progress", "role": "assistant", "content": []}}),
            ));
            let delta = responses_event(json!({"type": "response.output_text.delta",
                "item_id": "msg_bench", "output_index": 0, "content_index": 0,
                "delta": "word "}));
            for _ in 0..n {
                body.push_str(&delta);
            }
            body.push_str(&responses_event(
                json!({"type": "response.output_item.done",
                "output_index": 0, "item": item(&"word ".repeat(n))}),
            ));
        },
        json!([item(&"word ".repeat(n))]),
    )
}

fn responses_call(id: &str) -> String {
    let item = json!({"id": "fc_bench", "type": "function_call", "status": "completed",
        "call_id": id, "name": "add", "arguments": "{\"a\":1,\"b\":2}"});
    let added = json!({"id": "fc_bench", "type": "function_call", "status": "in_progress",
        "call_id": id, "name": "add", "arguments": ""});
    responses_turn(
        |body| {
            body.push_str(&responses_event(
                json!({"type": "response.output_item.added",
                "output_index": 0, "item": added}),
            ));
            body.push_str(&responses_event(json!({"type":
                "response.function_call_arguments.delta", "item_id": "fc_bench",
                "output_index": 0, "delta": "{\"a\":1,\"b\":2}"})));
            body.push_str(&responses_event(
                json!({"type": "response.output_item.done",
                "output_index": 0, "item": item.clone()}),
            ));
        },
        json!([item]),
    )
}

/// Answers requests in a cycle: `turns` calling turns, then a text turn, again and again.
struct Cycle {
    bodies: Vec<String>,
    next: AtomicUsize,
}

impl Respond for Cycle {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let at = self.next.fetch_add(1, Ordering::Relaxed) % self.bodies.len();
        ResponseTemplate::new(200).set_body_raw(self.bodies[at].clone(), "text/event-stream")
    }
}

async fn serve(client: &Client, bodies: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(wiremock::matchers::path(client.path))
        .respond_with(Cycle {
            bodies,
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

/// A server streaming one turn of [`EVENTS`] text deltas to every request, and its client.
pub async fn text_stream(client: &Client) -> (MockServer, Arc<dyn Model>) {
    let server = serve(client, vec![(client.text)(EVENTS)]).await;
    let model = (client.model)(&server.uri());
    (server, model)
}

/// Reads `iters` streamed turns; returns the time spent reading them.
pub async fn read_streams(model: &dyn Model, iters: u64) -> Duration {
    let request = ModelRequest {
        messages: vec![Message::user("go")].into(),
        max_tokens: 1024,
        ..ModelRequest::default()
    };
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let started = Instant::now();
        let mut deltas = 0;
        let mut stream = model.stream(&request);
        while let Some(event) = stream.next().await {
            match event.expect("the stream reads") {
                ModelEvent::TextDelta(_) => deltas += 1,
                ModelEvent::Completed(_) => break,
                _ => {}
            }
        }
        total += started.elapsed();
        assert_eq!(deltas, EVENTS);
    }
    total
}

/// A server playing `turns` turns of one `add` call each, then a text turn, to every run.
pub async fn loop_server(client: &Client, turns: usize) -> MockServer {
    let mut bodies: Vec<String> = (0..turns)
        .map(|t| (client.call)(&format!("call_{t}")))
        .collect();
    bodies.push((client.text)(1));
    serve(client, bodies).await
}

/// Runs the agent over `server` `iters` times; returns the time spent in `Agent::prompt`.
pub async fn loop_runs(client: &Client, server: &MockServer, turns: usize, iters: u64) -> Duration {
    let registry = add_registry();
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let config = AgentConfig::new()
            .with_model((client.model)(&server.uri()))
            .with_registry(registry.clone())
            .with_tools(["add"])
            .limits(|l| l.with_max_turns(turns as u32 + 1));
        let agent = Agent::create(config).await.expect("the agent builds");
        let started = Instant::now();
        let result = agent.prompt("go").await.expect("the run succeeds");
        total += started.elapsed();
        assert_eq!(result.tool_calls, turns, "{}", client.name);
    }
    total
}
