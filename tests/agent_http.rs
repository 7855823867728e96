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
