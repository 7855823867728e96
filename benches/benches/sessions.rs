//! Durable sessions (issue #13): what a session store adds to an agent step, side by side in
//! one run with no store, `SqliteStore` and (when `BENCH_POSTGRES_URL` is set and the bench is
//! built with the `postgres` feature) `PostgresStore`; `Agent::resume` of a stored
//! 1,000-message session; and the stores' raw `append` and `load`.
//!
//! - `session_step/<store>/T10_N1`: one run of 10 model turns of one `add` call each, then a
//!   text turn (the agent-loop bench's shape, scripted model), the agent storing every record
//!   as it goes (four a step: the model turn, its usage, the call's start, its result; one
//!   commit, since `add` is read-only).
//!   `bench/report.py` divides by the 11 steps and subtracts the `memory` run.
//! - `session_resume/<store>/1000_messages`: `Agent::resume` of a session the agent itself
//!   wrote (499 turns of one call, then a text turn: 1,000 messages, 1,998 records).
//!   `session_resume/memory/create` is `Agent::create` with no store, the part of resuming
//!   that is building the agent.
//! - `session_store/<store>/append`: one `append` of a tool-result record.
//!   `session_store/<store>/load_1000`: `load` of a session of 1,000 records (the first 1,000
//!   of the resumed session's).
//!
//! The SQLite file is in a temp dir, with the store's documented durability (WAL,
//! `synchronous = NORMAL`). The PostgreSQL server is whatever `BENCH_POSTGRES_URL` names;
//! `bench/run` starts a throwaway one with the server's default durability (`fsync = on`,
//! `synchronous_commit = on`).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use tool_sdk::ToolRegistry;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::ScriptedModel;
use tool_sdk::session::{NewSession, Record, SessionStore, SqliteStore};
use tool_sdk_benches::{add_registry, runtime, script};

/// Turns of one call in the step workload (plus a final text turn).
const STEP_TURNS: usize = 10;
/// Turns of one call in the session that is resumed: 1 + 2 * 499 + 1 = 1,000 messages.
const RESUME_TURNS: usize = 499;
/// Records in the session that is loaded.
const LOAD_RECORDS: usize = 1_000;

/// An agent that plays `turns` turns of one `add` call then a text turn, storing its session
/// in `store` (none: in memory only).
fn config(
    registry: &Arc<ToolRegistry>,
    store: Option<&Arc<dyn SessionStore>>,
    turns: usize,
) -> AgentConfig {
    let config = AgentConfig::new()
        .with_model(ScriptedModel::new(script(turns, 1)))
        .with_registry(registry.clone())
        .with_tools(["add"])
        .limits(|l| l.with_max_turns(turns as u32 + 1));
    match store {
        Some(store) => config.session(|s| s.with_store(store.clone())),
        None => config,
    }
}

/// Runs the step workload `iters` times; returns the time spent in `Agent::prompt` (agent
/// creation, which creates the stored session, excluded).
async fn step_runs(
    iters: u64,
    registry: &Arc<ToolRegistry>,
    store: Option<&Arc<dyn SessionStore>>,
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let agent = Agent::create(config(registry, store, STEP_TURNS))
            .await
            .expect("the agent builds");
        let started = Instant::now();
        let result = agent.prompt("go").await.expect("the run succeeds");
        total += started.elapsed();
        assert_eq!(result.tool_calls, STEP_TURNS);
        assert_eq!(result.text, "done");
    }
    total
}

/// The stores measured: SQLite always, PostgreSQL when asked for.
fn stores(
    dir: &tempfile::TempDir,
    rt: &tokio::runtime::Runtime,
) -> Vec<(&'static str, Arc<dyn SessionStore>)> {
    let sqlite = SqliteStore::open(dir.path().join("sessions.db")).expect("the SQLite store opens");
    let mut stores: Vec<(&'static str, Arc<dyn SessionStore>)> = vec![("sqlite", Arc::new(sqlite))];
    if let Some(store) = rt.block_on(postgres()) {
        stores.push(("postgres", store));
    }
    stores
}

#[cfg(feature = "postgres")]
async fn postgres() -> Option<Arc<dyn SessionStore>> {
    let url = std::env::var("BENCH_POSTGRES_URL").ok()?;
    let store = tool_sdk::session::PostgresStore::connect(&url)
        .await
        .expect("BENCH_POSTGRES_URL names a server that accepts the store");
    Some(Arc::new(store))
}

#[cfg(not(feature = "postgres"))]
async fn postgres() -> Option<Arc<dyn SessionStore>> {
    if std::env::var_os("BENCH_POSTGRES_URL").is_some() {
        eprintln!(
            "BENCH_POSTGRES_URL is set but the bench was built without `--features postgres`: \
             PostgreSQL skipped"
        );
    }
    None
}

fn sessions(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("a temp dir");
    let stores = stores(&dir, &rt);
    let registry = add_registry();

    let mut group = c.benchmark_group("session_step");
    group.bench_function(format!("memory/T{STEP_TURNS}_N1"), |b| {
        b.iter_custom(|iters| rt.block_on(step_runs(iters, &registry, None)))
    });
    for (name, store) in &stores {
        group.bench_function(format!("{name}/T{STEP_TURNS}_N1"), |b| {
            b.iter_custom(|iters| rt.block_on(step_runs(iters, &registry, Some(store))))
        });
    }
    group.finish();

    // The sessions to resume and load, written by the agent itself.
    let stored: Vec<_> = stores
        .iter()
        .map(|(name, store)| {
            rt.block_on(async {
                let agent = Agent::create(config(&registry, Some(store), RESUME_TURNS))
                    .await
                    .expect("the agent builds");
                agent.prompt("go").await.expect("the long run succeeds");
                let id = agent.session_id().to_owned();
                drop(agent);
                let records = store.load(&id).await.expect("the session loads");
                let loaded = store
                    .create(NewSession::new(std::env::temp_dir()))
                    .await
                    .expect("a session");
                for record in records.iter().take(LOAD_RECORDS) {
                    store.append(&loaded.id, record).await.expect("appends");
                }
                let appended = store
                    .create(NewSession::new(std::env::temp_dir()))
                    .await
                    .expect("a session");
                let result = records
                    .iter()
                    .find(|r| matches!(r, Record::ToolResult { .. }))
                    .expect("a tool result")
                    .clone();
                (*name, store, id, loaded.id, appended.id, result)
            })
        })
        .collect();

    let mut group = c.benchmark_group("session_resume");
    group.bench_function("memory/create", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let config = config(&registry, None, 1);
                    let started = Instant::now();
                    let agent = Agent::create(config).await.expect("the agent builds");
                    total += started.elapsed();
                    black_box(agent);
                }
                total
            })
        })
    });
    for (name, store, id, ..) in &stored {
        group.bench_function(format!("{name}/1000_messages"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let config = config(&registry, Some(store), 1);
                        let started = Instant::now();
                        let agent = Agent::resume(config, id).await.expect("resumes");
                        total += started.elapsed();
                        debug_assert_eq!(agent.messages().await.len(), 1_000);
                        black_box(agent);
                    }
                    total
                })
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("session_store");
    for (name, store, _, loaded, appended, result) in &stored {
        group.bench_function(format!("{name}/append"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        store.append(appended, result).await.expect("appends");
                    }
                    started.elapsed()
                })
            })
        });
        group.bench_function(format!("{name}/load_{LOAD_RECORDS}"), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let started = Instant::now();
                    for _ in 0..iters {
                        let records = store.load(loaded).await.expect("loads");
                        assert_eq!(records.len(), LOAD_RECORDS);
                        black_box(records);
                    }
                    started.elapsed()
                })
            })
        });
    }
    group.finish();

    // The bytes a record takes as stored, for comparing with the peer's items.
    if let Some((_, store, _, loaded, ..)) = stored.first() {
        let records = rt.block_on(store.load(loaded)).expect("loads");
        let bytes: usize = records
            .iter()
            .map(|r| serde_json::to_string(r).expect("JSON").len())
            .sum();
        eprintln!(
            "session_store: {LOAD_RECORDS} records, {bytes} bytes of JSON ({} a record on \
             average)",
            bytes / records.len()
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = sessions
}
criterion_main!(benches);
