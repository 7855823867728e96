//! The run hooks end to end on `ScriptedModel`: a prompt hook adds context or blocks (nothing
//! sent, nothing stored), stop hooks send the agent and its sub-agents on (bounded), session
//! hooks see starts (new and resumed) and ends.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tool_sdk::agent::{
    Agent, AgentConfig, AgentError, PromptCheck, StopCheck, StopContext,
    SubagentConfig,
};
use tool_sdk::builtin::TaskTool;
use tool_sdk::model::{Message, MessageContent, Role, ScriptedModel, ScriptedTurn};
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
