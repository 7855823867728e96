//! Why an MCP server could not be used.

use crate::error::ErrorSource;

/// Why an MCP server could not be used.
#[derive(Clone, Debug, thiserror::Error)]
#[error("MCP server `{server}`: {message}")]
#[non_exhaustive]
pub struct McpError {
    /// The server's name in the config.
    pub server: String,
    /// What went wrong, with the command or URL and, for stdio servers, the end of stderr.
    pub message: String,
    /// The error beneath (the `std::io::Error` of a command that cannot start, rmcp's error
    /// of a failed handshake, ...), if any.
    pub source: Option<ErrorSource>,
}

impl McpError {
    /// The error of server `server`: `message`, caused by `source` if there is one.
    pub(crate) fn new(
        server: &str,
        message: impl Into<String>,
        source: Option<ErrorSource>,
    ) -> Self {
        McpError {
            server: server.to_owned(),
            message: message.into(),
            source,
        }
    }
}
