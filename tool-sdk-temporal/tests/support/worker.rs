//! A worker process of the tests: `temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL`.
//! Runs the agent workflow and its activities with the tests' tools, an Anthropic client of
//! the tests' mock model server, and the SQLite store every process of a test shares, until
//! it is killed.

use std::sync::Arc;

use tool_sdk::ToolRegistry;
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::session::SqliteStore;
use tool_sdk_temporal::{AgentParts, AgentWorker};

mod tools;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [address, task_queue, store, model_url] = args.as_slice() else {
        eprintln!("usage: temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL");
        std::process::exit(2);
    };
    let registry = ToolRegistry::new();
    registry
        .register(Arc::new(tools::LookTool))
        .and_then(|()| registry.register(Arc::new(tools::WriteNoteTool)))
        .expect("the tools register");
    let model = AnthropicModel::new("claude-test", "test-key").with_base_url(model_url);
    let store = SqliteStore::open(store).expect("the store opens");
    let parts = AgentParts::new(Arc::new(model), Arc::new(registry), Arc::new(store));
    let worker = AgentWorker::connect(address, task_queue, parts)
        .await
        .unwrap_or_else(|error| panic!("the worker connects: {error}"));
    println!("worker ready");
    if let Err(error) = worker.run().await {
        eprintln!("the worker stopped: {error}");
        std::process::exit(1);
    }
}
