//! The hooks end to end on `ScriptedModel`: a prompt hook adds context or blocks (nothing
//! sent, nothing stored), stop hooks send the agent and its sub-agents on (bounded), session
//! hooks see starts (new and resumed) and ends (closed or dropped), and one hook sees every
//! event once, in order, with its input.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tool_sdk::BoxFuture;
use tool_sdk::agent::{
    Agent, AgentConfig, AgentError, Hook, Notification, PromptCheck, SessionEnd, SessionStart,
    StopCheck, StopContext, SubagentConfig, SubagentStart, ToolCall, ToolFailure, ToolResult,
};
use tool_sdk::builtin::TaskTool;
use tool_sdk::model::{Message, MessageContent, Role, ScriptedModel, ScriptedTurn};
use tool_sdk::permission::{HookDecision, PermissionAnswer, PermissionQuestion};
use tool_sdk::session::{SessionStore, SqliteStore};
use tool_sdk::{AgentId, ToolRegistry, tool};

/// Notes something down.
#[tool(register = false, read_only)]
async fn note(text: String) -> String {
    format!("noted {text}")
}

fn config(model: &Arc<ScriptedModel>) -> AgentConfig {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(NoteTool)).unwrap();
    registry.register(Arc::new(TaskTool)).unwrap();
    AgentConfig::new()
        .with_model(model.clone())
        .with_registry(Arc::new(registry))
}

fn texts(message: &Message) -> Vec<String> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::Text { text } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_prompt_hook_adds_context_to_the_prompt_the_model_sees() {
    let model = Arc::new(ScriptedModel::new([ScriptedTurn::text("ok")]));
    let agent = Agent::create(config(&model).hooks(|h| {
        h.on_user_prompt_submit(|prompt: &str| {
            PromptCheck::AddContext(format!("({} chars; today is Monday)", prompt.len()))
        })
    }))
    .await
    .unwrap();
    let result = agent.prompt("hello").await.unwrap();
    let sent = model.requests()[0].messages.last().cloned().unwrap();
    assert_eq!(texts(&sent), ["hello", "(5 chars; today is Monday)"]);
    assert_eq!(texts(&result.messages[0]), texts(&sent));
}

#[tokio::test]
async fn a_blocked_prompt_is_neither_sent_nor_stored() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let model = Arc::new(ScriptedModel::new([ScriptedTurn::text("ok")]));
    let agent = Agent::create(
        config(&model)
            .session(|s| s.with_store(store.clone()))
            .hooks(|h| {
                h.on_user_prompt_submit(|prompt: &str| match prompt.contains("password") {
                    true => PromptCheck::Block("prompts must not carry secrets".into()),
                    false => PromptCheck::Continue,
                })
            }),
    )
    .await
    .unwrap();
    let error = agent.prompt("my password is hunter2").await.unwrap_err();
    assert!(
        matches!(&error, AgentError::PromptBlocked(reason) if reason.contains("secrets")),
        "{error}"
    );
    assert!(error.to_string().contains("blocked by a hook"), "{error}");
    assert!(model.requests().is_empty());
    assert!(agent.messages().await.is_empty());
    let records = store.load(agent.session_id()).await.unwrap();
    assert!(records.is_empty(), "{records:?}");
    // The next prompt goes through.
    assert_eq!(agent.prompt("hi").await.unwrap().text, "ok");
}

#[tokio::test]
async fn a_stop_hook_sends_the_run_on_until_it_is_satisfied() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::text("Draft. TODO: tests"),
        ScriptedTurn::text("Done, with tests."),
    ]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let agent = Agent::create(config(&model).hooks(|h| {
        h.on_stop(move |stop: &StopContext<'_>| {
            log.lock()
                .unwrap()
                .push((stop.agent.clone(), stop.text.to_owned(), stop.continued));
            match stop.text.contains("TODO") {
                true => StopCheck::Continue("Finish the TODOs first.".into()),
                false => StopCheck::Stop,
            }
        })
    }))
    .await
    .unwrap();
    let result = agent.prompt("write it").await.unwrap();
    assert_eq!(result.text, "Done, with tests.");
    assert_eq!(result.turns, 2);
    let second = model.requests()[1].messages.last().cloned().unwrap();
    assert_eq!(second.role, Role::User);
    assert_eq!(texts(&second), ["Finish the TODOs first."]);
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (AgentId::Main, "Draft. TODO: tests".to_owned(), 0),
            (AgentId::Main, "Done, with tests.".to_owned(), 1),
        ]
    );
}

#[tokio::test]
async fn stop_hooks_cannot_keep_a_run_alive_forever() {
    let model = Arc::new(ScriptedModel::new(
        (0..5).map(|n| ScriptedTurn::text(format!("answer {n}"))),
    ));
    let agent = Agent::create(config(&model).hooks(|h| {
        h.on_stop(|_: &StopContext<'_>| StopCheck::Continue("again".into()))
            .with_max_stop_continuations(2)
    }))
    .await
    .unwrap();
    let result = agent.prompt("go").await.unwrap();
    assert_eq!(result.text, "answer 2");
    assert_eq!(model.requests().len(), 3);
    assert_eq!(model.remaining(), 2);
}

#[tokio::test]
async fn a_subagent_stop_hook_sends_the_sub_agent_on_and_not_the_parent() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool_call(
            "Task",
            json!({"description": "note", "prompt": "Note things.", "subagent_type": "noter"}),
        ),
        ScriptedTurn::text("half done"),
        ScriptedTurn::text("all noted"),
        ScriptedTurn::text("The sub-agent noted everything."),
    ]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (sub_log, main_log) = (seen.clone(), seen.clone());
    let agent = Agent::create(
        config(&model)
            .with_subagent(
                "noter",
                SubagentConfig {
                    description: "Notes".into(),
                    system_prompt: None,
                    tools: Some(vec!["note".into()]),
                },
            )
            .hooks(|h| {
                h.on_subagent_stop(move |stop: &StopContext<'_>| {
                    sub_log.lock().unwrap().push(format!("sub: {}", stop.text));
                    match stop.text.contains("half") {
                        true => StopCheck::Continue("Keep going.".into()),
                        false => StopCheck::Stop,
                    }
                })
            })
            .hooks(|h| {
                h.on_stop(move |stop: &StopContext<'_>| {
                    assert_eq!(stop.agent, &AgentId::Main);
                    main_log
                        .lock()
                        .unwrap()
                        .push(format!("main: {}", stop.text));
                    StopCheck::Stop
                })
            }),
    )
    .await
    .unwrap();
    let result = agent.prompt("delegate").await.unwrap();
    assert_eq!(result.text, "The sub-agent noted everything.");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "sub: half done",
            "sub: all noted",
            "main: The sub-agent noted everything."
        ]
    );
    let task_result = result.messages[2].content[0].clone();
    let MessageContent::ToolResult { content, .. } = task_result else {
        panic!("{task_result:?}");
    };
    assert!(format!("{content:?}").contains("all noted"), "{content:?}");
}

#[tokio::test]
async fn session_hooks_see_a_start_once_a_resume_and_an_end() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let hooked = |model: &Arc<ScriptedModel>| {
        let log = seen.clone();
        config(model)
            .session(|s| s.with_store(store.clone()))
            .hooks(|hooks| {
                let end = log.clone();
                hooks
                    .on_session_start(move |start| {
                        let started = start.session_id.is_some();
                        log.lock()
                            .unwrap()
                            .push(format!("start {:?} {started}", start.source))
                    })
                    .on_session_end(move |ended| {
                        let stored = ended.session_id.is_some();
                        end.lock().unwrap().push(format!("end {stored}"))
                    })
            })
    };
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::text("one"),
        ScriptedTurn::text("two"),
        ScriptedTurn::text("three"),
    ]));
    let agent = Agent::create(hooked(&model)).await.unwrap();
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing before the first run"
    );
    agent.prompt("a").await.unwrap();
    agent.prompt("b").await.unwrap();
    agent.close().await;
    let id = agent.session_id().to_owned();
    drop(agent);
    let resumed = Agent::resume(hooked(&model), &id).await.unwrap();
    assert_eq!(resumed.prompt("c").await.unwrap().text, "three");
    assert_eq!(
        *seen.lock().unwrap(),
        ["start Startup true", "end true", "start Resume true"]
    );
}

/// Fails, always.
#[tool(register = false, read_only)]
async fn fail() -> Result<String, tool_sdk::ToolError> {
    Err(tool_sdk::ToolError::failed("the disk is full"))
}

/// Writes something (not read-only: it needs permission).
#[tool(register = false)]
async fn write_it(text: String) -> String {
    format!("wrote {text}")
}

/// Records every event it sees, with the input that matters, in order.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn push(&self, line: String) {
        self.0.lock().unwrap().push(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

impl Hook for Recorder {
    fn pre_tool_use<'a>(&'a self, call: &'a ToolCall<'a>) -> BoxFuture<'a, HookDecision> {
        self.push(format!("pre_tool_use {} {}", call.tool.name(), call.input));
        Box::pin(std::future::ready(HookDecision::Continue))
    }

    fn post_tool_use<'a>(&'a self, result: &'a ToolResult<'a>) -> BoxFuture<'a, ()> {
        self.push(format!(
            "post_tool_use {} {}",
            result.tool,
            result.output.to_text()
        ));
        Box::pin(std::future::ready(()))
    }

    fn post_tool_use_failure<'a>(&'a self, failure: &'a ToolFailure<'a>) -> BoxFuture<'a, ()> {
        self.push(format!(
            "post_tool_use_failure {} {}",
            failure.tool, failure.error
        ));
        Box::pin(std::future::ready(()))
    }

    fn permission_request<'a>(
        &'a self,
        question: &'a PermissionQuestion,
    ) -> BoxFuture<'a, Option<PermissionAnswer>> {
        self.push(format!(
            "permission_request {} {}",
            question.tool, question.input
        ));
        Box::pin(std::future::ready(None))
    }

    fn user_prompt_submit<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, PromptCheck> {
        self.push(format!("user_prompt_submit {prompt}"));
        Box::pin(std::future::ready(PromptCheck::Continue))
    }

    fn notification<'a>(&'a self, notification: &'a Notification) -> BoxFuture<'a, ()> {
        let kind = notification.kind.as_str();
        self.push(format!("notification {kind} {}", notification.message));
        Box::pin(std::future::ready(()))
    }

    fn stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        self.push(format!("stop {:?} {}", stop.agent, stop.text));
        Box::pin(std::future::ready(StopCheck::Stop))
    }

    fn subagent_start<'a>(&'a self, start: &'a SubagentStart<'a>) -> BoxFuture<'a, ()> {
        self.push(format!("subagent_start {} {}", start.kind, start.prompt));
        Box::pin(std::future::ready(()))
    }

    fn subagent_stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        assert_ne!(stop.agent, &AgentId::Main);
        self.push(format!("subagent_stop {}", stop.text));
        Box::pin(std::future::ready(StopCheck::Stop))
    }

    fn session_start<'a>(&'a self, start: &'a SessionStart<'a>) -> BoxFuture<'a, ()> {
        self.push(format!("session_start {:?}", start.source));
        Box::pin(std::future::ready(()))
    }

    fn session_end<'a>(&'a self, end: &'a SessionEnd<'a>) -> BoxFuture<'a, ()> {
        self.push(format!("session_end {:?}", end.reason));
        Box::pin(std::future::ready(()))
    }
}

fn all_tools() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    for tool in [
        Arc::new(NoteTool) as Arc<dyn tool_sdk::Tool>,
        Arc::new(FailTool),
        Arc::new(WriteItTool),
        Arc::new(TaskTool),
    ] {
        registry.register(tool).unwrap();
    }
    Arc::new(registry)
}

#[tokio::test]
async fn each_event_reaches_one_hook_once_at_its_moment() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool_call("note", json!({"text": "a"})),
        ScriptedTurn::tool_call("write_it", json!({"text": "b"})),
        ScriptedTurn::tool_call("fail", json!({})),
        ScriptedTurn::tool_call("Task", json!({"description": "d", "prompt": "Look."})),
        ScriptedTurn::text("sub done"),
        ScriptedTurn::text("done"),
    ]));
    let recorder = Recorder::default();
    let asked = Recorder::default();
    let handler = asked.clone();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_registry(all_tools())
            .with_tools(["note", "fail", "write_it", "Task"])
            .permissions(|p| {
                p.allow("Task").with_handler(move |q: &PermissionQuestion| {
                    handler.push(format!("handler {}", q.tool));
                    PermissionAnswer::Allow
                })
            })
            .hooks(|hooks| hooks.with_hook(recorder.clone())),
    )
    .await
    .unwrap();
    assert!(recorder.lines().is_empty(), "nothing before the first run");
    let result = agent.prompt("go").await.unwrap();
    assert_eq!(result.text, "done");
    agent.close().await;
    assert_eq!(
        recorder.lines(),
        [
            "session_start Startup",
            "user_prompt_submit go",
            r#"pre_tool_use note {"text":"a"}"#,
            "post_tool_use note noted a",
            r#"pre_tool_use write_it {"text":"b"}"#,
            r#"permission_request write_it {"text":"b"}"#,
            "notification permission_prompt The agent needs your permission to use write_it",
            "post_tool_use write_it wrote b",
            "pre_tool_use fail {}",
            "post_tool_use_failure fail the disk is full",
            r#"pre_tool_use Task {"description":"d","prompt":"Look."}"#,
            "subagent_start general-purpose Look.",
            "subagent_stop sub done",
            "post_tool_use Task sub done\n\n[sub-agent: 0 tool call(s)]",
            "stop Main done",
            "session_end Closed",
        ]
    );
    assert_eq!(asked.lines(), ["handler write_it"], "asked after the hooks");
}

#[tokio::test]
async fn a_permission_request_hook_answers_for_the_user_and_the_first_answer_wins() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::tool_call("write_it", json!({"text": "b"})),
        ScriptedTurn::text("done"),
    ]));
    let notified = Recorder::default();
    let notes = notified.clone();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_registry(all_tools())
            .with_tools(["write_it"])
            .hooks(|hooks| {
                hooks
                    .on_permission_request(|q: &PermissionQuestion| {
                        Some(PermissionAnswer::Deny(format!("no {} today", q.tool)))
                    })
                    .on_permission_request(|_: &PermissionQuestion| Some(PermissionAnswer::Allow))
                    .on_notification(move |n: &Notification| notes.push(n.message.clone()))
            }),
    )
    .await
    .unwrap();
    let result = agent.prompt("write").await.unwrap();
    let last = result.messages.to_vec();
    let refused = format!("{:?}", last[last.len() - 2]);
    assert!(
        refused.contains("Permission denied: no write_it today"),
        "{refused}"
    );
    assert!(
        notified.lines().is_empty(),
        "answered: nobody needed notifying"
    );
}

#[tokio::test]
async fn dropping_an_agent_with_a_started_session_ends_it() {
    let model = Arc::new(ScriptedModel::new([ScriptedTurn::text("ok")]));
    let ended = Recorder::default();
    let log = ended.clone();
    let agent = Agent::create(config(&model).hooks(|hooks| {
        hooks.on_session_end(move |end: &SessionEnd<'_>| log.push(format!("{:?}", end.reason)))
    }))
    .await
    .unwrap();
    agent.prompt("hi").await.unwrap();
    drop(agent);
    for _ in 0..100 {
        if !ended.lines().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(ended.lines(), ["Dropped"]);

    // Never started, or closed already: nothing more to end.
    let model = Arc::new(ScriptedModel::new([ScriptedTurn::text("ok")]));
    let log = ended.clone();
    let agent = Agent::create(config(&model).hooks(|hooks| {
        hooks.on_session_end(move |end: &SessionEnd<'_>| log.push(format!("{:?}", end.reason)))
    }))
    .await
    .unwrap();
    agent.prompt("hi").await.unwrap();
    agent.close().await;
    drop(agent);
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    assert_eq!(ended.lines(), ["Dropped", "Closed"]);
}
