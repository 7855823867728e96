//! The coder example on Temporal, as a user runs it: a worker in a process of its own
//! (`coder --worker`), prompts from others (`--no-worker`), and the demo's edit approved at
//! the prompt after the worker that asked was killed: the question waited in the server.
//!
//! `cargo test --workspace` builds the coder with its `temporal` feature (this package's
//! dev-dependency on the examples turns it on); run alone, this test needs
//! `cargo build -p examples --example coder --features temporal` first.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tool_sdk::session::{SessionStore, SqliteStore, pending_approvals};

use server::{DevServer, Killed, wait_for_line};

/// Spelt in pieces so that the demo, run on this repository, does not find it.
const TODO_LINE: &str = concat!("    // TO", "DO: greet the user");

fn coder_binary() -> PathBuf {
    // The test runs from target/<profile>/deps; examples are built into target/<profile>/examples.
    let exe = std::env::current_exe().expect("the test binary's path");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let coder = profile_dir.join("examples").join("coder");
    assert!(
        coder.is_file(),
        "{} is missing: build it with `cargo build -p examples --example coder --features \
         temporal` (cargo test --workspace does)",
        coder.display()
    );
    coder
}

/// The coder of the demo on `dir`, on the server at `address`, saving to `data`.
fn coder(address: &str, dir: &Path, data: &Path, extra: &[&str]) -> Command {
    let mut command = Command::new(coder_binary());
    command
        .args([
            "--temporal",
            address,
            "--task-queue",
            "coder-test",
            "--provider",
            "demo",
        ])
        .arg("--cwd")
        .arg(dir)
        .args(extra)
        .env("XDG_DATA_HOME", data)
        .stdin(Stdio::null());
    for key in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GEMINI_API_KEY",
    ] {
        command.env_remove(key);
    }
    command
}

/// `coder --worker`, once it says it is ready.
fn start_worker(address: &str, dir: &Path, data: &Path) -> Killed {
    let mut child = coder(address, dir, data, &["--worker"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("the coder starts");
    let stdout = child.stdout.take().expect("its stdout is piped");
    let worker = Killed(child);
    // No line in time: was the coder built with `--features temporal`?
    wait_for_line(stdout, "worker ready", "the coder's worker");
    worker
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_coder_runs_on_temporal_with_its_worker_in_another_process() {
    let server = DevServer::start().await;
    let project = tempfile::tempdir().unwrap();
    let dir = project.path();
    std::fs::create_dir(dir.join("src")).unwrap();
    let main_rs = dir.join("src/main.rs");
    std::fs::write(&main_rs, format!("fn main() {{\n{TODO_LINE}\n}}\n")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let mut worker = start_worker(&server.address, dir, data.path());

    // One prompt, answered by the worker in the other process.
    let printed = coder(&server.address, dir, data.path(), &["--no-worker"])
        .args(["--print", "run echo from-temporal"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&printed.stdout);
    let stderr = String::from_utf8_lossy(&printed.stderr);
    assert!(printed.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("from-temporal"), "{stdout}\n{stderr}");

    // The demo: its edit asks; the worker that asked is killed while the question waits.
    let mut talk = coder(&server.address, dir, data.path(), &["--no-worker"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let store = SqliteStore::open(data.path().join("tool-sdk-coder/sessions.db")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let waiting = 'found: loop {
        for session in store.list().await.unwrap() {
            let pending = pending_approvals(&store, &session.id).await.unwrap();
            if let Some(call) = pending.first() {
                break 'found call.tool.clone();
            }
        }
        assert!(Instant::now() < deadline, "the demo's edit never asked");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(waiting, "Edit");
    // The question is asked before its activity reports back: give it a moment to.
    tokio::time::sleep(Duration::from_millis(500)).await;
    worker.kill();
    let _worker = start_worker(&server.address, dir, data.path());
    let mut stdin = talk.stdin.take().unwrap();
    stdin.write_all(b"y\n").unwrap();
    drop(stdin); // Ctrl-D once the run is over: the coder ends.
    let ended = talk.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&ended.stdout);
    let stderr = String::from_utf8_lossy(&ended.stderr);
    assert!(ended.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("the TODO is marked as reviewed"),
        "{stdout}\n{stderr}"
    );
    let edited = std::fs::read_to_string(&main_rs).unwrap();
    assert_eq!(
        edited.matches("(reviewed)").count(),
        1,
        "edited once: {edited}"
    );
}
