//! The [`Tool`] trait and what flows through it, from `tool-sdk-core` (where a crate that only
//! defines tools gets them without the agent runtime), under the paths this crate uses.

pub use tool_sdk_core::{
    ActsOn, AgentId, BoxFuture, ContentBlock, Elicitation, ElicitationAnswer, Elicited, Elicitor,
    FileCheckpointer, FileRead, FileStateTracker, FromToolContext, Json, PermissionPrompt,
    ResourceContents, ResultDisplay, SessionValues, State, StateMap, StateRequirement,
    SubagentReport, SubagentRequest, SubagentRunner, Tool, ToolAnnotations, ToolContext, ToolError,
    ToolErrorKind, ToolOutput, ToolResult, ToolUpdate, ToolUpdateKind,
};

#[cfg(test)]
mod tests;
