//! Sessions under faults that pass: an append that fails once at every point of a 20-step
//! run, a real SQLite lock held by another connection while a turn streams, a lease holder
//! stopped (SIGSTOP) past its ttl while another process takes its session over, and two
//! agents on one session with the default lease. Each time: no tool call runs twice, and
//! the conversation the agent holds is the one a resume reads from the store.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tests::stepping::{
    assert_each_ran_once, noted, registry, step_turn, stepping_model, steps_done,
};
use tool_sdk::BoxFuture;
use tool_sdk::agent::{Agent, AgentConfig, AgentError};
use tool_sdk::model::{Message, ScriptedModel, ScriptedTurn};
use tool_sdk::session::{
    NewSession, Record, SessionError, SessionInfo, SessionStore, SqliteStore, stored_conversation,
};

fn config(dir: &Path, store: impl SessionStore + 'static, model: ScriptedModel) -> AgentConfig {
    AgentConfig::new()
        .with_registry(registry())
        .with_working_dir(dir)
        .session(|s| s.with_store(store))
        .with_model(model)
        .permissions(|p| p.allow("note_step"))
}

fn sqlite(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir.join("sessions.db")).expect("the store opens")
}

/// What a resume would read: the stored session as a conversation.
async fn stored_messages(store: &dyn SessionStore, id: &str) -> Vec<Message> {
    stored_conversation(store, id).await.unwrap()
}

/// A store whose appends (one `append` or `append_all` each) go to SQLite, except the one
/// numbered `fail_at` (from 0), which fails once, storing nothing: a fault that passes.
struct FailsOnce {
    inner: SqliteStore,
    appends: AtomicUsize,
    fail_at: usize,
}

impl FailsOnce {
    fn fault(&self) -> Option<SessionError> {
        (self.appends.fetch_add(1, Ordering::SeqCst) == self.fail_at)
            .then(|| SessionError::storage("the disk is full, this once"))
    }
}

impl SessionStore for FailsOnce {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        self.inner.create(new)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.append_all(id, std::slice::from_ref(record))
    }

    fn append_all<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        match self.fault() {
            Some(error) => Box::pin(async move { Err(error) }),
            None => self.inner.append_all(id, records),
        }
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>> {
        self.inner.load(id)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
        self.inner.get(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
        self.inner.list()
    }
}

const STEPS: usize = 20;

/// Runs the stepping model's whole conversation on `store`, going on after each failed run
/// as an app would (`continue_run`), and checks after every run that the agent's
/// conversation is the stored one. Returns how many runs failed.
async fn run_to_the_end(dir: &Path, store: Arc<FailsOnce>) -> usize {
    let agent = Agent::create(config(dir, store.clone(), stepping_model(dir, STEPS)))
        .await
        .unwrap();
    let id = agent.session_id().to_owned();
    let mut outcome = agent.prompt("Note every step.").await;
    let mut failures = 0;
    loop {
        let what = format!("fault at append {}, after run {failures}", store.fail_at);
        assert_eq!(
            agent.messages().await,
            stored_messages(&*store, &id).await,
            "{what}: the agent's conversation is the stored one"
        );
        match outcome {
            Ok(result) => {
                assert_eq!(result.text, "All noted.", "{what}");
                return failures;
            }
            Err(error) => {
                failures += 1;
                assert!(failures <= 2, "{what}: the fault passed, yet: {error}");
                // As an app would: a prompt that was not stored is sent again.
                outcome = match agent.messages().await.is_empty() {
                    true => agent.prompt("Note every step.").await,
                    false => agent.continue_run().await,
                };
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_append_that_fails_once_anywhere_in_a_run_never_runs_a_call_twice() {
    // A clean run first: how many appends a 20-step run makes.
    let clean = tempfile::tempdir().unwrap();
    let store = Arc::new(FailsOnce {
        inner: sqlite(clean.path()),
        appends: AtomicUsize::new(0),
        fail_at: usize::MAX,
    });
    assert_eq!(run_to_the_end(clean.path(), store.clone()).await, 0);
    assert_each_ran_once(&noted(clean.path()), STEPS, "clean run");
    let appends = store.appends.load(Ordering::SeqCst);
    assert!(appends > 2 * STEPS, "{appends} appends");

    for fail_at in 0..appends {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let store = Arc::new(FailsOnce {
            inner: sqlite(dir),
            appends: AtomicUsize::new(0),
            fail_at,
        });
        let failures = run_to_the_end(dir, store.clone()).await;
        assert_eq!(failures, 1, "the fault at append {fail_at} ends one run");
        let noted = noted(dir);
        // A call whose result was lost is answered as one that may have partly happened:
        // the model goes on to the next step, so no step is missing either.
        assert_each_ran_once(&noted, STEPS, &format!("fault at append {fail_at}"));
    }
}

/// Holds SQLite's write lock on `db` from another connection for `hold`, once the lock is
/// taken (returned when it is).
fn lock_for(db: &Path, hold: Duration) -> std::thread::JoinHandle<()> {
    let (locked, taken) = std::sync::mpsc::channel();
    let db = db.to_path_buf();
    let holder = std::thread::spawn(move || {
        let connection = rusqlite::Connection::open(db).unwrap();
        connection.execute_batch("BEGIN EXCLUSIVE").unwrap();
        locked.send(()).unwrap();
        std::thread::sleep(hold);
        connection.execute_batch("ROLLBACK").unwrap();
    });
    taken.recv().expect("the lock is taken");
    holder
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lock_held_by_another_connection_stops_the_run_before_its_mutating_call() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path().to_path_buf();
    let db = dir.join("sessions.db");
    // Step 1's turn streams while another connection holds the file longer than a writer
    // waits: the commit of its read-only call's batch fails.
    let lock = Arc::new(std::sync::Mutex::new(None));
    let locked = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let model = {
        let (dir, db, lock) = (dir.clone(), db.clone(), lock.clone());
        ScriptedModel::new([]).with_responder(move |request| {
            if steps_done(request.messages.iter()) == 1 && !locked.swap(true, Ordering::SeqCst) {
                let holder = lock_for(&db, Duration::from_secs(7));
                *lock.lock().unwrap() = Some(holder);
            }
            step_turn(&dir, 3, request)
        })
    };
    let store = Arc::new(sqlite(&dir));
    let agent = Agent::create(config(&dir, store.clone(), model))
        .await
        .unwrap();
    let error = agent.prompt("Note every step.").await.unwrap_err();
    assert!(
        error.to_string().contains("locked") || error.to_string().contains("busy"),
        "{error}"
    );
    assert_eq!(noted(&dir), [0], "step 1's mutating call did not run");
    assert_eq!(
        agent.messages().await,
        stored_messages(&*store, agent.session_id()).await
    );
    let holder = lock.lock().unwrap().take().expect("the lock was taken");
    tokio::task::spawn_blocking(move || holder.join().unwrap())
        .await
        .unwrap();
    // The lock gone, the run goes on from what was stored: step 1 is asked for again.
    let done = agent.continue_run().await.unwrap();
    assert_eq!(done.text, "All noted.");
    assert_each_ran_once(&noted(&dir), 3, "after the lock");
    let resumed = Agent::resume(
        config(&dir, store.clone(), ScriptedModel::new([])),
        agent.session_id(),
    )
    .await;
    // The first agent still holds the session.
    assert!(
        matches!(resumed, Err(AgentError::Session(SessionError::Busy { .. }))),
        "{:?}",
        resumed.err()
    );
    assert_eq!(
        agent.messages().await,
        stored_messages(&*store, agent.session_id()).await
    );
}

// ---- leases ----

const CHILD_STAGE: &str = "TOOL_SDK_FAULTS_TEST_STAGE";
const CHILD_DIR: &str = "TOOL_SDK_FAULTS_TEST_DIR";
/// The lease the stopped child holds.
const CHILD_LEASE: Duration = Duration::from_secs(1);

/// The child's side of the lease tests. Without the environment variables (a normal test
/// run) it does nothing.
#[test]
fn child_entry() {
    let (Ok(stage), Ok(dir)) = (std::env::var(CHILD_STAGE), std::env::var(CHILD_DIR)) else {
        return;
    };
    let dir = PathBuf::from(dir);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        match stage.as_str() {
            // Asks for one turn (a mutating call), and is stopped while the model answers.
            "stalled" => {
                let marker = dir.join("asked");
                let note_dir = dir.clone();
                let model = ScriptedModel::new([]).with_responder(move |request| {
                    if steps_done(request.messages.iter()) == 0 {
                        std::fs::write(&marker, "").unwrap();
                        // The parent stops the process about here, and lets it go on once
                        // another process has taken the session over.
                        std::thread::sleep(Duration::from_millis(500));
                    }
                    step_turn(&note_dir, 1, request)
                });
                let config = config(&dir, sqlite(&dir), model)
                    .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Ttl(CHILD_LEASE)));
                let agent = Agent::create(config).await.unwrap();
                std::fs::write(dir.join("session"), agent.session_id()).unwrap();
                let outcome = agent.prompt("Note it.").await;
                std::fs::write(dir.join("outcome"), format!("{outcome:?}")).unwrap();
            }
            other => panic!("unknown stage {other}"),
        }
    });
}

fn signal(child: &std::process::Child, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill {signal}");
}

#[test]
fn a_holder_stopped_past_its_ttl_stores_and_runs_nothing_once_its_session_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture"])
        .env(CHILD_STAGE, "stalled")
        .env(CHILD_DIR, dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("child_stderr")).unwrap())
        .spawn()
        .expect("the test binary starts again");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join("asked").exists() {
        assert!(child.try_wait().unwrap().is_none(), "the child ended early");
        assert!(Instant::now() < deadline, "the child never asked the model");
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, "-STOP");
    // Stopped past its ttl: the lease lapses with no renewal.
    std::thread::sleep(CHILD_LEASE + Duration::from_millis(700));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let store = Arc::new(sqlite(dir));
        let id = std::fs::read_to_string(dir.join("session")).unwrap();
        // Another process's agent (this one) takes the session over.
        let taker = Agent::resume(
            config(dir, store.clone(), ScriptedModel::new([])).session(|s| {
                s.with_lease(tool_sdk::agent::SessionLeasing::Ttl(Duration::from_secs(
                    30,
                )))
            }),
            &id,
        )
        .await
        .expect("the lapsed lease is taken");
        let before = store.load(&id).await.unwrap();
        signal(&child, "-CONT");
        let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
            .await
            .unwrap();
        let stderr = std::fs::read_to_string(dir.join("child_stderr")).unwrap_or_default();
        assert!(status.success(), "the child ends by itself: {stderr}");
        let outcome = std::fs::read_to_string(dir.join("outcome")).unwrap();
        assert!(
            outcome.starts_with("Err("),
            "the stalled run stops: {outcome}"
        );
        assert!(
            noted(dir).is_empty(),
            "its mutating call did not run: {outcome}"
        );
        assert_eq!(
            store.load(&id).await.unwrap(),
            before,
            "the stalled holder stored nothing after the takeover: {outcome}"
        );
        drop(taker);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_take_the_session_lease_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(sqlite(dir));
    let answering = || ScriptedModel::new([ScriptedTurn::text("Done.")]);
    let first = Agent::create(config(dir, store.clone(), answering()))
        .await
        .unwrap();
    let id = first.session_id().to_owned();
    // A second agent on the same session, as a second terminal's `--continue` would be.
    let busy = Agent::resume(config(dir, store.clone(), answering()), &id)
        .await
        .expect_err("the session is held");
    let AgentError::Session(SessionError::Busy { holder, .. }) = &busy else {
        panic!("{busy:?}");
    };
    assert!(
        holder.starts_with(&format!("pid {} ", std::process::id()))
            || holder == &format!("pid {}", std::process::id()),
        "names the holder: {holder}"
    );
    assert!(
        store.load(&id).await.unwrap().is_empty(),
        "the refused agent stored nothing"
    );
    // Dropped, its session is free at once, whether or not its release arrived yet.
    drop(first);
    let started = Instant::now();
    let second = Agent::resume(config(dir, store.clone(), answering()), &id)
        .await
        .expect("the dropped agent's session is free");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(second.prompt("Go on").await.unwrap().text, "Done.");
    // Without a lease, by choice, a second agent is let in.
    let unleased = || {
        config(dir, store.clone(), answering())
            .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Off))
    };
    let third = Agent::create(unleased()).await.unwrap();
    let _fourth = Agent::resume(unleased(), third.session_id()).await.unwrap();
}
