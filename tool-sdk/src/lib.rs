//! Build LLM agents whose tools are plain annotated async functions.
//!
//! ```
//! use tool_sdk::{tool, Tool, ToolContext, ToolError};
//!
//! /// Adds two numbers.
//! #[tool(read_only, title = "Add {a} and {b}")]
//! async fn add(
//!     /// The first number.
//!     a: i64,
//!     /// The second number.
//!     b: i64,
//! ) -> Result<i64, ToolError> {
//!     a.checked_add(b).ok_or_else(|| ToolError::failed("the sum overflows"))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // The fn stays callable as written...
//! assert_eq!(add(2, 3).await, Ok(5));
//! // ...and `AddTool` is the tool a model calls with JSON.
//! let output = AddTool.call(serde_json::json!({"a": 2, "b": 3}), &ToolContext::default()).await;
//! assert_eq!(output.unwrap().to_text(), "5");
//! assert_eq!(AddTool.display_title(&serde_json::json!({"a": 2, "b": 3})), "Add 2 and 3");
//! # });
//! ```
//!
//! An agent gives tools to a model and runs the loop: the model asks for calls, the agent
//! runs them (validated, permission-checked) and sends back the results, until the model
//! answers. Offline, a [`ScriptedModel`](model::ScriptedModel) plays the model; with a key,
//! [`AnthropicModel`](model::anthropic::AnthropicModel) or
//! [`OpenAiModel`](model::openai::OpenAiModel) takes its place and nothing else changes:
//!
//! ```standalone_crate
//! use serde_json::json;
//! use tool_sdk::agent::{Agent, AgentConfig};
//! use tool_sdk::model::{ScriptedModel, ScriptedTurn};
//! use tool_sdk::tool;
//!
//! /// Gets the weather in a city.
//! #[tool(read_only, title = "Weather in {city}")]
//! async fn get_weather(city: String) -> String {
//!     format!("Sunny in {city}, 21°C")
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // With a key: tool_sdk::model::anthropic::AnthropicModel::from_env("claude-sonnet-4-5")?
//!     let model = ScriptedModel::new([
//!         ScriptedTurn::tool_call("get_weather", json!({"city": "Lisbon"})),
//!         ScriptedTurn::text("It's sunny in Lisbon: no jacket needed."),
//!     ]);
//!     let config = AgentConfig::new()
//!         .with_model(model)
//!         .with_tools(["get_weather"]); // what the model can see; read-only tools run unasked
//!     let agent = Agent::create(config).await?;
//!     let result = agent.prompt("Do I need a jacket in Lisbon?").await?;
//!     assert_eq!(result.text, "It's sunny in Lisbon: no jacket needed.");
//!     assert_eq!(result.tool_calls, 1);
//!     Ok(())
//! }
//! ```
//!
//! In `Cargo.toml` (tool-sdk is not on crates.io yet: take it from git, or with
//! `path = "..."` from a checkout):
//!
//! ```toml
//! [dependencies]
//! tool-sdk = { git = "https://github.com/tool-sdk/tool-sdk" }
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! serde = { version = "1", features = ["derive"] } # #[derive(Deserialize)] for #[input] types
//! serde_json = "1"                                 # json!, Value
//! futures = "0.3"                                  # StreamExt, to stream a run's events
//! ```
//!
//! The pieces:
//! - [`macro@tool`] turns an async fn into a [`Tool`]; the [`Tool`] trait is also
//!   implementable by hand for tools built at run time. Both, with [`ToolContext`],
//!   [`ToolOutput`], [`ToolError`], [`State`] and [`FromToolContext`], come from the small
//!   crate `tool-sdk-core`, re-exported here: a crate that only defines tools can depend on it
//!   alone and not build the agent runtime.
//! - [`ToolRegistry`] collects tools (every `#[tool]` registers itself globally) and builds the
//!   tool list each provider wants ([`schema::Provider`]).
//! - [`pipeline`] is the road every call takes (validation, permission, timeout, caps), for
//!   the agent, the registry's call API and the MCP server alike; `ARCHITECTURE.md` maps it.
//! - [`agent`] runs the model's tool_use -> tool_result loop.
//! - [`model`] is the models behind one trait and their clients; [`builtin`] is Claude Code's
//!   tools and [`permission`] the gate that judges every call. They come from crates of their
//!   own (`tool-sdk-model`, `tool-sdk-builtin`), re-exported here, which a clean build
//!   compiles beside the SDK's heavier dependencies.
//! - [`session`] keeps conversations durably, to resume them after a crash or fork them.
//! - [`telemetry`] lists the agent's spans (OpenTelemetry's GenAI conventions) and, with the
//!   `otel` feature, sends them to an OpenTelemetry collector.
//! - [`validate`] checks every input against the tool's schema and reports all problems at
//!   once, the way the model can fix them.

// Lets `#[tool]` use `::tool_sdk::...` paths inside this crate too.
extern crate self as tool_sdk;

pub mod agent;
pub mod error;
#[cfg(feature = "mcp-client")]
pub mod mcp;
pub mod model;
pub mod pipeline;
mod registry;
pub mod session;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
mod tool;
pub mod validate;

pub use tool_sdk_builtin::{builtin, permission};
#[doc(hidden)]
pub use tool_sdk_core::__private;
#[doc(inline)]
pub use tool_sdk_model::schema;

pub use registry::{
    RegistryError, ToolInfo, ToolRegistry, ToolStats, build_tools, builtin_tools, get_tools,
    tool_infos,
};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    ActsOn, AgentId, BoxFuture, ContentBlock, Elicitation, ElicitationAnswer, Elicited, Elicitor,
    FileRead, FileStateTracker, FromToolContext, Json, PermissionPrompt, ResourceContents,
    ResultDisplay, SessionValues, State, StateMap, StateRequirement, SubagentReport,
    SubagentRequest, SubagentRunner, Tool, ToolAnnotations, ToolContext, ToolError, ToolErrorKind,
    ToolOutput, ToolResult, ToolUpdate, ToolUpdateKind,
};
pub use tool_sdk_core::{ToolChild, ToolCommand};

/// The JSON Schema library that describes tool inputs, re-exported so that a crate needs no
/// dependency of its own on it. Its derive writes `schemars::...` paths, so bring the name
/// into scope next to the derive:
///
/// ```
/// use tool_sdk::{JsonSchema, schemars, tool};
///
/// /// A point on the map.
/// #[derive(serde::Deserialize, JsonSchema)]
/// struct Point {
///     x: f64,
///     y: f64,
/// }
///
/// /// Moves to a point.
/// #[tool]
/// async fn go(to: Point) -> String {
///     format!("{} {}", to.x, to.y)
/// }
/// ```
pub use schemars;
// A plain URL: rustdoc shows these docs on an inlined re-export of another crate's item,
// where intra-doc links render unresolved, as `[schemars]` in brackets.
/// Derive it on argument and `#[input]` types, with `schemars` in scope (the derive writes
/// `schemars::...` paths: `use tool_sdk::{schemars, JsonSchema};`); see
/// [schemars' documentation](https://docs.rs/schemars/1).
pub use schemars::JsonSchema;

/// Turns an async fn into a tool an LLM can call.
///
/// ```
/// use std::sync::Arc;
/// use tool_sdk::{tool, State, Tool, ToolContext, ToolError};
///
/// struct Cache;
///
/// /// Reads a file from the local filesystem.
/// #[tool(name = "Read", read_only, title = "Read {file_path}", timeout = "10s")]
/// pub async fn read(
///     /// Absolute path of the file.
///     file_path: String,
///     /// 1-based line to start at.
///     offset: Option<u64>,
///     /// How many lines to read.
///     #[arg(default = 2000)]
///     limit: u64,
///     ctx: &ToolContext,
///     cache: State<Arc<Cache>>,
/// ) -> Result<String, ToolError> {
///     # let _ = (offset, limit, ctx, cache);
///     Ok(file_path)
/// }
///
/// assert_eq!(ReadTool.name(), "Read");
/// assert!(ReadTool.is_read_only());
/// assert_eq!(ReadTool.input_schema()["required"], serde_json::json!(["file_path"]));
/// ```
///
/// # What it generates
///
/// - The fn itself, unchanged (minus the parameter attributes), still callable as written.
/// - A unit struct `UpperCamel(fn name) + "Tool"` (`read` -> `ReadTool`) with the fn's
///   visibility, implementing [`Tool`].
/// - For parameter-style tools, `ReadToolInput`: the input struct the schema comes from.
/// - A registration in the global registry ([`ToolRegistry::global`]), unless
///   `register = false`.
///
/// # Keys
///
/// | key | meaning |
/// |---|---|
/// | `name = "..."` | the name the model uses (default: the fn name); `^[a-zA-Z0-9_-]{1,64}$` |
/// | `description = "..."` | what the model reads (default: the fn's doc comment; one is required) |
/// | `read_only`, `destructive`, `idempotent`, `open_world` | hints: bare = true, `= false`, absent = unknown. Read-only tools may run concurrently |
/// | `title = "Read {file_path}"` | [`Tool::display_title`]; `{arg}` must name an argument (checked at compile time) |
/// | `permission = "..."` | the title of [`Tool::permission_prompt`], same syntax |
/// | `timeout = "30s"` | [`Tool::timeout`]: `ms`, `s`, `m`, `h`, combinable (`1m30s`) |
/// | `acts_on(reads = "p")`, `acts_on(writes = "p")`, `acts_on(shell = "p")`, `acts_on(url = "p")`, `acts_on(agent_state)` | [`Tool::acts_on`]: what a call acts on, named by its input property `p`; the permission gate decides from it (rules like `Edit(src/**)` match the path, the Bash classifier judges the command, agent-state tools never ask) |
/// | `category = "..."` | [`Tool::category`] |
/// | `validate = path` | `async fn(&Input, &ToolContext) -> Result<(), E>`, run before permission; an `Err` becomes invalid input |
/// | `register = false` | keep it out of the global registry |
/// | `allow_unknown_fields` | accept (and ignore) input keys the tool does not know. Without it they are refused with a did-you-mean, for an `#[input]` struct too unless its schema decides itself (`additionalProperties`, a flattened map) |
/// | `crate = path` | where `tool_sdk` is, for re-exports (renamed dependencies are found on their own) |
///
/// # Parameters
///
/// - `name: T` with `T: Deserialize + JsonSchema` (derive [`JsonSchema`] with
///   `use tool_sdk::{schemars, JsonSchema};`, no dependency on schemars needed): a property of
///   the input. Doc comments become
///   its description; `Option<T>` is optional and nullable; `#[arg(default)]` or
///   `#[arg(default = expr)]` makes it optional with a real default; `#[arg(rename = "...")]`
///   changes the JSON name; `#[arg(description = "...")]` overrides the doc comment.
/// - `#[input] args: T`: one struct is the whole input (its root must be an object).
/// - `ctx: &ToolContext`: injected.
/// - `state: State<T>`: app state, injected from the context. Unpacking it axum style,
///   `State(state): State<T>` (or `State(mut state)`), works too.
/// - Any other type that implements [`FromToolContext`] (your own extractors): injected. The
///   trait decides, at type-check time, not the type's name; a reference parameter is always
///   injected.
///
/// # Return types
///
/// `T` or `Result<T, E>`, where `T` is `String`, `&'static str`, `()`, [`ToolOutput`],
/// [`ContentBlock`], `Vec<ContentBlock>`, or any `Serialize` type (sent as JSON); and `E` is
/// a [`ToolError`] (its kind is kept) or anything `Display` (an execution failure).
///
/// # Misuse
///
/// Every misuse is a compile error at the offending token that says how to fix it:
///
/// ```compile_fail
/// use tool_sdk::tool;
///
/// /// Reads a file.
/// #[tool]
/// async fn read(file_path: &str) -> String { // error: use `String` instead of `&str`
///     file_path.to_owned()
/// }
/// ```
pub use tool_macros::tool;

#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
