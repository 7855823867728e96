//! What reaches the client while an activity runs, against a real dev server and a worker
//! process: the model's text and thinking as they stream, a tool's progress as it reports it.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "support/stream.rs"]
mod stream;

use std::sync::Arc;

use tool_sdk::session::SqliteStore;
use tool_sdk_temporal::{AgentClient, RunEvent, RunOptions};

use server::{DevServer, finished, start_worker};
use stream::{SlowModel, Step, THOUGHT_ANSWER, report, watch};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_and_progress_reach_the_client_while_they_happen() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let parts = ["The notes ", "were ", "all ", "reported."].map(str::to_owned);
    let model = SlowModel::start(vec![
        Step::Whole(report("toolu_0", dir.path(), 3)),
        Step::Streamed(parts.to_vec()),
    ])
    .await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(&server, "live", &store_path, &model.url);
    let client = AgentClient::connect(&server.address, "live", store)
        .await
        .unwrap();
    let run = client
        .start("Report, then say so", RunOptions::default())
        .await
        .unwrap();
    let watched = watch(&run, &model, dir.path()).await;
    let outcome = finished(&run).await;
    let events = &watched.events;

    // Each progress line showed while the call ran: the tool waited for it to be seen.
    let position = |wanted: &dyn Fn(&RunEvent) -> bool| {
        events.iter().position(wanted).expect("the event came")
    };
    let started = position(&|e| matches!(e, RunEvent::ToolStarted { .. }));
    let ended = position(&|e| matches!(e, RunEvent::ToolResult { .. }));
    let progress: Vec<(usize, &str)> = events
        .iter()
        .enumerate()
        .filter_map(|(at, event)| match event {
            RunEvent::ToolProgress { id, message } if id == "toolu_0" => {
                Some((at, message.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(progress.len(), 3, "each line once: {events:?}");
    for (line, (at, message)) in progress.iter().enumerate() {
        assert!(message.starts_with(&format!("line {line} at ")));
        assert!(
            started < *at && *at < ended,
            "line {line} came while the call ran"
        );
    }
    let RunEvent::ToolResult { content, .. } = &events[ended] else {
        unreachable!("found as a result")
    };
    let result = serde_json::to_string(content).unwrap();
    assert!(
        result.contains("3 of 3 lines seen while running"),
        "{result}"
    );

    // The text showed before its turn ended (the model held the rest until it did), and its
    // deltas add up to the answer.
    assert_eq!(model.seen_in_time(), [true]);
    let turn = events
        .iter()
        .rposition(|e| matches!(e, RunEvent::Turn(_)))
        .expect("the answer's turn came");
    let deltas: Vec<usize> = (0..events.len())
        .filter(|at| matches!(events[*at], RunEvent::TextDelta(_)))
        .collect();
    assert!(deltas.len() >= 2, "the text came in parts: {events:?}");
    assert!(deltas.iter().all(|at| ended < *at && *at < turn));
    let streamed: String = deltas
        .iter()
        .map(|at| match &events[*at] {
            RunEvent::TextDelta(text) => text.as_str(),
            _ => unreachable!("a delta"),
        })
        .collect();
    assert_eq!(streamed, parts.concat());
    assert_eq!(outcome.text, streamed);
    assert!(!events.contains(&RunEvent::TextRestarted));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_reaches_the_client_while_the_model_thinks() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let parts = ["The user ", "wants ", "a short ", "answer."].map(str::to_owned);
    let model = SlowModel::start(vec![Step::Thought(parts.to_vec())]).await;
    let store_path = dir.path().join("sessions.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let _worker = start_worker(&server, "thinking", &store_path, &model.url);
    let client = AgentClient::connect(&server.address, "thinking", store)
        .await
        .unwrap();
    let run = client.start("Think", RunOptions::default()).await.unwrap();
    let watched = watch(&run, &model, dir.path()).await;
    let outcome = finished(&run).await;
    let events = &watched.events;

    // The thinking showed while the model thought (it held the rest until the first part was
    // seen), in parts that add up to the turn's thinking, all before the turn and its text.
    assert_eq!(model.seen_in_time(), [true]);
    let turn = events
        .iter()
        .position(|e| matches!(e, RunEvent::Turn(_)))
        .expect("the turn came");
    let thinking: Vec<(usize, &str)> = events
        .iter()
        .enumerate()
        .filter_map(|(at, event)| match event {
            RunEvent::ThinkingDelta(text) => Some((at, text.as_str())),
            _ => None,
        })
        .collect();
    assert!(
        thinking.len() >= 2,
        "the thinking came in parts: {events:?}"
    );
    assert!(thinking.iter().all(|(at, _)| *at < turn));
    let streamed: String = thinking.iter().map(|(_, text)| *text).collect();
    assert_eq!(streamed, parts.concat());
    let RunEvent::Turn(message) = &events[turn] else {
        unreachable!("found as a turn")
    };
    let stored = message.content.iter().find_map(|block| match block {
        tool_sdk::model::MessageContent::Thinking { thinking, .. } => Some(thinking.as_str()),
        _ => None,
    });
    assert_eq!(stored, Some(streamed.as_str()));
    let text = events
        .iter()
        .position(|e| *e == RunEvent::TextDelta(THOUGHT_ANSWER.into()))
        .expect("the answer's text came");
    assert!(thinking.iter().all(|(at, _)| *at < text) && text < turn);
    assert_eq!(outcome.text, THOUGHT_ANSWER);
}
