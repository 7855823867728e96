//! The agent over real HTTP clients: a local server replays provider streams (the recorded
//! ones when `../shared/fixtures` is there, hand-written ones otherwise) and the test checks
//! what the client sent back: tool schemas, and each tool_result right after its tool_use.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::{Model, RetryPolicy};
use tool_sdk::{ToolRegistry, tool};
use wiremock::matchers::{body_string_contains, method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// Gets the weather for a city.
#[tool(name = "GetWeatherArgs", register = false, read_only)]
async fn get_weather(city: String, country: String, units: String) -> String {
    format!("{city}, {country}: 14 degrees {units}, drizzle")
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// The recorded OpenAI stream of one `GetWeatherArgs` call, or a hand-written stand-in.
fn openai_tool_call_stream() -> String {
    let recorded = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/openai-chat/single_tool_call.sse");
    std::fs::read_to_string(recorded).unwrap_or_else(|_| {
        let chunk = |delta: Value, finish: Value| {
            format!(
                "data: {}\n\n",
                json!({"id": "c1", "object": "chat.completion.chunk", "choices": [
                    {"index": 0, "delta": delta, "finish_reason": finish}]})
            )
        };
        [
            chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
                    "type": "function", "function": {"name": "GetWeatherArgs", "arguments": ""}}]}),
                Value::Null,
            ),
            chunk(
                json!({"tool_calls": [{"index": 0, "function": {"arguments":
                    "{\"city\":\"Edinburgh\",\"country\":\"UK\",\"units\":\"c\"}"}}]}),
                Value::Null,
            ),
            chunk(json!({}), json!("tool_calls")),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat()
    })
}

fn openai_text_stream(text: &str) -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c2", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        json!({"id": "c2", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    )
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

fn agent_config(model: impl Model) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GetWeatherTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
}

#[tokio::test]
async fn openai_agent_runs_a_tool_and_sends_the_result_back() {
    let server = MockServer::start().await;
    // The second request carries the tool result; the first does not.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("tool_call_id"))
        .respond_with(sse(openai_text_stream(
            "Drizzly and 14 degrees in Edinburgh.",
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(openai_tool_call_stream()))
        .expect(1)
        .mount(&server)
        .await;

    let model = OpenAiModel::new("gpt-4o", None)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(agent_config(model)).await.unwrap();
    let result = agent.prompt("Weather in Edinburgh?").await.unwrap();
    assert_eq!(result.text, "Drizzly and 14 degrees in Edinburgh.");
    assert_eq!(result.tool_calls, 1);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first = body(&requests[0]);
    assert_eq!(first["tools"][0]["function"]["name"], "GetWeatherArgs");
    assert_eq!(
        first["tools"][0]["function"]["parameters"]["required"],
        json!(["city", "country", "units"])
    );
    let second = body(&requests[1]);
    let messages = second["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    let call_id = messages[1]["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(messages[2]["tool_call_id"], call_id);
    assert_eq!(
        messages[2]["content"],
        "Edinburgh, UK: 14 degrees c, drizzle"
    );
}

#[tokio::test]
async fn a_provider_error_ends_the_run_with_its_message() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(
            json!({"error": {"message": "Invalid schema for function 'GetWeatherArgs'", "type": "invalid_request_error"}}),
        ))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("gpt-4o", None).with_base_url(format!("{}/v1", server.uri()));
    let agent = Agent::create(agent_config(model)).await.unwrap();
    let error = agent.prompt("Weather?").await.unwrap_err().to_string();
    assert!(error.contains("HTTP 400"), "{error}");
    assert!(
        error.contains("Invalid schema for function 'GetWeatherArgs'"),
        "{error}"
    );
}

/// Gets the weather for a location (the tool the recorded Anthropic stream calls).
#[tool(name = "get_weather", register = false, read_only)]
async fn get_weather_at(location: String) -> String {
    format!("{location}: 18 degrees, clear")
}

/// The recorded Anthropic stream of one `get_weather` call, or a hand-written stand-in.
fn anthropic_tool_use_stream() -> String {
    let recorded = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/anthropic/tool_use_response.sse");
    std::fs::read_to_string(recorded).unwrap_or_else(|_| {
        let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
        [
            event("message_start", json!({"type": "message_start", "message": {"id": "m1",
                "type": "message", "role": "assistant", "model": "claude", "content": [],
                "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}})),
            event("content_block_start", json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                "input": {}}})),
            event("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": ""}})),
            event("content_block_delta", json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": "{\"location\": \"Paris\"}"}})),
            event("content_block_stop", json!({"type": "content_block_stop", "index": 0})),
            event("message_delta", json!({"type": "message_delta",
                "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}})),
            event("message_stop", json!({"type": "message_stop"})),
        ]
        .concat()
    })
}

fn anthropic_text_stream(text: &str) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m2",
            "type": "message", "role": "assistant", "model": "claude", "content": [],
            "stop_reason": null, "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": ""}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
            "delta": {"type": "text_delta", "text": text}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta",
            "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 8}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

#[tokio::test]
async fn anthropic_agent_runs_a_tool_and_sends_the_result_right_after_its_tool_use() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(body_string_contains("tool_result"))
        .respond_with(sse(anthropic_text_stream(
            "Clear skies in Paris, 18 degrees.",
        )))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(anthropic_tool_use_stream()))
        .expect(1)
        .mount(&server)
        .await;

    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none());
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GetWeatherAtTool)).unwrap();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(Arc::new(registry)),
    )
    .await
    .unwrap();
    let result = agent.prompt("Weather in Paris?").await.unwrap();
    assert_eq!(result.text, "Clear skies in Paris, 18 degrees.");
    assert!(result.usage.input_tokens >= 30, "{:?}", result.usage);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].headers["x-api-key"], "test-key");
    let first = body(&requests[0]);
    assert_eq!(first["tools"][0]["name"], "get_weather");
    assert_eq!(
        first["tools"][0]["input_schema"]["required"],
        json!(["location"])
    );
    let second = body(&requests[1]);
    let messages = second["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let tool_use = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|block| block["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool_use["input"], json!({"location": "Paris"}));
    let result_block = &messages[2]["content"][0];
    assert_eq!(result_block["type"], "tool_result");
    assert_eq!(result_block["tool_use_id"], tool_use["id"]);
    assert_eq!(
        result_block["content"][0]["text"],
        "Paris: 18 degrees, clear"
    );
}

// ---------------------------------------------------------------------------------------------
// Calls started while the turn still streams (issue #15). The server waits on the tools (or
// on a generous timeout) between blocks, and both write into one log, so each test checks an
// order of events, never a duration.

mod early {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use futures::StreamExt;
    use serde_json::json;
    use tests::stream_server::{Piece, StreamServer, anthropic};
    use tokio::sync::Notify;
    use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent};
    use tool_sdk::model::anthropic::AnthropicModel;
    use tool_sdk::model::{MessageContent, RetryPolicy, Role};
    use tool_sdk::session::{Record, SessionStore, SqliteStore};
    use tool_sdk::{State, ToolErrorKind, ToolRegistry, tool};

    /// What the tools of a test share with it and with the server.
    struct Probe {
        log: Arc<Mutex<Vec<String>>>,
        started: Notify,
    }

    impl Probe {
        fn new() -> Arc<Probe> {
            Arc::new(Probe {
                log: Arc::new(Mutex::new(Vec::new())),
                started: Notify::new(),
            })
        }

        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }

        /// Waits until a tool has started, or 10 s (then the test's order check fails).
        fn tool_started(self: &Arc<Self>) -> Piece {
            let probe = self.clone();
            Piece::wait(async move {
                let _ =
                    tokio::time::timeout(Duration::from_secs(10), probe.started.notified()).await;
            })
        }

        /// Waits half a second for a tool that should not start (it would log first).
        fn pause() -> Piece {
            Piece::wait(tokio::time::sleep(Duration::from_millis(500)))
        }
    }

    /// Looks something up (read-only): logs its start, then answers, or with `hold` waits
    /// until cancelled.
    #[tool(register = false, read_only)]
    async fn look(key: String, hold: Option<bool>, probe: State<Arc<Probe>>) -> String {
        probe
            .log
            .lock()
            .unwrap()
            .push(format!("look {key} started"));
        probe.started.notify_one();
        if hold == Some(true) {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        format!("{key} found")
    }

    /// Changes something (not read-only).
    #[tool(register = false)]
    async fn change(key: String, probe: State<Arc<Probe>>) -> String {
        probe
            .log
            .lock()
            .unwrap()
            .push(format!("change {key} started"));
        probe.started.notify_one();
        format!("{key} changed")
    }

    fn config(server: &StreamServer, probe: &Arc<Probe>) -> AgentConfig {
        let registry = ToolRegistry::new();
        registry.register(Arc::new(LookTool)).unwrap();
        registry.register(Arc::new(ChangeTool)).unwrap();
        let model = AnthropicModel::new("claude-sonnet-4-5", "test-key")
            .with_base_url(server.uri())
            .with_retry(RetryPolicy::none());
        AgentConfig::new()
            .with_model(model)
            .with_registry(Arc::new(registry))
            .with_state(probe.clone())
            .permissions(|p| p.allow("change"))
    }

    fn send(text: String) -> Piece {
        Piece::Send(text)
    }

    /// The tool_use ids and the tool_result ids of a request, in order.
    fn call_ids(request: &serde_json::Value) -> (Vec<String>, Vec<String>) {
        let blocks = request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default());
        let (mut uses, mut results) = (Vec::new(), Vec::new());
        for block in blocks {
            match block["type"].as_str() {
                Some("tool_use") => uses.push(block["id"].as_str().unwrap().to_owned()),
                Some("tool_result") => {
                    results.push(block["tool_use_id"].as_str().unwrap().to_owned())
                }
                _ => {}
            }
        }
        (uses, results)
    }

    #[tokio::test]
    async fn a_read_only_call_starts_while_the_rest_of_the_turn_streams() {
        let probe = Probe::new();
        let turn = vec![
            send(anthropic::start()),
            send(anthropic::tool_use(0, "t1", "look", &json!({"key": "a"}))),
            probe.tool_started(),
            Piece::Log("rest of the turn sent".into()),
            send(anthropic::tool_use(1, "t2", "look", &json!({"key": "b"}))),
            send(anthropic::stop("tool_use")),
        ];
        let server = StreamServer::start(
            vec![turn, vec![send(anthropic::text_turn("Both found."))]],
            probe.log.clone(),
        )
        .await;
        let agent = Agent::create(config(&server, &probe)).await.unwrap();
        let result = agent.prompt("Look up a and b.").await.unwrap();
        assert_eq!(result.text, "Both found.");
        assert_eq!(result.tool_calls, 2);
        let log = probe.log();
        assert_eq!(
            log[..2],
            ["look a started", "rest of the turn sent"],
            "the first call started before the turn ended: {log:?}"
        );
        assert!(log.contains(&"look b started".to_owned()), "{log:?}");
        // Results in tool_use order, right after their tool_use.
        let requests = server.requests();
        let (uses, results) = call_ids(&requests[1]);
        assert_eq!(uses, ["t1", "t2"]);
        assert_eq!(results, ["t1", "t2"]);
        let messages = agent.messages().await;
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[2].role, Role::User);
        let texts: Vec<_> = messages[2]
            .content
            .iter()
            .map(|block| match block {
                MessageContent::ToolResult { content, .. } => match &content[0] {
                    tool_sdk::ContentBlock::Text { text } => text.clone(),
                    other => panic!("{other:?}"),
                },
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["a found", "b found"]);
    }

    #[tokio::test]
    async fn a_mutating_call_and_the_calls_after_it_wait_for_the_whole_turn() {
        let probe = Probe::new();
        let turn = vec![
            send(anthropic::start()),
            send(anthropic::tool_use(0, "t1", "change", &json!({"key": "a"}))),
            send(anthropic::tool_use(1, "t2", "look", &json!({"key": "b"}))),
            Probe::pause(),
            Piece::Log("turn ended".into()),
            send(anthropic::stop("tool_use")),
        ];
        let server = StreamServer::start(
            vec![turn, vec![send(anthropic::text_turn("Done."))]],
            probe.log.clone(),
        )
        .await;
        let agent = Agent::create(config(&server, &probe)).await.unwrap();
        let result = agent.prompt("Change a, then look up b.").await.unwrap();
        assert_eq!(result.text, "Done.");
        assert_eq!(
            probe.log(),
            ["turn ended", "change a started", "look b started"],
            "nothing ran before the turn ended, and the calls ran in order"
        );
        let (uses, results) = call_ids(&server.requests()[1]);
        assert_eq!(uses, results);
    }

    #[tokio::test]
    async fn read_only_calls_after_a_mutating_one_do_not_start_early() {
        let probe = Probe::new();
        let turn = vec![
            send(anthropic::start()),
            send(anthropic::tool_use(0, "t1", "look", &json!({"key": "a"}))),
            probe.tool_started(),
            send(anthropic::tool_use(1, "t2", "change", &json!({"key": "b"}))),
            send(anthropic::tool_use(2, "t3", "look", &json!({"key": "c"}))),
            Probe::pause(),
            Piece::Log("turn ended".into()),
            send(anthropic::stop("tool_use")),
        ];
        let server = StreamServer::start(
            vec![turn, vec![send(anthropic::text_turn("Done."))]],
            probe.log.clone(),
        )
        .await;
        let agent = Agent::create(config(&server, &probe)).await.unwrap();
        agent.prompt("Go.").await.unwrap();
        assert_eq!(
            probe.log(),
            [
                "look a started",
                "turn ended",
                "change b started",
                "look c started"
            ]
        );
        let (uses, results) = call_ids(&server.requests()[1]);
        assert_eq!(uses, ["t1", "t2", "t3"]);
        assert_eq!(results, ["t1", "t2", "t3"]);
    }

    /// The events of a run about one call: requested, then how it ended.
    fn call_events(events: &[AgentEvent], id: &str) -> Vec<String> {
        events
            .iter()
            .filter_map(|event| match event {
                AgentEvent::ToolRequested { id: call, .. } if call == id => {
                    Some("requested".to_owned())
                }
                AgentEvent::ToolCompleted { id: call, .. } if call == id => {
                    Some("completed".to_owned())
                }
                AgentEvent::ToolFailed { id: call, kind, .. } if call == id => {
                    Some(format!("failed: {kind:?}"))
                }
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn a_stream_that_breaks_after_a_call_started_cancels_it_and_drops_the_turn() {
        let probe = Probe::new();
        let broken = vec![
            send(anthropic::start()),
            send(anthropic::tool_use(
                0,
                "t1",
                "look",
                &json!({"key": "a", "hold": true}),
            )),
            probe.tool_started(),
            Piece::Break,
        ];
        let server = StreamServer::start(
            vec![broken, vec![send(anthropic::text_turn("Again, then."))]],
            probe.log.clone(),
        )
        .await;
        let agent = Agent::create(config(&server, &probe)).await.unwrap();
        let mut run = agent.run("Look up a.");
        let mut events = Vec::new();
        while let Some(event) = run.next().await {
            events.push(event);
        }
        let Some(AgentEvent::Finished(result)) = events.last() else {
            panic!("{events:?}");
        };
        assert!(
            matches!(result.error, Some(AgentError::Model(_))),
            "{:?}",
            result.error
        );
        assert_eq!(probe.log(), ["look a started"]);
        assert_eq!(
            call_events(&events, "t1"),
            [
                "requested",
                &format!("failed: {:?}", ToolErrorKind::Cancelled)
            ],
            "the started call ended once, cancelled"
        );
        // The turn is dropped whole: no tool_use waits for a result.
        let messages = agent.messages().await;
        assert_eq!(messages.len(), 1, "{messages:?}");
        assert_eq!(messages[0].role, Role::User);

        let again = agent.continue_run().await.unwrap();
        assert_eq!(again.text, "Again, then.");
        let (uses, results) = call_ids(&server.requests()[1]);
        assert!(uses.is_empty() && results.is_empty());
    }

    #[tokio::test]
    async fn cancelling_mid_stream_cancels_the_started_call() {
        let probe = Probe::new();
        let turn = vec![
            send(anthropic::start()),
            send(anthropic::tool_use(
                0,
                "t1",
                "look",
                &json!({"key": "a", "hold": true}),
            )),
            // Never ends by itself: the run is cancelled while it waits.
            Piece::wait(std::future::pending()),
        ];
        let server = StreamServer::start(vec![turn], probe.log.clone()).await;
        let agent = Agent::create(config(&server, &probe)).await.unwrap();
        let mut run = agent.run("Look up a.");
        let mut events = Vec::new();
        while let Some(event) = run.next().await {
            if matches!(event, AgentEvent::ToolRequested { .. }) {
                probe.started.notified().await;
                run.cancel();
            }
            events.push(event);
        }
        let Some(AgentEvent::Finished(result)) = events.last() else {
            panic!("{events:?}");
        };
        assert!(
            matches!(result.error, Some(AgentError::Cancelled)),
            "{:?}",
            result.error
        );
        assert_eq!(
            call_events(&events, "t1"),
            [
                "requested",
                &format!("failed: {:?}", ToolErrorKind::Cancelled)
            ]
        );
        assert_eq!(agent.messages().await.len(), 1);
    }

    #[tokio::test]
    async fn with_a_store_an_early_call_is_recorded_after_its_turn() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
        let probe = Probe::new();
        let turn = vec![
            send(anthropic::start()),
            send(anthropic::tool_use(0, "t1", "look", &json!({"key": "a"}))),
            probe.tool_started(),
            Piece::Log("rest of the turn sent".into()),
            send(anthropic::text(1, "Looking.")),
            send(anthropic::stop("tool_use")),
        ];
        let server = StreamServer::start(
            vec![turn, vec![send(anthropic::text_turn("Found."))]],
            probe.log.clone(),
        )
        .await;
        let agent = Agent::create(config(&server, &probe).session(|s| s.with_store(store.clone())))
            .await
            .unwrap();
        agent.prompt("Look up a.").await.unwrap();
        assert_eq!(probe.log(), ["look a started", "rest of the turn sent"]);
        let records = store.load(agent.session_id()).await.unwrap();
        assert_eq!(
            records.iter().map(Record::kind).collect::<Vec<_>>(),
            [
                "user_message",
                "model_turn",
                "usage",
                "tool_started",
                "tool_result",
                "model_turn",
                "usage"
            ],
            "the early call's records were held until its turn was stored"
        );
        // The agent lets the session go (its lease with it) before another takes it up.
        let (id, messages) = (agent.session_id().to_owned(), agent.messages().await);
        drop(agent);
        let resumed = Agent::resume(
            config(&server, &probe).session(|s| s.with_store(store)),
            &id,
        )
        .await
        .unwrap();
        assert_eq!(resumed.messages().await, messages);
    }
}
