//! Staying inside the context window (`agent/context.rs`): old tool results cleared, the
//! conversation compacted into a summary, a "prompt too long" answered by one compaction, the
//! `PreCompact` hook, and a resumed session sending the same view. Real HTTP clients against a
//! local mock server that answers a script of responses in order and keeps every request.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde_json::{Value, json};
use tests::script::Script;
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent, CompactDecision, CompactRequest, RunResult};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::{Message, Model, ModelError, ModelEvent, ModelRequest, RetryPolicy, Usage};
use tool_sdk::session::{Record, SqliteStore};
use tool_sdk::{ToolRegistry, tool};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// Characters of each `Fetch` result: 3,000 estimated tokens.
const RESULT_CHARS: usize = 12_000;

/// Fetches a page (a stand-in that returns `RESULT_CHARS` characters).
#[tool(name = "Fetch", register = false, read_only)]
async fn fetch(page: String) -> String {
    let line = format!("{page}: lorem ipsum dolor sit amet\n");
    line.repeat(RESULT_CHARS / line.len() + 1)[..RESULT_CHARS].to_owned()
}

async fn server(responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Script::new(responses))
        .mount(&server)
        .await;
    server
}

fn sse(events: &[(&str, Value)]) -> ResponseTemplate {
    let body: String = events
        .iter()
        .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
        .collect();
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

fn start() -> (&'static str, Value) {
    (
        "message_start",
        json!({"type": "message_start", "message": {"id": "m", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    )
}

fn stop(reason: &str) -> [(&'static str, Value); 2] {
    [
        (
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": reason},
                "usage": {"output_tokens": 5}}),
        ),
        ("message_stop", json!({"type": "message_stop"})),
    ]
}

/// A turn that calls `Fetch` for `page`, with the call id `page`.
fn fetch_turn(page: &str) -> ResponseTemplate {
    let input = json!({"page": page}).to_string();
    let mut events = vec![
        start(),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block":
                {"type": "tool_use", "id": page, "name": "Fetch", "input": {}}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": input}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    events.extend(stop("tool_use"));
    sse(&events)
}

fn text_turn(text: &str) -> ResponseTemplate {
    let mut events = vec![
        start(),
        (
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": ""}}),
        ),
        (
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0,
                "delta": {"type": "text_delta", "text": text}}),
        ),
        (
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
    ];
    events.extend(stop("end_turn"));
    sse(&events)
}

fn too_long() -> ResponseTemplate {
    ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {
        "type": "invalid_request_error",
        "message": "prompt is too long: 210417 tokens > 200000 maximum"}}))
}

fn model(server: &MockServer) -> AnthropicModel {
    // An id the catalog does not know: only `with_context_window` gives it a window.
    AnthropicModel::new("claude-test", "test-key")
        .with_base_url(server.uri())
        .with_retry(RetryPolicy::none())
}

/// A 10,000-token window less 1,000 for the answer: results are cleared above 6,300 (down to
/// 900) and compacted above 7,650.
fn config(server: &MockServer) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(FetchTool)).unwrap();
    let mut config = AgentConfig::new()
        .with_model(model(server))
        .with_registry(Arc::new(registry))
        .context(|c| c.with_window(10_000));
    config.model.max_tokens = 1_000;
    // Three 3,000-token results are never cleared: only a compaction makes room for them.
    config.context.keep_tool_results = 3;
    config
}

async fn run(agent: &Agent, prompt: &str) -> (Vec<AgentEvent>, RunResult) {
    let mut events: Vec<AgentEvent> = agent.run(prompt).collect().await;
    let Some(AgentEvent::Finished(result)) = events.pop() else {
        panic!("the run did not finish: {events:?}");
    };
    (events, *result)
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|request| request.body_json().unwrap())
        .collect()
}

fn messages(body: &Value) -> &Vec<Value> {
    body["messages"].as_array().unwrap()
}

fn roles(body: &Value) -> Vec<&str> {
    messages(body)
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

fn blocks<'a>(body: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    messages(body)
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(move |b| b["type"] == kind)
}

/// The text of the result of call `id` in a request.
fn result_text(body: &Value, id: &str) -> String {
    let block = blocks(body, "tool_result")
        .find(|b| b["tool_use_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"));
    block["content"][0]["text"].as_str().unwrap().to_owned()
}

/// Every tool_result answers a tool_use of the message right before it, and every tool_use
/// is answered in the message right after it.
fn assert_pairs_whole(body: &Value) {
    let messages = messages(body);
    let ids = |m: &Value, kind: &str, key: &str| -> HashSet<String> {
        m["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == kind)
            .map(|b| b[key].as_str().unwrap().to_owned())
            .collect()
    };
    for (i, message) in messages.iter().enumerate() {
        let results = ids(message, "tool_result", "tool_use_id");
        let before = match i {
            0 => HashSet::new(),
            _ => ids(&messages[i - 1], "tool_use", "id"),
        };
        assert!(results.is_subset(&before), "orphan results at {i}: {body}");
        let calls = ids(message, "tool_use", "id");
        let after = messages
            .get(i + 1)
            .map(|m| ids(m, "tool_result", "tool_use_id"))
            .unwrap_or_default();
        assert!(calls.is_subset(&after), "unanswered calls at {i}: {body}");
    }
}

fn compactions(events: &[AgentEvent]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|event| match event {
            AgentEvent::Compacted {
                tokens_before,
                tokens_after,
                ..
            } => Some((*tokens_before, *tokens_after)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn older_tool_results_are_cleared_in_what_the_model_sees_only() {
    let server = server(vec![
        fetch_turn("a"),
        fetch_turn("b"),
        fetch_turn("c"),
        text_turn("done"),
    ])
    .await;
    let mut config = config(&server);
    config.context.keep_tool_results = 1;
    // 3,000 tokens a result in a room of 9,000: two stay under 7,200, three pass it, and
    // clearing down to 900 takes both older ones (c is unread) and stays far below 8,550.
    let agent = Agent::create(config.context(|c| c.with_thresholds(0.8, 0.95)))
        .await
        .unwrap();
    let (events, result) = run(&agent, "Read a, b and c.").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "done");

    let cleared: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolResultsCleared { count } => Some(*count),
            _ => None,
        })
        .collect();
    assert_eq!(cleared, [2], "one batch: all but the last result");
    assert_eq!(compactions(&events), []);

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    assert_eq!(result_text(&bodies[2], "a").len(), RESULT_CHARS);
    let last = &bodies[3];
    for id in ["a", "b"] {
        assert_eq!(
            result_text(last, id),
            "[cleared to save context: 12,000 chars of output from Fetch; call the tool \
             again if you need it]"
        );
    }
    assert_eq!(result_text(last, "c").len(), RESULT_CHARS);
    assert_eq!(blocks(last, "tool_use").count(), 3, "the calls stay");
    assert_pairs_whole(last);
    // The conversation itself keeps every result whole.
    let kept = serde_json::to_string(&result.messages).unwrap();
    assert!(!kept.contains("cleared to save context"));
}

#[tokio::test]
async fn compaction_sends_a_summary_request_then_the_summary_and_the_recent_turns() {
    let server = server(vec![
        fetch_turn("a"),
        fetch_turn("b"),
        fetch_turn("c"),
        text_turn("SUMMARY: pages a and b were read."),
        text_turn("done"),
    ])
    .await;
    let asked = Arc::new(Mutex::new(Vec::<CompactRequest>::new()));
    let seen = asked.clone();
    let agent = Agent::create(config(&server).hooks(|h| {
        h.on_pre_compact(move |request: &CompactRequest| {
            seen.lock().unwrap().push(request.clone());
            CompactDecision::Instruct("Keep the page names.".into())
        })
    }))
    .await
    .unwrap();
    let (events, result) = run(&agent, "Read a, b and c.").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "done");
    assert_eq!(result.messages.len(), 8, "the conversation is kept whole");

    let compacted = compactions(&events);
    assert_eq!(compacted.len(), 1);
    let (before, after) = compacted[0];
    assert!(before > 8_500 && after < before / 2, "{before} -> {after}");
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1);
    assert_eq!((asked[0].window, asked[0].messages), (10_000, 5));
    assert!(!asked[0].forced);

    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 5);
    // The summary request: the older part, then the instructions in the last user message.
    let summary_request = &bodies[3];
    assert_eq!(
        roles(summary_request),
        ["user", "assistant", "user", "assistant", "user"]
    );
    assert_pairs_whole(summary_request);
    let last = messages(summary_request).last().unwrap()["content"]
        .as_array()
        .unwrap();
    let instructions = last.last().unwrap()["text"].as_str().unwrap();
    assert!(
        instructions.contains("Write that summary now"),
        "{instructions}"
    );
    assert!(
        instructions.ends_with("Keep the page names."),
        "{instructions}"
    );
    assert!(blocks(summary_request, "tool_result").all(|b| b["tool_use_id"] != "c"));

    // The next request: the summary, then call c and its result verbatim.
    let next = &bodies[4];
    assert_eq!(roles(next), ["user", "assistant", "user"]);
    let summary = messages(next)[0]["content"][0]["text"].as_str().unwrap();
    assert!(summary.starts_with("[Summary of the earlier conversation"));
    assert!(summary.ends_with("SUMMARY: pages a and b were read."));
    assert_eq!(messages(next)[1]["content"][0]["id"], "c");
    assert_eq!(result_text(next, "c").len(), RESULT_CHARS);
    assert_pairs_whole(next);
    assert_eq!(next["system"], bodies[2]["system"]);
}

#[tokio::test]
async fn a_vetoed_compaction_sends_the_request_as_it_is() {
    let server = server(vec![
        fetch_turn("a"),
        fetch_turn("b"),
        fetch_turn("c"),
        text_turn("done"),
    ])
    .await;
    let vetoes = Arc::new(AtomicUsize::new(0));
    let count = vetoes.clone();
    let agent = Agent::create(config(&server).hooks(|h| {
        h.on_pre_compact(move |_: &CompactRequest| {
            count.fetch_add(1, Ordering::SeqCst);
            CompactDecision::Veto
        })
    }))
    .await
    .unwrap();
    let (events, result) = run(&agent, "Read a, b and c.").await;
    assert_eq!(result.text, "done");
    assert_eq!(vetoes.load(Ordering::SeqCst), 1);
    assert_eq!(compactions(&events), []);
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 4, "no summary request");
    assert_eq!(messages(&bodies[3]).len(), 7);
    assert_eq!(result_text(&bodies[3], "a").len(), RESULT_CHARS);
}

#[tokio::test]
async fn a_prompt_too_long_is_answered_by_one_compaction_and_a_retry() {
    let server = server(vec![
        fetch_turn("a"),
        too_long(),
        text_turn("SUMMARY: asked to read a."),
        text_turn("done"),
    ])
    .await;
    // A window the estimate never comes near: only the provider's answer compacts.
    let agent = Agent::create(config(&server).context(|c| c.with_window(1_000_000)))
        .await
        .unwrap();
    let (events, result) = run(&agent, "Read a.").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "done");
    assert_eq!(compactions(&events).len(), 1);
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    assert_eq!(
        roles(&bodies[1]),
        ["user", "assistant", "user"],
        "refused as it was"
    );
    // The summary request: the prompt (the call and its result are kept), then the
    // instructions.
    assert_eq!(roles(&bodies[2]), ["user"]);
    assert_eq!(messages(&bodies[2])[0]["content"][0]["text"], "Read a.");
    assert_eq!(roles(&bodies[3]), ["user", "assistant", "user"]);
    let summary = messages(&bodies[3])[0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(summary.ends_with("SUMMARY: asked to read a."));
    assert_pairs_whole(&bodies[3]);
}

#[tokio::test]
async fn a_prompt_still_too_long_after_compacting_fails_the_run() {
    let server = server(vec![
        fetch_turn("a"),
        too_long(),
        text_turn("SUMMARY: asked to read a."),
        too_long(),
    ])
    .await;
    let agent = Agent::create(config(&server).context(|c| c.with_window(1_000_000)))
        .await
        .unwrap();
    let (events, result) = run(&agent, "Read a.").await;
    assert!(
        matches!(
            result.error,
            Some(tool_sdk::agent::AgentError::Model(
                ModelError::PromptTooLong { status: 400, .. }
            ))
        ),
        "{:?}",
        result.error
    );
    assert_eq!(compactions(&events).len(), 1);
    assert_eq!(bodies(&server).await.len(), 4);
}

#[tokio::test]
async fn without_a_known_window_nothing_is_managed() {
    let server = server(vec![too_long()]).await;
    let registry = ToolRegistry::new();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model(&server))
            .with_registry(Arc::new(registry)),
    )
    .await
    .unwrap();
    let (events, result) = run(&agent, "Hi").await;
    assert!(matches!(
        result.error,
        Some(tool_sdk::agent::AgentError::Model(
            ModelError::PromptTooLong { .. }
        ))
    ));
    assert_eq!(compactions(&events), []);
    assert_eq!(bodies(&server).await.len(), 1);
}

#[tokio::test]
async fn a_resumed_session_sends_the_same_compacted_view() {
    let dir = tempfile::tempdir().unwrap();
    let server = server(vec![
        fetch_turn("a"),
        fetch_turn("b"),
        fetch_turn("c"),
        text_turn("SUMMARY: pages a and b were read."),
        text_turn("done"),
        text_turn("again"),
    ])
    .await;
    let store = || SqliteStore::open(dir.path().join("sessions.db")).unwrap();
    let with_store = || {
        config(&server)
            .with_working_dir(dir.path())
            .session(|s| s.with_store(store()))
    };
    let id = {
        let agent = Agent::create(with_store()).await.unwrap();
        let (events, result) = run(&agent, "Read a, b and c.").await;
        assert_eq!(result.text, "done");
        assert_eq!(compactions(&events).len(), 1);
        agent.session_id().to_owned()
    };
    let records = tool_sdk::session::SessionStore::load(&store(), &id)
        .await
        .unwrap();
    let compacted: Vec<_> = records
        .iter()
        .filter_map(|record| match record {
            Record::Compacted {
                summary,
                first_kept,
            } => Some((summary.as_str(), *first_kept)),
            _ => None,
        })
        .collect();
    assert_eq!(
        compacted,
        [("SUMMARY: pages a and b were read.", 5)],
        "the compaction is stored"
    );

    let resumed = Agent::resume(with_store(), &id).await.unwrap();
    assert_eq!(
        resumed.messages().await.len(),
        8,
        "the stored conversation is whole"
    );
    let (events, result) = run(&resumed, "And now?").await;
    assert_eq!(result.text, "again");
    assert_eq!(compactions(&events), [], "the stored summary is used");
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 6);
    let (before, after) = (&bodies[4], &bodies[5]);
    assert_eq!(
        messages(after)[..3],
        messages(before)[..],
        "the view is the same prefix as before the resume"
    );
    assert_eq!(
        roles(after),
        ["user", "assistant", "user", "assistant", "user"]
    );
    assert_pairs_whole(after);
}

/// The error a model's stream ends with.
async fn first_error(model: &dyn Model, request: &ModelRequest) -> ModelError {
    let mut stream = model.stream(request);
    loop {
        match stream.next().await {
            Some(Err(error)) => return error,
            Some(Ok(ModelEvent::Completed(_))) | None => {
                panic!("the stream ended without an error")
            }
            Some(Ok(_)) => {}
        }
    }
}

/// Both providers' "too long" answers are told apart from other bad requests.
#[tokio::test]
async fn both_providers_prompt_too_long_answers_are_classified() {
    let request = ModelRequest {
        messages: vec![Message::user("Hi")].into(),
        max_tokens: 64,
        ..ModelRequest::default()
    };
    let anthropic = server(vec![too_long()]).await;
    let error = first_error(&model(&anthropic), &request).await;
    assert!(
        matches!(
            &error,
            ModelError::PromptTooLong { status: 400, message } if message.contains("210417")
        ),
        "{error:?}"
    );

    let openai = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "This model's maximum context length is 128000 tokens. However, your \
                        messages resulted in 130000 tokens.",
            "type": "invalid_request_error", "param": "messages",
            "code": "context_length_exceeded"}})))
        .mount(&openai)
        .await;
    let openai_model = OpenAiModel::new("gpt-4o", None)
        .with_base_url(format!("{}/v1", openai.uri()))
        .with_retry(RetryPolicy::none());
    let error = first_error(&openai_model, &request).await;
    assert!(
        matches!(&error, ModelError::PromptTooLong { status: 400, .. }),
        "{error:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// A long conversation in a small window (issue 25, items 12–14)

/// Characters of each `Page` result: 2,000 tokens.
const PAGE_CHARS: usize = 8_000;

/// Reads a page (a stand-in that returns `PAGE_CHARS` characters).
#[tool(name = "Page", register = false, read_only)]
async fn page(name: String) -> String {
    let line = format!("{name}: the quick brown fox jumps over the lazy dog. ");
    line.repeat(PAGE_CHARS / line.len() + 1)[..PAGE_CHARS].to_owned()
}

/// What the provider of [`Provider`] saw and billed.
#[derive(Default)]
struct Ledger {
    /// Scripted turns answered (summaries are not).
    answered: usize,
    /// Every request answered, summaries included.
    billed: Vec<Usage>,
    /// (tokens, max_tokens) of every request.
    sizes: Vec<(u64, u64)>,
    /// Requests refused as longer than the window.
    refused: usize,
    /// The messages of each turn request, without cache marks: what the cache compares.
    views: Vec<Vec<Value>>,
    summaries: usize,
}

impl Ledger {
    fn total(&self) -> Usage {
        self.billed.iter().fold(Usage::default(), |mut sum, usage| {
            sum += *usage;
            sum
        })
    }

    /// Turn requests whose messages do not start with the previous turn request's: each one
    /// breaks the prompt cache's prefix.
    fn cache_breaks(&self) -> usize {
        self.views
            .windows(2)
            .filter(|pair| !pair[1].starts_with(&pair[0]))
            .count()
    }
}

/// A provider in the manner of Anthropic: each prompt is answered by two `Page` reads then a
/// text, a summary request by a summary; the prompt is counted as the characters of every
/// string in the request / 4, billed as input, and a request whose prompt and `max_tokens`
/// exceed `window` is refused with Anthropic's words.
struct Provider {
    window: u64,
    ledger: Arc<Mutex<Ledger>>,
}

/// The characters of every string in `value` (keys aside).
fn string_chars(value: &Value) -> u64 {
    match value {
        Value::String(text) => text.len() as u64,
        Value::Array(items) => items.iter().map(string_chars).sum(),
        Value::Object(map) => map.values().map(string_chars).sum(),
        _ => 0,
    }
}

fn without_marks(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), without_marks(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_marks).collect()),
        other => other.clone(),
    }
}

fn turn_with_usage(usage: Usage, blocks: &[Value], stop_reason: &str) -> ResponseTemplate {
    let mut events = vec![(
        "message_start",
        json!({"type": "message_start", "message": {"id": "m", "type": "message",
            "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
            "stop_reason": null, "usage": {"input_tokens": usage.input_tokens,
            "output_tokens": 1}}}),
    )];
    for (index, block) in blocks.iter().enumerate() {
        events.push((
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
        ));
        events.push((
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
    }
    events.push((
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
            "usage": {"output_tokens": usage.output_tokens}}),
    ));
    events.push(("message_stop", json!({"type": "message_stop"})));
    sse(&events)
}

impl Respond for Provider {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = request.body_json().unwrap();
        let tokens = string_chars(&body) / 4;
        let max_tokens = body["max_tokens"].as_u64().unwrap();
        let mut ledger = self.ledger.lock().unwrap();
        ledger.sizes.push((tokens, max_tokens));
        if tokens + max_tokens > self.window {
            ledger.refused += 1;
            return ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {
                "type": "invalid_request_error",
                "message": format!("input length and `max_tokens` exceed context limit: \
                    {tokens} + {max_tokens} > {}, decrease input length or `max_tokens` and \
                    try again", self.window)}}));
        }
        let last = messages(&body).last().unwrap()["content"].to_string();
        if last.contains("about to be compacted") {
            ledger.summaries += 1;
            let usage = Usage {
                input_tokens: tokens,
                output_tokens: 300,
                ..Usage::default()
            };
            ledger.billed.push(usage);
            let text = format!("SUMMARY {}: pages were read.", ledger.summaries);
            return turn_with_usage(usage, &[json!({"type": "text", "text": text})], "end_turn");
        }
        let usage = Usage {
            input_tokens: tokens,
            output_tokens: 20,
            ..Usage::default()
        };
        ledger.billed.push(usage);
        ledger.views.push(messages(&without_marks(&body)).to_vec());
        let n = ledger.answered;
        ledger.answered += 1;
        match n % 3 {
            2 => turn_with_usage(
                usage,
                &[json!({"type": "text", "text": format!("Read both ({n}).")})],
                "end_turn",
            ),
            _ => turn_with_usage(
                usage,
                &[
                    json!({"type": "tool_use", "id": format!("t{n}"), "name": "Page",
                    "input": {"name": format!("page {n}")}}),
                ],
                "tool_use",
            ),
        }
    }
}

/// What a long conversation in a small window did.
struct LongRun {
    /// Kept running for a resume.
    #[allow(dead_code)]
    server: MockServer,
    ledger: Arc<Mutex<Ledger>>,
    agent: Agent,
    events: Vec<AgentEvent>,
    results: Vec<RunResult>,
    config: AgentConfig,
}

/// `prompts` prompts, each reading two 8,000-character pages, by claude-sonnet-4-5 (whose
/// price the catalog knows) managing a window of `window` tokens; `tweak` changes the config.
async fn long_run(
    dir: &std::path::Path,
    prompts: usize,
    window: u64,
    tweak: impl Fn(AgentConfig) -> AgentConfig,
) -> LongRun {
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(Provider {
            window,
            ledger: ledger.clone(),
        })
        .mount(&server)
        .await;
    let registry = ToolRegistry::new();
    registry.register(Arc::new(PageTool)).unwrap();
    let config = tweak(
        AgentConfig::new()
            .with_model(
                AnthropicModel::new("claude-sonnet-4-5", "test-key")
                    .with_base_url(server.uri())
                    .with_retry(RetryPolicy::none()),
            )
            .with_registry(Arc::new(registry))
            .with_working_dir(dir)
            .session(|s| s.with_store(SqliteStore::open(dir.join("sessions.db")).unwrap()))
            .context(|c| c.with_window(window)),
    );
    let agent = Agent::create(config.clone()).await.unwrap();
    let mut events = Vec::new();
    let mut results = Vec::new();
    for n in 0..prompts {
        let (run_events, result) = run(&agent, &format!("Read pages {n}a and {n}b.")).await;
        assert!(result.error.is_none(), "prompt {n}: {:?}", result.error);
        events.extend(run_events);
        results.push(result);
    }
    LongRun {
        server,
        ledger,
        agent,
        events,
        results,
        config,
    }
}

impl LongRun {
    fn clearing_batches(&self) -> usize {
        self.events
            .iter()
            .filter(|e| matches!(e, AgentEvent::ToolResultsCleared { .. }))
            .count()
    }
}

fn sum<'a>(usages: impl IntoIterator<Item = &'a Usage>) -> Usage {
    usages.into_iter().fold(Usage::default(), |mut sum, usage| {
        sum += *usage;
        sum
    })
}

fn assert_close(a: f64, b: f64) {
    assert!((a - b).abs() < 1e-9, "{a} != {b}");
}

/// Every request the provider billed, summaries included, is in the agent's totals and cost,
/// the runs' results, the events, the stored records and a resumed agent's totals.
#[tokio::test]
async fn a_long_conversation_counts_every_request_billed() {
    let dir = tempfile::tempdir().unwrap();
    // Five 2,000-token results kept: clearing cannot make enough room, compaction must.
    let run = long_run(dir.path(), 40, 20_000, |mut config| {
        config.context.keep_tool_results = 5;
        config
    })
    .await;
    let (billed, requests, summaries) = {
        let ledger = run.ledger.lock().unwrap();
        (ledger.total(), ledger.billed.len(), ledger.summaries)
    };
    assert!(summaries >= 2, "{summaries} compactions");
    let price = run.agent.model_info().unwrap().price;

    assert_eq!(run.agent.total_usage(), billed);
    assert_close(run.agent.total_cost_usd().unwrap(), price.cost_usd(&billed));
    assert_eq!(sum(run.results.iter().map(|r| &r.usage)), billed);
    let run_costs: f64 = run.results.iter().map(|r| r.cost_usd.unwrap()).sum();
    assert_close(run_costs, price.cost_usd(&billed));

    // Each request's usage reaches one event: its turn's, or its compaction's.
    let mut from_events = Usage::default();
    let mut compacted = 0;
    for event in &run.events {
        match event {
            AgentEvent::TurnCompleted { usage, .. } => from_events += *usage,
            AgentEvent::Compacted {
                usage, cost_usd, ..
            } => {
                compacted += 1;
                assert!(usage.output_tokens == 300, "{usage:?}");
                assert_close(cost_usd.unwrap(), price.cost_usd(usage));
                from_events += *usage;
            }
            _ => {}
        }
    }
    assert_eq!(compacted, summaries);
    assert_eq!(from_events, billed);

    let id = run.agent.session_id().to_owned();
    let records = tool_sdk::session::SessionStore::load(
        &SqliteStore::open(dir.path().join("sessions.db")).unwrap(),
        &id,
    )
    .await
    .unwrap();
    let stored: Vec<&Usage> = records
        .iter()
        .filter_map(|record| match record {
            Record::Usage { usage } => Some(usage),
            _ => None,
        })
        .collect();
    assert_eq!(stored.len(), requests, "one record a request");
    assert_eq!(sum(stored), billed);
    // The first agent lets the session go (its lease with it) before another takes it up.
    let config = run.config.clone();
    drop(run);
    let resumed = Agent::resume(config, &id).await.unwrap();
    assert_eq!(resumed.total_usage(), billed);
    assert_close(resumed.total_cost_usd().unwrap(), price.cost_usd(&billed));
}

/// With the answer's `max_tokens` reserved, no request of a long conversation in a small
/// window is refused as too long.
#[tokio::test]
async fn every_request_leaves_room_for_max_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let window = 20_000;
    let run = long_run(dir.path(), 40, window, |config| config).await;
    let ledger = run.ledger.lock().unwrap();
    assert_eq!(ledger.refused, 0);
    assert_eq!(ledger.sizes.len(), ledger.billed.len());
    let largest = ledger
        .sizes
        .iter()
        .map(|(tokens, _)| *tokens)
        .max()
        .unwrap();
    for (tokens, max_tokens) in &ledger.sizes {
        assert_eq!(*max_tokens, 8_192);
        assert!(
            tokens + max_tokens <= window,
            "{tokens} + {max_tokens} > {window}"
        );
    }
    // The window was used, not avoided.
    assert!(largest > 8_000, "{largest}");
}

/// Clearing down to `clear_to` makes room for several turns: fewer batches, and fewer breaks
/// of the cache's prefix, than clearing just under `clear_at` (as before) did.
#[tokio::test]
async fn clearing_in_a_small_window_breaks_the_cache_rarely() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = 40;
    let run = long_run(dir.path(), prompts, 20_000, |config| config).await;
    let dir = tempfile::tempdir().unwrap();
    let barely = long_run(dir.path(), prompts, 20_000, |mut config| {
        config.context.clear_to = config.context.clear_at;
        config.context.keep_tool_results = 3;
        config
    })
    .await;
    let (batches, before) = (run.clearing_batches(), barely.clearing_batches());
    let breaks = run.ledger.lock().unwrap().cache_breaks();
    let breaks_before = barely.ledger.lock().unwrap().cache_breaks();
    let turns = run.ledger.lock().unwrap().views.len();
    eprintln!(
        "batches {batches} (before {before}), breaks {breaks} (before {breaks_before}) in {turns} turns"
    );
    assert!(batches > 0);
    assert!(
        batches < prompts,
        "{batches} batches over {prompts} prompts"
    );
    assert!(batches * 2 <= before, "{batches} batches, {before} before");
    assert!(
        breaks * 2 <= breaks_before,
        "{breaks} breaks, {breaks_before} before"
    );
    assert!(breaks * 3 <= turns, "{breaks} breaks in {turns} turns");
}

/// Anthropic's refusal of a prompt that fits only without `max_tokens` is a prompt too long:
/// the agent compacts and the turn goes through.
#[tokio::test]
async fn input_and_max_tokens_over_the_window_is_answered_by_a_compaction() {
    let server = server(vec![
        fetch_turn("a"),
        ResponseTemplate::new(400).set_body_json(json!({"type": "error", "error": {
            "type": "invalid_request_error",
            "message": "input length and `max_tokens` exceed context limit: 196000 + 8192 > \
                        200000, decrease input length or `max_tokens` and try again"}})),
        text_turn("SUMMARY: asked to read a."),
        text_turn("done"),
    ])
    .await;
    let agent = Agent::create(config(&server).context(|c| c.with_window(1_000_000)))
        .await
        .unwrap();
    let (events, result) = run(&agent, "Read a.").await;
    assert!(result.error.is_none(), "{:?}", result.error);
    assert_eq!(result.text, "done");
    assert_eq!(compactions(&events).len(), 1);
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 4);
    assert!(
        messages(&bodies[2]).last().unwrap()["content"]
            .to_string()
            .contains("about to be compacted")
    );
    let summary = messages(&bodies[3])[0]["content"][0]["text"]
        .as_str()
        .unwrap();
    assert!(summary.ends_with("SUMMARY: asked to read a."));
}

/// A window `max_tokens` fills leaves the prompt no room: said before any request is sent.
#[tokio::test]
async fn max_tokens_as_large_as_the_window_is_a_config_error() {
    let server = server(vec![text_turn("never sent")]).await;
    let agent = Agent::create(config(&server).context(|c| c.with_window(1_000)))
        .await
        .unwrap();
    let (_, result) = run(&agent, "Hi").await;
    let Some(tool_sdk::agent::AgentError::Config(
        error @ tool_sdk::agent::ConfigError::NoPromptRoom {
            max_tokens: 1000,
            window: 1000,
        },
    )) = &result.error
    else {
        panic!("{:?}", result.error);
    };
    let message = error.to_string();
    assert!(
        message.contains(
            "max_tokens (1000) leaves no room for the prompt in the context window of 1000 tokens"
        ),
        "{message}"
    );
    assert_eq!(bodies(&server).await.len(), 0);
}

/// `[context]` shares out of order are refused when the agent is created, by name, before any
/// request is sent; with the window unmanaged they are not used, so not refused.
#[tokio::test]
async fn context_shares_out_of_order_are_refused_at_create() {
    let server = server(vec![text_turn("never sent")]).await;
    let bad = |c: tool_sdk::agent::ContextSettings| c.with_thresholds(0.9, 0.5);
    let Err(tool_sdk::agent::AgentError::Config(error)) =
        Agent::create(config(&server).context(bad)).await
    else {
        panic!("an agent was created with clear_at above compact_at");
    };
    assert!(
        matches!(
            error,
            tool_sdk::agent::ConfigError::ContextOrder {
                lower: "clear_at",
                upper: "compact_at",
                ..
            }
        ),
        "{error:?}"
    );
    assert!(
        error
            .to_string()
            .contains("clear_at (0.9) must not be above compact_at (0.5)"),
        "{error}"
    );
    let unmanaged = |c: tool_sdk::agent::ContextSettings| bad(c).with_compaction(false);
    assert!(
        Agent::create(config(&server).context(unmanaged))
            .await
            .is_ok()
    );
    assert_eq!(bodies(&server).await.len(), 0);
}

/// The summary request counts in the run's token budget: one that it uses up stops the run
/// before the turn it was made for.
#[tokio::test]
async fn a_budget_the_summary_uses_up_stops_the_run() {
    let server = server(vec![
        fetch_turn("a"),
        fetch_turn("b"),
        fetch_turn("c"),
        text_turn("SUMMARY: pages a and b were read."),
        text_turn("done"),
    ])
    .await;
    // 15 tokens a request: 45 after three turns, 60 with the summary.
    let agent = Agent::create(config(&server).limits(|l| l.with_max_run_tokens(50)))
        .await
        .unwrap();
    let (events, result) = run(&agent, "Read a, b and c.").await;
    assert!(
        matches!(
            result.error,
            Some(tool_sdk::agent::AgentError::TokenLimitExceeded {
                spent: 60,
                limit: 50
            })
        ),
        "{:?}",
        result.error
    );
    assert_eq!(compactions(&events).len(), 1);
    assert_eq!(
        bodies(&server).await.len(),
        4,
        "no request after the summary"
    );
    assert_eq!(agent.total_usage().total_tokens(), 60);
}
