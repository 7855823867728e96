//! Registries: global registration, duplicates, instance registries, a hand-written tool
//! whose description and schema are computed at start-up, validation, statistics.

use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tool_sdk::schema::Provider;
use tool_sdk::validate::ValidationOptions;
use tool_sdk::{
    BoxFuture, RegistryError, Tool, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult,
    tool,
};

// Two tools that claim one name: the global registry must refuse to start.
mod first {
    use tool_sdk::tool;

    /// Says hello.
    #[tool(name = "greet")]
    pub async fn greet() -> String {
        "hello".into()
    }
}

mod second {
    use tool_sdk::tool;

    /// Also says hello.
    #[tool(name = "greet")]
    pub async fn greet_again() -> String {
        "hello again".into()
    }
}

#[test]
fn duplicate_names_fail_at_start_up_naming_both_definitions() {
    let error = ToolRegistry::from_inventory().unwrap_err();
    let RegistryError::DuplicateName {
        name,
        first,
        second,
    } = &error
    else {
        panic!("expected a duplicate-name error, got {error}");
    };
    assert_eq!(name, "greet");
    let both = format!("{first} | {second}");
    assert!(both.contains("registry::first::greet"), "{both}");
    assert!(both.contains("registry::second::greet_again"), "{both}");
    assert!(both.contains("registry.rs:"), "{both}");
    let message = error.to_string();
    assert!(message.contains("#[tool(name = \"...\")]"), "{message}");
    // The global registry and the seed-style functions report the same error.
    assert_eq!(ToolRegistry::global().unwrap_err(), error);
    assert_eq!(tool_sdk::get_tools(None).unwrap_err(), error);
}

#[test]
fn instance_registries_refuse_duplicates_too() {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(first::GreetTool)).unwrap();
    let error = registry
        .register(Arc::new(second::GreetAgainTool))
        .unwrap_err();
    let RegistryError::DuplicateName { first, second, .. } = error else {
        panic!("expected a duplicate");
    };
    // `register` records its caller's location.
    assert!(first.contains("registry.rs:"), "{first}");
    assert!(second.contains("registry.rs:"), "{second}");
    assert_ne!(first, second);
}

// ---- a hand-written tool, built at start-up from files ----

/// Loads skills from a folder: the description lists them and the schema's enum holds their
/// names, so both are only known once the folder has been read.
struct SkillTool {
    description: String,
    schema: Value,
    skills: Vec<(String, String)>,
}

impl SkillTool {
    async fn load(dir: &Path) -> std::io::Result<Self> {
        let mut skills = Vec::new();
        let mut entries = tokio::fs::read_dir(dir).await?;
        while let Some(entry) = entries.next_entry().await? {
            let name = entry
                .file_name()
                .to_string_lossy()
                .trim_end_matches(".md")
                .to_owned();
            let body = tokio::fs::read_to_string(entry.path()).await?;
            skills.push((name, body));
        }
        skills.sort();
        let names: Vec<&str> = skills.iter().map(|(name, _)| name.as_str()).collect();
        Ok(SkillTool {
            description: format!("Loads a skill. Available: {}", names.join(", ")),
            schema: json!({
                "type": "object",
                "properties": {"skill": {"type": "string", "enum": names}},
                "required": ["skill"],
                "additionalProperties": false
            }),
            skills,
        })
    }
}

impl Tool for SkillTool {
    fn name(&self) -> &str {
        "Skill"
    }
    fn description(&self) -> &str {
        &self.description
    }
    fn input_schema(&self) -> &Value {
        &self.schema
    }
    fn call<'a>(&'a self, input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let wanted = input["skill"].as_str().unwrap_or_default();
            self.skills
                .iter()
                .find(|(name, _)| name == wanted)
                .map(|(_, body)| ToolOutput::text(body.clone()))
                .ok_or_else(|| ToolError::not_found(wanted.to_owned()))
        })
    }
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tool-sdk-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn a_hand_written_tool_computes_description_and_schema_at_start_up() {
    let dir = temp_dir("skills");
    std::fs::write(dir.join("pdf.md"), "How to read PDFs.").unwrap();
    std::fs::write(dir.join("git.md"), "How to use git.").unwrap();

    let skill = Arc::new(SkillTool::load(&dir).await.unwrap());
    let registry = ToolRegistry::new();
    registry.register(skill).unwrap();

    let infos = registry.tool_infos();
    assert_eq!(infos[0].description, "Loads a skill. Available: git, pdf");
    let ctx = ToolContext::default();
    let out = registry.call("Skill", json!({"skill": "pdf"}), &ctx).await;
    assert_eq!(out.to_text(), "How to read PDFs.");
    // The computed enum is enforced like any schema.
    let out = registry.call("Skill", json!({"skill": "rust"}), &ctx).await;
    assert!(out.is_error);
    assert!(
        out.to_text()
            .contains(r#"/skill: must be one of "git", "pdf", got "rust""#),
        "{}",
        out.to_text()
    );
    // And it lowers for every provider.
    let openai = registry.build_tools(Provider::OpenAiStrict);
    assert_eq!(openai[0]["function"]["name"], "Skill");
    assert_eq!(openai[0]["function"]["strict"], true);
    std::fs::remove_dir_all(dir).unwrap();
}

// ---- selection, infos, stats ----

/// Echoes text.
#[tool(register = false, read_only)]
async fn echo(text: String) -> String {
    text
}

/// Counts characters.
#[tool(register = false, read_only)]
async fn count(text: String, offset: Option<u64>) -> Result<usize, String> {
    if text.is_empty() {
        return Err("nothing to count".into());
    }
    Ok(text.chars().count() + offset.unwrap_or(0) as usize)
}

fn small_registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(EchoTool)).unwrap();
    registry.register(Arc::new(CountTool)).unwrap();
    registry
}

#[test]
fn get_tools_keeps_the_order_asked_and_suggests_near_names() {
    let registry = small_registry();
    let names = |tools: Vec<Arc<dyn Tool>>| -> Vec<String> {
        tools.iter().map(|t| t.name().to_owned()).collect()
    };
    assert_eq!(
        names(registry.get_tools(Some(&["echo", "count"])).unwrap()),
        ["echo", "count"]
    );
    assert_eq!(names(registry.get_tools(None).unwrap()), ["count", "echo"]);

    let error = registry.get_tools(Some(&["ecko"])).unwrap_err();
    assert_eq!(
        error,
        RegistryError::UnknownTool {
            name: "ecko".into(),
            suggestions: vec!["echo".into()],
            available: vec!["count".into(), "echo".into()],
        }
    );
    assert_eq!(
        error.to_string(),
        "no tool is named `ecko` (did you mean `echo`?); available: count, echo"
    );
}

#[test]
fn disabled_tools_are_listed_but_not_offered() {
    let registry = small_registry();
    assert!(registry.set_enabled("echo", false));
    assert!(!registry.set_enabled("nope", false));
    let infos = registry.tool_infos();
    let echo = infos.iter().find(|i| i.name == "echo").unwrap();
    assert!(!echo.enabled);
    assert!(echo.read_only);
    let offered = registry.build_tools(Provider::Anthropic);
    assert_eq!(offered.len(), 1);
    assert_eq!(offered[0]["name"], "count");
}

#[test]
fn unregister_removes_the_tool() {
    let registry = small_registry();
    assert_eq!(registry.unregister("echo").unwrap().name(), "echo");
    assert!(registry.unregister("echo").is_none());
    assert_eq!(registry.names(), ["count"]);
    // The name is free again.
    registry.register(Arc::new(EchoTool)).unwrap();
    assert_eq!(registry.len(), 2);
}

#[tokio::test]
async fn stats_count_calls_and_failures() {
    let registry = small_registry();
    let ctx = ToolContext::default();
    registry.call("count", json!({"text": "abc"}), &ctx).await;
    registry.call("count", json!({"text": ""}), &ctx).await;
    registry.call("count", json!({"text": 5}), &ctx).await;
    let stats = registry.stats("count").unwrap();
    assert_eq!(stats.calls, 3);
    assert_eq!(stats.failures, 2, "a tool error and an invalid input");
    assert!(stats.mean_duration().is_some());
    assert_eq!(registry.stats("echo").unwrap().mean_duration(), None);
}

#[tokio::test]
async fn unknown_tool_names_the_available_ones() {
    let registry = small_registry();
    let out = registry
        .call("cont", json!({}), &ToolContext::default())
        .await;
    assert!(out.is_error);
    assert_eq!(
        out.to_text(),
        "Not found: no tool is named `cont` (did you mean `count`?); available tools: count, echo"
    );
}

// ---- validation through the registry ----

#[tokio::test]
async fn every_problem_is_reported_at_once() {
    let registry = small_registry();
    let out = registry
        .call(
            "count",
            json!({"txt": "a", "offset": "ten"}),
            &ToolContext::default(),
        )
        .await;
    assert!(out.is_error);
    let text = out.to_text();
    assert!(text.starts_with("Invalid input: the input does not match the schema of `count`:"));
    assert!(
        text.contains(r#"/offset: must be integer or null, got "ten""#),
        "{text}"
    );
    assert!(
        text.contains("must have required property 'text'"),
        "{text}"
    );
    assert!(
        text.contains("must NOT have additional property 'txt'"),
        "{text}"
    );
    assert!(text.contains("did you mean 'text'?"), "{text}");
}

#[tokio::test]
async fn coercion_is_on_by_default_and_can_be_turned_off() {
    let ctx = ToolContext::default();
    let lenient = small_registry();
    let out = lenient
        .call("count", json!({"text": "abc", "offset": "2"}), &ctx)
        .await;
    assert_eq!(out.to_text(), "5");

    let strict = ToolRegistry::with_options(ValidationOptions { coerce: false });
    strict.register(Arc::new(CountTool)).unwrap();
    let out = strict
        .call("count", json!({"text": "abc", "offset": "2"}), &ctx)
        .await;
    assert!(out.is_error);
    assert!(
        out.to_text()
            .contains(r#"/offset: must be integer or null, got "2""#),
        "{}",
        out.to_text()
    );
}

/// Untagged variants that share a property name.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Target {
    Line { x: i64 },
    Labelled { x: String, y: u32 },
}

/// Says which target it got.
#[tool]
async fn aim(target: Target, times: u32) -> String {
    match target {
        Target::Line { x } => format!("line {x}, {times} times"),
        Target::Labelled { x, y } => format!("labelled {x:?} {y}, {times} times"),
    }
}

#[tokio::test]
async fn coercion_keeps_the_untagged_variant_the_model_meant() {
    let ctx = ToolContext::default();
    let registry = ToolRegistry::new();
    registry.register(Arc::new(AimTool)).unwrap();
    // Coercing `x` for `Line` while coercing `y` for `Labelled` used to make this a `Line`,
    // dropping `y`.
    assert_eq!(
        registry
            .validate("aim", json!({"target": {"x": "5", "y": "7"}, "times": 1}))
            .unwrap(),
        json!({"target": {"x": "5", "y": 7}, "times": 1})
    );
    let out = registry
        .call(
            "aim",
            json!({"target": {"x": "5", "y": "7"}, "times": "2"}),
            &ctx,
        )
        .await;
    assert_eq!(out.to_text(), r#"labelled "5" 7, 2 times"#);
    // A target that is a `Labelled` as sent stays one when something else needs coercion.
    let out = registry
        .call(
            "aim",
            json!({"target": {"x": "5", "y": 7}, "times": "2"}),
            &ctx,
        )
        .await;
    assert_eq!(out.to_text(), r#"labelled "5" 7, 2 times"#);
    let out = registry
        .call("aim", json!({"target": {"x": "5"}, "times": 3}), &ctx)
        .await;
    assert_eq!(out.to_text(), "line 5, 3 times");
}

/// A tool whose schema root is not an object.
struct StringRooted(Value);

impl Tool for StringRooted {
    fn name(&self) -> &str {
        "rooted"
    }
    fn description(&self) -> &str {
        "Takes a bare string."
    }
    fn input_schema(&self) -> &Value {
        &self.0
    }
    fn call<'a>(&'a self, _: Value, _: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async { Ok(ToolOutput::text("unreachable")) })
    }
}

#[test]
fn registering_checks_name_and_schema() {
    let registry = ToolRegistry::new();
    let error = registry
        .register(Arc::new(StringRooted(json!({"type": "string"}))))
        .unwrap_err();
    assert!(
        matches!(&error, RegistryError::InvalidSchema { name, .. } if name == "rooted"),
        "{error}"
    );
    let error = registry
        .register(Arc::new(StringRooted(
            json!({"type": "object", "minProperties": "x"}),
        )))
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::InvalidSchema { .. }),
        "{error}"
    );
    assert!(registry.is_empty());
}
