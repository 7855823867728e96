//! The server side: any [`ToolRegistry`] served over MCP, on stdio or Streamable HTTP.

mod elicit;
mod tasks;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ErrorData,
    GetTaskParams, GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ServerCapabilities, ServerConfig,
    UpdateTaskParams,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::task_manager::TaskManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::McpError;
use crate::error::{ErrorSource, source};
use crate::permission::Sandbox;
use crate::pipeline::CallPolicy;
use crate::registry::build_tools;
use crate::schema::Provider;
use crate::{
    ContentBlock, FileStateTracker, SessionValues, SubagentRunner, ToolContext, ToolOutput,
    ToolRegistry,
};
use elicit::{PeerElicitor, Rounds};

/// Serves the tools of a registry to MCP clients.
///
/// Each tool is listed with its schemas and its annotations (`readOnlyHint` from
/// `read_only`, and so on). Calls are validated against the schema first; an invalid input,
/// like any failure of the tool, is an `isError` result the client's model can act on.
/// `ctx.progress(..)` reaches the client as `notifications/progress`, `ctx.elicit(..)` as
/// `elicitation/create` (a client that did not declare the capability gets the tool's error
/// saying so); a call that changes the
/// registry's tools sends `notifications/tools/list_changed`. Calls take the same road as an
/// agent's ([`crate::pipeline`]): a panicking or hanging tool gets an `isError` answer and the
/// server keeps serving. A call of a tool whose own timeout is longer than the policy's
/// default (Bash) runs as a task for a client that declared the tasks extension (see
/// [the module docs](crate::mcp)). There is no permission gate unless
/// [`with_call_policy`](Self::with_call_policy) sets one: serve only the tools the client may
/// run.
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_sdk::mcp::McpToolServer;
/// use tool_sdk::ToolRegistry;
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = Arc::new(ToolRegistry::from_inventory()?);
/// McpToolServer::new(registry).with_root("/srv/data")?.serve_stdio().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpToolServer {
    registry: Arc<ToolRegistry>,
    working_dir: Arc<PathBuf>,
    sandbox: Option<Arc<Sandbox>>,
    files: Arc<FileStateTracker>,
    session: Arc<SessionValues>,
    name: String,
    /// The server's own limits; no permission gate: the client's host asks its user.
    policy: Arc<CallPolicy>,
    /// The calls running (or lately done) as tasks, shared by every session.
    tasks: TaskManager,
    /// What runs the Task tool's sub-agents, if the app gives one.
    subagents: Option<Arc<dyn SubagentRunner>>,
}

impl std::fmt::Debug for McpToolServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpToolServer")
            .field("tools", &self.registry.names())
            .field("working_dir", &self.working_dir)
            .finish_non_exhaustive()
    }
}

impl McpToolServer {
    /// Serves the enabled tools of `registry`, working in the current directory.
    pub fn new(registry: Arc<ToolRegistry>) -> Self {
        McpToolServer {
            registry,
            working_dir: Arc::new(std::env::current_dir().unwrap_or_else(|_| ".".into())),
            sandbox: None,
            files: Arc::default(),
            session: Arc::default(),
            name: "tool-sdk".to_owned(),
            policy: Arc::default(),
            tasks: TaskManager::new(),
            subagents: None,
        }
    }

    /// Works in `dir` and confines the file tools to it (a [`Sandbox`] of that directory).
    pub fn with_root(mut self, dir: impl Into<PathBuf>) -> Result<Self, McpError> {
        let dir = dir.into();
        let sandbox = Sandbox::new(&dir).map_err(|error| {
            let message = format!("the root {} cannot be used: {error}", dir.display());
            McpError::new(&self.name, message, Some(source(error)))
        })?;
        self.working_dir = Arc::new(dir);
        self.sandbox = Some(Arc::new(sandbox));
        Ok(self)
    }

    /// Runs calls with this policy: its timeouts (by default two minutes for a tool that sets
    /// none, ten at most) and result cap, and its permission gate if it has one (calls that
    /// would ask are refused: a server has no one to ask).
    pub fn with_call_policy(mut self, policy: CallPolicy) -> Self {
        self.policy = Arc::new(policy);
        self
    }

    /// Runs the Task tool's sub-agents with `runner` (without one, a served Task says it only
    /// works inside an agent). A sub-agent may run for minutes: Task's own timeout is long, so
    /// a client that declared the tasks extension gets its calls as tasks.
    pub fn with_subagents(mut self, runner: Arc<dyn SubagentRunner>) -> Self {
        self.subagents = Some(runner);
        self
    }

    /// The name reported to clients (default `tool-sdk`).
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Serves one client on this process's stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), McpError> {
        let name = self.name.clone();
        let failed =
            |message: String, error: ErrorSource| McpError::new(&name, message, Some(error));
        // No one can poll a task once the client is gone.
        let _tasks = StopTasks(self.tasks.clone());
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| failed(format!("the handshake failed: {e}"), source(e)))?;
        running
            .waiting()
            .await
            .map_err(|e| failed(format!("the server stopped: {e}"), source(e)))?;
        Ok(())
    }

    /// Serves Streamable HTTP at `http://<addr>/mcp` (use `127.0.0.1:0` for any free port)
    /// until the returned handle is dropped or [`shut down`](McpHttpServer::shutdown).
    ///
    /// Meant for loopback: rmcp's guard against DNS rebinding stays on, so requests whose
    /// `Host` is not `localhost`, `127.0.0.1` or `::1` are refused whatever `addr` is.
    pub async fn serve_http(self, addr: SocketAddr) -> Result<McpHttpServer, McpError> {
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(|e| {
            McpError::new(
                &self.name,
                format!("cannot listen on {addr}: {e}"),
                Some(source(e)),
            )
        })?;
        let local_addr = listener
            .local_addr()
            .map_err(|e| McpError::new(&self.name, e.to_string(), Some(source(e))))?;
        let stop = CancellationToken::new();
        let mut config = StreamableHttpServerConfig::default();
        config.cancellation_token = stop.child_token();
        let server = self.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let accept_stop = stop.clone();
        tokio::spawn(async move {
            loop {
                let (stream, _) = tokio::select! {
                    _ = accept_stop.cancelled() => break,
                    accepted = listener.accept() => match accepted {
                        Ok(pair) => pair,
                        Err(error) => {
                            tracing::warn!(%error, "MCP HTTP server: accept failed");
                            continue;
                        }
                    },
                };
                let service = service.clone();
                let conn_stop = accept_stop.clone();
                tokio::spawn(async move {
                    let handler = hyper::service::service_fn(move |request| {
                        let service = service.clone();
                        async move { Ok::<_, Infallible>(service.handle(request).await) }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), handler);
                    tokio::select! {
                        _ = conn_stop.cancelled() => {}
                        result = connection => if let Err(error) = result {
                            tracing::debug!(%error, "MCP HTTP connection ended");
                        },
                    }
                });
            }
        });
        Ok(McpHttpServer {
            addr: local_addr,
            _stop: stop.drop_guard(),
            _tasks: StopTasks(self.tasks.clone()),
        })
    }

    /// A call's context: the server's directory, sandbox, file tracker and session values.
    fn base_context(&self, call_id: String, cancel: CancellationToken) -> ToolContext {
        let ctx = ToolContext::new(self.working_dir.as_path())
            .with_tool_call_id(call_id)
            .with_cancellation(cancel)
            .with_file_tracker(self.files.clone())
            .with_session_values(self.session.clone());
        let ctx = match &self.subagents {
            Some(runner) => ctx.with_subagents(runner.clone()),
            None => ctx,
        };
        match &self.sandbox {
            Some(sandbox) => ctx.with_sandbox(sandbox.clone()),
            None => ctx,
        }
    }

    /// The call's context, and where its progress goes when the client asked for progress.
    fn context(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> (ToolContext, Option<Arc<ProgressSink>>) {
        let mut ctx = self.base_context(context.id.to_string(), context.ct.clone());
        let mut progress = None;
        if let Some(token) = context.meta.get_progress_token() {
            let sink = Arc::new(ProgressSink {
                token,
                peer: context.peer.clone(),
                runtime: tokio::runtime::Handle::current(),
                forwarder: Mutex::new(None),
            });
            let sender = sink.clone();
            ctx = ctx.with_updates(move |update| {
                if let crate::ToolUpdateKind::Progress(message) = update.kind {
                    sender.send(message);
                }
            });
            progress = Some(sink);
        }
        (ctx, progress)
    }
}

/// Sends a call's progress notifications in order, from one task started by the first of
/// them: most calls send none, and a task per call (spawned, then joined) costs a round trip
/// between threads on every call.
struct ProgressSink {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    forwarder: Mutex<Option<Forwarder>>,
}

type Forwarder = (
    tokio::sync::mpsc::UnboundedSender<String>,
    tokio::task::JoinHandle<()>,
);

impl ProgressSink {
    fn send(&self, message: String) {
        let mut forwarder = self.forwarder.lock().unwrap_or_else(|p| p.into_inner());
        let (sender, _) = forwarder.get_or_insert_with(|| {
            let (sender, mut receiver) = tokio::sync::mpsc::unbounded_channel::<String>();
            let (token, peer) = (self.token.clone(), self.peer.clone());
            let task = self.runtime.spawn(async move {
                let mut step = 0.0;
                while let Some(message) = receiver.recv().await {
                    step += 1.0;
                    let params =
                        ProgressNotificationParam::new(token.clone(), step).with_message(message);
                    if peer.notify_progress(params).await.is_err() {
                        break;
                    }
                }
            });
            (sender, task)
        });
        let _ = sender.send(message);
    }

    /// Waits (two seconds at most) until the progress sent so far is out: it goes before the
    /// result.
    async fn finish(&self) {
        let forwarder = self
            .forwarder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some((sender, task)) = forwarder {
            drop(sender);
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), task).await;
        }
    }
}

/// A running Streamable HTTP server; dropping it stops the server.
#[derive(Debug)]
pub struct McpHttpServer {
    addr: SocketAddr,
    _stop: tokio_util::sync::DropGuard,
    _tasks: StopTasks,
}

/// Stops the server's tasks when dropped: the server is done serving.
struct StopTasks(TaskManager);

impl std::fmt::Debug for StopTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StopTasks")
    }
}

impl Drop for StopTasks {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

impl McpHttpServer {
    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://<addr>/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops accepting connections and closes the open ones.
    pub fn shutdown(self) {}
}

/// Serves every enabled tool of `registry` on stdin and stdout, in the current directory, until
/// the client disconnects. See [`McpToolServer`] for more control.
pub async fn serve_stdio(registry: Arc<ToolRegistry>) -> Result<(), McpError> {
    McpToolServer::new(registry).serve_stdio().await
}

/// Serves every enabled tool of `registry` over Streamable HTTP on `addr`
/// (`127.0.0.1:0` for a free loopback port). See [`McpToolServer`] for more control.
pub async fn serve_http(
    registry: Arc<ToolRegistry>,
    addr: SocketAddr,
) -> Result<McpHttpServer, McpError> {
    McpToolServer::new(registry).serve_http(addr).await
}

/// The span of one call, `tools/call {name}`: a child of the client's span when the request's
/// `_meta` carries its W3C trace context.
fn call_span(name: &str, context: &RequestContext<RoleServer>) -> tracing::Span {
    let span = tracing::info_span!(
        "tools/call",
        otel.name = format!("tools/call {name}").as_str(),
        otel.kind = "server",
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = name,
        jsonrpc.request.id = context.id.to_string().as_str(),
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    #[cfg(feature = "otel")]
    if let Some(parent) = context.meta.get_traceparent() {
        crate::telemetry::set_remote_parent(&span, parent, context.meta.get_tracestate());
    }
    span
}

/// A resource link or an embedded resource as MCP's `resource_link` or `resource` block.
fn resource_block(block: ContentBlock) -> rmcp::model::ContentBlock {
    let mut json = serde_json::to_value(&block).unwrap_or_default();
    // Ours are snake case and flat; MCP's camel case, an embedded one's contents nested.
    if let Some(mime_type) = json.as_object_mut().and_then(|o| o.remove("mime_type")) {
        json["mimeType"] = mime_type;
    }
    if json["type"] == "resource" {
        let mut contents = json.take();
        if let Some(object) = contents.as_object_mut() {
            object.remove("type");
        }
        json = serde_json::json!({"type": "resource", "resource": contents});
    }
    serde_json::from_value(json).unwrap_or_else(|_| {
        rmcp::model::ContentBlock::text(block.readable().unwrap_or_default().into_owned())
    })
}

fn to_result(output: ToolOutput) -> CallToolResult {
    let content = output
        .content
        .into_iter()
        .map(|block| match block {
            ContentBlock::Text { text } => rmcp::model::ContentBlock::text(text),
            ContentBlock::Image { media_type, data } => {
                rmcp::model::ContentBlock::image(data, media_type)
            }
            resource => resource_block(resource),
        })
        .collect();
    let mut result = if output.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    // MCP wants structured content to be an object.
    result.structured_content = output.structured.filter(Value::is_object);
    result
}

impl ServerHandler for McpToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let tools = self.registry.get_tools(None).unwrap_or_default();
        let mut listed = Vec::with_capacity(tools.len());
        for definition in build_tools(&tools, Provider::Mcp) {
            match serde_json::from_value::<rmcp::model::Tool>(definition) {
                Ok(tool) => listed.push(tool),
                Err(error) => tracing::warn!(%error, "a tool could not be listed over MCP"),
            }
        }
        Ok(ListToolsResult::with_all_items(listed))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.registry.contains(&name) {
            return Err(ErrorData::invalid_params(
                format!(
                    "unknown tool `{name}`; available: {}",
                    self.registry.names().join(", ")
                ),
                None,
            ));
        }
        if self.runs_as_task(&name, &context) {
            return Ok(CallToolResponse::Task(self.start_task(request, &context)));
        }
        // From 2026-07-28 a call's questions go back in its result (`Rounds`).
        let modern = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let rounds = match modern {
            true => Some(Rounds::of(&request)?),
            false => None,
        };
        let elicitor = Arc::new(PeerElicitor::new(&context, rounds));
        let input = Value::Object(request.arguments.unwrap_or_default());
        let (ctx, progress) = self.context(&context);
        let ctx = ctx.with_elicitor(elicitor.clone());
        let before = self.registry.names();
        let span = call_span(&name, &context);
        let outcome = self
            .registry
            .call_with(&name, input, &ctx, &self.policy)
            .instrument(span.clone())
            .await;
        crate::telemetry::end_tool(&span, outcome.error.as_ref(), &outcome.output);
        let output = outcome.output;
        if self.registry.names() != before {
            // The call added or removed tools (a tool that loads more tools, say).
            let _ = context.peer.notify_tool_list_changed().await;
        }
        // Progress goes out before the result.
        drop(ctx);
        if let Some(progress) = progress {
            progress.finish().await;
        }
        // The call stopped at a question whose answer comes in a retry.
        if let Some(input_required) = elicitor.input_required() {
            return Ok(CallToolResponse::InputRequired(input_required));
        }
        Ok(CallToolResponse::Complete(to_result(output)))
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.tasks
            .get_task(&request.task_id)
            .map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }
}
