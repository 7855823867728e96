//! Prompt caching over HTTP: the `cache_control` breakpoints the Anthropic client places (the
//! exact JSON against a local server), and the agent's requests keeping, turn after turn, the
//! prefix the previous request wrote.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::builtin::TaskTool;
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::{
    Message, MessageContent, Model, ModelEvent, ModelInfo, ModelRequest, Price, PromptCache,
    RetryPolicy, Role, ScriptedModel, ScriptedTurn, ToolSpec, ToolUse,
};
use tool_sdk::{ContentBlock, ToolRegistry, tool};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

// ---------------------------------------------------------------------------------------------
// Helpers

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// One streamed turn: a tool_use block of `ReadChunk` when `call` is set, else text.
fn turn(call: Option<&str>) -> String {
    let block = match call {
        Some(id) => json!({"type": "tool_use", "id": id, "name": "ReadChunk",
            "input": {"part": id}}),
        None => json!({"type": "text", "text": "All read."}),
    };
    let stop = if call.is_some() {
        "tool_use"
    } else {
        "end_turn"
    };
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "type": "message",
                "role": "assistant", "model": "claude", "content": [], "stop_reason": null,
                "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop},
                "usage": {"output_tokens": 5}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(body)
}

/// Answers `calls` tool_use turns, one a request, then text.
struct Script {
    calls: usize,
    served: AtomicUsize,
}

impl Respond for Script {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let n = self.served.fetch_add(1, Ordering::SeqCst);
        let id = format!("toolu_{n}");
        sse(turn((n < self.calls).then_some(id.as_str())))
    }
}

async fn scripted_server(calls: usize) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Script {
            calls,
            served: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .iter()
        .map(|request| request.body_json().expect("a JSON body"))
        .collect()
}

fn model_for(server: &MockServer, id: &str) -> AnthropicModel {
    AnthropicModel::new(id, "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none())
}

const MARK: &str = "cache_control";

fn marks(body: &Value) -> usize {
    body.to_string().matches(MARK).count()
}

/// `value` without its `cache_control` fields: what the cache compares.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != MARK)
                .map(|(key, value)| (key.clone(), unmarked(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// The marked message blocks, as (message, block) positions.
fn marked_blocks(body: &Value) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for (m, message) in body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (b, block) in message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .enumerate()
        {
            if block.get(MARK).is_some() {
                out.push((m, b));
            }
        }
    }
    out
}

/// The request's prompt up to and including message block `(m, b)`, in the order the cache
/// reads it (tools, system, messages), without the marks.
fn prefix(body: &Value, (m, b): (usize, usize)) -> String {
    let messages = body["messages"].as_array().expect("messages");
    let mut kept: Vec<Value> = messages[..m].to_vec();
    let mut last = messages[m].clone();
    last["content"] = Value::Array(last["content"].as_array().expect("content")[..=b].to_vec());
    kept.push(last);
    unmarked(&json!({"tools": body["tools"], "system": body["system"], "messages": kept}))
        .to_string()
}

// ---------------------------------------------------------------------------------------------
// The client's breakpoints

fn tool_spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("{name} things."),
        input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
    }
}

fn result(id: &str, text: &str) -> MessageContent {
    MessageContent::ToolResult {
        tool_use_id: id.into(),
        content: vec![ContentBlock::text(text)],
        is_error: false,
    }
}

/// Three turns with tools: a prompt, a call and its result, another call (after thinking)
/// and its result.
fn conversation(cache: Option<PromptCache>) -> ModelRequest {
    ModelRequest {
        system: Some("You read files.".into()),
        tools: vec![tool_spec("Read"), tool_spec("Grep")].into(),
        max_tokens: 100,
        messages: vec![
            Message::user("Read a."),
            Message {
                role: Role::Assistant,
                content: vec![MessageContent::ToolUse(ToolUse::new(
                    "t1",
                    "Read",
                    json!({"path": "a"}),
                ))],
            },
            Message {
                role: Role::User,
                content: vec![result("t1", &"a".repeat(200))],
            },
            Message {
                role: Role::Assistant,
                content: vec![
                    MessageContent::Thinking {
                        thinking: "Now b.".into(),
                        signature: "sig".into(),
                    },
                    MessageContent::Text {
                        text: String::new(),
                    },
                    MessageContent::ToolUse(ToolUse::new("t2", "Read", json!({"path": "b"}))),
                ],
            },
            Message {
                role: Role::User,
                content: vec![
                    result("t2", &"b".repeat(200)),
                    MessageContent::Text {
                        text: "Then stop.".into(),
                    },
                ],
            },
        ]
        .into(),
        ..ModelRequest::default()
    }
    .with_cache(cache)
}

trait WithCache {
    fn with_cache(self, cache: Option<PromptCache>) -> Self;
}

impl WithCache for ModelRequest {
    fn with_cache(mut self, cache: Option<PromptCache>) -> Self {
        self.cache = cache;
        self
    }
}

/// Sends one request and returns the body the server got.
async fn sent(request: &ModelRequest) -> Value {
    use futures::StreamExt as _;
    let server = scripted_server(0).await;
    let model = model_for(&server, "claude-test");
    let mut stream = model.stream(request);
    let mut completed = false;
    while let Some(event) = stream.next().await {
        completed |= matches!(event.expect("the turn streams"), ModelEvent::Completed(_));
    }
    assert!(completed);
    let mut bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 1);
    bodies.remove(0)
}

#[tokio::test]
async fn breakpoints_go_on_the_tools_the_system_and_both_ends_of_the_conversation() {
    let body = sent(&conversation(Some(PromptCache::new(10)))).await;
    let mark = json!({"type": "ephemeral"});
    let schema = json!({"type": "object", "properties": {"path": {"type": "string"}}});
    assert_eq!(
        body["tools"],
        json!([
            {"name": "Read", "description": "Read things.", "input_schema": schema},
            {"name": "Grep", "description": "Grep things.", "input_schema": schema,
             "cache_control": mark},
        ])
    );
    assert_eq!(
        body["system"],
        json!([{"type": "text", "text": "You read files.", "cache_control": mark}])
    );
    let result_block = |id: &str, text: String| {
        json!({"type": "tool_result", "tool_use_id": id,
            "content": [{"type": "text", "text": text}]})
    };
    let mut previous_end = result_block("t1", "a".repeat(200));
    previous_end["cache_control"] = mark.clone();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Read a."}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "a"}}]},
            {"role": "user", "content": [previous_end]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Now b.", "signature": "sig"},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"path": "b"}}]},
            {"role": "user", "content": [
                result_block("t2", "b".repeat(200)),
                {"type": "text", "text": "Then stop.", "cache_control": mark}]},
        ])
    );
    assert_eq!(marks(&body), 4);
}

#[tokio::test]
async fn prefixes_below_the_minimum_get_no_breakpoint() {
    // Tools and system are ~60 tokens, the first result reaches ~150, the whole ~220.
    let body = sent(&conversation(Some(PromptCache::new(180)))).await;
    assert_eq!(marked_blocks(&body), vec![(4, 1)], "{body}");
    assert_eq!(marks(&body), 1);
    assert_eq!(body["system"][0]["text"], "You read files.");

    let body = sent(&conversation(Some(PromptCache::new(1_000_000)))).await;
    assert_eq!(marks(&body), 0, "{body}");
}

#[tokio::test]
async fn no_breakpoints_and_a_plain_system_string_without_caching() {
    let body = sent(&conversation(None)).await;
    assert_eq!(marks(&body), 0, "{body}");
    assert_eq!(body["system"], "You read files.");
}

// ---------------------------------------------------------------------------------------------
// The agent's requests

/// Reads one long part of a file.
#[tool(name = "ReadChunk", register = false, read_only)]
async fn read_chunk(part: String) -> String {
    // About 1500 tokens: every prefix after the first result passes the minimum.
    format!(
        "{part}: {}",
        "fn main() { println!(\"hello\"); }\n".repeat(180)
    )
}

fn agent_config(server: &MockServer) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry
        .register(Arc::new(ReadChunkTool))
        .expect("registers");
    AgentConfig::new()
        .with_model(model_for(server, "claude-sonnet-4-5"))
        .with_registry(Arc::new(registry))
        .model(|m| m.with_system_prompt("You read code."))
}

#[tokio::test]
async fn each_request_reads_back_the_prefix_the_previous_one_wrote() {
    let server = scripted_server(4).await;
    let agent = Agent::create(agent_config(&server)).await.expect("builds");
    let result = agent.prompt("Read the parts.").await.expect("the run ends");
    assert_eq!(result.tool_calls, 4);
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 5);
    for body in &bodies {
        assert!(marks(body) <= 4, "{body}");
    }
    // The first request is short (under the model's 1024 tokens): nothing is marked.
    assert_eq!(marks(&bodies[0]), 0, "{}", bodies[0]);
    for pair in bodies[1..].windows(2) {
        let (before, after) = (&pair[0], &pair[1]);
        let last = before["messages"].as_array().expect("messages").len() - 1;
        let end = *marked_blocks(before).last().expect("the end is marked");
        assert_eq!(
            end.0, last,
            "the end mark is on the final message: {before}"
        );
        let ends = marked_blocks(after);
        assert_eq!(ends.len(), 2, "{after}");
        assert_eq!(ends[0], end, "the previous end is marked where it was");
        assert_eq!(prefix(before, end), prefix(after, ends[0]));
    }
}

#[tokio::test]
async fn caching_off_sends_no_breakpoints() {
    let server = scripted_server(2).await;
    let config = agent_config(&server).model(|m| m.with_prompt_caching(false));
    let agent = Agent::create(config).await.expect("builds");
    agent.prompt("Read the parts.").await.expect("the run ends");
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    for body in &bodies {
        assert_eq!(marks(body), 0, "{body}");
        assert_eq!(body["system"], "You read code.");
    }
}

#[test]
fn a_config_file_turns_caching_off() {
    let config: AgentConfig = toml::from_str("prompt_caching = false").expect("parses");
    assert!(!config.model.prompt_caching);
    assert!(AgentConfig::new().model.prompt_caching);
}

#[test]
fn the_minimum_comes_from_the_catalog() {
    assert_eq!(
        PromptCache::for_model("claude-haiku-4-5-20251001").min_prefix_tokens,
        4096
    );
    assert_eq!(
        PromptCache::for_model("claude-sonnet-4-5").min_prefix_tokens,
        1024
    );
    assert_eq!(
        PromptCache::for_model("a-model-nobody-knows").min_prefix_tokens,
        PromptCache::DEFAULT_MIN_PREFIX_TOKENS
    );
}

#[tokio::test]
async fn sub_agents_ask_for_the_cache_as_their_parent_does() {
    for caching in [true, false] {
        let model = Arc::new(ScriptedModel::new([
            ScriptedTurn::tool_call("Task", json!({"description": "look", "prompt": "Look."})),
            ScriptedTurn::text("looked"),
            ScriptedTurn::text("The sub-agent looked."),
        ]));
        let registry = ToolRegistry::new();
        registry.register(Arc::new(TaskTool)).unwrap();
        let agent = Agent::create(
            AgentConfig::new()
                .with_model(model.clone())
                .with_registry(Arc::new(registry))
                .model(|m| m.with_prompt_caching(caching)),
        )
        .await
        .unwrap();
        agent.prompt("delegate").await.unwrap();
        let requests = model.requests();
        assert_eq!(requests.len(), 3);
        // The second request is the sub-agent's: its conversation starts with the Task prompt.
        let child = &requests[1];
        assert_eq!(child.messages.len(), 1, "{:?}", child.messages);
        assert_eq!(child.cache.is_some(), caching);
        assert_eq!(requests[0].cache, child.cache);
    }
}

#[tokio::test]
async fn the_agent_takes_the_minimum_from_its_own_catalog_entries() {
    let model = Arc::new(ScriptedModel::new([ScriptedTurn::text("ok")]));
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_tools(Vec::<String>::new())
            .model(|m| {
                m.with_model_info(
                    "scripted",
                    ModelInfo::new(50_000, Price::per_million(1.0, 2.0))
                        .with_min_cacheable_tokens(3000),
                )
            }),
    )
    .await
    .unwrap();
    agent.prompt("hi").await.unwrap();
    assert_eq!(model.requests()[0].cache, Some(PromptCache::new(3000)));
}
