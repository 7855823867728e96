//! A project's own files, as a team has them: `AGENTS.md` and `CLAUDE.md` from the working
//! directory up to the repository root in the system prompt, and Claude Code's
//! `.claude/settings.json` / `settings.local.json` permission rules and command hooks, read from
//! real files and run as real processes.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, ClaudeSettings, ConfigError, ProjectMemory};
use tool_sdk::model::{Message, MessageContent, ScriptedModel, ScriptedTurn};
use tool_sdk::{ToolRegistry, tool};

/// Saves a note.
#[tool(register = false)]
async fn save_note(text: String) -> String {
    format!("saved {text}")
}

/// Deletes a note.
#[tool(register = false)]
async fn delete_note(text: String) -> String {
    format!("deleted {text}")
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(SaveNoteTool)).unwrap();
    registry.register(Arc::new(DeleteNoteTool)).unwrap();
    Arc::new(registry)
}

/// The system prompt of the first request of an agent built from `config` in `dir`.
async fn system_prompt(config: AgentConfig, dir: &Path) -> Option<String> {
    let model = ScriptedModel::new([ScriptedTurn::text("ok")]);
    let agent = Agent::create(
        config
            .with_model(model.clone())
            .with_registry(registry())
            .with_working_dir(dir),
    )
    .await
    .unwrap();
    agent.prompt("Hi").await.unwrap();
    model.requests()[0].system.clone()
}

/// A repository in a temp dir: `outside/` (above the root), `outside/repo/.git`, files at
/// the root and in `repo/crates/app`.
fn repository() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    let repo = outside.join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    write(&outside.join("AGENTS.md"), "OUTSIDE THE REPOSITORY");
    write(&repo.join("AGENTS.md"), "Root agents: run cargo test.");
    write(&repo.join("CLAUDE.md"), "Root claude: be brief.");
    write(&repo.join("crates/AGENTS.md"), "Crates agents.");
    write(
        &repo.join("crates/app/CLAUDE.md"),
        "App claude: no unsafe.\n",
    );
    let app = repo.join("crates/app");
    (dir, app)
}

#[tokio::test]
async fn memory_files_from_the_repository_root_down_join_the_system_prompt() {
    let (_dir, app) = repository();
    let system = system_prompt(
        AgentConfig::new()
            .model(|m| m.with_system_prompt("You are careful."))
            .with_project_memory(),
        &app,
    )
    .await
    .expect("a system prompt");
    assert!(system.starts_with("You are careful.\n\n"), "{system}");
    assert!(!system.contains("OUTSIDE"), "{system}");
    let order: Vec<usize> = [
        "Root agents",
        "Root claude",
        "Crates agents",
        "App claude: no unsafe.\n</project-file>",
    ]
    .iter()
    .map(|text| {
        system
            .find(text)
            .unwrap_or_else(|| panic!("{text} in {system}"))
    })
    .collect();
    assert!(order.is_sorted(), "{order:?} in {system}");
    // Each file is named by its path.
    let root = app
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .canonicalize()
        .unwrap();
    let tag = format!(
        "<project-file path=\"{}\">",
        root.join("CLAUDE.md").display()
    );
    assert!(system.contains(&tag), "{tag} in {system}");

    // Without the option, nothing is read.
    let plain = system_prompt(
        AgentConfig::new().model(|m| m.with_system_prompt("Plain.")),
        &app,
    )
    .await;
    assert_eq!(plain.as_deref(), Some("Plain."));
}

#[tokio::test]
async fn without_a_repository_only_the_working_directory_counts() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("AGENTS.md"), "Parent.");
    let work = dir.path().join("work");
    write(&work.join("CLAUDE.md"), "Here.");
    // Linked to the other name, as teams do: read once.
    #[cfg(unix)]
    std::os::unix::fs::symlink("CLAUDE.md", work.join("AGENTS.md")).unwrap();
    let memory = ProjectMemory::load(&work).unwrap();
    let texts: Vec<&str> = memory.files.iter().map(|f| f.text.as_str()).collect();
    assert_eq!(texts, ["Here."]);
    let system = system_prompt(AgentConfig::new().with_project_memory(), &work)
        .await
        .unwrap();
    assert!(
        system.contains("Here.") && !system.contains("Parent."),
        "{system}"
    );
}

#[tokio::test]
async fn an_unreadable_memory_file_fails_create_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("CLAUDE.md"), [0xff, 0xfe, 0x00]).unwrap();
    let error = Agent::create(
        AgentConfig::new()
            .with_model(ScriptedModel::new([]))
            .with_registry(registry())
            .with_working_dir(dir.path())
            .with_project_memory(),
    )
    .await
    .unwrap_err();
    let AgentError::Config(ConfigError::ProjectMemory { path, source }) = &error else {
        panic!("{error:?}")
    };
    assert!(path.ends_with("CLAUDE.md"), "{error}");
    assert_eq!(source.kind(), std::io::ErrorKind::InvalidData, "{error}");
    let message = error.to_string();
    assert!(message.contains("CLAUDE.md"), "{message}");
    assert!(message.contains("project memory"), "{message}");
}

/// A config that reads `.claude/settings.json` from `dir`, with the notes registry.
fn settings_config(dir: &Path, model: ScriptedModel) -> AgentConfig {
    AgentConfig::new()
        .with_model(model)
        .with_registry(registry())
        .with_working_dir(dir)
        .with_claude_settings()
}

/// The tool results of a run, as `(text, is_error)`.
fn results(messages: &[Message]) -> Vec<(String, bool)> {
    messages
        .iter()
        .flat_map(|m| &m.content)
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                content, is_error, ..
            } => Some((
                content
                    .iter()
                    .map(|c| match c {
                        tool_sdk::ContentBlock::Text { text } => text.clone(),
                        _ => String::new(),
                    })
                    .collect(),
                *is_error,
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn claude_code_settings_decide_what_runs_without_asking() {
    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".claude/settings.json"),
        r#"{
            "$schema": "https://json.schemastore.org/claude-code-settings.json",
            "permissions": {"allow": ["save_note", "delete_note"], "defaultMode": "plan"},
            "env": {"FOO": "1"}
        }"#,
    );
    write(
        &dir.path().join(".claude/settings.local.json"),
        r#"{"permissions": {"deny": ["delete_note", "mcp__github"], "allow": ["Bash(cargo test:*)"]}}"#,
    );
    let settings = ClaudeSettings::load(dir.path()).unwrap();
    assert_eq!(settings.files.len(), 2);
    let text = |rules: &[tool_sdk::permission::Rule]| -> Vec<String> {
        rules.iter().map(ToString::to_string).collect()
    };
    assert_eq!(
        text(&settings.permissions.allow),
        ["save_note", "delete_note", "Bash(cargo test:*)"]
    );
    assert_eq!(
        text(&settings.permissions.deny),
        ["delete_note", "mcp__github__*"]
    );
    assert_eq!(settings.warnings.len(), 1, "{:?}", settings.warnings);
    assert!(settings.warnings[0].contains("permissions.defaultMode"));
    assert!(settings.warnings[0].contains("settings.json"));

    // End to end: `prompt` refuses whatever would ask; the files' rules decide.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("save_note", json!({"text": "a"}))
            .with_tool_call("delete_note", json!({"text": "b"})),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::create(settings_config(dir.path(), model))
        .await
        .unwrap();
    let result = agent.prompt("Save a, delete b.").await.unwrap();
    let outcomes = results(&result.messages.to_vec());
    assert_eq!(outcomes[0], ("saved a".to_owned(), false));
    assert!(outcomes[1].1, "{outcomes:?}");
    assert!(outcomes[1].0.contains("delete_note"), "{outcomes:?}");

    // Without the option, both would ask, and so are refused.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("save_note", json!({"text": "a"})),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(registry())
            .with_working_dir(dir.path()),
    )
    .await
    .unwrap();
    let result = agent.prompt("Save a.").await.unwrap();
    assert!(results(&result.messages.to_vec())[0].1);
}

#[tokio::test]
async fn bad_settings_are_errors_naming_the_file_and_bad_allow_rules_warnings() {
    let cases = [
        ("{ not json", "not valid JSON"),
        (r#"[1]"#, "must be a JSON object"),
        (r#"{"permissions": []}"#, "`permissions` must be an object"),
        (
            r#"{"permissions": {"deny": "Bash(rm:*)"}}"#,
            "`permissions.deny` must be a list of strings",
        ),
        (
            r#"{"permissions": {"deny": ["Bash(rm:*"]}}"#,
            "`permissions.deny`: invalid permission rule",
        ),
        (
            r#"{"permissions": {"ask": ["Bash()"]}}"#,
            "`permissions.ask`: invalid permission rule",
        ),
    ];
    for (text, expected) in cases {
        let dir = tempfile::tempdir().unwrap();
        write(&dir.path().join(".claude/settings.local.json"), text);
        let error = Agent::create(settings_config(dir.path(), ScriptedModel::new([])))
            .await
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{text}: {error}");
        assert!(error.contains("settings.local.json"), "{text}: {error}");
    }

    let dir = tempfile::tempdir().unwrap();
    write(
        &dir.path().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls", "save_note"]}}"#,
    );
    let settings = ClaudeSettings::load(dir.path()).unwrap();
    assert_eq!(settings.permissions.allow.len(), 1);
    assert!(
        settings.warnings[0].contains("settings.json")
            && settings.warnings[0].contains("\"Bash(ls\""),
        "{:?}",
        settings.warnings
    );
}

#[tokio::test]
async fn a_config_file_turns_both_on() {
    let (_dir, app) = repository();
    write(
        &app.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["save_note"]}}"#,
    );
    let file = app.join("agent.toml");
    write(
        &file,
        &format!(
            "project_memory = true\nclaude_settings = true\nworking_dir = {:?}\n",
            app.display().to_string()
        ),
    );
    let config = AgentConfig::from_file(&file).unwrap();
    assert!(config.project_memory && config.claude_settings);
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("save_note", json!({"text": "x"})),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::create(config.with_model(model.clone()).with_registry(registry()))
        .await
        .unwrap();
    let result = agent.prompt("Save x.").await.unwrap();
    assert_eq!(
        results(&result.messages.to_vec())[0],
        ("saved x".to_owned(), false)
    );
    let system = model.requests()[0].system.clone().unwrap();
    assert!(system.contains("App claude: no unsafe."), "{system}");
}

#[tokio::test]
async fn claude_code_command_hooks_run_for_their_events_and_are_obeyed() {
    let dir = tempfile::tempdir().unwrap();
    let settings = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command":
            "cat > prompt.json; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"UserPromptSubmit\", \"additionalContext\": \"Notes live in notes/.\"}}'"}]}],
        "PermissionRequest": [{"matcher": "save_note", "hooks": [{"type": "command", "command":
            "cat > permission.json; echo '{\"hookSpecificOutput\": {\"hookEventName\": \"PermissionRequest\", \"decision\": {\"behavior\": \"allow\"}}}'"}]}],
        "PreToolUse": [{"matcher": "delete_.*|Bash", "hooks": [{"type": "command", "command":
            "cat > \"$CLAUDE_PROJECT_DIR/pre.json\"; echo 'deleting is off today' >&2; exit 2"}]}],
        "Stop": [{"hooks": [{"type": "command", "timeout": 10, "command":
            "test -e stopped && exit 0; touch stopped; echo '{\"decision\": \"block\", \"reason\": \"Say goodbye.\"}'"}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > session_end.json"}]}],
        "PostToolUseFailure": [{"matcher": "delete_note", "hooks": [{"type": "command", "command": "cat > failure.json"}]}],
        "SessionStart": [{"matcher": "resume", "hooks": [{"type": "command", "command": "touch resumed"}]}]
    }});
    write(
        &dir.path().join(".claude/settings.json"),
        &settings.to_string(),
    );
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("save_note", json!({"text": "a"}))
            .with_tool_call("delete_note", json!({"text": "b"})),
        ScriptedTurn::text("done"),
        ScriptedTurn::text("Goodbye."),
    ]);
    let agent = Agent::create(settings_config(dir.path(), model.clone()))
        .await
        .unwrap();
    let result = agent.prompt("Save a, delete b.").await.unwrap();
    let read = |name: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        serde_json::from_str(&text).unwrap()
    };

    // UserPromptSubmit: saw the prompt, and its context went with it.
    assert_eq!(read("prompt.json")["prompt"], "Save a, delete b.");
    assert_eq!(read("prompt.json")["hook_event_name"], "UserPromptSubmit");
    let first = model.requests()[0].messages[0].clone();
    assert!(
        format!("{first:?}").contains("Notes live in notes/."),
        "{first:?}"
    );
    // PermissionRequest allowed save_note, which `prompt` would otherwise refuse; PreToolUse
    // refused delete_note with its stderr.
    let outcomes = results(&result.messages.to_vec());
    assert_eq!(outcomes[0], ("saved a".to_owned(), false));
    assert_eq!(
        outcomes[1],
        ("Permission denied: deleting is off today".to_owned(), true)
    );
    assert_eq!(read("permission.json")["tool_name"], "save_note");
    assert_eq!(read("pre.json")["tool_name"], "delete_note");
    assert_eq!(read("pre.json")["tool_input"], json!({"text": "b"}));
    // PostToolUseFailure saw the refusal.
    assert_eq!(read("failure.json")["tool_name"], "delete_note");
    let failure = read("failure.json")["error"].to_string();
    assert!(failure.contains("deleting is off today"), "{failure}");
    // Stop sent the run on once, with its reason.
    assert_eq!(result.text, "Goodbye.");
    let sent_on = model.requests()[2].messages.last().cloned().unwrap();
    assert!(
        format!("{sent_on:?}").contains("Say goodbye."),
        "{sent_on:?}"
    );
    // SessionEnd on close; SessionStart's matcher let only resumes through.
    assert!(!dir.path().join("session_end.json").exists());
    agent.close().await;
    assert_eq!(read("session_end.json")["hook_event_name"], "SessionEnd");
    assert!(!dir.path().join("resumed").exists());
}

#[tokio::test]
async fn bad_command_hooks_fail_create_naming_the_file() {
    for (hooks, expected) in [
        (
            json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}),
            "not a regular expression",
        ),
        (
            json!({"Stop": [{"hooks": [{"type": "command"}]}]}),
            "needs a `command`",
        ),
        (json!({"Stop": {}}), "must be a list"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".claude/settings.json");
        write(&path, &json!({ "hooks": hooks }).to_string());
        let error = Agent::create(settings_config(dir.path(), ScriptedModel::new([])))
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains(expected), "{error}");
        assert!(error.contains("settings.json"), "{error}");
    }
}

#[tokio::test]
async fn a_command_hook_may_answer_before_it_reads_a_large_input() {
    let dir = tempfile::tempdir().unwrap();
    // 100 kB out before reading 300 kB in: both pipes fill unless both are served at once.
    let command = "head -c 100000 /dev/zero | tr '\\0' x; cat > /dev/null";
    let settings = json!({"hooks": {"UserPromptSubmit": [{"hooks": [
        {"type": "command", "command": command, "timeout": 5}
    ]}]}});
    write(
        &dir.path().join(".claude/settings.json"),
        &settings.to_string(),
    );
    let model = ScriptedModel::new([ScriptedTurn::text("ok")]);
    let agent = Agent::create(settings_config(dir.path(), model.clone()))
        .await
        .unwrap();
    agent.prompt("y".repeat(300_000)).await.unwrap();
    let sent = format!("{:?}", model.requests()[0].messages[0]);
    assert!(
        sent.contains(&"x".repeat(100_000)),
        "the hook's context was lost"
    );
}
