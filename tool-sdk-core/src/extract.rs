//! [`FromToolContext`]: parameters a tool gets from its context instead of from the model.

use crate::{State, StateRequirement, ToolContext, ToolError};

/// A parameter of a `#[tool]` fn that is taken from the call's [`ToolContext`] instead of
/// being sent by the model (axum's `FromRequestParts` is the model): it has no place in the
/// input schema. `&ToolContext` and [`State<T>`] are extractors; implement it for your own
/// types.
///
/// Which parameters are injected is decided by this trait, at type-check time: a parameter
/// whose type implements it is injected, any other is an argument (it must then be
/// `Deserialize` and `JsonSchema`). A shared reference parameter (`&T`) is always injected, as
/// the model cannot send borrowed data. With `#[input]`, every other parameter is injected.
///
/// ```
/// use std::sync::Arc;
/// use tool_sdk_core::{FromToolContext, State, StateMap, Tool, ToolContext, ToolError, tool};
///
/// /// Who is asking: read from the app state on every call.
/// struct User(String);
///
/// impl FromToolContext<'_> for User {
///     fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
///         let State(name) = State::<Arc<str>>::from_context(ctx)?;
///         Ok(User(name.to_string()))
///     }
/// }
///
/// /// Greets whoever is asking.
/// #[tool(register = false)]
/// async fn greet(
///     /// How to greet.
///     greeting: String,
///     user: User,
/// ) -> String {
///     format!("{greeting}, {}!", user.0)
/// }
///
/// // `user` is not part of the input...
/// assert_eq!(GreetTool.input_schema()["required"], serde_json::json!(["greeting"]));
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let mut state = StateMap::new();
/// state.insert(Arc::<str>::from("Ada"));
/// let ctx = ToolContext::default().with_state(state);
/// // ...it comes from the context.
/// let out = GreetTool.call(serde_json::json!({"greeting": "Hello"}), &ctx).await.unwrap();
/// assert_eq!(out.to_text(), "Hello, Ada!");
/// # });
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected into a tool: it does not implement `FromToolContext`",
    label = "a reference parameter (or, with `#[input]`, any other parameter) is taken from the \
             tool's context",
    note = "take `&ToolContext` or `State<T>`, implement `FromToolContext` for this type, or \
            make it an argument the model sends: an owned type (`String`, not `&str`) that \
            implements `Deserialize` and `JsonSchema`"
)]
pub trait FromToolContext<'a>: Sized {
    /// Takes the value out of the call's context. An error fails the call (the tool is not
    /// run) and goes back to the model.
    fn from_context(ctx: &'a ToolContext) -> Result<Self, ToolError>;

    /// The app state the extractor needs, if any: an agent checks it is there before it
    /// starts ([`Tool::required_state`](crate::Tool::required_state)).
    fn required_state() -> Option<StateRequirement> {
        None
    }
}

impl<'a> FromToolContext<'a> for &'a ToolContext {
    fn from_context(ctx: &'a ToolContext) -> Result<Self, ToolError> {
        Ok(ctx)
    }
}

impl<T: Clone + Send + Sync + 'static> FromToolContext<'_> for State<T> {
    fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        State::from_context(ctx)
    }

    fn required_state() -> Option<StateRequirement> {
        Some(State::<T>::requirement())
    }
}
