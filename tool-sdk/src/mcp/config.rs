//! How an MCP server is reached: the `mcpServers` entries of Claude Desktop and Claude Code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One MCP server: how to reach it, and how long to wait for it.
///
/// Reads the shape Claude Desktop and Claude Code write in `mcpServers`:
///
/// ```
/// use tool_sdk::mcp::{McpServerConfig, McpTransport};
///
/// let stdio: McpServerConfig = serde_json::from_str(r#"{
///     "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
///     "env": {"DEBUG": "1"}
/// }"#).unwrap();
/// assert!(matches!(stdio.transport, McpTransport::Stdio { .. }));
///
/// let http: McpServerConfig = serde_json::from_str(r#"{
///     "type": "http", "url": "https://example.com/mcp",
///     "headers": {"Authorization": "Bearer ${TOKEN}"}
/// }"#).unwrap();
/// assert!(matches!(http.transport, McpTransport::Http { .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawServer", into = "RawServer")]
pub struct McpServerConfig {
    /// Where the server is.
    pub transport: McpTransport,
    /// How long one tool call may take (`toolTimeoutSecs`); `None` leaves it to the agent's
    /// per-tool timeout.
    pub tool_timeout: Option<Duration>,
    /// How long connecting (start-up and the handshake) may take (`startupTimeoutSecs`,
    /// default 30 s).
    pub startup_timeout: Option<Duration>,
}

/// The transports an MCP server can use.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum McpTransport {
    /// A child process speaking JSON-RPC on stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Extra environment variables (the rest is inherited).
        env: BTreeMap<String, String>,
        /// Its working directory (default: the current one).
        cwd: Option<PathBuf>,
    },
    /// A Streamable HTTP endpoint.
    Http {
        /// The endpoint, such as `http://127.0.0.1:3001/mcp`.
        url: String,
        /// Headers sent with every request (e.g. `Authorization`).
        headers: BTreeMap<String, String>,
    },
}

impl McpServerConfig {
    /// A server started as `command args...`.
    pub fn stdio<I, S>(command: impl Into<String>, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        McpServerConfig {
            transport: McpTransport::Stdio {
                command: command.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: BTreeMap::new(),
                cwd: None,
            },
            tool_timeout: None,
            startup_timeout: None,
        }
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
            tool_timeout: None,
            startup_timeout: None,
        }
    }

    /// Sets an environment variable of a stdio server (ignored for HTTP).
    pub fn with_env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Stdio { env, .. } = &mut self.transport {
            env.insert(key.into(), value.into());
        }
        self
    }

    /// Sets the working directory of a stdio server (ignored for HTTP).
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        if let McpTransport::Stdio { cwd, .. } = &mut self.transport {
            *cwd = Some(dir.into());
        }
        self
    }

    /// Adds a header to every request to an HTTP server (ignored for stdio).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        if let McpTransport::Http { headers, .. } = &mut self.transport {
            headers.insert(name.into(), value.into());
        }
        self
    }

    /// Sets the per-call timeout.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Sets the start-up timeout.
    pub fn with_startup_timeout(mut self, timeout: Duration) -> Self {
        self.startup_timeout = Some(timeout);
        self
    }

    /// What to show in errors: the command line or the URL.
    pub fn describe(&self) -> String {
        match &self.transport {
            McpTransport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .map(|part| {
                    if part.contains(char::is_whitespace) {
                        format!("{part:?}")
                    } else {
                        part.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            McpTransport::Http { url, .. } => url.clone(),
        }
    }
}

/// The file shape, as Claude Desktop and Claude Code write it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    headers: BTreeMap<String, String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "tool_timeout_secs"
    )]
    tool_timeout_secs: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "startup_timeout_secs"
    )]
    startup_timeout_secs: Option<f64>,
}

fn seconds(value: Option<f64>, field: &str) -> Result<Option<Duration>, String> {
    value
        .map(|secs| {
            Duration::try_from_secs_f64(secs)
                .map_err(|_| format!("`{field}` must be a positive number of seconds"))
        })
        .transpose()
}

impl TryFrom<RawServer> for McpServerConfig {
    type Error = String;

    fn try_from(raw: RawServer) -> Result<Self, String> {
        let kind = raw.kind.as_deref().map(str::to_ascii_lowercase);
        let transport = match (kind.as_deref(), raw.command, raw.url) {
            (None | Some("stdio"), Some(command), None) => McpTransport::Stdio {
                command,
                args: raw.args,
                env: raw.env,
                cwd: raw.cwd,
            },
            (None | Some("http" | "streamable-http" | "streamablehttp"), None, Some(url)) => {
                McpTransport::Http {
                    url,
                    headers: raw.headers,
                }
            }
            (Some("sse"), _, _) => {
                return Err(
                    "the legacy SSE transport (`\"type\": \"sse\"`) is not supported; \
                            use the server's Streamable HTTP endpoint with `\"type\": \"http\"`"
                        .into(),
                );
            }
            (Some(other), _, _) if !matches!(other, "stdio" | "http") => {
                return Err(format!(
                    "unknown MCP server type `{other}`: use \"stdio\" (with `command`) or \
                     \"http\" (with `url`)"
                ));
            }
            (_, Some(_), Some(_)) => {
                return Err(
                    "an MCP server has either a `command` (stdio) or a `url` (HTTP), \
                            not both"
                        .into(),
                );
            }
            (_, None, None) => {
                return Err("an MCP server needs a `command` (stdio) or a `url` (HTTP)".into());
            }
            (Some(kind), _, _) => {
                return Err(format!(
                    "an MCP server of type `{kind}` needs {}",
                    if kind == "stdio" {
                        "a `command`"
                    } else {
                        "a `url`"
                    }
                ));
            }
        };
        Ok(McpServerConfig {
            transport,
            tool_timeout: seconds(raw.tool_timeout_secs, "toolTimeoutSecs")?,
            startup_timeout: seconds(raw.startup_timeout_secs, "startupTimeoutSecs")?,
        })
    }
}

impl From<McpServerConfig> for RawServer {
    fn from(config: McpServerConfig) -> Self {
        let mut raw = RawServer {
            tool_timeout_secs: config.tool_timeout.map(|d| d.as_secs_f64()),
            startup_timeout_secs: config.startup_timeout.map(|d| d.as_secs_f64()),
            ..RawServer::default()
        };
        match config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                raw.command = Some(command);
                raw.args = args;
                raw.env = env;
                raw.cwd = cwd;
            }
            McpTransport::Http { url, headers } => {
                raw.kind = Some("http".into());
                raw.url = Some(url);
                raw.headers = headers;
            }
        }
        raw
    }
}

/// A set of MCP servers by name: the `mcpServers` object of a `.mcp.json` or
/// `claude_desktop_config.json` file.
///
/// ```
/// use tool_sdk::mcp::McpServers;
///
/// let servers = McpServers::from_json(r#"{"mcpServers": {
///     "time": {"command": "uvx", "args": ["mcp-server-time"]}
/// }}"#).unwrap();
/// assert!(servers.0.contains_key("time"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpServers(pub BTreeMap<String, McpServerConfig>);

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct McpFile {
    mcp_servers: BTreeMap<String, McpServerConfig>,
}

impl McpServers {
    /// Parses a JSON document: either `{"mcpServers": {...}}` (other top-level keys are
    /// ignored, as in `claude_desktop_config.json`) or the bare map of servers.
    pub fn from_json(text: &str) -> Result<Self, serde_json::Error> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        let servers = if value.get("mcpServers").is_some() {
            serde_json::from_value::<McpFile>(value).map(|file| file.mcp_servers)
        } else {
            serde_json::from_value(value)
        };
        servers.map(McpServers)
    }

    /// Reads a JSON file in either shape of [`from_json`](Self::from_json).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self, McpFileError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|error| McpFileError::Read {
            path: path.to_owned(),
            source: error.into(),
        })?;
        Self::from_json(&text).map_err(|error| McpFileError::Json {
            path: path.to_owned(),
            source: error.into(),
        })
    }
}

/// Why [`McpServers::from_file`] could not read a file.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpFileError {
    /// The file cannot be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: crate::error::Shared<std::io::Error>,
    },
    /// The file is not JSON, or not in the shape of an `mcpServers` file.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// What serde said.
        source: crate::error::Shared<serde_json::Error>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_nonsense() {
        let config = McpServerConfig::stdio("node", ["server.js"])
            .with_env("A", "1")
            .with_tool_timeout(Duration::from_secs(5));
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"command": "node", "args": ["server.js"], "env": {"A": "1"},
                               "toolTimeoutSecs": 5.0})
        );
        assert_eq!(
            serde_json::from_value::<McpServerConfig>(json).unwrap(),
            config
        );
        let http = McpServerConfig::http("http://127.0.0.1:1/mcp").with_header("X", "y");
        let json = serde_json::to_value(&http).unwrap();
        assert_eq!(json["type"], "http");
        assert_eq!(
            serde_json::from_value::<McpServerConfig>(json).unwrap(),
            http
        );

        for bad in [
            r#"{}"#,
            r#"{"command": "a", "url": "http://x"}"#,
            r#"{"type": "sse", "url": "http://x"}"#,
            r#"{"type": "ws", "url": "http://x"}"#,
            r#"{"type": "stdio", "url": "http://x"}"#,
        ] {
            let error = serde_json::from_str::<McpServerConfig>(bad).unwrap_err();
            assert!(!error.to_string().is_empty(), "{bad}");
        }
    }
}
