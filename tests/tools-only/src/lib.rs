//! A crate of tools with only `tool-sdk-core` (no `tool-sdk`) in its `Cargo.toml`.

use std::sync::Arc;

use serde::Serialize;
use tools_core::{
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

/// Settings the app puts in its state; tools borrow them from the context.
#[derive(Clone)]
pub struct Limits {
    /// The largest number a tool may return.
    pub max: i64,
}

/// A borrowed extractor: `&Limits` comes out of the app state, which it declares it needs.
impl<'a> FromToolContext<'a> for &'a Limits {
    fn from_context(ctx: &'a ToolContext) -> Result<Self, ToolError> {
        ctx.state::<Limits>()
            .ok_or_else(|| ToolError::failed("no limits in the app state"))
    }

    fn required_state() -> Option<tools_core::StateRequirement> {
        Some(tools_core::StateRequirement {
            type_id: std::any::TypeId::of::<Limits>(),
            type_name: std::any::type_name::<Limits>(),
        })
    }
}

/// Doubles a number, within the app's limit.
#[tool]
pub async fn double(
    /// The number.
    n: i64,
    limits: &Limits,
) -> Result<i64, ToolError> {
    match n.saturating_mul(2) {
        doubled if doubled <= limits.max => Ok(doubled),
        _ => Err(ToolError::invalid_input(format!(
            "over the limit of {}",
            limits.max
        ))),
    }
}
