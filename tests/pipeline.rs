//! The one call pipeline: the permission gate decides from what tools declare, not their
//! names; every call into tool code is contained; results are capped whole; the registry's
//! call API takes the same road as the agent.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig, AgentEvent, RunResult};
use tool_sdk::builtin::{ExitPlanModeTool, TodoWriteTool};
use tool_sdk::model::{Message, MessageContent, ScriptedModel, ScriptedTurn};
use tool_sdk::permission::{PermissionGate, PermissionMode, PermissionRules};
use tool_sdk::pipeline::CallPolicy;
use tool_sdk::{
    BoxFuture, ContentBlock, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult,
    tool,
};

/// A user's own tool that happens to be called `Edit` and declares nothing.
#[tool(name = "Edit", register = false)]
async fn users_edit(text: String) -> String {
    format!("user edit: {text}")
}

/// Saves a file; declares what it writes.
#[tool(acts_on(writes = "path"), register = false)]
async fn save_file(path: String) -> String {
    format!("saved {path}")
}

/// Remembers a note in the agent's own state.
#[tool(acts_on(agent_state), register = false)]
async fn remember(note: String) -> String {
    format!("remembered {note}")
}

/// Never finishes.
#[tool(read_only, register = false)]
async fn hang() -> String {
    std::future::pending::<String>().await
}

/// Panics.
#[tool(read_only, register = false)]
async fn explode() -> String {
    panic!("kaboom")
}

/// Returns `blocks` text blocks of `size` characters each.
#[tool(read_only, register = false)]
async fn big(blocks: usize, size: usize) -> ToolOutput {
    ToolOutput::blocks(
        (0..blocks)
            .map(|i| ContentBlock::text(char::from(b'a' + (i % 26) as u8).to_string().repeat(size)))
            .collect(),
    )
}

/// Fails with a long message, as a tool with 1 MB of stderr would.
#[tool(read_only, register = false)]
async fn noisy_failure(size: usize) -> Result<String, ToolError> {
    Err(ToolError::failed("e".repeat(size)))
}

/// A hand-written tool whose metadata panics.
struct BrokenMetadata {
    schema: Value,
}

impl Tool for BrokenMetadata {
    fn name(&self) -> &str {
        "broken"
    }
    fn description(&self) -> &str {
        "Its metadata panics."
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn annotations(&self) -> tool_sdk::ToolAnnotations {
        panic!("annotations exploded")
    }
    fn is_read_only(&self) -> bool {
        panic!("is_read_only exploded")
    }
    fn display_title(&self, _input: &Value) -> String {
        panic!("display_title exploded")
    }
    fn call<'a>(&'a self, _input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { Ok(ToolOutput::text("ran")) })
    }
}

/// One of many tools, for long tool lists.
struct Filler {
    name: String,
    schema: Value,
}

impl Tool for Filler {
    fn name(&self) -> &str {
        &self.name
    }
    fn description(&self) -> &str {
        "Fills the list."
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn call<'a>(&'a self, _input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { Ok(ToolOutput::text("filled")) })
    }
}

fn registry(tools: Vec<Arc<dyn Tool>>) -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    for tool in tools {
        registry.register(tool).unwrap();
    }
    Arc::new(registry)
}

async fn agent(tools: Vec<Arc<dyn Tool>>, turns: Vec<ScriptedTurn>, config: AgentConfig) -> Agent {
    let dir = tempfile::tempdir().unwrap().keep();
    Agent::create(
        config
            .with_model(ScriptedModel::new(turns))
            .with_registry(registry(tools))
            .with_working_dir(dir),
    )
    .await
    .unwrap()
}

/// The text of every tool result, in order, with its error flag.
fn results(messages: &[Message]) -> Vec<(String, bool)> {
    messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                content, is_error, ..
            } => Some((
                content
                    .iter()
                    .map(|c| c.readable().unwrap_or_default().into_owned())
                    .collect::<Vec<_>>()
                    .join("\n"),
                *is_error,
            )),
            _ => None,
        })
        .collect()
}

async fn run(agent: &Agent) -> RunResult {
    agent.prompt("go").await.unwrap()
}

#[tokio::test]
async fn permissions_follow_what_a_tool_declares_not_its_name() {
    let turns = vec![
        ScriptedTurn::tool_call("Edit", json!({"text": "x"})),
        ScriptedTurn::tool_call("save_file", json!({"path": "notes.txt"})),
        ScriptedTurn::text("done"),
    ];
    let config = AgentConfig::new().permissions(|p| p.with_mode(PermissionMode::AcceptEdits));
    let agent = agent(
        vec![Arc::new(UsersEditTool), Arc::new(SaveFileTool)],
        turns,
        config,
    )
    .await;
    let results = results(&run(&agent).await.messages.to_vec());
    assert!(
        results[0].1,
        "a tool named Edit gets no edit permissions: {results:?}"
    );
    assert!(
        results[0].0.contains("needs the user's permission"),
        "{results:?}"
    );
    assert_eq!(results[1], ("saved notes.txt".to_owned(), false));
}

#[tokio::test]
async fn rules_read_declared_paths_whatever_the_tool_is_called() {
    let turns = vec![
        ScriptedTurn::tool_call("save_file", json!({"path": "src/a.rs"})),
        ScriptedTurn::tool_call("save_file", json!({"path": "secret/a.rs"})),
        ScriptedTurn::text("done"),
    ];
    let config = AgentConfig::new().permissions(|p| p.allow("Edit(src/**)"));
    let agent = agent(vec![Arc::new(SaveFileTool)], turns, config).await;
    let results = results(&run(&agent).await.messages.to_vec());
    assert_eq!(results[0], ("saved src/a.rs".to_owned(), false));
    assert!(results[1].1, "{results:?}");
    assert!(
        results[1].0.contains("Edit(") && results[1].0.contains("secret/a.rs"),
        "the refusal names the rule that would allow it: {results:?}"
    );
}

#[tokio::test]
async fn tools_that_only_touch_agent_state_never_ask() {
    for mode in [PermissionMode::Default, PermissionMode::Plan] {
        let turns = vec![
            ScriptedTurn::tool_call("remember", json!({"note": "n"})),
            ScriptedTurn::tool_call(
                "TodoWrite",
                json!({"todos": [{"content": "a", "status": "pending", "activeForm": "doing a"}]}),
            ),
            ScriptedTurn::text("done"),
        ];
        let agent = agent(
            vec![Arc::new(RememberTool), Arc::new(TodoWriteTool)],
            turns,
            AgentConfig::new().permissions(|p| p.with_mode(mode)),
        )
        .await;
        let results = results(&run(&agent).await.messages.to_vec());
        assert_eq!(results[0], ("remembered n".to_owned(), false), "{mode:?}");
        assert!(
            !results[1].1,
            "TodoWrite runs without asking in {mode:?}: {results:?}"
        );
    }
}

#[tokio::test]
async fn plan_mode_names_exit_plan_mode_only_when_the_model_has_it() {
    for offered in [false, true] {
        let mut tools: Vec<Arc<dyn Tool>> = vec![Arc::new(SaveFileTool)];
        if offered {
            tools.push(Arc::new(ExitPlanModeTool));
        }
        let turns = vec![
            ScriptedTurn::tool_call("save_file", json!({"path": "a"})),
            ScriptedTurn::text("done"),
        ];
        let config = AgentConfig::new().permissions(|p| p.with_mode(PermissionMode::Plan));
        let agent = agent(tools, turns, config).await;
        let results = results(&run(&agent).await.messages.to_vec());
        assert!(results[0].1);
        assert!(results[0].0.contains("plan mode is on"), "{results:?}");
        assert_eq!(
            results[0].0.contains("ExitPlanMode"),
            offered,
            "offered: {offered}: {results:?}"
        );
    }
}

#[tokio::test]
async fn a_panic_in_tool_metadata_is_contained() {
    let broken: Arc<dyn Tool> = Arc::new(BrokenMetadata {
        schema: json!({"type": "object"}),
    });
    let turns = vec![
        ScriptedTurn::tool_call("broken", json!({})).with_tool_call("explode", json!({})),
        ScriptedTurn::text("done"),
    ];
    let agent = agent(
        vec![broken, Arc::new(ExplodeTool)],
        turns,
        AgentConfig::new(),
    )
    .await;
    let result = run(&agent).await;
    assert_eq!(result.text, "done");
    let results = results(&result.messages.to_vec());
    assert_eq!(results.len(), 2, "every tool_use is answered: {results:?}");
    assert!(
        results[0].1 && results[0].0.contains("exploded"),
        "{results:?}"
    );
    assert!(
        results[1].1 && results[1].0.contains("kaboom"),
        "{results:?}"
    );
}

#[tokio::test]
async fn the_whole_result_is_capped_errors_included() {
    let turns = vec![
        ScriptedTurn::tool_call("big", json!({"blocks": 30, "size": 40_960}))
            .with_tool_call("noisy_failure", json!({"size": 1_000_000})),
        ScriptedTurn::text("done"),
    ];
    let agent = agent(
        vec![Arc::new(BigTool), Arc::new(NoisyFailureTool)],
        turns,
        AgentConfig::new().limits(|l| l.with_max_result_chars(50_000)),
    )
    .await;
    let mut events = agent.run("go");
    let mut failed_event_len = None;
    let mut result = None;
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::ToolFailed { output, .. } => {
                failed_event_len = Some(output.to_text().chars().count())
            }
            AgentEvent::Finished(finished) => result = Some(*finished),
            _ => {}
        }
    }
    let result = result.unwrap();
    let results = results(&result.messages.to_vec());
    let limit = 50_000 + 200;
    assert!(
        results[0].0.chars().count() < limit,
        "{}",
        results[0].0.len()
    );
    assert!(results[0].0.contains("characters cut"));
    assert!(
        results[1].0.chars().count() < limit,
        "{}",
        results[1].0.len()
    );
    assert!(failed_event_len.unwrap() < limit);
    assert!(result.errors.iter().all(|e| e.chars().count() < limit));
}

#[tokio::test]
async fn unknown_tools_get_the_closest_names_first() {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(SaveFileTool)).unwrap();
    registry.register(Arc::new(RememberTool)).unwrap();
    for i in 0..30 {
        let filler: Arc<dyn Tool> = Arc::new(Filler {
            name: format!("aaa_{i:02}"),
            schema: json!({"type": "object"}),
        });
        registry.register(filler).unwrap();
    }
    let out = registry
        .call("save_fil", json!({}), &ToolContext::default())
        .await;
    let text = out.to_text();
    assert!(out.is_error);
    assert!(
        text.contains(
            "no tool is named `save_fil` (did you mean `save_file`?); available tools: save_file,"
        ),
        "the closest name comes first: {text}"
    );
    assert!(text.contains("and 12 more"), "a long list is cut: {text}");
}

#[tokio::test]
async fn the_registrys_call_api_takes_the_same_road() {
    let registry = registry(vec![
        Arc::new(HangTool),
        Arc::new(ExplodeTool),
        Arc::new(SaveFileTool),
    ]);
    let ctx = ToolContext::default();

    let policy =
        CallPolicy::new().with_timeouts(Duration::from_millis(200), Duration::from_secs(1));
    let hung = registry.call_with("hang", json!({}), &ctx, &policy).await;
    assert!(
        matches!(hung.error, Some(ToolError::Timeout(limit)) if limit == Duration::from_millis(200))
    );
    assert!(hung.started);

    let exploded = registry.call("explode", json!({}), &ctx).await;
    assert!(exploded.is_error && exploded.to_text().contains("kaboom"));

    let gate = PermissionGate::new(
        PermissionRules::new(Vec::<&str>::new(), vec![], vec!["Edit(secret/**)"]).unwrap(),
        vec![],
    );
    let gated = CallPolicy::new().with_permission_gate(Arc::new(gate));
    let refused = registry
        .call_with("save_file", json!({"path": "secret/x"}), &ctx, &gated)
        .await;
    assert!(matches!(
        refused.error,
        Some(ToolError::PermissionDenied(_))
    ));
    assert!(!refused.started, "a refused call never runs");
    // Nobody to ask: a call that would ask is refused, naming the rule that would allow it.
    let unasked = registry
        .call_with("save_file", json!({"path": "ok"}), &ctx, &gated)
        .await;
    assert!(
        unasked.output.to_text().contains("Edit("),
        "{:?}",
        unasked.output
    );

    let cancelled = ToolContext::default();
    let token = cancelled.cancellation().clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    });
    let stopped = registry
        .call_with("hang", json!({}), &cancelled, &policy)
        .await;
    assert!(matches!(stopped.error, Some(ToolError::Cancelled)));
}

#[tokio::test]
async fn timeouts_below_a_second_are_exact() {
    let turns = vec![
        ScriptedTurn::tool_call("hang", json!({})),
        ScriptedTurn::text("done"),
    ];
    let config = AgentConfig::new().limits(|l| {
        l.with_tool_timeout(Duration::from_millis(300))
            .with_max_tool_timeout(Duration::from_millis(300))
    });
    let agent = agent(vec![Arc::new(HangTool)], turns, config).await;
    let started = std::time::Instant::now();
    let results = results(&run(&agent).await.messages.to_vec());
    assert!(
        results[0].0.contains("timed out after 300ms"),
        "{results:?}"
    );
    assert!(started.elapsed() < Duration::from_millis(950));
}

#[tokio::test]
async fn a_call_cancelled_at_the_permission_prompt_says_it_never_ran() {
    let turns = vec![
        ScriptedTurn::tool_call("save_file", json!({"path": "a"})),
        ScriptedTurn::text("done"),
    ];
    let agent = agent(vec![Arc::new(SaveFileTool)], turns, AgentConfig::new()).await;
    let mut events = agent.run("go");
    let mut result = None;
    let mut pending = Vec::new();
    while let Some(event) = events.next().await {
        match event {
            AgentEvent::PermissionRequested(request) => {
                // Held, unanswered, while the user presses Ctrl-C.
                pending.push(request);
                events.cancel();
            }
            AgentEvent::Finished(finished) => result = Some(*finished),
            _ => {}
        }
    }
    let results = results(&result.unwrap().messages.to_vec());
    assert!(results[0].1);
    assert!(
        results[0]
            .0
            .contains("cancelled before it started; it did not run"),
        "{results:?}"
    );
}

#[tokio::test]
async fn scripted_models_are_easy_to_test_with() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call_with_id("call_a", "remember", json!({"note": "x"}))
            .with_raw_tool_call("remember", "{\"note\": ")
            .with_raw_tool_call("remember", "not json"),
        ScriptedTurn::text("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_registry(registry(vec![Arc::new(RememberTool)]))
            .with_working_dir(dir.path()),
    )
    .await
    .unwrap();
    let result = run(&agent).await;
    // The clone handed to the agent shares the request log.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let answered: Vec<(&str, bool)> = requests[1]
        .messages
        .iter()
        .flat_map(|m| m.content.iter())
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                is_error,
                ..
            } => Some((tool_use_id.as_str(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(answered.len(), 3, "{answered:?}");
    assert_eq!(answered[0], ("call_a", false));
    assert!(
        answered[1].1 && answered[2].1,
        "both malformed calls fail: {answered:?}"
    );
    assert_eq!(result.text, "done");
}

#[test]
fn built_in_tools_declare_what_they_act_on() {
    use tool_sdk::ActsOn;
    use tool_sdk::builtin::{
        AskUserQuestionTool, BashTool, EditTool, GlobTool, GrepTool, NotebookEditTool, ReadTool,
        WebFetchTool, WriteTool,
    };
    let declared: Vec<(&dyn Tool, ActsOn)> = vec![
        (&BashTool, ActsOn::ShellCommand("command")),
        (&ReadTool, ActsOn::ReadsPath("file_path")),
        (&GlobTool, ActsOn::ReadsPath("path")),
        (&GrepTool, ActsOn::ReadsPath("path")),
        (&WriteTool, ActsOn::WritesPath("file_path")),
        (&EditTool, ActsOn::WritesPath("file_path")),
        (&NotebookEditTool, ActsOn::WritesPath("notebook_path")),
        (&WebFetchTool, ActsOn::FetchesUrl("url")),
        (&TodoWriteTool, ActsOn::AgentState),
        (&ExitPlanModeTool, ActsOn::AgentState),
        (&AskUserQuestionTool, ActsOn::AgentState),
    ];
    for (tool, acts_on) in declared {
        assert_eq!(tool.acts_on(), acts_on, "{}", tool.name());
    }
}
