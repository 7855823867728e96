//! The client side: connect to an MCP server with rmcp and adapt each of its tools as a
//! [`Tool`].

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationCapability, ErrorData, FormElicitationCapability, Implementation,
    ProgressNotificationParam, ProtocolVersion, TASKS_EXTENSION_ID, UrlElicitationCapability,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, RoleClient};
use serde_json::json;

use crate::mcp::adapter::McpTool;
use crate::mcp::config::McpServerConfig;
use crate::mcp::naming::NameMap;
use crate::mcp::{McpError, McpOAuth};
use crate::tool::{Tool, ToolContext};

mod call;
mod connect;
mod elicit;
mod tasks;

use call::{CallProgress, Waiting, wants_authorization};

/// How long connecting may take when the config sets no start-up timeout.
const DEFAULT_STARTUP: Duration = Duration::from_secs(30);
/// How many lines of a server's stderr are kept for error messages.
const STDERR_LINES: usize = 40;

/// Called with the server's name and its new tool list, after a `list_changed` notification
/// or a reconnection.
pub type ToolsChanged = Arc<dyn Fn(&str, Vec<Arc<dyn Tool>>) + Send + Sync>;

/// A connection to one MCP server; its tools are [`Tool`]s named `mcp__<server>__<tool>`.
///
/// Cheap to clone. A stdio server that exits is started again on the next call.
///
/// ```no_run
/// use tool_sdk::mcp::{McpClient, McpServerConfig};
///
/// # async fn demo() -> Result<(), tool_sdk::mcp::McpError> {
/// let config = McpServerConfig::stdio("uvx", ["mcp-server-time"]);
/// let client = McpClient::connect("time", config).await?;
/// for tool in client.tools() {
///     println!("{}: {}", tool.name(), tool.description());
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<ClientInner>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.inner.name)
            .field("target", &self.inner.config.describe())
            .finish_non_exhaustive()
    }
}

pub(super) struct ClientInner {
    pub(super) name: String,
    pub(super) config: McpServerConfig,
    /// The app's token store and authorizer, for servers that ask for OAuth.
    #[cfg_attr(
        not(feature = "mcp-oauth"),
        expect(dead_code, reason = "OAuth's settings")
    )]
    pub(super) oauth: McpOAuth,
    connection: tokio::sync::Mutex<Option<Connection>>,
    /// Progress tokens of calls in flight, to the context their updates go to.
    progress: Mutex<HashMap<String, Arc<CallProgress>>>,
    /// How many calls were made: the `seq` of the next.
    calls: std::sync::atomic::AtomicU64,
    tools: Mutex<Vec<Arc<dyn Tool>>>,
    on_change: Mutex<Option<ToolsChanged>>,
    closed: AtomicBool,
    /// Asks the background task to list the tools again.
    relist: tokio::sync::mpsc::UnboundedSender<()>,
}

struct Connection {
    service: RunningService<RoleClient, Handler>,
    stderr: Arc<Mutex<VecDeque<String>>>,
}

impl Connection {
    fn is_alive(&self) -> bool {
        !self.service.is_closed() && !self.service.peer().is_transport_closed()
    }
}

/// rmcp's side of the connection: progress and list-changed notifications.
struct Handler {
    client: Weak<ClientInner>,
}

impl ClientHandler for Handler {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let Some(client) = self.client.upgrade() else {
            return;
        };
        let key = token_key(&params.progress_token);
        let call = client.lock_progress().get(&key).cloned();
        if let Some(call) = call {
            let ctx = &call.ctx;
            let mut line = match params.total {
                Some(total) => format!("{}/{}", params.progress, total),
                None => format!("{}", params.progress),
            };
            if let Some(message) = &params.message {
                line = format!("{message} ({line})");
            }
            ctx.progress(line);
            *call.last.lock().unwrap_or_else(|p| p.into_inner()) =
                Some((params.progress, params.total));
            call.changed.notify_waiters();
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        // Listing waits for a response the service loop delivers: not from inside it.
        if let Some(client) = self.client.upgrade() {
            let _ = client.relist.send(());
        }
    }

    /// A server's question for the user: asked as the tool call it comes during asks its own
    /// (see [`ClientInner::ask_user`]).
    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let Some(client) = self.client.upgrade() else {
            return Ok(ElicitResult::new(ElicitationAction::Cancel));
        };
        Ok(client.ask_user(request).await)
    }

    fn get_info(&self) -> ClientConfig {
        // Servers may ask the user (form and URL mode): the questions go where the calls'
        // own questions go.
        let mut capabilities = ClientCapabilities::default();
        capabilities.elicitation = Some(
            ElicitationCapability::new()
                .with_form(FormElicitationCapability::new())
                .with_url(UrlElicitationCapability::new()),
        );
        // Long calls may come back as tasks (SEP-2663), which `tasks.rs` follows.
        capabilities
            .extensions
            .get_or_insert_with(Default::default)
            .insert(TASKS_EXTENSION_ID.to_owned(), Default::default());
        let info = ClientConfig::new(
            capabilities,
            Implementation::new("tool-sdk", env!("CARGO_PKG_VERSION")),
        );
        // A revision of the config's own is the one `initialize` asks for.
        match self.client.upgrade().and_then(|c| protocol(&c.config)) {
            Some(version) => info.with_protocol_version(version),
            None => info,
        }
    }
}

/// The revision the config pins, if any (checked when the config was read).
fn protocol(config: &McpServerConfig) -> Option<ProtocolVersion> {
    let version = config.protocol_version.as_deref()?;
    ProtocolVersion::KNOWN_VERSIONS
        .iter()
        .find(|known| known.as_str() == version)
        .cloned()
}

/// Version negotiation: ask with `server/discover` for the newest protocol (2026-07-28 and
/// later); a server that does not know it (the TypeScript SDK's, at 2025-11-25, say) answers
/// with an error and gets the `initialize` handshake at the newest version that has one, which
/// it may lower to its own. A config that pins a revision gets that one's lifecycle only:
/// `server/discover` for 2026-07-28, `initialize` (asking for it) before.
fn lifecycle(config: &McpServerConfig) -> rmcp::ClientLifecycleMode {
    match protocol(config) {
        Some(version) if version == ProtocolVersion::NO_INITIALIZE => {
            rmcp::ClientLifecycleMode::Discover {
                preferred_versions: vec![version],
            }
        }
        Some(_) => rmcp::ClientLifecycleMode::Initialize,
        None => rmcp::ClientLifecycleMode::Auto {
            preferred_versions: vec![ProtocolVersion::LATEST],
            legacy_version: Some(ProtocolVersion::LATEST_WITH_INITIALIZE),
        },
    }
}

fn token_key(token: &impl serde::Serialize) -> String {
    serde_json::to_string(token).unwrap_or_default()
}

impl McpClient {
    /// Starts or reaches the server, does the handshake and lists its tools. Fails, with
    /// the command and the end of the server's stderr, if it does not come up within the
    /// start-up timeout.
    ///
    /// An HTTP server that asks for OAuth authorization fails to connect: the client has no
    /// way to show the user the authorization URL. [`connect_with`](Self::connect_with) gives
    /// it one.
    pub async fn connect(
        name: impl Into<String>,
        config: McpServerConfig,
    ) -> Result<McpClient, McpError> {
        Self::connect_with(name, config, McpOAuth::default()).await
    }

    /// [`connect`](Self::connect), authorizing an HTTP server that answers 401 with OAuth 2.1:
    /// the app's authorizer shows the user the authorization URL, the redirect comes back to
    /// a loopback listener, and the tokens go to the app's token store (and are refreshed
    /// from there when they expire).
    ///
    /// ```no_run
    /// use tool_sdk::mcp::{AuthorizationPrompt, McpClient, McpOAuth, McpServerConfig, McpTokenFile};
    ///
    /// # async fn demo() -> Result<(), tool_sdk::mcp::McpError> {
    /// let oauth = McpOAuth::new()
    ///     .with_token_store(McpTokenFile::new("/home/ada/.local/share/my-app/mcp-tokens"))
    ///     .with_authorizer(|prompt: &AuthorizationPrompt| {
    ///         eprintln!("Open {} to let this app use `{}`", prompt.url, prompt.server);
    ///         Ok(())
    ///     });
    /// let config = McpServerConfig::http("https://mcp.example.com/mcp");
    /// let client = McpClient::connect_with("example", config, oauth).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_with(
        name: impl Into<String>,
        config: McpServerConfig,
        oauth: McpOAuth,
    ) -> Result<McpClient, McpError> {
        let (relist, mut relist_requests) = tokio::sync::mpsc::unbounded_channel();
        let inner = Arc::new(ClientInner {
            name: name.into(),
            config,
            oauth,
            connection: tokio::sync::Mutex::new(None),
            progress: Mutex::new(HashMap::new()),
            calls: Default::default(),
            tools: Mutex::new(Vec::new()),
            on_change: Mutex::new(None),
            closed: AtomicBool::new(false),
            relist,
        });
        let weak = Arc::downgrade(&inner);
        tokio::spawn(async move {
            while relist_requests.recv().await.is_some() {
                let Some(client) = weak.upgrade() else {
                    break;
                };
                if client.closed.load(Ordering::SeqCst) {
                    break;
                }
                if let Err(error) = client.refresh().await {
                    tracing::warn!(%error, "could not list the tools of an MCP server again");
                }
            }
        });
        let mut connection = inner.connection.lock().await;
        *connection = Some(inner.connect().await?);
        let listed = inner.list(&mut connection).await;
        if listed.is_err() {
            *connection = None;
        }
        drop(connection);
        let tools = listed?;
        *inner.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools;
        Ok(McpClient { inner })
    }

    /// The server's name in the config.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// How the server is reached.
    pub fn config(&self) -> &McpServerConfig {
        &self.inner.config
    }

    /// The server's tools as last listed.
    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.inner
            .tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Lists the tools again (after reconnecting if the server had stopped).
    pub async fn refresh_tools(&self) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        self.inner.refresh().await
    }

    /// Calls `callback` whenever the tool list changes.
    pub fn on_tools_changed(&self, callback: ToolsChanged) {
        *self
            .inner
            .on_change
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(callback);
    }

    /// The protocol version agreed with the server, if connected.
    pub async fn protocol_version(&self) -> Option<String> {
        let connection = self.inner.connection.lock().await;
        let info = connection.as_ref()?.service.peer().peer_info()?;
        Some(info.protocol_version.to_string())
    }

    /// Closes the connection (a stdio server is stopped); later calls fail.
    pub async fn close(&self) {
        self.inner.closed.store(true, Ordering::SeqCst);
        if let Some(mut connection) = self.inner.connection.lock().await.take() {
            let _ = connection
                .service
                .close_with_timeout(Duration::from_secs(2))
                .await;
        }
    }
}

impl ClientInner {
    fn lock_progress(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<CallProgress>>> {
        self.progress.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn error(&self, message: impl Into<String>) -> McpError {
        McpError::new(&self.name, message, None)
    }

    fn error_from(
        &self,
        message: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> McpError {
        McpError::new(&self.name, message, Some(crate::error::source(source)))
    }

    /// Lists the tools over the live connection (reconnecting first if the server had
    /// stopped). A server that wants (another) OAuth token for the list is authorized anew,
    /// once.
    async fn list(
        self: &Arc<Self>,
        connection: &mut Option<Connection>,
    ) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let mut reauthorized = false;
        let listed = loop {
            let live = self.ensure_live(connection, None).await?;
            match live.service.peer().list_all_tools().await {
                Ok(listed) => break listed,
                Err(error) if wants_authorization(&error) && !reauthorized => {
                    reauthorized = true;
                    let challenge = error.auth_challenge().map(str::to_owned);
                    self.reauthorize(challenge.as_deref()).await?;
                    // The old connection goes only now: calls in flight on it get their answers.
                    *connection = Some(self.connect().await?);
                }
                Err(error) if wants_authorization(&error) => {
                    let message = format!(
                        "refused to list its tools even after a new OAuth authorization \
                         ({error}); fix: check that the account you approved may use this \
                         server (the scopes it was granted), or set the scopes it needs in \
                         `oauth.scopes`"
                    );
                    return Err(self.error_from(message, error));
                }
                Err(error) => {
                    return Err(self.error_from(format!("cannot list its tools: {error}"), error));
                }
            }
        };
        let names = NameMap::build(&self.name, listed.iter().map(|t| &*t.name))
            .map_err(|e| self.error(e))?;
        let exposed: HashMap<&str, &str> = names.iter().map(|(a, b)| (b, a)).collect();
        let mut tools: Vec<Arc<dyn Tool>> = Vec::with_capacity(listed.len());
        for tool in &listed {
            let Some(name) = exposed.get(&*tool.name) else {
                continue;
            };
            tools.push(Arc::new(McpTool::new(self, name, tool)));
        }
        Ok(tools)
    }

    /// Re-lists the tools, stores them and tells the listener.
    async fn refresh(self: &Arc<Self>) -> Result<Vec<Arc<dyn Tool>>, McpError> {
        let tools = {
            let mut connection = self.connection.lock().await;
            self.list(&mut connection).await?
        };
        self.publish(tools.clone());
        Ok(tools)
    }

    fn publish(&self, tools: Vec<Arc<dyn Tool>>) {
        *self.tools.lock().unwrap_or_else(|p| p.into_inner()) = tools.clone();
        let listener = self
            .on_change
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(listener) = listener {
            listener(&self.name, tools);
        }
    }

    /// The live connection, reconnecting first if the server has stopped.
    async fn ensure_live<'c>(
        self: &Arc<Self>,
        connection: &'c mut Option<Connection>,
        ctx: Option<&ToolContext>,
    ) -> Result<&'c Connection, McpError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(self.error("the connection was closed"));
        }
        if connection.as_ref().is_some_and(Connection::is_alive) {
            return Ok(connection.as_ref().expect("checked above"));
        }
        let last_words = connection
            .as_ref()
            .map(|c| stderr_tail(&c.stderr))
            .unwrap_or_default();
        tracing::warn!(server = %self.name, "MCP server had stopped; restarting it");
        if let Some(ctx) = ctx {
            ctx.progress(format!(
                "MCP server `{}` had stopped; restarting it{last_words}",
                self.name
            ));
            ctx.metadata(json!({"mcp_server": self.name, "event": "restarting"}));
        }
        *connection = None;
        let fresh = self.connect().await?;
        if let Some(ctx) = ctx {
            ctx.metadata(json!({"mcp_server": self.name, "event": "restarted"}));
        }
        Ok(connection.insert(fresh))
    }
}

fn stderr_tail(tail: &Mutex<VecDeque<String>>) -> String {
    let tail = tail.lock().unwrap_or_else(|p| p.into_inner());
    if tail.is_empty() {
        return String::new();
    }
    let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
    format!("\nthe end of its stderr:\n  {}", lines.join("\n  "))
}

/// `${VAR}` and `${VAR:-default}` replaced from the environment, as in `.mcp.json` files.
pub(crate) fn expand(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..start + len];
        let (var, default) = match inner.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (inner, None),
        };
        match (std::env::var(var), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(default)) => out.push_str(default),
            (Err(_), None) => out.push_str(&rest[start..start + len + 1]),
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn expands_variables() {
        // SAFETY-free: PATH is always set in test environments.
        let path = std::env::var("PATH").unwrap();
        assert_eq!(expand("a${PATH}b"), format!("a{path}b"));
        assert_eq!(expand("${SURELY_NOT_SET_42:-x}"), "x");
        assert_eq!(expand("${SURELY_NOT_SET_42}"), "${SURELY_NOT_SET_42}");
        assert_eq!(expand("no vars"), "no vars");
    }
}
