//! The Bash, BashOutput and KillShell built-ins through a registry with JSON input: the
//! working directory persists per agent, exit codes are reported, output is capped, timeouts
//! and cancellation kill the whole process group, background shells can be read and killed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tool_sdk::builtin::{BashOutputTool, BashTool, KillShellTool, ShellState};
use tool_sdk::{CancellationToken, Tool, ToolContext, ToolErrorKind, ToolOutput, ToolRegistry};

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(BashTool)).unwrap();
    registry.register(Arc::new(BashOutputTool)).unwrap();
    registry.register(Arc::new(KillShellTool)).unwrap();
    registry
}

/// A fresh, canonical directory for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("builtin-shell-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir.canonicalize().unwrap()
}

async fn bash(registry: &ToolRegistry, input: Value, ctx: &ToolContext) -> String {
    let output: ToolOutput = registry.execute("Bash", input, ctx).await.unwrap();
    assert!(!output.is_error, "{output:?}");
    output.to_text().into_owned()
}

/// Waits until the process is gone (or a zombie, which no longer runs).
async fn assert_gone(pid: &str) {
    let pid = pid.trim().to_owned();
    assert!(!pid.is_empty(), "no pid recorded");
    let gone = async {
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // The state follows the parenthesised command name.
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().next());
            if stat.is_empty() || state == Some("Z") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), gone)
        .await
        .unwrap_or_else(|_| panic!("process {pid} is still running"));
}

fn is_running(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.split_whitespace().next());
    !stat.is_empty() && state != Some("Z")
}

async fn read_pids(file: &Path, count: usize) -> Vec<String> {
    for _ in 0..250 {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let pids: Vec<String> = text.lines().map(str::to_owned).collect();
        if pids.len() >= count {
            return pids;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{} never held {count} pids", file.display());
}

#[tokio::test]
async fn the_working_directory_persists_between_calls_of_one_agent() {
    let dir = scratch("cwd");
    let registry = registry();
    let ctx = ToolContext::new(&dir);

    let first = bash(&registry, json!({"command": "pwd"}), &ctx).await;
    assert_eq!(first.lines().next(), Some(dir.to_str().unwrap()), "{first}");

    bash(
        &registry,
        json!({"command": "mkdir -p 'a b/c' && cd 'a b/c'"}),
        &ctx,
    )
    .await;
    let inside = dir.join("a b/c");
    // A clone of the context is the same agent: same session values.
    let second = bash(&registry, json!({"command": "pwd"}), &ctx.clone()).await;
    assert_eq!(
        second.lines().next(),
        Some(inside.to_str().unwrap()),
        "{second}"
    );
    assert_eq!(ctx.session::<ShellState>().cwd(), Some(inside.clone()));

    // `exit` does not lose the change: the trap still runs.
    let exited = bash(&registry, json!({"command": "cd .. && exit 3"}), &ctx).await;
    assert!(exited.ends_with("Exit code: 3"), "{exited}");
    let third = bash(&registry, json!({"command": "pwd"}), &ctx).await;
    assert_eq!(
        third.lines().next(),
        Some(dir.join("a b").to_str().unwrap())
    );

    // A syntax error changes nothing and is reported through the exit code.
    let broken = bash(&registry, json!({"command": "cd / && echo ("}), &ctx).await;
    assert!(broken.contains("syntax error"), "{broken}");
    assert!(broken.ends_with("Exit code: 2"), "{broken}");
    let fourth = bash(&registry, json!({"command": "pwd"}), &ctx).await;
    assert_eq!(
        fourth.lines().next(),
        Some(dir.join("a b").to_str().unwrap())
    );

    // Another agent (another set of session values) starts in its own working directory.
    let other = ToolContext::new(&dir);
    let fresh = bash(&registry, json!({"command": "pwd"}), &other).await;
    assert_eq!(fresh.lines().next(), Some(dir.to_str().unwrap()), "{fresh}");

    // A directory that disappeared falls back to the working directory, with a note.
    std::fs::remove_dir_all(dir.join("a b")).unwrap();
    let fallback = bash(&registry, json!({"command": "pwd"}), &ctx).await;
    assert_eq!(
        fallback.lines().next(),
        Some(dir.to_str().unwrap()),
        "{fallback}"
    );
    assert!(fallback.contains("no longer exists"), "{fallback}");
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn exit_codes_are_reported_and_output_is_merged_in_order() {
    let registry = registry();
    let ctx = ToolContext::default();
    let out = bash(
        &registry,
        json!({"command": "echo one; echo two >&2; echo three; exit 7"}),
        &ctx,
    )
    .await;
    assert_eq!(out, "one\ntwo\nthree\nExit code: 7");

    let ok = bash(&registry, json!({"command": "true"}), &ctx).await;
    assert_eq!(ok, "(no output)\nExit code: 0");

    let killed = bash(&registry, json!({"command": "kill -TERM $$"}), &ctx).await;
    assert!(killed.ends_with("Killed by signal 15"), "{killed}");

    let empty = registry
        .execute("Bash", json!({"command": "  "}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(empty.kind(), ToolErrorKind::InvalidInput);
    let too_long = registry
        .execute("Bash", json!({"command": "true", "timeout": 600_001}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(too_long.kind(), ToolErrorKind::InvalidInput);
}

#[tokio::test]
async fn long_output_keeps_its_head_and_tail() {
    let registry = registry();
    let ctx = ToolContext::default();
    let out = bash(
        &registry,
        json!({"command": "printf HEAD; head -c 50000 /dev/zero | tr '\\0' x; printf TAIL"}),
        &ctx,
    )
    .await;
    assert!(out.starts_with("HEADxxx"), "{}", &out[..20]);
    assert!(
        out.contains("xxxTAIL\nExit code: 0"),
        "{}",
        &out[out.len() - 40..]
    );
    assert!(out.contains("output truncated: about 20008 characters omitted"));
    assert!(out.chars().count() < 30_200, "{}", out.len());

    // Far more than is kept while streaming: the middle is dropped as it arrives.
    let big = bash(
        &registry,
        json!({"command": "printf START; head -c 5000000 /dev/zero | tr '\\0' y; printf END"}),
        &ctx,
    )
    .await;
    assert!(big.starts_with("STARTyyy"));
    assert!(big.contains("yyyEND\nExit code: 0"));
    assert!(
        big.contains("output truncated: about 4970008 characters omitted"),
        "{big:.100}"
    );
    assert!(big.chars().count() < 30_200, "{}", big.len());
}

#[tokio::test]
async fn a_timeout_kills_the_whole_process_group() {
    let dir = scratch("timeout");
    let pids = dir.join("pids");
    let registry = registry();
    let ctx = ToolContext::new(&dir);
    let command = "sleep 60 & echo $! > pids; bash -c 'echo $$ >> pids; exec sleep 60'";
    let started = Instant::now();
    let error = registry
        .execute("Bash", json!({"command": command, "timeout": 700}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Timeout, "{error}");
    assert!(error.to_string().contains("700ms"), "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    let pids = read_pids(&pids, 2).await;
    for pid in &pids {
        assert_gone(pid).await;
    }
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn cancellation_kills_the_whole_process_group() {
    let dir = scratch("cancel");
    let registry = registry();
    let token = CancellationToken::new();
    let ctx = ToolContext::new(&dir).with_cancellation(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        token.cancel();
    });
    let command = "sleep 60 & echo $! > pids; echo $$ >> pids; sleep 60";
    let started = Instant::now();
    let error = registry
        .execute("Bash", json!({"command": command}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Cancelled, "{error}");
    assert!(started.elapsed() < Duration::from_secs(10));
    canceller.await.unwrap();
    for pid in read_pids(&dir.join("pids"), 2).await {
        assert_gone(&pid).await;
    }
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn dropping_the_call_kills_the_whole_process_group() {
    let dir = scratch("drop");
    let registry = registry();
    let ctx = ToolContext::new(&dir);
    let command = "sleep 60 & echo $! > pids; echo $$ >> pids; sleep 60";
    let call = registry.execute("Bash", json!({"command": command}), &ctx);
    // What an agent's own timeout does: drop the future.
    assert!(
        tokio::time::timeout(Duration::from_millis(500), call)
            .await
            .is_err()
    );
    for pid in read_pids(&dir.join("pids"), 2).await {
        assert_gone(&pid).await;
    }
    std::fs::remove_dir_all(dir).ok();
}

async fn output_until_done(registry: &ToolRegistry, id: &str, ctx: &ToolContext) -> String {
    let mut all = String::new();
    for _ in 0..250 {
        let out = registry
            .execute("BashOutput", json!({"bash_id": id}), ctx)
            .await
            .unwrap()
            .to_text()
            .into_owned();
        all.push_str(&out);
        all.push('\n');
        if !out.contains(": running") {
            return all;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{id} never finished: {all}");
}

#[tokio::test]
async fn background_commands_report_output_and_status() {
    let dir = scratch("background");
    let registry = registry();
    let ctx = ToolContext::new(&dir);
    let started = Instant::now();
    let out = bash(
        &registry,
        json!({"command": "echo begun; sleep 0.5; echo over >&2; exit 4", "run_in_background": true}),
        &ctx,
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_millis(400),
        "returned at once"
    );
    assert!(out.contains("shell id bash_1"), "{out}");

    let all = output_until_done(&registry, "bash_1", &ctx).await;
    assert!(
        all.contains("Shell bash_1: running"),
        "seen running first: {all}"
    );
    assert!(
        all.contains("\nbegun\n") && all.contains("\nover\n"),
        "{all}"
    );
    assert!(all.contains("exited (Exit code: 4)"), "{all}");
    // Output already read is not returned again.
    let again = registry
        .execute("BashOutput", json!({"bash_id": "bash_1"}), &ctx)
        .await
        .unwrap()
        .to_text()
        .into_owned();
    assert!(again.ends_with("(no new output)"), "{again}");
    assert!(!again.contains("begun"), "{again}");
    assert!(again.starts_with("Shell bash_1: exited"), "{again}");

    // A filter keeps only matching lines.
    let second = bash(
        &registry,
        json!({"command": "printf 'apple\\nbanana\\navocado\\n'", "run_in_background": true}),
        &ctx,
    )
    .await;
    assert!(second.contains("bash_2"), "{second}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    let filtered = registry
        .execute(
            "BashOutput",
            json!({"bash_id": "bash_2", "filter": "^a"}),
            &ctx,
        )
        .await
        .unwrap()
        .to_text()
        .into_owned();
    assert!(filtered.contains("apple\navocado"), "{filtered}");
    assert!(!filtered.contains("banana"), "{filtered}");

    let bad_filter = registry
        .execute(
            "BashOutput",
            json!({"bash_id": "bash_2", "filter": "("}),
            &ctx,
        )
        .await
        .unwrap_err();
    assert_eq!(bad_filter.kind(), ToolErrorKind::InvalidInput);
    let unknown = registry
        .execute("BashOutput", json!({"bash_id": "bash_9"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ToolErrorKind::NotFound);
    // Another agent does not see this agent's shells.
    let stranger = registry
        .execute(
            "BashOutput",
            json!({"bash_id": "bash_1"}),
            &ToolContext::new(&dir),
        )
        .await
        .unwrap_err();
    assert_eq!(stranger.kind(), ToolErrorKind::NotFound);
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn kill_shell_stops_a_background_command_and_its_children() {
    let dir = scratch("kill");
    let registry = registry();
    let ctx = ToolContext::new(&dir);
    bash(
        &registry,
        json!({"command": "sleep 60 & echo $! > pids; echo $$ >> pids; sleep 60", "run_in_background": true}),
        &ctx,
    )
    .await;
    let pids = read_pids(&dir.join("pids"), 2).await;
    assert!(pids.iter().all(|pid| is_running(pid)), "both run first");

    let killed = registry
        .execute("KillShell", json!({"shell_id": "bash_1"}), &ctx)
        .await
        .unwrap()
        .to_text()
        .into_owned();
    assert!(killed.starts_with("Killed shell bash_1"), "{killed}");
    for pid in &pids {
        assert_gone(pid).await;
    }
    let status = registry
        .execute("BashOutput", json!({"bash_id": "bash_1"}), &ctx)
        .await
        .unwrap()
        .to_text()
        .into_owned();
    assert!(status.starts_with("Shell bash_1: killed"), "{status}");
    let again = registry
        .execute("KillShell", json!({"shell_id": "bash_1"}), &ctx)
        .await
        .unwrap()
        .to_text()
        .into_owned();
    assert!(again.contains("was not running"), "{again}");
    let unknown = registry
        .execute("KillShell", json!({"shell_id": "nope"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(unknown.kind(), ToolErrorKind::NotFound);
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test]
async fn ending_the_session_kills_background_commands() {
    let dir = scratch("session-end");
    let registry = registry();
    let ctx = ToolContext::new(&dir);
    bash(
        &registry,
        json!({"command": "echo $$ > pids; sleep 60", "run_in_background": true}),
        &ctx,
    )
    .await;
    let pids = read_pids(&dir.join("pids"), 1).await;
    assert!(is_running(&pids[0]));
    drop(ctx);
    assert_gone(&pids[0]).await;
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn bash_is_a_registered_builtin_titled_by_its_description() {
    let names: Vec<String> = tool_sdk::builtin_tools()
        .unwrap()
        .iter()
        .map(|tool| tool.name().to_owned())
        .collect();
    for name in ["Bash", "BashOutput", "KillShell"] {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
    assert!(!BashTool.is_read_only());
    assert!(BashOutputTool.is_read_only());
    assert_eq!(
        BashTool.display_title(&json!({"command": "ls -la", "description": "List files"})),
        "List files"
    );
    assert_eq!(
        BashTool.display_title(&json!({"command": "ls -la"})),
        "ls -la"
    );
    let schema = BashTool.input_schema();
    assert_eq!(schema["required"], json!(["command"]));
    for key in ["command", "timeout", "description", "run_in_background"] {
        assert!(schema["properties"].get(key).is_some(), "{key}: {schema}");
    }
}
