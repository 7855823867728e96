//! The built-in tools of [tool-sdk](https://docs.rs/tool-sdk), written with `#[tool]` like any
//! other and registered under the names and parameters Claude Code uses, and the permission
//! gate that judges every call. Apps use them as `tool_sdk::builtin` and
//! `tool_sdk::permission`, which re-export these modules.
//!
//! The gate lives with the tools because the Bash tool and the gate share the Bash classifier
//! (`permission::bash`). The crate needs neither rmcp, jsonschema nor SQLite, so a clean build
//! compiles it beside them.

pub mod builtin;
pub mod permission;

// The paths the tools and the gate were written with, inside tool-sdk.
use tokio_util::sync::CancellationToken;
use tool_sdk_core::{
    __private, ActsOn, BoxFuture, ContentBlock, PermissionPrompt, ResultDisplay, StateRequirement,
    SubagentRequest, Tool, ToolAnnotations, ToolChild, ToolCommand, ToolContext, ToolError,
    ToolOutput, ToolResult, process, sandbox, tool,
};
use tool_sdk_model::tls;

/// The `Tool` trait and what flows through it, under the path the gate was written with.
mod tool {
    pub(crate) use tool_sdk_core::{
        ActsOn, BoxFuture, PermissionPrompt, Tool, ToolContext, ToolError, ToolOutput,
    };
}
