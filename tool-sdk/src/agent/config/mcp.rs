//! `config.mcp`: the MCP servers whose tools the agent gets.

use std::collections::BTreeMap;

use crate::mcp::{McpOAuth, McpServerConfig, McpServers};

/// The MCP servers whose tools the agent gets, by name: `mcpServers` in a JSON config file
/// (the shape of Claude Desktop and Claude Code), `[mcp_servers.NAME]` in TOML. Their tools
/// join the agent as `mcp__<name>__<tool>`.
///
/// ```
/// use tool_sdk::agent::AgentConfig;
/// use tool_sdk::mcp::McpServerConfig;
///
/// let config = AgentConfig::new()
///     .mcp(|mcp| mcp.with_server("files", McpServerConfig::stdio("mcp-files", ["--root", "."])));
/// assert!(config.mcp.servers.contains_key("files"));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct McpSettings {
    /// The servers, by name.
    pub servers: BTreeMap<String, McpServerConfig>,
    /// How servers that ask for OAuth are authorized: the token store, and how the user is
    /// shown the authorization URL (none by default: such a server fails to connect, saying
    /// so, unless the store already holds a token for it).
    pub oauth: McpOAuth,
}

impl McpSettings {
    /// Adds (or replaces) the server `name`.
    pub fn with_server(mut self, name: impl Into<String>, server: McpServerConfig) -> Self {
        self.servers.insert(name.into(), server);
        self
    }

    /// Authorizes servers that ask for OAuth with `oauth` (its token store and authorizer).
    pub fn with_oauth(mut self, oauth: McpOAuth) -> Self {
        self.oauth = oauth;
        self
    }

    /// Adds every server of an `mcpServers` set, such as one read from Claude Desktop's or
    /// Claude Code's JSON with [`McpServers::from_file`].
    pub fn with_servers(mut self, servers: McpServers) -> Self {
        self.servers.extend(servers.0);
        self
    }
}
