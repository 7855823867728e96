//! The agent loop end to end on `ScriptedModel`: every step's failure becomes an `is_error`
//! tool_result, read-only calls overlap, results keep order, timeouts and cancellation stop
//! tools, events stream out, sub-agents report back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use serde_json::json;
use tokio::sync::Barrier;
use tool_sdk::agent::{Agent, AgentConfig, AgentError, AgentEvent, SessionLeasing, SubagentConfig};
use tool_sdk::builtin::TaskTool;
use tool_sdk::model::{
    Effort, Message, MessageContent, ModelError, ModelInfo, Price, Role, ScriptedModel,
    ScriptedTurn, Thinking,
};
use tool_sdk::permission::{HookDecision, PermissionAnswer, PermissionMode, PermissionQuestion};
use tool_sdk::{State, Tool, ToolContext, ToolError, ToolRegistry, tool};

// ---- tools ----

/// Waits at a barrier: two of these can only finish if they run at the same time.
#[tool(register = false, read_only, title = "Meet {who}")]
async fn meet(who: String, barrier: State<Arc<Barrier>>) -> String {
    barrier.wait().await;
    format!("met {who}")
}

#[derive(Clone, Default)]
struct Activity {
    running: Arc<AtomicUsize>,
    peak: Arc<AtomicUsize>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Activity {
    async fn track(&self, label: String) {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
        self.log.lock().unwrap().push(label);
        self.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Reads something.
#[tool(register = false, read_only)]
async fn look(what: String, activity: State<Activity>) -> String {
    activity.track(format!("look {what}")).await;
    format!("saw {what}")
}

/// Writes something.
#[tool(register = false)]
async fn write_note(text: String, activity: State<Activity>, ctx: &ToolContext) -> String {
    activity.track(format!("write {text}")).await;
    ctx.files().record_write(ctx.resolve(format!("{text}.txt")));
    format!("wrote {text}")
}

async fn must_be_positive(input: &CountInput, _ctx: &ToolContext) -> Result<(), String> {
    if input.n == 0 {
        return Err("n must be positive".into());
    }
    Ok(())
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct CountInput {
    /// How many.
    n: u32,
}

/// Counts to n, reporting progress.
#[tool(register = false, read_only, validate = must_be_positive)]
async fn count(#[input] input: CountInput, ctx: &ToolContext) -> String {
    for i in 1..=input.n {
        ctx.progress(format!("{i}/{}", input.n));
    }
    format!("counted to {}", input.n)
}

/// Panics.
#[tool(register = false, read_only)]
async fn explode() -> String {
    panic!("kaboom")
}

/// Starts a child process and waits for it forever.
#[tool(register = false, read_only, timeout = "300ms")]
async fn hang(pid_file: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let child = ctx
        .command("sleep")
        .arg("30")
        .spawn()
        .map_err(|e| ToolError::failed(e.to_string()))?;
    let pid = child.id().unwrap_or_default();
    std::fs::write(&pid_file, pid.to_string()).map_err(|e| ToolError::failed(e.to_string()))?;
    let output = child.wait_with_output().await;
    Ok(format!("{output:?}"))
}

/// Starts a shell that starts a grandchild (whose pid it writes to `pid_file`), then waits
/// for both forever.
#[tool(register = false, read_only, timeout = "2s")]
async fn hang_family(pid_file: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let status = ctx
        .command("sh")
        .args([
            "-c",
            r#"sleep 300 & echo $! > "$1.tmp" && mv "$1.tmp" "$1"; wait"#,
        ])
        .args(["sh", &pid_file])
        .status()
        .await
        .map_err(|e| ToolError::failed(e.to_string()))?;
    Ok(status.to_string())
}

/// Says a lot.
#[tool(register = false, read_only)]
async fn chatter(chars: usize) -> String {
    "x".repeat(chars)
}

// ---- helpers ----

fn registry(tools: Vec<Arc<dyn Tool>>) -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    Arc::new(registry)
}

fn all_tools() -> Arc<ToolRegistry> {
    registry(vec![
        Arc::new(MeetTool),
        Arc::new(LookTool),
        Arc::new(WriteNoteTool),
        Arc::new(CountTool),
        Arc::new(ExplodeTool),
        Arc::new(HangTool),
        Arc::new(ChatterTool),
        Arc::new(TaskTool),
    ])
}

fn config(model: ScriptedModel) -> AgentConfig {
    AgentConfig::new()
        .with_model(model)
        .with_registry(all_tools())
        .with_state(Arc::new(Barrier::new(2)))
        .with_state(Activity::default())
        .permissions(|p| p.allow("write_note"))
}

/// The tool_result blocks of the last user message, in order.
fn last_results(messages: &[Message]) -> Vec<(String, String, bool)> {
    let last = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && matches!(m.content[0], MessageContent::ToolResult { .. }))
        .expect("a tool result message");
    last.content
        .iter()
        .map(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
            } => {
                let text = content
                    .iter()
                    .map(|c| match c {
                        tool_sdk::ContentBlock::Text { text } => text.clone(),
                        _ => String::new(),
                    })
                    .collect::<String>();
                (tool_use_id.clone(), text, *is_error)
            }
            other => panic!("not a tool result: {other:?}"),
        })
        .collect()
}

/// Every tool_use is answered by exactly one tool_result in the next message.
fn assert_transcript_valid(messages: &[Message]) {
    for (index, message) in messages.iter().enumerate() {
        let uses: Vec<&str> = message.tool_uses().map(|u| u.id.as_str()).collect();
        if uses.is_empty() {
            continue;
        }
        let next = messages
            .get(index + 1)
            .unwrap_or_else(|| panic!("tool_use without results at message {index}"));
        let answered: Vec<&str> = next
            .content
            .iter()
            .filter_map(|b| match b {
                MessageContent::ToolResult { tool_use_id, .. } => Some(tool_use_id.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(uses, answered, "message {index}");
    }
}

// ---- creation ----

#[tokio::test]
async fn unknown_tool_names_fail_create_with_near_matches() {
    let error =
        Agent::create(config(ScriptedModel::new([])).with_tools(["look", "Looc", "writ_note"]))
            .await
            .unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("no tool is named `Looc` (did you mean `look`?)"),
        "{message}"
    );
    assert!(
        message.contains("no tool is named `writ_note` (did you mean `write_note`?)"),
        "{message}"
    );
}

#[tokio::test]
async fn globs_and_exact_names_choose_what_the_model_sees() {
    let agent = Agent::create(config(ScriptedModel::new([])).with_tools(["look", "*e*"]))
        .await
        .unwrap();
    assert_eq!(
        agent.tool_names(),
        ["look", "chatter", "explode", "meet", "write_note"]
    );
    let all = Agent::create(config(ScriptedModel::new([]))).await.unwrap();
    assert_eq!(all.tool_names().len(), 8, "no list means every tool");
}

#[tokio::test]
async fn missing_state_fails_create() {
    let error = Agent::create(
        AgentConfig::new()
            .with_model(ScriptedModel::new([]))
            .with_registry(all_tools())
            .with_tools(["look"]),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            &error,
            AgentError::MissingState { tool, type_name }
                if tool == "look" && type_name.ends_with("Activity")
        ),
        "{error}"
    );
}

fn model_id(config: &AgentConfig) -> &str {
    match &config.model.source {
        Some(tool_sdk::agent::ModelSource::Spec(spec)) => &spec.id,
        other => panic!("expected a model spec, got {other:?}"),
    }
}

#[tokio::test]
async fn config_loads_from_toml_and_json_files() {
    let dir = std::env::temp_dir().join(format!("agent-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml_path = dir.join("agent.toml");
    std::fs::write(
        &toml_path,
        "system_prompt = \"Be brief.\"\ntools = [\"look\"]\nmax_turns = 7\n\
         [model]\nprovider = \"openai\"\nid = \"llama3\"\nbase_url = \"http://localhost:11434/v1\"\n\
         [subagents.reviewer]\ndescription = \"Reviews code\"\ntools = [\"look\"]\n",
    )
    .unwrap();
    let config = AgentConfig::from_file(&toml_path).unwrap();
    assert_eq!(config.limits.max_turns, 7);
    assert_eq!(config.tools.as_deref(), Some(&["look".to_owned()][..]));
    assert_eq!(model_id(&config), "llama3");
    assert_eq!(config.model.system_prompt.as_deref(), Some("Be brief."));
    assert_eq!(config.subagents["reviewer"].description, "Reviews code");
    assert_eq!(
        config.limits.max_concurrent_tools, 8,
        "defaults fill the rest"
    );

    let json_path = dir.join("agent.json");
    std::fs::write(&json_path, r#"{"max_turns": 3, "max_result_chars": 100}"#).unwrap();
    let config = AgentConfig::from_file(&json_path).unwrap();
    assert_eq!(
        (config.limits.max_turns, config.limits.max_result_chars),
        (3, 100)
    );

    std::fs::write(&json_path, r#"{"max_turn": 3}"#).unwrap();
    let error = AgentConfig::from_file(&json_path).unwrap_err().to_string();
    assert!(error.contains("unknown field `max_turn`"), "{error}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[tokio::test]
async fn a_file_and_the_same_settings_in_code_are_one_config() {
    let file: AgentConfig = toml::from_str(
        r#"
        system_prompt = "Be brief."
        tools = ["Read", "Glob"]
        working_dir = "/work"
        additional_dirs = ["/data"]
        max_turns = 7
        max_tokens = 1024
        temperature = 0.25
        tool_timeout_secs = 30
        max_tool_timeout_secs = 90.5
        max_concurrent_tools = 2
        max_result_chars = 1000
        coerce_inputs = false
        max_output_retries = 1
        permission_mode = "plan"
        project_memory = true
        prompt_caching = false
        max_budget_usd = 0.5
        max_run_tokens = 10000
        [model]
        provider = "openai"
        id = "llama3"
        base_url = "http://localhost:11434/v1"
        thinking = 512
        effort = "xhigh"
        [models.ft]
        context_window = 32000
        input_per_million = 1.0
        output_per_million = 4.0
        [permissions]
        allow = ["Bash(git status:*)"]
        deny = ["Read(.env)"]
        [context]
        window = 100000
        compaction = false
        [session]
        store = "sqlite:s.db"
        lease_secs = 10
        defer_approvals = true
        "#,
    )
    .unwrap();
    let code = AgentConfig::new()
        .with_model(tool_sdk::agent::ModelSpec {
            provider: tool_sdk::agent::ProviderKind::OpenAi,
            id: "llama3".into(),
            base_url: Some("http://localhost:11434/v1".into()),
            api_key_env: None,
            api_key: None,
        })
        .with_tools(["Read", "Glob"])
        .with_working_dir("/work")
        .with_coerce_inputs(false)
        .with_project_memory()
        .model(|m| {
            m.with_system_prompt("Be brief.")
                .with_max_tokens(1024)
                .with_temperature(0.25)
                .with_prompt_caching(false)
                .with_thinking(Thinking::budget(512))
                .with_effort(Effort::XHigh)
                .with_model_info("ft", ModelInfo::new(32_000, Price::per_million(1.0, 4.0)))
        })
        .limits(|l| {
            l.with_max_turns(7)
                .with_tool_timeout(Duration::from_secs(30))
                .with_max_tool_timeout(Duration::from_secs_f64(90.5))
                .with_max_concurrent_tools(2)
                .with_max_result_chars(1000)
                .with_max_output_retries(1)
                .with_max_budget_usd(0.5)
                .with_max_run_tokens(10_000)
        })
        .permissions(|p| {
            p.with_mode(PermissionMode::Plan)
                .allow("Bash(git status:*)")
                .deny("Read(.env)")
                .with_additional_dir("/data")
        })
        .session(|s| {
            s.with_store("sqlite:s.db")
                .with_lease(SessionLeasing::Ttl(Duration::from_secs(10)))
                .with_deferred_approvals()
        })
        .context(|c| c.with_window(100_000).with_compaction(false));
    // Each key lands in its group...
    assert_eq!(file.limits, code.limits);
    assert_eq!(file.context, code.context);
    assert_eq!(file.model.temperature, Some(0.25));
    assert_eq!(
        (file.model.thinking, file.model.effort),
        (Thinking::budget(512), Some(Effort::XHigh))
    );
    assert_eq!(
        file.permissions.additional_dirs,
        [std::path::PathBuf::from("/data")]
    );
    assert_eq!(
        file.session.lease,
        SessionLeasing::Ttl(Duration::from_secs(10))
    );
    // ... and the two write out the same file, key for key.
    assert_eq!(
        toml::to_string(&file).unwrap(),
        toml::to_string(&code).unwrap()
    );
}

#[tokio::test]
async fn request_settings_set_in_code_reach_the_model_and_a_missing_model_is_one_error() {
    let model = ScriptedModel::new([ScriptedTurn::text("ok")]);
    let agent = Agent::create(
        config(model.clone()).model(|m| m.with_max_tokens(321).with_temperature(0.5)),
    )
    .await
    .unwrap();
    agent.prompt("hi").await.unwrap();
    let request = &model.requests()[0];
    assert_eq!((request.max_tokens, request.temperature), (321, Some(0.5)));

    let error = Agent::create(AgentConfig::new().with_registry(all_tools()))
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.ends_with("no model: set `[model]` in the config file or call `with_model(...)`"),
        "{error}"
    );
}

// ---- the loop ----

#[tokio::test]
async fn parallel_read_only_calls_overlap_and_results_keep_order() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("meet", json!({"who": "ada"}))
            .with_tool_call("meet", json!({"who": "bob"})),
        ScriptedTurn::text("Both met."),
    ]);
    let agent = Agent::create(config(model)).await.unwrap();
    // Each `meet` waits for the other at a barrier of two: run one after the other, they
    // would wait forever.
    let result = tokio::time::timeout(Duration::from_secs(10), agent.prompt("meet both"))
        .await
        .expect("the two calls ran at the same time")
        .unwrap();
    assert_eq!(result.text, "Both met.");
    assert_eq!(result.tool_calls, 2);
    let results = last_results(&result.messages.to_vec());
    assert_eq!(results[0].1, "met ada");
    assert_eq!(results[1].1, "met bob");
    assert_transcript_valid(&result.messages.to_vec());
}

#[tokio::test]
async fn a_mutating_call_runs_alone_and_order_is_kept() {
    let activity = Activity::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("look", json!({"what": "a"}))
            .with_tool_call("look", json!({"what": "b"}))
            .with_tool_call("write_note", json!({"text": "c"}))
            .with_tool_call("look", json!({"what": "d"})),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(all_tools())
            .with_tools(["look", "write_note"])
            .with_state(activity.clone())
            .permissions(|p| p.allow("write_note")),
    )
    .await
    .unwrap();
    let result = agent.prompt("go").await.unwrap();
    let log = activity.log.lock().unwrap().clone();
    // The write starts only after both looks ended, and the last look only after the write.
    assert_eq!(log[2], "write c");
    assert_eq!(log[3], "look d");
    assert!(log[..2].contains(&"look a".to_owned()) && log[..2].contains(&"look b".to_owned()));
    assert_eq!(
        activity.peak.load(Ordering::SeqCst),
        2,
        "a and b overlapped"
    );
    let texts: Vec<String> = last_results(&result.messages.to_vec())
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(texts, ["saw a", "saw b", "wrote c", "saw d"]);
    assert_eq!(result.files_modified.len(), 1);
    assert!(result.files_modified[0].ends_with("c.txt"));
}

#[tokio::test]
async fn concurrency_is_bounded_by_max_concurrent_tools() {
    let activity = Activity::default();
    let mut turn = ScriptedTurn::tool_call("look", json!({"what": "0"}));
    for i in 1..6 {
        turn = turn.with_tool_call("look", json!({"what": i.to_string()}));
    }
    let model = ScriptedModel::new([turn, ScriptedTurn::text("ok")]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(all_tools())
            .with_tools(["look"])
            .with_state(activity.clone())
            .limits(|l| l.with_max_concurrent_tools(3)),
    )
    .await
    .unwrap();
    agent.prompt("go").await.unwrap();
    assert_eq!(activity.peak.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn every_failing_step_becomes_an_error_result_the_model_sees() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("lok", json!({"what": "x"}))
            .with_tool_call("count", json!({"n": "many"}))
            .with_tool_call("count", json!({"n": 0}))
            .with_tool_call("explode", json!({}))
            .with_tool_call("chatter", json!({"chars": 500})),
        ScriptedTurn::raw_tool_call("count", "{\"n\": 3"),
        ScriptedTurn::text("I give up."),
    ]);
    // Large enough for the error messages (they are capped too), small enough to cut the
    // 500-character result.
    let agent = Agent::create(config(model).limits(|l| l.with_max_result_chars(300)))
        .await
        .unwrap();
    let result = agent.prompt("try things").await.unwrap();
    assert_transcript_valid(&result.messages.to_vec());
    let first_results = {
        let index = result
            .messages
            .iter()
            .position(|m| {
                m.role == Role::User && matches!(m.content[0], MessageContent::ToolResult { .. })
            })
            .unwrap();
        last_results(&result.messages.to_vec()[..=index])
    };
    let (_, unknown, is_error) = &first_results[0];
    assert!(is_error);
    assert!(
        unknown.contains("no tool is named `lok` (did you mean `look`?)"),
        "{unknown}"
    );
    assert!(
        unknown.contains("look"),
        "lists the available tools: {unknown}"
    );
    let (_, schema, is_error) = &first_results[1];
    assert!(is_error);
    assert!(
        schema.contains(r#"/n: must be integer, got "many""#),
        "{schema}"
    );
    let (_, own_check, _) = &first_results[2];
    assert!(own_check.contains("n must be positive"), "{own_check}");
    let (_, panicked, is_error) = &first_results[3];
    assert!(is_error);
    assert!(panicked.contains("the tool panicked: kaboom"), "{panicked}");
    let (_, capped, is_error) = &first_results[4];
    assert!(!is_error);
    assert!(capped.contains("200 characters cut"), "{capped}");

    let (_, malformed, is_error) = &last_results(&result.messages.to_vec())[0];
    assert!(is_error);
    assert!(
        malformed.contains("the arguments are not valid JSON: EOF while parsing"),
        "says why: {malformed}"
    );
    assert!(malformed.contains(": {\"n\": 3"), "{malformed}");
    assert!(
        malformed.contains(r#""required":["n"]"#),
        "echoes the schema: {malformed}"
    );
    assert_eq!(result.errors.len(), 5, "{:?}", result.errors);
}

#[tokio::test]
async fn a_timeout_stops_the_tool_and_kills_its_child_process() {
    let pid_file = std::env::temp_dir().join(format!("hang-{}.pid", std::process::id()));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("hang", json!({"pid_file": pid_file})),
        ScriptedTurn::text("it hung"),
    ]);
    let agent = Agent::create(config(model)).await.unwrap();
    let result = agent.prompt("hang").await.unwrap();
    let (_, text, is_error) = &last_results(&result.messages.to_vec())[0];
    assert!(is_error);
    assert!(text.contains("timed out after 300ms"), "{text}");
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let gone = async {
        loop {
            let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting to be reaped: either way it no longer runs.
            if status.is_empty() || status.split_whitespace().nth(2) == Some("Z") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), gone)
        .await
        .expect("the child process was killed");
    std::fs::remove_file(pid_file).ok();
}

/// An agent with only `hang_family`.
fn family(model: ScriptedModel) -> AgentConfig {
    AgentConfig::new()
        .with_model(model)
        .with_registry(registry(vec![Arc::new(HangFamilyTool)]))
}

/// Waits until `pid_file` names a process, then until that process no longer runs.
async fn assert_dies(pid_file: &std::path::Path, what: &str) {
    let gone = async {
        let pid = loop {
            match std::fs::read_to_string(pid_file) {
                Ok(pid) if !pid.trim().is_empty() => break pid.trim().to_owned(),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        loop {
            let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // Gone, or a zombie waiting to be reaped: either way it no longer runs.
            if status.is_empty() || status.split_whitespace().nth(2) == Some("Z") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(5), gone)
        .await
        .unwrap_or_else(|_| panic!("{what} still runs"));
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_timeout_kills_the_grandchildren_of_a_tools_command() {
    let pid_file = std::env::temp_dir().join(format!("family-timeout-{}.pid", std::process::id()));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("hang_family", json!({"pid_file": pid_file})),
        ScriptedTurn::text("it hung"),
    ]);
    let agent = Agent::create(family(model)).await.unwrap();
    let result = agent.prompt("hang").await.unwrap();
    let (_, text, is_error) = &last_results(&result.messages.to_vec())[0];
    assert!(*is_error && text.contains("timed out after 2s"), "{text}");
    assert_dies(&pid_file, "the grandchild `sleep 300`").await;
    std::fs::remove_file(pid_file).ok();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_kills_the_grandchildren_of_a_tools_command() {
    let pid_file = std::env::temp_dir().join(format!("family-cancel-{}.pid", std::process::id()));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("hang_family", json!({"pid_file": pid_file})),
        ScriptedTurn::text("unreachable"),
    ]);
    let agent = Agent::create(family(model)).await.unwrap();
    let run = agent.run("hang");
    // Cancel once the grandchild runs.
    let token = run.cancellation_token();
    let watched = pid_file.clone();
    tokio::spawn(async move {
        while std::fs::metadata(&watched).is_err() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        token.cancel();
    });
    let events: Vec<AgentEvent> = run.collect().await;
    let finished = events.iter().find_map(|event| match event {
        AgentEvent::Finished(finished) => Some(finished),
        _ => None,
    });
    assert!(
        matches!(finished.unwrap().error, Some(AgentError::Cancelled)),
        "{:?}",
        finished.unwrap().error
    );
    assert_dies(&pid_file, "the grandchild `sleep 300`").await;
    std::fs::remove_file(pid_file).ok();
}

#[tokio::test]
async fn cancelling_mid_run_answers_pending_calls_and_keeps_the_transcript_valid() {
    let pid_file = std::env::temp_dir().join(format!("cancel-{}.pid", std::process::id()));
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("hang", json!({"pid_file": pid_file}))
            .with_tool_call("write_note", json!({"text": "never"})),
        ScriptedTurn::text("unreachable"),
    ]);
    let agent = Agent::create(config(model)).await.unwrap();
    let mut run = agent.run("hang then write");
    let mut result = None;
    while let Some(event) = run.next().await {
        match event {
            AgentEvent::ToolRequested { name, .. } if name == "hang" => run.cancel(),
            AgentEvent::Finished(finished) => result = Some(*finished),
            _ => {}
        }
    }
    let result = result.unwrap();
    assert!(
        matches!(result.error, Some(AgentError::Cancelled)),
        "{:?}",
        result.error
    );
    assert_transcript_valid(&result.messages.to_vec());
    let results = last_results(&result.messages.to_vec());
    assert_eq!(results.len(), 2);
    for (_, text, is_error) in &results {
        assert!(is_error);
        assert!(text.contains("cancelled"), "{text}");
    }
    std::fs::remove_file(pid_file).ok();
}

#[tokio::test]
async fn a_run_cancelled_before_it_starts_sends_no_request() {
    let model = ScriptedModel::new([ScriptedTurn::tool_call("write_note", json!({"text": "no"}))]);
    let agent = Agent::create(config(model.clone())).await.unwrap();
    let cancel = tool_sdk::CancellationToken::new();
    cancel.cancel();
    let mut run = agent.run_with_cancellation("write a note", cancel);
    let mut finished = None;
    while let Some(event) = run.next().await {
        if let AgentEvent::Finished(result) = event {
            finished = Some(*result);
        }
    }
    let error = finished.unwrap().error;
    assert!(matches!(error, Some(AgentError::Cancelled)), "{error:?}");
    assert_eq!(model.requests().len(), 0, "no model request after cancel");
    assert_eq!(model.remaining(), 1);
}

#[tokio::test]
async fn a_model_error_mid_run_ends_the_run_with_a_valid_transcript() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("count", json!({"n": 1})),
        ScriptedTurn::error(ModelError::Overloaded {
            message: "try later".into(),
            retry_after: None,
        }),
    ]);
    let agent = Agent::create(config(model)).await.unwrap();
    let error = agent.prompt("count").await.unwrap_err();
    assert!(
        matches!(error, AgentError::Model(ModelError::Overloaded { .. })),
        "{error}"
    );
    let messages = agent.messages().await;
    assert_transcript_valid(&messages);
    assert_eq!(
        messages.last().unwrap().role,
        Role::User,
        "ends with the tool results"
    );
}

#[tokio::test]
async fn max_turns_stops_a_model_that_never_stops() {
    let model = ScriptedModel::new([])
        .with_responder(|_| ScriptedTurn::tool_call("count", json!({"n": 1})));
    let agent = Agent::create(config(model).limits(|l| l.with_max_turns(3)))
        .await
        .unwrap();
    let error = agent.prompt("loop").await.unwrap_err();
    assert!(matches!(error, AgentError::MaxTurns(3)), "{:?}", error);
    assert_transcript_valid(&agent.messages().await);
}

#[tokio::test]
async fn the_conversation_carries_over_between_prompts() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedTurn::text("Hi Ada."),
        ScriptedTurn::text("You are Ada."),
    ]));
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_registry(all_tools())
            .with_tools(Vec::<String>::new()),
    )
    .await
    .unwrap();
    agent.prompt("I am Ada.").await.unwrap();
    let result = agent.prompt("Who am I?").await.unwrap();
    assert_eq!(result.text, "You are Ada.");
    let second = &model.requests()[1];
    let texts: Vec<String> = second.messages.iter().map(Message::text).collect();
    assert_eq!(texts, ["I am Ada.", "Hi Ada.", "Who am I?"]);
    assert!(second.tools.is_empty());
}

// ---- permissions ----

#[tokio::test]
async fn mutating_calls_ask_and_prompt_refuses_them_saying_which_rule_allows_them() {
    let activity = Activity::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("write_note", json!({"text": "x"})),
        ScriptedTurn::text("could not"),
    ]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(all_tools())
            .with_tools(["write_note"])
            .with_state(activity.clone()),
    )
    .await
    .unwrap();
    let result = agent.prompt("write").await.unwrap();
    let (_, text, is_error) = &last_results(&result.messages.to_vec())[0];
    assert!(is_error);
    assert!(
        text.contains("`write_note` needs the user's permission"),
        "{text}"
    );
    assert!(text.contains("the rule `write_note`"), "{text}");
    assert!(
        activity.log.lock().unwrap().is_empty(),
        "the refused call never ran"
    );
}

#[tokio::test]
async fn deny_rules_beat_allow_rules_and_hooks_can_deny_or_rewrite() {
    let activity = Activity::default();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("write_note", json!({"text": "secret"}))
            .with_tool_call("write_note", json!({"text": "draft"}))
            .with_tool_call("write_note", json!({"text": "loud"})),
        ScriptedTurn::text("ok"),
    ]);
    let audited = Arc::new(Mutex::new(Vec::new()));
    let audit = audited.clone();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(all_tools())
            .with_tools(["write_note"])
            .with_state(activity.clone())
            .permissions(|p| p.allow("write_note"))
            .hooks(|hooks| {
                hooks
                    .on_pre_tool_use(|call| match call.input["text"].as_str() {
                        Some("secret") => HookDecision::Deny("secrets stay unwritten".into()),
                        Some("loud") => HookDecision::Rewrite(json!({"text": "LOUD"})),
                        _ => HookDecision::Continue,
                    })
                    .on_post_tool_use(move |result| {
                        audit.lock().unwrap().push(format!(
                            "{} {} -> {}",
                            result.tool,
                            result.input["text"],
                            result.output.to_text()
                        ))
                    })
            }),
    )
    .await
    .unwrap();
    let result = agent.prompt("write three").await.unwrap();
    let texts: Vec<String> = last_results(&result.messages.to_vec())
        .into_iter()
        .map(|r| r.1)
        .collect();
    assert_eq!(texts[0], "Permission denied: secrets stay unwritten");
    assert_eq!(texts[1], "wrote draft");
    assert_eq!(texts[2], "wrote LOUD", "the rewritten input ran");
    assert_eq!(
        *activity.log.lock().unwrap(),
        ["write draft", "write LOUD"],
        "the denied call never ran"
    );
    assert_eq!(
        *audited.lock().unwrap(),
        [
            r#"write_note "draft" -> wrote draft"#,
            r#"write_note "LOUD" -> wrote LOUD"#
        ]
    );

    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("write_note", json!({"text": "x"})),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::create(
        config(model)
            .with_tools(["write_note"])
            .permissions(|p| p.deny("write_note")),
    )
    .await
    .unwrap();
    let result = agent.prompt("write").await.unwrap();
    let (_, text, _) = &last_results(&result.messages.to_vec())[0];
    assert_eq!(
        text,
        "Permission denied: the rule `write_note` forbids this call"
    );
}

#[tokio::test]
async fn a_hook_rewrite_is_validated_again() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("write_note", json!({"text": "x"})),
        ScriptedTurn::text("ok"),
    ]);
    let agent = Agent::create(
        config(model)
            .with_tools(["write_note"])
            .hooks(|hooks| hooks.on_pre_tool_use(|_| HookDecision::Rewrite(json!({"text": 5})))),
    )
    .await
    .unwrap();
    let result = agent.prompt("write").await.unwrap();
    let (_, text, is_error) = &last_results(&result.messages.to_vec())[0];
    assert!(is_error);
    assert!(text.contains("/text: must be string, got 5"), "{text}");
}

#[tokio::test]
async fn a_handler_answers_and_allow_always_is_remembered() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("write_note", json!({"text": "a"})),
        ScriptedTurn::tool_call("write_note", json!({"text": "a"})),
        ScriptedTurn::tool_call("write_note", json!({"text": "b"})),
        ScriptedTurn::text("done"),
    ]);
    let asked = Arc::new(AtomicUsize::new(0));
    let count = asked.clone();
    let refused = Agent::create(
        config(ScriptedModel::new([
            ScriptedTurn::tool_call("write_note", json!({"text": "b"})),
            ScriptedTurn::text("done"),
        ]))
        .with_tools(["write_note"])
        .permissions(|p| {
            p.ask("write_note")
                .with_handler(|_: &PermissionQuestion| PermissionAnswer::Deny("only a".into()))
        }),
    )
    .await
    .unwrap();
    let result = refused.prompt("write").await.unwrap();
    assert_eq!(
        last_results(&result.messages.to_vec())[0].1,
        "Permission denied: only a"
    );
    assert!(refused.remembered_rules().is_empty());

    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model)
            .with_registry(all_tools())
            .with_tools(["write_note"])
            .with_state(Activity::default())
            .permissions(|p| {
                p.with_handler(move |question: &PermissionQuestion| {
                    count.fetch_add(1, Ordering::SeqCst);
                    if question.input["text"] == "a" {
                        PermissionAnswer::AllowAlways
                    } else {
                        PermissionAnswer::Deny("only a".into())
                    }
                })
            }),
    )
    .await
    .unwrap();
    let result = agent.prompt("write").await.unwrap();
    // "Allow always" on a tool without a path or command to narrow it remembers the whole
    // tool, so neither the second `a` nor `b` asks again.
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert_eq!(last_results(&result.messages.to_vec())[0].1, "wrote b");
    let remembered: Vec<String> = agent
        .remembered_rules()
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(remembered, ["write_note"]);
}

// ---- events ----

#[tokio::test]
async fn events_stream_text_tools_progress_and_usage() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("meet", json!({"who": "ada"}))
            .with_text("Let me check.")
            .with_tool_call("meet", json!({"who": "bob"})),
        ScriptedTurn::tool_call("count", json!({"n": 2})),
        ScriptedTurn::text("All done."),
    ]);
    let agent = Agent::create(config(model)).await.unwrap();
    let events: Vec<AgentEvent> = agent.run("go").collect().await;

    let text: String = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Let me check.All done.");
    let titles: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolRequested { title, .. } => Some(title.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(titles, ["Meet ada", "Meet bob", "count"]);
    let progress: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::ToolProgress { update, .. } => Some(format!("{update:?}")),
            _ => None,
        })
        .collect();
    assert_eq!(progress, ["Progress(\"1/2\")", "Progress(\"2/2\")"]);
    let completed = events
        .iter()
        .filter(
            |e| matches!(e, AgentEvent::ToolCompleted { display, .. } if !display.title.is_empty()),
        )
        .count();
    assert_eq!(completed, 3);
    let turns = events
        .iter()
        .filter(|e| matches!(e, AgentEvent::TurnCompleted { .. }))
        .count();
    assert_eq!(turns, 3);
    let Some(AgentEvent::Finished(result)) = events.last() else {
        panic!("the last event is Finished");
    };
    assert!(result.usage.output_tokens > 0);
    assert!(matches!(&events[events.len() - 2], AgentEvent::Usage(u) if *u == result.usage));
    // Progress is for the UI only.
    let transcript = serde_json::to_string(&result.messages).unwrap();
    assert!(!transcript.contains("1/2"));
}

// ---- sub-agents ----

#[tokio::test]
async fn task_runs_a_sub_agent_with_restricted_tools_and_forwards_its_events() {
    let model = Arc::new(ScriptedModel::new([
        // The parent delegates.
        ScriptedTurn::tool_call(
            "Task",
            json!({"description": "count things", "prompt": "Count to 2.", "subagent_type": "counter"}),
        ),
        // The sub-agent works...
        ScriptedTurn::tool_call("count", json!({"n": 2})),
        // ...and reports.
        ScriptedTurn::text("Counted to 2."),
        // The parent answers.
        ScriptedTurn::text("The sub-agent counted to 2."),
    ]));
    let agent = Agent::create(
        config(ScriptedModel::new([]))
            .with_model(model.clone())
            .with_subagent(
                "counter",
                SubagentConfig {
                    description: "Counts".into(),
                    system_prompt: Some("You count.".into()),
                    tools: Some(vec!["count".into()]),
                },
            ),
    )
    .await
    .unwrap();
    let events: Vec<AgentEvent> = agent.run("delegate").collect().await;
    let forwarded: Vec<String> = events
        .iter()
        .filter_map(|e| match e {
            AgentEvent::Subagent { agent_id, event } => Some(format!(
                "{agent_id:?} {}",
                match event.as_ref() {
                    AgentEvent::ToolRequested { name, .. } => format!("requested {name}"),
                    AgentEvent::TurnStarted { turn } => format!("turn {turn}"),
                    _ => "other".into(),
                }
            )),
            _ => None,
        })
        .collect();
    assert!(
        forwarded
            .iter()
            .any(|e| e.contains("Sub(\"task-") && e.ends_with("requested count")),
        "{forwarded:?}"
    );
    let Some(AgentEvent::Finished(result)) = events.last() else {
        panic!()
    };
    assert_eq!(result.text, "The sub-agent counted to 2.");
    let (_, report, is_error) = &last_results(&result.messages.to_vec())[0];
    assert!(!is_error, "{report}");
    assert!(report.starts_with("Counted to 2."), "{report}");
    assert!(report.contains("1 tool call(s)"), "{report}");

    let requests = model.requests();
    let child_request = &requests[1];
    assert_eq!(child_request.system.as_deref(), Some("You count."));
    let child_tools: Vec<&str> = child_request
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(child_tools, ["count"], "restricted, and never Task");
    assert_eq!(child_request.messages[0].text(), "Count to 2.");
}
