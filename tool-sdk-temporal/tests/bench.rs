//! The benchmark of issue #29, all rows side by side in one run against one dev server: a bare
//! no-op activity round trip (the floor), a step of the agent on Temporal, the same step in
//! process with no store and with `SqliteStore`, runs per second with one and two worker
//! processes, the time from a worker's death to its run going on elsewhere, the delay of a
//! run's events (from its record stored to the client), the delay of what shows while an
//! activity runs (the model's first token, a tool's progress line), and the history
//! of a 60-turn session of about 100k tokens.
//!
//! `cargo test --release -p tool-sdk-temporal --test bench -- --ignored --nocapture` for the
//! numbers; the test that is not ignored runs every row once with tiny sizes (a smoke test).

#[path = "support/floor.rs"]
#[allow(dead_code)]
mod floor;
#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "support/stream.rs"]
mod stream;
#[allow(dead_code)]
#[path = "support/tools.rs"]
mod tools;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use temporalio_client::{
    Client, ClientOptions, Connection, ConnectionOptions, Url, WorkflowGetResultOptions,
    WorkflowHandle, WorkflowStartOptions,
};
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::session::{SqliteStore, stored_conversation};
use tool_sdk_temporal::{AgentClient, RunHandle, RunOptions};

use server::{
    DevServer, Killed, Turn, model_server, start_worker, start_worker_with, wait_for_file,
};

/// How much each row does.
struct Sizes {
    /// No-op activities in the floor's workflow.
    floor: u32,
    /// Steps (a model turn and its one read-only call) of the step rows.
    steps: u32,
    /// Times each step row is run (the median is kept).
    repeats: usize,
    /// Concurrent runs of the throughput rows.
    runs: usize,
    /// Turns of the history row, and the characters of each turn's note.
    history_turns: u32,
    note: usize,
}

const FULL: Sizes = Sizes {
    floor: 40,
    steps: 40,
    repeats: 5,
    runs: 40,
    history_turns: 60,
    note: 3_400,
};

const SMOKE: Sizes = Sizes {
    floor: 3,
    steps: 2,
    repeats: 1,
    runs: 2,
    history_turns: 2,
    note: 10,
};

/// A whole row never takes this long.
const ROW_LIMIT: Duration = Duration::from_secs(120);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the benchmark: run it in release with --ignored --nocapture"]
async fn benchmark() {
    run_all(&FULL).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn benchmark_smoke() {
    run_all(&SMOKE).await;
}

async fn run_all(sizes: &Sizes) {
    let server = DevServer::start().await;
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!("load average at the start: {}", load.trim());

    let floor = floor_round_trip(&server, sizes.floor, sizes.repeats, false).await;
    eprintln!("floor: a no-op activity round trip: {floor:?}");
    let local = floor_round_trip(&server, sizes.floor, sizes.repeats, true).await;
    eprintln!("a no-op local activity, in the workflow task: {local:?}");
    let rows = step_rows(&server, sizes).await;
    let (temporal, local, sqlite) = (
        median(rows.temporal),
        median(rows.local),
        median(rows.sqlite),
    );
    eprintln!("a step on Temporal: {temporal:?}");
    eprintln!(
        "a run on Temporal / its steps (as measured before): {:?}",
        median(rows.temporal_whole_run)
    );
    let local_reads = median(rows.temporal_local_reads);
    eprintln!(
        "a step on Temporal, its read as a local activity (RunOptions::local_reads): \
         {local_reads:?} = {:.3}x the floor over the step in process",
        local_reads.saturating_sub(local).as_secs_f64() / floor.as_secs_f64()
    );
    eprintln!("a step in process: {local:?}");
    eprintln!("a step in process with SqliteStore: {sqlite:?}");
    let overhead = temporal.saturating_sub(local);
    eprintln!(
        "a step's overhead on Temporal: {overhead:?} = {:.3}x the floor",
        overhead.as_secs_f64() / floor.as_secs_f64()
    );
    for workers in [1, 2] {
        let rate = runs_per_second(&server, sizes.runs, workers).await;
        eprintln!("runs per second with {workers} worker process(es): {rate:.1}");
    }
    let continued = death_to_continuation(&server).await;
    eprintln!(
        "a worker's death to its run going on elsewhere (heartbeat timeout 2 s): {continued:?}"
    );
    let (median_delay, max_delay) = event_delay(&server, sizes).await;
    eprintln!(
        "an event's delay, from its record stored to the client (tailing every 50 ms): \
         median {median_delay:?}, max {max_delay:?}"
    );
    let (text, progress) = live_delay(&server, sizes.repeats.max(3)).await;
    eprintln!(
        "live events' delay, tailing every 50 ms: the model's first token to its TextDelta: \
         median {:?}, max {:?}; a tool's progress line to its ToolProgress: median {:?}, \
         max {:?}",
        median(text.clone()),
        text.iter().max().unwrap(),
        median(progress.clone()),
        progress.iter().max().unwrap()
    );
    history_of_a_long_session(&server, sizes).await;
}

/// The delays of what shows while an activity runs, over `runs` runs of a call reporting 5
/// progress lines, then a streamed answer: from the model sending its first token to the
/// client's `TextDelta`, and from the tool reporting each line to the client's
/// `ToolProgress`.
async fn live_delay(server: &DevServer, runs: usize) -> (Vec<Duration>, Vec<Duration>) {
    use stream::{SlowModel, Step, report, watch};
    use tool_sdk_temporal::RunEvent;

    let dir = tempfile::tempdir().unwrap();
    let parts = ["The ", "notes ", "are ", "fine."].map(str::to_owned);
    let script = vec![
        Step::Whole(report("toolu_0", dir.path(), 5)),
        Step::Streamed(parts.to_vec()),
    ];
    let model = SlowModel::start(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(server, "live", &store_path, &model.url);
    let client = AgentClient::connect(&server.address, "live", store)
        .await
        .unwrap();
    let (mut text, mut progress) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let handle = client.start("Go", RunOptions::default()).await.unwrap();
        let watched = watch(&handle, &model, dir.path()).await;
        let first = RunEvent::TextDelta("The ".into());
        assert!(watched.events.contains(&first), "{:?}", watched.events);
        let sent = model.first_sent()[run];
        text.push(
            watched.deltas_at[0]
                .duration_since(sent)
                .unwrap_or_default(),
        );
        progress.extend(watched.progress_delays);
        // The next run's lines are seen anew.
        for line in 0..5 {
            std::fs::remove_file(dir.path().join(format!("seen-{line}"))).unwrap();
        }
    }
    assert!(model.seen_in_time().iter().all(|seen| *seen));
    (text, progress)
}

/// The delay of [`RunHandle::events`]: from each record's store time (`created_at`, in the
/// SQLite file) to its event's arrival in the client, over a run of `steps` steps.
async fn event_delay(server: &DevServer, sizes: &Sizes) -> (Duration, Duration) {
    use futures::StreamExt;
    use std::time::{SystemTime, UNIX_EPOCH};
    use tool_sdk::session::{Record, SessionStore};
    use tool_sdk_temporal::RunEvent;

    let dir = tempfile::tempdir().unwrap();
    let model = model_server(script(dir.path(), sizes.steps, 8)).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(server, "events", &store_path, &model.uri());
    let client = AgentClient::connect(&server.address, "events", store.clone())
        .await
        .unwrap();
    let run = client.start("Go", RunOptions::default()).await.unwrap();
    let arrivals: Vec<u128> = tokio::time::timeout(ROW_LIMIT, async {
        run.events(Duration::from_millis(50))
            // The events of records (text deltas come from heartbeats: `live_delay`).
            .filter(|event| {
                let live = matches!(
                    event,
                    Ok(RunEvent::TextDelta(_)
                        | RunEvent::ThinkingDelta(_)
                        | RunEvent::TextRestarted)
                );
                std::future::ready(!live)
            })
            .map(|event| {
                event.unwrap();
                SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis()
            })
            .collect()
            .await
    })
    .await
    .expect("the run ended in time");
    // The records that make events, in order, after the prompt (the first record).
    let records = store.load(run.session_id()).await.unwrap();
    let shown = records.iter().skip(1).map(|record| {
        matches!(
            record,
            Record::ModelTurn { .. } | Record::ToolStarted { .. } | Record::ToolResult { .. }
        )
    });
    let db = rusqlite::Connection::open(&store_path).unwrap();
    let mut stored_at = db
        .prepare("SELECT created_at FROM records WHERE session_id = ?1 ORDER BY seq")
        .unwrap();
    let times: Vec<i64> = stored_at
        .query_map([run.session_id()], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .skip(1)
        .collect();
    let mut delays: Vec<Duration> = times
        .iter()
        .zip(shown)
        .filter(|(_, shown)| *shown)
        .map(|(stored, _)| *stored as u128)
        .zip(&arrivals)
        .map(|(stored, arrived)| Duration::from_millis(arrived.saturating_sub(stored) as u64))
        .collect();
    assert_eq!(delays.len(), arrivals.len(), "every event has its record");
    delays.sort();
    (delays[delays.len() / 2], *delays.last().unwrap())
}

async fn connect(address: &str) -> Client {
    let url = Url::parse(&format!("http://{address}")).unwrap();
    let connection = Connection::connect(ConnectionOptions::new(url).build())
        .await
        .unwrap();
    Client::new(connection, ClientOptions::new("default").build()).unwrap()
}

/// One no-op activity's round trip: the slope between workflows of `n` and `n / 2` of them,
/// so that what a workflow costs once (its start, its first workflow task, its result) is not
/// counted as a round trip; the median over `repeats` pairs (after a warm-up pair), as the
/// step rows are measured. With `local`, the no-op runs as a local activity.
async fn floor_round_trip(server: &DevServer, n: u32, repeats: usize, local: bool) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("unused.db");
    let queue = if local { "floor-local" } else { "floor" };
    let _worker = start_worker_with(server, queue, &store, "http://unused", &["floor"]);
    let client = connect(&server.address).await;
    let timed = async |id: String, activities: u32| {
        let start = WorkflowStartOptions::new(queue, id.clone()).build();
        let started = Instant::now();
        client
            .start_workflow(floor::Floor::run, (activities, local), start)
            .await
            .unwrap();
        let handle: WorkflowHandle<Client, floor::Floor> = client.get_workflow_handle(id);
        let done = tokio::time::timeout(
            ROW_LIMIT,
            handle.get_result(WorkflowGetResultOptions::default()),
        )
        .await
        .expect("the floor ran in time")
        .unwrap();
        assert_eq!(done, activities);
        started.elapsed()
    };
    let mut times = Vec::new();
    for attempt in 0..=repeats {
        let long = timed(format!("{queue}-{attempt}"), n).await;
        let short = timed(format!("{queue}-{attempt}-short"), n / 2).await;
        if attempt > 0 {
            times.push(slope(long, short, n, n / 2));
        }
    }
    median(times)
}

/// What one more unit (activity, step) costs: the difference between a run of `long_n` and
/// one of `short_n`, per unit.
fn slope(long: Duration, short: Duration, long_n: u32, short_n: u32) -> Duration {
    long.saturating_sub(short) / (long_n - short_n)
}

/// `steps` turns of one read-only call each (its note `note` characters long), then an answer.
fn script(dir: &Path, steps: u32, note: usize) -> Vec<Turn> {
    let mut turns: Vec<Turn> = (0..steps)
        .map(|step| {
            let note = format!("s{step}-{}", "x".repeat(note));
            let input = json!({"dir": dir, "note": note, "slow_ms": 0});
            Turn::Calls(vec![(format!("toolu_{step}"), "look", input)])
        })
        .collect();
    turns.push(Turn::Text("done".to_owned()));
    turns
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// A step on Temporal (one worker process), the same with its read as a local activity, in
/// process, and in process with `SqliteStore`,
/// each the slope between runs of `steps` and `steps / 2` steps (what a run costs once, its
/// start, its settings, its last turn, its result, is not a step's), the median over `repeats`
/// pairs after a warm-up pair; and, as measured before, a whole run of `steps` steps on
/// Temporal divided by `steps`.
async fn step_rows(server: &DevServer, sizes: &Sizes) -> StepRows {
    let dir = tempfile::tempdir().unwrap();
    let lengths = [sizes.steps, sizes.steps / 2];
    let mut models = Vec::new();
    let mut clients = Vec::new();
    let mut workers = Vec::new();
    for steps in lengths {
        let model = model_server(script(dir.path(), steps, 8)).await;
        let queue = format!("steps-{steps}");
        let store_path = dir.path().join(format!("sessions-{steps}.db"));
        let store = Arc::new(SqliteStore::open(&store_path).unwrap());
        workers.push(start_worker(server, &queue, &store_path, &model.uri()));
        let client = AgentClient::connect(&server.address, &queue, store)
            .await
            .unwrap();
        models.push(model);
        clients.push(client);
    }
    let on_temporal = async |client: &AgentClient, local_reads: bool| {
        let options = RunOptions {
            local_reads,
            ..RunOptions::default()
        };
        let started = Instant::now();
        let run = client.start("Go", options).await.unwrap();
        let outcome = tokio::time::timeout(ROW_LIMIT, run.result())
            .await
            .expect("the run ended in time")
            .unwrap();
        assert_eq!(outcome.text, "done");
        started.elapsed()
    };
    let in_process = async |model: &wiremock::MockServer, store: Option<SqliteStore>| {
        let mut config = AgentConfig::new()
            .with_model(AnthropicModel::new("claude-test", "k").with_base_url(model.uri()))
            .with_registry(tools::registry())
            .with_working_dir(dir.path());
        if let Some(store) = store {
            config = config.session(|s| s.with_store(store));
        }
        let agent = Agent::create(config).await.unwrap();
        let started = Instant::now();
        assert_eq!(agent.prompt("Go").await.unwrap().text, "done");
        started.elapsed()
    };
    let [long, short] = lengths;
    let mut rows = StepRows::default();
    for repeat in 0..=sizes.repeats {
        let temporal_long = on_temporal(&clients[0], false).await;
        let temporal_short = on_temporal(&clients[1], false).await;
        let local_long = on_temporal(&clients[0], true).await;
        let local_short = on_temporal(&clients[1], true).await;
        if repeat > 0 {
            rows.temporal
                .push(slope(temporal_long, temporal_short, long, short));
            rows.temporal_whole_run.push(temporal_long / long);
            let local_reads = slope(local_long, local_short, long, short);
            rows.temporal_local_reads.push(local_reads);
        }
    }
    for with_store in [false, true] {
        for repeat in 0..=sizes.repeats {
            let store = |steps: u32| {
                let path = dir.path().join(format!("local-{repeat}-{steps}.db"));
                with_store.then(|| SqliteStore::open(path).unwrap())
            };
            let local_long = in_process(&models[0], store(long)).await;
            let local_short = in_process(&models[1], store(short)).await;
            if repeat > 0 {
                let row = if with_store {
                    &mut rows.sqlite
                } else {
                    &mut rows.local
                };
                row.push(slope(local_long, local_short, long, short));
            }
        }
    }
    rows
}

/// The step rows' times, one a repeat.
#[derive(Default)]
struct StepRows {
    temporal: Vec<Duration>,
    temporal_whole_run: Vec<Duration>,
    temporal_local_reads: Vec<Duration>,
    local: Vec<Duration>,
    sqlite: Vec<Duration>,
}

/// `runs` runs of one call each, started at once, on `workers` worker processes.
async fn runs_per_second(server: &DevServer, runs: usize, workers: usize) -> f64 {
    let dir = tempfile::tempdir().unwrap();
    let model = model_server(script(dir.path(), 1, 8)).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let queue = format!("throughput-{workers}");
    let _pool: Vec<Killed> = (0..workers)
        .map(|_| start_worker(server, &queue, &store_path, &model.uri()))
        .collect();
    let client = AgentClient::connect(&server.address, &queue, store)
        .await
        .unwrap();
    let started = Instant::now();
    let mut handles = Vec::with_capacity(runs);
    for n in 0..runs {
        handles.push(
            client
                .start(format!("Go {n}"), RunOptions::default())
                .await
                .unwrap(),
        );
    }
    let results = futures::future::join_all(handles.iter().map(RunHandle::result));
    for outcome in tokio::time::timeout(ROW_LIMIT, results)
        .await
        .expect("the runs ended in time")
    {
        assert_eq!(outcome.unwrap().text, "done");
    }
    runs as f64 / started.elapsed().as_secs_f64()
}

/// Two worker processes; the one running a mutating call is killed; until the run's next call
/// starts on the other.
async fn death_to_continuation(server: &DevServer) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let call = |id: &str, tool: &'static str, marker_note: &str| {
        let input = json!({"dir": dir.path(), "note": marker_note, "slow_ms": 60_000});
        (id.to_owned(), tool, input)
    };
    let script = vec![
        Turn::Calls(vec![call("toolu_write", "write_note", "w")]),
        Turn::Calls(vec![call("toolu_look", "look", "r")]),
        Turn::Text("done".to_owned()),
    ];
    let model = model_server(script).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let mut pool = vec![
        start_worker(server, "death", &store_path, &model.uri()),
        start_worker(server, "death", &store_path, &model.uri()),
    ];
    let client = AgentClient::connect(&server.address, "death", store)
        .await
        .unwrap();
    let options = RunOptions {
        heartbeat_timeout: Duration::from_secs(2),
        ..RunOptions::default()
    };
    let run = client.start("Write, then look", options).await.unwrap();
    let marker = dir.path().join("in_write");
    wait_for_file(&marker, Duration::from_secs(30)).await;
    let pid: u32 = std::fs::read_to_string(&marker).unwrap().parse().unwrap();
    let index = pool.iter().position(|w| w.pid() == pid).unwrap();
    let killed_at = Instant::now();
    pool.remove(index).kill();
    wait_for_file(&dir.path().join("in_look"), Duration::from_secs(30)).await;
    let continued = killed_at.elapsed();
    run.cancel().await.unwrap();
    continued
}

/// A session of `history_turns` turns, each a call whose input and result carry a note of
/// `note` characters: the workflow's history, against the conversation's size.
async fn history_of_a_long_session(server: &DevServer, sizes: &Sizes) {
    let dir = tempfile::tempdir().unwrap();
    let model = model_server(script(dir.path(), sizes.history_turns, sizes.note)).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(server, "history", &store_path, &model.uri());
    let client = AgentClient::connect(&server.address, "history", store.clone())
        .await
        .unwrap();
    let options = RunOptions {
        max_turns: Some(sizes.history_turns + 1),
        ..RunOptions::default()
    };
    let run = client.start("Look at every note", options).await.unwrap();
    let outcome = tokio::time::timeout(ROW_LIMIT, run.result())
        .await
        .expect("the run ended in time")
        .unwrap();
    assert_eq!(outcome.text, "done");
    let conversation = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let conversation_bytes = serde_json::to_vec(&conversation).unwrap().len();
    let events = run.history().into_events().await.unwrap().len();
    let history = run.history().to_json().await.unwrap();
    assert!(
        !String::from_utf8_lossy(&history).contains("looked at"),
        "no tool result is in the history"
    );
    eprintln!(
        "a {}-turn session: conversation {conversation_bytes} bytes (about {} tokens); \
         workflow history {events} events, {} bytes of JSON",
        sizes.history_turns + 1,
        conversation_bytes / 4,
        history.len()
    );
}
