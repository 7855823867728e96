//! The MCP server the MCP server tests run: the built-in file tools rooted at a directory,
//! plus a few tools that exercise validation, progress and cancellation.
//!
//! `mcp-test-server ROOT` serves on stdio; `mcp-test-server ROOT --http 127.0.0.1:PORT`
//! serves Streamable HTTP and prints its URL on stdout.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tool_sdk::builtin::{GlobTool, GrepTool, ReadTool, WriteTool};
use tool_sdk::mcp::McpToolServer;
use tool_sdk::pipeline::CallPolicy;

/// How long a call of a tool that sets no timeout may run on this server.
const HANG_LIMIT: Duration = Duration::from_millis(1500);
/// How long a call of a tool that sets its own (`count_long`) may run.
const LONG_LIMIT: Duration = Duration::from_secs(20);
use tool_sdk::{
    BoxFuture, Json, JsonSchema, Tool, ToolAnnotations, ToolContext, ToolError, ToolOutput,
    ToolRegistry, ToolResult, schemars, tool,
};

/// Returns structured content that does or does not match its output schema, as a success or
/// as an error: what a client must hold to the schema, and what not.
struct ShapeTool {
    input: Value,
    output: Value,
}

impl Tool for ShapeTool {
    fn name(&self) -> &str {
        "shape"
    }
    fn description(&self) -> &str {
        "Returns {\"n\": 1} when `valid`, else {\"n\": \"one\"}, or only text when `none`; an \
         error result when `error`."
    }
    fn input_schema(&self) -> &Value {
        &self.input
    }
    fn output_schema(&self) -> Option<&Value> {
        Some(&self.output)
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: Some(true),
            ..ToolAnnotations::default()
        }
    }
    fn call<'a>(&'a self, input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            let n = if input["valid"] == true {
                json!(1)
            } else {
                json!("one")
            };
            let mut output = match input["none"] == true {
                true => ToolOutput::text("no structure"),
                false => ToolOutput::json(json!({ "n": n })),
            };
            output.is_error = input["error"] == true;
            Ok(output)
        })
    }
}

/// Adds two integers.
#[tool(read_only, register = false)]
async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
    a.checked_add(b)
        .ok_or_else(|| ToolError::failed("the sum overflows"))
}

/// Counts to `to`, one step every 50 ms, reporting progress; writes `cancelled` into the root
/// if it is cancelled first.
#[tool(read_only, register = false)]
async fn count_slowly(to: u32, ctx: &ToolContext) -> Result<String, ToolError> {
    count(to, ctx).await
}

/// Counts like `count_slowly`, with a timeout of its own longer than the server's default: a
/// long tool, which the server runs as a task for a client that can follow one.
#[tool(read_only, register = false, timeout = "20s")]
async fn count_long(to: u32, ctx: &ToolContext) -> Result<String, ToolError> {
    count(to, ctx).await
}

/// Asks the user for a table booking, then counts a little: a long tool that asks a question
/// (in a task, the task's input request).
#[tool(register = false, timeout = "20s")]
async fn book_long(restaurant: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let booked = book(restaurant, ctx).await?;
    count(3, ctx).await?;
    Ok(booked)
}

async fn count(to: u32, ctx: &ToolContext) -> Result<String, ToolError> {
    for step in 1..=to {
        tokio::select! {
            _ = ctx.cancellation().cancelled() => {
                let _ = std::fs::write(ctx.resolve("cancelled"), format!("at step {step}"));
                return Err(ToolError::Cancelled);
            }
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        ctx.progress(format!("step {step} of {to}"));
    }
    Ok(format!("counted to {to}"))
}

/// Panics: the server must answer `isError` and keep serving.
#[tool(read_only, register = false)]
async fn panic_now() -> String {
    panic!("this tool always panics")
}

/// Never finishes: the server's own timeout must stop it.
#[tool(read_only, register = false)]
async fn hang() -> String {
    std::future::pending::<String>().await
}

/// The registry served, for `learn_tool`.
static REGISTRY: std::sync::OnceLock<Arc<ToolRegistry>> = std::sync::OnceLock::new();

/// Says hello; added at run time by `learn_tool`.
#[tool(read_only, register = false)]
async fn greet(name: String) -> String {
    format!("Hello, {name}!")
}

/// Adds the `greet` tool to the server, which then tells the client its tool list changed.
#[tool(register = false)]
async fn learn_tool() -> Result<String, ToolError> {
    let registry = REGISTRY
        .get()
        .ok_or_else(|| ToolError::failed("no registry"))?;
    if !registry.contains("greet") {
        registry
            .register(Arc::new(GreetTool))
            .map_err(|e| ToolError::failed(e.to_string()))?;
    }
    Ok("learned greet".to_owned())
}

/// Removes the `greet` tool again.
#[tool(register = false)]
async fn forget_tool() -> String {
    if let Some(registry) = REGISTRY.get() {
        registry.unregister("greet");
    }
    "forgot greet".to_owned()
}

/// A city's forecast: typed output.
#[derive(serde::Serialize, JsonSchema)]
struct Forecast {
    city: String,
    celsius: i32,
}

/// Forecasts the weather in a city (always 21 degrees).
#[tool(read_only, register = false)]
async fn forecast(city: String) -> Result<Json<Forecast>, ToolError> {
    Ok(Json(Forecast { city, celsius: 21 }))
}

/// The primes below `below`: typed output whose schema is not an object, so it is wrapped.
#[tool(read_only, register = false)]
async fn primes(below: u32) -> Json<Vec<u32>> {
    Json(
        (2..below)
            .filter(|n| (2..*n).take_while(|d| d * d <= *n).all(|d| n % d != 0))
            .collect(),
    )
}

/// Conformance suite: returns plain text.
#[tool(read_only, register = false)]
async fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Returns a resource link, an embedded text resource and an embedded binary one.
#[tool(read_only, register = false)]
async fn resources() -> Vec<tool_sdk::ContentBlock> {
    use tool_sdk::ContentBlock;
    vec![
        ContentBlock::text("three resources:"),
        ContentBlock::ResourceLink {
            uri: "file:///notes/todo.md".into(),
            name: "todo.md".into(),
            description: Some("what is left to do".into()),
            mime_type: Some("text/markdown".into()),
        },
        ContentBlock::resource_text(
            "file:///notes/done.md",
            Some("text/markdown".into()),
            "- bench",
        ),
        ContentBlock::resource_blob(
            "file:///logo.bin",
            Some("application/octet-stream".into()),
            &[0, 1, 2, 255],
        ),
    ]
}

/// Conformance suite: returns an image (a 1x1 red PNG).
#[tool(read_only, register = false)]
async fn test_image_content() -> tool_sdk::ContentBlock {
    const RED_PIXEL: &[u8] = &[
        137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6,
        0, 0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 252, 207, 192, 240,
        31, 0, 5, 5, 2, 0, 95, 200, 241, 210, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
    ];
    tool_sdk::ContentBlock::image("image/png", RED_PIXEL)
}

/// Conformance suite: always fails.
#[tool(read_only, register = false)]
async fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::failed(
        "This tool intentionally returns an error for testing",
    ))
}

/// Conformance suite: reports progress three times.
#[tool(read_only, register = false)]
async fn test_tool_with_progress(ctx: &ToolContext) -> String {
    for step in ["started", "halfway", "done"] {
        ctx.progress(step);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    "Progress reported".to_owned()
}

/// A table booking, asked of the user.
#[derive(serde::Deserialize, JsonSchema)]
struct Booking {
    /// How many people.
    guests: u8,
    /// Inside or outside.
    seating: Seating,
    /// Anything the restaurant should know.
    note: Option<String>,
}

#[derive(serde::Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Seating {
    Inside,
    Outside,
}

/// Books a table, asking the user for the details (`ctx.elicit`: the client's
/// `elicitation/create`).
#[tool(register = false)]
async fn book(restaurant: String, ctx: &ToolContext) -> Result<String, ToolError> {
    let asked = ctx.elicit::<Booking>(format!("Book a table at {restaurant}?"));
    Ok(match asked.await? {
        tool_sdk::Elicited::Accept(booking) => {
            let seating = match booking.seating {
                Seating::Inside => "inside",
                Seating::Outside => "outside",
            };
            let note = booking.note.unwrap_or_default();
            format!(
                "booked {restaurant} for {} {seating} {note}",
                booking.guests
            )
            .trim_end()
            .to_owned()
        }
        tool_sdk::Elicited::Decline => "declined".to_owned(),
        tool_sdk::Elicited::Cancel => "cancelled".to_owned(),
    })
}

/// Sends the user to a sign-in page (a URL-mode elicitation).
#[tool(register = false)]
async fn sign_in(ctx: &ToolContext) -> Result<String, ToolError> {
    let asked = ctx.elicit_url("Sign in to continue.", "https://example.com/sign-in");
    Ok(match asked.await? {
        tool_sdk::Elicited::Accept(()) => "signed in".to_owned(),
        tool_sdk::Elicited::Decline => "declined".to_owned(),
        tool_sdk::Elicited::Cancel => "cancelled".to_owned(),
    })
}

/// What a conformance tool's question came to, as the suite wants it told.
fn completed<T: serde::Serialize>(answer: tool_sdk::Elicited<T>) -> String {
    let (action, content) = match answer {
        tool_sdk::Elicited::Accept(content) => ("accept", serde_json::to_value(content).ok()),
        tool_sdk::Elicited::Decline => ("decline", None),
        tool_sdk::Elicited::Cancel => ("cancel", None),
    };
    let content = content.unwrap_or(Value::Null);
    format!("Elicitation completed: action={action}, content={content}")
}

/// Conformance suite (`tools-call-elicitation`): who the user is.
#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
struct UserInfo {
    /// Your user name.
    username: String,
    /// Your email address.
    #[schemars(email)]
    email: String,
}

/// Conformance suite: asks the user who they are.
#[tool(register = false)]
async fn test_elicitation(message: String, ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(completed(ctx.elicit::<UserInfo>(message).await?))
}

/// Conformance suite (SEP-1034): a default for every primitive type.
#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(default)]
struct Defaults {
    name: String,
    age: i64,
    score: f64,
    status: Status,
    verified: bool,
}

impl Default for Defaults {
    fn default() -> Self {
        Defaults {
            name: "John Doe".into(),
            age: 30,
            score: 95.5,
            status: Status::Active,
            verified: true,
        }
    }
}

#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
    Pending,
}

/// Conformance suite: a form whose fields have defaults.
#[tool(register = false)]
async fn test_elicitation_sep1034_defaults(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(completed(ctx.elicit::<Defaults>("Your details?").await?))
}

/// Conformance suite (SEP-1330): the five kinds of enum.
#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
struct Enums {
    untitled_single: Untitled,
    titled_single: TitledSingle,
    #[schemars(extend("enumNames" = ["Option One", "Option Two", "Option Three"]))]
    legacy_enum: Legacy,
    untitled_multi: Vec<Untitled>,
    titled_multi: Vec<TitledMulti>,
}

#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Untitled {
    Option1,
    Option2,
    Option3,
}

#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TitledSingle {
    #[schemars(title = "First Option")]
    Value1,
    #[schemars(title = "Second Option")]
    Value2,
    #[schemars(title = "Third Option")]
    Value3,
}

#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Legacy {
    Opt1,
    Opt2,
    Opt3,
}

#[derive(serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum TitledMulti {
    #[schemars(title = "First Choice")]
    Value1,
    #[schemars(title = "Second Choice")]
    Value2,
    #[schemars(title = "Third Choice")]
    Value3,
}

/// Conformance suite: a form of every kind of enum.
#[tool(register = false)]
async fn test_elicitation_sep1330_enums(ctx: &ToolContext) -> Result<String, ToolError> {
    Ok(completed(ctx.elicit::<Enums>("Pick some.").await?))
}

/// Conformance suite: a hand-written 2020-12 schema must reach clients unchanged.
struct JsonSchema2020Tool(Value);

impl Tool for JsonSchema2020Tool {
    fn name(&self) -> &str {
        "json_schema_2020_12_tool"
    }
    fn description(&self) -> &str {
        "Tool with JSON Schema 2020-12 features"
    }
    fn input_schema(&self) -> &Value {
        &self.0
    }
    fn call<'a>(&'a self, input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move { Ok(ToolOutput::json(input)) })
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let root = args
        .next()
        .ok_or("usage: mcp-test-server ROOT [--http ADDR]")?;
    // tests/otel.rs: this server's spans go to its receiver, to be joined with the client's.
    let _telemetry = match std::env::var("MCP_TEST_OTLP_ENDPOINT") {
        Ok(endpoint) => Some(tool_sdk::telemetry::init_otlp(
            &endpoint,
            "mcp-test-server",
        )?),
        Err(_) => None,
    };
    let registry = Arc::new(ToolRegistry::new());
    registry.register(Arc::new(ReadTool))?;
    registry.register(Arc::new(WriteTool))?;
    registry.register(Arc::new(GlobTool))?;
    registry.register(Arc::new(GrepTool))?;
    registry.register(Arc::new(AddTool))?;
    registry.register(Arc::new(CountSlowlyTool))?;
    registry.register(Arc::new(CountLongTool))?;
    registry.register(Arc::new(BookLongTool))?;
    registry.register(Arc::new(PanicNowTool))?;
    registry.register(Arc::new(HangTool))?;
    registry.register(Arc::new(LearnToolTool))?;
    registry.register(Arc::new(ForgetToolTool))?;
    registry.register(Arc::new(ForecastTool))?;
    registry.register(Arc::new(PrimesTool))?;
    registry.register(Arc::new(TestSimpleTextTool))?;
    registry.register(Arc::new(TestImageContentTool))?;
    registry.register(Arc::new(ResourcesTool))?;
    registry.register(Arc::new(TestErrorHandlingTool))?;
    registry.register(Arc::new(TestToolWithProgressTool))?;
    registry.register(Arc::new(BookTool))?;
    registry.register(Arc::new(SignInTool))?;
    registry.register(Arc::new(TestElicitationTool))?;
    registry.register(Arc::new(TestElicitationSep1034DefaultsTool))?;
    registry.register(Arc::new(TestElicitationSep1330EnumsTool))?;
    registry.register(Arc::new(JsonSchema2020Tool(json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {"address": {"$anchor": "address", "type": "object", "properties": {
            "street": {"type": "string"}, "city": {"type": "string"}}}},
        "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
        "additionalProperties": false,
        // What 2026-07-28 (SEP-2106) adds: composition and conditional keywords.
        "allOf": [{"anyOf": [{"required": ["name"]}, {"required": ["address"]}]}],
        "if": {"properties": {"name": {"const": "home"}}, "required": ["name"]},
        "then": {"required": ["address"]},
        "else": {}
    }))))?;
    registry.register(Arc::new(ShapeTool {
        input: json!({"type": "object", "properties": {
            "valid": {"type": "boolean"}, "error": {"type": "boolean"},
            "none": {"type": "boolean"}},
            "required": ["valid", "error"]}),
        output: json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "required": ["n"]}),
    }))?;
    let _ = REGISTRY.set(registry.clone());
    // The server's own limit: short, so that `hang` is stopped quickly. No output check:
    // `shape` sends mismatched structured content on purpose, for the client's check to catch.
    let policy = CallPolicy::new()
        .with_timeouts(HANG_LIMIT, LONG_LIMIT)
        .with_output_check(false);
    let server = McpToolServer::new(registry)
        .with_root(&root)?
        .with_call_policy(policy);
    match (args.next().as_deref(), args.next()) {
        (Some("--http"), Some(addr)) => {
            let running = server.serve_http(addr.parse()?).await?;
            println!("{}", running.url());
            std::future::pending::<()>().await;
        }
        (None, _) => server.serve_stdio().await?,
        _ => return Err("usage: mcp-test-server ROOT [--http ADDR]".into()),
    }
    Ok(())
}
