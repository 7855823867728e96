//! What a crate of tools needs, and nothing of the agent runtime: the [`Tool`] trait,
//! [`ToolContext`], [`ToolOutput`] and [`ToolError`], app state ([`State`]), typed output
//! ([`Json`]), the extractor trait for injected parameters ([`FromToolContext`]), and the
//! support code [`#[tool]`](macro@tool) expands to.
//!
//! `tool-sdk` re-exports all of it at the same paths (`tool_sdk::ToolContext` is
//! `tool_sdk_core::ToolContext`), and its agents run tools of a crate that depends on this one
//! alone. Depend on it instead of `tool-sdk` in a crate that only defines tools: its build does
//! not compile SQLite, tree-sitter, an HTTP client or TLS.
//!
//! ```toml
//! [dependencies]
//! tool-sdk-core = { git = "https://github.com/tool-sdk/tool-sdk" }
//! ```
//!
//! ```
//! use tool_sdk_core::{tool, Tool, ToolContext, ToolError};
//!
//! /// Adds two numbers.
//! #[tool(read_only)]
//! async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
//!     a.checked_add(b).ok_or_else(|| ToolError::failed("the sum overflows"))
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let output = AddTool.call(serde_json::json!({"a": 2, "b": 3}), &ToolContext::default()).await;
//! assert_eq!(output.unwrap().to_text(), "5");
//! # });
//! ```
//!
//! Two optional features add what tool-sdk's own tools use: `process`
//! (`ToolContext::command`, a child process that dies with the call) and `sandbox`
//! (`ToolContext::sandbox`, the directories file tools may use).

// Lets `#[tool]` use `::tool_sdk_core::...` paths inside this crate too.
extern crate self as tool_sdk_core;

mod context;
mod elicit;
pub mod error;
mod extract;
mod json;
mod output;
#[cfg(feature = "process")]
#[doc(hidden)]
pub mod process;
mod registration;
#[cfg(feature = "sandbox")]
#[doc(hidden)]
pub mod sandbox;
mod schema;
#[cfg(feature = "tls")]
#[doc(hidden)]
pub mod tls;
mod tool;

#[doc(hidden)]
pub mod __private;

pub use context::{
    AgentId, FileCheckpointer, FileRead, FileStateTracker, SessionValues, State, StateMap,
    StateRequirement, SubagentReport, SubagentRequest, SubagentRunner, ToolContext, ToolUpdate,
    ToolUpdateKind,
};
pub use elicit::{Elicitation, ElicitationAnswer, Elicited, Elicitor, form_schema};
pub use extract::FromToolContext;
pub use json::Json;
pub use output::{ContentBlock, ResourceContents, ToolError, ToolErrorKind, ToolOutput};
#[cfg(feature = "process")]
pub use process::{ToolChild, ToolCommand};
#[doc(hidden)]
pub use registration::ToolRegistration;
pub use schema::schema_for;
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    ActsOn, BoxFuture, PermissionPrompt, ResultDisplay, Tool, ToolAnnotations, ToolResult,
};

/// The JSON Schema library that describes tool inputs, re-exported so that a crate needs no
/// dependency of its own on it (`use tool_sdk_core::{schemars, JsonSchema};` next to the derive).
pub use schemars;
/// Derive it on argument and `#[input]` types, with `schemars` in scope.
pub use schemars::JsonSchema;

/// Turns an async fn into a tool an LLM can call; documented at `tool_sdk::tool`, which is
/// this same macro. With only this crate in `Cargo.toml` it expands to `tool_sdk_core` paths.
pub use tool_macros::tool;
