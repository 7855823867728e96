//! Anthropic's extended thinking through the whole agent loop, against a local server that
//! replays streams built from Anthropic's documented examples (no API key is available here to
//! record real ones; each fixture says so): what the requests ask (`thinking`,
//! `output_config.effort`, the interleaved-thinking beta header), the thinking and
//! redacted-thinking blocks going back unchanged on the following tool turns (after clearing
//! and after a resume too), the `ThinkingDelta` events, a typed answer's tool offered without
//! forcing, and the settings `Agent::create` refuses.

use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent, ConfigError, RunResult};
use tool_sdk::model::anthropic::{AnthropicModel, INTERLEAVED_THINKING_BETA};
use tool_sdk::model::{Effort, RetryPolicy, Thinking};
use tool_sdk::session::SqliteStore;
use tool_sdk::{JsonSchema, ToolRegistry, schemars, tool};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// The documented example's thinking, as its deltas add up.
const THINKING: &str = "The user wants to know the current weather in Paris. I have access to a \
                        function `get_weather` that can provide this information. Let me call \
                        it with Paris as the location.";
const SIGNATURE: &str = "BDaL4VrbR2Oj0hO4XpJxT28J5TILnCrrUXoKiiNBZW9P+nr8XSj1zuZzAl4egiCCpQNvfyUuFFJP5CncdYZEQPPmLxYsNrcs";
const REDACTED: &str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB9URj2pLmN3kF8/dW5hR7xJ0aP1oLs9yTcMnKVf2wRpEGjH9XZaBt4UvDcPrQ";

/// Gets the current weather for a location (the documented example's tool).
#[tool(name = "get_weather", register = false, read_only)]
async fn get_weather(location: String) -> String {
    format!("Current temperature in {location}: 88°F")
}

/// A long report, for a result worth clearing.
#[tool(name = "get_report", register = false, read_only)]
async fn get_report(location: String) -> String {
    format!("{location}: {}", "sunny and hot. ".repeat(250))
}

fn fixture(name: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/anthropic")
        .join(name);
    std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()))
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// A server answering its requests with `streams`, one each, in order.
async fn server(streams: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    for stream in streams {
        Mock::given(method("POST"))
            .respond_with(sse(stream))
            .up_to_n_times(1)
            .mount(&server)
            .await;
    }
    server
}

fn model(server: &MockServer, id: &str) -> AnthropicModel {
    AnthropicModel::new(id, "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none())
}

fn config(model: AnthropicModel) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(GetWeatherTool)).unwrap();
    registry.register(Arc::new(GetReportTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

fn beta(request: &Request) -> Option<&str> {
    request
        .headers
        .get("anthropic-beta")
        .and_then(|v| v.to_str().ok())
}

/// Runs `prompt` to the end: the thinking streamed, and the result.
async fn run(agent: &Agent, prompt: &str) -> (String, RunResult) {
    let mut run = agent.run(prompt);
    let mut thinking = String::new();
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ThinkingDelta(piece) => thinking.push_str(&piece),
            AgentEvent::Finished(result) => return (thinking, *result),
            _ => {}
        }
    }
    panic!("the run ended without Finished");
}

/// A turn in the documented shape (thinking with its signature, then a tool call or text),
/// for the extra turns a test needs beside the fixtures.
fn turn(thinking: &str, signature: &str, then: Value) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let delta = |index: usize, delta: Value| {
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": index, "delta": delta}),
        )
    };
    let stop_reason = if then["type"] == "tool_use" {
        "tool_use"
    } else {
        "end_turn"
    };
    let mut events = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_turn",
            "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        ),
        delta(0, json!({"type": "thinking_delta", "thinking": thinking})),
        delta(
            0,
            json!({"type": "signature_delta", "signature": signature}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    let start = match then["type"].as_str() {
        Some("tool_use") => json!({"type": "tool_use", "id": then["id"], "name": then["name"],
            "input": {}}),
        _ => json!({"type": "text", "text": ""}),
    };
    events.push(event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 1, "content_block": start}),
    ));
    events.push(match then["type"].as_str() {
        Some("tool_use") => delta(
            1,
            json!({"type": "input_json_delta", "partial_json": then["input"].to_string()}),
        ),
        _ => delta(1, json!({"type": "text_delta", "text": then["text"]})),
    });
    events.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 1}),
    ));
    events.push(event(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": 40}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events.concat()
}

#[tokio::test]
async fn budget_thinking_with_tools_asks_with_the_beta_and_sends_the_block_back_unchanged() {
    let server = server(vec![
        fixture("thinking_tool_use.sse"),
        fixture("thinking_after_tool.sse"),
    ])
    .await;
    let agent = Agent::create(config(model(&server, "claude-sonnet-4-5")).model(|m| {
        m.with_max_tokens(4096)
            .with_thinking(Thinking::budget(2048))
            .with_effort(Effort::Medium)
    }))
    .await
    .unwrap();
    let (thinking, result) = run(&agent, "What's the weather in Paris?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(
        result.text,
        "Currently in Paris, the temperature is 88°F (31°C)."
    );
    // Both turns' thinking streamed as ThinkingDelta events, in order.
    assert!(thinking.starts_with(THINKING), "{thinking}");
    assert!(
        thinking.ends_with("I will give it in Celsius too."),
        "{thinking}"
    );
    // Thinking is billed as output: the turns' output tokens, nothing counted apart.
    assert_eq!(result.usage.output_tokens, 130 + 64);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(beta(request), Some(INTERLEAVED_THINKING_BETA));
        let sent = body(request);
        assert_eq!(
            sent["thinking"],
            json!({"type": "enabled", "budget_tokens": 2048})
        );
        assert_eq!(sent["output_config"], json!({"effort": "medium"}));
        assert!(sent.get("temperature").is_none());
    }
    // The second request carries the first turn whole: its thinking first, with the
    // signature as it streamed, then the text and the call.
    let second = body(&requests[1]);
    let assistant = &second["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(
        assistant["content"][0],
        json!({"type": "thinking", "thinking": THINKING, "signature": SIGNATURE})
    );
    assert_eq!(assistant["content"][2]["type"], "tool_use");
    assert_eq!(
        second["messages"][2]["content"][0]["tool_use_id"],
        "toolu_01CswdEQBMshySk6Y9DFKrfq"
    );
}

#[tokio::test]
async fn adaptive_thinking_needs_no_beta_header() {
    let server = server(vec![
        fixture("thinking_tool_use.sse"),
        fixture("thinking_after_tool.sse"),
    ])
    .await;
    let agent = Agent::create(
        config(model(&server, "claude-opus-4-6"))
            .model(|m| m.with_thinking(Thinking::Adaptive).with_effort(Effort::Max)),
    )
    .await
    .unwrap();
    let (thinking, result) = run(&agent, "What's the weather in Paris?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert!(thinking.starts_with(THINKING));
    for request in server.received_requests().await.unwrap() {
        assert_eq!(beta(&request), None);
        let sent = body(&request);
        assert_eq!(sent["thinking"], json!({"type": "adaptive"}));
        assert_eq!(sent["output_config"]["effort"], "max");
    }
}

#[tokio::test]
async fn redacted_thinking_goes_back_as_it_came() {
    let server = server(vec![
        fixture("redacted_thinking_tool_use.sse"),
        fixture("thinking_after_tool.sse"),
    ])
    .await;
    let agent = Agent::create(
        config(model(&server, "claude-sonnet-4-5"))
            .model(|m| m.with_thinking(Thinking::budget(1024))),
    )
    .await
    .unwrap();
    let (_, result) = run(&agent, "What's the weather in Paris?").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let requests = server.received_requests().await.unwrap();
    let content = body(&requests[1])["messages"][1]["content"].clone();
    assert_eq!(content[0]["type"], "thinking");
    assert_eq!(
        content[1],
        json!({"type": "redacted_thinking", "data": REDACTED})
    );
    assert_eq!(content[2]["id"], "toolu_01RedactedWeather");
}

#[tokio::test]
async fn thinking_blocks_survive_clearing_and_a_resume() {
    let report = |id: &str| {
        json!({"type": "tool_use", "id": id, "name": "get_report",
        "input": {"location": "Paris"}})
    };
    let server = server(vec![
        turn("First the report.", "c2lnLW9uZQ==", report("toolu_a")),
        turn("Once more.", "c2lnLXR3bw==", report("toolu_b")),
        turn(
            "Done.",
            "c2lnLXRocmVl",
            json!({"type": "text", "text": "Hot."}),
        ),
        turn(
            "Again?",
            "c2lnLWZvdXI=",
            json!({"type": "text", "text": "Still hot."}),
        ),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    // A window small enough that the third request clears the first report.
    let settings = |config: AgentConfig| {
        config
            .model(|m| {
                m.with_max_tokens(4096)
                    .with_thinking(Thinking::budget(1024))
            })
            .context(|mut c| {
                c.keep_tool_results = 0;
                c.with_window(6000)
            })
            .session(|s| s.with_store(store.clone()))
    };
    let agent = Agent::create(settings(config(model(&server, "claude-sonnet-4-5"))))
        .await
        .unwrap();
    let (_, result) = run(&agent, "Report on Paris, twice.").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    let id = agent.session_id().to_owned();
    drop(agent);

    let resumed = Agent::resume(settings(config(model(&server, "claude-sonnet-4-5"))), &id)
        .await
        .unwrap();
    let (_, again) = run(&resumed, "And now?").await;
    assert!(again.error.is_none(), "{:?}", again.error);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 4);
    let first_turn = json!({"type": "thinking", "thinking": "First the report.",
        "signature": "c2lnLW9uZQ=="});
    let third = body(&requests[2]);
    // The first report was cleared; the thinking before its call was not touched.
    let cleared = third["messages"][2]["content"][0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(!cleared.contains("sunny and hot"), "{cleared}");
    assert_eq!(third["messages"][1]["content"][0], first_turn);
    assert_eq!(
        third["messages"][3]["content"][0],
        json!({"type": "thinking", "thinking": "Once more.", "signature": "c2lnLXR3bw=="})
    );
    // After the resume, every turn's thinking goes back as it was stored.
    let fourth = body(&requests[3]);
    assert_eq!(fourth["messages"][1]["content"][0], first_turn);
    assert_eq!(
        fourth["messages"][5]["content"][0],
        json!({"type": "thinking", "thinking": "Done.", "signature": "c2lnLXRocmVl"})
    );
}

#[tokio::test]
async fn thinking_blocks_survive_compaction() {
    let report = |id: &str| {
        json!({"type": "tool_use", "id": id, "name": "get_report",
        "input": {"location": "Paris"}})
    };
    let server = server(vec![
        turn("First the report.", "c2lnLW9uZQ==", report("toolu_a")),
        turn("Once more.", "c2lnLXR3bw==", report("toolu_b")),
        // The summary request's answer, then the turn the compacted view is sent for.
        turn(
            "Summing up.",
            "c2lnLXN1bQ==",
            json!({"type": "text", "text": "Two reports: hot."}),
        ),
        turn(
            "Done.",
            "c2lnLXRocmVl",
            json!({"type": "text", "text": "Hot."}),
        ),
    ])
    .await;
    // Results are never cleared here: the third request is compacted instead.
    let agent = Agent::create(
        config(model(&server, "claude-sonnet-4-5"))
            .model(|m| {
                m.with_max_tokens(4096)
                    .with_thinking(Thinking::budget(1024))
            })
            .context(|mut c| {
                c.keep_tool_results = 10;
                c.with_window(6000)
            }),
    )
    .await
    .unwrap();
    let mut run = agent.run("Report on Paris, twice.");
    let mut compacted = false;
    while let Some(event) = run.next().await {
        compacted |= matches!(event, AgentEvent::Compacted { .. });
    }
    assert!(compacted, "the conversation was not compacted");

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 4);
    let signed = [
        ("toolu_a", "First the report.", "c2lnLW9uZQ=="),
        ("toolu_b", "Once more.", "c2lnLXR3bw=="),
    ];
    // The summary request and the compacted view: every assistant turn they hold opens with
    // the thinking block it streamed, unchanged.
    for (index, request) in requests.iter().enumerate().skip(2) {
        let sent = body(request);
        let turns: Vec<&Value> = sent["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|message| message["role"] == "assistant")
            .collect();
        assert!(!turns.is_empty(), "request {index}: {sent}");
        for message in turns {
            let call = message["content"][1]["id"].as_str().unwrap();
            let (_, thinking, signature) = signed.iter().find(|(id, ..)| *id == call).unwrap();
            assert_eq!(
                message["content"][0],
                json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                "request {index}"
            );
        }
    }
    let last = body(&requests[3]);
    let opening = last["messages"][0]["content"][0]["text"].as_str().unwrap();
    assert!(opening.contains("Two reports: hot."), "{opening}");
}

/// A city's weather.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    fahrenheit: i32,
}

#[tokio::test]
async fn a_typed_answer_is_offered_not_forced_while_the_model_thinks() {
    let answer = json!({"type": "tool_use", "id": "toolu_answer", "name": "final_answer",
        "input": {"city": "Paris", "fahrenheit": 88}});
    let server = server(vec![turn("I know this.", "c2lnLWFuc3dlcg==", answer)]).await;
    let agent = Agent::create(
        config(model(&server, "claude-sonnet-4-5")).model(|m| m.with_thinking(Thinking::Adaptive)),
    )
    .await
    .unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Paris?").await.unwrap();
    assert_eq!(forecast.fahrenheit, 88);
    let sent = body(&server.received_requests().await.unwrap()[0]);
    // The API refuses forced tool use with thinking: no tool_choice, the tool offered.
    assert!(sent.get("tool_choice").is_none(), "{sent}");
    let tools: Vec<&str> = sent["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"final_answer"), "{tools:?}");
}

#[tokio::test]
async fn settings_the_api_would_refuse_fail_at_create() {
    let server = MockServer::start().await;
    let create = |id: &str, tools: bool, edit: fn(_) -> _| {
        let model = model(&server, id);
        let config = match tools {
            true => config(model),
            false => AgentConfig::new()
                .with_model(model)
                .with_registry(Arc::new(ToolRegistry::new())),
        };
        Agent::create(config.model(edit))
    };
    let config_error = |result: Result<Agent, AgentError>| match result {
        Err(AgentError::Config(error)) => error,
        Err(other) => panic!("not a config error: {other}"),
        Ok(_) => panic!("the agent was created"),
    };

    let small = config_error(
        create("claude-sonnet-4-5", true, |m| {
            m.with_thinking(Thinking::budget(512))
        })
        .await,
    );
    assert!(
        matches!(
            small,
            ConfigError::ThinkingBudgetTooSmall { budget_tokens: 512 }
        ),
        "{small:?}"
    );
    assert!(small.to_string().contains("1024"), "{small}");

    // Without tools there is no interleaved thinking: the budget must fit in max_tokens.
    let big = config_error(
        create("claude-sonnet-4-5", false, |m| {
            m.with_max_tokens(4096)
                .with_thinking(Thinking::budget(4096))
        })
        .await,
    );
    assert!(
        matches!(
            big,
            ConfigError::ThinkingBudgetNotBelowMaxTokens {
                budget_tokens: 4096,
                max_tokens: 4096
            }
        ),
        "{big:?}"
    );
    assert!(big.to_string().contains("raise `max_tokens`"), "{big}");
    // Claude 3.7 thinks between tool calls with no budget beyond max_tokens either.
    let old = create("claude-3-7-sonnet-20250219", true, |m| {
        m.with_max_tokens(4096)
            .with_thinking(Thinking::budget(8000))
    })
    .await;
    assert!(matches!(
        config_error(old),
        ConfigError::ThinkingBudgetNotBelowMaxTokens { .. }
    ));
    // With tools, a Claude 4 model's interleaved budget may exceed it.
    assert!(
        create("claude-sonnet-4-5", true, |m| {
            m.with_max_tokens(4096)
                .with_thinking(Thinking::budget(8000))
        })
        .await
        .is_ok()
    );

    let warm = config_error(
        create("claude-opus-4-6", true, |m| {
            m.with_thinking(Thinking::Adaptive).with_temperature(0.2)
        })
        .await,
    );
    assert!(
        matches!(warm, ConfigError::TemperatureWithThinking { temperature } if temperature == 0.2),
        "{warm:?}"
    );
    assert!(warm.to_string().contains("remove `temperature`"), "{warm}");
    assert!(server.received_requests().await.unwrap().is_empty());
}
