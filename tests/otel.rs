//! The agent's spans, sent by `telemetry::init_otlp` over real OTLP/HTTP to a receiver that
//! decodes the wire format with OpenTelemetry's official protobuf definitions
//! (`opentelemetry-proto`): span names, GenAI attributes and parent/child links of a run
//! with parallel tool calls, a failing tool and a sub-agent.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::builtin::TaskTool;
use tool_sdk::model::{ScriptedModel, ScriptedTurn};
use tool_sdk::{Tool, ToolError, ToolRegistry, tool};

// ---- tools ----

/// Looks a city up (slowly enough for two calls to overlap).
#[tool(register = false, read_only)]
async fn lookup(city: String) -> String {
    tokio::time::sleep(Duration::from_millis(150)).await;
    format!("{city}: sunny")
}

/// Fails, after a while.
#[tool(register = false, read_only)]
async fn broken(city: String) -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_millis(150)).await;
    Err(ToolError::failed(format!("no forecast for {city}")))
}

// ---- the receiver ----

/// One POST as received: its path, content type and decoded body.
struct Export {
    path: String,
    content_type: String,
    request: ExportTraceServiceRequest,
}

/// An OTLP/HTTP receiver on 127.0.0.1, on threads of its own (the exporter blocks while it
/// sends, so it must not wait for the test's runtime). Answers every POST with an empty
/// `ExportTraceServiceResponse`, or 400 when the body does not decode.
struct Receiver {
    address: String,
    exports: Arc<Mutex<Vec<Export>>>,
    problems: Arc<Mutex<Vec<String>>>,
}

impl Receiver {
    fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = format!("http://{}", listener.local_addr().unwrap());
        let exports = Arc::new(Mutex::new(Vec::new()));
        let problems = Arc::new(Mutex::new(Vec::new()));
        let (into, problems_into) = (exports.clone(), problems.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (into, problems_into) = (into.clone(), problems_into.clone());
                std::thread::spawn(move || serve(stream, &into, &problems_into));
            }
        });
        Receiver {
            address,
            exports,
            problems,
        }
    }

    /// Every span received, with the `service.name` of its resource.
    fn spans(&self) -> Vec<(String, Span)> {
        let problems = self.problems.lock().unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        let exports = self.exports.lock().unwrap();
        assert!(!exports.is_empty(), "nothing was exported");
        let mut spans = Vec::new();
        for export in exports.iter() {
            assert_eq!(export.path, "/v1/traces");
            assert_eq!(export.content_type, "application/x-protobuf");
            for resource_spans in &export.request.resource_spans {
                let service = resource_spans
                    .resource
                    .as_ref()
                    .and_then(|r| string_attr(&r.attributes, "service.name"))
                    .unwrap_or_default();
                for scope in &resource_spans.scope_spans {
                    for span in &scope.spans {
                        spans.push((service.clone(), span.clone()));
                    }
                }
            }
        }
        spans
    }
}

/// Serves one connection: HTTP/1.1 requests with a Content-Length, kept alive.
fn serve(stream: TcpStream, exports: &Mutex<Vec<Export>>, problems: &Mutex<Vec<String>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut headers = HashMap::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
            }
        }
        let length: usize = headers
            .get("content-length")
            .and_then(|l| l.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let status = match ExportTraceServiceRequest::decode(body.as_slice()) {
            Ok(request) if method == "POST" => {
                exports.lock().unwrap().push(Export {
                    path: path.to_owned(),
                    content_type: headers.get("content-type").cloned().unwrap_or_default(),
                    request,
                });
                "200 OK"
            }
            Ok(_) => {
                problems.lock().unwrap().push(format!("{method} {path}"));
                "405 Method Not Allowed"
            }
            Err(error) => {
                problems
                    .lock()
                    .unwrap()
                    .push(format!("undecodable body: {error}"));
                "400 Bad Request"
            }
        };
        // An empty ExportTraceServiceResponse is zero bytes of protobuf.
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

// ---- reading spans ----

fn attr<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v: &AnyValue| v.value.as_ref())
}

fn string_attr(attributes: &[KeyValue], key: &str) -> Option<String> {
    match attr(attributes, key) {
        Some(Value::StringValue(s)) => Some(s.clone()),
        _ => None,
    }
}

fn str_of(span: &Span, key: &str) -> String {
    string_attr(&span.attributes, key).unwrap_or_else(|| {
        panic!(
            "`{}` has no string `{key}`: {:?}",
            span.name, span.attributes
        )
    })
}

fn int_of(span: &Span, key: &str) -> i64 {
    match attr(&span.attributes, key) {
        Some(Value::IntValue(n)) => *n,
        other => panic!("`{}` has no int `{key}`: {other:?}", span.name),
    }
}

fn strings_of(span: &Span, key: &str) -> Vec<String> {
    match attr(&span.attributes, key) {
        Some(Value::ArrayValue(array)) => array
            .values
            .iter()
            .map(|v| match &v.value {
                Some(Value::StringValue(s)) => s.clone(),
                other => panic!("not a string: {other:?}"),
            })
            .collect(),
        other => panic!("`{}` has no array `{key}`: {other:?}", span.name),
    }
}

/// The one span called `name` whose parent is `parent`.
fn child<'a>(spans: &'a [Span], parent: &Span, name: &str) -> &'a Span {
    let found: Vec<&Span> = children(spans, parent)
        .into_iter()
        .filter(|s| s.name == name)
        .collect();
    assert_eq!(found.len(), 1, "`{name}` under `{}`", parent.name);
    found[0]
}

/// The children of `parent`, by start time.
fn children<'a>(spans: &'a [Span], parent: &Span) -> Vec<&'a Span> {
    let mut found: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id == parent.span_id)
        .collect();
    found.sort_by_key(|s| s.start_time_unix_nano);
    found
}

fn names(spans: &[&Span]) -> Vec<String> {
    spans.iter().map(|s| s.name.clone()).collect()
}

// ---- the tests ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_parallel_calls_and_a_sub_agent_is_one_trace_of_genai_spans() {
    let receiver = Receiver::start();
    let guard = tool_sdk::telemetry::init_otlp(&receiver.address, "otel-test").unwrap();

    let model = ScriptedModel::new([
        // Three read-only calls, run together: one fails, one starts a sub-agent.
        ScriptedTurn::tool_call_with_id("call_a", "lookup", json!({"city": "Lisbon"}))
            .with_tool_call_id("call_b", "broken", json!({"city": "Porto"}))
            .with_tool_call_id(
                "call_task",
                "Task",
                json!({"description": "check Faro", "prompt": "Look Faro up."}),
            ),
        // The sub-agent (the same model) calls a tool, then reports.
        ScriptedTurn::tool_call_with_id("call_c", "lookup", json!({"city": "Faro"})),
        ScriptedTurn::text("Faro: sunny."),
        // The parent answers.
        ScriptedTurn::text("Sunny in Lisbon and Faro; no forecast for Porto."),
    ]);
    let registry = ToolRegistry::new();
    let tools: [Arc<dyn Tool>; 3] = [
        Arc::new(LookupTool),
        Arc::new(BrokenTool),
        Arc::new(TaskTool),
    ];
    for tool in tools {
        registry.register(tool).unwrap();
    }
    // As a fallback list (of one): its turns say which model answered, which the chat spans
    // carry as `gen_ai.response.model`.
    let model = tool_sdk::model::FallbackModel::new(Arc::new(model), []);
    let config = AgentConfig::new()
        .with_name("forecaster")
        .with_model(model)
        .with_registry(Arc::new(registry));
    let agent = Agent::create(config).await.unwrap();
    let result = agent
        .prompt("Weather in Lisbon, Porto and Faro?")
        .await
        .unwrap();
    assert_eq!(result.tool_calls, 3);
    // Sends what is left and waits for the receiver's answer.
    drop(guard);

    let received = receiver.spans();
    assert!(received.iter().all(|(service, _)| service == "otel-test"));
    let spans: Vec<Span> = received.into_iter().map(|(_, span)| span).collect();
    let trace_id = &spans[0].trace_id;
    assert!(spans.iter().all(|s| &s.trace_id == trace_id), "one trace");

    // The run: the root.
    let roots: Vec<&Span> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .collect();
    assert_eq!(names(&roots), ["invoke_agent forecaster"]);
    let run = roots[0];
    assert_eq!(run.kind, SpanKind::Internal as i32);
    assert_eq!(str_of(run, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(str_of(run, "gen_ai.provider.name"), "scripted");
    assert_eq!(str_of(run, "gen_ai.agent.name"), "forecaster");
    assert_eq!(str_of(run, "gen_ai.agent.id"), "main");
    assert!(str_of(run, "gen_ai.conversation.id").starts_with("session-"));
    assert_eq!(str_of(run, "gen_ai.request.model"), "scripted");
    assert_eq!(
        int_of(run, "gen_ai.usage.input_tokens"),
        result.usage.input_tokens as i64
    );
    assert_eq!(
        int_of(run, "gen_ai.usage.output_tokens"),
        result.usage.output_tokens as i64
    );
    assert!(result.usage.input_tokens > 0 && result.usage.output_tokens > 0);
    assert!(attr(&run.attributes, "error.type").is_none());

    // Its children: two model calls and the three calls, which ran together.
    let under_run = children(&spans, run);
    let mut kinds = names(&under_run);
    kinds.sort();
    assert_eq!(
        kinds,
        [
            "chat scripted",
            "chat scripted",
            "execute_tool Task",
            "execute_tool broken",
            "execute_tool lookup",
        ]
    );
    let chats: Vec<&Span> = under_run
        .iter()
        .copied()
        .filter(|s| s.name == "chat scripted")
        .collect();
    for chat in &chats {
        assert_eq!(chat.kind, SpanKind::Client as i32);
        assert_eq!(str_of(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(str_of(chat, "gen_ai.provider.name"), "scripted");
        assert_eq!(str_of(chat, "gen_ai.request.model"), "scripted");
        assert_eq!(str_of(chat, "gen_ai.response.model"), "scripted");
        assert_eq!(int_of(chat, "gen_ai.request.max_tokens"), 8192);
        assert!(int_of(chat, "gen_ai.usage.output_tokens") > 0);
        // The scripted model caches nothing; still an int, as the conventions want.
        assert_eq!(int_of(chat, "gen_ai.usage.cache_read.input_tokens"), 0);
    }
    assert_eq!(
        strings_of(chats[0], "gen_ai.response.finish_reasons"),
        ["tool_use"]
    );
    assert_eq!(
        strings_of(chats[1], "gen_ai.response.finish_reasons"),
        ["end_turn"]
    );
    // The run's totals are its own turns' (the sub-agent's are its own).
    let input: i64 = chats
        .iter()
        .map(|c| int_of(c, "gen_ai.usage.input_tokens"))
        .sum();
    assert_eq!(input, result.usage.input_tokens as i64);

    let lookup = child(&spans, run, "execute_tool lookup");
    let broken = child(&spans, run, "execute_tool broken");
    let task = child(&spans, run, "execute_tool Task");
    for (span, name, id) in [
        (lookup, "lookup", "call_a"),
        (broken, "broken", "call_b"),
        (task, "Task", "call_task"),
    ] {
        assert_eq!(span.kind, SpanKind::Internal as i32);
        assert_eq!(str_of(span, "gen_ai.operation.name"), "execute_tool");
        assert_eq!(str_of(span, "gen_ai.tool.name"), name);
        assert_eq!(str_of(span, "gen_ai.tool.call.id"), id);
        assert_eq!(str_of(span, "gen_ai.tool.type"), "function");
        // Each starts after the first model call ended, and ends before the second starts.
        assert!(span.start_time_unix_nano >= chats[0].end_time_unix_nano);
        assert!(span.end_time_unix_nano <= chats[1].start_time_unix_nano);
    }
    // The two calls overlapped in time: they ran together.
    assert!(lookup.start_time_unix_nano < broken.end_time_unix_nano);
    assert!(broken.start_time_unix_nano < lookup.end_time_unix_nano);
    // The failure: error.type and an error status with the message.
    assert_eq!(str_of(broken, "error.type"), "execution_failed");
    let status = broken.status.as_ref().expect("a status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert!(
        status.message.contains("no forecast for Porto"),
        "{status:?}"
    );
    for ok in [lookup, task] {
        assert!(attr(&ok.attributes, "error.type").is_none(), "{}", ok.name);
        assert_ne!(
            ok.status.as_ref().map(|s| s.code),
            Some(StatusCode::Error as i32)
        );
    }

    // The sub-agent's run is a child of the Task call, with its own model call and call.
    let sub = child(&spans, task, "invoke_agent general-purpose");
    assert_eq!(children(&spans, task).len(), 1);
    assert_eq!(str_of(sub, "gen_ai.operation.name"), "invoke_agent");
    assert_eq!(str_of(sub, "gen_ai.agent.name"), "general-purpose");
    assert!(str_of(sub, "gen_ai.agent.id").starts_with("task-"));
    assert_eq!(
        names(&children(&spans, sub)),
        ["chat scripted", "execute_tool lookup", "chat scripted"]
    );
    let sub_call = child(&spans, sub, "execute_tool lookup");
    assert_eq!(str_of(sub_call, "gen_ai.tool.call.id"), "call_c");
    assert!(children(&spans, sub_call).is_empty());
    let sub_chats: Vec<&Span> = children(&spans, sub)
        .into_iter()
        .filter(|s| s.name == "chat scripted")
        .collect();
    let sub_input: i64 = sub_chats
        .iter()
        .map(|c| int_of(c, "gen_ai.usage.input_tokens"))
        .sum();
    assert_eq!(int_of(sub, "gen_ai.usage.input_tokens"), sub_input);

    // Nothing else: 1 + 5 spans of the run, 1 + 3 of the sub-agent.
    let genai = spans
        .iter()
        .filter(|s| attr(&s.attributes, "gen_ai.operation.name").is_some())
        .count();
    assert_eq!(genai, 10);
}

#[test]
fn a_bad_endpoint_is_a_clear_error() {
    for endpoint in ["localhost:4318", "not a url", "ftp://example.com"] {
        let error = tool_sdk::telemetry::init_otlp(endpoint, "otel-test")
            .err()
            .unwrap_or_else(|| panic!("{endpoint} was taken"));
        let message = error.to_string();
        assert!(message.contains(endpoint), "{message}");
        assert!(message.contains("http://localhost:4318"), "{message}");
    }
}

/// The MCP server the MCP tests run (tests/bin/mcp_test_server.rs).
const MCP_SERVER: &str = env!("CARGO_BIN_EXE_mcp-test-server");

/// W3C trace context in `_meta`: our client's `tools/call` span sends its `traceparent`, and
/// our server, another process exporting to the same receiver, makes its span of the call a
/// child of it. The subscriber is this thread's (the other test sets the global one), so the
/// runtime is single-threaded.
#[tokio::test(flavor = "current_thread")]
async fn an_mcp_call_and_the_servers_span_of_it_are_one_trace() {
    use tool_sdk::mcp::{McpClient, McpServerConfig};
    use tracing::Instrument;
    use tracing_subscriber::layer::SubscriberExt;

    let receiver = Receiver::start();
    let (layer, guard) =
        tool_sdk::telemetry::otlp_layer(&receiver.address, "mcp-client-test").unwrap();
    let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry().with(layer));

    let root = tempfile::tempdir().unwrap();
    let config = McpServerConfig::stdio(MCP_SERVER, [root.path().to_str().unwrap()])
        .with_env("MCP_TEST_OTLP_ENDPOINT", &receiver.address)
        // Its spans leave in batches: a short delay, so they arrive while the test waits.
        .with_env("OTEL_BSP_SCHEDULE_DELAY", "50");
    let client = McpClient::connect("ours", config).await.unwrap();
    let add = client
        .tools()
        .into_iter()
        .find(|t| t.name() == "mcp__ours__add")
        .expect("the server's add tool");
    let ctx = tool_sdk::ToolContext::new(root.path());
    let output = add
        .call(json!({"a": 2, "b": 3}), &ctx)
        .instrument(tracing::info_span!("the caller"))
        .await
        .unwrap();
    assert_eq!(output.to_text(), "5");
    // A call the server answers with an error result: both sides' spans say it failed.
    let refused = add
        .call(json!({"a": "two", "b": 3}), &ctx)
        .instrument(tracing::info_span!("the bad caller"))
        .await
        .unwrap();
    assert!(refused.is_error, "{refused:?}");

    // The server's spans arrive from its process; ours when the guard flushes.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let server_span = loop {
        let served: Vec<Span> = receiver
            .exports
            .lock()
            .unwrap()
            .iter()
            .flat_map(|export| export.request.resource_spans.iter())
            .flat_map(|r| r.scope_spans.iter().flat_map(|s| s.spans.iter()))
            .filter(|s| s.kind == SpanKind::Server as i32)
            .cloned()
            .collect();
        if served.len() == 2 {
            break served[0].clone();
        }
        assert!(std::time::Instant::now() < deadline, "no server spans came");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    client.close().await;
    guard.flush().unwrap();

    let spans = receiver.spans();
    let all = |service: &str, name: &str| -> Vec<Span> {
        spans
            .iter()
            .filter(|(s, span)| s == service && span.name == name)
            .map(|(_, span)| span.clone())
            .collect()
    };
    let of = |service: &str, name: &str| -> Span {
        let found = all(service, name);
        assert_eq!(found.len(), 1, "{service}: {name}");
        found[0].clone()
    };
    // The two calls' spans, told apart by their callers.
    let caller = of("mcp-client-test", "the caller");
    let bad_caller = of("mcp-client-test", "the bad caller");
    let calls = all("mcp-client-test", "tools/call add");
    let child_of = |spans: &[Span], parent: &Span| -> Span {
        let found: Vec<&Span> = spans
            .iter()
            .filter(|s| s.parent_span_id == parent.span_id)
            .collect();
        assert_eq!(found.len(), 1, "one child of {}", parent.name);
        found[0].clone()
    };
    let call = child_of(&calls, &caller);
    let bad_call = child_of(&calls, &bad_caller);
    let served_all = all("mcp-test-server", "tools/call add");
    let served = child_of(&served_all, &call);
    let bad_served = child_of(&served_all, &bad_call);
    // The server's pipeline refused the input; the client got an error result.
    for (failed, error_type) in [(&bad_served, "invalid_input"), (&bad_call, "tool_error")] {
        let status = failed.status.as_ref().expect("a status");
        assert_eq!(status.code, StatusCode::Error as i32, "{error_type}");
        assert!(status.message.contains("\"two\""), "{status:?}");
        assert_eq!(str_of(failed, "error.type"), error_type);
    }
    assert_ne!(
        served.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    assert!(served == server_span || bad_served == server_span);
    assert_eq!(call.kind, SpanKind::Client as i32);
    assert_eq!(call.parent_span_id, caller.span_id);
    assert_eq!(str_of(&call, "mcp.server.name"), "ours");
    // The join: the server's span is in the client's trace, under the client's call span.
    assert_eq!(served.trace_id, caller.trace_id);
    assert_eq!(served.parent_span_id, call.span_id);
    assert_eq!(str_of(&served, "mcp.method.name"), "tools/call");
    assert_eq!(str_of(&served, "gen_ai.tool.name"), "add");
    assert!(served.start_time_unix_nano >= call.start_time_unix_nano);
    assert!(served.end_time_unix_nano <= call.end_time_unix_nano);
}
