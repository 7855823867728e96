//! `#[tool]` end to end: what it generates, checked through the `Tool` trait and the
//! registry, the way an agent uses it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tool_sdk::{
    ContentBlock, State, StateMap, Tool, ToolContext, ToolError, ToolErrorKind, ToolOutput,
    ToolRegistry, tool,
};

// Not "Read": the built-in Read tool holds that name in the global registry.
/// Reads a file from the local filesystem.
///
/// Second paragraph.
#[tool(
    name = "ReadFile",
    read_only,
    title = "Read {file_path}",
    permission = "Allow reading {file_path}?"
)]
async fn read(
    /// Absolute path of the file.
    file_path: String,
    /// 1-based line to start at.
    offset: Option<u64>,
    /// How many lines to read.
    #[arg(default = 2000)]
    limit: u64,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    Ok(format!(
        "{file_path} from {} x{limit} call={}",
        offset.unwrap_or(1),
        ctx.tool_call_id()
    ))
}

fn ctx() -> ToolContext {
    ToolContext::default().with_tool_call_id("toolu_1")
}

async fn call(tool: &dyn Tool, input: Value) -> Result<ToolOutput, ToolError> {
    tool.call(input, &ctx()).await
}

#[tokio::test]
async fn the_fn_stays_callable_as_written() {
    let text = read("/a".into(), Some(3), 10, &ctx()).await.unwrap();
    assert_eq!(text, "/a from 3 x10 call=toolu_1");
}

#[tokio::test]
async fn generated_tool_has_name_description_and_annotations() {
    assert_eq!(ReadTool.name(), "ReadFile");
    assert_eq!(
        ReadTool.description(),
        "Reads a file from the local filesystem.\n\nSecond paragraph."
    );
    assert!(ReadTool.is_read_only());
    let annotations = ReadTool.annotations();
    assert_eq!(annotations.read_only, Some(true));
    assert_eq!(annotations.destructive, None, "absent means unknown");
    assert_eq!(ReadTool.timeout(), None);
}

#[test]
fn schema_comes_from_the_parameters() {
    let schema = ReadTool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    assert!(
        schema.get("title").is_none(),
        "the Rust type name is noise: {schema}"
    );
    let properties = &schema["properties"];
    assert_eq!(
        properties["file_path"]["description"],
        "Absolute path of the file."
    );
    assert_eq!(properties["offset"]["type"], json!(["integer", "null"]));
    assert_eq!(properties["limit"]["default"], 2000);
    assert!(
        properties.get("ctx").is_none(),
        "the context is injected, not sent"
    );
    assert_eq!(schema["required"], json!(["file_path"]));
}

#[tokio::test]
async fn call_fills_defaults_and_injects_the_context() {
    let out = call(&ReadTool, json!({"file_path": "/x"})).await.unwrap();
    assert_eq!(out.to_text(), "/x from 1 x2000 call=toolu_1");
    assert!(!out.is_error);
    let out = call(
        &ReadTool,
        json!({"file_path": "/x", "offset": null, "limit": 5}),
    )
    .await
    .unwrap();
    assert_eq!(out.to_text(), "/x from 1 x5 call=toolu_1");
}

#[test]
fn title_and_permission_render_the_arguments() {
    let input = json!({"file_path": "/etc/hosts"});
    assert_eq!(ReadTool.display_title(&input), "Read /etc/hosts");
    let prompt = ReadTool.permission_prompt(&input);
    assert_eq!(prompt.title, "Allow reading /etc/hosts?");
    assert_eq!(prompt.content, input);
    assert_eq!(ReadTool.display_title(&json!({})), "Read ");
}

// ---- rename, tri-state hints, timeout, category ----

/// Searches.
#[tool(
    destructive = false,
    idempotent,
    open_world = false,
    timeout = "1m30s",
    category = "search",
    title = "Search {query} in {kind}"
)]
async fn search(
    query: String,
    /// Rust keywords can be arguments too.
    #[arg(rename = "type")]
    kind: String,
    #[arg(default = "all")] scope: String,
    #[arg(default)] verbose: bool,
) -> String {
    format!("{query}/{kind}/{scope}/{verbose}")
}

#[tokio::test]
async fn rename_and_defaults_follow_serde() {
    let schema = SearchTool.input_schema();
    assert!(schema["properties"].get("type").is_some(), "{schema}");
    assert!(schema["properties"].get("kind").is_none(), "{schema}");
    assert_eq!(schema["properties"]["scope"]["default"], "all");
    assert_eq!(schema["properties"]["verbose"]["default"], false);
    assert_eq!(schema["required"], json!(["query", "type"]));
    let out = call(&SearchTool, json!({"query": "q", "type": "fn"}))
        .await
        .unwrap();
    assert_eq!(out.to_text(), "q/fn/all/false");
    // The title names Rust parameters and reads their JSON names.
    let title = SearchTool.display_title(&json!({"query": "q", "type": "fn"}));
    assert_eq!(title, "Search q in fn");
}

#[test]
fn hints_are_tri_state_and_timeout_and_category_are_kept() {
    let annotations = SearchTool.annotations();
    assert_eq!(annotations.destructive, Some(false));
    assert_eq!(annotations.idempotent, Some(true));
    assert_eq!(annotations.open_world, Some(false));
    assert_eq!(annotations.read_only, None);
    assert!(!SearchTool.is_read_only(), "unknown counts as mutating");
    assert_eq!(SearchTool.timeout(), Some(Duration::from_secs(90)));
    assert_eq!(SearchTool.category(), Some("search"));
}

// ---- #[input] struct, nested types, validate ----

/// Where to go.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TripArgs {
    /// Start and end.
    stops: Vec<Stop>,
    /// How to travel.
    mode: Mode,
    /// Extra labels.
    #[serde(default)]
    #[allow(dead_code)]
    labels: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Stop {
    #[allow(dead_code)]
    name: String,
    nights: Option<u32>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Train,
    Car,
}

async fn check_trip(args: &TripArgs, _ctx: &ToolContext) -> Result<(), String> {
    if args.stops.len() < 2 {
        return Err(format!("a trip needs two stops, got {}", args.stops.len()));
    }
    Ok(())
}

#[derive(Serialize)]
struct Plan {
    legs: usize,
    nights: u32,
    by: String,
}

/// Plans a trip.
#[tool(validate = check_trip, title = "Trip with {stops}")]
async fn plan_trip(#[input] args: TripArgs) -> Plan {
    Plan {
        legs: args.stops.len() - 1,
        nights: args.stops.iter().filter_map(|s| s.nights).sum(),
        by: format!("{:?}", args.mode),
    }
}

#[tokio::test]
async fn input_struct_is_the_whole_input_and_serialize_returns_json() {
    let schema = PlanTripTool.input_schema();
    assert!(
        schema["properties"]["stops"]["items"]["$ref"].is_string(),
        "{schema}"
    );
    assert!(schema["$defs"]["Mode"]["enum"].is_array(), "{schema}");
    let input = json!({"stops": [{"name": "A", "nights": 2}, {"name": "B"}], "mode": "train"});
    let out = call(&PlanTripTool, input).await.unwrap();
    assert_eq!(
        out.structured,
        Some(json!({"legs": 1, "nights": 2, "by": "Train"}))
    );
    assert_eq!(out.to_text(), r#"{"legs":1,"nights":2,"by":"Train"}"#);
}

#[tokio::test]
async fn validate_runs_the_tools_own_check() {
    let ctx = ctx();
    let one_stop = json!({"stops": [{"name": "A"}], "mode": "car"});
    let error = PlanTripTool
        .validate_input(&one_stop, &ctx)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ToolError::InvalidInput("a trip needs two stops, got 1".into())
    );
    let two = json!({"stops": [{"name": "A"}, {"name": "B"}], "mode": "car"});
    assert_eq!(PlanTripTool.validate_input(&two, &ctx).await, Ok(()));
    // Through the registry the check stops the call.
    let registry = ToolRegistry::new();
    registry.register(Arc::new(PlanTripTool)).unwrap();
    let out = registry.call("plan_trip", one_stop, &ctx).await;
    assert!(out.is_error);
    assert!(
        out.to_text().contains("a trip needs two stops"),
        "{}",
        out.to_text()
    );
}

/// Takes parameters of every schema shape.
#[tool(register = false)]
async fn shapes(
    /// A stop.
    stop: Stop,
    stops: Option<Vec<Stop>>,
    mode: Mode,
    #[arg(default = 3)] nights: u32,
    #[arg(rename = "type", description = "The kind.")] kind: String,
    /// # Pace
    ///
    /// Kilometres a day: a heading is the title, the rest the description.
    pace: u32,
) -> String {
    format!("{} {stops:?} {mode:?} {nights} {kind} {pace}", stop.name)
}

#[derive(schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct ShapesByHand {
    /// A stop.
    stop: Stop,
    stops: Option<Vec<Stop>>,
    mode: Mode,
    #[serde(default = "three")]
    nights: u32,
    #[serde(rename = "type")]
    #[schemars(description = "The kind.")]
    kind: String,
    /// # Pace
    ///
    /// Kilometres a day: a heading is the title, the rest the description.
    pace: u32,
}

fn three() -> u32 {
    3
}

#[test]
fn parameter_schema_is_the_one_schemars_derives_for_the_same_struct() {
    assert_eq!(
        *ShapesTool.input_schema(),
        tool_sdk::schema::schema_for::<ShapesByHand>()
    );
    assert_eq!(
        ShapesTool.input_schema()["required"],
        json!(["stop", "mode", "type", "pace"])
    );
    let pace = &ShapesTool.input_schema()["properties"]["pace"];
    assert_eq!(pace["title"], "Pace");
    assert_eq!(
        pace["description"],
        "Kilometres a day: a heading is the title, the rest the description."
    );
}

// ---- unknown keys: refused with a did-you-mean in both styles, unless opted out ----

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct NoteArgs {
    /// The text.
    text: String,
    /// Labels.
    tags: Option<Vec<String>>,
}

/// Takes a note.
#[tool(register = false)]
async fn note(#[input] args: NoteArgs) -> String {
    format!("{} {:?}", args.text, args.tags)
}

/// Takes a note, ignoring keys it does not know.
#[tool(register = false, allow_unknown_fields)]
async fn loose_note(#[input] args: NoteArgs) -> String {
    args.text
}

/// A struct that says itself that other keys are welcome.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(extend("additionalProperties" = true))]
struct OpenNoteArgs {
    text: String,
}

/// Takes a note, ignoring keys it does not know.
#[tool(register = false)]
async fn open_note(#[input] args: OpenNoteArgs) -> String {
    args.text
}

/// Takes a note as a parameter.
#[tool(register = false)]
async fn strict_param_note(text: String, tags: Option<Vec<String>>) -> String {
    format!("{text} {tags:?}")
}

/// Takes a note as a parameter, ignoring keys it does not know.
#[tool(register = false, allow_unknown_fields)]
async fn loose_param_note(text: String) -> String {
    text
}

#[tokio::test]
async fn unknown_keys_are_refused_with_a_suggestion_unless_the_tool_opts_out() {
    let registry = ToolRegistry::new();
    for tool in [
        Arc::new(NoteTool) as Arc<dyn Tool>,
        Arc::new(LooseNoteTool),
        Arc::new(OpenNoteTool),
        Arc::new(StrictParamNoteTool),
        Arc::new(LooseParamNoteTool),
    ] {
        registry.register(tool).unwrap();
    }
    let typo = json!({"text": "hi", "tgas": ["a"]});
    for name in ["note", "strict_param_note"] {
        let out = registry.call(name, typo.clone(), &ctx()).await;
        assert!(out.is_error, "{name} accepted an unknown key");
        let text = out.to_text();
        assert!(
            text.contains("additional property 'tgas'") && text.contains("did you mean 'tags'?"),
            "{name}: {text}"
        );
    }
    for name in ["loose_note", "open_note", "loose_param_note"] {
        let out = registry.call(name, typo.clone(), &ctx()).await;
        assert!(!out.is_error, "{name}: {}", out.to_text());
        assert_eq!(out.to_text(), "hi", "{name}");
    }
    // The struct's own choice is kept, and nothing else of its schema changes.
    assert_eq!(NoteTool.input_schema()["additionalProperties"], false);
    assert_eq!(OpenNoteTool.input_schema()["additionalProperties"], true);
    assert_eq!(
        LooseNoteTool.input_schema().get("additionalProperties"),
        None
    );
    assert_eq!(
        LooseParamNoteTool
            .input_schema()
            .get("additionalProperties"),
        None
    );
}

// ---- State<T> ----

#[derive(Clone, Default)]
struct Counter(Arc<Mutex<u32>>);

/// Counts calls.
#[tool]
async fn bump(by: u32, counter: State<Counter>) -> Result<u32, ToolError> {
    let mut value = counter
        .0
        .0
        .lock()
        .map_err(|_| ToolError::failed("poisoned"))?;
    *value += by;
    Ok(*value)
}

#[tokio::test]
async fn state_is_injected_from_the_context() {
    let counter = Counter::default();
    let mut state = StateMap::new();
    state.insert(counter.clone());
    let ctx = ToolContext::default().with_state(state);
    BumpTool.call(json!({"by": 2}), &ctx).await.unwrap();
    let out = BumpTool.call(json!({"by": 3}), &ctx).await.unwrap();
    assert_eq!(out.to_text(), "5");
    assert_eq!(*counter.0.lock().unwrap(), 5);

    let requirements = BumpTool.required_state();
    assert_eq!(requirements.len(), 1);
    assert!(requirements[0].type_name.ends_with("Counter"));
}

/// Counts calls, unpacking the state axum style.
#[tool(register = false)]
async fn bump_unpacked(
    by: u32,
    State(counter): State<Counter>,
    State(mut step): State<u32>,
) -> Result<u32, ToolError> {
    step += by;
    let mut value = counter
        .0
        .lock()
        .map_err(|_| ToolError::failed("poisoned"))?;
    *value += step;
    Ok(*value)
}

#[tokio::test]
async fn state_can_be_unpacked_in_the_parameter() {
    let counter = Counter::default();
    let mut state = StateMap::new();
    state.insert(counter.clone());
    state.insert(10_u32);
    let ctx = ToolContext::default().with_state(state);
    let out = BumpUnpackedTool.call(json!({"by": 2}), &ctx).await.unwrap();
    assert_eq!(out.to_text(), "12");
    assert_eq!(*counter.0.lock().unwrap(), 12);
    assert_eq!(BumpUnpackedTool.required_state().len(), 2);
    assert_eq!(
        BumpUnpackedTool.input_schema()["required"],
        json!(["by"]),
        "state is not part of the input"
    );
}

#[tokio::test]
async fn missing_state_is_an_error_result_not_a_panic() {
    let error = BumpTool
        .call(json!({"by": 1}), &ToolContext::default())
        .await;
    let error = error.unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::ExecutionFailed);
    assert!(error.to_string().contains("Counter"), "{error}");
}

// ---- generated code never collides with the user's names ----

/// Finds a word.
#[tool(register = false, title = "Find {find}")]
async fn find(find: String) -> String {
    format!("found {find}")
}

/// Sums items.
#[tool(register = false)]
async fn items(items: Vec<u32>) -> u32 {
    items.iter().sum()
}

/// Reads the tally.
#[tool(register = false)]
async fn tally(tally: State<Counter>, ctx: &ToolContext) -> Result<String, ToolError> {
    let value = *tally
        .0
        .0
        .lock()
        .map_err(|_| ToolError::failed("poisoned"))?;
    Ok(format!("{value} for {}", ctx.tool_call_id()))
}

/// Takes arguments named like the generated code's own variables.
#[tool(register = false)]
async fn echo(
    __tool_input: String,
    __tool_ctx: u32,
    __tool_args: bool,
    __tool_return: Option<String>,
    ctx: &ToolContext,
) -> String {
    format!(
        "{__tool_input} {__tool_ctx} {__tool_args} {__tool_return:?} {}",
        ctx.tool_call_id()
    )
}

/// Named like a helper the registration generates.
#[tool]
async fn __tool_make(__tool_assertions: u32) -> u32 {
    __tool_assertions + 1
}

#[tokio::test]
async fn parameters_named_like_the_fn_or_the_generated_locals_work() {
    let out = call(&FindTool, json!({"find": "needle"})).await.unwrap();
    assert_eq!(out.to_text(), "found needle");
    assert_eq!(
        FindTool.display_title(&json!({"find": "needle"})),
        "Find needle"
    );

    let out = call(&ItemsTool, json!({"items": [1, 2, 3]})).await.unwrap();
    assert_eq!(out.to_text(), "6");

    let counter = Counter::default();
    *counter.0.lock().unwrap() = 7;
    let mut state = StateMap::new();
    state.insert(counter);
    let ctx = ctx().with_state(state);
    let out = TallyTool.call(json!({}), &ctx).await.unwrap();
    assert_eq!(out.to_text(), "7 for toolu_1");

    let input = json!({"__tool_input": "in", "__tool_ctx": 3, "__tool_args": true});
    let out = call(&EchoTool, input).await.unwrap();
    assert_eq!(out.to_text(), "in 3 true None toolu_1");

    let out = call(&ToolMakeTool, json!({"__tool_assertions": 1}))
        .await
        .unwrap();
    assert_eq!(out.to_text(), "2");
    assert!(ToolRegistry::global().unwrap().contains("__tool_make"));
}

// ---- return types ----

/// Plain text, no Result.
#[tool(register = false)]
async fn plain() -> &'static str {
    "plain"
}

/// Content blocks.
#[tool(register = false)]
async fn picture() -> Vec<ContentBlock> {
    vec![
        ContentBlock::text("a red pixel"),
        ContentBlock::image("image/png", &[137, 80, 78, 71]),
    ]
}

/// Fails with a Display error.
#[tool(register = false)]
async fn fail_display(fail: bool) -> Result<String, std::io::Error> {
    if fail {
        Err(std::io::Error::other("disk on fire"))
    } else {
        Ok("fine".into())
    }
}

/// Asks to be retried.
#[tool(register = false)]
async fn flaky() -> Result<String, ToolError> {
    Err(ToolError::retry("the index is rebuilding"))
}

/// Returns a full output.
#[tool(register = false)]
async fn full() -> ToolOutput {
    ToolOutput::error("reported as an error by the tool itself")
}

/// Returns nothing.
#[tool(register = false)]
async fn nothing() {}

/// Returns a map.
#[tool(register = false)]
async fn counts() -> Result<std::collections::BTreeMap<String, u32>, String> {
    Ok([("a".to_owned(), 1)].into_iter().collect())
}

#[tokio::test]
async fn every_return_shape_converts() {
    assert_eq!(
        call(&PlainTool, json!({})).await.unwrap().to_text(),
        "plain"
    );

    let picture = call(&PictureTool, json!({})).await.unwrap();
    assert_eq!(picture.content.len(), 2);
    assert!(matches!(
        &picture.content[1],
        ContentBlock::Image { media_type, data } if media_type == "image/png" && data == "iVBORw=="
    ));

    let failed = call(&FailDisplayTool, json!({"fail": true}))
        .await
        .unwrap_err();
    assert_eq!(failed, ToolError::ExecutionFailed("disk on fire".into()));
    let fine = call(&FailDisplayTool, json!({"fail": false}))
        .await
        .unwrap();
    assert_eq!(fine.to_text(), "fine");

    let retry = call(&FlakyTool, json!({})).await.unwrap_err();
    assert_eq!(
        retry.kind(),
        ToolErrorKind::Retry,
        "ToolError keeps its kind"
    );

    let full = call(&FullTool, json!({})).await.unwrap();
    assert!(full.is_error);

    assert_eq!(
        call(&NothingTool, json!({})).await.unwrap().to_text(),
        "Done."
    );

    let counts = call(&CountsTool, json!({})).await.unwrap();
    assert_eq!(counts.structured, Some(json!({"a": 1})));
}

#[test]
fn tools_without_parameters_take_an_empty_object() {
    let schema = PlainTool.input_schema();
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
}

// ---- registration ----

#[test]
fn registered_tools_are_in_the_global_registry_and_opted_out_ones_are_not() {
    let global = ToolRegistry::global().unwrap();
    for name in ["ReadFile", "search", "plan_trip", "bump"] {
        assert!(
            global.contains(name),
            "{name} missing: {:?}",
            global.names()
        );
    }
    for name in ["plain", "picture", "full", "nothing"] {
        assert!(!global.contains(name), "{name} has register = false");
    }
    let defined_at = global.defined_at("ReadFile").unwrap();
    assert!(defined_at.contains("macro::read"), "{defined_at}");
    assert!(defined_at.contains("macro.rs"), "{defined_at}");
}

#[tokio::test]
async fn registry_timeout_stops_a_slow_tool() {
    /// Sleeps.
    #[tool(register = false, timeout = "50ms")]
    async fn slow() -> String {
        tokio::time::sleep(Duration::from_secs(30)).await;
        "woke".into()
    }
    let registry = ToolRegistry::new();
    registry.register(Arc::new(SlowTool)).unwrap();
    let error = registry
        .execute("slow", json!({}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::Timeout(Duration::from_millis(50)));
    assert!(error.message_for_model().contains("timed out after 50ms"));
}

// ---- the generated input struct reads its fields as serde's derive would ----

#[test]
fn the_generated_input_struct_deserialises_through_serde() {
    let input: SearchToolInput =
        serde_json::from_value(json!({"query": "q", "type": "fn"})).unwrap();
    assert_eq!(
        (input.query, input.kind, input.scope, input.verbose),
        ("q".to_owned(), "fn".to_owned(), "all".to_owned(), false)
    );
    let input: ShapesToolInput = serde_json::from_value(json!({
        "stop": {"name": "Lisbon"}, "mode": "train", "type": "trip", "pace": 80
    }))
    .unwrap();
    assert!(input.stops.is_none());
    assert_eq!(input.nights, 3);

    let unknown =
        serde_json::from_value::<SearchToolInput>(json!({"query": "q", "type": "fn", "depth": 2}))
            .err()
            .expect("refused")
            .to_string();
    assert_eq!(
        unknown,
        "unknown field `depth`, expected one of `query`, `type`, `scope`, `verbose`"
    );
    let missing = serde_json::from_value::<SearchToolInput>(json!({"query": "q"}))
        .err()
        .expect("refused")
        .to_string();
    assert_eq!(missing, "missing field `type`");
    let not_an_object = serde_json::from_value::<SearchToolInput>(json!("q"))
        .err()
        .expect("refused")
        .to_string();
    assert_eq!(
        not_an_object,
        r#"invalid type: string "q", expected struct SearchToolInput"#
    );
}

#[tokio::test]
async fn a_wrong_field_is_named_in_the_error_the_model_gets() {
    // Past the schema (called directly): the parse itself says which field is wrong.
    let error = SearchTool
        .call(json!({"query": 3, "type": "fn"}), &ctx())
        .await
        .unwrap_err();
    assert_eq!(
        error,
        ToolError::invalid_input("field `query`: invalid type: integer `3`, expected a string")
    );
}
