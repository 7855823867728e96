//! A worker process of the tests: `temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL
//! [ask]`. Runs the agent workflow and its activities with the tests' tools, an Anthropic
//! client of the tests' mock model server, and the SQLite store every process of a test
//! shares, until it is killed. With `ask`, calls go through a permission gate with no rules,
//! which asks before each mutating call.

use std::sync::Arc;

use tool_sdk::ToolRegistry;
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::permission::{PermissionGate, PermissionMode, PermissionRules};
use tool_sdk::session::SqliteStore;
use tool_sdk_temporal::{AgentParts, AgentWorker};

mod tools;

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (address, task_queue, store, model_url, ask) = match args.as_slice() {
        [address, queue, store, url] => (address, queue, store, url, false),
        [address, queue, store, url, ask] if ask == "ask" => (address, queue, store, url, true),
        _ => {
            eprintln!("usage: temporal-test-worker ADDRESS TASK_QUEUE STORE MODEL_URL [ask]");
            std::process::exit(2);
        }
    };
    let registry = ToolRegistry::new();
    registry
        .register(Arc::new(tools::LookTool))
        .and_then(|()| registry.register(Arc::new(tools::WriteNoteTool)))
        .and_then(|()| registry.register(Arc::new(tools::MarkTool)))
        .expect("the tools register");
    let model = AnthropicModel::new("claude-test", "test-key").with_base_url(model_url);
    let store = SqliteStore::open(store).expect("the store opens");
    let mut parts = AgentParts::new(Arc::new(model), Arc::new(registry), Arc::new(store));
    if ask {
        let gate = PermissionGate::new(PermissionRules::default(), Vec::new());
        parts = parts.with_permission_gate(Arc::new(gate), PermissionMode::Default);
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
