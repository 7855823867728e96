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
///
/// // An OAuth server: nothing is needed (discovery and dynamic registration), or the
/// // client the server's owner registered for you, as Claude Code writes it.
/// let oauth: McpServerConfig = serde_json::from_str(r#"{
///     "type": "http", "url": "https://mcp.example.com/mcp",
///     "oauth": {"clientId": "my-app", "callbackPort": 8765, "scopes": ["mcp:tools"]}
/// }"#).unwrap();
/// assert!(matches!(oauth.transport, McpTransport::Http { oauth: Some(_), .. }));
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
    /// The protocol revision to speak (`protocolVersion`: one of [`PROTOCOL_VERSIONS`]).
    /// `None`, the default, asks for the newest (2026-07-28, with `server/discover`) and
    /// takes what the server offers, down to 2024-11-05 through the `initialize` handshake.
    pub protocol_version: Option<String>,
}

/// The MCP protocol revisions the client and the server speak, newest first.
pub const PROTOCOL_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    "2024-11-05",
];

/// `version` if it is a revision this SDK speaks, else what to write instead.
pub(crate) fn check_protocol_version(version: &str) -> Result<(), String> {
    if PROTOCOL_VERSIONS.contains(&version) {
        Ok(())
    } else {
        Err(format!(
            "unknown MCP protocol version `{version}`: use one of {}, or leave \
             `protocolVersion` out to take the newest the server speaks",
            PROTOCOL_VERSIONS.join(", ")
        ))
    }
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
        /// How to authorize with OAuth when the server asks for it (a 401), if the defaults
        /// (discovery, dynamic client registration, a random loopback port) do not do. A
        /// server with an `Authorization` header in `headers` is never authorized with OAuth.
        oauth: Option<McpOAuthConfig>,
    },
}

/// How an HTTP server is authorized with OAuth 2.1: the `oauth` object of its entry. Every
/// field may be left out: by default the client discovers the authorization server from the
/// server's 401 (protected-resource metadata, then the authorization server's metadata),
/// registers itself dynamically and takes the redirect on a random loopback port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[non_exhaustive]
pub struct McpOAuthConfig {
    /// A client registered with the authorization server beforehand (no dynamic
    /// registration then). `${VAR}` is replaced from the environment.
    #[serde(default, skip_serializing_if = "Option::is_none", alias = "client_id")]
    pub client_id: Option<String>,
    /// Its secret, for a confidential client (`${VAR}` is replaced from the environment:
    /// keep secrets out of config files).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "client_secret"
    )]
    pub client_secret: Option<String>,
    /// The HTTPS URL of this app's client ID metadata document, used as its client ID by
    /// authorization servers that support them.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "client_metadata_url"
    )]
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for; by default those the server's challenge or metadata name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The loopback port the redirect comes back to (`http://127.0.0.1:PORT/callback`), for
    /// a pre-registered client whose redirect URI is fixed; by default a free one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "callback_port"
    )]
    pub callback_port: Option<u16>,
}

impl McpOAuthConfig {
    /// The defaults: discovery, dynamic registration, a random loopback port.
    pub fn new() -> Self {
        Self::default()
    }

    /// A client registered beforehand (and its secret, for a confidential one).
    pub fn with_client(mut self, id: impl Into<String>, secret: Option<String>) -> Self {
        self.client_id = Some(id.into());
        self.client_secret = secret;
        self
    }

    /// The HTTPS URL of this app's client ID metadata document.
    pub fn with_client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The scopes to ask for.
    pub fn with_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The loopback port of the redirect.
    pub fn with_callback_port(mut self, port: u16) -> Self {
        self.callback_port = Some(port);
        self
    }
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
            protocol_version: None,
        }
    }

    /// A Streamable HTTP server at `url`.
    pub fn http(url: impl Into<String>) -> Self {
        McpServerConfig {
            transport: McpTransport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
                oauth: None,
            },
            tool_timeout: None,
            startup_timeout: None,
            protocol_version: None,
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

    /// Sets how an HTTP server is authorized with OAuth (ignored for stdio).
    pub fn with_oauth(mut self, config: McpOAuthConfig) -> Self {
        if let McpTransport::Http { oauth, .. } = &mut self.transport {
            *oauth = Some(config);
        }
        self
    }

    /// Sets the per-call timeout.
    pub fn with_tool_timeout(mut self, timeout: Duration) -> Self {
        self.tool_timeout = Some(timeout);
        self
    }

    /// Speaks protocol revision `version` (one of [`PROTOCOL_VERSIONS`]) only.
    pub fn with_protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    oauth: Option<McpOAuthConfig>,
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
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "protocol_version"
    )]
    protocol_version: Option<String>,
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
                    oauth: raw.oauth,
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
        if let Some(version) = &raw.protocol_version {
            check_protocol_version(version)?;
        }
        Ok(McpServerConfig {
            transport,
            tool_timeout: seconds(raw.tool_timeout_secs, "toolTimeoutSecs")?,
            startup_timeout: seconds(raw.startup_timeout_secs, "startupTimeoutSecs")?,
            protocol_version: raw.protocol_version,
        })
    }
}

impl From<McpServerConfig> for RawServer {
    fn from(config: McpServerConfig) -> Self {
        let mut raw = RawServer {
            tool_timeout_secs: config.tool_timeout.map(|d| d.as_secs_f64()),
            startup_timeout_secs: config.startup_timeout.map(|d| d.as_secs_f64()),
            protocol_version: config.protocol_version,
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
            McpTransport::Http {
                url,
                headers,
                oauth,
            } => {
                raw.kind = Some("http".into());
                raw.url = Some(url);
                raw.headers = headers;
                raw.oauth = oauth;
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
            r#"{"command": "a", "protocolVersion": "2025-13-01"}"#,
            r#"{"type": "http", "url": "http://x", "oauth": {"clientID": "typo"}}"#,
        ] {
            let error = serde_json::from_str::<McpServerConfig>(bad).unwrap_err();
            assert!(!error.to_string().is_empty(), "{bad}");
        }
    }
}
