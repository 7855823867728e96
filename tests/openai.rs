//! The OpenAI Chat Completions client against a mock server: recorded and hand-written SSE
//! streams, the requests it sends, HTTP errors and retries.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::StreamExt as _;
use serde_json::{Value, json};
use tool_sdk::ContentBlock;
use tool_sdk::model::openai::{MaxTokensField, OpenAiModel};
use tool_sdk::model::{
    Message, MessageContent, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    RetryPolicy, Role, StopReason, ToolSpec, ToolUse, Usage,
};
use tool_sdk::schema::{Provider, lower};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const ENDPOINT: &str = "/v1/chat/completions";

fn fixture(name: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/openai-chat")
        .join(name);
    std::fs::read_to_string(&file).unwrap_or_else(|error| panic!("{}: {error}", file.display()))
}

/// The recorded streams beside the project, when that folder exists.
fn shared_fixture(name: &str) -> Option<String> {
    let file: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures/openai-chat")
        .join(name);
    match std::fs::read_to_string(&file) {
        Ok(text) => Some(text),
        Err(_) => {
            eprintln!("skipped: {} is not there", file.display());
            None
        }
    }
}

fn sse(body: impl Into<String>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.into(), "text/event-stream")
}

/// A server answering every completion request with `response`.
async fn serve(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(ENDPOINT))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

/// A keyless client of the mock server that never waits long between retries.
fn model_for(server: &MockServer) -> OpenAiModel {
    OpenAiModel::new("test-model", None)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(fast_retries(2))
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
async fn run(model: &OpenAiModel, request: &ModelRequest) -> (Vec<ModelEvent>, Option<ModelError>) {
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

/// The completed turn, checked to be the one and last `Completed` event.
fn completed(events: &[ModelEvent]) -> &ModelResponse {
    let completions = events
        .iter()
        .filter(|event| matches!(event, ModelEvent::Completed(_)))
        .count();
    assert_eq!(completions, 1, "exactly one Completed: {events:#?}");
    match events.last() {
        Some(ModelEvent::Completed(response)) => response,
        other => panic!("the last event is not Completed: {other:?}"),
    }
}

fn text_deltas(events: &[ModelEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn started(events: &[ModelEvent]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolUseStarted { id, name } => Some((id.clone(), name.clone())),
            _ => None,
        })
        .collect()
}

fn tool_uses(response: &ModelResponse) -> Vec<ToolUse> {
    response
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::ToolUse(tool_use) => Some(tool_use.clone()),
            _ => None,
        })
        .collect()
}

async fn requests(server: &MockServer) -> Vec<wiremock::Request> {
    server.received_requests().await.expect("recording is on")
}

async fn only_request_body(server: &MockServer) -> Value {
    let requests = requests(server).await;
    assert_eq!(requests.len(), 1, "one request");
    requests[0].body_json().expect("a JSON body")
}

#[tokio::test]
async fn text_stream_with_usage_and_no_api_key() {
    let server = serve(sse(fixture("text_with_usage.sse"))).await;
    let model = model_for(&server);
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        temperature: Some(0.2),
        ..ask("Say hello")
    };
    let (events, error) = run(&model, &request).await;
    assert!(error.is_none(), "{:?}", error);
    assert_eq!(text_deltas(&events), "Hello, world!");
    let response = completed(&events);
    assert_eq!(
        response.content,
        vec![MessageContent::Text {
            text: "Hello, world!".into()
        }]
    );
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 5,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 0,
        },
        "prompt_tokens 120 of which 100 cached"
    );

    let requests = requests(&server).await;
    assert_eq!(requests.len(), 1);
    assert!(
        !requests[0].headers.contains_key("authorization"),
        "no key, no Authorization header"
    );
    let body: Value = requests[0].body_json().unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        body["max_tokens"], 256,
        "a compatible server gets max_tokens"
    );
    assert!(body.get("max_completion_tokens").is_none());
    assert_eq!(body["temperature"], json!(0.2));
    assert!(body.get("tools").is_none(), "no tools, no tools field");
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Say hello"},
        ])
    );
}

#[tokio::test]
async fn crlf_line_endings_and_a_missing_final_blank_line_are_tolerated() {
    let body = fixture("text_with_usage.sse").replace('\n', "\r\n");
    let body = body.trim_end().to_owned();
    let server = serve(sse(body)).await;
    let (events, error) = run(&model_for(&server), &ask("hi")).await;
    assert!(error.is_none(), "{:?}", error);
    assert_eq!(text_deltas(&events), "Hello, world!");
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(response.usage.output_tokens, 5);
}

#[tokio::test]
async fn api_key_is_sent_as_bearer_and_tools_are_lowered() {
    let server = serve(sse(fixture("text_with_usage.sse"))).await;
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    });
    let request = ModelRequest {
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather for a city.".into(),
            input_schema: schema.clone(),
        }]
        .into(),
        ..ask("weather?")
    };
    let model = OpenAiModel::new("gpt-test", Some("sk-test-123".into()))
        .with_base_url(format!("{}/v1/", server.uri()));
    let (_, error) = run(&model, &request).await;
    assert!(error.is_none(), "{:?}", error);
    let requests = requests(&server).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].headers.get("authorization").unwrap(),
        "Bearer sk-test-123"
    );
    let body: Value = requests[0].body_json().unwrap();
    let mut expected_parameters = schema.clone();
    expected_parameters
        .as_object_mut()
        .unwrap()
        .remove("$schema");
    assert_eq!(
        body["tools"],
        json!([{
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": expected_parameters,
            },
        }])
    );
}

#[tokio::test]
async fn strict_tools_use_the_strict_lowering() {
    let server = serve(sse(fixture("text_with_usage.sse"))).await;
    let schema = json!({
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    });
    let strict = lower(&schema, Provider::OpenAiStrict);
    assert_ne!(
        strict,
        lower(&schema, Provider::OpenAi),
        "the check can tell"
    );
    let request = ModelRequest {
        tools: vec![ToolSpec {
            name: "get_weather".into(),
            description: "Weather.".into(),
            input_schema: schema,
        }]
        .into(),
        ..ask("weather?")
    };
    let model = model_for(&server).with_strict_tools(true);
    let (_, error) = run(&model, &request).await;
    assert!(error.is_none(), "{:?}", error);
    let body = only_request_body(&server).await;
    let function = &body["tools"][0]["function"];
    assert_eq!(function["strict"], true);
    assert_eq!(function["parameters"], strict);
    assert_eq!(function["parameters"]["additionalProperties"], false);
}

#[tokio::test]
async fn the_token_limit_field_can_be_chosen() {
    let server = serve(sse(fixture("text_with_usage.sse"))).await;
    let model = model_for(&server).with_max_tokens_field(MaxTokensField::MaxCompletionTokens);
    let (_, error) = run(&model, &ask("hi")).await;
    assert!(error.is_none(), "{:?}", error);
    let body = only_request_body(&server).await;
    assert_eq!(body["max_completion_tokens"], 256);
    assert!(body.get("max_tokens").is_none());
}

#[tokio::test]
async fn history_puts_tool_results_right_after_the_calls_in_order() {
    let server = serve(sse(fixture("text_with_usage.sse"))).await;
    let request = ModelRequest {
        system: Some("sys".into()),
        messages: vec![
            Message::user("Weather in Paris and the time?"),
            Message {
                role: Role::Assistant,
                content: vec![
                    MessageContent::Thinking {
                        thinking: "two calls".into(),
                        signature: "sig".into(),
                    },
                    MessageContent::Text {
                        text: "Checking.".into(),
                    },
                    MessageContent::ToolUse(ToolUse::from_raw(
                        "call_1",
                        "get_weather",
                        r#"{"city":"Paris"}"#,
                    )),
                    MessageContent::ToolUse(ToolUse::from_raw("call_2", "get_time", "")),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    MessageContent::ToolResult {
                        tool_use_id: "call_1".into(),
                        content: vec![
                            ContentBlock::text("18C"),
                            ContentBlock::text("sunny"),
                            ContentBlock::image("image/png", b"png"),
                        ],
                        is_error: false,
                    },
                    MessageContent::ToolResult {
                        tool_use_id: "call_2".into(),
                        content: vec![ContentBlock::text("clock broken")],
                        is_error: true,
                    },
                ],
            },
            Message::assistant("It is 18C and sunny; the time is unknown."),
            Message {
                role: Role::User,
                content: vec![
                    MessageContent::Text {
                        text: "Look at this".into(),
                    },
                    MessageContent::Image {
                        media_type: "image/jpeg".into(),
                        data: "/9j/4AAQ".into(),
                    },
                ],
            },
        ]
        .into(),
        ..ask("")
    };
    let (_, error) = run(&model_for(&server), &request).await;
    assert!(error.is_none(), "{:?}", error);
    let body = only_request_body(&server).await;
    assert_eq!(
        body["messages"],
        json!([
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "Weather in Paris and the time?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function",
                 "function": {"name": "get_time", "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "18C\nsunny\n[image omitted]"},
            {"role": "tool", "tool_call_id": "call_2", "content": "Error: clock broken"},
            {"role": "assistant", "content": "It is 18C and sunny; the time is unknown."},
            {"role": "user", "content": [
                {"type": "text", "text": "Look at this"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
            ]},
        ])
    );
}

#[tokio::test]
async fn recorded_two_parallel_tool_calls() {
    let Some(body) = shared_fixture("two_parallel_tool_calls.sse") else {
        return;
    };
    let server = serve(sse(body)).await;
    let (events, error) = run(&model_for(&server), &ask("weather and stock")).await;
    assert!(error.is_none(), "{:?}", error);
    assert_eq!(
        started(&events),
        vec![
            (
                "call_JMW1whyEaYG438VE1OIflxA2".to_owned(),
                "GetWeatherArgs".to_owned()
            ),
            (
                "call_DNYTawLBoN8fj3KN6qU9N1Ou".to_owned(),
                "get_stock_price".to_owned()
            ),
        ]
    );
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        tool_uses(response),
        vec![
            ToolUse::new(
                "call_JMW1whyEaYG438VE1OIflxA2",
                "GetWeatherArgs",
                json!({"city": "Edinburgh", "country": "GB", "units": "c"})
            ),
            ToolUse::new(
                "call_DNYTawLBoN8fj3KN6qU9N1Ou",
                "get_stock_price",
                json!({"ticker": "AAPL", "exchange": "NASDAQ"})
            ),
        ]
    );
    assert_eq!(response.content.len(), 2, "no text block: content was null");
    assert_eq!(response.usage.input_tokens, 149);
    assert_eq!(response.usage.output_tokens, 60);
}

#[tokio::test]
async fn recorded_single_tool_call_with_role_in_the_first_chunk() {
    let Some(body) = shared_fixture("single_tool_call.sse") else {
        return;
    };
    let server = serve(sse(body)).await;
    let (events, error) = run(&model_for(&server), &ask("weather")).await;
    assert!(error.is_none(), "{:?}", error);
    assert_eq!(
        started(&events),
        vec![(
            "call_c91SqDXlYFuETYv8mUHzz6pp".to_owned(),
            "GetWeatherArgs".to_owned()
        )]
    );
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        tool_uses(response),
        vec![ToolUse::new(
            "call_c91SqDXlYFuETYv8mUHzz6pp",
            "GetWeatherArgs",
            json!({"city": "Edinburgh", "country": "UK", "units": "c"})
        )]
    );
    assert_eq!(response.usage.input_tokens, 76);
    assert_eq!(response.usage.output_tokens, 24);
}

#[tokio::test]
async fn parallel_calls_with_interleaved_fragments() {
    let server = serve(sse(fixture("parallel_interleaved.sse"))).await;
    let (events, error) = run(&model_for(&server), &ask("weather and time")).await;
    assert!(error.is_none(), "{:?}", error);
    assert_eq!(text_deltas(&events), "Checking both.");
    assert_eq!(
        started(&events),
        vec![
            ("call_aaa".to_owned(), "get_weather".to_owned()),
            ("call_bbb".to_owned(), "get_time".to_owned()),
        ]
    );
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(
        response.content[0],
        MessageContent::Text {
            text: "Checking both.".into()
        }
    );
    let calls = tool_uses(response);
    assert_eq!(
        calls
            .iter()
            .map(|call| (call.id.as_str(), call.input.json_or_empty().into_owned()))
            .collect::<Vec<_>>(),
        vec![
            ("call_aaa", json!({"city": "Paris"})),
            ("call_bbb", json!({"tz": "Europe/Paris"})),
        ]
    );
    assert!(calls.iter().all(|call| !call.input.is_malformed()));
    assert_eq!(response.usage.input_tokens, 80);
}

#[tokio::test]
async fn empty_arguments_mean_an_empty_object() {
    let server = serve(sse(fixture("empty_arguments.sse"))).await;
    let (events, error) = run(&model_for(&server), &ask("time?")).await;
    assert!(error.is_none(), "{:?}", error);
    let response = completed(&events);
    assert_eq!(
        tool_uses(response),
        vec![ToolUse::new("call_now", "current_time", json!({}))]
    );
    assert_eq!(response.stop_reason, StopReason::ToolUse);
}

#[tokio::test]
async fn malformed_arguments_are_kept() {
    let server = serve(sse(fixture("malformed_arguments.sse"))).await;
    let (events, error) = run(&model_for(&server), &ask("weather?")).await;
    assert!(error.is_none(), "{:?}", error);
    let response = completed(&events);
    assert_eq!(
        tool_uses(response),
        vec![ToolUse::from_raw(
            "call_bad",
            "get_weather",
            "{\"city\": \"Par"
        )]
    );
    assert_eq!(response.usage, Usage::default(), "no usage chunk was sent");
}

#[tokio::test]
async fn ollama_style_stream_without_ids_or_usage() {
    let server = serve(sse(fixture("ollama_tool_call.sse"))).await;
    let (events, error) = run(&model_for(&server), &ask("weather in Paris")).await;
    assert!(error.is_none(), "{:?}", error);
    assert!(
        events.contains(&ModelEvent::ThinkingDelta("The user wants weather.".into())),
        "{events:?}"
    );
    let response = completed(&events);
    assert_eq!(
        response.stop_reason,
        StopReason::ToolUse,
        "\"stop\" with tool calls is a tool-use turn"
    );
    let calls = tool_uses(response);
    assert_eq!(calls.len(), 1);
    assert!(calls[0].id.starts_with("call_") && calls[0].id.len() > 5);
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].input.parsed(), Some(&json!({"city": "Paris"})));
    assert_eq!(
        started(&events),
        vec![(calls[0].id.clone(), "get_weather".to_owned())],
        "the generated id is announced as it is kept"
    );
    assert_eq!(response.content.len(), 1, "no text, no thinking block");
    assert_eq!(response.usage, Usage::default());
}

#[tokio::test]
async fn a_stream_cut_midway_is_an_error() {
    let server = serve(sse(fixture("cut_midway.sse"))).await;
    let (events, error) = run(&model_for(&server), &ask("weather?")).await;
    assert!(
        matches!(error, Some(ModelError::Stream { .. })),
        "{error:?}"
    );
    assert_eq!(text_deltas(&events), "Let me check");
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ModelEvent::Completed(_))),
        "no Completed"
    );
}

#[tokio::test]
async fn an_error_object_in_the_stream_is_an_error() {
    let body = format!(
        "{}data: {}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n",
        r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}"#,
    );
    let server = serve(sse(body)).await;
    let (events, error) = run(&model_for(&server), &ask("hi")).await;
    assert_eq!(text_deltas(&events), "Hi");
    match error {
        Some(ModelError::Server { message, .. }) => {
            assert!(message.contains("The server had an error"), "{message}")
        }
        other => panic!("expected a server error, got {other:?}"),
    }
    assert_eq!(
        requests(&server).await.len(),
        1,
        "a broken stream is not retried"
    );

    let body = r#"data: {"error":{"object":"error","message":"context too long","type":"BadRequestError","param":null,"code":400}}

"#;
    let server = serve(sse(body)).await;
    let (_, error) = run(&model_for(&server), &ask("hi")).await;
    assert!(
        matches!(
            &error,
            Some(ModelError::Api { status: 400, message }) if message.ends_with(": context too long")
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_plain_json_completion_is_accepted() {
    let server = serve(ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": null,
                "tool_calls": [
                    {"type": "function", "function": {"name": "a", "arguments": "{\"n\":1}"}},
                    {"type": "function", "function": {"name": "b", "arguments": "{}"}},
                ],
            },
            "finish_reason": "tool_calls",
        }],
        "usage": {"prompt_tokens": 10, "completion_tokens": 3},
    })))
    .await;
    let (events, error) = run(&model_for(&server), &ask("hi")).await;
    assert!(error.is_none(), "{:?}", error);
    let response = completed(&events);
    let calls = tool_uses(response);
    assert_eq!(
        calls
            .iter()
            .map(|call| (call.name.as_str(), call.input.json_or_empty().into_owned()))
            .collect::<Vec<_>>(),
        vec![("a", json!({"n": 1})), ("b", json!({}))]
    );
    assert_ne!(calls[0].id, calls[1].id, "generated ids differ");
    assert_eq!(response.stop_reason, StopReason::ToolUse);
    assert_eq!(response.usage.input_tokens, 10);
}

#[tokio::test]
async fn rate_limit_is_retried_after_the_servers_wait() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(ENDPOINT))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "0")
                .set_body_json(json!({"error": {"message": "slow down", "type": "requests"}})),
        )
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(ENDPOINT))
        .respond_with(sse(fixture("text_with_usage.sse")))
        .mount(&server)
        .await;
    // A long backoff: only the server's `retry-after: 0` keeps this test fast.
    let model = model_for(&server).with_retry(RetryPolicy {
        max_retries: 3,
        initial_backoff: Duration::from_secs(30),
        max_backoff: Duration::from_secs(60),
    });
    let (events, error) = tokio::time::timeout(Duration::from_secs(20), run(&model, &ask("hi")))
        .await
        .expect("retry-after 0 was honoured");
    assert!(error.is_none(), "{:?}", error);
    assert_eq!(completed(&events).stop_reason, StopReason::EndTurn);
    assert_eq!(requests(&server).await.len(), 2);
}

#[tokio::test]
async fn server_errors_are_retried_then_surface() {
    let server = serve(
        ResponseTemplate::new(500)
            .set_body_json(json!({"error": {"message": "internal boom", "type": "server_error"}})),
    )
    .await;
    let model = model_for(&server).with_retry(RetryPolicy {
        max_retries: 2,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(10),
    });
    let (events, error) = run(&model, &ask("hi")).await;
    assert!(events.is_empty());
    assert!(
        matches!(
            &error,
            Some(ModelError::Server { status: 500, message })
                // The test server is not OpenAI's: it is named by its address.
                if message.starts_with("the OpenAI-compatible server at 127.0.0.1:")
                    && message.ends_with(": internal boom")
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
async fn auth_errors_are_not_retried_and_keep_the_providers_message() {
    let server = serve(ResponseTemplate::new(401).set_body_json(json!({
        "error": {
            "message": "Incorrect API key provided: sk-wrong. You can find your API key at the dashboard.",
            "type": "invalid_request_error",
            "param": null,
            "code": "invalid_api_key",
        }
    })))
    .await;
    let model = model_for(&server).with_retry(fast_retries(3));
    let (_, error) = run(&model, &ask("hi")).await;
    match error {
        Some(ModelError::Api { status, message }) => {
            assert_eq!(status, 401);
            assert!(
                message.contains(": Incorrect API key provided"),
                "{message}"
            );
        }
        other => panic!("expected an API error, got {other:?}"),
    }
    assert_eq!(requests(&server).await.len(), 1, "a 401 is not retried");
}

#[tokio::test]
async fn an_unreachable_server_is_a_transport_error() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let model = OpenAiModel::new("m", None)
        .with_base_url(format!("http://127.0.0.1:{port}/v1"))
        .with_retry(RetryPolicy::none());
    let (events, error) = run(&model, &ask("hi")).await;
    assert!(events.is_empty());
    assert!(
        matches!(error, Some(ModelError::Transport { .. })),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_final_event_without_its_blank_line_is_kept() {
    // No `[DONE]` and no blank line after the usage chunk: the body just ends.
    let body = fixture("text_with_usage.sse");
    let body = body.trim_end().trim_end_matches("data: [DONE]").trim_end();
    assert!(body.ends_with('}'), "the usage chunk is last");
    let server = serve(sse(body)).await;
    let (events, error) = run(&model_for(&server), &ask("hi")).await;
    assert!(error.is_none(), "{:?}", error);
    let response = completed(&events);
    assert_eq!(response.stop_reason, StopReason::EndTurn);
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (20, 5),
        "the usage of the last chunk"
    );
}

/// A server that answers one request with a 200 whose headers promise more body than it
/// sends: the client reads `sent`, then the connection closes.
fn server_that_breaks_off(sent: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        // Read the whole request first, so closing does not reset the connection.
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n{sent}",
            sent.len() + 1000
        )
        .unwrap();
        stream.flush().unwrap();
    });
    format!("http://{address}/v1")
}

#[tokio::test]
async fn a_connection_broken_mid_stream_is_a_transport_error() {
    let url = server_that_breaks_off(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\n\n",
    );
    let model = OpenAiModel::new("m", None)
        .with_base_url(url)
        .with_retry(RetryPolicy::none());
    let (events, error) = run(&model, &ask("hi")).await;
    assert_eq!(text_deltas(&events), "Hel");
    assert!(
        matches!(error, Some(ModelError::Transport { .. })),
        "{error:?}"
    );
    // The provider was reached: the words must not say otherwise.
    let message = error.unwrap().to_string();
    assert!(
        message.starts_with("the connection to the provider failed: "),
        "{message}"
    );
}
