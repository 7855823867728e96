//! The MCP client against real servers: `@modelcontextprotocol/server-everything` (stdio and
//! Streamable HTTP), `@modelcontextprotocol/server-filesystem` and `mcp-server-time` (PyPI).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use tests::mcp_peers::{free_port, peers};
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent};
use tool_sdk::mcp::{McpClient, McpScope, McpServerConfig};
use tool_sdk::model::{ScriptedModel, ScriptedTurn};
use tool_sdk::{
    ContentBlock, ResourceContents, Tool, ToolContext, ToolError, ToolOutput, ToolUpdateKind,
};

fn everything() -> McpServerConfig {
    McpServerConfig::stdio(
        "node",
        [peers()
            .node_file("@modelcontextprotocol/server-everything", "dist/index.js")
            .display()
            .to_string()],
    )
}

fn find(client: &McpClient, name: &str) -> Arc<dyn Tool> {
    client
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| {
            let names: Vec<String> = client.tools().iter().map(|t| t.name().to_owned()).collect();
            panic!("no tool {name}; the server has {names:?}")
        })
}

/// A context that records progress lines.
fn recording_ctx() -> (ToolContext, Arc<Mutex<Vec<String>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let ctx = ToolContext::default().with_updates(move |update| {
        if let ToolUpdateKind::Progress(line) = update.kind {
            sink.lock().unwrap().push(line);
        }
    });
    (ctx, seen)
}

async fn call(client: &McpClient, name: &str, input: Value) -> Result<ToolOutput, ToolError> {
    find(client, name)
        .call(input, &ToolContext::default())
        .await
}

#[tokio::test]
#[ignore = "run by .ci/run before the tests: installs the pinned MCP peers"]
async fn install_peers() {
    assert!(peers().python().exists());
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_stdio() {
    let client = McpClient::connect("everything", everything())
        .await
        .unwrap();

    // Listed, renamed, described, annotated.
    let echo = find(&client, "mcp__everything__echo");
    assert!(!echo.description().is_empty());
    assert_eq!(echo.input_schema()["type"], "object");
    let long = find(&client, "mcp__everything__trigger-long-running-operation");
    assert!(long.is_read_only(), "readOnlyHint carries over");
    assert_eq!(long.category(), Some("mcp"));

    // Text.
    let out = call(&client, "mcp__everything__echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert!(!out.is_error);
    assert!(out.to_text().contains("hi"), "{out:?}");
    let out = call(&client, "mcp__everything__get-sum", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert!(out.to_text().contains('5'), "{out:?}");

    // An image block.
    let out = call(&client, "mcp__everything__get-tiny-image", json!({}))
        .await
        .unwrap();
    assert!(
        out.content
            .iter()
            .any(|b| matches!(b, ContentBlock::Image { media_type, data }
                if media_type == "image/png" && !data.is_empty())),
        "{out:?}"
    );

    // Structured content, with its output schema carried over.
    let structured = find(&client, "mcp__everything__get-structured-content");
    assert!(structured.output_schema().is_some());
    let out = structured
        .call(json!({"location": "New York"}), &ToolContext::default())
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.structured.as_ref().is_some_and(Value::is_object),
        "{out:?}"
    );

    // Embedded resources and resource links are kept as such; the model reads them as text.
    let out = call(
        &client,
        "mcp__everything__get-resource-reference",
        json!({}),
    )
    .await
    .unwrap();
    assert!(
        out.to_text()
            .contains("[resource demo://resource/dynamic/text/1]\nResource 1: ")
    );
    match &out.content[1] {
        ContentBlock::Resource {
            uri,
            mime_type,
            contents: ResourceContents::Text { text },
        } => {
            assert_eq!(uri, "demo://resource/dynamic/text/1");
            assert_eq!(mime_type.as_deref(), Some("text/plain"));
            assert!(
                text.starts_with("Resource 1: This is a plaintext resource"),
                "{text}"
            );
        }
        other => panic!("not an embedded text resource: {other:?}"),
    }
    let out = call(
        &client,
        "mcp__everything__get-resource-reference",
        json!({"resourceType": "Blob", "resourceId": 3}),
    )
    .await
    .unwrap();
    match &out.content[1] {
        ContentBlock::Resource {
            uri,
            contents: ResourceContents::Blob { blob },
            ..
        } => {
            assert_eq!(uri, "demo://resource/dynamic/blob/3");
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(blob)
                .unwrap();
            assert!(bytes.starts_with(b"Resource 3: This is a base64 blob"));
        }
        other => panic!("not an embedded blob: {other:?}"),
    }
    assert!(
        out.to_text()
            .contains("[binary resource demo://resource/dynamic/blob/3 (text/plain)]"),
        "{out:?}"
    );
    let out = call(
        &client,
        "mcp__everything__get-resource-links",
        json!({"count": 2}),
    )
    .await
    .unwrap();
    let links: Vec<&ContentBlock> = out
        .content
        .iter()
        .filter(|b| matches!(b, ContentBlock::ResourceLink { .. }))
        .collect();
    assert_eq!(links.len(), 2, "{out:?}");
    assert_eq!(
        links[1],
        &ContentBlock::ResourceLink {
            uri: "demo://resource/dynamic/text/2".into(),
            name: "Text Resource 2".into(),
            description: Some("Resource 2: plaintext resource".into()),
            mime_type: Some("text/plain".into()),
        }
    );
    assert!(
        out.to_text()
            .contains("[resource link demo://resource/dynamic/text/2 (Text Resource 2)]"),
        "{out:?}"
    );

    // Invalid arguments: the TypeScript SDK answers with an isError result quoting -32602.
    let out = call(&client, "mcp__everything__get-sum", json!({"a": "two"}))
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
    assert!(out.to_text().contains("-32602"), "{out:?}");

    // Progress notifications become progress updates.
    let (ctx, seen) = recording_ctx();
    let out = long
        .call(json!({"duration": 0.6, "steps": 3}), &ctx)
        .await
        .unwrap();
    assert!(out.to_text().contains("completed"), "{out:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen, ["1/3", "2/3", "3/3"]);

    // The TypeScript SDK does not know server/discover: the handshake fell back to
    // initialize, at the newest version the SDK speaks.
    assert_eq!(client.protocol_version().await.unwrap(), "2025-11-25");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn per_call_timeout_and_cancellation() {
    let config = everything().with_tool_timeout(Duration::from_millis(400));
    let client = McpClient::connect("slow", config).await.unwrap();
    let long = find(&client, "mcp__slow__trigger-long-running-operation");
    assert_eq!(long.timeout(), Some(Duration::from_millis(400)));

    let started = Instant::now();
    let error = long
        .call(json!({"duration": 5, "steps": 5}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Timeout(Duration::from_millis(400)));
    assert!(started.elapsed() < Duration::from_secs(3));

    // Cancelled by the caller: the call ends at once.
    let ctx = ToolContext::default();
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    });
    let started = Instant::now();
    let error = long
        .call(json!({"duration": 5, "steps": 5}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(2));

    // The connection is still good afterwards.
    let out = call(&client, "mcp__slow__echo", json!({"message": "still here"}))
        .await
        .unwrap();
    assert!(out.to_text().contains("still here"));
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn everything_over_streamable_http() {
    let port = free_port();
    let mut server = tokio::process::Command::new("node")
        .arg(peers().node_file("@modelcontextprotocol/server-everything", "dist/index.js"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let deadline = Instant::now() + Duration::from_secs(20);
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            Instant::now() < deadline,
            "server-everything did not listen on {port}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let client = McpClient::connect(
        "web",
        McpServerConfig::http(&url).with_header("X-Test", "1"),
    )
    .await
    .unwrap();
    let out = call(&client, "mcp__web__echo", json!({"message": "over http"}))
        .await
        .unwrap();
    assert!(out.to_text().contains("over http"), "{out:?}");
    let (ctx, seen) = recording_ctx();
    find(&client, "mcp__web__trigger-long-running-operation")
        .call(json!({"duration": 0.4, "steps": 2}), &ctx)
        .await
        .unwrap();
    assert_eq!(seen.lock().unwrap().clone(), ["1/2", "2/2"]);
    let out = call(&client, "mcp__web__get-sum", json!({"a": []}))
        .await
        .unwrap();
    assert!(out.is_error);
    client.close().await;
    server.kill().await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn filesystem_server_on_a_temp_dir() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("hello.txt"), "hello from disk\n").unwrap();
    let config = McpServerConfig::stdio(
        peers()
            .node_bin("mcp-server-filesystem")
            .display()
            .to_string(),
        [root.display().to_string()],
    );
    let client = McpClient::connect("fs", config).await.unwrap();
    let read = find(&client, "mcp__fs__read_text_file");
    assert!(read.is_read_only());
    let write = find(&client, "mcp__fs__write_file");
    assert!(!write.is_read_only());

    let path = root.join("hello.txt").display().to_string();
    let out = read
        .call(json!({"path": path}), &ToolContext::default())
        .await
        .unwrap();
    assert!(out.to_text().contains("hello from disk"), "{out:?}");

    let new = root.join("new.txt").display().to_string();
    let out = write
        .call(
            json!({"path": new, "content": "written"}),
            &ToolContext::default(),
        )
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(
        std::fs::read_to_string(root.join("new.txt")).unwrap(),
        "written"
    );

    // Outside the allowed directory: the server's error is an error result.
    let out = read
        .call(json!({"path": "/etc/hostname"}), &ToolContext::default())
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn python_time_server() {
    let config = McpServerConfig::stdio(
        peers().venv_bin("mcp-server-time").display().to_string(),
        ["--local-timezone", "UTC"],
    );
    let client = McpClient::connect("time", config).await.unwrap();
    let out = call(
        &client,
        "mcp__time__get_current_time",
        json!({"timezone": "UTC"}),
    )
    .await
    .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(out.to_text().contains("UTC"), "{out:?}");

    let out = call(
        &client,
        "mcp__time__get_current_time",
        json!({"timezone": "Not/AZone"}),
    )
    .await
    .unwrap();
    assert!(out.is_error, "{out:?}");

    // No arguments at all: the Python server's validation failure is an isError result.
    let out = call(&client, "mcp__time__convert_time", json!({}))
        .await
        .unwrap();
    assert!(out.is_error, "{out:?}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_server_is_restarted_on_the_next_call() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let script = format!(
        "echo $$ > '{}'; exec node '{}'",
        pid_file.display(),
        peers()
            .node_file("@modelcontextprotocol/server-everything", "dist/index.js")
            .display()
    );
    let client = McpClient::connect("phoenix", McpServerConfig::stdio("sh", ["-c", &script]))
        .await
        .unwrap();
    // The tools server-everything adds after the handshake are listed again in the
    // background; done after the kill, that would restart the server before the call does.
    settled(|| client.tools().iter().map(|t| t.name().to_owned()).collect()).await;
    let echo = find(&client, "mcp__phoenix__echo");
    assert!(
        !echo
            .call(json!({"message": "1"}), &ToolContext::default())
            .await
            .unwrap()
            .is_error
    );

    let first = std::fs::read_to_string(&pid_file).unwrap();
    std::process::Command::new("kill")
        .args(["-9", first.trim()])
        .status()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let (ctx, seen) = recording_ctx();
    let out = echo.call(json!({"message": "again"}), &ctx).await.unwrap();
    assert!(out.to_text().contains("again"), "{out:?}");
    let second = std::fs::read_to_string(&pid_file).unwrap();
    assert_ne!(first, second, "a new process serves the call");
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().any(|line| line.contains("restarting")),
        "the restart is reported: {seen:?}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_fails_to_start_fails_create_with_its_stderr() {
    let started = Instant::now();
    let config = AgentConfig::new()
        .with_model(ScriptedModel::new([]))
        .mcp(|m| {
            m.with_server(
                "broken",
                McpServerConfig::stdio("sh", ["-c", "echo 'cannot find config.yaml' >&2; exit 3"]),
            )
        });
    let error = Agent::create(config).await.unwrap_err().to_string();
    assert!(error.contains("`broken`"), "{error}");
    assert!(error.contains("cannot find config.yaml"), "{error}");
    assert!(error.contains("sh -c"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));

    let config = AgentConfig::new()
        .with_model(ScriptedModel::new([]))
        .mcp(|m| {
            m.with_server(
                "missing",
                McpServerConfig::stdio("surely-not-a-program-42", ["x"]),
            )
        });
    let error = Agent::create(config).await.unwrap_err().to_string();
    assert!(error.contains("surely-not-a-program-42"), "{error}");
    assert!(error.contains("PATH"), "{error}");

    // A chatty server that never answers: the start-up timeout, not a hang.
    let config = AgentConfig::new()
        .with_model(ScriptedModel::new([]))
        .mcp(|m| {
            m.with_server(
                "mute",
                McpServerConfig::stdio("sh", ["-c", "yes noise >&2"])
                    .with_startup_timeout(Duration::from_secs(1)),
            )
        });
    let started = Instant::now();
    let error = Agent::create(config).await.unwrap_err().to_string();
    assert!(error.contains("noise"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(6));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_uses_an_mcp_tool_and_a_builtin_in_one_turn() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("notes.txt"), "remember the milk\n").unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("mcp__everything__echo", json!({"message": "from mcp"}))
            .with_tool_call("Read", json!({"file_path": root.join("notes.txt")})),
        ScriptedTurn::text("done"),
    ]);
    let config = AgentConfig::new()
        .with_model(model)
        .with_working_dir(&root)
        .with_tools(["Read", "mcp__everything__*"])
        .mcp(|m| m.with_server("everything", everything()))
        .permissions(|p| p.allow("mcp__everything__*"));
    let agent = Agent::create(config).await.unwrap();
    let names = agent.tool_names();
    assert!(names.contains(&"Read".to_owned()));
    assert!(
        names.contains(&"mcp__everything__echo".to_owned()),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n == "Write"),
        "only what `tools` lets through"
    );

    let mut run = agent.run("echo and read");
    let mut completed = Vec::new();
    use futures::StreamExt;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ToolCompleted { name, output, .. } => {
                assert!(!output.is_error, "{name}: {output:?}");
                completed.push((name, output.to_text().into_owned()));
            }
            AgentEvent::ToolFailed { name, output, .. } => panic!("{name}: {output:?}"),
            _ => {}
        }
    }
    // Both are read-only, so they ran together and may finish in either order.
    completed.sort();
    assert_eq!(completed.len(), 2);
    assert_eq!(completed[0].0, "Read");
    assert!(completed[0].1.contains("remember the milk"));
    assert_eq!(completed[1].0, "mcp__everything__echo");
    assert!(completed[1].1.contains("from mcp"));

    // Servers come and go at run time.
    assert_eq!(agent.mcp_servers().await, ["everything"]);
    assert!(
        agent
            .remove_mcp_server("everything", McpScope::Session)
            .await
            .unwrap()
    );
    assert!(!agent.tool_names().iter().any(|n| n.starts_with("mcp__")));
    let added = agent
        .add_or_update_mcp_server("everything", everything(), McpScope::Project)
        .await
        .unwrap();
    assert!(added.contains(&"mcp__everything__echo".to_owned()));
    assert!(
        agent
            .tool_names()
            .contains(&"mcp__everything__echo".to_owned())
    );
    let saved = std::fs::read_to_string(root.join(".mcp.json")).unwrap();
    assert!(saved.contains("\"everything\""), "{saved}");
    // The saved file is what the next agent loads.
    let again = AgentConfig::new().mcp(|m| {
        m.with_servers(tool_sdk::mcp::McpServers::from_file(root.join(".mcp.json")).unwrap())
    });
    assert_eq!(again.mcp.servers.len(), 1);
    agent
        .remove_mcp_server("everything", McpScope::Project)
        .await
        .unwrap();
    assert!(
        !std::fs::read_to_string(root.join(".mcp.json"))
            .unwrap()
            .contains("everything")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unknown_exact_mcp_tool_name_fails_create_with_a_suggestion() {
    let config = AgentConfig::new()
        .with_model(ScriptedModel::new([]))
        .with_tools(["mcp__everything__ech"])
        .mcp(|m| m.with_server("everything", everything()));
    let error = Agent::create(config).await.unwrap_err().to_string();
    assert!(error.contains("mcp__everything__echo"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_config_file_shape_of_claude_desktop_loads() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agent.json");
    std::fs::write(
        &file,
        r#"{"max_turns": 3, "mcpServers": {
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                       "headers": {"Authorization": "Bearer x"}}
        }}"#,
    )
    .unwrap();
    let config = AgentConfig::from_file(&file).unwrap();
    assert_eq!(config.mcp.servers.len(), 2);
    let toml_file = dir.path().join("agent.toml");
    std::fs::write(
        &toml_file,
        "[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n",
    )
    .unwrap();
    assert_eq!(
        AgentConfig::from_file(&toml_file)
            .unwrap()
            .mcp
            .servers
            .len(),
        1
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn permissions_treat_mcp_tools_by_their_hints_and_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("a.txt"), "alpha\n").unwrap();
    let fs = McpServerConfig::stdio(
        peers()
            .node_bin("mcp-server-filesystem")
            .display()
            .to_string(),
        [root.display().to_string()],
    );
    let turns = || {
        ScriptedModel::new([
            ScriptedTurn::tool_call(
                "mcp__fs__read_text_file",
                json!({"path": root.join("a.txt")}),
            ),
            ScriptedTurn::tool_call(
                "mcp__fs__write_file",
                json!({"path": root.join("b.txt"), "content": "beta"}),
            ),
            ScriptedTurn::text("done"),
        ])
    };
    let errors = |config: AgentConfig| async move {
        let agent = Agent::create(config).await.unwrap();
        agent.prompt("go").await.unwrap().errors
    };

    // No rule: the read-only tool runs, the other one needs a permission no one can give.
    let base = AgentConfig::new()
        .with_working_dir(&root)
        .mcp(|m| m.with_server("fs", fs.clone()));
    let refused = errors(base.clone().with_model(turns())).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].starts_with("mcp__fs__write_file"), "{refused:?}");
    assert!(!root.join("b.txt").exists());

    // `mcp__fs__*` allows it; a deny rule beats that.
    let allowed = errors(
        base.clone()
            .with_model(turns())
            .permissions(|p| p.allow("mcp__fs__*")),
    )
    .await;
    assert!(allowed.is_empty(), "{allowed:?}");
    assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "beta");
    let denied = errors(
        base.with_model(turns())
            .permissions(|p| p.allow("mcp__fs__*").deny("mcp__fs__write_file")),
    )
    .await;
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert!(denied[0].contains("forbids"), "{denied:?}");
}

/// Waits until `agent` has the tool `name` and its tool list has settled: server-everything
/// adds its elicitation tools one by one once the handshake is over (a client that declared
/// elicitation gets them), each with a `list_changed` the agent answers by listing again, and
/// a call made while the agent swaps the server's tools may not find its tool.
async fn wait_for_tool(agent: &Agent, name: &str) {
    let names = settled(|| agent.tool_names()).await;
    assert!(names.iter().any(|n| n == name), "no {name}: {names:?}");
}

/// What `names` gives once it has not changed for 700 ms (10 s at most).
async fn settled(names: impl Fn() -> Vec<String>) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut seen = names();
    let mut since = Instant::now();
    while since.elapsed() < Duration::from_millis(700) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = names();
        if now != seen {
            (seen, since) = (now, Instant::now());
        }
    }
    seen
}

/// server-everything's elicitation tools, called by an agent: the server's
/// `elicitation/create` (a form of every kind of field, then a URL) reaches the app as an
/// `ElicitationRequested` event, as a tool's own question does, and the app's answer goes
/// back to the server.
#[tokio::test(flavor = "multi_thread")]
async fn a_servers_elicitation_reaches_the_app_and_its_answer_the_server() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id(
            "call_form",
            "mcp__everything__trigger-elicitation-request",
            json!({}),
        ),
        ScriptedTurn::tool_call_with_id(
            "call_url",
            "mcp__everything__trigger-url-elicitation",
            json!({"url": "https://example.com/authorize", "message": "Authorize the demo."}),
        ),
        // The error path: a -32042 error names a page to open first; the call is made again.
        ScriptedTurn::tool_call_with_id(
            "call_first",
            "mcp__everything__trigger-url-elicitation",
            json!({"url": "https://example.com/pay", "message": "Pay.", "errorPath": true}),
        ),
        ScriptedTurn::text("done"),
    ]);
    let config = AgentConfig::new()
        .with_model(model)
        .with_tools(["mcp__everything__*"])
        .mcp(|m| m.with_server("everything", everything()))
        .permissions(|p| p.allow("mcp__everything__*"));
    let agent = Agent::create(config).await.unwrap();
    wait_for_tool(&agent, "mcp__everything__trigger-url-elicitation").await;
    let mut run = agent.run("ask me");
    let mut asked = Vec::new();
    let mut results = Vec::new();
    use futures::StreamExt;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ElicitationRequested(request) => {
                let answer = match &request.question {
                    tool_sdk::Elicitation::Form { .. } => json!({
                        "name": "Ada Lovelace", "check": true, "number": 7,
                        "email": "ada@example.com", "untitledMultipleSelectEnum": ["Piano"]
                    }),
                    tool_sdk::Elicitation::Url { .. } => Value::Null,
                };
                asked.push((request.id.clone(), request.question.clone()));
                request.accept(answer);
            }
            AgentEvent::ToolCompleted { id, output, .. } => {
                results.push((id, output.to_text().into_owned()))
            }
            AgentEvent::ToolFailed { name, output, .. } => panic!("{name}: {output:?}"),
            _ => {}
        }
    }
    assert_eq!(asked.len(), 4, "{asked:?}");
    // The question is the call's that was running.
    assert_eq!(asked[0].0, "call_form");
    let tool_sdk::Elicitation::Form { message, schema } = &asked[0].1 else {
        panic!("a form: {:?}", asked[0].1);
    };
    assert!(message.contains("Please provide inputs"), "{message}");
    assert_eq!(schema["properties"]["email"]["format"], "email");
    assert_eq!(schema["properties"]["integer"]["default"], 42);
    assert_eq!(
        schema["properties"]["titledSingleSelectEnum"]["oneOf"][0],
        json!({"const": "hero-1", "title": "Superman"})
    );
    assert_eq!(schema["required"], json!(["name"]));
    assert_eq!(asked[1].0, "call_url");
    assert_eq!(
        asked[1].1,
        tool_sdk::Elicitation::Url {
            message: "Authorize the demo.".into(),
            url: "https://example.com/authorize".into(),
            id: match &asked[1].1 {
                tool_sdk::Elicitation::Url { id, .. } => id.clone(),
                _ => unreachable!(),
            },
        }
    );
    let form = &results.iter().find(|(id, _)| id == "call_form").unwrap().1;
    assert!(form.contains("- Name: Ada Lovelace"), "{form}");
    assert!(form.contains("- Email: ada@example.com"), "{form}");
    assert!(form.contains("- Favorite Number: 7"), "{form}");
    // A field the user left out gets the form's default (SEP-1034).
    assert!(form.contains("- Favorite Integer: 42"), "{form}");
    let url = &results.iter().find(|(id, _)| id == "call_url").unwrap().1;
    assert!(
        url.contains("User completed the URL elicitation flow"),
        "{url}"
    );
    assert!(url.contains("https://example.com/authorize"), "{url}");
    // The page the error named, then the call's own.
    let pages: Vec<&str> = asked[2..]
        .iter()
        .map(|(id, question)| {
            assert_eq!(id, "call_first");
            match question {
                tool_sdk::Elicitation::Url { url, .. } => url.as_str(),
                other => panic!("a page: {other:?}"),
            }
        })
        .collect();
    assert_eq!(
        pages,
        ["https://modelcontextprotocol.io", "https://example.com/pay"]
    );
    let paid = &results.iter().find(|(id, _)| id == "call_first").unwrap().1;
    assert!(
        paid.contains("User completed the URL elicitation flow"),
        "{paid}"
    );
}

/// Answers every question with `answer`, noting each.
struct Answering {
    answer: tool_sdk::ElicitationAnswer,
    asked: Mutex<Vec<tool_sdk::Elicitation>>,
}

impl tool_sdk::Elicitor for Answering {
    fn elicit<'a>(
        &'a self,
        question: &'a tool_sdk::Elicitation,
        _ctx: &'a ToolContext,
    ) -> tool_sdk::BoxFuture<'a, Result<tool_sdk::ElicitationAnswer, ToolError>> {
        self.asked.lock().unwrap().push(question.clone());
        let answer = self.answer.clone();
        Box::pin(async move { Ok(answer) })
    }
}

/// The Python SDK's server asks in the 2026-07-28 form: its answer to the call is an
/// `InputRequiredResult`; our client asks the calling tool's elicitor and calls again with
/// the answer. A call whose context cannot ask answers "cancel".
#[tokio::test(flavor = "multi_thread")]
async fn a_python_server_asks_in_the_multi_round_trip_form() {
    let script = tests::mcp_peers::workspace_root().join("tests/mcp-peers/elicit_server.py");
    let config = McpServerConfig::stdio(
        peers().python().display().to_string(),
        [script.display().to_string()],
    );
    let client = McpClient::connect("py", config).await.unwrap();
    assert_eq!(
        client.protocol_version().await.as_deref(),
        Some("2026-07-28")
    );
    let answering = Arc::new(Answering {
        answer: tool_sdk::ElicitationAnswer::Accept {
            content: json!({"guests": 2, "seating": "outside"}),
        },
        asked: Mutex::new(Vec::new()),
    });
    let ctx = ToolContext::default().with_elicitor(answering.clone());
    let out = find(&client, "mcp__py__book")
        .call(json!({"restaurant": "Chez Nous"}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.to_text().contains("booked Chez Nous for 2 outside"),
        "{out:?}"
    );
    let asked = answering.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "{asked:?}");
    let tool_sdk::Elicitation::Form { message, schema } = &asked[0] else {
        panic!("a form: {asked:?}");
    };
    assert_eq!(message, "Book a table at Chez Nous?");
    assert_eq!(schema["properties"]["guests"]["type"], "integer");

    let out = call(&client, "mcp__py__book", json!({"restaurant": "Chez Nous"}))
        .await
        .unwrap();
    assert!(out.to_text().contains("not booked: cancel"), "{out:?}");
    client.close().await;
}

/// A server's question deferred like a tool's own: the run stops with it pending, a new
/// agent (a restarted process) answers it from the store, and the call, made again, gets the
/// stored answer when the server asks again.
#[tokio::test(flavor = "multi_thread")]
async fn a_servers_question_is_deferred_and_answered_after_a_resume() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let config = |model: ScriptedModel| {
        let store = tool_sdk::session::SqliteStore::open(&path).unwrap();
        AgentConfig::new()
            .with_model(model)
            .with_tools(["mcp__everything__*"])
            .mcp(|m| m.with_server("everything", everything()))
            .permissions(|p| p.allow("mcp__everything__*"))
            .session(|s| s.with_store(store).with_deferred_approvals())
    };
    let model = ScriptedModel::new([ScriptedTurn::tool_call_with_id(
        "call_form",
        "mcp__everything__trigger-elicitation-request",
        json!({}),
    )]);
    let agent = Agent::create(config(model)).await.unwrap();
    wait_for_tool(&agent, "mcp__everything__trigger-elicitation-request").await;
    let id = agent.session_id().to_owned();
    let stopped = agent.prompt("ask me").await.unwrap_err();
    let tool_sdk::agent::AgentError::ApprovalsPending(pending) = &stopped else {
        panic!("the run stops for the server's question: {stopped:?}");
    };
    assert_eq!(pending[0].call_id, "call_form");
    let Some(tool_sdk::Elicitation::Form { schema, .. }) = &pending[0].elicitation else {
        panic!("the server's form: {pending:?}");
    };
    assert_eq!(schema["required"], json!(["name"]));
    drop(agent);

    let model = ScriptedModel::new([ScriptedTurn::text("Thanks.")]);
    let agent = Agent::resume(config(model.clone()), &id).await.unwrap();
    wait_for_tool(&agent, "mcp__everything__trigger-elicitation-request").await;
    agent
        .answer_elicitation(
            "call_form",
            tool_sdk::ElicitationAnswer::Accept {
                content: json!({"name": "Grace Hopper"}),
            },
        )
        .await
        .unwrap();
    let done = agent.continue_run().await.unwrap();
    assert_eq!(done.text, "Thanks.");
    let sent = model.requests()[0].messages.to_vec();
    let results: Vec<String> = sent
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            tool_sdk::model::MessageContent::ToolResult { content, .. } => {
                Some(content.iter().filter_map(|c| c.readable()).collect())
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].contains("- Name: Grace Hopper"),
        "{}",
        results[0]
    );
}
