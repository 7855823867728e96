//! The built-ins that talk to the agent or the user: TodoWrite, AskUserQuestion,
//! ExitPlanMode (with plan mode), Skill.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent};
use tool_sdk::builtin::{
    Answer, AskUserQuestionTool, ExitPlanModeTool, SkillTool, TodoList, TodoStatus, TodoWriteTool,
};
use tool_sdk::model::{ScriptedModel, ScriptedTurn};
use tool_sdk::permission::PermissionMode;
use tool_sdk::{State, ToolContext, ToolRegistry, ToolUpdateKind, tool};

fn registry_with(tools: Vec<Arc<dyn tool_sdk::Tool>>) -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    registry
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-sdk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

// ---- TodoWrite ----

#[tokio::test]
async fn todo_write_keeps_the_list_per_session_and_shows_it_to_the_ui() {
    let registry = registry_with(vec![Arc::new(TodoWriteTool)]);
    let updates = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = updates.clone();
    let ctx = ToolContext::default().with_updates(move |update| sink.lock().unwrap().push(update));
    let todos = json!({"todos": [
        {"content": "Write tests", "status": "completed", "activeForm": "Writing tests"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"}
    ]});
    let out = registry.call("TodoWrite", todos.clone(), &ctx).await;
    assert!(!out.is_error, "{}", out.to_text());
    assert!(
        out.to_text()
            .contains("1 completed, 1 in progress, 1 pending")
    );
    let list = ctx.session::<TodoList>().items();
    assert_eq!(list.len(), 3);
    assert_eq!(list[1].status, TodoStatus::InProgress);
    assert_eq!(list[1].active_form, "Fixing the bug");
    let updates = updates.lock().unwrap().clone();
    assert!(
        matches!(&updates[0].kind, ToolUpdateKind::Metadata(m) if m["todos"] == todos["todos"]),
        "{updates:?}"
    );

    let bad = registry
        .call(
            "TodoWrite",
            json!({"todos": [{"content": "x", "status": "doing", "activeForm": "x"}]}),
            &ctx,
        )
        .await;
    assert!(bad.is_error);
    assert!(
        bad.to_text()
            .contains(r#"must be one of "pending", "in_progress", "completed""#),
        "{}",
        bad.to_text()
    );
    assert_eq!(
        ctx.session::<TodoList>().items().len(),
        3,
        "a bad call changes nothing"
    );
}

// ---- AskUserQuestion ----

fn question() -> serde_json::Value {
    json!({"questions": [{
        "question": "Which database should we use?",
        "header": "Database",
        "options": [
            {"label": "Postgres", "description": "Relational, robust"},
            {"label": "SQLite", "description": "Embedded, simple"}
        ],
        "multiSelect": false
    }]})
}

#[tokio::test]
async fn ask_user_question_goes_to_the_apps_handler() {
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("AskUserQuestion", question()),
        ScriptedTurn::text("Postgres it is."),
    ]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(Arc::new(registry_with(vec![Arc::new(AskUserQuestionTool)])))
            .with_question_handler(move |questions: Vec<tool_sdk::builtin::Question>| {
                seen.fetch_add(1, Ordering::SeqCst);
                Ok(questions
                    .into_iter()
                    .map(|q| Answer {
                        question: q.question,
                        answer: vec![q.options[0].label.clone()],
                    })
                    .collect())
            }),
    )
    .await
    .unwrap();
    let result = agent.prompt("set up storage").await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    let answered = serde_json::to_string(&result.messages).unwrap();
    assert!(
        answered.contains(r#"The user answered: \"Which database should we use?\" = \"Postgres\""#),
        "{answered}"
    );
}

#[tokio::test]
async fn ask_user_question_without_a_handler_says_so() {
    let registry = registry_with(vec![Arc::new(AskUserQuestionTool)]);
    let out = registry
        .call("AskUserQuestion", question(), &ToolContext::default())
        .await;
    assert!(out.is_error);
    assert!(
        out.to_text().contains("no question handler"),
        "{}",
        out.to_text()
    );

    let mut one_option = question();
    one_option["questions"][0]["options"]
        .as_array_mut()
        .unwrap()
        .pop();
    let out = registry
        .call("AskUserQuestion", one_option, &ToolContext::default())
        .await;
    // The schema says so (a model that reads it, or TestModel, keeps to it), so the input
    // check refuses it before the tool runs.
    assert!(out.is_error);
    assert!(
        out.to_text()
            .contains("/questions/0/options: must NOT have fewer than 2 items"),
        "{}",
        out.to_text()
    );
}

// ---- plan mode and ExitPlanMode ----

#[derive(Clone, Default)]
struct Writes(Arc<AtomicUsize>);

/// Writes a file (counts writes instead).
#[tool(register = false)]
async fn write_file(path: String, writes: State<Writes>) -> String {
    writes.0.0.fetch_add(1, Ordering::SeqCst);
    format!("wrote {path}")
}

/// Reads a file.
#[tool(register = false, read_only)]
async fn read_file(path: String) -> String {
    format!("contents of {path}")
}

#[tokio::test]
async fn plan_mode_runs_only_read_only_tools_until_the_plan_is_approved() {
    let writes = Writes::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("read_file", json!({"path": "a.rs"}))
            .with_tool_call("write_file", json!({"path": "a.rs"})),
        ScriptedTurn::tool_call("ExitPlanMode", json!({"plan": "1. Edit a.rs\n2. Test"})),
        ScriptedTurn::tool_call("write_file", json!({"path": "a.rs"})),
        ScriptedTurn::text("Done."),
    ]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(Arc::new(registry_with(vec![
                Arc::new(WriteFileTool),
                Arc::new(ReadFileTool),
                Arc::new(ExitPlanModeTool),
            ])))
            .with_state(writes.clone())
            .permissions(|p| p.allow("write_file").allow("ExitPlanMode"))
            .permissions(|p| p.with_mode(PermissionMode::Plan)),
    )
    .await
    .unwrap();
    let mut run = agent.run("change a.rs");
    let mut outcomes = Vec::new();
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ToolCompleted { name, .. } => outcomes.push(format!("{name} ok")),
            AgentEvent::ToolFailed { name, output, .. } => {
                outcomes.push(format!("{name} failed: {}", output.to_text()))
            }
            _ => {}
        }
    }
    assert_eq!(outcomes[0], "read_file ok");
    assert!(
        outcomes[1].starts_with("write_file failed: Permission denied: plan mode is on"),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[2], "ExitPlanMode ok");
    assert_eq!(outcomes[3], "write_file ok");
    assert_eq!(
        writes.0.load(Ordering::SeqCst),
        1,
        "the write in plan mode never ran"
    );
}

#[tokio::test]
async fn exit_plan_mode_outside_plan_mode_is_an_error() {
    let registry = registry_with(vec![Arc::new(ExitPlanModeTool)]);
    let out = registry
        .call(
            "ExitPlanMode",
            json!({"plan": "x"}),
            &ToolContext::default(),
        )
        .await;
    assert!(out.is_error);
    assert!(
        out.to_text().contains("plan mode is not on"),
        "{}",
        out.to_text()
    );
}

// ---- Skill ----

#[tokio::test]
async fn skills_load_from_skill_md_folders() {
    let root = temp_dir("skills-ok");
    std::fs::create_dir_all(root.join("pdf")).unwrap();
    std::fs::write(
        root.join("pdf/SKILL.md"),
        "---\nname: pdf\ndescription: Extract text and tables from PDF files.\nallowed-tools: Read, Bash\n---\n\n# PDF\n\nRun `scripts/extract.py`.\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("commit")).unwrap();
    std::fs::write(
        root.join("commit/SKILL.md"),
        "---\ndescription: Write a good commit message.\n---\nUse the imperative mood.\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("not-a-skill")).unwrap();

    let skills = SkillTool::load([root.clone(), root.join("missing")])
        .await
        .unwrap();
    let names: Vec<&str> = skills.skills().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        ["commit", "pdf"],
        "the folder name stands in for a missing name"
    );
    assert_eq!(
        skills.skills()[1].allowed_tools.as_deref(),
        Some(&["Read".to_owned(), "Bash".to_owned()][..])
    );
    let registry = registry_with(vec![Arc::new(skills)]);
    let info = &registry.tool_infos()[0];
    assert!(
        info.description
            .contains("- pdf: Extract text and tables from PDF files.")
    );
    assert!(
        info.description
            .contains("- commit: Write a good commit message.")
    );

    let ctx = ToolContext::default();
    let out = registry
        .call("Skill", json!({"skill": "pdf", "args": "report.pdf"}), &ctx)
        .await;
    let text = out.to_text();
    assert!(
        text.contains("# PDF\n\nRun `scripts/extract.py`."),
        "{text}"
    );
    assert!(text.contains("Arguments: report.pdf"), "{text}");
    assert!(
        !text.contains("description:"),
        "front matter stripped: {text}"
    );
    let out = registry.call("Skill", json!({"skill": "docx"}), &ctx).await;
    assert!(out.is_error);
    assert!(
        out.to_text().contains(r#"must be one of "commit", "pdf""#),
        "{}",
        out.to_text()
    );
    std::fs::remove_dir_all(root).unwrap();
}

#[tokio::test]
async fn a_broken_skill_is_a_clear_error_naming_its_file() {
    let root = temp_dir("skills-bad");
    std::fs::create_dir_all(root.join("bad")).unwrap();
    std::fs::write(
        root.join("bad/SKILL.md"),
        "---\nname: bad\n---\nno description\n",
    )
    .unwrap();
    let error = SkillTool::load([&root]).await.unwrap_err();
    assert!(error.path.ends_with("bad/SKILL.md"));
    assert!(
        error.to_string().contains("needs a `description:`"),
        "{error}"
    );

    std::fs::write(root.join("bad/SKILL.md"), "# no front matter\n").unwrap();
    let error = SkillTool::load([&root]).await.unwrap_err();
    assert!(
        error.to_string().contains("no YAML front matter"),
        "{error}"
    );

    std::fs::write(
        root.join("bad/SKILL.md"),
        "---\nname: Bad Name\ndescription: x\n---\n",
    )
    .unwrap();
    let error = SkillTool::load([&root]).await.unwrap_err();
    assert!(
        error.to_string().contains("invalid name \"Bad Name\""),
        "{error}"
    );
    std::fs::remove_dir_all(root).unwrap();
}
