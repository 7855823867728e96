//! An `AgentConfig` on Temporal: its permission rules, hooks and budgets work as they do in
//! process (the same script leaves the same conversation), and what cannot run on Temporal
//! is refused when the worker starts.

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;
#[allow(dead_code)]
#[path = "support/tools.rs"]
mod tools;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tool_sdk::agent::{Agent, AgentConfig, AgentError, PromptCheck, StopCheck};
use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::permission::{HookDecision, PermissionMode};
use tool_sdk::session::{SqliteStore, stored_conversation};
use tool_sdk_temporal::{
    AgentClient, AgentParts, AgentWorker, RunOptions, RunStatus, TemporalError,
};

use server::{
    DevServer, RUN_LIMIT, Turn, call, finished, keep_history, model_server, result_of,
    wait_for_approvals,
};

fn config(model_url: &str, dir: &Path) -> AgentConfig {
    AgentConfig::new()
        .with_model(AnthropicModel::new("claude-test", "test-key").with_base_url(model_url))
        .with_registry(tools::registry())
        .with_working_dir(dir)
}

/// A worker of `parts` in this process, on a thread of its own: stopped when dropped.
struct InProcessWorker(
    Box<dyn Fn() + Send + Sync>,
    Option<std::thread::JoinHandle<()>>,
);

impl InProcessWorker {
    fn start(address: &str, task_queue: &str, parts: AgentParts) -> InProcessWorker {
        let (address, task_queue) = (address.to_owned(), task_queue.to_owned());
        let (ready, ready_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let worker = AgentWorker::connect(&address, &task_queue, parts)
                    .await
                    .unwrap_or_else(|error| panic!("the worker connects: {error}"));
                ready.send(worker.shutdown_handle()).unwrap();
                worker.run().await.unwrap();
            });
        });
        let stop = ready_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the worker connected within 30 s");
        InProcessWorker(Box::new(stop), Some(thread))
    }
}

impl Drop for InProcessWorker {
    fn drop(&mut self) {
        (self.0)();
        if let Some(thread) = self.1.take() {
            let _ = thread.join();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_runs_on_temporal_with_its_rules_hooks_and_budgets_as_in_process() {
    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // Rules and hooks: `write_note` is allowed by a rule, but a hook refuses the note
    // "forbidden"; a post hook counts what ran; a stop hook sends the run on once.
    let script = vec![
        Turn::Calls(vec![
            call("toolu_look", "look", d, "r1", 0),
            call("toolu_w1", "write_note", d, "w1", 0),
            call("toolu_bad", "write_note", d, "forbidden", 0),
        ]),
        Turn::Text("done once".to_owned()),
        Turn::Text("done twice".to_owned()),
    ];
    let model = model_server(script).await;
    let post_hooks = Arc::new(AtomicUsize::new(0));
    let starts = Arc::new(AtomicUsize::new(0));
    let hooked = |model_url: &str, counted: Arc<AtomicUsize>, started: Arc<AtomicUsize>| {
        config(model_url, d)
            .permissions(|p| p.with_mode(PermissionMode::Default).allow("write_note"))
            .hooks(|hooks| {
                hooks
                    .on_user_prompt_submit(|prompt| match prompt.contains("secret") {
                        true => PromptCheck::Block("no secrets here".into()),
                        false => PromptCheck::AddContext("The notes are in the temp dir.".into()),
                    })
                    .on_pre_tool_use(|call| match call.input["note"].as_str() {
                        Some("forbidden") => HookDecision::Deny("that note is forbidden".into()),
                        _ => HookDecision::Continue,
                    })
                    .on_post_tool_use(move |_| {
                        counted.fetch_add(1, Ordering::SeqCst);
                    })
                    .on_session_start(move |start| {
                        if start.source == tool_sdk::agent::SessionSource::Startup {
                            started.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                    .on_stop(|stop| match stop.continued {
                        0 => StopCheck::Continue("Say it once more".to_owned()),
                        _ => StopCheck::Stop,
                    })
            })
    };
    let store_path = d.join("temporal.db");
    let store = Arc::new(SqliteStore::open(&store_path).unwrap());
    let hooks = hooked(&model.uri(), post_hooks.clone(), starts.clone());
    let parts = AgentParts::from_config(hooks, store.clone());
    let worker = InProcessWorker::start(&server.address, "hooks", parts);
    let client = AgentClient::connect(&server.address, "hooks", store.clone())
        .await
        .unwrap();
    let run = client
        .start("Write the notes", RunOptions::default())
        .await
        .unwrap();
    let outcome = finished(&run).await;
    drop(worker);
    assert_eq!((outcome.text.as_str(), outcome.turns), ("done twice", 3));
    keep_history("config_rules_hooks", &run).await;
    // The server lists and describes it (its visibility store may lag a moment).
    let described = run.describe().await.unwrap();
    assert_eq!(described.status, RunStatus::Completed);
    assert!(described.closed.is_some() && described.history_length > 10);
    let mut listed = Vec::new();
    for _ in 0..50 {
        listed = client.list_runs(None).await.unwrap();
        if listed
            .first()
            .is_some_and(|run| run.status == RunStatus::Completed)
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].session_id.as_deref(), Some(run.session_id()));
    assert_eq!(listed[0].status, RunStatus::Completed);
    let on_temporal = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let (refused, is_error) = result_of(&on_temporal, "toolu_bad");
    assert!(
        is_error && refused.contains("that note is forbidden"),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(d.join("writes")).unwrap(), "w1\n");
    assert_eq!(post_hooks.load(Ordering::SeqCst), 2, "look and w1 returned");
    assert_eq!(
        starts.load(Ordering::SeqCst),
        1,
        "the new session started once"
    );
    assert!(
        on_temporal.iter().any(|m| m.text() == "Say it once more"),
        "the stop hook's message is in the conversation"
    );
    assert!(
        on_temporal[0]
            .text()
            .contains("The notes are in the temp dir."),
        "the prompt hook's context is in the prompt: {:?}",
        on_temporal[0]
    );
    // A prompt the hook blocks fails the run and is not stored.
    let worker = InProcessWorker::start(
        &server.address,
        "hooks",
        AgentParts::from_config(
            hooked(&model.uri(), post_hooks.clone(), Arc::default()),
            store.clone(),
        ),
    );
    let blocked = client
        .continue_session(run.session_id(), "a secret", RunOptions::default())
        .await
        .unwrap();
    let error = tokio::time::timeout(RUN_LIMIT, blocked.result())
        .await
        .expect("the run ended in time")
        .unwrap_err()
        .to_string();
    drop(worker);
    assert!(error.contains("no secrets here"), "{error}");
    let after = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    assert_eq!(after, on_temporal, "nothing of the blocked run was stored");

    // The same config and script in process leave the same conversation.
    std::fs::remove_file(d.join("writes")).unwrap();
    std::fs::remove_file(d.join("looks")).unwrap();
    let local_hooks = Arc::new(AtomicUsize::new(0));
    let local = SqliteStore::open(d.join("local.db")).unwrap();
    let agent = Agent::create(
        hooked(&model.uri(), local_hooks.clone(), Arc::default()).session(|s| s.with_store(local)),
    )
    .await
    .unwrap();
    assert_eq!(
        agent.prompt("Write the notes").await.unwrap().text,
        "done twice"
    );
    assert_eq!(on_temporal, agent.messages().await);
    assert_eq!(local_hooks.load(Ordering::SeqCst), 2);
    for file in ["writes", "looks"] {
        std::fs::remove_file(d.join(file)).unwrap();
    }

    // A budget: each turn uses 15 tokens; 25 are spent with the second turn, whose call is
    // answered as not run, and the run stops.
    let script = vec![
        Turn::Calls(vec![call("toolu_r", "look", d, "r2", 0)]),
        Turn::Calls(vec![call("toolu_w", "write_note", d, "w2", 0)]),
        Turn::Text("never asked".to_owned()),
    ];
    let model = model_server(script).await;
    let budgeted = |model_url: &str| {
        config(model_url, d)
            .permissions(|p| p.with_mode(PermissionMode::BypassPermissions))
            .limits(|l| l.with_max_run_tokens(25))
    };
    let parts = AgentParts::from_config(budgeted(&model.uri()), store.clone());
    let worker = InProcessWorker::start(&server.address, "budget", parts);
    let client = AgentClient::connect(&server.address, "budget", store.clone())
        .await
        .unwrap();
    let run = client
        .start("Spend it", RunOptions::default())
        .await
        .unwrap();
    let outcome = finished(&run).await;
    drop(worker);
    let stopped = outcome.stopped.expect("the budget stopped the run");
    assert!(stopped.contains("25"), "{stopped}");
    keep_history("budget_stopped", &run).await;
    assert_eq!(outcome.turns, 2);
    assert!(!d.join("writes").exists(), "the write did not run");
    std::fs::remove_file(d.join("looks")).unwrap();
    let on_temporal = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let (not_run, is_error) = result_of(&on_temporal, "toolu_w");
    assert!(is_error && not_run.contains("did not run"), "{not_run}");

    let local = SqliteStore::open(d.join("local-budget.db")).unwrap();
    let agent = Agent::create(budgeted(&model.uri()).session(|s| s.with_store(local)))
        .await
        .unwrap();
    let error = agent.prompt("Spend it").await.unwrap_err();
    assert!(
        matches!(error, AgentError::TokenLimitExceeded { limit: 25, .. }),
        "{error}"
    );
    assert_eq!(on_temporal, agent.messages().await);
}

#[tokio::test]
async fn what_agent_create_refuses_the_worker_refuses_when_it_starts() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("s.db")).unwrap());
    // Nothing listens there: a config that passes fails only at the connection.
    let address = format!("127.0.0.1:{}", server::free_port());

    // A config that passes (a known model, its window managed, the Task tool): only the
    // address fails.
    let fine = AgentConfig::new()
        .with_model(AnthropicModel::new("claude-sonnet-4-5", "test-key"))
        .with_tools(["Read", "Task"]);
    let parts = AgentParts::from_config(fine, store.clone());
    let error = AgentWorker::connect(&address, "q", parts)
        .await
        .err()
        .unwrap();
    assert!(matches!(error, TemporalError::Connect { .. }), "{error}");

    // What `Agent::create` refuses, the worker refuses, with its words.
    let typo = config("http://127.0.0.1:1", dir.path()).with_tools(["look", "write_nots"]);
    let parts = AgentParts::from_config(typo, store);
    let error = AgentWorker::connect(&address, "q", parts)
        .await
        .err()
        .unwrap();
    let message = error.to_string();
    assert!(matches!(error, TemporalError::Config(_)), "{message}");
    assert!(
        message.contains("write_note"),
        "the near match is named: {message}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allow_always_lets_the_sessions_later_calls_of_its_rule_run_unasked() {
    use tool_sdk::permission::PermissionAnswer;
    use tool_sdk::session::{Record, SessionStore};

    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let script = vec![
        Turn::Calls(vec![call("toolu_1", "write_note", d, "w1", 0)]),
        Turn::Calls(vec![call("toolu_2", "write_note", d, "w2", 0)]),
        Turn::Text("both written".to_owned()),
    ];
    let model = model_server(script).await;
    let store = Arc::new(SqliteStore::open(d.join("s.db")).unwrap());
    let notified = Arc::new(AtomicUsize::new(0));
    let told = notified.clone();
    let asking = config(&model.uri(), d)
        .permissions(|p| p.with_mode(PermissionMode::Default))
        .hooks(|h| {
            h.on_notification(move |_| {
                told.fetch_add(1, Ordering::SeqCst);
            })
        });
    let parts = AgentParts::from_config(asking, store.clone());
    let _worker = InProcessWorker::start(&server.address, "always", parts);
    let client = AgentClient::connect(&server.address, "always", store.clone())
        .await
        .unwrap();
    let run = client
        .start("Write twice", RunOptions::default())
        .await
        .unwrap();
    let pending = wait_for_approvals(&client, run.session_id()).await;
    assert_eq!(pending[0].call_id, "toolu_1");
    run.answer_approval("toolu_1", PermissionAnswer::AllowAlways)
        .await
        .unwrap();
    let outcome = finished(&run).await;
    assert_eq!(outcome.text, "both written");
    assert_eq!(
        std::fs::read_to_string(d.join("writes")).unwrap(),
        "w1\nw2\n"
    );
    let records = store.load(run.session_id()).await.unwrap();
    let asked: Vec<&str> = records
        .iter()
        .filter_map(|record| match record {
            Record::PermissionAsked { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(asked, ["toolu_1"], "the second write ran unasked");
    assert_eq!(
        notified.load(Ordering::SeqCst),
        1,
        "the notification hook heard the question"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tools_question_waits_in_the_server_and_the_call_runs_again_with_its_answer() {
    use futures::StreamExt;
    use serde_json::json;
    use tool_sdk::ElicitationAnswer;
    use tool_sdk_temporal::RunEvent;

    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let greet = ("toolu_greet".to_owned(), "greet", json!({"dir": d}));
    let script = vec![Turn::Calls(vec![greet]), Turn::Text("greeted".to_owned())];
    let model = model_server(script).await;
    let store = Arc::new(SqliteStore::open(d.join("s.db")).unwrap());
    // Every worker of a queue runs the same config.
    let greeting = || {
        let registry = tools::registry();
        registry.register(Arc::new(tools::GreetTool)).unwrap();
        config(&model.uri(), d)
            .with_registry(registry)
            .permissions(|p| p.with_mode(PermissionMode::BypassPermissions))
    };
    let parts = AgentParts::from_config(greeting(), store.clone());
    let worker = InProcessWorker::start(&server.address, "greet", parts);
    let client = AgentClient::connect(&server.address, "greet", store.clone())
        .await
        .unwrap();
    let run = client
        .start("Greet me", RunOptions::default())
        .await
        .unwrap();
    let pending = wait_for_approvals(&client, run.session_id()).await;
    let question = pending[0]
        .elicitation
        .as_ref()
        .expect("a question of the tool's");
    assert_eq!(question.message(), "Who should be greeted?");
    assert!(
        !d.join("greetings").exists(),
        "the tool waits before it acts"
    );
    // No process holds the question: the worker goes, another takes the call again.
    drop(worker);
    let other = AgentParts::from_config(greeting(), store.clone());
    let _worker = InProcessWorker::start(&server.address, "greet", other);
    let answer = ElicitationAnswer::Accept {
        content: json!({"name": "Ada"}),
    };
    run.answer_elicitation("toolu_greet", answer).await.unwrap();
    let (events, outcome) = tokio::time::timeout(RUN_LIMIT, async {
        let events = run.events(Duration::from_millis(50)).collect::<Vec<_>>();
        tokio::join!(events, run.result())
    })
    .await
    .expect("the run ended in time");
    assert_eq!(outcome.unwrap().text, "greeted");
    let asked = events.iter().filter(
        |event| matches!(event, Ok(RunEvent::ElicitationAsked { id, .. }) if id == "toolu_greet"),
    );
    assert_eq!(
        asked.count(),
        1,
        "asked once: the second run was answered from the session"
    );
    assert_eq!(
        std::fs::read_to_string(d.join("greetings")).unwrap(),
        "hello Ada\n"
    );
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let (greeted, is_error) = result_of(&messages, "toolu_greet");
    assert!(!is_error && greeted.contains("greeted Ada"), "{greeted}");
    keep_history("question_answered", &run).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managed_window_is_cleared_and_compacted_on_temporal_as_in_process() {
    use tool_sdk::session::{Record, SessionStore};
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Eight looks at long notes (each call's input and result about 600 tokens), then the
    // answer: past the window's thresholds, old results are cleared, then it compacts.
    let note = "n".repeat(2_400);
    let mut script: Vec<Turn> = (0..8)
        .map(|k| {
            Turn::Calls(vec![call(
                &format!("toolu_{k}"),
                "look",
                d,
                &format!("{k}{note}"),
                0,
            )])
        })
        .collect();
    script.push(Turn::Text("looked at them all".to_owned()));
    let mock = MockServer::start().await;
    let responder = server::ByLastResult {
        script,
        summary: "Summary: the user asked for looks; eight were made.".to_owned(),
    };
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(responder)
        .mount(&mock)
        .await;
    let windowed = || {
        config(&mock.uri(), d)
            .permissions(|p| p.with_mode(PermissionMode::BypassPermissions))
            .model(|m| m.with_max_tokens(1_000))
            .context(|c| c.with_window(6_000))
    };
    let store = Arc::new(SqliteStore::open(d.join("temporal.db")).unwrap());
    let parts = AgentParts::from_config(windowed(), store.clone());
    let worker = InProcessWorker::start(&server.address, "window", parts);
    let client = AgentClient::connect(&server.address, "window", store.clone())
        .await
        .unwrap();
    let run = client
        .start("Look at them", RunOptions::default())
        .await
        .unwrap();
    let outcome = finished(&run).await;
    drop(worker);
    assert_eq!(outcome.text, "looked at them all");
    std::fs::remove_file(d.join("looks")).unwrap();

    let local = Arc::new(SqliteStore::open(d.join("local.db")).unwrap());
    let agent = Agent::create(windowed().session(|s| s.with_store(local.clone())))
        .await
        .unwrap();
    let in_process = agent.prompt("Look at them").await.unwrap();
    assert_eq!(in_process.text, "looked at them all");
    // The run's tokens are its turns' and its summary's, as in process (the summary's
    // request is an activity of its own, whose usage the workflow counts).
    assert_eq!(outcome.usage, in_process.usage);
    let history = run.history().to_json().await.unwrap();
    assert!(String::from_utf8_lossy(&history).contains("tool_sdk.prepare_context"));

    let kinds = |records: Vec<Record>| -> Vec<&'static str> {
        records
            .iter()
            .map(Record::kind)
            .filter(|kind| ["compacted", "tool_results_cleared", "model_turn"].contains(kind))
            .collect()
    };
    let on_temporal = kinds(store.load(run.session_id()).await.unwrap());
    let in_process = kinds(local.load(agent.session_id()).await.unwrap());
    assert!(on_temporal.contains(&"compacted"), "{on_temporal:?}");
    assert!(
        on_temporal.contains(&"tool_results_cleared"),
        "{on_temporal:?}"
    );
    assert_eq!(
        on_temporal, in_process,
        "the same changes, at the same turns"
    );
    let temporal_messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let local_messages = stored_conversation(&*local, agent.session_id())
        .await
        .unwrap();
    assert_eq!(temporal_messages, local_messages);
    keep_history("compacted_window", &run).await;
}

/// The parent's requests and its sub-agent's, told apart by their first message, each turn
/// by the number of messages so far.
struct ParentAndChild {
    parent: Vec<Turn>,
    child: Vec<Turn>,
}

impl wiremock::Respond for ParentAndChild {
    fn respond(&self, request: &wiremock::Request) -> wiremock::ResponseTemplate {
        let body: serde_json::Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().unwrap();
        let script = match messages[0].to_string().contains("Delegate") {
            true => &self.parent,
            false => &self.child,
        };
        server::turn_response(&script[(messages.len() - 1) / 2])
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_task_tools_sub_agent_runs_inside_its_calls_activity() {
    use serde_json::json;
    use tool_sdk::builtin::TaskTool;
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer};

    let server = DevServer::start().await;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let task =
        json!({"description": "look at r1", "prompt": "Look at note r1 and say what you saw"});
    let responder = ParentAndChild {
        parent: vec![
            Turn::Calls(vec![("toolu_task".to_owned(), "Task", task)]),
            Turn::Text("the sub-agent looked".to_owned()),
        ],
        child: vec![
            Turn::Calls(vec![call("toolu_child_look", "look", d, "r1", 0)]),
            Turn::Text("I saw r1".to_owned()),
        ],
    };
    let mock = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(responder)
        .mount(&mock)
        .await;
    let registry = tools::registry();
    registry.register(Arc::new(TaskTool)).unwrap();
    let with_task = config(&mock.uri(), d)
        .with_registry(registry)
        .permissions(|p| p.with_mode(PermissionMode::BypassPermissions));
    let store = Arc::new(SqliteStore::open(d.join("s.db")).unwrap());
    let parts = AgentParts::from_config(with_task, store.clone());
    let _worker = InProcessWorker::start(&server.address, "task", parts);
    let client = AgentClient::connect(&server.address, "task", store.clone())
        .await
        .unwrap();
    let run = client
        .start("Delegate the look", RunOptions::default())
        .await
        .unwrap();
    let outcome = finished(&run).await;
    assert_eq!(outcome.text, "the sub-agent looked");
    assert_eq!(
        std::fs::read_to_string(d.join("looks")).unwrap(),
        "r1\n",
        "the child's look ran"
    );
    let messages = stored_conversation(&*store, run.session_id())
        .await
        .unwrap();
    let (report, is_error) = result_of(&messages, "toolu_task");
    assert!(!is_error && report.contains("I saw r1"), "{report}");
}
