//! The whole agent loop over committed cassettes (`tests/cassettes/<provider>/*.jsonl`, built
//! by `tests/cassettes/build.py` from the providers' documented example streams), each played
//! by `testing::ReplayServer` to the real HTTP client: parallel calls, thinking with tools, a
//! refusal, a `max_tokens` stop, an overloaded model and its fallback, a prompt too long and
//! its compaction. Then the recorder: what a client records replays to the same run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent, RunResult};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::cassette::Cassette;
use tool_sdk::model::gemini::GeminiModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::{Model, ModelError, RetryPolicy, StopReason};
use tool_sdk::testing::{ReplayError, ReplayServer};
use tool_sdk::{ToolRegistry, tool};

/// Gets the weather in a city.
#[tool(name = "get_weather", register = false, read_only)]
async fn get_weather(location: String) -> String {
    match location.as_str() {
        "New York, NY" => "rain, 12°C".into(),
        _ => "sunny, 21°C".into(),
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Provider {
    Anthropic,
    OpenAi,
    Gemini,
}

const PROVIDERS: [Provider; 3] = [Provider::Anthropic, Provider::OpenAi, Provider::Gemini];

impl Provider {
    fn folder(self) -> &'static str {
        match self {
            Provider::Anthropic => "anthropic",
            Provider::OpenAi => "openai",
            Provider::Gemini => "gemini",
        }
    }

    /// The client of `server`, with one fast retry.
    fn model(self, server: &ReplayServer) -> Arc<dyn Model> {
        let retry = RetryPolicy {
            max_retries: 1,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(5),
        };
        match self {
            Provider::Anthropic => Arc::new(
                AnthropicModel::new("claude-sonnet-4-5", "test-key")
                    .with_base_url(server.uri())
                    .with_retry(retry),
            ),
            Provider::OpenAi => Arc::new(
                OpenAiModel::new("gpt-4.1", Some("test-key".into()))
                    .with_base_url(format!("{}/v1", server.uri()))
                    .with_retry(retry),
            ),
            Provider::Gemini => Arc::new(
                GeminiModel::new("gemini-2.5-flash", "test-key")
                    .with_base_url(format!("{}/v1beta", server.uri()))
                    .with_retry(retry),
            ),
        }
    }

    /// The provider a fallback of this one goes to.
    fn other(self) -> Provider {
        match self {
            Provider::Anthropic => Provider::OpenAi,
            Provider::OpenAi => Provider::Gemini,
            Provider::Gemini => Provider::Anthropic,
        }
    }
}

fn cassette_path(provider: Provider, name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cassettes")
        .join(provider.folder())
        .join(format!("{name}.jsonl"))
}

async fn replay(provider: Provider, name: &str) -> ReplayServer {
    let path = cassette_path(provider, name);
    let server = ReplayServer::from_file(&path).await.unwrap();
    let cassette = Cassette::load(&path).unwrap();
    assert!(
        cassette.notes[0].contains("documented example streams"),
        "{} says where it came from",
        path.display()
    );
    server
}

fn config(model: Arc<dyn Model>) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GetWeatherTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
}

async fn run(config: AgentConfig, prompt: &str) -> (Vec<AgentEvent>, RunResult) {
    let agent = Agent::create(config).await.unwrap();
    let mut events: Vec<AgentEvent> = agent.run(prompt).collect().await;
    let Some(AgentEvent::Finished(result)) = events.pop() else {
        panic!("the run did not finish: {events:?}");
    };
    (events, *result)
}

/// The tool results the request `body` sends, in order, each as (call id or, for Gemini,
/// the tool's name; the result as JSON text), in each provider's wire format.
fn results(body: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for content in body["contents"].as_array().into_iter().flatten() {
        for part in content["parts"].as_array().into_iter().flatten() {
            if let Some(response) = part.get("functionResponse") {
                let name = response["name"].as_str().unwrap().to_owned();
                found.push((name, response["response"].to_string()));
            }
        }
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        if message["role"] == "tool" {
            found.push((
                message["tool_call_id"].as_str().unwrap().to_owned(),
                message["content"].to_string(),
            ));
        }
        for block in message["content"].as_array().into_iter().flatten() {
            if block["type"] == "tool_result" {
                found.push((
                    block["tool_use_id"].as_str().unwrap().to_owned(),
                    block["content"].to_string(),
                ));
            }
        }
    }
    found
}

#[tokio::test]
async fn parallel_calls_run_and_their_results_go_back_in_order() {
    for provider in PROVIDERS {
        let server = replay(provider, "parallel_tools").await;
        let (events, result) = run(config(provider.model(&server)), "Weather in SF and NY?").await;
        assert!(result.error.is_none(), "{provider:?}: {:?}", result.error);
        assert_eq!(result.text, "Sunny in San Francisco, rain in New York.");
        assert_eq!(result.tool_calls, 2, "{provider:?}");
        server.finish().unwrap();
        let bodies = server.bodies();
        let sent = results(&bodies[1]);
        assert_eq!(sent.len(), 2, "{provider:?}: {sent:?}");
        assert!(
            sent[0].1.contains("sunny") && sent[1].1.contains("rain"),
            "{sent:?}"
        );
        let completed = events
            .iter()
            .filter(|e| matches!(e, AgentEvent::ToolCompleted { .. }))
            .count();
        assert_eq!(completed, 2);
        assert!(
            result.usage.output_tokens > 0,
            "{provider:?}: usage counted"
        );
    }
}

/// Anthropic's thinking block comes back with the call, streams as thinking, and goes back
/// with its signature unchanged (the cassette's second request checks it).
#[tokio::test]
async fn thinking_goes_back_with_its_signature_across_a_tool_turn() {
    let server = replay(Provider::Anthropic, "thinking_with_tools").await;
    let model = Provider::Anthropic.model(&server);
    let (events, result) = run(config(model), "Weather in SF?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "It is sunny in San Francisco.");
    server.finish().unwrap();
    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ThinkingDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        thinking,
        "The user wants the weather; I should call the tool."
    );
}

#[tokio::test]
async fn a_refusal_ends_the_run_as_a_refusal() {
    for provider in PROVIDERS {
        let server = replay(provider, "refusal").await;
        let (_, result) = run(config(provider.model(&server)), "Something bad").await;
        server.finish().unwrap();
        assert_eq!(
            result.stop_reason,
            Some(StopReason::Refusal),
            "{provider:?}"
        );
        // Gemini's blocked answer has no text; the others say why.
        if provider != Provider::Gemini {
            assert!(result.text.contains("can't help"), "{provider:?}");
        }
    }
}

#[tokio::test]
async fn a_max_tokens_stop_is_said() {
    for provider in PROVIDERS {
        let server = replay(provider, "max_tokens").await;
        let (_, result) = run(config(provider.model(&server)), "Write a lot").await;
        server.finish().unwrap();
        assert_eq!(
            result.stop_reason,
            Some(StopReason::MaxTokens),
            "{provider:?}"
        );
        assert_eq!(result.text, "Here is the first part of a very long");
    }
}

/// Each provider's overloaded answers, twice (its retry), then the other provider's
/// recorded answer as the fallback.
#[tokio::test]
async fn an_overloaded_provider_falls_back_to_the_other() {
    for provider in PROVIDERS {
        let main = replay(provider, "overloaded").await;
        let spare = replay(provider.other(), "max_tokens").await;
        let config = config(provider.model(&main))
            .model(|m| m.with_fallback_models([provider.other().model(&spare)]));
        let (events, result) = run(config, "Hi").await;
        main.finish().unwrap();
        spare.finish().unwrap();
        assert!(result.error.is_none(), "{provider:?}: {:?}", result.error);
        let switched = events
            .iter()
            .any(|e| matches!(e, AgentEvent::ModelFallback { .. }));
        assert!(switched, "{provider:?}");
        assert_eq!(result.text, "Here is the first part of a very long");
    }
}

/// A request refused as too long is answered by one compaction (a summary request) and sent
/// again on the compacted conversation.
#[tokio::test]
async fn a_prompt_too_long_is_compacted_and_sent_again() {
    for provider in PROVIDERS {
        let server = replay(provider, "prompt_too_long").await;
        let config = config(provider.model(&server)).context(|c| c.with_window(1_000_000));
        let (events, result) = run(config, "Weather in SF?").await;
        assert!(result.error.is_none(), "{provider:?}: {:?}", result.error);
        assert_eq!(result.text, "It is sunny in San Francisco.");
        server.finish().unwrap();
        let compacted = events
            .iter()
            .any(|e| matches!(e, AgentEvent::Compacted { .. }));
        assert!(compacted, "{provider:?}");
        let bodies = server.bodies();
        assert!(
            bodies[3].to_string().contains("SUMMARY: the user asked"),
            "{provider:?}: the retried request starts from the summary"
        );
    }
}

/// A request that differs from the recorded one is answered with the difference, which
/// reaches the run's error as the provider's message, and the replay fails.
#[tokio::test]
async fn a_request_unlike_the_recorded_one_is_named() {
    let mut cassette = Cassette::load(cassette_path(Provider::Anthropic, "refusal")).unwrap();
    cassette.interactions[0].request.body = Some(json!({"max_tokens": 7}));
    let server = ReplayServer::start(cassette).await;
    let (_, result) = run(config(Provider::Anthropic.model(&server)), "Hi").await;
    let Some(AgentError::Model(ModelError::Api {
        status: 400,
        message,
    })) = &result.error
    else {
        panic!("{:?}", result.error);
    };
    assert!(
        message.contains("replay: request 1: body /max_tokens: expected 7, got 8192"),
        "{message}"
    );
    assert!(matches!(server.finish(), Err(ReplayError::Mismatched(_))));
}

/// What a client records (every attempt, no key) replays to the same run.
#[tokio::test]
async fn a_recorded_run_replays_the_same() {
    for provider in PROVIDERS {
        let original = replay(provider, "parallel_tools").await;
        let dir = tempfile::tempdir().unwrap();
        let model: Arc<dyn Model> = match provider {
            Provider::Anthropic => Arc::new(
                AnthropicModel::new("claude-sonnet-4-5", "secret-test-key")
                    .with_base_url(original.uri())
                    .with_recording(dir.path()),
            ),
            Provider::OpenAi => Arc::new(
                OpenAiModel::new("gpt-4.1", Some("secret-test-key".into()))
                    .with_base_url(format!("{}/v1", original.uri()))
                    .with_recording(dir.path()),
            ),
            Provider::Gemini => Arc::new(
                GeminiModel::new("gemini-2.5-flash", "secret-test-key")
                    .with_base_url(format!("{}/v1beta", original.uri()))
                    .with_recording(dir.path()),
            ),
        };
        let (_, first) = run(config(model), "Weather in SF and NY?").await;
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "{provider:?}: one file a model");
        let recorded_path = files[0].as_ref().unwrap().path();
        let text = std::fs::read_to_string(&recorded_path).unwrap();
        assert!(
            !text.contains("secret-test-key"),
            "{provider:?}: the key is never recorded"
        );
        let recorded = Cassette::parse(&text).unwrap();
        assert_eq!(recorded.interactions.len(), 2, "{provider:?}");
        assert!(recorded.interactions[1].response.body.contains("Francisco"));

        let again = ReplayServer::start(recorded).await;
        let (_, second) = run(config(provider.model(&again)), "Weather in SF and NY?").await;
        again.finish().unwrap();
        assert_eq!(first.text, second.text, "{provider:?}");
        assert_eq!(first.usage, second.usage, "{provider:?}");
        assert_eq!(first.tool_calls, second.tool_calls);
    }
}
