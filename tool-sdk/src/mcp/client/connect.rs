//! Starting a server's connection: a child process over stdio, or Streamable HTTP.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

use super::{
    ClientInner, Connection, DEFAULT_STARTUP, Handler, STDERR_LINES, expand, lifecycle, stderr_tail,
};
use crate::mcp::McpError;
use crate::mcp::config::McpTransport;

impl ClientInner {
    pub(super) async fn connect(self: &Arc<Self>) -> Result<Connection, McpError> {
        let handler = Handler {
            client: Arc::downgrade(self),
        };
        let startup = self.config.startup_timeout.unwrap_or(DEFAULT_STARTUP);
        match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                self.connect_stdio(handler, startup, command, args, env, cwd.as_deref())
                    .await
            }
            McpTransport::Http { url, headers } => {
                self.connect_http(handler, startup, url, headers).await
            }
        }
    }

    async fn connect_stdio(
        &self,
        handler: Handler,
        startup: Duration,
        command: &str,
        args: &[String],
        env: &BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Result<Connection, McpError> {
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let mut cmd = tokio::process::Command::new(expand(command));
        cmd.args(args.iter().map(|a| expand(a)))
            .envs(env.iter().map(|(k, v)| (k, expand(v))))
            .kill_on_drop(true);
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        let (transport, child_stderr) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|error| {
                let message = format!(
                    "cannot start `{}`: {error}{}",
                    self.config.describe(),
                    if error.kind() == std::io::ErrorKind::NotFound {
                        " (is the program installed and on PATH?)"
                    } else {
                        ""
                    }
                );
                self.error_from(message, error)
            })?;
        // Drained all the time: a chatty server must never block on a full pipe.
        let drained = child_stderr.map(|pipe| {
            let tail = stderr.clone();
            let server = self.name.clone();
            tokio::spawn(async move {
                let mut lines = tokio::io::BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    tracing::debug!(server, "stderr: {line}");
                    let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                    if tail.len() == STDERR_LINES {
                        tail.pop_front();
                    }
                    tail.push_back(line);
                }
            })
        });
        let started = tokio::time::timeout(
            startup,
            rmcp::serve_client_with_lifecycle(handler, transport, lifecycle()),
        );
        match started.await {
            Ok(Ok(service)) => Ok(Connection { service, stderr }),
            failed => {
                let (reason, source) = match failed {
                    Ok(Err(error)) => (error.to_string(), Some(crate::error::source(error))),
                    _ => (
                        format!("no answer to the handshake within {startup:?}"),
                        None,
                    ),
                };
                // The child is gone or being killed; let its last words arrive.
                if let Some(drained) = drained {
                    let _ = tokio::time::timeout(Duration::from_secs(2), drained).await;
                }
                let message = format!(
                    "failed to start (`{}`): {reason}{}",
                    self.config.describe(),
                    stderr_tail(&stderr)
                );
                Err(McpError::new(&self.name, message, source))
            }
        }
    }

    async fn connect_http(
        &self,
        handler: Handler,
        startup: Duration,
        url: &str,
        headers: &BTreeMap<String, String>,
    ) -> Result<Connection, McpError> {
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        let mut custom = HashMap::new();
        for (name, value) in headers {
            let name = reqwest::header::HeaderName::try_from(name.as_str())
                .map_err(|e| self.error_from(format!("bad header name `{name}`: {e}"), e))?;
            let value = reqwest::header::HeaderValue::try_from(expand(value))
                .map_err(|e| self.error_from(format!("bad value of header `{name}`: {e}"), e))?;
            custom.insert(name, value);
        }
        // A server restarted behind the same URL forgets our session: start a new one.
        let config = StreamableHttpClientTransportConfig::with_uri(expand(url))
            .custom_headers(custom)
            .reinit_on_expired_session(true);
        crate::tls::ensure_provider();
        let transport = StreamableHttpClientTransport::from_config(config);
        match tokio::time::timeout(
            startup,
            rmcp::serve_client_with_lifecycle(handler, transport, lifecycle()),
        )
        .await
        {
            Ok(Ok(service)) => Ok(Connection { service, stderr }),
            Ok(Err(error)) => {
                Err(self.error_from(format!("cannot connect to {url}: {error}"), error))
            }
            Err(_) => Err(self.error(format!("no answer from {url} within {startup:?}"))),
        }
    }
}
