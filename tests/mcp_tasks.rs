//! MCP tasks (the `io.modelcontextprotocol/tasks` extension of protocol 2026-07-28): our client
//! against our server (`mcp-test-server`, whose `count_long` and `book_long` declare a timeout
//! longer than its default and so run as tasks), on stdio and Streamable HTTP, at 2026-07-28
//! and over a 2025-11-25 session; our client against `mcp-task-server`, a server on rmcp alone
//! whose tool runs only as a task; and our server against the official extension package's
//! task requester (`tests/mcp-peers/tasks-client.mjs`).

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tests::mcp_peers::peers;
use tool_sdk::mcp::{McpClient, McpServerConfig};
use tool_sdk::{
    BoxFuture, Elicitation, ElicitationAnswer, Elicitor, Tool, ToolContext, ToolError,
    ToolUpdateKind,
};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-test-server");
const TASK_SERVER: &str = env!("CARGO_BIN_EXE_mcp-task-server");

/// A server process, killed when dropped.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the test server on Streamable HTTP, on a free port; returns it and its URL.
fn http_server(root: &Path) -> (Child, String) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(SERVER)
        .arg(root)
        .args(["--http", "127.0.0.1:0"])
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

fn tool(client: &McpClient, name: &str) -> Arc<dyn Tool> {
    let name = format!("mcp__{}__{name}", client.name());
    client
        .tools()
        .into_iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

/// A context whose progress lines are kept.
fn recording() -> (ToolContext, Arc<Mutex<Vec<String>>>) {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let sink = lines.clone();
    let ctx = ToolContext::default().with_updates(move |update| {
        if let ToolUpdateKind::Progress(line) = update.kind {
            sink.lock().unwrap().push(line);
        }
    });
    (ctx, lines)
}

/// Waits (five seconds at most) for the server-side tool to write its `cancelled` marker.
async fn marker(dir: &Path) -> Option<String> {
    let marker = dir.join("cancelled");
    for _ in 0..100 {
        if let Ok(text) = std::fs::read_to_string(&marker) {
            return Some(text);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// A long call runs as a task (its first status, "count_long is running", is the server's
/// task seed, which a plain call never sends), and its status messages are its progress; a
/// short tool's call is still a plain call with progress notifications. Cancelling the call
/// and dropping it (a timeout) both send `tasks/cancel`, which reaches the tool.
async fn check_tasks(client: &McpClient, dir: &Path) {
    let (ctx, lines) = recording();
    let out = tool(client, "count_long")
        .call(json!({"to": 30}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.to_text(), "counted to 30");
    let lines = lines.lock().unwrap().clone();
    assert_eq!(
        lines.first().map(String::as_str),
        Some("count_long is running")
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("step ") && l.ends_with(" of 30")),
        "{lines:?}"
    );

    let (ctx, lines) = recording();
    let out = tool(client, "count_slowly")
        .call(json!({"to": 3}), &ctx)
        .await
        .unwrap();
    assert_eq!(out.to_text(), "counted to 3");
    let lines = lines.lock().unwrap().clone();
    assert!(lines.contains(&"step 3 of 3 (3)".to_owned()), "{lines:?}");

    // Cancelled: the agent's token.
    let ctx = ToolContext::default();
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        token.cancel();
    });
    let started = std::time::Instant::now();
    let error = tool(client, "count_long")
        .call(json!({"to": 200}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    let at = marker(dir)
        .await
        .expect("tasks/cancel did not reach the tool");
    assert!(at.starts_with("at step "), "{at}");
    std::fs::remove_file(dir.join("cancelled")).unwrap();

    // Timed out: the call's future dropped, as the agent's timeout does.
    let count = tool(client, "count_long");
    let ctx = ToolContext::default();
    let call = count.call(json!({"to": 200}), &ctx);
    assert!(
        tokio::time::timeout(Duration::from_millis(700), call)
            .await
            .is_err()
    );
    assert!(
        marker(dir).await.is_some(),
        "a dropped call left its task running"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn long_calls_run_as_tasks_over_stdio() {
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig::stdio(SERVER, [dir.path().display().to_string()]);
    let client = McpClient::connect("ours", config).await.unwrap();
    assert_eq!(client.protocol_version().await.unwrap(), "2026-07-28");
    check_tasks(&client, dir.path()).await;
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn long_calls_run_as_tasks_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(dir.path());
    let client = McpClient::connect("ours", McpServerConfig::http(url))
        .await
        .unwrap();
    assert_eq!(client.protocol_version().await.unwrap(), "2026-07-28");
    check_tasks(&client, dir.path()).await;
    client.close().await;
}

/// A 2025-11-25 session (`initialize`): the client declares the extension there, and tasks
/// work the same.
#[tokio::test(flavor = "multi_thread")]
async fn long_calls_run_as_tasks_in_a_2025_11_25_session() {
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig::stdio(SERVER, [dir.path().display().to_string()])
        .with_protocol_version("2025-11-25");
    let client = McpClient::connect("ours", config).await.unwrap();
    assert_eq!(client.protocol_version().await.unwrap(), "2025-11-25");
    check_tasks(&client, dir.path()).await;
    client.close().await;
}

/// Accepts every question with a booking for two, inside; keeps the questions.
struct Booker(Arc<Mutex<Vec<String>>>);

impl Elicitor for Booker {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        self.0.lock().unwrap().push(question.message().to_owned());
        let content = json!({"guests": 2, "seating": "inside"});
        Box::pin(async move { Ok(ElicitationAnswer::Accept { content }) })
    }
}

/// A task's question is its input request: the client asks the user once (however often it
/// polls) and answers with `tasks/update`; the task goes on with the answer.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_asks_its_question_through_tasks_update() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(dir.path());
    let client = McpClient::connect("ours", McpServerConfig::http(url))
        .await
        .unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let (ctx, lines) = recording();
    let ctx = ctx.with_elicitor(Arc::new(Booker(asked.clone())));
    let out = tool(&client, "book_long")
        .call(json!({"restaurant": "Chez Nous"}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.to_text(), "booked Chez Nous for 2 inside");
    assert_eq!(*asked.lock().unwrap(), ["Book a table at Chez Nous?"]);
    let lines = lines.lock().unwrap().clone();
    assert_eq!(
        lines.first().map(String::as_str),
        Some("book_long is running")
    );
    client.close().await;
}

/// A server whose tool runs only as a task: it refuses clients that do not declare the
/// extension (-32021), so calling it works only because the client follows tasks. Its status
/// messages come as progress; cancelling sends `tasks/cancel`, which stops the report.
#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_runs_only_as_a_task() {
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig::stdio(TASK_SERVER, [dir.path().display().to_string()]);
    let client = McpClient::connect("reports", config).await.unwrap();
    let report = tool(&client, "report");

    let (ctx, lines) = recording();
    let out = report.call(json!({"topic": "otters"}), &ctx).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.to_text(), "a report on otters");
    let lines = lines.lock().unwrap().clone();
    assert!(
        lines.contains(&"gathering sources on otters".to_owned()),
        "{lines:?}"
    );
    assert!(lines.contains(&"writing up otters".to_owned()), "{lines:?}");

    let ctx = ToolContext::default();
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(150)).await;
        token.cancel();
    });
    let error = report
        .call(json!({"topic": "owls"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    let stage = marker(dir.path())
        .await
        .expect("tasks/cancel did not stop the report");
    assert_eq!(stage, "gathering sources on");
    client.close().await;
}

/// Bash, served with the default policy (two minutes for a tool that sets no timeout), runs as a
/// task: its eleven minutes say it may outlast an ordinary call. Cancelling the call kills
/// the command.
#[tokio::test(flavor = "multi_thread")]
async fn bash_served_over_mcp_runs_as_a_task() {
    use tool_sdk::ToolRegistry;
    use tool_sdk::builtin::BashTool;
    use tool_sdk::mcp::McpToolServer;

    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(BashTool)).unwrap();
    let server = McpToolServer::new(registry)
        .with_root(dir.path())
        .unwrap()
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = McpClient::connect("box", McpServerConfig::http(server.url()))
        .await
        .unwrap();
    let bash = tool(&client, "Bash");

    let (ctx, lines) = recording();
    let out = bash
        .call(json!({"command": "sleep 0.3; echo done"}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(out.to_text().contains("done"), "{out:?}");
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.first().map(String::as_str), Some("Bash is running"));

    let ctx = ToolContext::default();
    let token = ctx.cancellation().clone();
    let pid_file = dir.path().join("pid");
    let watched = pid_file.clone();
    tokio::spawn(async move {
        while !watched.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        token.cancel();
    });
    let error = bash
        .call(json!({"command": "echo $$ > pid; sleep 30"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Cancelled);
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let alive = || {
        std::process::Command::new("kill")
            .args(["-0", pid.trim()])
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    for _ in 0..100 {
        if !alive() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!alive(), "tasks/cancel did not stop the command");
    client.close().await;
}

/// A server of a 2025-11-25 session may ask from its task with `elicitation/create`, not in
/// the task's input requests: the question reaches the context of the call that follows the
/// task.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_of_a_2025_11_25_session_asks_with_elicitation_create() {
    let dir = tempfile::tempdir().unwrap();
    let config = McpServerConfig::stdio(TASK_SERVER, [dir.path().display().to_string()])
        .with_protocol_version("2025-11-25");
    let client = McpClient::connect("reports", config).await.unwrap();
    let asked = Arc::new(Mutex::new(Vec::new()));
    let ctx = ToolContext::default().with_elicitor(Arc::new(Booker(asked.clone())));
    let out = tool(&client, "confirm")
        .call(json!({}), &ctx)
        .await
        .unwrap();
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.to_text(), "confirmed: Accept");
    assert_eq!(*asked.lock().unwrap(), ["Go on?"]);
    client.close().await;
}

/// Runs the official extension package's task requester against `url`.
fn requester(url: &str, tool: &str, arguments: Value, cancel_after_ms: Option<u64>) -> Value {
    let mut command = std::process::Command::new("node");
    command
        .arg(peers().node_script("tasks-client.mjs"))
        .args([url, tool, &arguments.to_string()]);
    if let Some(ms) = cancel_after_ms {
        command.args(["--cancel-after", &ms.to_string()]);
    }
    let output = command
        .output()
        .expect("node (Node.js 20 or newer) runs the requester");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the requester failed: {stderr}");
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("the requester printed no JSON ({e}): {stderr}"))
}

/// The official TypeScript requester (`@modelcontextprotocol/ext-tasks` on the SDK's
/// 2026-07-28 client) follows our server's task to its result, and its `tasks/cancel` reaches
/// the tool.
#[tokio::test(flavor = "multi_thread")]
async fn the_official_task_requester_follows_and_cancels_our_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(dir.path());
    let (url, cancel_url) = (url.clone(), url);

    let done =
        tokio::task::spawn_blocking(move || requester(&url, "count_long", json!({"to": 20}), None));
    let done = done.await.unwrap();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["content"][0]["text"], "counted to 20",
        "{done}"
    );
    assert_eq!(done["result"]["isError"], false, "{done}");

    let cancelled = tokio::task::spawn_blocking(move || {
        requester(&cancel_url, "count_long", json!({"to": 200}), Some(600))
    });
    let cancelled = cancelled.await.unwrap();
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let at = marker(dir.path())
        .await
        .expect("tasks/cancel did not reach the tool");
    assert!(at.starts_with("at step "), "{at}");
}

/// The app's sub-agents for a served Task: each reports what it was given after 1.5 s (three
/// of the server's poll intervals, so its progress is seen), and notes in `dir` when it was
/// cancelled.
struct Subagents {
    dir: std::path::PathBuf,
}

impl tool_sdk::SubagentRunner for Subagents {
    fn run<'a>(
        &'a self,
        request: tool_sdk::SubagentRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<tool_sdk::SubagentReport, ToolError>> {
        Box::pin(async move {
            ctx.progress(format!("sub-agent: {}", request.description));
            let wait = if request.prompt.contains("forever") {
                30_000
            } else {
                1_500
            };
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait)) => {}
                () = ctx.cancellation().cancelled() => {
                    // Whole or not at all: the test reads it as soon as it is there.
                    let note = self.dir.join("cancelled.part");
                    std::fs::write(&note, &request.prompt).unwrap();
                    std::fs::rename(note, self.dir.join("cancelled")).unwrap();
                    return Err(ToolError::Cancelled);
                }
            }
            Ok(tool_sdk::SubagentReport {
                summary: format!("looked into: {}", request.prompt),
                tool_calls: 2,
                ..Default::default()
            })
        })
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn task_served_over_mcp_runs_its_sub_agent_as_a_task() {
    use tool_sdk::ToolRegistry;
    use tool_sdk::builtin::TaskTool;
    use tool_sdk::mcp::McpToolServer;

    let dir = tempfile::tempdir().unwrap();
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(TaskTool)).unwrap();
    let runner = Arc::new(Subagents {
        dir: dir.path().to_owned(),
    });
    let server = McpToolServer::new(registry)
        .with_subagents(runner)
        .serve_http("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let client = McpClient::connect("agents", McpServerConfig::http(server.url()))
        .await
        .unwrap();
    let task = tool(&client, "Task");

    let (ctx, lines) = recording();
    let input = json!({"description": "find the parser", "prompt": "where is the parser?"});
    let out = task.call(input, &ctx).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    assert!(
        out.to_text().contains("looked into: where is the parser?"),
        "{out:?}"
    );
    let lines = lines.lock().unwrap().clone();
    assert_eq!(lines.first().map(String::as_str), Some("Task is running"));
    assert!(
        lines.contains(&"sub-agent: find the parser".to_owned()),
        "the sub-agent's progress is the task's status: {lines:?}"
    );

    // Cancelling the call reaches the sub-agent through tasks/cancel.
    let ctx = ToolContext::default();
    let token = ctx.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        token.cancel();
    });
    let input = json!({"description": "wait", "prompt": "wait forever"});
    assert_eq!(
        task.call(input, &ctx).await.unwrap_err(),
        ToolError::Cancelled
    );
    assert_eq!(marker(dir.path()).await.as_deref(), Some("wait forever"));
    client.close().await;
}
