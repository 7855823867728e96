//! A worker process of the tests: `temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL
//! [ask|ask-slowly|retry-writes|floor]`. Runs the agent workflow and its activities with the tests' tools,
//! an Anthropic client of the tests' mock model server, and the SQLite store every process of
//! a test shares, until it is killed. With `ask`, calls are checked in the default permission
//! mode with no rules, which asks before each mutating call; `ask-slowly` too, with a store
//! that takes 30 s to report a stored question; `retry-writes` retries `write_note`. With
//! `floor`, it runs the benchmark's no-op
//! workflow instead (`floor.rs`).

use std::sync::Arc;

use tool_sdk::BoxFuture;
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::permission::PermissionMode;
use tool_sdk::session::{NewSession, Record, SessionError, SessionInfo, SessionStore, SqliteStore};
use tool_sdk_temporal::{AgentParts, AgentWorker, ToolRetries};

#[allow(dead_code)]
mod floor;
// `greet` serves the in-process tests only.
#[allow(dead_code)]
mod tools;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (address, task_queue, store, model_url, ask) = match args.as_slice() {
        [address, queue, store, url] => (address, queue, store, url, false),
        [address, queue, store, url, ask] if ask == "ask" => (address, queue, store, url, true),
        [address, queue, store, url, retry] if retry == "retry-writes" => {
            return retry_writes(address, queue, store, url).await;
        }
        [address, queue, store, url, slow] if slow == "ask-slowly" => {
            return ask_slowly(address, queue, store, url).await;
        }
        [address, queue, _, _, floor] if floor == "floor" => {
            return floor_worker(address, queue).await;
        }
        _ => {
            eprintln!(
                "usage: temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL [ask|ask-slowly|retry-writes|floor]"
            );
            std::process::exit(2);
        }
    };
    let registry = tools::registry();
    registry
        .register(Arc::new(tools::MarkTool))
        .expect("the tools register");
    registry
        .register(Arc::new(tools::ReportTool))
        .expect("the tools register");
    let model = AnthropicModel::new("claude-test", "test-key").with_base_url(model_url);
    let store = SqliteStore::open(store).expect("the store opens");
    let mut parts = AgentParts::new(Arc::new(model), registry, Arc::new(store));
    if ask {
        parts = parts.permissions(|p| p.with_mode(PermissionMode::Default));
    }
    let worker = AgentWorker::connect(address, task_queue, parts)
        .await
        .unwrap_or_else(|error| panic!("the worker connects: {error}"));
    println!("worker ready");
    if let Err(error) = worker.run().await {
        eprintln!("the worker stopped: {error}");
        std::process::exit(1);
    }
}

/// A worker whose app says `write_note` may run again: three attempts, 100 ms apart.
async fn retry_writes(address: &str, task_queue: &str, store: &str, model_url: &str) {
    let model = AnthropicModel::new("claude-test", "test-key").with_base_url(model_url);
    let store = SqliteStore::open(store).expect("the store opens");
    let retries = ToolRetries {
        attempts: 3,
        first_backoff: std::time::Duration::from_millis(100),
    };
    let parts = AgentParts::new(Arc::new(model), tools::registry(), Arc::new(store))
        .with_tool_retries("write_note", retries);
    let worker = AgentWorker::connect(address, task_queue, parts)
        .await
        .unwrap_or_else(|error| panic!("the worker connects: {error}"));
    println!("worker ready");
    let _ = worker.run().await;
}

/// The `ask` worker, whose store takes 30 s to report back once it stored a question: killed
/// meanwhile, it leaves a call that asked and never started, its activity unfinished.
async fn ask_slowly(address: &str, task_queue: &str, store: &str, model_url: &str) {
    let registry = tools::registry();
    let model = AnthropicModel::new("claude-test", "test-key").with_base_url(model_url);
    let store = SlowAfterQuestion(SqliteStore::open(store).expect("the store opens"));
    let parts = AgentParts::new(Arc::new(model), registry, Arc::new(store))
        .permissions(|p| p.with_mode(PermissionMode::Default));
    let worker = AgentWorker::connect(address, task_queue, parts)
        .await
        .unwrap_or_else(|error| panic!("the worker connects: {error}"));
    println!("worker ready");
    let _ = worker.run().await;
}

/// A store that sleeps after appending a question (`ApprovalDeferred`), as a worker that
/// dies between storing it and reporting back would look from outside.
struct SlowAfterQuestion(SqliteStore);

impl SessionStore for SlowAfterQuestion {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        self.0.create(new)
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
        Box::pin(async move {
            self.0.append_all(id, records).await?;
            if records
                .iter()
                .any(|r| matches!(r, Record::ApprovalDeferred { .. }))
            {
                tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            }
            Ok(())
        })
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>> {
        self.0.load(id)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
        self.0.get(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
        self.0.list()
    }
}

/// Runs the no-op workflow and activity until killed.
async fn floor_worker(address: &str, task_queue: &str) {
    use temporalio_client::{Client, ClientOptions, Connection, ConnectionOptions, Url};
    use temporalio_sdk::{Runtime, Worker, WorkerOptions};

    let runtime = Runtime::from_current_tokio(Default::default()).expect("the runtime starts");
    let url = Url::parse(&format!("http://{address}")).expect("the address is one");
    let connection = Connection::connect(ConnectionOptions::new(url).build())
        .await
        .expect("the server is reached");
    let client =
        Client::new(connection, ClientOptions::new("default").build()).expect("the client is made");
    let options = WorkerOptions::new(task_queue)
        .register_workflow::<floor::Floor>()
        .expect("the workflow registers")
        .register_activities(floor::Noop)
        .build();
    let mut worker = Worker::new(&runtime, client, options).expect("the worker is made");
    println!("worker ready");
    if let Err(error) = worker.run().await {
        eprintln!("the worker stopped: {error}");
        std::process::exit(1);
    }
}
