//! Agents run as Temporal workflows, against a real dev server the tests start, by worker
//! processes the tests start and kill, with a model served over HTTP to all of them.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "support/tools.rs"]
mod tools;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use temporalio_common::protos::proto_ts_to_system_time;
use temporalio_common::protos::temporal::api::history::v1::history_event::Attributes;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::{Message, MessageContent, Role};
use tool_sdk::permission::PermissionAnswer;
use tool_sdk::session::{SqliteStore, stored_conversation};
use tool_sdk_temporal::{
    AgentClient, RunEvent, RunHandle, RunOptions, RunStatus, WORKER_STOPPED_MESSAGE,
};

use server::{
    DevServer, RUN_LIMIT, Turn, call, finished, keep_history, lines, model_server, replay,
    result_of, start_worker, start_worker_with, wait_for_approvals, wait_for_file,
};

/// Ten steps: reads alone, reads together, writes, a read beside... then the answer.
fn ten_steps(dir: &Path) -> Vec<Turn> {
    let mut turns = Vec::new();
    for step in 0..10 {
        let id = |n: u32| format!("toolu_{step}_{n}");
        let calls = match step % 3 {
            0 => vec![call(&id(0), "look", dir, &format!("r{step}"), 0)],
            1 => vec![
                call(&id(0), "look", dir, &format!("r{step}a"), 0),
                call(&id(1), "look", dir, &format!("r{step}b"), 0),
                call(&id(2), "write_note", dir, &format!("w{step}"), 0),
            ],
            _ => vec![call(&id(0), "write_note", dir, &format!("w{step}"), 0)],
        };
        turns.push(Turn::Calls(calls));
    }
    turns.push(Turn::Text("all ten steps done".to_owned()));
    turns
}

/// Waits for a slow call to write its `marker` (the pid of the worker running it), then kills
/// that worker of the `pool`; returns when.
async fn kill_the_one_running(pool: &mut Vec<server::Killed>, marker: &Path) -> Instant {
    wait_for_file(marker, Duration::from_secs(30)).await;
    let pid: u32 = std::fs::read_to_string(marker).unwrap().parse().unwrap();
    let index = pool
        .iter()
        .position(|worker| worker.pid() == pid)
        .expect("a pool worker runs it");
    let killed_at = Instant::now();
    pool.remove(index).kill();
    killed_at
}

/// Every tool_use of an assistant turn is answered in the user message right after it.
fn assert_every_call_answered(messages: &[Message]) {
    for (index, message) in messages.iter().enumerate() {
        let calls: Vec<&str> = message.tool_uses().map(|call| call.id.as_str()).collect();
        if message.role != Role::Assistant || calls.is_empty() {
            continue;
        }
        let next = messages
            .get(index + 1)
            .expect("a turn with calls is followed by results");
        let answered: Vec<&str> = next
            .content
            .iter()
            .filter_map(|block| match block {
                MessageContent::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            answered, calls,
            "the calls of message {index} and their results"
        );
    }
}

/// Prints the run's history from `since` on, each event with its time after `since`: where
/// the time from a worker's death to its run going on elsewhere goes.
async fn print_timeline(run: &RunHandle, since: std::time::SystemTime) {
    let events = run
        .history()
        .into_events()
        .await
        .expect("the history is read");
    for event in events {
        let Some(at) = event.event_time.as_ref().and_then(proto_ts_to_system_time) else {
            continue;
        };
        // From a little before `since`: the start of the activity that was cut.
        let after = match at.duration_since(since) {
            Ok(after) => after.as_millis() as i64,
            Err(before) if before.duration() < Duration::from_secs(3) => {
                -(before.duration().as_millis() as i64)
            }
            Err(_) => continue,
        };
        let detail = match &event.attributes {
            Some(Attributes::ActivityTaskScheduledEventAttributes(a)) => {
                a.activity_type.as_ref().map(|t| t.name.clone())
            }
            Some(Attributes::WorkflowTaskScheduledEventAttributes(a)) => a
                .task_queue
                .as_ref()
                .map(|queue| format!("queue kind {}", queue.kind)),
            Some(Attributes::ActivityTaskStartedEventAttributes(a)) => Some(a.identity.clone()),
            Some(Attributes::WorkflowTaskStartedEventAttributes(a)) => Some(a.identity.clone()),
            _ => None,
        };
        eprintln!(
            "  {after:>+6} ms  {} {}",
            event.event_type().as_str_name(),
            detail.unwrap_or_default()
        );
    }
}

/// Installs the pinned Temporal CLI: `.ci/run` runs it first, so that a broken registry fails
/// loudly on its own (the other tests install it on first use as well).
#[test]
#[ignore = "run by .ci/run before the tests"]
fn install_cli() {
    let cli = server::temporal_cli();
    let version = std::process::Command::new(cli)
        .arg("--version")
        .output()
        .expect("the CLI runs");
    let version = String::from_utf8_lossy(&version.stdout);
    assert!(version.starts_with("temporal version"), "{version}");
    println!("{}", version.trim());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ten_step_run_on_temporal_has_the_conversation_of_the_in_process_agent() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let model = model_server(ten_steps(dir.path())).await;
    let model_url = model.uri();
    let store_path = dir.path().join("temporal-sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(&server, "ten-steps", &store_path, &model_url);

    let client = AgentClient::connect(&server.address, "ten-steps", store.clone())
        .await
        .unwrap();
    let started = Instant::now();
    let run = client
        .start("Do the ten steps", RunOptions::default())
        .await
        .unwrap();
    // The run's events, tailed from the store while it runs.
    let (events, outcome) = tokio::time::timeout(RUN_LIMIT, async {
        let events = run.events(Duration::from_millis(50)).collect::<Vec<_>>();
        tokio::join!(events, run.result())
    })
    .await
    .expect("the run ended in time");
    let outcome = outcome.unwrap();
    let on_temporal_took = started.elapsed();
    let events: Vec<RunEvent> = events.into_iter().map(Result::unwrap).collect();
    let count = |kind: fn(&RunEvent) -> bool| events.iter().filter(|e| kind(e)).count();
    assert_eq!(count(|e| matches!(e, RunEvent::Turn(_))), 11);
    assert_eq!(count(|e| matches!(e, RunEvent::ToolStarted { .. })), 16);
    assert_eq!(count(|e| matches!(e, RunEvent::ToolResult { .. })), 16);
    assert!(matches!(&events[0], RunEvent::Turn(turn) if turn.tool_uses().count() == 1));
    assert!(
        matches!(events.last(), Some(RunEvent::Turn(turn)) if turn.text() == "all ten steps done")
    );
    for (at, event) in events.iter().enumerate() {
        if let RunEvent::ToolResult { id, .. } = event {
            let started = events[..at]
                .iter()
                .any(|e| matches!(e, RunEvent::ToolStarted { id: of, .. } if of == id));
            assert!(started, "the result of {id} comes after its start");
        }
    }
    assert_eq!(outcome.text, "all ten steps done");
    assert_eq!(
        (outcome.turns, outcome.sealed, outcome.stopped),
        (11, 0, None)
    );
    let on_temporal = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let writes = lines(&dir.path().join("writes"));
    assert_eq!(
        writes,
        ["w1", "w2", "w4", "w5", "w7", "w8"],
        "each write ran once, in order"
    );

    // The same script, in process: the counts start again from nothing.
    std::fs::remove_file(dir.path().join("writes")).unwrap();
    std::fs::remove_file(dir.path().join("looks")).unwrap();
    let local_store = SqliteStore::open(dir.path().join("local-sessions.db")).unwrap();
    let config = AgentConfig::new()
        .with_model(AnthropicModel::new("claude-test", "test-key").with_base_url(&model_url))
        .with_registry(tools::registry())
        .with_working_dir(dir.path())
        .session(|s| s.with_store(local_store))
        .permissions(|p| p.allow("write_note"));
    let agent = Agent::create(config).await.unwrap();
    let started = Instant::now();
    let local = agent.prompt("Do the ten steps").await.unwrap();
    eprintln!(
        "the ten-step run took {on_temporal_took:?} on Temporal (one worker process), {:?} in process",
        started.elapsed()
    );
    assert_eq!(local.text, "all ten steps done");
    let in_process = agent.messages().await;

    assert_eq!(
        on_temporal.len(),
        22,
        "the prompt, then 10 turns and their results, then the answer"
    );
    assert_every_call_answered(&on_temporal);
    assert_eq!(on_temporal, in_process);

    // The history carries ids and counts, never the conversation: no tool's output, no
    // model text is in it.
    keep_history("ten_steps", &run).await;
    let history = run.history().to_json().await.unwrap();
    let text = String::from_utf8_lossy(&history);
    assert!(
        !text.contains("looked at") && !text.contains("wrote w"),
        "{text}"
    );
    assert!(!text.contains("all ten steps done"));
    eprintln!(
        "history of the ten-step run: {} bytes of JSON",
        history.len()
    );
    // Replayed with the current code, it makes the same decisions: no nondeterminism.
    replay(&history)
        .await
        .expect("the recorded history replays");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_cancels_the_running_tools_token() {
    let run = cancel_a_long_look("cancel", false).await;
    keep_history("cancelled", &run.handle).await;
}

/// Cancelling a run reaches a read running as a local activity through its tool's token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_run_cancels_a_local_reads_token() {
    cancel_a_long_look("cancel-local", true).await;
}

/// A cancelled run of one long read, its read a local activity if `local_reads`, and what it
/// needs alive while its history is read.
struct Cancelled {
    handle: RunHandle,
    _server: DevServer,
    _worker: server::Killed,
}

/// Starts a run of one long read on `queue`, cancels it while the read runs, and checks that
/// the cancellation reached the read's token and ended the run.
async fn cancel_a_long_look(queue: &str, local_reads: bool) -> Cancelled {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call("toolu_look", "look", dir.path(), "r", 60_000)]),
        Turn::Text("never asked for".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let worker = start_worker(&server, queue, &store_path, &model.uri());
    let client = AgentClient::connect(&server.address, queue, store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        local_reads,
        ..RunOptions::default()
    };
    let run = client.start("Look for a long time", options).await.unwrap();
    wait_for_file(&dir.path().join("in_look"), Duration::from_secs(30)).await;

    run.cancel().await.unwrap();
    // The cancellation reaches an activity with its next heartbeat (a third of the timeout),
    // a local one at once.
    wait_for_file(&dir.path().join("cancelled"), Duration::from_secs(10)).await;
    let ended = tokio::time::timeout(RUN_LIMIT, run.result())
        .await
        .expect("the run ended in time");
    let error = ended
        .expect_err("a cancelled run has no outcome")
        .to_string();
    assert!(error.to_lowercase().contains("cancel"), "{error}");
    Cancelled {
        handle: run,
        _server: server,
        _worker: worker,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_leaves_a_mutating_call_answered_once_and_a_read_run_again() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call(
            "toolu_write",
            "write_note",
            dir.path(),
            "w",
            60_000,
        )]),
        Turn::Calls(vec![call("toolu_look", "look", dir.path(), "r", 60_000)]),
        Turn::Text("finished after two deaths".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    // A pool of two workers: whichever runs a call is killed while it runs, and the other
    // goes on with the run.
    let mut pool = vec![
        start_worker(&server, "kills", &store_path, &model.uri()),
        start_worker(&server, "kills", &store_path, &model.uri()),
    ];
    let client = AgentClient::connect(&server.address, "kills", store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        ..RunOptions::default()
    };
    let run = client.start("Write, then look", options).await.unwrap();
    let (mut kill_time, mut continued) = (std::time::SystemTime::now(), Duration::ZERO);
    for (marker, next) in [("in_write", "in_look"), ("in_look", "")] {
        let killed_at = kill_the_one_running(&mut pool, &dir.path().join(marker)).await;
        if !next.is_empty() {
            kill_time = std::time::SystemTime::now();
            wait_for_file(&dir.path().join(next), Duration::from_secs(30)).await;
            continued = killed_at.elapsed();
        }
        // Started after the measurement, so that its start does not delay it.
        pool.push(start_worker(&server, "kills", &store_path, &model.uri()));
    }

    let outcome = finished(&run).await;
    assert_eq!(outcome.text, "finished after two deaths");
    eprintln!(
        "from the worker's death to the run's next call on another: {continued:?} \
         (heartbeat timeout 2 s); the history from the death on:"
    );
    print_timeline(&run, kill_time).await;
    assert!(
        continued < Duration::from_secs(3) + Duration::from_millis(500),
        "the run went on {continued:?} after its worker died (heartbeat timeout 2 s)"
    );
    assert_eq!((outcome.turns, outcome.sealed), (3, 1));
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    assert_every_call_answered(&messages);
    let (written, is_error) = result_of(&messages, "toolu_write");
    assert!(
        is_error && written.contains(WORKER_STOPPED_MESSAGE),
        "{written}"
    );
    assert_eq!(
        lines(&dir.path().join("writes")),
        ["w"],
        "the write ran once"
    );
    let (looked, is_error) = result_of(&messages, "toolu_look");
    assert!(
        !is_error && looked.contains("looked at r (run 2)"),
        "{looked}"
    );
    assert_eq!(
        lines(&dir.path().join("looks")),
        ["r", "r"],
        "the read ran again"
    );
    keep_history("killed_mid_call", &run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_is_answered_after_every_process_was_restarted() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![
            call("toolu_look", "look", dir.path(), "r", 0),
            call("toolu_write", "write_note", dir.path(), "w", 0),
        ]),
        Turn::Text("approved and written".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let mut worker = start_worker_with(&server, "approvals", &store_path, &model.uri(), &["ask"]);
    let first_client = AgentClient::connect(&server.address, "approvals", store.clone())
        .await
        .unwrap();
    let run = first_client
        .start("Look, then write", RunOptions::default())
        .await
        .unwrap();
    let session = run.session_id().to_owned();

    // The question reaches the store; then the run holds no process.
    let pending = wait_for_approvals(&first_client, &session).await;
    assert_eq!(pending.len(), 1);
    assert_eq!(
        (pending[0].call_id.as_str(), pending[0].tool.as_str()),
        ("toolu_write", "write_note")
    );
    // The question is stored before its activity reports back: the run waits in the server
    // only once the prompt, the run's settings, the model turn, the read and the asking call
    // have all completed there. A worker killed before that is the next test's case.
    let deadline = Instant::now() + Duration::from_secs(30);
    while completed_activities(&run).await < 5 {
        assert!(
            Instant::now() < deadline,
            "the asking call's activity never completed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        lines(&dir.path().join("writes")).is_empty(),
        "the write waits for its answer"
    );
    assert_eq!(
        lines(&dir.path().join("looks")),
        ["r"],
        "the read ran unasked"
    );
    worker.kill();
    drop((run, first_client));

    // A new client answers with no worker alive; a new worker goes on.
    let client = AgentClient::connect(&server.address, "approvals", store.clone())
        .await
        .unwrap();
    let run = client.attach(&session, None);
    // With no process holding it, the server still has it running.
    assert_eq!(run.describe().await.unwrap().status, RunStatus::Running);
    run.answer_approval("toolu_write", PermissionAnswer::Allow)
        .await
        .unwrap();
    let _worker = start_worker_with(&server, "approvals", &store_path, &model.uri(), &["ask"]);
    let outcome = finished(&run).await;
    assert_eq!(outcome.text, "approved and written");
    assert_eq!(
        lines(&dir.path().join("writes")),
        ["w"],
        "the write ran once"
    );
    assert!(client.pending_approvals(&session).await.unwrap().is_empty());
    let messages = stored_conversation(&*store, &session).await.unwrap();
    assert_every_call_answered(&messages);
    let (written, is_error) = result_of(&messages, "toolu_write");
    assert!(!is_error && written.contains("wrote w"), "{written}");
    keep_history("approval_after_restarts", &run).await;
}

/// A tool the app gives retries (`AgentParts::with_tool_retries`) runs again when its worker
/// dies, though it is neither read-only nor idempotent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_given_retries_runs_again_when_its_worker_dies() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call(
            "toolu_write",
            "write_note",
            dir.path(),
            "w",
            60_000,
        )]),
        Turn::Text("written, twice".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let queue = "retries";
    let retrying = ["retry-writes"];
    let mut worker = start_worker_with(&server, queue, &store_path, &model.uri(), &retrying);
    let client = AgentClient::connect(&server.address, queue, store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        ..RunOptions::default()
    };
    let run = client.start("Write", options).await.unwrap();
    wait_for_file(&dir.path().join("in_write"), Duration::from_secs(30)).await;
    worker.kill();
    let _worker = start_worker_with(&server, queue, &store_path, &model.uri(), &retrying);
    let outcome = finished(&run).await;
    assert_eq!(
        (outcome.text.as_str(), outcome.sealed),
        ("written, twice", 0)
    );
    assert_eq!(
        lines(&dir.path().join("writes")),
        ["w", "w"],
        "the write ran again"
    );
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let (written, is_error) = result_of(&messages, "toolu_write");
    assert!(!is_error && written.contains("wrote w"), "{written}");
    keep_history("retried_tool", &run).await;
}

/// A worker killed after storing a call's question and before reporting back: the call never
/// started, so it is not answered as one that may have partly happened; it asks again, and
/// runs once answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_asking_leaves_the_call_to_ask_again() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call("toolu_write", "write_note", dir.path(), "w", 0)]),
        Turn::Text("written after all".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let queue = "asking";
    let mut worker = start_worker_with(&server, queue, &store_path, &model.uri(), &["ask-slowly"]);
    let client = AgentClient::connect(&server.address, queue, store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        ..RunOptions::default()
    };
    let run = client.start("Write", options).await.unwrap();
    wait_for_approvals(&client, run.session_id()).await;
    // Its activity sleeps in the slow store, not completed: killed now, it never reports.
    assert_eq!(
        completed_activities(&run).await,
        3,
        "the prompt, the settings and the model turn"
    );
    worker.kill();
    let _worker = start_worker_with(&server, queue, &store_path, &model.uri(), &["ask"]);
    run.answer_approval("toolu_write", PermissionAnswer::Allow)
        .await
        .unwrap();
    let outcome = finished(&run).await;
    assert_eq!(
        (outcome.text.as_str(), outcome.sealed),
        ("written after all", 0)
    );
    assert_eq!(
        lines(&dir.path().join("writes")),
        ["w"],
        "the write ran once"
    );
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let (written, is_error) = result_of(&messages, "toolu_write");
    assert!(!is_error && written.contains("wrote w"), "{written}");
    keep_history("killed_while_asking", &run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_continues_as_new_with_its_conversation_whole() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let model = model_server(ten_steps(dir.path())).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(&server, "continue", &store_path, &model.uri());
    let client = AgentClient::connect(&server.address, "continue", store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        continue_after: 4,
        ..RunOptions::default()
    };
    let run = client.start("Do the ten steps", options).await.unwrap();
    let outcome = finished(&run).await;
    assert_eq!(outcome.text, "all ten steps done");
    assert_eq!(
        (outcome.turns, outcome.sealed),
        (11, 0),
        "counted across the runs"
    );
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    assert_eq!(messages.len(), 22);
    assert_every_call_answered(&messages);
    let writes = lines(&dir.path().join("writes"));
    assert_eq!(
        writes,
        ["w1", "w2", "w4", "w5", "w7", "w8"],
        "each write ran once, in order"
    );
    // The last workflow run continued an earlier one, and holds only its own turns.
    let history = run.history().to_json().await.unwrap();
    let text = String::from_utf8_lossy(&history);
    assert!(text.contains("\"continued_execution_run_id\":\""), "{text}");
    assert!(
        !text.contains("\"continued_execution_run_id\":\"\""),
        "{text}"
    );
    assert_eq!(
        text.matches("tool_sdk.model_turn").count(),
        3,
        "turns 9 to 11 only"
    );
    keep_history("continued_as_new", &run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_runs_on_two_workers_all_finish_when_one_is_killed_midway() {
    const RUNS: usize = 50;
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call("toolu_mark", "mark", dir.path(), "m", 1_500)]),
        Turn::Text("marked".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let mut pool = vec![
        start_worker(&server, "fifty", &store_path, &model.uri()),
        start_worker(&server, "fifty", &store_path, &model.uri()),
    ];
    let client = AgentClient::connect(&server.address, "fifty", store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        ..RunOptions::default()
    };
    let started = Instant::now();
    let mut runs = Vec::with_capacity(RUNS);
    for n in 0..RUNS {
        let run = client.start(format!("Mark run {n}"), options.clone());
        runs.push(run.await.unwrap());
    }
    // Midway: once a third of the runs' calls started, kill the worker that ran the latest.
    let marks = dir.path().join("marks");
    let deadline = Instant::now() + Duration::from_secs(30);
    let victim = loop {
        let started_calls = lines(&marks);
        if started_calls.len() >= RUNS / 3 {
            let last = started_calls.last().unwrap();
            break last.rsplit(' ').next().unwrap().parse::<u32>().unwrap();
        }
        assert!(Instant::now() < deadline, "the runs did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let index = pool.iter().position(|w| w.pid() == victim).unwrap();
    pool.remove(index).kill();

    let results = futures::future::join_all(runs.iter().map(RunHandle::result));
    let outcomes = tokio::time::timeout(RUN_LIMIT, results)
        .await
        .expect("the runs ended in time");
    eprintln!(
        "{RUNS} runs on two workers, one killed: {:?}",
        started.elapsed()
    );
    let mut sealed = 0;
    for (run, outcome) in runs.iter().zip(outcomes) {
        let outcome = outcome.unwrap();
        assert_eq!(outcome.text, "marked");
        let messages = stored_conversation(&*store, run.session_id())
            .await
            .unwrap();
        assert_every_call_answered(&messages);
        let session = run.session_id();
        let ran = lines(&marks)
            .iter()
            .filter(|line| line.starts_with(&format!("{session} ")))
            .count();
        let (result, is_error) = result_of(&messages, "toolu_mark");
        if is_error {
            // Its worker died while it ran: answered as stopped, never run again.
            assert!(result.contains(WORKER_STOPPED_MESSAGE), "{result}");
            assert_eq!(ran, 1, "a sealed call of {session} ran once");
            assert_eq!(outcome.sealed, 1);
            sealed += 1;
        } else {
            assert!(result.contains("marked m"), "{result}");
            assert_eq!(ran, 1, "the call of {session} ran once");
            assert_eq!(outcome.sealed, 0);
        }
    }
    assert!(sealed > 0, "the killed worker was running calls");
    assert_eq!(lines(&marks).len(), RUNS, "no call ran twice");
    eprintln!("{sealed} calls were under way in the killed worker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_goes_on_after_the_server_was_stopped_and_restarted() {
    let mut server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call("toolu_look", "look", dir.path(), "r", 3_000)]),
        Turn::Calls(vec![call("toolu_write", "write_note", dir.path(), "w", 0)]),
        Turn::Text("went on after the restart".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(&server, "restart", &store_path, &model.uri());
    let client = AgentClient::connect(&server.address, "restart", store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        ..RunOptions::default()
    };
    let run = client.start("Look, then write", options).await.unwrap();
    // The server goes away while the read runs, and comes back before it ends.
    wait_for_file(&dir.path().join("in_look"), Duration::from_secs(30)).await;
    server.stop();
    tokio::time::sleep(Duration::from_secs(1)).await;
    server.restart().await;

    let outcome = finished(&run).await;
    assert_eq!(outcome.text, "went on after the restart");
    assert_eq!((outcome.turns, outcome.sealed), (3, 0));
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    assert_every_call_answered(&messages);
    let (looked, is_error) = result_of(&messages, "toolu_look");
    assert!(!is_error && looked.contains("looked at r"), "{looked}");
    assert_eq!(
        lines(&dir.path().join("writes")),
        ["w"],
        "the write ran once"
    );
}

/// How many activities the server has recorded as completed in the run's history.
async fn completed_activities(run: &tool_sdk_temporal::RunHandle) -> usize {
    let history = run.history().to_json().await.unwrap();
    let text = String::from_utf8_lossy(&history)
        .to_lowercase()
        .replace('_', "");
    text.matches("activitytaskcompletedeventattributes").count()
}

/// With `RunOptions::local_reads`, reads run as local activities, in the workflow task of the
/// worker that holds the run: they cost no activity task (their results are markers), writes
/// still do, and a read whose worker is killed runs again on another once the workflow task
/// times out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_reads_run_in_the_workflow_task_and_again_when_their_worker_dies() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let script = vec![
        Turn::Calls(vec![call("toolu_look", "look", dir.path(), "r", 60_000)]),
        Turn::Calls(vec![
            call("toolu_a", "look", dir.path(), "a", 0),
            call("toolu_b", "look", dir.path(), "b", 0),
            call("toolu_w", "write_note", dir.path(), "w", 0),
        ]),
        Turn::Text("read, read again, then wrote".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let mut pool = vec![
        start_worker(&server, "local", &store_path, &model.uri()),
        start_worker(&server, "local", &store_path, &model.uri()),
    ];
    let client = AgentClient::connect(&server.address, "local", store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        local_reads: true,
        ..RunOptions::default()
    };
    let run = client.start("Look, then write", options).await.unwrap();
    kill_the_one_running(&mut pool, &dir.path().join("in_look")).await;

    let outcome = finished(&run).await;
    assert_eq!(
        (outcome.text.as_str(), outcome.sealed),
        ("read, read again, then wrote", 0)
    );
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    assert_every_call_answered(&messages);
    let (looked, is_error) = result_of(&messages, "toolu_look");
    assert!(
        !is_error && looked.contains("looked at r (run 2)"),
        "{looked}"
    );
    let mut looks = lines(&dir.path().join("looks"));
    looks[2..].sort();
    assert_eq!(looks, ["r", "r", "a", "b"], "the killed read ran again");
    assert_eq!(lines(&dir.path().join("writes")), ["w"]);
    // The reads are the history's local-activity markers (the killed attempt left none), the
    // write its only call activity.
    let history = run.history().to_json().await.unwrap();
    let text = String::from_utf8_lossy(&history);
    let scheduled = "\"activity_type\":{\"name\":\"tool_sdk.call_tool\"";
    assert_eq!(text.matches(scheduled).count(), 1, "only the write: {text}");
    assert_eq!(
        text.matches("\"marker_name\":\"core_local_activity\"")
            .count(),
        3
    );
    keep_history("local_reads", &run).await;
}
