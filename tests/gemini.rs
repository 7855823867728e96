//! The Gemini API client against a local mock server: the request it sends (the key in a
//! header only), text, thought summaries, parallel function calls through the whole agent
//! loop with their thought signatures sent back on the same parts, usage with cached and
//! thought tokens, typed output, stops, and Gemini's errors and retries.
//!
//! No Gemini API key is available here: the streams in `fixtures/gemini/` are written from the
//! examples of Google's documentation (see their README), not recorded.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use serde::Deserialize;
use serde_json::{Value, json};
use tests::script::Script;
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent, ModelSpec, RunResult};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::gemini::{GeminiModel, PROVIDER_NAME};
use tool_sdk::model::{
    Catalog, Message, MessageContent, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    RetryPolicy, StopReason, Thinking, ToolSpec, Usage,
};
use tool_sdk::schema::{Provider, lower};
use tool_sdk::{JsonSchema, ToolRegistry, schemars, tool};
use wiremock::matchers::{method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

const MODEL: &str = "gemini-2.5-flash";
const ENDPOINT: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent";

fn fixture(name: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/gemini")
        .join(name);
    std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

fn sse(name: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(fixture(name), "text/event-stream")
}

/// A Google error body (`google.rpc.Status`).
fn google_error(status: u16, code: &str, message: &str, details: Value) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({
        "error": {"code": status, "message": message, "status": code, "details": details},
    }))
}

async fn server(responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(ENDPOINT))
        .and(query_param("alt", "sse"))
        .respond_with(Script::new(responses))
        .mount(&server)
        .await;
    server
}

fn model_for(server: &MockServer) -> GeminiModel {
    GeminiModel::new(MODEL, "test-key")
        .with_base_url(format!("{}/v1beta", server.uri()))
        .with_retry(RetryPolicy::none())
}

fn fast_retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

fn ask(text: &str) -> ModelRequest {
    ModelRequest {
        messages: vec![Message::user(text)].into(),
        max_tokens: 256,
        ..ModelRequest::default()
    }
}

/// Every event, and the error the stream ended with, if any.
async fn run(model: &GeminiModel, request: &ModelRequest) -> (Vec<ModelEvent>, Option<ModelError>) {
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

fn completed(events: &[ModelEvent]) -> &ModelResponse {
    match events.last() {
        Some(ModelEvent::Completed(response)) => response,
        other => panic!("the last event is not Completed: {other:?}"),
    }
}

fn deltas(events: &[ModelEvent], thinking: bool) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(text) if !thinking => Some(text.as_str()),
            ModelEvent::ThinkingDelta(text) if thinking => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    let requests = server.received_requests().await.expect("recording is on");
    requests.iter().map(|r| r.body_json().unwrap()).collect()
}

fn signature(token: &str) -> MessageContent {
    MessageContent::ThoughtSignature {
        provider: PROVIDER_NAME.into(),
        signature: token.into(),
    }
}

#[tokio::test]
async fn the_request_has_the_key_in_a_header_only_and_gemini_fields() {
    let server = server(vec![sse("text.sse")]).await;
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": ["integer", "null"]}},
        "required": ["city"],
        "additionalProperties": false,
    });
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        temperature: Some(0.2),
        thinking: Thinking::budget(2048),
        tools: vec![ToolSpec {
            name: "weather".into(),
            description: "The weather of a city.".into(),
            input_schema: schema.clone(),
        }]
        .into(),
        ..ask("Hi")
    };
    let (_, error) = run(&model_for(&server), &request).await;
    assert!(error.is_none(), "{error:?}");

    let requests = server.received_requests().await.unwrap();
    let request = &requests[0];
    assert_eq!(request.headers["x-goog-api-key"], "test-key");
    assert!(!request.headers.contains_key("authorization"));
    let query = request.url.query().unwrap_or_default();
    assert_eq!(query, "alt=sse", "the key never goes in the URL");
    assert!(!request.url.as_str().contains("test-key"));
    let body: Value = request.body_json().unwrap();
    assert_eq!(
        body,
        json!({
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "contents": [{"role": "user", "parts": [{"text": "Hi"}]}],
            "tools": [{"functionDeclarations": [{
                "name": "weather",
                "description": "The weather of a city.",
                "parameters": lower(&schema, Provider::Gemini),
            }]}],
            "generationConfig": {
                "maxOutputTokens": 256,
                "temperature": 0.2,
                "thinkingConfig": {"thinkingBudget": 2048, "includeThoughts": true},
            },
        })
    );
    let parameters = &body["tools"][0]["functionDeclarations"][0]["parameters"];
    assert!(parameters.get("additionalProperties").is_none(), "lowered");
}

#[tokio::test]
async fn text_streams_in_pieces_with_its_usage() {
    let server = server(vec![sse("text.sse")]).await;
    let model = model_for(&server);
    assert_eq!(model.provider_name(), "gcp.gemini");
    let request = ModelRequest {
        thinking: Thinking::Adaptive,
        ..ask("Say hello")
    };
    let (events, error) = run(&model, &request).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(deltas(&events, false), "Hello, world!");
    let response = completed(&events);
    assert_eq!(
        response.content,
        vec![MessageContent::Text {
            text: "Hello, world!".into()
        }],
        "unsigned pieces are one text"
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 12,
            output_tokens: 4,
            ..Usage::default()
        }
    );
    let body = &bodies(&server).await[0];
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": -1, "includeThoughts": true}),
        "adaptive: the model decides"
    );
}

#[tokio::test]
async fn thought_summaries_stream_as_thinking_and_are_not_kept() {
    let server = server(vec![sse("parallel_calls.sse")]).await;
    let (events, error) = run(&model_for(&server), &ask("Weather?")).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(
        deltas(&events, true),
        "The user wants the weather in two cities; I will look both up."
    );
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert!(
        !format!("{:?}", response.content).contains("two cities"),
        "{:?}",
        response.content
    );
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 80,
            ..Usage::default()
        },
        "thoughts are billed as output"
    );
    // Each call arrives whole: started, then completed, in order.
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ToolUseCompleted(call) => Some(call.id.as_str()),
            _ => None,
        })
        .collect();
    let ids: Vec<&str> = response
        .content
        .iter()
        .filter_map(|b| match b {
            MessageContent::ToolUse(call) => Some(call.id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ids);
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "made-up ids are unique");
}

/// Looks up a city's weather.
#[tool(register = false, read_only)]
async fn weather(city: String) -> String {
    match city.as_str() {
        "Paris" => "sunny".into(),
        _ => "rainy".into(),
    }
}

fn agent_config(model: GeminiModel) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(WeatherTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
}

async fn agent_run(agent: &Agent, prompt: &str) -> RunResult {
    let mut events: Vec<AgentEvent> = agent.run(prompt).collect().await;
    let Some(AgentEvent::Finished(result)) = events.pop() else {
        panic!("the run did not finish: {events:?}");
    };
    *result
}

#[tokio::test]
async fn parallel_calls_run_through_the_agent_and_signatures_go_back_on_their_parts() {
    let server = server(vec![
        sse("parallel_calls.sse"),
        sse("after_calls.sse"),
        sse("signed_text.sse"),
    ])
    .await;
    let agent = Agent::create(agent_config(model_for(&server)))
        .await
        .unwrap();
    let result = agent_run(&agent, "Weather in Paris and London?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "Paris is sunny and London is rainy.");
    assert_eq!(result.tool_calls, 2);
    assert_eq!(result.stop_reason, Some(StopReason::EndTurn));

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 2);
    let contents = &bodies[1]["contents"];
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"functionCall": {"name": "weather", "args": {"city": "Paris"}}, "thoughtSignature": "c2lnLWNhbGxzLTE="},
            {"functionCall": {"name": "weather", "args": {"city": "London"}}},
        ]}),
        "the signature on the first call only, as it came"
    );
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"result": "sunny"}}},
            {"functionResponse": {"name": "weather", "response": {"result": "rainy"}}},
        ]}),
        "answered by name, in the calls' order"
    );

    // Usage of both turns; the second read 100 prompt tokens from the cache.
    assert_eq!(
        result.usage,
        Usage {
            input_tokens: 120 + 200,
            output_tokens: 80 + 15,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 0,
        }
    );
    let price = Catalog::default().lookup(MODEL).unwrap().price;
    let cost = result.cost_usd.expect("a catalog model is priced");
    assert!(
        (cost - price.cost_usd(&result.usage)).abs() < 1e-12,
        "{cost}"
    );

    // The next prompt sends the closing signature back on its own empty part.
    let second = agent_run(&agent, "Thanks").await;
    assert!(second.error.is_none(), "{:?}", second.error);
    let bodies = self::bodies(&server).await;
    let contents = bodies[2]["contents"].as_array().unwrap();
    assert_eq!(
        contents[3],
        json!({"role": "model", "parts": [
            {"text": "Paris is sunny and London is rainy."},
            {"text": "", "thoughtSignature": "c2lnLWZpbmFs"},
        ]})
    );
    // A signed text piece stays apart from the text before it.
    let last = second.messages.last().unwrap();
    assert_eq!(
        last.content,
        vec![
            MessageContent::Text {
                text: "Noted".into()
            },
            signature("c2lnLXRleHQ="),
            MessageContent::Text { text: ".".into() },
        ]
    );
    assert_eq!(last.text(), "Noted.");
}

#[tokio::test]
async fn another_provider_is_never_sent_a_gemini_signature() {
    let gemini = server(vec![sse("parallel_calls.sse"), sse("after_calls.sse")]).await;
    let agent = Agent::create(agent_config(model_for(&gemini)))
        .await
        .unwrap();
    let result = agent_run(&agent, "Weather in Paris and London?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let stored = serde_json::to_string(&result.messages.to_vec()).unwrap();
    assert!(stored.contains("thought_signature"), "kept: {stored}");
    let back: Vec<Message> = serde_json::from_str(&stored).unwrap();
    assert_eq!(back, result.messages.to_vec(), "survives being stored");

    let anthropic = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(500))
        .mount(&anthropic)
        .await;
    let claude = AnthropicModel::new("claude-test", "test-key")
        .with_base_url(anthropic.uri())
        .with_retry(RetryPolicy::none());
    let mut messages = back;
    messages.push(Message::user("And tomorrow?"));
    let request = ModelRequest {
        messages: messages.into(),
        max_tokens: 100,
        ..ModelRequest::default()
    };
    let mut stream = claude.stream(&request);
    while stream.next().await.is_some() {}
    let body = anthropic.received_requests().await.unwrap()[0].body.clone();
    let body = String::from_utf8(body).unwrap();
    assert!(body.contains("tool_use"), "{body}");
    assert!(
        !body.contains("c2ln"),
        "a Gemini signature reached Anthropic: {body}"
    );
}

/// A city's weather.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    celsius: i32,
}

#[tokio::test]
async fn typed_output_without_tools_asks_for_json_with_a_schema() {
    let server = server(vec![sse("typed_text.sse")]).await;
    let agent = Agent::create(agent_config(model_for(&server)).with_tools(Vec::<String>::new()))
        .await
        .unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Lisbon?").await.unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Lisbon".into(),
            celsius: 21
        }
    );
    let body = &bodies(&server).await[0];
    let config = &body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(config["responseSchema"]["type"], "object");
    assert_eq!(
        config["responseSchema"]["required"],
        json!(["city", "celsius"])
    );
    assert!(body.get("tools").is_none());
}

#[tokio::test]
async fn typed_output_beside_tools_is_a_function_the_model_must_call() {
    let server = server(vec![sse("typed_call.sse")]).await;
    let agent = Agent::create(agent_config(model_for(&server)))
        .await
        .unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Porto?").await.unwrap();
    assert_eq!(forecast.city, "Porto");
    let body = &bodies(&server).await[0];
    let names: Vec<&str> = body["tools"][0]["functionDeclarations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["weather", "final_answer"]);
    assert_eq!(
        body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY"}})
    );
    assert!(body["generationConfig"].get("responseMimeType").is_none());
}

#[tokio::test]
async fn max_tokens_and_safety_stops() {
    let server = server(vec![sse("max_tokens.sse"), sse("safety.sse")]).await;
    let model = model_for(&server);
    let (events, _) = run(&model, &ask("A long story")).await;
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::MaxTokens);
    assert_eq!(
        response.content,
        vec![MessageContent::Text {
            text: "Once upon a time, there was a very long".into()
        }]
    );
    let (events, error) = run(&model, &ask("Something dangerous")).await;
    assert!(error.is_none(), "{error:?}");
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::Refusal);
    assert!(response.content.is_empty());
}

fn retry_info(delay: &str) -> Value {
    json!([
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay},
    ])
}

#[tokio::test]
async fn a_429_waits_its_retry_delay_then_succeeds() {
    let server = server(vec![
        google_error(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota.",
            retry_info("0.05s"),
        ),
        sse("text.sse"),
    ])
    .await;
    // A backoff so long that only the retryDelay lets this test end quickly.
    let model = model_for(&server).with_retry(RetryPolicy {
        max_retries: 1,
        initial_backoff: Duration::from_secs(60),
        max_backoff: Duration::from_secs(120),
    });
    let started = Instant::now();
    let (events, error) = run(&model, &ask("Hi")).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(deltas(&events, false), "Hello, world!");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "retryDelay ignored"
    );
    assert_eq!(bodies(&server).await.len(), 2);

    // Without retries, the error says how long to wait, and who asked.
    let server = self::server(vec![google_error(
        429,
        "RESOURCE_EXHAUSTED",
        "You exceeded your current quota.",
        retry_info("30s"),
    )])
    .await;
    let (_, error) = run(&model_for(&server), &ask("Hi")).await;
    let error = error.expect("rate limited");
    assert!(
        matches!(&error, ModelError::RateLimited { retry_after, .. } if *retry_after == Some(Duration::from_secs(30))),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("Gemini RESOURCE_EXHAUSTED"),
        "{error}"
    );
}

#[tokio::test]
async fn a_503_is_overloaded_and_retried() {
    let server = server(vec![
        google_error(
            503,
            "UNAVAILABLE",
            "The model is overloaded. Please try again later.",
            json!([]),
        ),
        sse("text.sse"),
    ])
    .await;
    let (events, error) = run(&model_for(&server).with_retry(fast_retries(2)), &ask("Hi")).await;
    assert!(error.is_none(), "{error:?}");
    assert_eq!(completed(&events).stop_reason, StopReason::EndTurn);
    assert_eq!(bodies(&server).await.len(), 2);

    let server = self::server(vec![google_error(
        503,
        "UNAVAILABLE",
        "The model is overloaded.",
        json!([]),
    )])
    .await;
    let (_, error) = run(&model_for(&server), &ask("Hi")).await;
    assert!(
        matches!(&error, Some(ModelError::Overloaded { message, .. }) if message == "Gemini UNAVAILABLE: The model is overloaded."),
        "{error:?}"
    );
}

#[tokio::test]
async fn too_many_input_tokens_is_prompt_too_long_and_not_retried() {
    let server = server(vec![google_error(
        400,
        "INVALID_ARGUMENT",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        json!([]),
    )])
    .await;
    let (_, error) = run(&model_for(&server).with_retry(fast_retries(3)), &ask("Hi")).await;
    assert!(
        matches!(&error, Some(ModelError::PromptTooLong { status: 400, message }) if message.contains("input token count")),
        "{error:?}"
    );
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn an_error_names_gemini_its_status_and_its_message() {
    let server = server(vec![google_error(
        400,
        "INVALID_ARGUMENT",
        "API key not valid. Please pass a valid API key.",
        json!([{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}]),
    )])
    .await;
    let (_, error) = run(&model_for(&server).with_retry(fast_retries(3)), &ask("Hi")).await;
    let error = error.expect("an error");
    assert!(
        matches!(error, ModelError::Api { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "the provider rejected the request (HTTP 400): Gemini INVALID_ARGUMENT: API key not \
         valid. Please pass a valid API key."
    );
    assert_eq!(bodies(&server).await.len(), 1, "a 400 is not retried");
}

#[tokio::test]
async fn a_config_file_names_gemini() {
    let server = server(vec![sse("text.sse")]).await;
    let spec: ModelSpec = toml::from_str(&format!(
        "provider = \"gemini\"\nid = \"{MODEL}\"\nbase_url = \"{}/v1beta\"\napi_key = \"test-key\"\n",
        server.uri()
    ))
    .unwrap();
    let agent = Agent::create(AgentConfig::new().with_model(spec))
        .await
        .unwrap();
    let result = agent_run(&agent, "Hi").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "Hello, world!");

    let parsed: ModelSpec = "gemini:gemini-2.5-pro".parse().unwrap();
    assert_eq!(parsed.provider, tool_sdk::agent::ProviderKind::Gemini);
    let bare: ModelSpec = "gemini-2.5-flash-lite".parse().unwrap();
    assert_eq!(bare.provider, tool_sdk::agent::ProviderKind::Gemini);
    let wrong = "vertex:gemini-2.5-pro".parse::<ModelSpec>().unwrap_err();
    assert!(wrong.to_string().contains("gemini"), "{wrong}");
}

#[tokio::test]
async fn a_recorded_cassette_keeps_the_path_and_never_the_key() {
    let server = server(vec![sse("text.sse")]).await;
    let dir = tempfile::tempdir().unwrap();
    let model = model_for(&server).with_recording(dir.path());
    let (_, error) = run(&model, &ask("Hi")).await;
    assert!(error.is_none(), "{error:?}");
    let file = model.recording_path().expect("recording").to_owned();
    let cassette = std::fs::read_to_string(&file).unwrap();
    assert!(
        cassette.contains(&format!("\"path\":\"{ENDPOINT}?alt=sse\"")),
        "{cassette}"
    );
    assert!(cassette.contains("Hello"), "the streamed body is kept");
    assert!(!cassette.contains("test-key"), "the key leaked: {cassette}");
    assert!(!cassette.contains("x-goog-api-key"), "{cassette}");
}
