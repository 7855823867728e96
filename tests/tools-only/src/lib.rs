//! A crate of tools with only `tool-sdk-core` (no `tool-sdk`) in its `Cargo.toml`.

use std::sync::Arc;

use serde::Serialize;
use tool_sdk_core::{
    FromToolContext, Json, JsonSchema, State, ToolContext, ToolError, schemars, tool,
};

/// Adds two numbers.
#[tool(read_only, title = "Add {a} and {b}")]
pub async fn add(
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
) -> Result<i64, ToolError> {
    a.checked_add(b)
        .ok_or_else(|| ToolError::failed("the sum overflows"))
}

/// A counter the app hands to its tools.
#[derive(Clone, Default)]
pub struct Counter(pub Arc<std::sync::atomic::AtomicU64>);

/// Counts calls, in app state.
#[tool]
pub async fn count(State(counter): State<Counter>, ctx: &ToolContext) -> String {
    let n = counter.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
    format!("{n} in {}", ctx.session_id())
}

/// The caller's name, from the context: a user-defined extractor.
pub struct Caller(pub String);

impl FromToolContext<'_> for Caller {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        match ctx.session_id() {
            "" => Err(ToolError::failed("no session")),
            id => Ok(Caller(id.to_owned())),
        }
    }
}

/// A greeting, as structured output.
#[derive(Serialize, JsonSchema)]
pub struct Greeting {
    /// The text.
    pub text: String,
}

/// Greets the caller.
#[tool(read_only)]
pub async fn greet(
    /// How to greet.
    word: String,
    caller: Caller,
) -> Json<Greeting> {
    Json(Greeting {
        text: format!("{word}, {}", caller.0),
    })
}
