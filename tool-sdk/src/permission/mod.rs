//! Whether a call may run: the hook point the agent consults after validation and before
//! running a tool.

use serde_json::Value;

use crate::{BoxFuture, Tool, ToolContext};

/// The verdict on one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PermissionDecision {
    /// Run it.
    Allow,
    /// Refuse it; the reason goes back to the model.
    Deny(String),
    /// Ask the user (through the agent's `PermissionRequested` event).
    Ask,
}

/// Decides whether calls may run. Implement it to plug in rules, modes or hooks.
pub trait PermissionPolicy: Send + Sync {
    /// The verdict on calling `tool` with `input`.
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, PermissionDecision>;
}

/// Allows every call.
#[derive(Clone, Copy, Debug, Default)]
pub struct AllowAll;

impl PermissionPolicy for AllowAll {
    fn check<'a>(
        &'a self,
        _tool: &'a dyn Tool,
        _input: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, PermissionDecision> {
        Box::pin(std::future::ready(PermissionDecision::Allow))
    }
}

impl<F> PermissionPolicy for F
where
    F: Fn(&dyn Tool, &Value) -> PermissionDecision + Send + Sync,
{
    fn check<'a>(
        &'a self,
        tool: &'a dyn Tool,
        input: &'a Value,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, PermissionDecision> {
        Box::pin(std::future::ready(self(tool, input)))
    }
}
