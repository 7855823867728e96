//! MCP, both ways: tools of any MCP server as agent tools, and any registry served over MCP.
//! Built on rmcp, the protocol's official Rust SDK.
//!
//! # Using an MCP server's tools
//!
//! Name the servers in the agent's config (or load the `mcpServers` file Claude Desktop and
//! Claude Code use); their tools join the agent as `mcp__<server>__<tool>`:
//!
//! ```no_run
//! use tool_sdk::agent::{Agent, AgentConfig};
//! use tool_sdk::mcp::{McpServerConfig, McpServers};
//!
//! # async fn demo(model: tool_sdk::model::ScriptedModel) -> Result<(), Box<dyn std::error::Error>> {
//! let servers = McpServers::from_file(".mcp.json")?; // {"mcpServers": {...}}
//! let config = AgentConfig::new()
//!     .with_model(model)
//!     .mcp(|mcp| {
//!         mcp.with_server("time", McpServerConfig::stdio("uvx", ["mcp-server-time"]))
//!             .with_servers(servers)
//!     })
//!     .permissions(|p| p.allow("mcp__time__*"));
//! let agent = Agent::create(config).await?;
//! # Ok(()) }
//! ```
//!
//! `readOnlyHint` makes a tool read-only for the agent (concurrent calls, plan mode, no
//! permission prompt); rules such as `mcp__github__*` match MCP tools like any other. A call
//! has a timeout (`toolTimeoutSecs`, else the agent's), cancelling it sends
//! `notifications/cancelled`, progress notifications become `ToolProgress` events, tools are
//! listed again on `notifications/tools/list_changed`, and a stdio server that exited is
//! started again on the next call. A server that does not come up fails `Agent::create` with
//! its command and the end of its stderr.
//!
//! # Remote servers behind OAuth
//!
//! A Streamable HTTP server that answers 401 is authorized with OAuth 2.1 (rmcp's `auth`):
//! discovery from its challenge, registration (dynamic, a client ID metadata document, or the
//! [`McpOAuthConfig`] client), PKCE, the user's approval through the app's [`McpAuthorizer`]
//! with the redirect taken on a loopback listener, tokens in the app's [`McpTokenStore`]
//! ([`McpTokenFile`]: one 0600 file per server), refreshed when they expire. The app passes
//! its [`McpOAuth`] with `AgentConfig::mcp(|m| m.with_oauth(..))` or
//! [`McpClient::connect_with`]; without an authorizer such a server fails to connect, saying
//! how to give one. A failed authorization names the server, the [`OAuthStep`] and the fix.
//! All of this needs the `mcp-oauth` feature (on by default); without it such a server fails
//! to connect, saying how to turn the feature on.
//!
//! # Protocol revisions
//!
//! The client asks for 2026-07-28 (`server/discover`) and falls back to `initialize` at
//! 2025-11-25, which the server may lower; `protocolVersion` ([`McpServerConfig::protocol_version`])
//! pins one of [`PROTOCOL_VERSIONS`]. The server answers each of them.
//!
//! # Serving tools over MCP
//!
//! [`serve_stdio`], [`serve_http`] and [`McpToolServer`] serve any [`ToolRegistry`](crate::ToolRegistry).
//!
//! # Long calls as tasks
//!
//! Both sides speak the tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`,
//! SEP-2663), also over a 2025-11-25 session whose client declared it. The server answers a
//! call with a task when the client declared the extension and the tool's own
//! [`timeout`](crate::Tool::timeout) is longer than the server's default (Bash, say):
//! `tasks/get` reports the tool's progress as the status message and, at the end, its result;
//! `tasks/update` answers its questions; `tasks/cancel` cancels its context. The client
//! declares the extension and follows a task it is given: it polls at the server's interval,
//! passes status messages on as progress, asks the task's questions, and sends `tasks/cancel`
//! when the call is cancelled or times out. The experimental tasks of 2025-11-25 (`tasks/result`,
//! `tasks/list`, `execution.taskSupport`) are not spoken.

mod adapter;
mod client;
mod config;
mod error;
mod naming;
mod oauth;
#[cfg(feature = "mcp-server")]
mod server;

pub use client::{McpClient, ToolsChanged};
pub use config::{
    McpFileError, McpOAuthConfig, McpServerConfig, McpServers, McpTransport, PROTOCOL_VERSIONS,
};
pub use error::McpError;
pub use naming::{NameMap, sanitize, tool_name};
pub use oauth::{
    AuthorizationPrompt, McpAuthorizer, McpOAuth, McpTokenFile, McpTokenMemory, McpTokenStore,
    OAuthStep, TokenLock,
};
#[cfg(feature = "mcp-server")]
pub use server::{McpHttpServer, McpToolServer, serve_http, serve_stdio};

/// Where [`Agent::add_or_update_mcp_server`](crate::agent::Agent::add_or_update_mcp_server) and
/// [`Agent::remove_mcp_server`](crate::agent::Agent::remove_mcp_server) make the change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpScope {
    /// This agent only, until it is dropped.
    #[default]
    Session,
    /// This agent, and the `.mcp.json` file of its working directory (the project's shared
    /// servers, as Claude Code keeps them), so the next agent gets it too.
    Project,
}
