//! Fallback models: the real Anthropic and OpenAI clients against mock servers. A request the
//! main model fails (overloaded, 5xx, rate limited, its retries spent) goes to the next model;
//! the switch is an event and a session record, lasts one request, and is priced at the model
//! that answered. Failures a second model would not mend, and failures after text was shown,
//! do not switch.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tests::script::Script;
use tool_sdk::ToolRegistry;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent, ModelSpec, RunResult};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::{ModelError, ModelInfo, Price, RetryPolicy};
use tool_sdk::session::{Record, SessionStore, SqliteStore};
use tool_sdk::tool;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// Echoes its text.
#[tool(name = "Echo", register = false, read_only)]
async fn echo(text: String) -> String {
    format!("echo: {text}")
}

async fn serve(at: &str, responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(Script::new(responses))
        .mount(&server)
        .await;
    server
}

fn overloaded() -> ResponseTemplate {
    ResponseTemplate::new(529).set_body_json(json!({"type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"}}))
}

fn anthropic_text(text: &str) -> ResponseTemplate {
    let body = tests::stream_server::anthropic::text_turn(text);
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// An OpenAI Chat Completions stream of `chunks`, then the usage and `[DONE]`.
fn openai_stream(chunks: &[Value], finish: &str) -> ResponseTemplate {
    let mut body = String::new();
    for delta in chunks {
        let chunk = json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let last = json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    let usage = json!({"id": "c1", "object": "chat.completion.chunk", "model": "gpt-test",
        "choices": [], "usage": {"prompt_tokens": 1000, "completion_tokens": 100,
        "total_tokens": 1100}});
    body.push_str(&format!(
        "data: {last}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    ));
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn openai_echo_call() -> ResponseTemplate {
    let call = json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_1",
        "type": "function", "function": {"name": "Echo", "arguments": "{\"text\":\"hi\"}"}}]});
    openai_stream(&[call], "tool_calls")
}

fn openai_text(text: &str) -> ResponseTemplate {
    openai_stream(&[json!({"role": "assistant", "content": text})], "stop")
}

fn retries(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

/// Anthropic's `claude-test` on `main`, with one retry, falling back to OpenAI's `gpt-test`
/// on `spare`; each priced differently, so the cost tells which answered.
fn config(main: &MockServer, spare: &MockServer) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(EchoTool)).unwrap();
    let claude = AnthropicModel::new("claude-test", "test-key")
        .with_base_url(main.uri())
        .with_retry(retries(1));
    let gpt = OpenAiModel::new("gpt-test", Some("test-key".into()))
        .with_base_url(format!("{}/v1", spare.uri()))
        .with_retry(retries(0));
    AgentConfig::new()
        .with_model(claude)
        .with_registry(Arc::new(registry))
        .model(|m| {
            m.with_fallback_models([gpt])
                .with_model_info("claude-test", info(3.0, 15.0))
                .with_model_info("gpt-test", info(2.0, 8.0))
        })
}

fn info(input: f64, output: f64) -> ModelInfo {
    ModelInfo::new(200_000, Price::per_million(input, output))
}

async fn run(agent: &Agent, prompt: &str) -> (Vec<AgentEvent>, RunResult) {
    let mut events: Vec<AgentEvent> = agent.run(prompt).collect().await;
    let Some(AgentEvent::Finished(result)) = events.pop() else {
        panic!("the run did not finish: {events:?}");
    };
    (events, *result)
}

fn fallbacks(events: &[AgentEvent]) -> Vec<(String, String, String)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::ModelFallback { from, to, reason } => {
                Some((from.clone(), to.clone(), reason.clone()))
            }
            _ => None,
        })
        .collect()
}

async fn requests(server: &MockServer) -> usize {
    server.received_requests().await.unwrap_or_default().len()
}

/// Each request of a run falls back once the main model's retries are spent, and the next
/// request tries the main model first again; each switch is an event and a stored record
/// that comes before the turn it brought; the run is priced at the fallback's price.
#[tokio::test]
async fn an_overloaded_model_hands_each_request_to_the_fallback() {
    let main = serve("/v1/messages", vec![overloaded()]).await;
    let spare = serve(
        "/v1/chat/completions",
        vec![openai_echo_call(), openai_text("done")],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap());
    let config = config(&main, &spare).session(|s| s.with_store(store.clone()));
    let agent = Agent::create(config).await.unwrap();
    let (events, result) = run(&agent, "Say hi through Echo").await;

    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "done");
    assert_eq!(result.tool_calls, 1);
    // Both requests: two attempts at the main model (one retry), then the spare.
    assert_eq!(requests(&main).await, 4);
    assert_eq!(requests(&spare).await, 2);
    let switches = fallbacks(&events);
    assert_eq!(switches.len(), 2, "{switches:?}");
    for (from, to, reason) in &switches {
        assert_eq!((from.as_str(), to.as_str()), ("claude-test", "gpt-test"));
        assert!(reason.contains("overloaded"), "{reason}");
    }
    // Priced at gpt-test's $2 / $8 a million: 2 x (1000 in, 100 out).
    let expected = 2.0 * (1000.0 * 2.0 + 100.0 * 8.0) / 1e6;
    let cost = result.cost_usd.unwrap();
    assert!((cost - expected).abs() < 1e-12, "{cost} != {expected}");
    let turn_costs: Vec<f64> = events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::TurnCompleted { cost_usd, .. } => *cost_usd,
            _ => None,
        })
        .collect();
    assert_eq!(turn_costs.len(), 2);
    assert!(
        turn_costs
            .iter()
            .all(|c| (c - expected / 2.0).abs() < 1e-12)
    );

    let records = store.load(agent.session_id()).await.unwrap();
    let kinds: Vec<&str> = records.iter().map(Record::kind).collect();
    let first_switch = kinds.iter().position(|k| *k == "model_fallback").unwrap();
    let first_turn = kinds.iter().position(|k| *k == "model_turn").unwrap();
    assert!(first_switch < first_turn, "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == "model_fallback").count(), 2);
    let Record::ModelFallback { from, to, .. } = &records[first_switch] else {
        unreachable!()
    };
    assert_eq!((from.as_str(), to.as_str()), ("claude-test", "gpt-test"));
}

/// When the main model answers, the fallback is never asked, and the run is priced at the
/// main model's price.
#[tokio::test]
async fn a_model_that_answers_keeps_the_request() {
    let main = serve("/v1/messages", vec![anthropic_text("hello")]).await;
    let spare = serve("/v1/chat/completions", vec![openai_text("unused")]).await;
    let agent = Agent::create(config(&main, &spare)).await.unwrap();
    let (events, result) = run(&agent, "Hi").await;
    assert_eq!(result.text, "hello");
    assert!(fallbacks(&events).is_empty());
    assert_eq!(requests(&spare).await, 0);
    // The turn's 10 input and 20 output tokens at claude-test's $3 / $15.
    let expected = (10.0 * 3.0 + 20.0 * 15.0) / 1e6;
    assert!((result.cost_usd.unwrap() - expected).abs() < 1e-12);
}

/// A request the provider refused as a request (HTTP 400) would be refused by the next model
/// too: the run fails with that error, and the fallback is not asked.
#[tokio::test]
async fn a_bad_request_does_not_fall_back() {
    let refused = ResponseTemplate::new(400).set_body_json(json!({"type": "error",
        "error": {"type": "invalid_request_error", "message": "messages: bad role"}}));
    let main = serve("/v1/messages", vec![refused]).await;
    let spare = serve("/v1/chat/completions", vec![openai_text("unused")]).await;
    let agent = Agent::create(config(&main, &spare)).await.unwrap();
    let (events, result) = run(&agent, "Hi").await;
    assert!(
        matches!(
            result.error,
            Some(AgentError::Model(ModelError::Api { status: 400, .. }))
        ),
        "{:?}",
        result.error
    );
    assert!(fallbacks(&events).is_empty());
    assert_eq!(requests(&spare).await, 0);
}

/// A stream that failed after its text was shown is not sent again to another model, which
/// would show a second answer.
#[tokio::test]
async fn a_failure_after_text_streamed_does_not_fall_back() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/anthropic/overloaded_mid_stream.sse");
    let body = std::fs::read_to_string(fixture).unwrap();
    let cut = ResponseTemplate::new(200).set_body_raw(body, "text/event-stream");
    let main = serve("/v1/messages", vec![cut]).await;
    let spare = serve("/v1/chat/completions", vec![openai_text("unused")]).await;
    let agent = Agent::create(config(&main, &spare)).await.unwrap();
    let (events, result) = run(&agent, "Hi").await;
    assert!(
        matches!(
            result.error,
            Some(AgentError::Model(ModelError::Overloaded { .. }))
        ),
        "{:?}",
        result.error
    );
    assert!(fallbacks(&events).is_empty());
    assert_eq!(requests(&spare).await, 0);
}

/// When every model fails, the error names each model and why it failed, in order.
#[tokio::test]
async fn when_every_model_fails_the_error_names_each() {
    let main = serve("/v1/messages", vec![overloaded()]).await;
    let down = ResponseTemplate::new(503).set_body_string("upstream connect error");
    let spare = serve("/v1/chat/completions", vec![down]).await;
    let agent = Agent::create(config(&main, &spare)).await.unwrap();
    let (events, result) = run(&agent, "Hi").await;
    let Some(AgentError::Model(ModelError::AllModelsFailed { failures })) = &result.error else {
        panic!("{:?}", result.error);
    };
    let ids: Vec<&str> = failures.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["claude-test", "gpt-test"]);
    assert!(matches!(failures[0].1, ModelError::Overloaded { .. }));
    assert!(matches!(
        failures[1].1,
        ModelError::Server { status: 503, .. }
    ));
    let message = result.error.as_ref().unwrap().to_string();
    assert!(message.contains("claude-test: "), "{message}");
    assert!(message.contains("gpt-test: "), "{message}");
    assert_eq!(fallbacks(&events).len(), 1);
}

/// Fallback models in a config file: `[[fallback_models]]` tables, written back the same.
#[test]
fn fallback_models_come_from_a_config_file() {
    let config: AgentConfig = toml::from_str(
        r#"
        [model]
        provider = "anthropic"
        id = "claude-sonnet-4-5"
        [[fallback_models]]
        provider = "openai"
        id = "gpt-4.1"
        [[fallback_models]]
        provider = "anthropic"
        id = "claude-haiku-4-5"
        "#,
    )
    .unwrap();
    let ids: Vec<String> = config
        .model
        .fallback_models
        .iter()
        .map(|source| format!("{source:?}"))
        .collect();
    assert_eq!(ids.len(), 2);
    assert!(ids[0].contains("gpt-4.1") && ids[1].contains("claude-haiku-4-5"));
    let written = toml::to_string(&config).unwrap();
    let again: AgentConfig = toml::from_str(&written).unwrap();
    assert_eq!(again.model.fallback_models.len(), 2, "{written}");
}

/// `provider:id`, or an id that names its provider; anything else says what to write.
#[test]
fn model_specs_parse_from_provider_and_id() {
    let spec: ModelSpec = "openai:gpt-4.1-mini".parse().unwrap();
    assert_eq!(spec.id, "gpt-4.1-mini");
    let spec: ModelSpec = "claude-haiku-4-5".parse().unwrap();
    assert_eq!(spec.provider, tool_sdk::agent::ProviderKind::Anthropic);
    let spec: ModelSpec = "o4-mini".parse().unwrap();
    assert_eq!(spec.provider, tool_sdk::agent::ProviderKind::OpenAi);
    let error = "llama3".parse::<ModelSpec>().unwrap_err().to_string();
    assert!(
        error.contains("`anthropic:<id>`, `openai:<id>` or `gemini:<id>`"),
        "{error}"
    );
    let error = "mistral:large"
        .parse::<ModelSpec>()
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("must be `anthropic`, `openai`, `openai-responses` or `gemini`"),
        "{error}"
    );
    assert!("openai:".parse::<ModelSpec>().is_err());
}

/// A budget needs every model's price: a fallback whose price is unknown is refused when the
/// agent is created, by name.
#[tokio::test]
async fn a_budget_with_an_unpriced_fallback_is_refused() {
    let main = serve("/v1/messages", vec![anthropic_text("unused")]).await;
    let spare = serve("/v1/chat/completions", vec![openai_text("unused")]).await;
    let gpt = OpenAiModel::new("gpt-unpriced", Some("test-key".into()))
        .with_base_url(format!("{}/v1", spare.uri()));
    let config = config(&main, &spare)
        .model(|m| m.with_fallback_models([gpt]))
        .limits(|l| l.with_max_budget_usd(1.0));
    let Err(error) = Agent::create(config).await else {
        panic!("created with an unpriced fallback and a budget");
    };
    assert!(error.to_string().contains("gpt-unpriced"), "{error}");
}
