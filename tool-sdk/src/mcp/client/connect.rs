//! Starting a server's connection: a child process over stdio, or Streamable HTTP.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use tokio::io::AsyncBufReadExt;

#[cfg(feature = "mcp-oauth")]
use rmcp::transport::{AuthClient, auth::AuthError};

use super::{
    ClientInner, Connection, DEFAULT_STARTUP, Handler, STDERR_LINES, expand, lifecycle, stderr_tail,
};
use crate::mcp::McpError;
use crate::mcp::config::{McpOAuthConfig, McpTransport};
#[cfg(feature = "mcp-oauth")]
use crate::mcp::oauth::{OAuthStep, ServerOAuth, auth_error_in, step_error, step_of};

impl ClientInner {
    pub(super) async fn connect(self: &Arc<Self>) -> Result<Connection, McpError> {
        let handler = Handler {
            client: Arc::downgrade(self),
        };
        let startup = self.config.startup_timeout.unwrap_or(DEFAULT_STARTUP);
        if let Some(version) = &self.config.protocol_version {
            crate::mcp::config::check_protocol_version(version).map_err(|e| self.error(e))?;
        }
        let connected = match &self.config.transport {
            McpTransport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                self.connect_stdio(handler, startup, command, args, env, cwd.as_deref())
                    .await
            }
            McpTransport::Http {
                url,
                headers,
                oauth,
            } => {
                self.connect_http(handler, startup, url, headers, oauth.as_ref())
                    .await
            }
        };
        connected.map_err(|error| self.pinned_version_hint(error))
    }

    /// A handshake refused at the revision the config pins (the method unknown, the version
    /// unsupported) says how to let the client negotiate instead.
    fn pinned_version_hint(&self, mut error: McpError) -> McpError {
        let Some(version) = &self.config.protocol_version else {
            return error;
        };
        let refused = ["-32601", "-32022", "protocol version"]
            .iter()
            .any(|sign| error.message.contains(sign));
        if refused {
            error.message.push_str(&format!(
                "\nfix: the config pins protocol version {version} (`protocolVersion`), which \
                 the server may not speak; leave it out to take the newest the server does"
            ));
        }
        error
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
            rmcp::serve_client_with_lifecycle(handler, transport, lifecycle(&self.config)),
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
        self: &Arc<Self>,
        handler: Handler,
        startup: Duration,
        url: &str,
        headers: &BTreeMap<String, String>,
        oauth: Option<&McpOAuthConfig>,
    ) -> Result<Connection, McpError> {
        let mut custom = HashMap::new();
        for (name, value) in headers {
            let name = reqwest::header::HeaderName::try_from(name.as_str())
                .map_err(|e| self.error_from(format!("bad header name `{name}`: {e}"), e))?;
            let value = reqwest::header::HeaderValue::try_from(expand(value))
                .map_err(|e| self.error_from(format!("bad value of header `{name}`: {e}"), e))?;
            custom.insert(name, value);
        }
        let url = expand(url);
        // A server restarted behind the same URL forgets our session: start a new one.
        let config = StreamableHttpClientTransportConfig::with_uri(url.as_str())
            .custom_headers(custom.clone())
            .reinit_on_expired_session(true);
        tool_sdk_core::tls::ensure_provider();
        // A token of the config's own is sent as it is, never replaced by OAuth.
        if custom.contains_key(&reqwest::header::AUTHORIZATION) {
            let transport = StreamableHttpClientTransport::from_config(config);
            return match self.handshake(handler, startup, &url, transport).await {
                Ok(connection) => Ok(connection),
                Err(HttpFailure::AuthRequired { error, .. }) => Err(self.error(format!(
                    "{url} refused the `Authorization` header of its config ({error}); fix: \
                     check the token, or remove the header to authorize with OAuth"
                ))),
                Err(HttpFailure::Other(error)) => Err(error),
            };
        }
        self.connect_oauth(handler, startup, &url, config, oauth)
            .await
    }

    /// Connects with OAuth: the stored token if there is one, else (on a 401) the user's
    /// authorization, then the handshake once more.
    #[cfg(feature = "mcp-oauth")]
    async fn connect_oauth(
        self: &Arc<Self>,
        handler: Handler,
        startup: Duration,
        url: &str,
        config: StreamableHttpClientTransportConfig,
        oauth: Option<&McpOAuthConfig>,
    ) -> Result<Connection, McpError> {
        let server = ServerOAuth {
            server: &self.name,
            url,
            config: oauth.cloned().unwrap_or_default(),
            oauth: &self.oauth,
        };
        let transport = StreamableHttpClientTransport::with_client(
            AuthClient::new(http_client(), server.manager().await?),
            config.clone(),
        );
        let challenge = match self.handshake(handler, startup, url, transport).await {
            Ok(connection) => return Ok(connection),
            Err(HttpFailure::AuthRequired { challenge, .. }) => challenge,
            Err(HttpFailure::Other(error)) => return Err(error),
        };
        // The server wants a token, or a new one: authorize, then try once more.
        server.authorize(challenge.as_deref()).await?;
        let handler = Handler {
            client: Arc::downgrade(self),
        };
        let transport = StreamableHttpClientTransport::with_client(
            AuthClient::new(http_client(), server.manager().await?),
            config,
        );
        match self.handshake(handler, startup, url, transport).await {
            Ok(connection) => Ok(connection),
            Err(HttpFailure::AuthRequired { error, .. }) => Err(step_error(
                &self.name,
                url,
                OAuthStep::Authorization,
                &format!("the server refused the token it was just authorized with: {error}"),
                None,
            )),
            Err(HttpFailure::Other(error)) => Err(error),
        }
    }

    /// Connects without OAuth (a build without `mcp-oauth`): a server that asks for it fails,
    /// saying how to turn it on.
    #[cfg(not(feature = "mcp-oauth"))]
    async fn connect_oauth(
        self: &Arc<Self>,
        handler: Handler,
        startup: Duration,
        url: &str,
        config: StreamableHttpClientTransportConfig,
        _oauth: Option<&McpOAuthConfig>,
    ) -> Result<Connection, McpError> {
        let transport = StreamableHttpClientTransport::from_config(config);
        match self.handshake(handler, startup, url, transport).await {
            Ok(connection) => Ok(connection),
            Err(HttpFailure::AuthRequired { error, .. }) => {
                Err(crate::mcp::oauth::unavailable(&self.name, url, &error))
            }
            Err(HttpFailure::Other(error)) => Err(error),
        }
    }

    /// The handshake over `transport`, within the start-up timeout.
    async fn handshake<C>(
        &self,
        handler: Handler,
        startup: Duration,
        url: &str,
        transport: StreamableHttpClientTransport<C>,
    ) -> Result<Connection, HttpFailure>
    where
        C: rmcp::transport::streamable_http_client::StreamableHttpClient + Send + Sync + 'static,
        C::Error: std::error::Error + Send + Sync + 'static,
    {
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        match tokio::time::timeout(
            startup,
            rmcp::serve_client_with_lifecycle(handler, transport, lifecycle(&self.config)),
        )
        .await
        {
            Ok(Ok(service)) => Ok(Connection { service, stderr }),
            Ok(Err(error)) => {
                #[cfg(feature = "mcp-oauth")]
                if let Some(auth) = auth_error_in(&error)
                    && !matches!(auth, AuthError::AuthorizationRequired)
                {
                    // A refresh that failed, a store that cannot be read...
                    let step = step_of(auth, OAuthStep::Authorization);
                    let what = format!("cannot connect to {url}: {error}");
                    let mut failed = step_error(&self.name, url, step, &what, None);
                    failed.source = Some(crate::error::source(error));
                    return Err(HttpFailure::Other(failed));
                }
                if error.auth_challenge().is_some() || error.is_authorization_required() {
                    return Err(HttpFailure::AuthRequired {
                        challenge: error.auth_challenge().map(str::to_owned),
                        error: error.to_string(),
                    });
                }
                Err(HttpFailure::Other(self.error_from(
                    format!("cannot connect to {url}: {error}"),
                    error,
                )))
            }
            Err(_) => Err(HttpFailure::Other(
                self.error(format!("no answer from {url} within {startup:?}")),
            )),
        }
    }
}

/// Why an HTTP handshake failed.
enum HttpFailure {
    /// The server wants (another) OAuth token.
    AuthRequired {
        /// Its `WWW-Authenticate` challenge, if it sent one.
        #[cfg_attr(
            not(feature = "mcp-oauth"),
            expect(dead_code, reason = "OAuth answers it")
        )]
        challenge: Option<String>,
        /// rmcp's error.
        error: String,
    },
    /// Anything else.
    Other(McpError),
}

#[cfg(feature = "mcp-oauth")]
/// The HTTP client of an OAuth server's connection: as rmcp's default one, it keeps no idle
/// connections and follows only same-origin 307 and 308 redirects (which keep a POST's body).
fn http_client() -> reqwest::Client {
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if attempt.previous().len() > 10 || !same_origin || !keeps_body {
            attempt.stop()
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .redirect(policy)
        .build()
        .unwrap_or_default()
}
