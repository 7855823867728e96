//! Whether a call may run: the hook point the agent consults after validation and before
//! running a tool.

mod sandbox;
pub use sandbox::{PROTECTED_DIRS, PROTECTED_FILES, ProtectedPattern, Sandbox, SandboxError};

use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{BoxFuture, Tool, ToolContext};

/// How much runs without asking.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PermissionMode {
    /// The policy decides every call.
    #[default]
    Default,
    /// File edits run without asking (decided by the policy's rules).
    AcceptEdits,
    /// Only read-only tools run; the model plans and presents the plan with ExitPlanMode.
    Plan,
    /// Everything runs; the policy is not consulted.
    BypassPermissions,
}

/// The session's current [`PermissionMode`]; ExitPlanMode changes it.
#[derive(Debug, Default)]
pub struct ModeState(Mutex<PermissionMode>);

impl ModeState {
    /// The current mode.
    pub fn get(&self) -> PermissionMode {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Switches mode.
    pub fn set(&self, mode: PermissionMode) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}

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
