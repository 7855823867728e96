//! A tool call over the connection: progress, cancellation, and a new OAuth authorization
//! when the server wants one for the call.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CancelledNotification, CancelledNotificationParam, ClientNotification,
    ClientRequest, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions};
use rmcp::{RoleClient, ServiceError};
use serde_json::Value;

use super::{ClientInner, Connection, expand, stderr_tail, token_key};
#[cfg(feature = "mcp-oauth")]
use rmcp::transport::auth::AuthError;

use crate::mcp::McpError;
#[cfg(feature = "mcp-oauth")]
use crate::mcp::OAuthStep;
use crate::mcp::adapter::McpTool;
use crate::tool::{ToolContext, ToolError, ToolOutput, ToolResult};

impl ClientInner {
    pub(in crate::mcp) async fn call(
        self: &Arc<Self>,
        tool: &McpTool,
        input: Value,
        ctx: &ToolContext,
    ) -> ToolResult {
        match self.call_once(tool, input.clone(), ctx).await {
            Ok(result) => result,
            // Authorized anew once (a token that could not be refreshed, a scope the call
            // needs): then the call is made again, and a second refusal is the answer.
            Err(again) => {
                ctx.progress(format!(
                    "MCP server `{}` asks for authorization again ({})",
                    self.name, again.error
                ));
                self.reauthorize(again.challenge.as_deref())
                    .await
                    .map_err(|e| ToolError::failed(e.to_string()))?;
                match self.call_once(tool, input, ctx).await {
                    Ok(result) => result,
                    Err(again) => Err(ToolError::failed(format!(
                        "MCP server `{}` refused the call again after a new authorization: {}; \
                         fix: check that the account you approved may use this tool (the \
                         scopes it was granted)",
                        self.name, again.error
                    ))),
                }
            }
        }
    }

    /// Authorizes the (HTTP) server anew with OAuth, answering `challenge` (the scopes it
    /// names); the next connection uses the new token.
    #[cfg(feature = "mcp-oauth")]
    pub(super) async fn reauthorize(
        self: &Arc<Self>,
        challenge: Option<&str>,
    ) -> Result<(), McpError> {
        let crate::mcp::McpTransport::Http { url, oauth, .. } = &self.config.transport else {
            return Err(self.error("asks for authorization, which only HTTP servers can do"));
        };
        let url = expand(url);
        let server = crate::mcp::oauth::ServerOAuth {
            server: &self.name,
            url: &url,
            config: oauth.clone().unwrap_or_default(),
            oauth: &self.oauth,
        };
        server.authorize(challenge).await
    }

    /// Without the `mcp-oauth` feature a server that asks for authorization is refused,
    /// saying how to turn it on.
    #[cfg(not(feature = "mcp-oauth"))]
    pub(super) async fn reauthorize(
        self: &Arc<Self>,
        challenge: Option<&str>,
    ) -> Result<(), McpError> {
        let url = expand(&self.config.describe());
        let asked = challenge.unwrap_or("no challenge");
        Err(crate::mcp::oauth::unavailable(&self.name, &url, asked))
    }

    /// One try of a call; `Err` when the server wants (another) OAuth token for it.
    async fn call_once(
        self: &Arc<Self>,
        tool: &McpTool,
        input: Value,
        ctx: &ToolContext,
    ) -> Result<ToolResult, AuthAgain> {
        let (peer, stderr, reconnected) = {
            let mut connection = self.connection.lock().await;
            let was_alive = connection.as_ref().is_some_and(Connection::is_alive);
            let live = match self.ensure_live(&mut connection, Some(ctx)).await {
                Ok(live) => live,
                Err(e) => return Ok(Err(ToolError::failed(e.to_string()))),
            };
            (live.service.peer().clone(), live.stderr.clone(), !was_alive)
        };
        if reconnected {
            // The restarted server may have other tools; the listener learns in the background.
            let _ = self.relist.send(());
        }

        let arguments = match input {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Ok(Err(ToolError::invalid_input(format!(
                    "MCP tools take a JSON object, not {other}"
                ))));
            }
        };
        let mut params = CallToolRequestParams::new(tool.server_name.clone());
        params.arguments = arguments;
        // The server's span of this call joins ours (the span `McpTool::call` entered).
        #[cfg(feature = "otel")]
        if let Some((parent, state)) = crate::telemetry::trace_context(&tracing::Span::current()) {
            let meta = params.meta.get_or_insert_with(Default::default);
            meta.set_traceparent(parent);
            if let Some(state) = state {
                meta.set_tracestate(state);
            }
        }
        let response = match self.send_in_rounds(&peer, params, ctx, &stderr).await {
            // The server runs the call as a task: its answer comes when the task ends.
            Ok(Ok(ServerResult::CreateTaskResult(created))) => {
                match self.follow_task(&peer, created.task, ctx, &stderr).await {
                    Ok(response) => response,
                    Err(early) => return Ok(early),
                }
            }
            Ok(response) => response,
            Err(early) => return Ok(early),
        };
        self.answer(tool, response, &stderr).await
    }

    /// What the server's answer to a call means for the agent.
    async fn answer(
        &self,
        tool: &McpTool,
        response: Result<ServerResult, ServiceError>,
        stderr: &Arc<Mutex<VecDeque<String>>>,
    ) -> Result<ToolResult, AuthAgain> {
        Ok(match response {
            Ok(ServerResult::CallToolResult(result)) => Ok(tool.output(result)),
            Ok(_) => Err(ToolError::failed(format!(
                "MCP server `{}` answered tools/call with something other than a tool result",
                self.name
            ))),
            Err(ServiceError::McpError(error)) => {
                let mut text = format!(
                    "MCP server `{}` refused the call (JSON-RPC error {}): {}",
                    self.name, error.code.0, error.message
                );
                if let Some(data) = error.data.filter(|d| !d.is_null()) {
                    text.push_str(&format!("\n{data}"));
                }
                Ok(ToolOutput::error(text))
            }
            Err(ServiceError::Timeout { timeout }) => Err(ToolError::Timeout(timeout)),
            Err(error) => {
                if wants_authorization(&error) {
                    self.drop_connection().await;
                    return Err(AuthAgain::from(&error));
                }
                Err(self.call_failed(&error, stderr))
            }
        })
    }

    /// Sends one `tools/call`, with progress going to `ctx`, and waits for its answer. A
    /// request refused for want of a token is answered with that refusal, for the caller to
    /// authorize anew.
    pub(super) async fn send(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        request: ClientRequest,
        ctx: &ToolContext,
        seq: u64,
        stderr: &Arc<Mutex<VecDeque<String>>>,
    ) -> Result<Result<ServerResult, ServiceError>, ToolError> {
        let options = match self.config.tool_timeout {
            Some(limit) => PeerRequestOptions::with_timeout(limit),
            None => PeerRequestOptions::no_options(),
        };
        let handle = match peer.send_request_with_option(request, options).await {
            Ok(handle) => handle,
            Err(error) if wants_authorization(&error) => return Ok(Err(error)),
            Err(error) => return Err(self.call_failed(&error, stderr)),
        };
        let key = token_key(&handle.progress_token);
        let progress = Arc::new(CallProgress {
            ctx: ctx.clone(),
            seq,
            last: Mutex::new(None),
            changed: tokio::sync::Notify::new(),
        });
        self.lock_progress().insert(key.clone(), progress.clone());
        let (id, peer) = (handle.id.clone(), peer.clone());
        let mut guard = Waiting::new(self.clone(), key, async move {
            let notification = CancelledNotification::new(CancelledNotificationParam::new(
                Some(id),
                Some("the client stopped waiting for the result".to_owned()),
            ));
            let _ = peer
                .send_notification(ClientNotification::CancelledNotification(notification))
                .await;
        });
        let response = tokio::select! {
            _ = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
            response = handle.await_response() => response,
        };
        // Answered (or timed out, which rmcp already reported as cancelled).
        guard.answered();
        progress.settle().await;
        Ok(response)
    }

    /// Forgets the connection of a server that wants authorization again (its token expired
    /// or was revoked, and could not be refreshed): the next call connects anew, and so
    /// authorizes anew.
    async fn drop_connection(&self) {
        if let Some(mut connection) = self.connection.lock().await.take() {
            let _ = connection
                .service
                .close_with_timeout(Duration::from_secs(2))
                .await;
        }
    }

    pub(super) fn call_failed(
        &self,
        error: &ServiceError,
        stderr: &Arc<Mutex<VecDeque<String>>>,
    ) -> ToolError {
        // An OAuth step under the call (a refresh that failed, a store that cannot be read).
        #[cfg(feature = "mcp-oauth")]
        if let Some(auth) = crate::mcp::oauth::auth_error_in(error)
            && !matches!(auth, AuthError::AuthorizationRequired)
        {
            let url = expand(&self.config.describe());
            let step = crate::mcp::oauth::step_of(auth, OAuthStep::Refresh);
            let what = format!("the call could not be authorized: {auth}");
            let failed = crate::mcp::oauth::step_error(&self.name, &url, step, &what, None);
            return ToolError::failed(failed.to_string());
        }
        match error {
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                ToolError::failed(format!(
                    "MCP server `{}` closed the connection ({error}); it is restarted on the \
                     next call{}",
                    self.name,
                    stderr_tail(stderr)
                ))
            }
            other => ToolError::failed(format!("MCP server `{}`: {other}", self.name)),
        }
    }
}

/// Whether a request failed for want of an OAuth token: none, an expired or revoked one (401),
/// or one without the scope it needs (403 `insufficient_scope`).
pub(super) fn wants_authorization(error: &ServiceError) -> bool {
    error.is_authorization_required() || error.auth_challenge().is_some()
}

/// A server wants (another) OAuth token: its challenge, and rmcp's error.
struct AuthAgain {
    challenge: Option<String>,
    error: String,
}

impl From<&ServiceError> for AuthAgain {
    fn from(error: &ServiceError) -> Self {
        AuthAgain {
            challenge: error.auth_challenge().map(str::to_owned),
            error: error.to_string(),
        }
    }
}

/// Where a call's progress notifications go, and the last one seen.
pub(super) struct CallProgress {
    pub(super) ctx: ToolContext,
    /// When the call started, in calls of this client: the latest call in flight is asked a
    /// server's question.
    pub(super) seq: u64,
    pub(super) last: Mutex<Option<(f64, Option<f64>)>>,
    pub(super) changed: tokio::sync::Notify,
}

impl CallProgress {
    /// rmcp hands each notification to a task of its own, so the last progress, sent just
    /// before the result, may still be on its way: when the server announced a total and has
    /// not reached it, wait a moment for the rest.
    async fn settle(&self) {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(200);
        loop {
            let changed = self.changed.notified();
            let pending = match *self.last.lock().unwrap_or_else(|p| p.into_inner()) {
                Some((done, Some(total))) => done < total,
                _ => false,
            };
            if !pending || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return;
            }
        }
    }
}

/// A call the server is running: forgets its progress key when dropped and, unless it was
/// [`answered`](Self::answered), spawns `stop` to tell the server that the client stopped
/// waiting (a timeout, a cancellation).
pub(super) struct Waiting {
    client: Arc<ClientInner>,
    key: String,
    stop: Option<crate::BoxFuture<'static, ()>>,
}

impl Waiting {
    pub(super) fn new(
        client: Arc<ClientInner>,
        key: String,
        stop: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Self {
        Waiting {
            client,
            key,
            stop: Some(Box::pin(stop)),
        }
    }

    /// The call ended on the server's side: nothing to stop.
    pub(super) fn answered(&mut self) {
        self.stop = None;
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.client.lock_progress().remove(&self.key);
        if let (Some(stop), Ok(runtime)) = (self.stop.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(stop);
        }
    }
}
