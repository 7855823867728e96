//! Durable sessions end to end: an agent with a `SqliteStore` is killed with SIGKILL at each
//! stage of a run (in a real child process: this test binary run again), then resumed here;
//! every tool_use has exactly one tool_result, a stored result is never run again, nothing is
//! lost or duplicated. Also bad input (unknown ids, a corrupted file), `list`, forks,
//! approvals deferred in one process and answered in another, and file rewinds.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, ConfigError, StoreNeed, StoreSource};

/// How long the agent waits before it stores a read-only call's start on its own (10 ms, an
/// internal setting) if no other record of its batch took it along.
const READ_ONLY_COMMIT_DELAY: Duration = Duration::from_millis(10);
use tool_sdk::model::{
    Message, MessageContent, Model, ModelEvent, ModelRequest, ModelStream, Role, ScriptedModel,
    ScriptedTurn,
};
use tool_sdk::permission::{PermissionAnswer, PermissionQuestion};
use tool_sdk::session::{
    ForkPoint, NEVER_STARTED_MESSAGE, NewSession, Record, STOPPED_MESSAGE, SessionError,
    SessionInfo, SessionStore, SqliteStore,
};
use tool_sdk::{BoxFuture, ContentBlock, ToolRegistry, tool};

// ---- tools and models ----

/// Appends a line to `side_effect` in `dir` (a visible side effect); with `block`, then
/// marks that it is running and never returns.
#[tool(register = false)]
async fn mutate(dir: String, block: bool) -> String {
    use std::io::Write;
    let dir = PathBuf::from(dir);
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("side_effect"))
        .expect("the side-effect file opens");
    writeln!(file, "ran").expect("the side effect is written");
    drop(file);
    if block {
        std::fs::write(dir.join("in_tool"), "").expect("the marker is written");
        std::future::pending::<()>().await;
    }
    "mutated".to_owned()
}

/// Marks that it is reading, then never returns: a read-only call the process dies in. It
/// marks once its start is stored (a read-only call's start is stored with the first record
/// of its batch, or after `READ_ONLY_COMMIT_DELAY`).
#[tool(register = false, read_only)]
async fn peek(dir: String) -> String {
    tokio::time::sleep(READ_ONLY_COMMIT_DELAY * 20).await;
    std::fs::write(PathBuf::from(dir).join("peeking"), "").expect("the marker is written");
    std::future::pending::<()>().await;
    "seen".to_owned()
}

/// Streams a little text, marks that it did, then never finishes the turn.
struct HangingModel {
    marker: PathBuf,
}

impl Model for HangingModel {
    fn model_id(&self) -> &str {
        "hanging"
    }

    fn stream<'a>(&'a self, _request: &'a ModelRequest) -> ModelStream<'a> {
        let marker = self.marker.clone();
        Box::pin(hanging_stream(marker))
    }
}

fn hanging_stream(
    marker: PathBuf,
) -> impl futures::Stream<Item = Result<ModelEvent, tool_sdk::model::ModelError>> + Send {
    let first = futures::stream::once(async { Ok(ModelEvent::TextDelta("I will ans".into())) });
    let then = futures::stream::once(async move {
        std::fs::write(&marker, "").expect("the marker is written");
        std::future::pending::<()>().await;
        Ok(ModelEvent::TextDelta("never".into()))
    });
    futures::StreamExt::chain(first, then)
}

/// Appends `noted` to `side_effect` in `dir`: a mutating call that needs no approval.
#[tool(register = false)]
async fn note(dir: String) -> String {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PathBuf::from(dir).join("side_effect"))
        .expect("the side-effect file opens");
    writeln!(file, "noted").expect("the side effect is written");
    "noted".to_owned()
}

/// Reads nothing, slowly: a read-only call that outlasts `READ_ONLY_COMMIT_DELAY` by far.
#[tool(register = false, read_only)]
async fn doze() -> String {
    tokio::time::sleep(READ_ONLY_COMMIT_DELAY * 30).await;
    "rested".to_owned()
}

/// Reads nothing, quickly: a read-only call that needs no approval.
#[tool(register = false, read_only)]
async fn look() -> String {
    "looked".to_owned()
}

fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(MutateTool)).unwrap();
    registry.register(Arc::new(PeekTool)).unwrap();
    registry.register(Arc::new(NoteTool)).unwrap();
    registry.register(Arc::new(LookTool)).unwrap();
    registry.register(Arc::new(DozeTool)).unwrap();
    Arc::new(registry)
}

fn config(dir: &Path, store: impl SessionStore + 'static) -> AgentConfig {
    AgentConfig::new()
        .with_registry(registry())
        .with_working_dir(dir)
        .session(|s| s.with_store(store))
        .permissions(|p| p.allow("mutate"))
}

fn store(dir: &Path) -> SqliteStore {
    SqliteStore::open(dir.join("sessions.db")).expect("the store opens")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn text(message: &Message) -> String {
    message.text()
}

fn result(id: &str, text: &str, is_error: bool) -> MessageContent {
    MessageContent::ToolResult {
        tool_use_id: id.into(),
        content: vec![ContentBlock::text(text)],
        is_error,
    }
}

/// Every tool_use answered exactly once, by the next message, and no two messages of the same
/// role in a row.
fn assert_well_formed(messages: &[Message]) {
    for pair in messages.windows(2) {
        assert_ne!(
            pair[0].role, pair[1].role,
            "two {} messages in a row",
            pair[0].role
        );
    }
    for (index, message) in messages.iter().enumerate() {
        let calls: Vec<_> = message.tool_uses().map(|call| call.id.clone()).collect();
        if calls.is_empty() {
            continue;
        }
        let next = messages.get(index + 1).expect("tool calls are answered");
        let answered: Vec<_> = next
            .content
            .iter()
            .filter_map(|block| match block {
                MessageContent::ToolResult { tool_use_id, .. } => Some(tool_use_id.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(answered, calls, "each call answered once, in order");
    }
}

fn side_effects(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("side_effect"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

async fn only_session(store: &SqliteStore) -> SessionInfo {
    let sessions = store.list().await.unwrap();
    assert_eq!(sessions.len(), 1, "one session: {sessions:?}");
    sessions.into_iter().next().unwrap()
}

// ---- the child process ----

const CHILD_STAGE: &str = "TOOL_SDK_SESSION_TEST_STAGE";
const CHILD_DIR: &str = "TOOL_SDK_SESSION_TEST_DIR";
/// The lease the child takes at stage `lease`.
const CHILD_LEASE: Duration = Duration::from_secs(3);

/// The child's side of the SIGKILL tests: runs an agent until the parent kills it. Without
/// the environment variables (a normal test run) it does nothing.
#[test]
fn child_entry() {
    let (Ok(stage), Ok(dir)) = (std::env::var(CHILD_STAGE), std::env::var(CHILD_DIR)) else {
        return;
    };
    let dir = PathBuf::from(dir);
    if stage == "continue" {
        // Continues a run whose approvals were answered, until the parent kills it.
        runtime().block_on(async {
            let store = store(&dir);
            let id = only_session(&store).await.id;
            let config = deferring_config(&dir, ScriptedModel::new([]));
            let agent = Agent::resume(config, &id)
                .await
                .expect("the session resumes");
            let outcome = agent.continue_run().await;
            panic!("the run should have been killed, it ended: {outcome:?}");
        });
        return;
    }
    if let Some(block) = stage.strip_prefix("deferred").map(|rest| rest == "_block") {
        // Not killed: the run stops by itself, waiting for an approval, and the process ends.
        runtime().block_on(async {
            let agent = Agent::create(deferring_config(&dir, deferred_turn(&dir, block)))
                .await
                .expect("the agent is built");
            let outcome = agent.prompt("Change the file").await;
            let Err(AgentError::ApprovalsPending(pending)) = outcome else {
                panic!("the run should wait for an approval, it ended: {outcome:?}");
            };
            let ids: Vec<_> = pending.iter().map(|p| p.call_id.as_str()).collect();
            std::fs::write(dir.join("stopped"), ids.join(",")).expect("the marker is written");
        });
        return;
    }
    runtime().block_on(async {
        let model: Arc<dyn Model> = match stage.as_str() {
            "mid_tool" | "lease" => {
                Arc::new(ScriptedModel::new([ScriptedTurn::tool_call_with_id(
                    "call_1",
                    "mutate",
                    json!({"dir": dir, "block": true}),
                )]))
            }
            "between" => {
                let marker = dir.join("second_request");
                Arc::new(
                    ScriptedModel::new([ScriptedTurn::tool_call_with_id(
                        "call_1",
                        "mutate",
                        json!({"dir": dir, "block": false}),
                    )])
                    .with_responder(move |_| {
                        // The second request: the tool's result must be stored by now.
                        std::fs::write(&marker, "").expect("the marker is written");
                        loop {
                            std::thread::sleep(Duration::from_secs(60));
                        }
                    }),
                )
            }
            // A read-only call, then a mutating one that waits for it (they do not overlap).
            "read_only" => Arc::new(ScriptedModel::new([ScriptedTurn::tool_call_with_id(
                "call_1",
                "peek",
                json!({"dir": dir}),
            )
            .with_tool_call_id("call_2", "mutate", json!({"dir": dir, "block": false}))])),
            "approval" => Arc::new(ScriptedModel::new([ScriptedTurn::tool_call_with_id(
                "call_1",
                "mutate",
                json!({"dir": dir, "block": false}),
            )])),
            "mid_stream" => Arc::new(HangingModel {
                marker: dir.join("mid_stream"),
            }),
            other => panic!("unknown stage {other}"),
        };
        let mut config = config(&dir, store(&dir)).with_model(model);
        if stage == "lease" {
            config =
                config.session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Ttl(CHILD_LEASE)));
        }
        if stage == "approval" {
            // The user never answers: the question is open when the process dies.
            let marker = dir.join("asked");
            config = config.permissions(|p| {
                p.ask("mutate").with_handler(move |_: &PermissionQuestion| {
                    std::fs::write(&marker, "").expect("the marker is written");
                    loop {
                        std::thread::sleep(Duration::from_secs(60));
                    }
                })
            });
        }
        let agent = Agent::create(config).await.expect("the agent is built");
        let outcome = agent.prompt("Change the file").await;
        panic!("the run should have been killed, it ended: {outcome:?}");
    });
}

/// Runs the child at `stage`, waits for `marker`, kills it with SIGKILL.
fn run_child_until(dir: &Path, stage: &str, marker: &str) {
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture"])
        .env(CHILD_STAGE, stage)
        .env(CHILD_DIR, dir)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("child_stderr")).unwrap())
        .spawn()
        .expect("the test binary starts again");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.join(marker).exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = std::fs::read_to_string(dir.join("child_stderr")).unwrap_or_default();
            panic!("the child ended before `{marker}` ({status}): {stderr}");
        }
        assert!(
            Instant::now() < deadline,
            "the child never reached `{marker}`"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // `Child::kill` is SIGKILL on Unix: no destructor, no flush, nothing runs.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "the child was killed");
}

/// Runs the child at `stage` to its end, which must be a success.
fn run_child_to_end(dir: &Path, stage: &str) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_entry", "--nocapture"])
        .env(CHILD_STAGE, stage)
        .env(CHILD_DIR, dir)
        .output()
        .expect("the test binary starts again");
    assert!(
        output.status.success(),
        "the child failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

// ---- SIGKILL at each stage ----

#[test]
fn killed_mid_tool_the_call_is_sealed_as_maybe_done_and_never_rerun() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_until(dir, "mid_tool", "in_tool");
    assert_eq!(side_effects(dir), 1, "the tool had done its side effect");

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let before = store.load(&id).await.unwrap();
        assert_eq!(
            before.iter().map(Record::kind).collect::<Vec<_>>(),
            ["user_message", "model_turn", "usage", "tool_started"]
        );

        let model = ScriptedModel::new([ScriptedTurn::text("I will check the file first.")]);
        let agent = Agent::resume(config(dir, store.clone()).with_model(model.clone()), &id)
            .await
            .unwrap();
        assert_eq!(agent.session_id(), id);
        let messages = agent.messages().await;
        assert_eq!(messages.len(), 3);
        assert_eq!(text(&messages[0]), "Change the file");
        assert_eq!(messages[1].tool_uses().count(), 1);
        assert_eq!(
            messages[2].content,
            vec![result("call_1", STOPPED_MESSAGE, true)]
        );
        assert_well_formed(&messages);

        // The seal is stored once; a second resume sees the same history and adds nothing.
        let sealed = store.load(&id).await.unwrap();
        assert_eq!(sealed.len(), before.len() + 1);
        // A reader beside the agent that holds the session, so without a lease.
        let again = Agent::resume(
            config(dir, store.clone())
                .with_model(model.clone())
                .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Off)),
            &id,
        )
        .await
        .unwrap();
        assert_eq!(again.messages().await, messages);
        assert_eq!(store.load(&id).await.unwrap().len(), sealed.len());

        // A new prompt joins the sealed results' message: no two user messages in a row.
        let outcome = agent.prompt("Did it work?").await.unwrap();
        assert_eq!(outcome.text, "I will check the file first.");
        let sent = &model.requests()[0].messages;
        assert_eq!(sent.len(), 3);
        assert_eq!(
            sent[2].content,
            vec![
                result("call_1", STOPPED_MESSAGE, true),
                MessageContent::Text {
                    text: "Did it work?".into()
                }
            ]
        );
        assert_well_formed(&outcome.messages.to_vec());
        assert_eq!(side_effects(dir), 1, "the call was not run again");

        // What the resumed run did is stored too.
        drop(agent);
        let third = Agent::resume(config(dir, store.clone()).with_model(model), &id)
            .await
            .unwrap();
        assert_eq!(third.messages().await, outcome.messages);
    });
}

#[test]
fn killed_before_the_next_request_the_stored_result_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_until(dir, "between", "second_request");
    assert_eq!(side_effects(dir), 1);

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let records = store.load(&id).await.unwrap();
        assert_eq!(
            records.iter().map(Record::kind).collect::<Vec<_>>(),
            [
                "user_message",
                "model_turn",
                "usage",
                "tool_started",
                "tool_result"
            ],
            "the tool result was stored before the second request was sent"
        );

        let model = ScriptedModel::new([ScriptedTurn::text("The file is changed.")]);
        let agent = Agent::resume(config(dir, store.clone()).with_model(model.clone()), &id)
            .await
            .unwrap();
        let messages = agent.messages().await;
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[2].content,
            vec![result("call_1", "mutated", false)]
        );
        assert_eq!(
            store.load(&id).await.unwrap().len(),
            records.len(),
            "no seal"
        );

        // The answer the crash cut off is asked for again, from the same history.
        let outcome = agent.continue_run().await.unwrap();
        assert_eq!(outcome.text, "The file is changed.");
        assert_eq!(model.requests().len(), 1);
        assert_eq!(model.requests()[0].messages, messages);
        assert_eq!(outcome.messages.len(), 4);
        assert_well_formed(&outcome.messages.to_vec());
        assert_eq!(side_effects(dir), 1, "the stored call was not run again");

        // Nothing left to continue now.
        assert!(matches!(
            agent.continue_run().await,
            Err(AgentError::NothingToContinue)
        ));
    });
}

#[test]
fn killed_mid_stream_the_partial_turn_is_dropped_and_asked_again() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_until(dir, "mid_stream", "mid_stream");

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let model = ScriptedModel::new([ScriptedTurn::text("I will answer in full.")]);
        let agent = Agent::resume(config(dir, store.clone()).with_model(model.clone()), &id)
            .await
            .unwrap();
        assert_eq!(
            agent.messages().await,
            vec![Message::user("Change the file")]
        );

        let outcome = agent.continue_run().await.unwrap();
        assert_eq!(outcome.text, "I will answer in full.");
        assert_eq!(
            model.requests()[0].messages,
            vec![Message::user("Change the file")]
        );
        assert_eq!(
            outcome.messages,
            vec![
                Message::user("Change the file"),
                Message::assistant("I will answer in full.")
            ]
        );
        let kinds = store
            .load(&id)
            .await
            .unwrap()
            .iter()
            .map(Record::kind)
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(kinds, "user_message,model_turn,usage");
    });
}

#[test]
fn killed_in_a_read_only_call_it_and_the_call_after_it_are_sealed() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_until(dir, "read_only", "peeking");

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let agent = Agent::resume(
            config(dir, store.clone()).with_model(ScriptedModel::new([])),
            &id,
        )
        .await
        .unwrap();
        let messages = agent.messages().await;
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[2].content,
            vec![
                result("call_1", STOPPED_MESSAGE, true),
                result("call_2", NEVER_STARTED_MESSAGE, true)
            ]
        );
        assert_well_formed(&messages);
        assert_eq!(side_effects(dir), 0, "the mutating call never ran");
    });
}

#[test]
fn killed_while_asking_for_permission_the_call_is_sealed_as_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_until(dir, "approval", "asked");

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let kinds: Vec<_> = store
            .load(&id)
            .await
            .unwrap()
            .iter()
            .map(Record::kind)
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message",
                "model_turn",
                "usage",
                "tool_started",
                "permission_asked"
            ]
        );
        let agent = Agent::resume(
            config(dir, store.clone()).with_model(ScriptedModel::new([])),
            &id,
        )
        .await
        .unwrap();
        let messages = agent.messages().await;
        assert_eq!(
            messages[2].content,
            vec![result("call_1", NEVER_STARTED_MESSAGE, true)]
        );
        assert_eq!(side_effects(dir), 0, "the call never ran");
    });
}

// ---- in one process ----

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_stored_as_it_happens_and_resumes_whole() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(store(dir));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "mutate", json!({"dir": dir, "block": false})),
        ScriptedTurn::text("Done."),
    ]);
    let agent = Agent::create(config(dir, store.clone()).with_model(model))
        .await
        .unwrap();
    let outcome = agent.prompt("Change the file").await.unwrap();
    assert_eq!(outcome.text, "Done.");

    let records = store.load(agent.session_id()).await.unwrap();
    let kinds: Vec<_> = records.iter().map(Record::kind).collect();
    assert_eq!(
        kinds,
        [
            "user_message",
            "model_turn",
            "usage",
            "tool_started",
            "tool_result",
            "model_turn",
            "usage"
        ]
    );
    let info = store.get(agent.session_id()).await.unwrap();
    assert_eq!(info.title, "Change the file");
    assert_eq!(info.working_dir, dir);

    // The agent is done with the session (as its process would be), letting its lease go.
    let id = agent.session_id().to_owned();
    drop(agent);
    let resumed = Agent::resume(
        config(dir, store.clone()).with_model(ScriptedModel::new([])),
        &id,
    )
    .await
    .unwrap();
    assert_eq!(resumed.messages().await, outcome.messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_questions_and_answers_are_stored() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(store(dir));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "mutate", json!({"dir": dir, "block": false})),
        ScriptedTurn::text("Understood."),
    ]);
    let config = config(dir, store.clone())
        .with_model(model)
        .permissions(|p| {
            p.ask("mutate")
                .with_handler(|_: &PermissionQuestion| PermissionAnswer::Deny("not today".into()))
        });
    let agent = Agent::create(config).await.unwrap();
    agent.prompt("Change the file").await.unwrap();
    assert_eq!(side_effects(dir), 0);

    let records = store.load(agent.session_id()).await.unwrap();
    let asked = records
        .iter()
        .position(|r| matches!(r, Record::PermissionAsked { id, tool, .. } if id == "call_1" && tool == "mutate"))
        .expect("the question is stored");
    assert_eq!(
        records[asked + 1],
        Record::PermissionAnswered {
            id: "call_1".into(),
            allowed: false,
            always: false,
            message: Some("not today".into()),
        }
    );
    assert!(matches!(
        &records[asked + 2],
        Record::ToolResult {
            block: MessageContent::ToolResult { is_error: true, .. }
        }
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_truncated_file_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    {
        let store = SqliteStore::open(&path).unwrap();
        for n in 0..20 {
            let session = store.create(NewSession::new("/work")).await.unwrap();
            for _ in 0..20 {
                let long = Message::user(format!("prompt {n} {}", "x".repeat(2000)));
                store
                    .append(&session.id, &Record::user(long))
                    .await
                    .unwrap();
            }
        }
    }
    // The last connection closed, so everything is in the main file; cut most of it off.
    let bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 100_000, "{}", bytes.len());
    std::fs::write(&path, &bytes[..bytes.len() / 3]).unwrap();
    let _ = std::fs::remove_file(format!("{}-wal", path.display()));

    let outcome = match SqliteStore::open(&path) {
        Err(error) => Err(error),
        Ok(store) => match store.list().await {
            Err(error) => Err(error),
            Ok(sessions) => {
                let mut outcome = Ok(());
                for session in sessions {
                    if let Err(error) = store.load(&session.id).await {
                        outcome = Err(error);
                        break;
                    }
                }
                outcome
            }
        },
    };
    let error = outcome.expect_err("a truncated file is found out");
    assert!(
        matches!(&error, SessionError::Corrupt { path: p, .. } if *p == path),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_session_is_a_clear_error_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(store(dir));
    let model = ScriptedModel::new([ScriptedTurn::text("Hi.")]);
    let agent = Agent::create(config(dir, store.clone()).with_model(model))
        .await
        .unwrap();
    agent.prompt("Hello").await.unwrap();
    let records = store.load(agent.session_id()).await.unwrap();

    let error = Agent::resume(
        config(dir, store.clone()).with_model(ScriptedModel::new([])),
        "session-nope",
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Session(SessionError::UnknownSession { id }) if id == "session-nope"
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains("no session `session-nope`"),
        "{error}"
    );
    let fork = Agent::fork(
        config(dir, store.clone()).with_model(ScriptedModel::new([])),
        "session-nope",
        0,
    )
    .await;
    assert!(matches!(
        fork,
        Err(AgentError::Session(SessionError::UnknownSession { .. }))
    ));

    assert_eq!(store.list().await.unwrap().len(), 1, "no session was made");
    assert_eq!(store.load(agent.session_id()).await.unwrap(), records);

    // Without a store there is nothing to resume, and the error says how to set one.
    let error = Agent::resume(
        AgentConfig::new().with_model(ScriptedModel::new([])),
        agent.session_id(),
    )
    .await
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains(".session(|s| s.with_store(...))"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_file_is_refused_by_name_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let garbage: Vec<u8> = (0..16_384u32).map(|i| (i * 31 % 251) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();

    let error = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(&error, SessionError::Corrupt { path: p, .. } if *p == path));
    let message = error.to_string();
    assert!(message.contains(&path.display().to_string()), "{message}");
    assert!(message.contains("not a session database"), "{message}");

    // The same through a config file's `[session] store`.
    let file = dir.path().join("agent.toml");
    std::fs::write(
        &file,
        format!("[session]\nstore = \"sqlite:{}\"\n", path.display()),
    )
    .unwrap();
    let config = AgentConfig::from_file(&file).unwrap();
    assert_eq!(
        match &config.session.store {
            Some(StoreSource::Spec(spec)) => Some(spec.as_str()),
            _ => None,
        },
        Some(format!("sqlite:{}", path.display()).as_str())
    );
    let error = Agent::create(
        config
            .with_model(ScriptedModel::new([]))
            .with_registry(registry())
            .with_working_dir(dir.path()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error, AgentError::Session(SessionError::Corrupt { .. })),
        "{error}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        garbage,
        "the file is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_names_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("from-file.db");
    let file = dir.path().join("agent.toml");
    std::fs::write(
        &file,
        format!(
            "[session]\nstore = \"sqlite:{}\"\nlease_secs = 30\n",
            path.display()
        ),
    )
    .unwrap();
    let config = || {
        AgentConfig::from_file(&file)
            .unwrap()
            .with_model(ScriptedModel::new([ScriptedTurn::text("Hi.")]))
            .with_registry(registry())
            .with_working_dir(dir.path())
    };
    let agent = Agent::create(config()).await.unwrap();
    agent.prompt("Hello").await.unwrap();
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(only_session(&store).await.id, agent.session_id());
    // `lease_secs` took the session's lease.
    let busy = Agent::resume(config(), agent.session_id()).await.err();
    assert!(
        matches!(busy, Some(AgentError::Session(SessionError::Busy { .. }))),
        "{busy:?}"
    );

    let mut unknown = AgentConfig::new()
        .with_model(ScriptedModel::new([]))
        .with_registry(registry());
    unknown.session.store = Some("redis://nowhere".into());
    let error = Agent::create(unknown).await.unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Session(SessionError::UnknownStore(store)) if store == "redis://nowhere"
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("sqlite:PATH"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_is_newest_first() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(store(dir));
    let mut agents = Vec::new();
    for name in ["first", "second", "third"] {
        let model = ScriptedModel::new([ScriptedTurn::text("ok"), ScriptedTurn::text("ok")]);
        let agent = Agent::create(config(dir, store.clone()).with_model(model))
            .await
            .unwrap();
        agent.prompt(format!("the {name} one")).await.unwrap();
        agents.push(agent);
    }
    let titles = |sessions: Vec<SessionInfo>| -> Vec<String> {
        sessions.into_iter().map(|s| s.title).collect()
    };
    assert_eq!(
        titles(store.list().await.unwrap()),
        ["the third one", "the second one", "the first one"]
    );
    // Talking to the first again makes it the newest.
    agents[0].prompt("again").await.unwrap();
    assert_eq!(
        titles(store.list().await.unwrap()),
        ["the first one", "the third one", "the second one"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_shares_the_history_up_to_its_point_and_goes_its_own_way() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(store(dir));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "mutate", json!({"dir": dir, "block": false})),
        ScriptedTurn::text("one"),
        ScriptedTurn::text("two"),
    ]);
    let source = Agent::create(config(dir, store.clone()).with_model(model))
        .await
        .unwrap();
    source.prompt("first").await.unwrap();
    source.prompt("second").await.unwrap();
    let original = source.messages().await;
    assert_eq!(original.len(), 6);

    // Keep the first prompt, the tool call and its result.
    let model = ScriptedModel::new([ScriptedTurn::text("forked answer")]);
    let fork = Agent::fork(
        config(dir, store.clone()).with_model(model.clone()),
        source.session_id(),
        3,
    )
    .await
    .unwrap();
    assert_ne!(fork.session_id(), source.session_id());
    assert_eq!(fork.messages().await, original[..3]);
    let info = store.get(fork.session_id()).await.unwrap();
    assert_eq!(
        info.parent,
        Some(ForkPoint {
            session: source.session_id().to_owned(),
            at: 3
        })
    );
    assert_eq!(info.title, "first");

    let outcome = fork.prompt("other way").await.unwrap();
    assert_eq!(outcome.text, "forked answer");
    assert_well_formed(&outcome.messages.to_vec());
    assert_eq!(side_effects(dir), 1, "forking ran nothing");

    // Independent after the fork: neither sees the other's new messages, in memory or stored.
    assert_eq!(source.messages().await, original);
    // Readers beside the agents that hold the sessions, so without a lease.
    let reopened = Agent::resume(
        config(dir, store.clone())
            .with_model(ScriptedModel::new([]))
            .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Off)),
        source.session_id(),
    )
    .await
    .unwrap();
    assert_eq!(reopened.messages().await, original);
    let refork = Agent::resume(
        config(dir, store.clone())
            .with_model(ScriptedModel::new([]))
            .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Off)),
        fork.session_id(),
    )
    .await
    .unwrap();
    assert_eq!(refork.messages().await, outcome.messages);

    // Forking between a call and its result answers the call as not run.
    let cut = Agent::fork(
        config(dir, store.clone()).with_model(ScriptedModel::new([])),
        source.session_id(),
        2,
    )
    .await
    .unwrap();
    let messages = cut.messages().await;
    assert_eq!(messages.len(), 3);
    assert_eq!(
        messages[2].content,
        vec![result("call_1", NEVER_STARTED_MESSAGE, true)]
    );

    // Past the end is an error.
    let error = Agent::fork(
        config(dir, store.clone()).with_model(ScriptedModel::new([])),
        source.session_id(),
        7,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Session(SessionError::ForkPoint { id, at: 7, len: 6 })
                if id == source.session_id()
        ),
        "{error:?}"
    );
}

/// A store that takes `left` appends, then fails every one.
struct FailingStore {
    inner: SqliteStore,
    left: std::sync::atomic::AtomicUsize,
}

impl SessionStore for FailingStore {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        self.inner.create(new)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        use std::sync::atomic::Ordering;
        let left = self.left.load(Ordering::SeqCst);
        if left == 0 {
            return Box::pin(async { Err(SessionError::storage("the disk is full")) });
        }
        self.left.store(left - 1, Ordering::SeqCst);
        self.inner.append(id, record)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_that_cannot_be_stored_ends_the_run_and_the_call_does_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // The prompt, the model turn and its usage are stored; the call's start is not.
    let store = FailingStore {
        inner: store(dir),
        left: 3.into(),
    };
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_1", "mutate", json!({"dir": dir, "block": false})),
        ScriptedTurn::text("never asked"),
    ]);
    let agent = Agent::create(config(dir, store).with_model(model.clone()))
        .await
        .unwrap();
    let error = agent.prompt("Change the file").await.unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Session(SessionError::Storage { detail, .. })
                if detail == "the disk is full"
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("the disk is full"), "{error}");
    assert_eq!(
        side_effects(dir),
        0,
        "a call whose start is not stored does not run"
    );
    assert_eq!(model.requests().len(), 1, "no request after the failure");
    let messages = agent.messages().await;
    assert_well_formed(&messages);
    assert_eq!(messages.last().map(|m| m.role), Some(Role::User));
}

/// A store that notes how many records each commit (`append` or `append_all`) holds.
struct CountingStore {
    inner: SqliteStore,
    commits: std::sync::Mutex<Vec<usize>>,
}

impl SessionStore for CountingStore {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        self.inner.create(new)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.commits.lock().unwrap().push(1);
        self.inner.append(id, record)
    }

    fn append_all<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.commits.lock().unwrap().push(records.len());
        self.inner.append_all(id, records)
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_is_stored_in_as_few_commits_as_its_calls_allow() {
    // (tool, the records of each commit of a run: the prompt, the call's turn, the answer).
    let cases = [
        // A quick read-only call: its turn, usage, start and result in one commit.
        ("look", vec![1, 4, 2]),
        // A mutating call: its start is stored (with the turn) before it runs.
        ("note", vec![1, 3, 1, 2]),
        // A slow read-only call: its start is stored while it runs.
        ("doze", vec![1, 3, 1, 2]),
    ];
    for (tool, commits) in cases {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        let store = Arc::new(CountingStore {
            inner: store(dir),
            commits: Default::default(),
        });
        let model = ScriptedModel::new([
            ScriptedTurn::tool_call_with_id(
                "call_1",
                tool,
                match tool {
                    "note" => json!({"dir": dir}),
                    _ => json!({}),
                },
            ),
            ScriptedTurn::text("done"),
        ]);
        let agent = Agent::create(
            config(dir, store.clone())
                .with_model(model)
                .permissions(|p| p.allow("note")),
        )
        .await
        .unwrap();
        let outcome = agent.prompt("go").await.unwrap();
        assert_eq!(outcome.text, "done", "{tool}");
        assert_eq!(*store.commits.lock().unwrap(), commits, "{tool}");
        let kinds: Vec<_> = store
            .load(agent.session_id())
            .await
            .unwrap()
            .iter()
            .map(Record::kind)
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message",
                "model_turn",
                "usage",
                "tool_started",
                "tool_result",
                "model_turn",
                "usage"
            ],
            "{tool}"
        );
    }
}

// ---- one process at a time ----

/// Resumes `id` with a lease, retrying while it is busy, for up to `patience`.
async fn resume_when_free(
    config: impl Fn() -> AgentConfig,
    id: &str,
    patience: Duration,
) -> Result<Agent, AgentError> {
    let deadline = Instant::now() + patience;
    loop {
        match Agent::resume(config(), id).await {
            Err(AgentError::Session(SessionError::Busy { .. })) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => return other,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_is_run_by_one_agent_at_a_time() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let store = Arc::new(store(dir));
    let leased = || {
        config(dir, store.clone())
            .with_model(ScriptedModel::new([ScriptedTurn::text("Done.")]))
            .session(|s| {
                s.with_lease(tool_sdk::agent::SessionLeasing::Ttl(Duration::from_millis(
                    900,
                )))
            })
    };
    let first = Agent::create(leased()).await.unwrap();
    let id = first.session_id().to_owned();
    // Renewed while it lives: still busy well past one ttl.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let busy = Agent::resume(leased(), &id).await.expect_err("busy");
    let message = busy.to_string();
    assert!(
        matches!(busy, AgentError::Session(SessionError::Busy { .. })),
        "{busy:?}"
    );
    assert!(
        message.contains(&format!("session `{id}` is busy")),
        "{message}"
    );
    assert!(message.contains("pid "), "names the holder: {message}");
    // Nothing was stored by the refused agent.
    assert!(store.load(&id).await.unwrap().is_empty());

    // Dropping the agent releases the session; it is taken at once, not after the ttl.
    drop(first);
    let started = Instant::now();
    let second = resume_when_free(leased, &id, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "released, not expired"
    );
    assert_eq!(second.prompt("Go on").await.unwrap().text, "Done.");

    // A store without leases cannot promise this: an error, not a silent pass.
    let error = Agent::create(
        config(
            dir,
            FailingStore {
                inner: self::store(dir),
                left: usize::MAX.into(),
            },
        )
        .with_model(ScriptedModel::new([]))
        .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Ttl(Duration::from_secs(1)))),
    )
    .await
    .expect_err("refused");
    assert!(error.to_string().contains("has no leases"), "{error}");
}

#[test]
fn a_killed_processs_lease_is_taken_over_at_once_on_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_until(dir, "lease", "in_tool");
    let killed_at = Instant::now();
    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let leased = || {
            config(dir, store.clone())
                .with_model(ScriptedModel::new([ScriptedTurn::text("Checked.")]))
                .session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Ttl(CHILD_LEASE)))
        };
        // The holder was a process of this host that no longer exists: its lease, still
        // live by its ttl, is not waited out.
        let agent = Agent::resume(leased(), &id).await.unwrap();
        assert!(
            killed_at.elapsed() < CHILD_LEASE,
            "taken before the dead process's lease ran out"
        );
        let messages = agent.messages().await;
        assert_eq!(
            messages.last().unwrap().content,
            vec![result("call_1", STOPPED_MESSAGE, true)]
        );
        assert_eq!(side_effects(dir), 1);
    });
}

// ---- deferred approvals ----

/// One turn: a read-only call, a call that needs approval (which blocks forever once it has
/// done its side effect, with `block`), a mutating call that does not need approval (it must
/// wait for the one before it).
fn deferred_turn(dir: &Path, block: bool) -> ScriptedModel {
    ScriptedModel::new(
        [ScriptedTurn::tool_call_with_id("call_0", "look", json!({}))
            .with_tool_call_id("call_1", "mutate", json!({"dir": dir, "block": block}))
            .with_tool_call_id("call_2", "note", json!({"dir": dir}))],
    )
}

fn deferring_config(dir: &Path, model: ScriptedModel) -> AgentConfig {
    config(dir, store(dir))
        .with_model(model)
        .permissions(|p| p.ask("mutate").allow("note"))
        .session(|s| s.with_deferred_approvals())
}

fn lines(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("side_effect"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_deferred_approval_is_answered_by_another_process_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_to_end(dir, "deferred");
    assert_eq!(
        std::fs::read_to_string(dir.join("stopped")).unwrap(),
        "call_1"
    );
    // The call waiting, and the mutating call behind it, did not run.
    assert!(lines(dir).is_empty());

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let before = store.load(&id).await.unwrap();
        let started = |records: &[Record], call: &str| {
            records
                .iter()
                .filter(|r| matches!(r, Record::ToolStarted { id, .. } if id == call))
                .count()
        };
        // The read-only call ran and its result is stored; the one behind the question did
        // not start.
        assert_eq!(started(&before, "call_0"), 1);
        assert_eq!(started(&before, "call_2"), 0);
        assert!(before.contains(&Record::ApprovalDeferred {
            id: "call_1".into()
        }));
        let model = ScriptedModel::new([ScriptedTurn::text("Changed and noted.")]);
        let resumed_config = || {
            config(dir, store.clone())
                .with_model(model.clone())
                .permissions(|p| p.ask("mutate").allow("note"))
                .session(|s| s.with_deferred_approvals())
        };
        let agent = Agent::resume(resumed_config(), &id).await.unwrap();
        // Resuming does not seal the waiting calls, nor store anything.
        assert_eq!(store.load(&id).await.unwrap(), before);
        let messages = agent.messages().await;
        assert_eq!(messages.len(), 2, "the turn waits, unanswered");
        assert_eq!(messages[1].tool_uses().count(), 3);

        let pending = agent.pending_approvals().await.unwrap();
        assert_eq!(pending.len(), 1);
        assert_eq!(pending[0].call_id, "call_1");
        assert_eq!(pending[0].tool, "mutate");
        assert_eq!(pending[0].input["block"], json!(false));
        assert_eq!(
            tool_sdk::session::pending_approvals(&*store, &id)
                .await
                .unwrap(),
            pending
        );

        // Nothing runs while it waits.
        let waiting = agent.continue_run().await;
        assert!(
            matches!(&waiting, Err(AgentError::ApprovalsPending(p)) if p == &pending),
            "{waiting:?}"
        );
        let prompted = agent.prompt("Anything else?").await;
        assert!(matches!(prompted, Err(AgentError::ApprovalsPending(_))));
        assert!(lines(dir).is_empty());
        assert!(model.requests().is_empty());

        // An id that waits for nothing is refused by name, and nothing is stored.
        let unknown = agent
            .answer_approval("call_9", PermissionAnswer::Allow)
            .await
            .unwrap_err();
        assert!(
            matches!(
                &unknown,
                AgentError::Session(SessionError::NoPendingApproval { session, call, pending })
                    if *session == id && call == "call_9" && *pending == ["call_1"]
            ),
            "{unknown:?}"
        );
        assert!(unknown.to_string().contains("call_9"), "{unknown}");
        assert_eq!(store.load(&id).await.unwrap(), before);

        agent
            .answer_approval("call_1", PermissionAnswer::Allow)
            .await
            .unwrap();
        assert!(agent.pending_approvals().await.unwrap().is_empty());
        // Answered once: a second answer is refused.
        assert!(matches!(
            agent
                .answer_approval("call_1", PermissionAnswer::Allow)
                .await,
            Err(AgentError::Session(SessionError::NoPendingApproval { .. }))
        ));

        let outcome = agent.continue_run().await.unwrap();
        assert_eq!(outcome.text, "Changed and noted.");
        // The approved call ran once, then the call behind it: in call order.
        assert_eq!(lines(dir), ["ran", "noted"]);
        assert_well_formed(&outcome.messages.to_vec());
        let sent = &model.requests()[0].messages;
        assert_eq!(sent.len(), 3);
        assert_eq!(
            sent[2].content,
            vec![
                result("call_0", "looked", false),
                result("call_1", "mutated", false),
                result("call_2", "noted", false),
            ]
        );

        // Only the calls without a stored result ran: call_0 did not run again.
        let after = store.load(&id).await.unwrap();
        assert_eq!(started(&after, "call_0"), 1);
        assert_eq!(started(&after, "call_2"), 1);

        // Stored whole: a later resume sees the same history and runs nothing again.
        let again = Agent::resume(
            resumed_config().session(|s| s.with_lease(tool_sdk::agent::SessionLeasing::Off)),
            &id,
        )
        .await
        .unwrap();
        assert_eq!(again.messages().await, outcome.messages);
        assert!(again.pending_approvals().await.unwrap().is_empty());
        assert_eq!(lines(dir), ["ran", "noted"]);
    });
}

#[test]
fn killed_while_an_approved_call_runs_it_is_sealed_and_the_calls_behind_it_still_run() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    run_child_to_end(dir, "deferred_block");
    runtime().block_on(async {
        let store = store(dir);
        let id = only_session(&store).await.id;
        tool_sdk::session::answer_approval(&store, &id, "call_1", PermissionAnswer::Allow)
            .await
            .unwrap();
    });
    run_child_until(dir, "continue", "in_tool");
    assert_eq!(
        lines(dir),
        ["ran"],
        "the approved call had done its side effect"
    );

    runtime().block_on(async {
        let store = Arc::new(store(dir));
        let id = only_session(&store).await.id;
        let model = ScriptedModel::new([ScriptedTurn::text("Noted.")]);
        let config = config(dir, store.clone())
            .with_model(model.clone())
            .permissions(|p| p.ask("mutate").allow("note"))
            .session(|s| s.with_deferred_approvals());
        let agent = Agent::resume(config, &id).await.unwrap();
        assert!(agent.pending_approvals().await.unwrap().is_empty());
        let outcome = agent.continue_run().await.unwrap();
        assert_eq!(outcome.text, "Noted.");
        // Not run again; the call behind it ran once.
        assert_eq!(lines(dir), ["ran", "noted"]);
        assert_eq!(
            model.requests()[0].messages[2].content,
            vec![
                result("call_0", "looked", false),
                result("call_1", STOPPED_MESSAGE, true),
                result("call_2", "noted", false),
            ]
        );
        assert_well_formed(&outcome.messages.to_vec());
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_deferred_approval_sends_the_model_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let agent = Agent::create(deferring_config(dir, deferred_turn(dir, false)))
        .await
        .unwrap();
    let stopped = agent.prompt("Change the file").await;
    let Err(AgentError::ApprovalsPending(pending)) = &stopped else {
        panic!("the run should wait: {stopped:?}");
    };
    assert_eq!(pending[0].call_id, "call_1");
    assert!(
        stopped
            .as_ref()
            .unwrap_err()
            .to_string()
            .contains("continue_run"),
        "the error says what to do"
    );

    let store = Arc::new(store(dir));
    tool_sdk::session::answer_approval(
        &*store,
        agent.session_id(),
        "call_1",
        PermissionAnswer::Deny("not on Fridays".into()),
    )
    .await
    .unwrap();
    let model = ScriptedModel::new([ScriptedTurn::text("Understood.")]);
    // Another process goes on with the session; this one's agent has let it go.
    let id = agent.session_id().to_owned();
    drop(agent);
    let resumed = Agent::resume(
        config(dir, store.clone())
            .with_model(model.clone())
            .permissions(|p| p.ask("mutate").allow("note"))
            .session(|s| s.with_deferred_approvals()),
        &id,
    )
    .await
    .unwrap();
    let outcome = resumed.continue_run().await.unwrap();
    assert_eq!(outcome.text, "Understood.");
    assert_eq!(lines(dir), ["noted"], "the refused call did not run");
    let sent = &model.requests()[0].messages;
    let MessageContent::ToolResult {
        tool_use_id,
        content,
        is_error,
    } = &sent[2].content[1]
    else {
        panic!("a tool result: {:?}", sent[2]);
    };
    assert_eq!(tool_use_id, "call_1");
    assert!(is_error);
    let said: String = content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert!(said.contains("not on Fridays"), "{said}");
    assert_well_formed(&outcome.messages.to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deferred_approvals_need_a_store() {
    let error = Agent::create(
        AgentConfig::new()
            .with_registry(registry())
            .with_model(ScriptedModel::new([]))
            .session(|s| s.with_deferred_approvals()),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::Config(ConfigError::NoSessionStore {
                need: StoreNeed::DeferredApprovals
            })
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("session store"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_file_defers_approvals() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let file = dir.join("agent.toml");
    std::fs::write(
        &file,
        format!(
            "[session]\nstore = \"sqlite:{}\"\ndefer_approvals = true\n",
            dir.join("sessions.db").display()
        ),
    )
    .unwrap();
    let config = AgentConfig::from_file(&file).unwrap();
    assert!(config.session.defer_approvals);
    let agent = Agent::create(
        config
            .with_model(ScriptedModel::new([ScriptedTurn::tool_call_with_id(
                "call_1",
                "mutate",
                json!({"dir": dir, "block": false}),
            )]))
            .with_registry(registry())
            .with_working_dir(dir)
            .permissions(|p| p.ask("mutate")),
    )
    .await
    .unwrap();
    let error = agent.prompt("Change the file").await.unwrap_err();
    let AgentError::ApprovalsPending(pending) = error else {
        panic!("the question waits in the store: {error:?}");
    };
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].call_id, "call_1");
    assert_eq!(side_effects(dir), 0, "the call waits for its answer");
}

// ---- file checkpoints and rewind ----

fn file_config(dir: &Path, model: ScriptedModel) -> AgentConfig {
    AgentConfig::new()
        .with_model(model)
        .with_tools(["Read", "Write", "Edit"])
        .with_working_dir(dir)
        .permissions(|p| p.allow("Write").allow("Edit"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rewind_puts_files_back_as_before_each_message_even_after_resume() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
    std::fs::write(&b, "orig\n").unwrap();
    let model = ScriptedModel::new([
        // Message 1: read b, create a.
        ScriptedTurn::tool_call_with_id("r1", "Read", json!({"file_path": b})).with_tool_call_id(
            "w1",
            "Write",
            json!({"file_path": a, "content": "one\n"}),
        ),
        // Message 3: edit a, rewrite b.
        ScriptedTurn::tool_call_with_id(
            "e1",
            "Edit",
            json!({"file_path": a, "old_string": "one", "new_string": "two"}),
        )
        .with_tool_call_id("w2", "Write", json!({"file_path": b, "content": "B2\n"})),
        // Message 5: edit a again.
        ScriptedTurn::tool_call_with_id(
            "e2",
            "Edit",
            json!({"file_path": a, "old_string": "two", "new_string": "three"}),
        ),
        ScriptedTurn::text("Done."),
    ]);
    let store = Arc::new(store(dir));
    let agent = Agent::create(file_config(dir, model).session(|s| s.with_store(store.clone())))
        .await
        .unwrap();
    let outcome = agent.prompt("Change the files").await.unwrap();
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert_eq!((read(&a), read(&b)), ("three\n".into(), "B2\n".into()));

    // Another agent, from the store: the checkpoints come with the session.
    let id = agent.session_id().to_owned();
    drop(agent);
    let resumed = Agent::resume(
        file_config(dir, ScriptedModel::new([])).session(|s| s.with_store(store.clone())),
        &id,
    )
    .await
    .unwrap();
    let report = resumed.rewind_files(5).await.unwrap();
    assert_eq!(report.restored, [a.as_path()]);
    assert!(report.changed_outside.is_empty() && report.failed.is_empty());
    assert_eq!((read(&a), read(&b)), ("two\n".into(), "B2\n".into()));

    let report = resumed.rewind_files(3).await.unwrap();
    assert_eq!(report.restored, [a.clone(), b.clone()]);
    assert_eq!((read(&a), read(&b)), ("one\n".into(), "orig\n".into()));

    // The file the agent created is removed; b was not changed at message 1.
    let report = resumed.rewind_files(1).await.unwrap();
    assert_eq!(report.removed, [a.as_path()]);
    assert!(report.restored.is_empty(), "{report:?}");
    assert!(!a.exists());
    assert_eq!(read(&b), "orig\n");

    // Nothing is left to rewind, and the conversation is untouched.
    assert_eq!(resumed.rewind_files(0).await.unwrap(), Default::default());
    assert_eq!(resumed.messages().await, outcome.messages);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_changed_outside_is_kept_unless_the_rewind_is_forced() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let c = dir.join("c.txt");
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id(
            "w1",
            "Write",
            json!({"file_path": c, "content": "agent\n"}),
        ),
        ScriptedTurn::text("Done."),
    ]);
    // No session store: the checkpoints live in memory, for the life of the agent.
    let agent = Agent::create(file_config(dir, model)).await.unwrap();
    agent.prompt("Write c").await.unwrap();
    std::fs::write(&c, "user\n").unwrap();

    let report = agent.rewind_files(1).await.unwrap();
    assert_eq!(report.changed_outside, [c.as_path()]);
    assert!(report.removed.is_empty());
    assert_eq!(read(&c), "user\n", "left alone");

    let report = agent.rewind_files_forced(1).await.unwrap();
    assert_eq!(report.removed, [c.as_path()]);
    assert!(!c.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_content_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let d = dir.join("d.txt");
    std::fs::write(&d, "v1\n").unwrap();
    let write = |id: &str, content: &str| {
        ScriptedTurn::tool_call_with_id(id, "Write", json!({"file_path": d, "content": content}))
    };
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("r1", "Read", json!({"file_path": d})),
        write("w1", "v2\n"),
        write("w2", "v1\n"),
        write("w3", "v2\n"),
        ScriptedTurn::text("Done."),
    ]);
    let store = Arc::new(store(dir));
    let agent = Agent::create(file_config(dir, model).session(|s| s.with_store(store.clone())))
        .await
        .unwrap();
    let outcome = agent.prompt("Flip it").await.unwrap();
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    let records = store.load(agent.session_id()).await.unwrap();
    let count = |kind: &str| records.iter().filter(|r| r.kind() == kind).count();
    assert_eq!(count("file_checkpoint"), 3);
    assert_eq!(count("file_blob"), 2, "v1 and v2, once each");
    // Each checkpoint is stored before its call's result.
    let first_checkpoint = records.iter().position(|r| r.kind() == "file_checkpoint");
    let first_write_result = records.iter().position(|r| {
        matches!(
            r,
            Record::ToolResult { block: MessageContent::ToolResult { tool_use_id, .. } }
                if tool_use_id == "w1"
        )
    });
    assert!(first_checkpoint < first_write_result);

    // Message 3 is w1's turn: before it, d held v1.
    let report = agent.rewind_files(3).await.unwrap();
    assert_eq!(report.restored, [d.as_path()]);
    assert_eq!(read(&d), "v1\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notebook_edit_is_rewound_to_the_exact_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let notebook = dir.join("n.ipynb");
    // Unusual spacing: the rewind must give back these bytes, not a re-serialisation.
    let original = r#"{"cells": [{"cell_type": "code", "id": "c1", "metadata": {}, "source": "print(1)", "outputs": [], "execution_count": null}],
 "metadata": {}, "nbformat": 4, "nbformat_minor": 5}"#;
    std::fs::write(&notebook, original).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("r1", "Read", json!({"file_path": notebook})),
        ScriptedTurn::tool_call_with_id(
            "n1",
            "NotebookEdit",
            json!({"notebook_path": notebook, "cell_id": "c1", "new_source": "print(2)"}),
        ),
        ScriptedTurn::text("Done."),
    ]);
    let config = file_config(dir, model)
        .with_tools(["Read", "NotebookEdit"])
        .permissions(|p| p.allow("NotebookEdit"));
    let agent = Agent::create(config).await.unwrap();
    let outcome = agent.prompt("Change the cell").await.unwrap();
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert!(read(&notebook).contains("print(2)"));

    let report = agent.rewind_files(3).await.unwrap();
    assert_eq!(report.restored, [notebook.as_path()]);
    assert_eq!(read(&notebook), original);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_whose_checkpoint_cannot_be_stored_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let e = dir.join("e.txt");
    // The prompt, the model turn, its usage and the call's start are stored; the checkpoint
    // is not.
    let store = FailingStore {
        inner: store(dir),
        left: 4.into(),
    };
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("w1", "Write", json!({"file_path": e, "content": "x"})),
        ScriptedTurn::text("never asked"),
    ]);
    let agent = Agent::create(file_config(dir, model).session(|s| s.with_store(store)))
        .await
        .unwrap();
    let error = agent.prompt("Write e").await.unwrap_err();
    assert!(matches!(error, AgentError::Session(_)), "{error}");
    assert!(!e.exists(), "the file was not created");
    let messages = agent.messages().await;
    let said = messages
        .last()
        .unwrap()
        .content
        .iter()
        .find_map(|block| match block {
            MessageContent::ToolResult {
                content,
                is_error: true,
                ..
            } => Some(format!("{content:?}")),
            _ => None,
        });
    let said = said.expect("the call is answered as an error");
    assert!(said.contains("was not changed"), "{said}");
    assert!(said.contains("the disk is full"), "{said}");
}

#[test]
fn many_openers_of_a_new_file_migrate_it_once() {
    // Processes starting at once (two terminals, a web app's workers) open a file none has
    // made yet: each must find it ready, none fail on a step another already ran.
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let barrier = Arc::new(std::sync::Barrier::new(8));
        let openers: Vec<_> = (0..8)
            .map(|_| {
                let (path, barrier) = (path.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    SqliteStore::open(&path).map(|_| ())
                })
            })
            .collect();
        for opener in openers {
            opener
                .join()
                .unwrap()
                .expect("every opener finds the file ready");
        }
    }
}

// ---- private files and hostile contents ----

const PRIVATE_DIR: &str = "TOOL_SDK_SESSION_TEST_PRIVATE_DIR";

/// The permission bits of `path`.
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

fn side(path: &Path, suffix: &str) -> PathBuf {
    PathBuf::from(format!("{}{suffix}", path.display()))
}

/// Run by [`session_files_are_private_whatever_the_umask`] in a child process under umask
/// 022: opens a new store and an old one, appends to both, and checks the modes of their
/// files while they are open (SQLite removes `-wal` and `-shm` at the last close).
#[test]
fn private_files_child() {
    let Ok(dir) = std::env::var(PRIVATE_DIR) else {
        return;
    };
    let dir = PathBuf::from(dir);
    runtime().block_on(async {
        let mut stores = Vec::new();
        for name in ["new.db", "old.db"] {
            let path = dir.join(name);
            let store = SqliteStore::open(&path).unwrap();
            let id = store.create(NewSession::new("/w")).await.unwrap().id;
            store
                .append(&id, &Record::user(Message::user("a secret prompt")))
                .await
                .unwrap();
            for file in [path.clone(), side(&path, "-wal"), side(&path, "-shm")] {
                assert_eq!(mode(&file), 0o600, "{}", file.display());
            }
            stores.push(store);
        }
    });
    println!("every session file is 0600");
}

#[test]
fn session_files_are_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    // An old store left readable by everyone, with its side files.
    let old = dir.path().join("old.db");
    drop(store_at(&old));
    for file in [old.clone(), side(&old, "-wal"), side(&old, "-shm")] {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&file)
            .unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let output = Command::new("sh")
        .args([
            "-c",
            "umask 022 && exec \"$0\" --exact private_files_child --nocapture",
        ])
        .arg(std::env::current_exe().unwrap())
        .env(PRIVATE_DIR, dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("every session file is 0600"),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(mode(&dir.path().join("new.db")), 0o600);
    assert_eq!(mode(&old), 0o600);
}

fn store_at(path: &Path) -> SqliteStore {
    SqliteStore::open(path).expect("the store opens")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_record_leaves_the_rest_of_the_session_resumable() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    let store = store_at(&path);
    let id = store.create(NewSession::new(dir.path())).await.unwrap().id;
    let call = MessageContent::ToolUse(tool_sdk::model::ToolUse::new(
        "lost-call",
        "look",
        json!({}),
    ));
    let records = [
        Record::user(Message::user("go")),
        Record::model_turn(Message {
            role: Role::Assistant,
            content: vec![call],
        }),
        Record::ToolResult {
            block: MessageContent::ToolResult {
                tool_use_id: "lost-call".into(),
                content: vec![ContentBlock::text("looked")],
                is_error: false,
            },
        },
        Record::user(Message::user("next")),
        Record::model_turn(Message::assistant("Done.")),
    ];
    store.append_all(&id, &records).await.unwrap();
    // The model turn's body damaged under the store.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE records SET body = '{\"kind\": \"model_turn\", \"mess' WHERE seq = 1",
            [],
        )
        .unwrap();

    let loaded = store.load(&id).await.unwrap();
    assert_eq!(loaded.len(), 5);
    assert!(
        matches!(&loaded[1], Record::Unreadable { seq: 1, stored_kind, .. } if stored_kind == "model_turn"),
        "{:?}",
        loaded[1]
    );
    assert_eq!(
        [&loaded[0], &loaded[2], &loaded[3], &loaded[4]],
        [&records[0], &records[2], &records[3], &records[4]]
    );
    // A stand-in is never stored.
    let refused = store.append(&id, &loaded[1]).await.unwrap_err();
    assert!(
        refused.to_string().contains("cannot be written"),
        "{refused}"
    );

    let agent = Agent::resume(
        config(dir.path(), store.clone()).with_model(ScriptedModel::new([])),
        &id,
    )
    .await
    .expect("the session resumes without its damaged record");
    // The agent says what it left out.
    let notes = agent.resume_notes();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("record 1 (model_turn) cannot be read"),
        "{notes:?}"
    );
    let messages = agent.messages().await;
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0].text(), "gonext");
    assert_eq!(messages[1], Message::assistant("Done."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_turn_stored_twice_resumes_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let id = store.create(NewSession::new(dir.path())).await.unwrap().id;
    let turn = Message {
        role: Role::Assistant,
        content: vec![MessageContent::ToolUse(tool_sdk::model::ToolUse::new(
            "call-1",
            "look",
            json!({}),
        ))],
    };
    let result = Record::ToolResult {
        block: MessageContent::ToolResult {
            tool_use_id: "call-1".into(),
            content: vec![ContentBlock::text("looked")],
            is_error: false,
        },
    };
    store
        .append_all(
            &id,
            &[
                Record::user(Message::user("go")),
                Record::model_turn(turn.clone()),
                Record::model_turn(turn.clone()),
                result,
                Record::model_turn(Message::assistant("Done.")),
            ],
        )
        .await
        .unwrap();
    let agent = Agent::resume(
        config(dir.path(), store.clone()).with_model(ScriptedModel::new([])),
        &id,
    )
    .await
    .unwrap();
    let messages = agent.messages().await;
    let ids: Vec<_> = messages
        .iter()
        .flat_map(|m| m.tool_uses().map(|call| call.id.clone()))
        .collect();
    assert_eq!(ids, ["call-1"], "{messages:?}");
    let roles: Vec<_> = messages.iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_of_a_session_the_store_does_not_have_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path());
    let parent = store.create(NewSession::new("/w")).await.unwrap();
    let fork = |session: &str| {
        NewSession::new("/w").with_parent(ForkPoint {
            session: session.into(),
            at: 0,
        })
    };
    let error = store.create(fork("session-nope")).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::UnknownParent { parent } if parent == "session-nope"),
        "{:?}",
        error
    );
    assert!(error.to_string().contains("`session-nope`"), "{error}");
    assert_eq!(store.list().await.unwrap().len(), 1, "nothing was created");
    let child = store.create(fork(&parent.id)).await.unwrap();
    assert_eq!(
        store.get(&child.id).await.unwrap().parent.unwrap().session,
        parent.id
    );
}

const SHM_PATH: &str = "TOOL_SDK_SESSION_TEST_SHM_PATH";

/// Run by [`a_side_file_sqlite_cannot_write_is_refused_when_the_store_opens`] as a user who
/// cannot write the store's `-shm`: opening must fail, naming it.
#[test]
fn unwritable_shm_child() {
    let Ok(path) = std::env::var(SHM_PATH) else {
        return;
    };
    match SqliteStore::open(&path) {
        Ok(_) => println!("opened"),
        Err(error) => println!("refused: {error}"),
    }
}

#[test]
fn a_side_file_sqlite_cannot_write_is_refused_when_the_store_opens() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sessions.db");
    drop(store_at(&path));
    let shm = side(&path, "-shm");

    // Not a file: a directory, a FIFO (whose opening can block forever).
    std::fs::create_dir(&shm).unwrap();
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("sessions.db-shm is a directory"), "{error}");
    std::fs::remove_dir(&shm).unwrap();
    assert!(Command::new("mkfifo").arg(&shm).status().unwrap().success());
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(error.contains("sessions.db-shm is a FIFO"), "{error}");
    std::fs::remove_file(&shm).unwrap();

    // An empty read-only file, opened by a user who may not write it: root may write any
    // file, so as root the child runs as `nobody`. The store's own file stays writable to
    // it: only the -shm is in the way.
    std::fs::File::create(&shm).unwrap();
    std::fs::set_permissions(&shm, std::fs::Permissions::from_mode(0o444)).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["--exact", "unwritable_shm_child", "--nocapture"])
        .env(SHM_PATH, &path);
    if std::fs::metadata(dir.path()).unwrap().uid() == 0 {
        use std::os::unix::process::CommandExt;
        child.uid(65534).gid(65534);
    }
    let output = child.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{output:?}");
    assert!(
        stdout.contains("refused: cannot open the session store")
            && stdout.contains("cannot open")
            && stdout.contains("sessions.db-shm for writing"),
        "{stdout}"
    );
    // Refused before SQLite touched anything: the file is as it was.
    assert_eq!(std::fs::metadata(&shm).unwrap().len(), 0);
}

/// Unmounts the small filesystem of [`a_full_disk_at_open_is_an_error_naming_the_shared_memory_file`].
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_at_open_is_an_error_naming_the_shared_memory_file() {
    // A real full disk: a small tmpfs of the test's own, which needs root (as in CI).
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=256k", "tmpfs"])
        .arg(&small)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !mounted {
        eprintln!("skipped: this user cannot mount a small tmpfs to fill");
        return;
    }
    let _unmount = Unmount(small.clone());
    let path = small.join("sessions.db");
    drop(store_at(&path));
    let mut filler = std::fs::File::create(small.join("filler")).unwrap();
    while std::io::Write::write_all(&mut filler, &[0; 4096]).is_ok() {}
    drop(filler);

    // SQLite alone says "disk I/O error"; the -shm it could not grow is named.
    let error = SqliteStore::open(&path).unwrap_err().to_string();
    assert!(
        error.contains("sessions.db-shm") && error.contains("disk full"),
        "{error}"
    );
}
