//! The OpenAI Responses client through the whole agent loop, over the committed cassettes of
//! `tests/cassettes/openai-responses/` (built by `tests/cassettes/build.py` from OpenAI's
//! documented Responses streaming events; no key was available): reasoning carried across
//! parallel tool calls and a resume, a refusal, a `max_output_tokens` stop, a typed answer, an
//! overloaded server and its fallback, a prompt too long and its compaction; then the config
//! file's `provider = "openai-responses"`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_sdk::agent::{
    Agent, AgentConfig, AgentError, AgentEvent, ModelSpec, ProviderKind, SessionLeasing,
};
use tool_sdk::model::cassette::Cassette;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::openai_responses::{OpenAiResponsesModel, ReasoningEffort, ReasoningSummary};
use tool_sdk::model::{Model, ModelError, RetryPolicy, StopReason, Usage};
use tool_sdk::session::SqliteStore;
use tool_sdk::testing::ReplayServer;
use tool_sdk::{JsonSchema, ToolRegistry, schemars, tool};

/// Gets the weather in a city.
#[tool(name = "get_weather", register = false, read_only)]
async fn get_weather(location: String) -> String {
    match location.as_str() {
        "New York, NY" => "rain, 12°C".into(),
        _ => "sunny, 21°C".into(),
    }
}

fn cassette_path(folder: &str, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cassettes")
        .join(folder)
        .join(format!("{name}.jsonl"))
}

async fn replay(name: &str) -> ReplayServer {
    let path = cassette_path("openai-responses", name);
    let cassette = Cassette::load(&path).unwrap();
    assert!(
        cassette.notes[0].contains("OpenAI Responses API's documented example streams"),
        "{} says where it came from",
        path.display()
    );
    ReplayServer::start(cassette).await
}

fn fast_retry() -> RetryPolicy {
    RetryPolicy {
        max_retries: 1,
        initial_backoff: Duration::from_millis(1),
        max_backoff: Duration::from_millis(5),
    }
}

fn model(server: &ReplayServer) -> OpenAiResponsesModel {
    OpenAiResponsesModel::new("gpt-5", "test-key")
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(fast_retry())
}

fn config(model: impl Into<tool_sdk::agent::ModelSource>) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GetWeatherTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
}

async fn run_agent(agent: &Agent, prompt: &str) -> (Vec<AgentEvent>, tool_sdk::agent::RunResult) {
    let mut events: Vec<AgentEvent> = agent.run(prompt).collect().await;
    let Some(AgentEvent::Finished(result)) = events.pop() else {
        panic!("the run did not finish: {events:?}");
    };
    (events, *result)
}

async fn run(config: AgentConfig, prompt: &str) -> (Vec<AgentEvent>, tool_sdk::agent::RunResult) {
    let agent = Agent::create(config).await.unwrap();
    run_agent(&agent, prompt).await
}

/// The reasoning item the cassette's first turn streams, as the next requests must carry it.
fn first_reasoning(server: &ReplayServer) -> Value {
    server.bodies()[1]["input"][1].clone()
}

/// Reasoning, two calls in parallel, the answer; the session saved, resumed, prompted again:
/// each reasoning item goes back whole (its `encrypted_content` unchanged) before the calls it
/// preceded, with every `function_call_output`, on the next request and after the resume.
#[tokio::test]
async fn reasoning_goes_back_unchanged_across_tool_turns_and_a_resume() {
    let server = replay("reasoning_parallel_tools").await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    let model = model(&server)
        .with_reasoning_effort(ReasoningEffort::Medium)
        .with_reasoning_summary(ReasoningSummary::Auto);
    let model: Arc<dyn Model> = Arc::new(model);
    // No lease: the resumed agent follows this one in the same process, at once.
    let stored = |model: Arc<dyn Model>, store: SqliteStore| {
        config(model).session(|s| s.with_store(store).with_lease(SessionLeasing::Off))
    };
    let agent = Agent::create(stored(model.clone(), store.clone()))
        .await
        .unwrap();
    let (events, result) = run_agent(&agent, "Weather in SF and NY?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "Sunny in San Francisco, rain in New York.");
    assert_eq!(result.tool_calls, 2);
    assert_eq!(result.stop_reason, Some(StopReason::EndTurn));

    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ThinkingDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        thinking.starts_with("**Checking two cities**")
            && thinking.ends_with("Both results are in."),
        "{thinking}"
    );
    // Cached input counted once, as cache reads; reasoning tokens within the output.
    assert_eq!(
        result.usage,
        Usage {
            input_tokens: (812 - 512) + (1024 - 768),
            output_tokens: 146 + 40,
            cache_read_input_tokens: 512 + 768,
            cache_creation_input_tokens: 0,
        }
    );

    let bodies = server.bodies();
    let reasoning = first_reasoning(&server);
    assert_eq!(reasoning["type"], "reasoning");
    assert_eq!(reasoning["id"], "rs_68af1c1");
    assert_eq!(
        reasoning["encrypted_content"],
        "gAAAAABoq-encrypted-reasoning-one-opaque-to-us"
    );
    let kinds: Vec<&str> = bodies[1]["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    assert!(
        bodies[1]["input"][4]["output"]
            .as_str()
            .unwrap()
            .contains("sunny")
    );
    assert!(
        bodies[1]["input"][5]["output"]
            .as_str()
            .unwrap()
            .contains("rain")
    );
    let id = agent.session_id().to_owned();
    drop(agent);

    let resumed = Agent::resume(stored(model, store), &id).await.unwrap();
    let (_, again) = run_agent(&resumed, "And tomorrow?").await;
    assert!(again.error.is_none(), "{:?}", again.error);
    assert_eq!(again.text, "Tomorrow: the same.");
    server.finish().unwrap();
    let bodies = server.bodies();
    assert_eq!(
        bodies[2]["input"][1], reasoning,
        "the stored reasoning item goes back as it came"
    );
}

#[tokio::test]
async fn a_refusal_ends_the_run_as_a_refusal() {
    let server = replay("refusal").await;
    let (_, result) = run(config(model(&server)), "Something bad").await;
    server.finish().unwrap();
    assert_eq!(result.stop_reason, Some(StopReason::Refusal));
    assert_eq!(result.text, "I'm sorry, I can't help with that.");
}

#[tokio::test]
async fn an_incomplete_response_at_max_output_tokens_is_a_max_tokens_stop() {
    let server = replay("max_output_tokens").await;
    let (_, result) = run(config(model(&server)), "Write a lot").await;
    server.finish().unwrap();
    assert_eq!(result.stop_reason, Some(StopReason::MaxTokens));
    assert_eq!(result.text, "Here is the first part of a very long");
    assert_eq!(result.usage.output_tokens, 8192);
}

/// A city's weather.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    temperature_c: i32,
}

/// A typed answer is asked for as `text.format`, a strict JSON schema, and read from the text.
#[tokio::test]
async fn a_typed_answer_comes_through_text_format() {
    let server = replay("typed_output").await;
    let agent = Agent::create(config(model(&server))).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Paris?").await.unwrap();
    server.finish().unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Paris".into(),
            temperature_c: 21
        }
    );
    let format = &server.bodies()[0]["text"]["format"];
    assert_eq!(format["schema"]["additionalProperties"], false);
    assert_eq!(
        format["schema"]["required"],
        json!(["city", "temperature_c"])
    );
}

/// HTTP 503 twice (the retry), then the Chat Completions client's recorded answer as the
/// fallback; without a fallback the run's error is the server's, with OpenAI's own message.
#[tokio::test]
async fn an_overloaded_server_is_retried_then_falls_back() {
    let main = replay("overloaded").await;
    let spare_server = ReplayServer::from_file(cassette_path("openai", "refusal"))
        .await
        .unwrap();
    let spare = OpenAiModel::new("gpt-4.1", Some("test-key".into()))
        .with_base_url(format!("{}/v1", spare_server.uri()));
    let with_spare = config(model(&main)).model(|m| m.with_fallback_models([spare]));
    let (events, result) = run(with_spare, "Hi").await;
    main.finish().unwrap();
    spare_server.finish().unwrap();
    assert!(result.error.is_none(), "{:?}", result.error);
    let reason = events.iter().find_map(|e| match e {
        AgentEvent::ModelFallback { from, reason, .. } => Some((from.clone(), reason.clone())),
        _ => None,
    });
    let (from, reason) = reason.expect("a fallback");
    assert_eq!(from, "gpt-5");
    assert!(reason.contains("503"), "{reason}");
    assert!(result.text.contains("can't help"));

    let alone = replay("overloaded").await;
    let (_, result) = run(config(model(&alone)), "Hi").await;
    alone.finish().unwrap();
    let Some(AgentError::Model(ModelError::Server { status, message })) = &result.error else {
        panic!("{:?}", result.error);
    };
    assert_eq!(*status, 503);
    // OpenAI's own message, naming OpenAI.
    assert_eq!(
        message,
        "OpenAI: The server is overloaded or not ready yet."
    );
}

/// `context_length_exceeded` is a prompt too long: one compaction, and the request again.
#[tokio::test]
async fn a_prompt_too_long_is_compacted_and_sent_again() {
    let server = replay("prompt_too_long").await;
    let windowed = config(model(&server)).context(|c| c.with_window(1_000_000));
    let (events, result) = run(windowed, "Weather in SF?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "It is sunny in San Francisco.");
    server.finish().unwrap();
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::Compacted { .. }))
    );
    let bodies = server.bodies();
    assert!(
        bodies[3]["input"][0]
            .to_string()
            .contains("SUMMARY: the user asked"),
        "the retried request starts from the summary: {}",
        bodies[3]["input"]
    );
}

/// What the client records (every attempt, no key) replays to the same run, reasoning and all.
#[tokio::test]
async fn a_recorded_run_replays_the_same() {
    let original = replay("reasoning_parallel_tools").await;
    let dir = tempfile::tempdir().unwrap();
    let recording = OpenAiResponsesModel::new("gpt-5", "secret-test-key")
        .with_base_url(format!("{}/v1", original.uri()))
        .with_reasoning_effort(ReasoningEffort::Medium)
        .with_reasoning_summary(ReasoningSummary::Auto)
        .with_recording(dir.path());
    let path = recording.recording_path().unwrap().to_owned();
    assert!(
        path.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("openai-responses-"),
        "{}",
        path.display()
    );
    let (_, first) = run(config(recording), "Weather in SF and NY?").await;
    assert!(first.error.is_none(), "{:?}", first.error);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains("secret-test-key"),
        "the key is never recorded"
    );
    let recorded = Cassette::parse(&text).unwrap();
    assert_eq!(recorded.interactions.len(), 2);
    assert!(
        recorded.interactions[0]
            .response
            .body
            .contains("event: response.output_item.done")
    );

    let again = ReplayServer::start(recorded).await;
    let replaying = model(&again)
        .with_reasoning_effort(ReasoningEffort::Medium)
        .with_reasoning_summary(ReasoningSummary::Auto);
    let (_, second) = run(config(replaying), "Weather in SF and NY?").await;
    again.finish().unwrap();
    assert_eq!(first.text, second.text);
    assert_eq!(first.usage, second.usage);
    assert_eq!(second.tool_calls, 2);
}

/// `provider = "openai-responses"` in a file and `openai-responses:<id>` on a command line
/// build this client; without a key the agent is not created, and the error names the
/// variable.
#[tokio::test]
async fn the_provider_is_named_openai_responses_in_files_and_specs() {
    let from_file: AgentConfig = toml::from_str(
        r#"
        [model]
        provider = "openai-responses"
        id = "gpt-5"
        api_key_env = "TOOL_SDK_TEST_NO_SUCH_KEY"
        "#,
    )
    .unwrap();
    let written = toml::to_string(&from_file).unwrap();
    assert!(
        written.contains("provider = \"openai-responses\""),
        "{written}"
    );
    let Err(error) = Agent::create(from_file).await else {
        panic!("created without a key");
    };
    assert!(
        matches!(&error, AgentError::Model(ModelError::MissingApiKey(m))
            if m.contains("TOOL_SDK_TEST_NO_SUCH_KEY") && m.contains("Responses")),
        "{error}"
    );

    let spec: ModelSpec = "openai-responses:gpt-5-mini".parse().unwrap();
    assert_eq!(spec.provider, ProviderKind::OpenAiResponses);
    assert_eq!(spec.id, "gpt-5-mini");

    let server = replay("refusal").await;
    let spec = ModelSpec {
        base_url: Some(format!("{}/v1", server.uri())),
        api_key: Some("test-key".into()),
        id: "gpt-5".into(),
        ..spec
    };
    let (_, result) = run(config(spec), "Something bad").await;
    server.finish().unwrap();
    assert_eq!(result.stop_reason, Some(StopReason::Refusal));
}
