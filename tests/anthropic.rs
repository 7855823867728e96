//! The Anthropic client against a local mock server: the requests it sends, the recorded and
//! hand-written streams it reads, and its retries.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};
use tool_sdk::ContentBlock;
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::{
    Message, MessageContent, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    RetryPolicy, Role, StopReason, Thinking, ToolSpec, ToolUse, Usage,
};
use tool_sdk::schema::{self, Provider};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

// ---------------------------------------------------------------------------------------------
// Helpers

/// The project's own fixtures.
fn own_fixture(name: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/anthropic")
        .join(name);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

/// The recorded fixtures beside the project (`../shared/fixtures/anthropic`), when present.
fn shared_dir() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/anthropic");
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!(
            "skipping: no recorded fixtures at {} (they live beside the project)",
            dir.display()
        );
        None
    }
}

fn shared_fixture(name: &str) -> Option<String> {
    let file = shared_dir()?.join(name);
    Some(std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display())))
}

fn sse(body: impl Into<Vec<u8>>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into(), "text/event-stream")
}

fn error_body(kind: &str, message: &str) -> Value {
    json!({"type": "error", "error": {"type": kind, "message": message}})
}

fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

async fn server_with(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

fn model_for(server: &MockServer) -> AnthropicModel {
    AnthropicModel::new("claude-test", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none())
}

fn hello() -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user("Hello")].into(),
        max_tokens: 256,
        ..ModelRequest::default()
    }
}

/// Every event until the stream ends, and its error if it ended with one.
async fn run(
    model: &AnthropicModel,
    request: &ModelRequest,
) -> (Vec<ModelEvent>, Option<ModelError>) {
    let mut stream = model.stream(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(stream.next().await.is_none(), "nothing may follow an error");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

/// The turn of a stream that must succeed, checking `Completed` is its last event and only once.
async fn completed(
    model: &AnthropicModel,
    request: &ModelRequest,
) -> (Vec<ModelEvent>, ModelResponse) {
    let (mut events, error) = run(model, request).await;
    assert!(error.is_none(), "{error:?}; events so far: {events:?}");
    let Some(ModelEvent::Completed(response)) = events.pop() else {
        panic!("the last event is not Completed: {events:?}");
    };
    assert!(
        !events.iter().any(|e| matches!(e, ModelEvent::Completed(_))),
        "Completed came twice"
    );
    (events, response)
}

async fn requests(server: &MockServer) -> Vec<Request> {
    server.received_requests().await.unwrap_or_default()
}

async fn only_body(server: &MockServer) -> Value {
    let requests = requests(server).await;
    assert_eq!(requests.len(), 1);
    requests[0].body_json().expect("a JSON body")
}

fn text_deltas(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

fn tool_use(id: &str, name: &str, input: Value) -> MessageContent {
    MessageContent::ToolUse(ToolUse::new(id, name, input))
}

fn text(text: &str) -> MessageContent {
    MessageContent::Text { text: text.into() }
}

// ---------------------------------------------------------------------------------------------
// Requests

fn weather_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city."},
            "unit": {"$ref": "#/$defs/Unit"}
        },
        "required": ["city"],
        "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
    })
}

#[tokio::test]
async fn request_has_headers_lowered_tools_merged_roles_and_tool_results_first() {
    let server = server_with(sse(own_fixture("parallel_tool_use.sse"))).await;
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        temperature: Some(0.7),
        output: None,
        cache: None,
        thinking: Thinking::Off,
        effort: None,
        max_tokens: 1000,
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Looks up the weather.".into(),
            input_schema: weather_schema(),
        }]
        .into(),
        messages: vec![
            Message::user("Weather in Paris and the time?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    MessageContent::Thinking {
                        thinking: "Two tools.".into(),
                        signature: "sig==".into(),
                    },
                    text("Checking."),
                    tool_use("toolu_a", "get_weather", json!({"city": "Paris"})),
                    tool_use("toolu_b", "get_time", json!({})),
                ],
            },
            // The user typed while the tools ran; the results came after.
            Message::user("Hurry please."),
            Message {
                role: Role::User,
                content: vec![MessageContent::ToolResult {
                    tool_use_id: "toolu_b".into(),
                    content: vec![ContentBlock::text("12:00")],
                    is_error: false,
                }],
            },
            Message {
                role: Role::User,
                content: vec![MessageContent::ToolResult {
                    tool_use_id: "toolu_a".into(),
                    content: vec![
                        ContentBlock::text("service down"),
                        ContentBlock::Image {
                            media_type: "image/png".into(),
                            data: "iVBORw0KGgo=".into(),
                        },
                    ],
                    is_error: true,
                }],
            },
            Message {
                role: Role::Assistant,
                content: vec![MessageContent::RedactedThinking {
                    data: "opaque".into(),
                }],
            },
            Message::assistant("It is noon; the weather service is down."),
            Message {
                role: Role::User,
                content: vec![
                    text("What is this?"),
                    MessageContent::Image {
                        media_type: "image/jpeg".into(),
                        data: "/9j/4AAQ".into(),
                    },
                ],
            },
        ]
        .into(),
    };
    let model = model_for(&server);
    completed(&model, &request).await;

    let requests = requests(&server).await;
    assert_eq!(requests.len(), 1);
    let sent = &requests[0];
    assert_eq!(sent.url.path(), "/v1/messages");
    let header = |name: &str| sent.headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("x-api-key"), Some("test-key"));
    assert_eq!(header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(header("content-type"), Some("application/json"));

    let body: Value = sent.body_json().expect("a JSON body");
    assert_eq!(body["model"], "claude-test");
    assert_eq!(body["max_tokens"], 1000);
    assert_eq!(body["stream"], true);
    assert_eq!(body["system"], "Be brief.");
    assert_eq!(body["temperature"], json!(0.7), "no f32 noise");
    assert_eq!(
        body["tools"],
        json!([{
            "name": "get_weather",
            "description": "Looks up the weather.",
            "input_schema": schema::lower(&weather_schema(), Provider::Anthropic),
        }])
    );
    assert_eq!(
        body["tools"][0]["input_schema"]["$defs"]["Unit"]["enum"],
        json!(["c", "f"])
    );

    let messages = body["messages"].as_array().expect("messages");
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user"],
        "alternating"
    );

    // The user message right after the tool calls opens with their results.
    let tool_ids: Vec<&Value> = messages[1]["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| &b["id"])
        .collect();
    assert_eq!(tool_ids, [&json!("toolu_a"), &json!("toolu_b")]);
    let answer = messages[2]["content"].as_array().expect("content");
    assert_eq!(answer[0]["type"], "tool_result");
    assert_eq!(answer[1]["type"], "tool_result");
    assert_eq!(answer[2]["type"], "text", "tool results come first");

    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris and the time?"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Two tools.", "signature": "sig=="},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_a", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "toolu_b", "name": "get_time", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_b",
                 "content": [{"type": "text", "text": "12:00"}]},
                {"type": "tool_result", "tool_use_id": "toolu_a", "is_error": true,
                 "content": [
                     {"type": "text", "text": "service down"},
                     {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
                 ]},
                {"type": "text", "text": "Hurry please."}
            ]},
            {"role": "assistant", "content": [
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "It is noon; the weather service is down."}
            ]},
            {"role": "user", "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/4AAQ"}}
            ]}
        ])
    );
    assert!(
        answer[0].get("is_error").is_none(),
        "is_error is left out when false"
    );
}

#[tokio::test]
async fn request_leaves_out_unset_fields_and_defaults_max_tokens() {
    let server = server_with(sse(own_fixture("thinking.sse"))).await;
    let request = ModelRequest {
        messages: vec![Message::user("Hi")].into(),
        ..ModelRequest::default()
    };
    completed(&model_for(&server), &request).await;
    let body = only_body(&server).await;
    assert_eq!(body["max_tokens"], 4096, "0 means the default");
    for key in ["system", "temperature", "tools"] {
        assert!(body.get(key).is_none(), "{key} should be left out: {body}");
    }

    let server = server_with(sse(own_fixture("thinking.sse"))).await;
    let model = model_for(&server).with_default_max_tokens(2048);
    completed(&model, &request).await;
    assert_eq!(only_body(&server).await["max_tokens"], 2048);
}

#[tokio::test]
async fn base_url_may_end_with_a_slash() {
    let server = server_with(sse(own_fixture("thinking.sse"))).await;
    let model = model_for(&server).with_base_url(format!("{}/", server.uri()));
    completed(&model, &hello()).await;
    assert_eq!(requests(&server).await[0].url.path(), "/v1/messages");
}

// ---------------------------------------------------------------------------------------------
// Recorded streams

#[tokio::test]
async fn recorded_basic_response() {
    let Some(body) = shared_fixture("basic_response.sse") else {
        return;
    };
    // The recording ends without the final blank line; its message_stop still counts.
    assert!(!body.ends_with('\n'));
    let server = server_with(sse(body)).await;
    let (events, response) = completed(&model_for(&server), &hello()).await;
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("Hello".into()),
            ModelEvent::TextDelta(" there".into()),
            ModelEvent::TextDelta("!".into()),
        ]
    );
    assert_eq!(response.content, [text("Hello there!")]);
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 11,
            output_tokens: 6,
            ..Usage::default()
        }
    );
}

#[tokio::test]
async fn recorded_tool_use_response() {
    let Some(body) = shared_fixture("tool_use_response.sse") else {
        return;
    };
    let server = server_with(sse(body)).await;
    let (events, response) = completed(&model_for(&server), &hello()).await;
    assert_eq!(
        events,
        [
            ModelEvent::TextDelta("I".into()),
            ModelEvent::TextDelta("'ll check the current weather in Paris for you.".into()),
            ModelEvent::ToolUseStarted {
                id: "toolu_01NRLabsLyVHZPKxbKvkfSMn".into(),
                name: "get_weather".into(),
            },
            ModelEvent::ToolUseCompleted(ToolUse::new(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"})
            )),
        ]
    );
    assert_eq!(
        response.content,
        [
            text("I'll check the current weather in Paris for you."),
            tool_use(
                "toolu_01NRLabsLyVHZPKxbKvkfSMn",
                "get_weather",
                json!({"location": "Paris"})
            ),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (377, 65)
    );
}

#[tokio::test]
async fn recorded_refusal_response() {
    let Some(body) = shared_fixture("refusal_response.sse") else {
        return;
    };
    let server = server_with(sse(body)).await;
    let (events, response) = completed(&model_for(&server), &hello()).await;
    assert_eq!(events, []);
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert_eq!(response.content, [], "the empty text block is not kept");
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (20, 0)
    );
}

#[tokio::test]
async fn recorded_incomplete_tool_input_becomes_a_malformed_call() {
    let Some(body) = shared_fixture("incomplete_partial_json_response.sse") else {
        return;
    };
    let server = server_with(sse(body)).await;
    let (events, response) = completed(&model_for(&server), &hello()).await;
    assert!(events.contains(&ModelEvent::ToolUseStarted {
        id: "toolu_01EKqbqmZrGRXy18eN7m9kvY".into(),
        name: "make_file".into(),
    }));
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(response.usage.input_tokens, 450);
    assert_eq!(response.usage.output_tokens, 124);
    assert_eq!(response.content.len(), 2, "{:?}", response.content);
    assert!(response.content[0] == text(&text_deltas(&events)));
    let MessageContent::ToolUse(call) = &response.content[1] else {
        panic!("not a tool call: {:?}", response.content[1]);
    };
    assert_eq!(call.name, "make_file");
    assert_eq!(call.input.parsed(), None);
    let raw = call.input.malformed().expect("kept as malformed");
    assert!(raw.starts_with("{\"filename\": \"taxes.txt\""), "{raw}");
    assert!(raw.ends_with("Filing taxes"), "{raw}");
}

/// A recorded request body as our provider-neutral request; `None` when it holds blocks this
/// SDK does not model (server tools).
fn recorded_request(body: &Value) -> Option<ModelRequest> {
    let blocks = |content: &Value| -> Option<Vec<MessageContent>> {
        match content {
            Value::String(s) => Some(vec![text(s)]),
            Value::Array(items) => items
                .iter()
                .map(|b| match b["type"].as_str()? {
                    "text" => Some(text(b["text"].as_str()?)),
                    "tool_use" => Some(tool_use(
                        b["id"].as_str()?,
                        b["name"].as_str()?,
                        b["input"].clone(),
                    )),
                    "tool_result" => Some(MessageContent::ToolResult {
                        tool_use_id: b["tool_use_id"].as_str()?.into(),
                        content: vec![ContentBlock::text(b["content"].as_str()?)],
                        is_error: b["is_error"].as_bool().unwrap_or(false),
                    }),
                    _ => None,
                })
                .collect(),
            _ => None,
        }
    };
    let messages = body["messages"]
        .as_array()?
        .iter()
        .map(|m| {
            Some(Message {
                role: if m["role"] == "assistant" {
                    Role::Assistant
                } else {
                    Role::User
                },
                content: blocks(&m["content"])?,
            })
        })
        .collect::<Option<Vec<_>>>()?;
    let tools = body["tools"]
        .as_array()?
        .iter()
        .map(|t| ToolSpec {
            name: t["name"].as_str().unwrap_or_default().into(),
            description: t["description"].as_str().unwrap_or_default().into(),
            input_schema: t["input_schema"].clone(),
        })
        .collect();
    Some(ModelRequest {
        system: None,
        messages: messages.into(),
        tools,
        max_tokens: u32::try_from(body["max_tokens"].as_u64()?).ok()?,
        temperature: None,
        output: None,
        cache: None,
        thinking: Thinking::Off,
        effort: None,
    })
}

/// A recorded message as this client writes it: string content as one text block, no
/// `caller` (an SDK-side field).
fn normalized(message: &Value) -> Value {
    let as_blocks = |content: &Value| match content {
        Value::String(s) => json!([{"type": "text", "text": s}]),
        other => other.clone(),
    };
    let content: Vec<Value> = as_blocks(&message["content"])
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut block| {
            if let Value::Object(map) = &mut block {
                map.remove("caller");
                if let Some(inner) = map.get("content").cloned()
                    && map.get("type") == Some(&json!("tool_result"))
                {
                    map.insert("content".into(), as_blocks(&inner));
                }
            }
            block
        })
        .collect();
    json!({"role": message["role"], "content": content})
}

#[tokio::test]
async fn recorded_multiturn_runs() {
    let Some(dir) = shared_dir() else {
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("readable")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("multiturn-") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no multiturn recordings in {}",
        dir.display()
    );

    let (mut requests_checked, mut streams_checked) = (0, 0);
    for file in &files {
        let name = file.display();
        let pairs: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(file).expect("readable")).expect("JSON");
        for (turn, pair) in pairs.iter().enumerate() {
            let recorded_body = &pair["request"]["body"];
            let Some(request) = recorded_request(recorded_body) else {
                continue; // server tool blocks in the history
            };
            // Streamed recordings are served as recorded; the others get a small stream.
            let response = match pair["response"]["body"].as_str() {
                Some(sse_body) => sse_body.to_owned(),
                None => own_fixture("thinking.sse"),
            };
            let server = server_with(sse(response)).await;
            let (events, response) = completed(&model_for(&server), &request).await;

            let sent = only_body(&server).await;
            let expected: Vec<Value> = recorded_body["messages"]
                .as_array()
                .expect("messages")
                .iter()
                .map(normalized)
                .collect();
            assert_eq!(
                sent["messages"],
                Value::Array(expected),
                "{name} turn {turn}"
            );
            // Only what this SDK models (not beta fields such as `allowed_callers`).
            let recorded_tools: Vec<Value> = recorded_body["tools"]
                .as_array()
                .expect("tools")
                .iter()
                .map(|t| {
                    json!({
                        "name": t["name"],
                        "description": t["description"],
                        "input_schema": t["input_schema"],
                    })
                })
                .collect();
            assert_eq!(
                sent["tools"],
                Value::Array(recorded_tools),
                "{name} turn {turn}"
            );
            assert_eq!(sent["max_tokens"], recorded_body["max_tokens"]);
            requests_checked += 1;

            if pair["response"]["body"].is_string() {
                streams_checked += 1;
                match pairs.get(turn + 1) {
                    // The next request echoes this turn: the recording SDK's reading of the
                    // stream, which ours must match.
                    Some(next) => {
                        let echoed = &next["request"]["body"]["messages"];
                        let echoed = echoed
                            .as_array()
                            .and_then(|m| m.iter().rev().find(|m| m["role"] == "assistant"))
                            .expect("the echoed assistant turn");
                        let mine = json!({
                            "role": "assistant",
                            "content": response.content.iter().map(|c| match c {
                                MessageContent::ToolUse(t) => json!({"type": "tool_use", "id": t.id, "name": t.name, "input": t.input.json_or_empty()}),
                                MessageContent::Text { text } => json!({"type": "text", "text": text}),
                                other => panic!("unexpected {other:?}"),
                            }).collect::<Vec<_>>(),
                        });
                        assert_eq!(mine, normalized(echoed), "{name} turn {turn}");
                        assert_eq!(response.stop_reason, StopReason::ToolUse);
                        let started: Vec<&ModelEvent> = events
                            .iter()
                            .filter(|e| matches!(e, ModelEvent::ToolUseStarted { .. }))
                            .collect();
                        assert_eq!(started.len(), 1, "{name} turn {turn}: {events:?}");
                    }
                    // The last turn answers in text.
                    None => {
                        assert_eq!(response.stop_reason, StopReason::EndTurn);
                        let [MessageContent::Text { text }] = response.content.as_slice() else {
                            panic!("{name}: {:?}", response.content);
                        };
                        assert_eq!(text, &text_deltas(&events));
                        assert!(
                            text.starts_with("The weather in San Francisco, CA is"),
                            "{text}"
                        );
                        assert_eq!(response.usage.input_tokens, 770);
                    }
                }
            }
        }
    }
    assert!(
        requests_checked >= 6,
        "only {requests_checked} recorded requests checked"
    );
    assert!(
        streams_checked >= 4,
        "only {streams_checked} recorded streams checked"
    );
}

// ---------------------------------------------------------------------------------------------
// Hand-written streams

fn expected_parallel_content() -> Vec<MessageContent> {
    vec![
        text("Checking both cities."),
        tool_use(
            "toolu_hand_paris",
            "get_weather",
            json!({"city": "Paris", "days": 2}),
        ),
        tool_use("toolu_hand_tokyo", "get_weather", json!({"city": "Tokyo"})),
        tool_use("toolu_hand_clock", "get_time", json!({})),
    ]
}

#[tokio::test]
async fn parallel_tool_calls_are_assembled_by_index() {
    let body = own_fixture("parallel_tool_use.sse");
    // As written (LF, trailing spaces after some data lines), and with CRLF line ends.
    for body in [body.clone(), body.replace('\n', "\r\n")] {
        let server = server_with(sse(body)).await;
        let (events, response) = completed(&model_for(&server), &hello()).await;
        assert_eq!(
            events,
            [
                ModelEvent::TextDelta("Checking both".into()),
                ModelEvent::TextDelta(" cities.".into()),
                ModelEvent::ToolUseStarted {
                    id: "toolu_hand_paris".into(),
                    name: "get_weather".into()
                },
                ModelEvent::ToolUseStarted {
                    id: "toolu_hand_tokyo".into(),
                    name: "get_weather".into()
                },
                // Blocks 1 and 2 stream interleaved and stop in reverse order: no call is
                // said to be whole before the turn is (none could start early).
                ModelEvent::ToolUseStarted {
                    id: "toolu_hand_clock".into(),
                    name: "get_time".into()
                },
            ]
        );
        assert_eq!(response.content, expected_parallel_content());
        assert_eq!(response.stop_reason, StopReason::ToolUse);
        assert_eq!(
            response.usage,
            Usage {
                input_tokens: 120,
                output_tokens: 88,
                cache_read_input_tokens: 100,
                cache_creation_input_tokens: 7,
            }
        );
    }
}

#[tokio::test]
async fn comments_and_extra_blank_lines_are_ignored() {
    // Keep-alive comments and doubled blank lines, as proxies may add.
    let body = own_fixture("parallel_tool_use.sse").replace("\n\n", "\n: keep-alive\n\n\n");
    let server = server_with(sse(body)).await;
    let (_, response) = completed(&model_for(&server), &hello()).await;
    assert_eq!(response.content, expected_parallel_content());
}

#[tokio::test]
async fn thinking_is_kept_with_its_signature_and_unknown_events_are_ignored() {
    let server = server_with(sse(own_fixture("thinking.sse"))).await;
    let (events, response) = completed(&model_for(&server), &hello()).await;
    assert_eq!(
        events,
        [
            ModelEvent::ThinkingDelta("The user wants".into()),
            ModelEvent::ThinkingDelta(" a number.".into()),
            ModelEvent::TextDelta("42".into()),
        ]
    );
    assert_eq!(
        response.content,
        [
            MessageContent::Thinking {
                thinking: "The user wants a number.".into(),
                signature: "EqQBCgIYAhIM4AE".into(),
            },
            MessageContent::RedactedThinking {
                data: "EmwKAhgBEgy3va3pzix".into()
            },
            text("42"),
        ]
    );
    assert_eq!(response.stop_reason, StopReason::StopSequence);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (40, 30)
    );
}

#[tokio::test]
async fn an_overloaded_error_event_mid_stream_ends_the_stream() {
    let server = server_with(sse(own_fixture("overloaded_mid_stream.sse"))).await;
    let model = model_for(&server).with_retry(fast_retries(3));
    let (events, error) = run(&model, &hello()).await;
    assert_eq!(events, [ModelEvent::TextDelta("Partial answ".into())]);
    assert!(
        matches!(
            &error,
            Some(ModelError::Overloaded { message, retry_after: None }) if message == "Anthropic: Overloaded"
        ),
        "{error:?}"
    );
    assert_eq!(
        requests(&server).await.len(),
        1,
        "text already went out; the turn is not replayed"
    );
}

#[tokio::test]
async fn a_stream_without_message_stop_fails() {
    let server = server_with(sse(own_fixture("cut_before_message_stop.sse"))).await;
    let (events, error) = run(&model_for(&server), &hello()).await;
    assert_eq!(events, [ModelEvent::TextDelta("All done".into())]);
    let Some(ModelError::Stream { message, .. }) = error else {
        panic!("expected a stream error, got {error:?}");
    };
    assert!(message.contains("ended before message_stop"), "{message}");
}

#[tokio::test]
async fn a_stream_cut_mid_event_fails() {
    let server = server_with(sse(own_fixture("cut_mid_event.sse"))).await;
    let (events, error) = run(&model_for(&server), &hello()).await;
    assert_eq!(events, [ModelEvent::TextDelta("Hello".into())]);
    assert!(
        matches!(error, Some(ModelError::Stream { .. })),
        "expected a stream error, got {error:?}"
    );
}

#[tokio::test]
async fn an_empty_200_body_fails() {
    let server = server_with(sse("")).await;
    let (events, error) = run(&model_for(&server), &hello()).await;
    assert_eq!(events, []);
    assert!(
        matches!(error, Some(ModelError::Stream { message: m, .. }) if m.contains("message_stop"))
    );
}

// ---------------------------------------------------------------------------------------------
// HTTP errors and retries

#[tokio::test]
async fn a_429_with_retry_after_0_is_retried_at_once() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(error_body(
                    "rate_limit_error",
                    "Number of requests exceeded",
                )),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(own_fixture("thinking.sse")))
        .mount(&server)
        .await;
    // A backoff long enough that ignoring `retry-after: 0` would show.
    let model = model_for(&server).with_retry(RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_secs(20),
        max_backoff: Duration::from_secs(60),
    });
    let started = Instant::now();
    let (_, response) = completed(&model, &hello()).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "retry-after was not honoured: {:?}",
        started.elapsed()
    );
    assert_eq!(response.content.last(), Some(&text("42")));
    let requests = requests(&server).await;
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
}

#[tokio::test]
async fn a_429_without_retries_reports_the_wait() {
    let server = server_with(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .set_body_json(error_body("rate_limit_error", "Slow down")),
    )
    .await;
    let (_, error) = run(&model_for(&server), &hello()).await;
    assert!(
        matches!(
            &error,
            Some(ModelError::RateLimited { message, retry_after })
                if message == "Anthropic: Slow down" && *retry_after == Some(Duration::from_secs(7))
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn server_errors_are_retried_until_the_retries_run_out() {
    let server = server_with(
        ResponseTemplate::new(500).set_body_json(error_body("api_error", "Internal server error")),
    )
    .await;
    let model = model_for(&server).with_retry(fast_retries(2));
    let (events, error) = run(&model, &hello()).await;
    assert_eq!(events, []);
    assert!(
        matches!(
            &error,
            Some(ModelError::Server { status: 500, message }) if message == "Anthropic: Internal server error"
        ),
        "{error:?}"
    );
    assert_eq!(
        requests(&server).await.len(),
        3,
        "one attempt and two retries"
    );
}

#[tokio::test]
async fn a_529_is_overloaded_and_retried() {
    let server = server_with(
        ResponseTemplate::new(529).set_body_json(error_body("overloaded_error", "Overloaded")),
    )
    .await;
    let model = model_for(&server).with_retry(fast_retries(1));
    let (_, error) = run(&model, &hello()).await;
    assert!(
        matches!(
            &error,
            Some(ModelError::Overloaded { message, retry_after: None }) if message == "Anthropic: Overloaded"
        ),
        "{error:?}"
    );
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn a_400_is_not_retried_and_keeps_the_provider_message() {
    let server = server_with(ResponseTemplate::new(400).set_body_json(error_body(
        "invalid_request_error",
        "messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks",
    )))
    .await;
    let model = model_for(&server).with_retry(fast_retries(3));
    let (events, error) = run(&model, &hello()).await;
    assert_eq!(events, []);
    assert!(
        matches!(
            &error,
            Some(ModelError::Api { status: 400, message })
                if message == "Anthropic: messages.1.content.0: unexpected `tool_use_id` found in `tool_result` blocks"
        ),
        "{error:?}"
    );
    assert_eq!(requests(&server).await.len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn an_error_body_that_is_not_json_is_quoted() {
    let server =
        server_with(ResponseTemplate::new(502).set_body_string("upstream connect error")).await;
    let (_, error) = run(&model_for(&server), &hello()).await;
    assert!(
        matches!(
            &error,
            Some(ModelError::Server { status: 502, message }) if message == "Anthropic: upstream connect error"
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let port = listener.local_addr().expect("an address").port();
    drop(listener);
    let model = AnthropicModel::new("claude-test", "test-key")
        .with_base_url(format!("http://127.0.0.1:{port}"))
        .with_retry(RetryPolicy::none());
    let (events, error) = run(&model, &hello()).await;
    assert_eq!(events, []);
    assert!(
        matches!(&error, Some(ModelError::Transport { .. })),
        "expected a transport error, got {error:?}"
    );
}

#[tokio::test]
async fn an_empty_api_key_is_reported_before_any_request() {
    let server = server_with(sse(own_fixture("thinking.sse"))).await;
    let model = AnthropicModel::new("claude-test", "")
        .with_base_url(server.uri())
        .with_retry(fast_retries(2));
    let (_, error) = run(&model, &hello()).await;
    assert!(
        matches!(error, Some(ModelError::MissingApiKey(_))),
        "{error:?}"
    );
    assert_eq!(requests(&server).await.len(), 0);
}

// ---------------------------------------------------------------------------------------------
// Configuration from the environment, checked in child processes (this crate forbids the
// `unsafe` that `std::env::set_var` needs).

const CHILD: &str = "TOOL_SDK_ANTHROPIC_ENV_CHILD";

#[test]
fn from_env_reads_the_key_and_base_url() {
    let run_child = |vars: &[(&str, &str)], expect: &str| {
        let mut command = std::process::Command::new(std::env::current_exe().expect("test exe"));
        command
            .args([
                "--exact",
                "from_env_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("ANTHROPIC_BASE_URL")
            .env(CHILD, expect);
        for (key, value) in vars {
            command.env(key, value);
        }
        let output = command.output().expect("the child runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success() && stdout.contains("1 passed"),
            "child ({expect}) failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    run_child(&[], "missing");
    run_child(&[("ANTHROPIC_API_KEY", "")], "missing");
    run_child(&[("ANTHROPIC_API_KEY", "sk-test")], "default");
    run_child(
        &[
            ("ANTHROPIC_API_KEY", "sk-test"),
            ("ANTHROPIC_BASE_URL", "http://proxy.test:8080/"),
        ],
        "proxy",
    );
}

#[test]
fn from_env_child() {
    let Ok(expect) = std::env::var(CHILD) else {
        return; // only meaningful in the child processes above
    };
    let model = AnthropicModel::from_env("claude-test");
    match expect.as_str() {
        "missing" => {
            let Err(ModelError::MissingApiKey(message)) = model else {
                panic!("expected MissingApiKey, got {model:?}");
            };
            assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
        }
        "default" => {
            let model = model.expect("a model");
            assert_eq!(model.base_url(), "https://api.anthropic.com");
            assert_eq!(model.model_id(), "claude-test");
            assert!(
                !format!("{model:?}").contains("sk-test"),
                "the key is not printed"
            );
        }
        "proxy" => assert_eq!(model.expect("a model").base_url(), "http://proxy.test:8080"),
        other => panic!("unknown child case {other}"),
    }
}
