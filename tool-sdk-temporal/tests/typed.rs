//! A typed answer on Temporal (`AgentClient::start_as`, `RunHandle::output`) against the same
//! answer in process (`Agent::prompt_as`), the same model script for both: a real dev server,
//! a worker process, a model served over HTTP.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "support/tools.rs"]
mod tools;

use std::sync::Arc;

use serde_json::{Value, json};
use tool_sdk::JsonSchema;
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::{Message, OutputFormat};
use tool_sdk::session::{SqliteStore, stored_conversation};
use tool_sdk_temporal::{AgentClient, RunOptions, TemporalError};

use server::{DevServer, RUN_LIMIT, Turn, keep_history, model_server, start_worker};

/// The answer both runs ask for.
#[derive(Debug, PartialEq, serde::Deserialize, JsonSchema)]
#[schemars(crate = "tool_sdk::schemars")]
struct Forecast {
    /// The city.
    city: String,
    /// Degrees Celsius.
    celsius: i32,
}

fn answer(id: &str, input: Value) -> Turn {
    Turn::Calls(vec![(id.to_owned(), OutputFormat::TOOL_NAME, input)])
}

/// The answer of an in-process agent's `prompt_as::<Forecast>`, and its conversation.
async fn in_process(model_url: &str) -> (Result<Forecast, String>, Vec<Message>) {
    let config = AgentConfig::new()
        .with_model(AnthropicModel::new("claude-test", "test-key").with_base_url(model_url))
        .with_registry(tools::registry());
    let agent = Agent::create(config).await.unwrap();
    let answer = agent.prompt_as::<Forecast>("Weather in Lisbon?").await;
    (
        answer.map_err(|error| error.to_string()),
        agent.messages().await,
    )
}

/// The same on Temporal.
async fn on_temporal(
    server: &DevServer,
    model_url: &str,
    queue: &str,
) -> (Result<Forecast, TemporalError>, Vec<Message>) {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(server, queue, &store_path, model_url);
    let client = AgentClient::connect(&server.address, queue, store.clone())
        .await
        .unwrap();
    let run = client
        .start_as::<Forecast>("Weather in Lisbon?", RunOptions::default())
        .await
        .unwrap();
    let answer = tokio::time::timeout(RUN_LIMIT, run.output::<Forecast>())
        .await
        .expect("the run ended in time");
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    keep_history(&queue.replace('-', "_"), &run).await;
    (answer, messages)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_answer_is_refused_then_taken_as_in_process() {
    let server = DevServer::start().await;
    let script = vec![
        answer("toolu_0", json!({"city": "Lisbon", "celsius": "warm"})),
        answer("toolu_1", json!({"city": "Lisbon", "celsius": 21})),
    ];
    let model = model_server(script).await;
    let (local, local_messages) = in_process(&model.uri()).await;
    let (temporal, messages) = on_temporal(&server, &model.uri(), "typed").await;
    let lisbon = Forecast {
        city: "Lisbon".into(),
        celsius: 21,
    };
    assert_eq!(local.unwrap(), lisbon);
    assert_eq!(temporal.unwrap(), lisbon);
    // The refusal the model got, and the acceptance, are the in-process agent's.
    assert_eq!(messages, local_messages);
    let (refusal, is_error) = server::result_of(&messages, "toolu_0");
    assert!(is_error && refusal.contains("/celsius"), "{refusal}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_refused_past_the_retries_fail_the_run_as_in_process() {
    let server = DevServer::start().await;
    // Text that is no JSON, every time: refused, sent back twice (the default retries), then
    // the run fails.
    let script = vec![Turn::Text("It is warm.".into()); 3];
    let model = model_server(script).await;
    let (local, local_messages) = in_process(&model.uri()).await;
    let (temporal, messages) = on_temporal(&server, &model.uri(), "typed-fail").await;
    let local = local.unwrap_err();
    match temporal {
        Err(TemporalError::Output(reason)) => assert_eq!(reason, local),
        other => panic!("the run should fail for its answers: {other:?}"),
    }
    assert_eq!(messages, local_messages);
    assert_eq!(messages.len(), 6, "the prompt, three answers, two refusals");
}
