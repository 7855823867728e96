//! Costs and budgets end to end: what each turn and run cost at known prices (on
//! `ScriptedModel`, and on the Anthropic and OpenAI clients against local mock servers
//! replaying recorded streams), and runs stopped by a budget: their calls answered without
//! running, the reason reported, the session resumable.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent, ConfigError, RunResult};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::{
    Catalog, Message, MessageContent, Model, ModelEvent, ModelInfo, ModelRequest, Price,
    RetryPolicy, Role, ScriptedModel, ScriptedTurn, Usage,
};
use tool_sdk::session::SqliteStore;
use tool_sdk::{ContentBlock, State, ToolRegistry, tool};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

// ---- a tool that counts its runs ----

/// How many times `touch` ran.
#[derive(Clone, Default)]
struct Runs(Arc<AtomicUsize>);

/// Touches a file (it only counts).
#[tool(register = false)]
async fn touch(file: String, runs: State<Runs>) -> String {
    runs.0.0.fetch_add(1, Ordering::SeqCst);
    format!("touched {file}")
}

/// The weather somewhere (it only counts, as a read).
#[tool(register = false, read_only)]
async fn get_weather(location: String, runs: State<Runs>) -> String {
    runs.0.0.fetch_add(1, Ordering::SeqCst);
    format!("sunny in {location}")
}

// ---- helpers ----

/// USD per million: input 1, output 10, cache reads 0.1, cache writes 2.
fn price() -> Price {
    Price {
        input: 1.0,
        output: 10.0,
        cache_read: 0.1,
        cache_write: 2.0,
    }
}

fn usage(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_input_tokens: cache_read,
        cache_creation_input_tokens: cache_write,
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-12
}

/// An agent config on `model` with the `touch` tool allowed and the scripted model priced.
fn config(model: ScriptedModel, runs: &Runs) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(TouchTool)).unwrap();
    registry.register(Arc::new(GetWeatherTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
        .with_state(runs.clone())
        .model(|m| m.with_model_info("scripted", ModelInfo::new(100_000, price())))
        .permissions(|p| p.allow("touch"))
}

fn touch_twice() -> ScriptedTurn {
    ScriptedTurn::tool_call_with_id("call_a", "touch", json!({"file": "a"})).with_tool_call_id(
        "call_b",
        "touch",
        json!({"file": "b"}),
    )
}

/// The run's result and the cost of each of its turns, from the event stream.
async fn run_collecting(agent: &Agent, prompt: &str) -> (RunResult, Vec<Option<f64>>) {
    let mut run = agent.run(prompt);
    let mut costs = Vec::new();
    let mut result = None;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::TurnCompleted { cost_usd, .. } => costs.push(cost_usd),
            AgentEvent::Finished(finished) => result = Some(*finished),
            _ => {}
        }
    }
    (result.expect("a Finished event"), costs)
}

/// The tool_result blocks of the last user message holding any: (id, text, is_error).
fn last_results(messages: &[Message]) -> Vec<(String, String, bool)> {
    let message = messages
        .iter()
        .rev()
        .find(|m| {
            m.role == Role::User
                && m.content
                    .iter()
                    .any(|b| matches!(b, MessageContent::ToolResult { .. }))
        })
        .expect("a message with tool results");
    message
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text = content
                    .iter()
                    .map(|c| match c {
                        ContentBlock::Text { text } => text.as_str(),
                        _ => "",
                    })
                    .collect();
                Some((tool_use_id.clone(), text, *is_error))
            }
            _ => None,
        })
        .collect()
}

/// A recorded stream beside the project (`../shared/fixtures/...`), when present.
fn shared_fixture(kind: &str, name: &str) -> Option<String> {
    let file: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../shared/fixtures")
        .join(kind)
        .join(name);
    match std::fs::read_to_string(&file) {
        Ok(text) => Some(text),
        Err(_) => {
            eprintln!("skipping: no recorded fixture at {}", file.display());
            None
        }
    }
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

// ---- costs ----

#[tokio::test]
async fn each_turn_and_run_has_its_cost_and_the_agent_keeps_the_total() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("touch", json!({"file": "a"})).with_usage(usage(1000, 100, 0, 0)),
        ScriptedTurn::text("done").with_usage(usage(200, 50, 1000, 500)),
        ScriptedTurn::text("again").with_usage(usage(10, 10, 0, 0)),
    ]);
    let agent = Agent::create(config(model, &runs)).await.unwrap();
    assert_eq!(agent.model_info().unwrap().price, price());

    let (result, costs) = run_collecting(&agent, "touch a").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let first = (1000.0 * 1.0 + 100.0 * 10.0) / 1e6;
    let second = (200.0 + 50.0 * 10.0 + 1000.0 * 0.1 + 500.0 * 2.0) / 1e6;
    assert_eq!(costs.len(), 2);
    assert!(close(costs[0].unwrap(), first), "{costs:?}");
    assert!(close(costs[1].unwrap(), second), "{costs:?}");
    assert!(close(result.cost_usd.unwrap(), first + second));
    assert_eq!(result.usage, usage(1200, 150, 1000, 500));

    let again = agent.prompt("again").await.unwrap();
    let third = (10.0 + 10.0 * 10.0) / 1e6;
    assert!(close(again.cost_usd.unwrap(), third));
    assert_eq!(agent.total_usage(), usage(1210, 160, 1000, 500));
    assert!(close(
        agent.total_cost_usd().unwrap(),
        first + second + third
    ));
}

#[tokio::test]
async fn an_unknown_model_has_no_cost_and_cannot_have_a_budget() {
    let model = ScriptedModel::new([ScriptedTurn::text("hi").with_usage(usage(10, 1, 0, 0))]);
    // An empty catalog: "scripted" is unknown.
    let config = AgentConfig::new()
        .with_model(model)
        .with_tools(["Read"])
        .model(|m| m.with_catalog(Catalog::empty()));
    let agent = Agent::create(config.clone()).await.unwrap();
    let (result, costs) = run_collecting(&agent, "hi").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!((result.cost_usd, costs), (None, vec![None]));
    assert_eq!(agent.total_cost_usd(), None);
    assert_eq!(agent.total_usage(), usage(10, 1, 0, 0));

    let error = Agent::create(config.limits(|l| l.with_max_budget_usd(1.0)))
        .await
        .err()
        .unwrap();
    assert!(
        matches!(
            &error,
            AgentError::Config(ConfigError::UnknownPrice { model }) if model == "scripted"
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("price of the model `scripted`"),
        "{error}"
    );
}

// ---- budgets ----

#[tokio::test]
async fn a_token_limit_stops_the_run_and_the_next_prompt_continues() {
    let runs = Runs::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("touch", json!({"file": "first"})).with_usage(usage(60, 10, 0, 0)),
        touch_twice().with_usage(usage(40, 10, 0, 0)),
        ScriptedTurn::text("all right").with_usage(usage(5, 5, 0, 0)),
    ]);
    let agent = Agent::create(config(model, &runs).limits(|l| l.with_max_run_tokens(100)))
        .await
        .unwrap();
    let error = agent.prompt("touch things").await.unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::TokenLimitExceeded {
                spent: 120,
                limit: 100
            }
        ),
        "{:?}",
        error
    );
    assert!(error.to_string().contains("max_run_tokens"), "{error}");
    // The first turn's call ran; the second turn's did not, and the model was told why.
    assert_eq!(runs.0.load(Ordering::SeqCst), 1);
    let messages = agent.messages().await;
    let results = last_results(&messages);
    assert_eq!(results.len(), 2);
    for (id, text, is_error) in &results {
        assert!(is_error, "{id}: {text}");
        assert!(text.contains("did not run"), "{text}");
        assert!(text.contains("limit of 100 tokens"), "{text}");
    }
    assert_eq!(results[0].0, "call_a");
    assert_eq!(results[1].0, "call_b");

    // A fresh budget for the next run: the conversation goes on.
    let next = agent.prompt("go on").await.unwrap();
    assert_eq!(next.text, "all right");
    assert_eq!(runs.0.load(Ordering::SeqCst), 1);
    assert_eq!(agent.total_usage().total_tokens(), 130);
}

#[tokio::test]
async fn a_dollar_budget_stops_mid_turn_and_the_stored_session_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("sessions.db")).unwrap());
    let runs = Runs::default();
    // $0.001 + $0.001 reaches the $0.002 budget with the second turn, which calls tools.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("touch", json!({"file": "first"})).with_usage(usage(1000, 0, 0, 0)),
        touch_twice().with_usage(usage(0, 100, 0, 0)),
    ]);
    let budgeted = |model| {
        config(model, &runs)
            .session(|s| s.with_store(store.clone()))
            .limits(|l| l.with_max_budget_usd(0.002))
    };
    let agent = Agent::create(budgeted(model)).await.unwrap();
    let id = agent.session_id().to_owned();
    let (result, costs) = run_collecting(&agent, "touch things").await;
    match result.error {
        Some(AgentError::BudgetExceeded {
            spent_usd,
            limit_usd,
        }) => {
            assert!(close(spent_usd, 0.002) && limit_usd == 0.002);
        }
        other => panic!("expected BudgetExceeded, got {other:?}"),
    }
    assert_eq!(costs.len(), 2);
    assert!(close(result.cost_usd.unwrap(), 0.002));
    assert_eq!(runs.0.load(Ordering::SeqCst), 1);
    let results = last_results(&result.messages.to_vec());
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|(_, text, is_error)| *is_error
        && text.contains("did not run")
        && text.contains("budget of $0.00")));
    drop(agent);

    // The answers were stored: the resumed session has them, and its totals.
    let model =
        ScriptedModel::new([ScriptedTurn::text("stopped there").with_usage(usage(10, 0, 0, 0))]);
    let resumed = Agent::resume(budgeted(model), &id).await.unwrap();
    assert_eq!(resumed.messages().await, result.messages);
    assert_eq!(resumed.total_usage(), usage(1000, 100, 0, 0));
    assert!(close(resumed.total_cost_usd().unwrap(), 0.002));
    let next = resumed.prompt("what happened?").await.unwrap();
    assert_eq!(next.text, "stopped there");
    assert_eq!(runs.0.load(Ordering::SeqCst), 1);
    // The tool results and the new prompt went out as one user message.
    let messages = resumed.messages().await;
    let asked = &messages[messages.len() - 2];
    assert_eq!(asked.role, Role::User);
    assert_eq!(asked.content.len(), 3);
}

#[tokio::test]
async fn a_final_answer_past_the_budget_is_not_an_error() {
    let runs = Runs::default();
    let model =
        ScriptedModel::new([ScriptedTurn::text("expensive").with_usage(usage(0, 1_000_000, 0, 0))]);
    let agent = Agent::create(config(model, &runs).limits(|l| l.with_max_budget_usd(1.0)))
        .await
        .unwrap();
    let result = agent.prompt("hi").await.unwrap();
    assert_eq!(result.text, "expensive");
    assert!(close(result.cost_usd.unwrap(), 10.0));
}

// ---- recorded streams over HTTP ----

#[tokio::test]
async fn anthropic_recorded_streams_with_cache_tokens_are_priced() {
    let (Some(tool_use), Some(text)) = (
        shared_fixture("anthropic", "tool_use_response.sse"),
        shared_fixture("anthropic", "basic_response.sse"),
    ) else {
        return;
    };
    // The recording has the cache fields, at 0: give them values to count.
    assert!(tool_use.contains(r#""cache_read_input_tokens":0"#));
    let tool_use = tool_use
        .replace(
            r#""cache_read_input_tokens":0"#,
            r#""cache_read_input_tokens":1200"#,
        )
        .replace(
            r#""cache_creation_input_tokens":0"#,
            r#""cache_creation_input_tokens":300"#,
        );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(tool_use))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(text))
        .mount(&server)
        .await;
    let model = AnthropicModel::new("claude-sonnet-4-5-20250929", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(AgentConfig::new().with_model(model).with_tools(["Read"]))
        .await
        .unwrap();
    let (result, costs) = run_collecting(&agent, "Weather in Paris?").await;
    // get_weather is not a tool here: its call fails, and the model answers.
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.usage, usage(377 + 11, 65 + 6, 1200, 300));
    let first = (377.0 * 3.0 + 65.0 * 15.0 + 1200.0 * 0.3 + 300.0 * 3.75) / 1e6;
    let second = (11.0 * 3.0 + 6.0 * 15.0) / 1e6;
    assert!(close(costs[0].unwrap(), first), "{costs:?}");
    assert!(close(costs[1].unwrap(), second), "{costs:?}");
    assert!(close(result.cost_usd.unwrap(), first + second));
}

#[tokio::test]
async fn a_read_only_call_started_while_the_turn_streamed_finishes_past_the_limit() {
    let Some(tool_use) = shared_fixture("anthropic", "tool_use_response.sse") else {
        return;
    };
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(sse(tool_use))
        .mount(&server)
        .await;
    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none());
    let runs = Runs::default();
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GetWeatherTool)).unwrap();
    let config = AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
        .with_state(runs.clone())
        .limits(|l| l.with_max_run_tokens(100));
    let agent = Agent::create(config).await.unwrap();
    let result = agent.run("Weather in Paris?").result().await;
    assert!(
        matches!(
            &result.error,
            Some(AgentError::TokenLimitExceeded { spent, limit: 100 }) if *spent == 377 + 65
        ),
        "{:?}",
        result.error
    );
    // get_weather started as its block arrived, before the turn's usage: it ran, and its
    // result is the model's to see; no second request was sent.
    assert_eq!(runs.0.load(Ordering::SeqCst), 1);
    assert_eq!(result.tool_calls, 1);
    let results = last_results(&result.messages.to_vec());
    assert_eq!(
        results,
        [(
            "toolu_01NRLabsLyVHZPKxbKvkfSMn".to_owned(),
            "sunny in Paris".to_owned(),
            false
        )]
    );
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn openai_cached_tokens_are_split_out_and_priced() {
    let Some(body) = shared_fixture("openai-chat", "single_tool_call.sse") else {
        return;
    };
    // The recording's usage chunk has no cache details: add them as OpenAI sends them.
    assert!(body.contains(r#""prompt_tokens":76,"#));
    let body = body.replace(
        r#""prompt_tokens":76,"#,
        r#""prompt_tokens":76,"prompt_tokens_details":{"cached_tokens":64,"audio_tokens":0},"#,
    );
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(sse(body))
        .mount(&server)
        .await;
    let model = OpenAiModel::new("gpt-4o-2024-08-06", Some("test-key".into()))
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy::none());
    let request = ModelRequest {
        messages: vec![Message::user("Weather in Paris?")].into(),
        max_tokens: 256,
        ..ModelRequest::default()
    };
    let mut stream = model.stream(&request);
    let mut response = None;
    while let Some(event) = stream.next().await {
        if let ModelEvent::Completed(done) = event.unwrap() {
            response = Some(done);
        }
    }
    let usage_seen = response.expect("a completed turn").usage;
    assert_eq!(usage_seen, usage(76 - 64, 24, 64, 0));
    // Usage is asked for in the stream.
    let sent: serde_json::Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    assert_eq!(sent["stream_options"]["include_usage"], true);
    let info = Catalog::default()
        .lookup(model.model_id())
        .copied()
        .unwrap();
    let expected = (12.0 * 2.5 + 24.0 * 10.0 + 64.0 * 1.25) / 1e6;
    assert!(close(info.price.cost_usd(&usage_seen), expected));
}
