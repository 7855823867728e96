//! Typed final answers (`Agent::prompt_as`): asked for in each provider's own way (the exact
//! request bodies, against local HTTP servers), validated like tool inputs, sent back with
//! the list of problems when wrong, retried up to the bound, and on `ScriptedModel`.

use std::sync::Arc;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent, ConfigError};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::{
    Message, MessageContent, OutputFormat, RetryPolicy, Role, ScriptedModel, ScriptedTurn,
};
use tool_sdk::{JsonSchema, ToolRegistry, schemars, tool};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

/// A city's weather.
#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Forecast {
    city: String,
    celsius: i32,
    /// Anything worth knowing.
    note: Option<String>,
}

/// Looks a city up.
#[tool(register = false, read_only)]
async fn lookup(city: String) -> String {
    format!("{city}: 21 degrees")
}

/// A tool whose name the output tool needs.
#[tool(name = "final_answer", register = false, read_only)]
async fn squatter() -> String {
    String::new()
}

fn config(model: impl tool_sdk::model::Model) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(LookupTool)).unwrap();
    AgentConfig::new()
        .with_model(model)
        .with_registry(Arc::new(registry))
}

fn no_tools(model: impl tool_sdk::model::Model) -> AgentConfig {
    config(model).with_tools(Vec::<String>::new())
}

fn text_of(message: &Message) -> String {
    message
        .content
        .iter()
        .map(|block| match block {
            MessageContent::Text { text } => text.clone(),
            MessageContent::ToolResult { content, .. } => content
                .iter()
                .map(|c| match c {
                    tool_sdk::ContentBlock::Text { text } => text.clone(),
                    _ => String::new(),
                })
                .collect(),
            _ => String::new(),
        })
        .collect()
}

/// Every tool_use is answered by exactly one tool_result in the next message.
fn assert_transcript_valid(messages: &[Message]) {
    for (index, message) in messages.iter().enumerate() {
        let uses: Vec<&str> = message.tool_uses().map(|u| u.id.as_str()).collect();
        if uses.is_empty() {
            continue;
        }
        let answered: Vec<&str> = messages[index + 1]
            .content
            .iter()
            .filter_map(|b| match b {
                MessageContent::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(uses, answered, "message {index}");
    }
}

// ---- ScriptedModel ----

#[tokio::test]
async fn a_wrong_text_answer_goes_back_with_its_errors_and_the_next_one_is_taken() {
    let model = ScriptedModel::new([
        ScriptedTurn::output(json!({"city": "Lisbon", "celsius": "warm"})),
        ScriptedTurn::output(json!({"city": "Lisbon", "celsius": 21, "note": null})),
    ]);
    let agent = Agent::create(no_tools(model.clone())).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Lisbon?").await.unwrap();
    assert_eq!(
        forecast,
        Forecast {
            city: "Lisbon".into(),
            celsius: 21,
            note: None
        }
    );

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let format = requests[0]
        .output
        .as_ref()
        .expect("a typed answer asked for");
    assert_eq!(format.name, "Forecast");
    assert_eq!(format.description.as_deref(), Some("A city's weather."));
    assert_eq!(format.schema["required"], json!(["city", "celsius"]));
    // The second request carries the first answer and, after it, what is wrong with it.
    let feedback = text_of(requests[1].messages.last().unwrap());
    assert!(feedback.contains("/celsius: must be integer"), "{feedback}");
    assert!(feedback.contains("only the corrected JSON"), "{feedback}");
    assert_eq!(requests[1].output, requests[0].output);
}

#[tokio::test]
async fn the_retry_bound_ends_the_run_with_the_last_errors() {
    let model = ScriptedModel::new([
        ScriptedTurn::output(json!({"city": "Lisbon"})),
        ScriptedTurn::text("sunny, I think"),
    ])
    .with_responder(|request| ScriptedTurn::text(request.messages.len().to_string()));
    let agent = Agent::create(no_tools(model.clone()).limits(|l| l.with_max_output_retries(1)))
        .await
        .unwrap();
    let error = agent.prompt_as::<Forecast>("Weather?").await.unwrap_err();
    let AgentError::OutputInvalid { attempts, errors } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*attempts, 2);
    assert!(errors.to_string().contains("must be JSON text"), "{errors}");
    assert!(error.to_string().contains("after 2 attempt(s)"), "{error}");
    // No third answer was asked for.
    assert_eq!(model.requests().len(), 2);
    // The conversation goes on: a plain prompt after the failed one.
    let messages = agent.messages().await;
    assert_transcript_valid(&messages);
    assert!(agent.prompt("Anything else?").await.is_ok());
}

#[tokio::test]
async fn an_answer_by_tool_call_is_validated_answered_and_retried() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("lookup", json!({"city": "Lisbon"})),
        ScriptedTurn::tool_call(OutputFormat::TOOL_NAME, json!({"city": 7, "celsius": 21})),
        ScriptedTurn::tool_call(
            OutputFormat::TOOL_NAME,
            json!({"city": "Lisbon", "celsius": "21"}),
        ),
    ])
    .with_responder(|request| ScriptedTurn::text(request.messages.len().to_string()));
    let agent = Agent::create(config(model.clone())).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Lisbon?").await.unwrap();
    // "21" was coerced to 21, as tool inputs are.
    assert_eq!(forecast.celsius, 21);

    let messages = agent.messages().await;
    assert_transcript_valid(&messages);
    // user, lookup, its result, answer 1, refused, answer 2, received.
    assert_eq!(messages.len(), 7);
    let refused = &messages[4].content[0];
    assert!(
        matches!(refused, MessageContent::ToolResult { is_error: true, .. }),
        "{refused:?}"
    );
    assert!(
        text_of(&messages[4]).contains("/city: must be string"),
        "{:?}",
        messages[4]
    );
    assert_eq!(text_of(&messages[6]), "The answer was received.");
    // The tool ran before the answer.
    assert_eq!(text_of(&messages[2]), "Lisbon: 21 degrees");
    // The next prompt joins the last tool result's message.
    assert_eq!(agent.prompt("Thanks").await.unwrap().text, "7");
}

#[tokio::test]
async fn an_answer_beside_other_calls_is_asked_for_again() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("lookup", json!({"city": "Porto"})).with_tool_call(
            OutputFormat::TOOL_NAME,
            json!({"city": "Porto", "celsius": 1}),
        ),
        ScriptedTurn::output(json!({"city": "Porto", "celsius": 19})),
    ]);
    let agent = Agent::create(config(model)).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Porto?").await.unwrap();
    assert_eq!(forecast.celsius, 19);
    let messages = agent.messages().await;
    assert_transcript_valid(&messages);
    let results = text_of(&messages[2]);
    assert!(results.contains("Porto: 21 degrees"), "{results}");
    assert!(results.contains("must be called alone"), "{results}");
}

#[tokio::test]
async fn a_type_that_is_not_an_object_is_asked_for_wrapped() {
    let model = ScriptedModel::new([
        ScriptedTurn::output(json!({"value": ["Lisbon", "Porto"]})),
        ScriptedTurn::output(json!(["Faro"])),
        ScriptedTurn::tool_call(OutputFormat::TOOL_NAME, json!({"value": [1]})),
        ScriptedTurn::tool_call(OutputFormat::TOOL_NAME, json!({"value": ["Braga"]})),
    ]);
    let agent = Agent::create(no_tools(model.clone())).await.unwrap();
    let cities: Vec<String> = agent.prompt_as("Cities?").await.unwrap();
    assert_eq!(cities, ["Lisbon", "Porto"]);
    let schema = model.requests()[0].output.clone().unwrap().schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["value"]));
    assert_eq!(schema["properties"]["value"]["type"], "array");
    // A bare answer is taken too.
    let cities: Vec<String> = agent.prompt_as("More?").await.unwrap();
    assert_eq!(cities, ["Faro"]);
    // By tool call: wrong, then right.
    let cities: Vec<String> = agent.prompt_as("More?").await.unwrap();
    assert_eq!(cities, ["Braga"]);
    let feedback = text_of(&agent.messages().await[6]);
    assert!(feedback.contains("/value/0: must be string"), "{feedback}");
}

#[tokio::test]
async fn a_scripted_typed_answer_fails_a_plain_prompt() {
    let model = ScriptedModel::new([ScriptedTurn::output(json!({"city": "Lisbon"}))]);
    let agent = Agent::create(no_tools(model)).await.unwrap();
    let error = agent.prompt("Weather?").await.unwrap_err().to_string();
    assert!(error.contains("use Agent::prompt_as"), "{error}");
}

#[tokio::test]
async fn a_tool_named_like_the_output_tool_is_a_clear_error() {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(SquatterTool)).unwrap();
    let model = ScriptedModel::new([ScriptedTurn::output(json!({}))]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(Arc::new(registry)),
    )
    .await
    .unwrap();
    let error = agent.prompt_as::<Forecast>("Weather?").await.unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Config(ConfigError::OutputToolTaken("final_answer"))
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("`final_answer`"), "{error}");
}

#[tokio::test]
async fn the_streaming_form_shows_each_refusal_and_ends_with_the_answer() {
    let model = ScriptedModel::new([
        ScriptedTurn::output(json!({"city": "Lisbon", "celsius": 21.5})),
        ScriptedTurn::output(json!({"city": "Lisbon", "celsius": 21})),
    ]);
    let agent = Agent::create(no_tools(model)).await.unwrap();
    let mut run = agent.prompt_as_stream::<Forecast>("Weather?");
    let mut refusals = Vec::new();
    let mut finished = None;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::OutputRejected { attempt, errors } => {
                refusals.push((attempt, errors.to_string()))
            }
            AgentEvent::Finished(result) => finished = Some(result),
            _ => {}
        }
    }
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0].0, 1);
    assert!(
        refusals[0].1.contains("/celsius: must be integer"),
        "{refusals:?}"
    );
    let result = finished.expect("a Finished event");
    assert_eq!(
        result.output,
        Some(json!({"city": "Lisbon", "celsius": 21}))
    );
    let forecast: Forecast = result.output_as().unwrap();
    assert_eq!(forecast.celsius, 21);

    // `output()` waits for the same thing.
    let model = ScriptedModel::new([ScriptedTurn::output(json!({"city": "Faro", "celsius": 25}))]);
    let agent = Agent::create(no_tools(model)).await.unwrap();
    let forecast = agent
        .prompt_as_stream::<Forecast>("Weather?")
        .output()
        .await
        .unwrap();
    assert_eq!(forecast.city, "Faro");
}

// ---- over HTTP ----

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

fn body(request: &Request) -> Value {
    serde_json::from_slice(&request.body).unwrap()
}

/// An Anthropic stream of one call of `name` with `input`.
fn anthropic_call(id: &str, name: &str, input: &Value) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m1", "type": "message",
                "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        ),
        event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta":
                {"type": "input_json_delta", "partial_json": input.to_string()}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 20}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

/// Answers each request with the next of `streams`.
struct Replay(std::sync::Mutex<std::collections::VecDeque<String>>);

impl wiremock::Respond for Replay {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        match self.0.lock().unwrap().pop_front() {
            Some(stream) => sse(stream),
            None => ResponseTemplate::new(500),
        }
    }
}

async fn replaying(at: &str, streams: Vec<String>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(at))
        .respond_with(Replay(std::sync::Mutex::new(streams.into())))
        .mount(&server)
        .await;
    server
}

#[tokio::test]
async fn anthropic_is_made_to_call_the_output_tool_and_told_what_was_wrong() {
    let server = replaying(
        "/v1/messages",
        vec![
            anthropic_call("toolu_1", "final_answer", &json!({"city": "Oslo"})),
            anthropic_call(
                "toolu_2",
                "final_answer",
                &json!({"city": "Oslo", "celsius": -3}),
            ),
        ],
    )
    .await;
    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(no_tools(model)).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Oslo?").await.unwrap();
    assert_eq!(forecast.celsius, -3);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first = body(&requests[0]);
    // The only tool: forced.
    assert_eq!(
        first["tool_choice"],
        json!({"type": "tool", "name": "final_answer"})
    );
    assert_eq!(first["tools"].as_array().unwrap().len(), 1);
    let tool = &first["tools"][0];
    assert_eq!(tool["name"], "final_answer");
    assert_eq!(tool["input_schema"]["required"], json!(["city", "celsius"]));
    assert!(
        tool["description"]
            .as_str()
            .unwrap()
            .contains("A city's weather."),
        "{tool}"
    );
    // The refusal is the tool_result of the first answer.
    let second = body(&requests[1]);
    let last = second["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["tool_use_id"], "toolu_1");
    assert_eq!(result["is_error"], true);
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("/: must have required property 'celsius'"),
        "{text}"
    );
}

#[tokio::test]
async fn anthropic_with_tools_must_call_one_and_ends_with_the_output_tool() {
    let server = replaying(
        "/v1/messages",
        vec![anthropic_call(
            "toolu_1",
            "final_answer",
            &json!({"city": "Oslo", "celsius": 2}),
        )],
    )
    .await;
    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(config(model)).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Oslo?").await.unwrap();
    assert_eq!(forecast.celsius, 2);
    let first = body(&server.received_requests().await.unwrap()[0]);
    assert_eq!(first["tool_choice"], json!({"type": "any"}));
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lookup", "final_answer"]);
}

#[tokio::test]
async fn anthropic_keeps_the_output_tool_defined_for_a_later_plain_prompt() {
    let server = replaying(
        "/v1/messages",
        vec![
            anthropic_call(
                "toolu_1",
                "final_answer",
                &json!({"city": "Oslo", "celsius": 2}),
            ),
            anthropic_call("toolu_2", "final_answer", &json!({})),
        ],
    )
    .await;
    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(no_tools(model).limits(|l| l.with_max_turns(1)))
        .await
        .unwrap();
    agent.prompt_as::<Forecast>("Weather?").await.unwrap();
    // The plain prompt's request still defines the tool its history calls, and forces nothing.
    let _ = agent.prompt("And tomorrow?").await;
    let second = body(&server.received_requests().await.unwrap()[1]);
    assert_eq!(second["tools"][0]["name"], "final_answer");
    assert!(second.get("tool_choice").is_none(), "{second}");
}

fn openai_text(text: &str) -> String {
    format!(
        "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]}),
        json!({"id": "c1", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    )
}

#[tokio::test]
async fn openai_gets_a_strict_response_format_and_the_errors_of_a_wrong_answer() {
    let server = replaying(
        "/v1/chat/completions",
        vec![
            openai_text(r#"{"city": "Rome", "celsius": "hot", "note": null}"#),
            openai_text(r#"{"city": "Rome", "celsius": 30, "note": null}"#),
        ],
    )
    .await;
    let model = OpenAiModel::new("gpt-4.1", None)
        .with_base_url(format!("{}/v1", server.uri()))
        .with_retry(RetryPolicy::none());
    let agent = Agent::create(config(model)).await.unwrap();
    let forecast: Forecast = agent.prompt_as("Weather in Rome?").await.unwrap();
    assert_eq!(forecast.celsius, 30);
    assert!(forecast.note.is_none(), "{:?}", forecast.note);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 2);
    let first = body(&requests[0]);
    let format = &first["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "Forecast");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(format["json_schema"]["description"], "A city's weather.");
    // Lowered strictly: every property required, the optional one nullable, closed.
    let schema = &format["json_schema"]["schema"];
    assert_eq!(schema["required"], json!(["city", "celsius", "note"]));
    assert_eq!(schema["additionalProperties"], false);
    assert!(schema.get("$schema").is_none(), "{schema}");
    // The tools are still there.
    assert_eq!(first["tools"][0]["function"]["name"], "lookup");
    assert!(first.get("tool_choice").is_none());

    let second = body(&requests[1]);
    let messages = second["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
    let feedback = messages[2]["content"].as_str().unwrap();
    assert!(feedback.contains("/celsius: must be integer"), "{feedback}");
    assert!(feedback.contains("only the corrected JSON"), "{feedback}");
    let last = agent.messages().await;
    assert_eq!(last.last().unwrap().role, Role::Assistant);
}
