//! Long runs (issue #14): what a 60-turn coding session costs in prompt tokens, with prompt
//! caching off and on.
//!
//! A local server plays the model: it answers each request with the next scripted turn (a
//! read, a grep, an edit or a test run, each a `tool_use`, then a closing text) and prices the
//! request the way Anthropic does. It walks the prompt in the order the cache sees it (tools,
//! then the system prompt, then each message block) and, at each block marked
//! `cache_control`, hashes the bytes so far. The longest marked prefix an earlier request
//! wrote is a cache read (billed 0.1x), the rest up to the last mark is written and
//! remembered (1.25x), what follows is plain input (1x); tokens are estimated at 4 characters
//! each, and marks under 1024 tokens (the model's minimum) count for nothing. The counts go
//! back in the stream's `usage`, the way the API reports them, and the agent adds them up.
//!
//! The tools are fakes that answer deterministic text of 2–8 kB, so every run sends the same
//! bytes. [`run_session`] takes a tweak of the agent's config: caching off and on today;
//! other settings (a context window with compaction) are one more call.
//!
//! A second script plays a long conversation in a small window (issue 25): 40 prompts, each
//! answered by two reads of an 8,000-character page then a text, against a 20k window; it
//! counts the batches of cleared results and the requests that break the cache's prefix
//! ([`small_window`]).
//!
//! `long_run [TURNS]` prints one JSON object: each run's [`Stats`], the reduction of the
//! billed input with caching (target: at least 75 % lower) and the small window's
//! [`WindowStats`].

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hasher};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::{Price, RetryPolicy, Usage};
use tool_sdk::permission::PermissionMode;
use tool_sdk::{ToolRegistry, tool};
use tool_sdk_benches::mock_http::{read_request_body, sse_event as event};

/// The model the agent believes it talks to (its cache minimum is 1024 tokens).
const MODEL: &str = "claude-sonnet-4-5";
/// Marks on shorter prefixes are ignored, as the API ignores them.
const MIN_CACHEABLE_TOKENS: u64 = 1024;
const CHARS_PER_TOKEN: u64 = 4;

// ---------------------------------------------------------------------------------------------
// The fake tools: deterministic long text

/// FNV-1a: a hash that is the same in every run and on every machine.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Between 3 and 12 kB of code-like lines, the same for the same `seed`: long enough that the
/// session outgrows a 100k window without compaction.
fn filler(seed: &str) -> String {
    let hash = fnv(seed);
    let size = 3_000 + (hash % 9_000) as usize;
    let mut out = String::with_capacity(size + 120);
    let mut line = 1u64;
    while out.len() < size {
        let k = hash.rotate_left(line as u32) % 997;
        out.push_str(&format!(
            "{seed}:{line}: pub fn item_{k}(input: &str) -> Result<usize, Error> {{ \
             parse(input).map(|v| v * {line} + {k}) }}\n"
        ));
        line += 1;
    }
    out
}

/// Reads a file of the project.
#[tool(name = "ReadFile", read_only, register = false)]
async fn read_file(path: String) -> String {
    filler(&format!("read {path}"))
}

/// Searches the project's files for a regular expression; answers matching lines.
#[tool(name = "Grep", read_only, register = false)]
async fn grep(pattern: String) -> String {
    filler(&format!("grep {pattern}"))
}

/// Exactly 8,000 characters of code-like lines, the same for the same `seed`.
fn page(seed: &str) -> String {
    let mut text = filler(seed);
    while text.len() < PAGE_CHARS {
        text.push_str(&filler(&format!("{seed} {}", text.len())));
    }
    text.truncate(PAGE_CHARS);
    text
}

/// The length of a page of the small-window conversation.
const PAGE_CHARS: usize = 8_000;

/// Reads a page of the project's documentation.
#[tool(name = "ReadPage", read_only, register = false)]
async fn read_page(name: String) -> String {
    page(&format!("page {name}"))
}

/// Replaces `old_text` with `new_text` in a file; answers the edited region.
#[tool(name = "EditFile", register = false)]
async fn edit_file(path: String, old_text: String, new_text: String) -> String {
    let region = filler(&format!("edit {path} {old_text}"));
    format!("Replaced 1 occurrence in {path} with `{new_text}`. The region now reads:\n{region}")
}

/// Runs the project's tests whose names contain `filter`; answers their log.
#[tool(name = "RunTests", register = false)]
async fn run_tests(filter: String) -> String {
    filler(&format!("test {filter}"))
}

fn registry() -> Arc<ToolRegistry> {
    Arc::new(coding_tools())
}

/// The four coding tools.
fn coding_tools() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry
        .register(Arc::new(ReadFileTool))
        .expect("ReadFile registers");
    registry
        .register(Arc::new(GrepTool))
        .expect("Grep registers");
    registry
        .register(Arc::new(EditFileTool))
        .expect("EditFile registers");
    registry
        .register(Arc::new(RunTestsTool))
        .expect("RunTests registers");
    registry
}

/// The coding tools and `ReadPage`, for the small-window conversation.
fn page_registry() -> Arc<ToolRegistry> {
    let registry = coding_tools();
    registry
        .register(Arc::new(ReadPageTool))
        .expect("ReadPage registers");
    Arc::new(registry)
}

/// A coding agent's system prompt of about 5 kB (real ones are longer).
fn system_prompt() -> String {
    let rules = [
        "Read a file before you edit it, and quote the exact text you replace.",
        "Prefer small edits; run the tests that cover what you changed after each edit.",
        "Search with Grep before guessing where something is defined.",
        "Explain in one sentence what you are about to do before each tool call.",
        "Never invent file contents; when a result is cut, read the part you need again.",
        "Keep the public API stable unless the task says otherwise; document what you add.",
        "When the tests fail, read the failure, find its cause, and fix the cause, not the test.",
        "Finish with a short summary of what changed and what is left to do.",
    ];
    let mut prompt = String::from("You are a careful coding agent working in a Rust project.\n");
    for round in 1..=5 {
        for (n, rule) in rules.iter().enumerate() {
            prompt.push_str(&format!("{round}.{n}. {rule}\n"));
        }
    }
    prompt
}

// ---------------------------------------------------------------------------------------------
// The scripted model

/// The `n`th turn's tool call: (name, input).
fn call(n: usize) -> (&'static str, Value) {
    let module = format!("src/module_{}.rs", n % 17);
    match n % 4 {
        0 => ("ReadFile", json!({"path": module})),
        1 => (
            "Grep",
            json!({"pattern": format!("fn item_{}", n * 7 % 97)}),
        ),
        2 => (
            "EditFile",
            json!({"path": module, "old_text": format!("v * {n}"), "new_text": format!("v * {}", n + 1)}),
        ),
        _ => ("RunTests", json!({"filter": format!("module_{}", n % 17)})),
    }
}

/// What the agent asks when it compacts (a phrase of its summary instructions).
const SUMMARY_ASK: &str = "about to be compacted";

/// Whether `request` is the agent asking for a summary of the conversation (to compact it).
fn is_summary_request(request: &Value) -> bool {
    let last = request["messages"]
        .as_array()
        .and_then(|messages| messages.last());
    last.is_some_and(|message| message["content"].to_string().contains(SUMMARY_ASK))
}

/// The output tokens a summary's answer reports.
const SUMMARY_OUTPUT_TOKENS: u64 = 500;

/// The answer to a summary request: about 2,000 characters of summary, 500 output tokens.
fn summary_stream(n: usize, usage: &Priced) -> String {
    let summary = format!(
        "Summary of the work so far (compaction {n}): the user wants item parsing in every \
         module one step stricter with the tests green. {}",
        "Read and edited src/module_*.rs; grep found every parse call; tests ran green after \
         each edit; the next step is the remaining modules. "
            .repeat(12)
    );
    [
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": format!("msg_summary_{n}"),
                "type": "message", "role": "assistant", "model": MODEL, "content": [],
                "stop_reason": null, "usage": {"input_tokens": usage.input,
                "cache_read_input_tokens": usage.read,
                "cache_creation_input_tokens": usage.write, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0,
                "content_block": {"type": "text", "text": summary}}),
        ),
        event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": SUMMARY_OUTPUT_TOKENS}}),
        ),
        event("message_stop", json!({"type": "message_stop"})),
    ]
    .concat()
}

/// The stream of turn `n` of `turns`, reporting this usage.
fn turn_stream(n: usize, turns: usize, usage: &Priced) -> String {
    let last = n + 1 >= turns;
    let text = match last {
        true => "All done: the edits are in and the tests pass.".to_owned(),
        false => format!("Step {}: next I use {}.", n + 1, call(n).0),
    };
    answer_stream(n, &text, (!last).then(|| call(n)), usage)
}

/// The stream of answer `n` of the small-window conversation: two page reads, then a text.
fn page_stream(n: usize, usage: &Priced) -> String {
    match n % 3 {
        2 => answer_stream(n, &format!("Both pages read ({n})."), None, usage),
        _ => answer_stream(
            n,
            "Reading the next page.",
            Some(("ReadPage", json!({"name": n.to_string()}))),
            usage,
        ),
    }
}

/// The stream of answer `n`: `text`, then `call` if any, reporting this usage.
fn answer_stream(
    n: usize,
    text: &str,
    call: Option<(&'static str, Value)>,
    usage: &Priced,
) -> String {
    let mut events = vec![event(
        "message_start",
        json!({"type": "message_start", "message": {"id": format!("msg_{n}"), "type": "message",
            "role": "assistant", "model": MODEL, "content": [], "stop_reason": null,
            "usage": {"input_tokens": usage.input, "cache_read_input_tokens": usage.read,
                "cache_creation_input_tokens": usage.write, "output_tokens": 1}}}),
    )];
    events.push(event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0,
            "content_block": {"type": "text", "text": text}}),
    ));
    events.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    let last = call.is_none();
    if let Some((name, input)) = call {
        events.push(event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block":
                {"type": "tool_use", "id": format!("toolu_{n}"), "name": name, "input": {}}}),
        ));
        events.push(event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
        ));
        events.push(event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ));
    }
    events.push(event(
        "message_delta",
        json!({"type": "message_delta",
            "delta": {"stop_reason": if last { "end_turn" } else { "tool_use" }},
            "usage": {"output_tokens": 40}}),
    ));
    events.push(event("message_stop", json!({"type": "message_stop"})));
    events.concat()
}

// ---------------------------------------------------------------------------------------------
// Pricing a request as Anthropic's cache would

/// What `usage` bills in input-token equivalents, at Anthropic's ratios: cache reads 0.1x,
/// writes 1.25x, output 5x (the SDK's own `Price::per_million` at an input price of 1).
fn input_equivalent(usage: &Usage) -> f64 {
    Price::per_million(1.0, 5.0).cost_usd(usage) * 1_000_000.0
}

/// One request's prompt tokens by kind.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Priced {
    input: u64,
    read: u64,
    write: u64,
}

/// `value` without `cache_control`: the cache compares content, not marks.
fn unmarked(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, _)| *key != "cache_control")
                .map(|(key, value)| (key.clone(), unmarked(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(unmarked).collect()),
        other => other.clone(),
    }
}

/// The prompt's pieces in cache order, each with whether it carries a mark.
fn pieces(body: &Value) -> Vec<(String, bool)> {
    let marked = |value: &Value| value.get("cache_control").is_some();
    let mut out = Vec::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        out.push((unmarked(tool).to_string(), marked(tool)));
    }
    match &body["system"] {
        Value::String(text) => out.push((json!({"type": "text", "text": text}).to_string(), false)),
        Value::Array(blocks) => {
            for block in blocks {
                out.push((unmarked(block).to_string(), marked(block)));
            }
        }
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("?");
        for block in message["content"].as_array().into_iter().flatten() {
            out.push((format!("{role}:{}", unmarked(block)), marked(block)));
        }
    }
    out
}

/// Prices one request against the prefixes written so far, and remembers what it writes.
fn price(body: &Value, written: &mut HashSet<u64>) -> (Priced, u64) {
    let mut hasher = DefaultHasher::new();
    let mut chars = 0u64;
    // (tokens of the prefix, its hash) at each mark the API would honour.
    let mut marks: Vec<(u64, u64)> = Vec::new();
    for (piece, marked) in pieces(body) {
        hasher.write(piece.as_bytes());
        chars += piece.len() as u64;
        let tokens = chars / CHARS_PER_TOKEN;
        if marked && tokens >= MIN_CACHEABLE_TOKENS {
            marks.push((tokens, hasher.clone().finish()));
        }
    }
    let total = chars / CHARS_PER_TOKEN;
    let read = marks
        .iter()
        .rev()
        .find(|(_, hash)| written.contains(hash))
        .map_or(0, |(tokens, _)| *tokens);
    let end = marks.last().map_or(0, |(tokens, _)| *tokens).max(read);
    for (tokens, hash) in &marks {
        if *tokens > read {
            written.insert(*hash);
        }
    }
    let priced = Priced {
        input: total - end,
        read,
        write: end - read,
    };
    (priced, total)
}

// ---------------------------------------------------------------------------------------------
// The server

/// What the server saw of one session.
#[derive(Default)]
struct Seen {
    written: HashSet<u64>,
    requests: usize,
    /// Scripted turns answered (summary requests are not).
    scripted: usize,
    billed: Vec<Priced>,
    /// The summary requests' share of `billed`.
    summaries: Vec<Priced>,
    largest_request_tokens: u64,
    /// Tokens and `max_tokens` of every request: what the provider checks against the window.
    sizes: Vec<(u64, u64)>,
    /// The messages of each scripted request, without cache marks: what the cache compares.
    views: Vec<Value>,
}

impl Seen {
    /// Scripted requests whose messages do not start with the previous one's: each breaks
    /// the prompt cache's prefix (and is billed as a cache write from there).
    fn cache_breaks(&self) -> usize {
        self.views
            .windows(2)
            .filter(|pair| {
                let (before, now) = (pair[0].as_array(), pair[1].as_array());
                let (Some(before), Some(now)) = (before, now) else {
                    return true;
                };
                !now.starts_with(before)
            })
            .count()
    }
}

/// What the server answers with.
#[derive(Clone, Copy)]
enum Script {
    /// The coding session of this many turns.
    Coding(usize),
    /// The small-window conversation: each prompt two page reads then a text.
    Pages,
}

/// Answers each request with the next answer of `script`, priced.
async fn serve(listener: TcpListener, script: Script, seen: Arc<Mutex<Seen>>) {
    while let Ok((mut socket, _)) = listener.accept().await {
        let Some(body) = read_request_body(&mut socket).await else {
            continue;
        };
        let stream = {
            let mut seen = seen.lock().expect("the lock is never poisoned");
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let (priced, total) = price(&request, &mut seen.written);
            seen.requests += 1;
            seen.billed.push(priced);
            seen.largest_request_tokens = seen.largest_request_tokens.max(total);
            let max_tokens = request["max_tokens"].as_u64().unwrap_or(0);
            seen.sizes.push((total, max_tokens));
            if is_summary_request(&request) {
                seen.summaries.push(priced);
                summary_stream(seen.summaries.len(), &priced)
            } else {
                let n = seen.scripted;
                seen.scripted += 1;
                seen.views.push(unmarked(&request["messages"]));
                match script {
                    Script::Coding(turns) => turn_stream(n, turns, &priced),
                    Script::Pages => page_stream(n, &priced),
                }
            }
        };
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\
             connection: close\r\n\r\n",
            stream.len()
        );
        let _ = socket.write_all(head.as_bytes()).await;
        let _ = socket.write_all(stream.as_bytes()).await;
        let _ = socket.flush().await;
    }
}

// ---------------------------------------------------------------------------------------------
// A session

/// What one session's prompts cost.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Requests sent (model turns).
    pub requests: usize,
    /// Prompt tokens billed at the input price.
    pub input_tokens: u64,
    /// Prompt tokens read from the cache (0.1x).
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache (1.25x).
    pub cache_write_tokens: u64,
    /// Every prompt token, whatever its price.
    pub prompt_tokens: u64,
    /// input + 0.1 read + 1.25 write: the session's input bill in input-token equivalents.
    pub billed_input_equivalent: f64,
    /// The longest prompt sent, in tokens: what a context window must hold.
    pub largest_request_tokens: u64,
    /// Compactions: requests for a summary of the conversation.
    pub compactions: usize,
    /// What those summary requests cost, in the same input-token equivalents (they are in
    /// `billed_input_equivalent` too), plus their output tokens at 5x (Anthropic's output
    /// price is five times the input price).
    pub compaction_cost_equivalent: f64,
    /// Scripted requests whose messages do not start with the previous one's: each breaks
    /// the prompt cache's prefix (a batch of cleared results, a compaction).
    pub cache_breaks: usize,
}

impl Stats {
    fn from_usage(usage: Usage, requests: usize, largest_request_tokens: u64) -> Self {
        Stats {
            requests,
            input_tokens: usage.input_tokens,
            cache_read_tokens: usage.cache_read_input_tokens,
            cache_write_tokens: usage.cache_creation_input_tokens,
            prompt_tokens: usage.prompt_tokens(),
            // The input bill only: output is not what caching changes.
            billed_input_equivalent: input_equivalent(&Usage {
                output_tokens: 0,
                ..usage
            }),
            largest_request_tokens,
            compactions: 0,
            compaction_cost_equivalent: 0.0,
            cache_breaks: 0,
        }
    }
}

/// Runs the scripted session of `turns` turns (the last one closes with text) with the
/// agent's config changed by `tweak`, against a fresh server and an empty cache.
pub async fn run_session(turns: usize, tweak: impl FnOnce(AgentConfig) -> AgentConfig) -> Stats {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = tokio::spawn(serve(listener, Script::Coding(turns), seen.clone()));
    let model = AnthropicModel::new(MODEL, "key")
        .with_base_url(format!("http://{addr}"))
        .with_retry(RetryPolicy::none());
    let config = AgentConfig::new()
        .with_model(model)
        .with_registry(registry())
        .model(|m| m.with_system_prompt(system_prompt()))
        .permissions(|p| p.with_mode(PermissionMode::BypassPermissions))
        .limits(|l| l.with_max_turns(u32::try_from(turns + 5).unwrap_or(u32::MAX)));
    let agent = Agent::create(tweak(config))
        .await
        .expect("the agent builds");
    let result = agent
        .prompt("Make item parsing in every module one step stricter, with tests green.")
        .await
        .expect("the session runs to its end");
    server.abort();
    assert_eq!(result.tool_calls, turns - 1, "every scripted call ran");
    assert!(result.errors.is_empty(), "{:?}", result.errors);
    let seen = seen.lock().expect("the lock is never poisoned");
    // What the agent added up is what the server billed.
    let billed = seen
        .billed
        .iter()
        .fold(Usage::default(), |mut sum, priced| {
            sum.input_tokens += priced.input;
            sum.cache_read_input_tokens += priced.read;
            sum.cache_creation_input_tokens += priced.write;
            sum
        });
    assert_eq!(
        (
            result.usage.input_tokens,
            result.usage.cache_read_input_tokens,
            result.usage.cache_creation_input_tokens
        ),
        (
            billed.input_tokens,
            billed.cache_read_input_tokens,
            billed.cache_creation_input_tokens
        ),
    );
    let mut stats = Stats::from_usage(result.usage, seen.requests, seen.largest_request_tokens);
    stats.compactions = seen.summaries.len();
    stats.cache_breaks = seen.cache_breaks();
    stats.compaction_cost_equivalent = seen
        .summaries
        .iter()
        .map(|priced| {
            input_equivalent(&Usage {
                input_tokens: priced.input,
                output_tokens: SUMMARY_OUTPUT_TOKENS,
                cache_read_input_tokens: priced.read,
                cache_creation_input_tokens: priced.write,
            })
        })
        .fold(0.0, |sum, cost| sum + cost);
    stats
}

/// What the small-window conversation did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct WindowStats {
    /// The window managed, in tokens.
    pub window: u64,
    /// The answer's `max_tokens`, which the provider counts in the window with the prompt.
    pub max_tokens: u32,
    /// Prompts sent, one run each.
    pub prompts: usize,
    /// Requests sent, summary requests included.
    pub requests: usize,
    /// Compactions: requests for a summary.
    pub compactions: usize,
    /// Batches of tool results cleared (`ToolResultsCleared` events).
    pub clearing_batches: usize,
    /// Scripted requests whose messages do not start with the previous one's.
    pub cache_breaks: usize,
    /// Requests whose prompt and `max_tokens` together exceed the window: the ones a recent
    /// Claude model refuses.
    pub over_window: usize,
    /// The longest prompt sent, in tokens.
    pub largest_request_tokens: u64,
    /// Prompt tokens billed at the input price, read from and written to the cache.
    pub input_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_write_tokens: u64,
    /// input + 0.1 read + 1.25 write, in input-token equivalents.
    pub billed_input_equivalent: f64,
    /// Prompt and output tokens the server billed that the agent's `total_usage()` lacks.
    pub missing_from_totals: u64,
}

/// `prompts` prompts to one agent managing a 20k window and answering in at most
/// `max_tokens`, each prompt answered by two reads of an 8,000-character page then a text,
/// against a fresh server and an empty cache.
pub async fn small_window(prompts: usize, max_tokens: u32) -> WindowStats {
    let window = 20_000;
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("a port");
    let addr = listener.local_addr().expect("an address");
    let seen = Arc::new(Mutex::new(Seen::default()));
    let server = tokio::spawn(serve(listener, Script::Pages, seen.clone()));
    let model = AnthropicModel::new(MODEL, "key")
        .with_base_url(format!("http://{addr}"))
        .with_retry(RetryPolicy::none());
    let mut config = AgentConfig::new()
        .with_model(model)
        .with_registry(page_registry())
        .model(|m| m.with_system_prompt(system_prompt()))
        .permissions(|p| p.with_mode(PermissionMode::BypassPermissions))
        .context(|c| c.with_window(window));
    config.model.max_tokens = max_tokens;
    let agent = Agent::create(config).await.expect("the agent builds");
    let mut clearing_batches = 0;
    for n in 0..prompts {
        let mut run = agent.run(format!(
            "Read pages {n}a and {n}b and tell me what they say."
        ));
        while let Some(event) = run.next().await {
            match event {
                AgentEvent::ToolResultsCleared { .. } => clearing_batches += 1,
                AgentEvent::Finished(result) => {
                    assert!(result.error.is_none(), "prompt {n}: {:?}", result.error);
                }
                _ => {}
            }
        }
    }
    server.abort();
    let seen = seen.lock().expect("the lock is never poisoned");
    let billed = seen
        .billed
        .iter()
        .fold(Usage::default(), |mut sum, priced| {
            sum.input_tokens += priced.input;
            sum.cache_read_input_tokens += priced.read;
            sum.cache_creation_input_tokens += priced.write;
            sum
        });
    let output = (seen.requests - seen.summaries.len()) as u64 * 40
        + seen.summaries.len() as u64 * SUMMARY_OUTPUT_TOKENS;
    let total = agent.total_usage();
    WindowStats {
        window,
        max_tokens,
        prompts,
        requests: seen.requests,
        compactions: seen.summaries.len(),
        clearing_batches,
        cache_breaks: seen.cache_breaks(),
        over_window: seen
            .sizes
            .iter()
            .filter(|(tokens, max_tokens)| tokens + max_tokens > window)
            .count(),
        largest_request_tokens: seen.largest_request_tokens,
        input_tokens: billed.input_tokens,
        cache_read_tokens: billed.cache_read_input_tokens,
        cache_write_tokens: billed.cache_creation_input_tokens,
        billed_input_equivalent: input_equivalent(&billed),
        missing_from_totals: (billed.prompt_tokens() + output)
            .saturating_sub(total.prompt_tokens() + total.output_tokens),
    }
}

/// The small-window conversation with the default `max_tokens` (8,192: the prompt has 11.8k
/// of the window) and with 2,048 (it has 18k).
async fn small_windows() -> Value {
    json!({
        "max_tokens_8192": small_window(40, 8_192).await,
        "max_tokens_2048": small_window(40, 2_048).await,
    })
}

/// Both runs, and how much lower the bill is with caching.
async fn measure(turns: usize) -> Value {
    let off = run_session(turns, |config| {
        config.model(|m| m.with_prompt_caching(false))
    })
    .await;
    let on = run_session(turns, |config| {
        config.model(|m| m.with_prompt_caching(true))
    })
    .await;
    let reduction = 1.0 - on.billed_input_equivalent / off.billed_input_equivalent;
    // Against a 100k window: "off" sends every request whole (the window is not managed).
    let window = 100_000;
    let compaction_off =
        run_session(turns, |config| config.context(|c| c.with_compaction(false))).await;
    let compaction_on =
        run_session(turns, |config| config.context(|c| c.with_window(window))).await;
    // The same with no result ever cleared, so that the conversation itself must be compacted:
    // what a compaction costs.
    let summaries_only = run_session(turns, |mut config| {
        config.context.keep_tool_results = usize::MAX;
        config.context(|c| c.with_window(window))
    })
    .await;
    json!({
        "turns": turns,
        "model": MODEL,
        "caching_off": off,
        "caching_on": on,
        "reduction": reduction,
        "target_reduction": 0.75,
        "window": window,
        "compaction_off": compaction_off,
        "compaction_on": compaction_on,
        "compaction_without_clearing": summaries_only,
        "small_window": small_windows().await,
    })
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let turns: usize = match std::env::args().nth(1).as_deref() {
        None => 60,
        Some("--small-window") => {
            println!("{}", runtime.block_on(small_windows()));
            return;
        }
        Some(arg) => match arg.parse() {
            Ok(turns) if turns >= 2 => turns,
            _ => {
                eprintln!(
                    "usage: long_run [TURNS | --small-window]  (TURNS: a number, at least 2; \
                     default 60; --small-window: only the 40 prompts in a 20k window)"
                );
                std::process::exit(2);
            }
        },
    };
    println!("{}", runtime.block_on(measure(turns)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_outputs_are_3_to_12_kb_and_stable() {
        for seed in ["read a", "grep b", "test c", "edit d"] {
            let text = filler(seed);
            assert!((3_000..12_200).contains(&text.len()), "{}", text.len());
            assert_eq!(text, filler(seed));
        }
    }

    #[test]
    fn the_pricing_reads_what_an_earlier_request_wrote() {
        let block = |text: &str, mark: bool| {
            let mut block = json!({"type": "text", "text": text});
            if mark {
                block["cache_control"] = json!({"type": "ephemeral"});
            }
            block
        };
        let long = "x".repeat(8_000);
        let first = json!({"messages": [{"role": "user", "content": [block(&long, true)]}]});
        let mut written = HashSet::new();
        let (priced, total) = price(&first, &mut written);
        assert_eq!((priced.read, priced.input), (0, 0));
        assert_eq!(priced.write, total);
        let second = json!({"messages": [
            {"role": "user", "content": [block(&long, true)]},
            {"role": "assistant", "content": [block("ok", false)]},
            {"role": "user", "content": [block(&long, false)]},
        ]});
        let (again, total_again) = price(&second, &mut written);
        assert_eq!(again.read, total);
        assert_eq!(again.write, 0);
        assert_eq!(again.input, total_again - total);
    }

    #[test]
    fn caching_cuts_the_bill_of_a_long_run() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let report = runtime.block_on(measure(24));
        let off = &report["caching_off"];
        assert_eq!(off["cache_read_tokens"], 0);
        assert_eq!(off["cache_write_tokens"], 0);
        assert!(report["caching_on"]["cache_read_tokens"].as_u64() > Some(0));
        assert!(report["reduction"].as_f64() > Some(0.5), "{report}");
    }

    #[test]
    fn a_small_window_is_cleared_in_batches_that_last() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let stats = runtime.block_on(small_window(12, 2_048));
        assert_eq!(stats.over_window, 0, "{stats:?}");
        assert_eq!(stats.missing_from_totals, 0, "{stats:?}");
        assert!(stats.clearing_batches > 0, "{stats:?}");
        assert!(stats.cache_breaks * 3 <= stats.requests, "{stats:?}");
    }

    #[test]
    fn compaction_keeps_every_request_inside_the_window() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let window = 30_000;
        let (whole, cleared, compacted) = runtime.block_on(async {
            (
                run_session(24, |config| config.context(|c| c.with_compaction(false))).await,
                run_session(24, |config| config.context(|c| c.with_window(window))).await,
                run_session(24, |mut config| {
                    config.context.keep_tool_results = usize::MAX;
                    config.context(|c| c.with_window(window))
                })
                .await,
            )
        });
        assert!(whole.largest_request_tokens > window, "{whole:?}");
        assert_eq!(whole.compactions, 0);
        assert!(cleared.largest_request_tokens <= window, "{cleared:?}");
        assert!(compacted.compactions >= 1, "{compacted:?}");
        assert!(compacted.compaction_cost_equivalent > 0.0, "{compacted:?}");
        assert!(compacted.largest_request_tokens <= window, "{compacted:?}");
    }
}
