//! A worker process of the tests: `temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL
//! [ask|floor]`. Runs the agent workflow and its activities with the tests' tools, an Anthropic
//! client of the tests' mock model server, and the SQLite store every process of a test
//! shares, until it is killed. With `ask`, calls are checked in the default permission mode with
//! no rules, which asks before each mutating call. With `floor`, it runs the benchmark's no-op workflow
//! instead (`floor.rs`).

use std::sync::Arc;

use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::permission::PermissionMode;
use tool_sdk::session::SqliteStore;
use tool_sdk_temporal::{AgentParts, AgentWorker};

#[allow(dead_code)]
mod floor;
mod tools;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (address, task_queue, store, model_url, ask) = match args.as_slice() {
        [address, queue, store, url] => (address, queue, store, url, false),
        [address, queue, store, url, ask] if ask == "ask" => (address, queue, store, url, true),
        [address, queue, _, _, floor] if floor == "floor" => {
            return floor_worker(address, queue).await;
        }
        _ => {
            eprintln!("usage: temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL [ask|floor]");
            std::process::exit(2);
        }
    };
    let registry = tools::registry();
    registry
        .register(Arc::new(tools::MarkTool))
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
