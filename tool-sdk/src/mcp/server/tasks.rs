//! Long calls as MCP tasks: the `io.modelcontextprotocol/tasks` extension (SEP-2663) of
//! protocol 2026-07-28, on rmcp's [`TaskManager`].
//!
//! The server decides which calls become tasks: those of a tool whose own timeout is longer
//! than the server's default (Bash's eleven minutes, say), from a client that declared the
//! extension. Such a call is answered at once with a `CreateTaskResult` and runs in the
//! background; `tasks/get` reports its status (the tool's progress as the status message) and,
//! once it is done, its `CallToolResult`; `tasks/update` answers its questions; `tasks/cancel`
//! reaches the tool's cancellation token. A task is kept a minute past the longest its call may
//! run, then dropped.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, CreateTaskResult};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskContext, TaskExit, TaskOptions};
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::elicit::PeerElicitor;
use super::{McpToolServer, call_span, to_result};

/// How often clients are asked to poll a task.
const POLL_INTERVAL: Duration = Duration::from_millis(500);

/// How long a task is kept past the longest its call may run: time to fetch its result.
const KEEP: Duration = Duration::from_secs(60);

impl McpToolServer {
    /// Whether this call of `name` runs as a task: the client declared the tasks extension
    /// and the tool may run longer than an ordinary call.
    pub(super) fn runs_as_task(&self, name: &str, context: &RequestContext<RoleServer>) -> bool {
        let declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        declared && self.runs_long(name)
    }

    /// Whether a call of `name` may run longer than the server's default timeout: a tool
    /// whose own timeout says it outlasts an ordinary call, such as Bash.
    fn runs_long(&self, name: &str) -> bool {
        self.registry.get(name).is_some_and(|tool| {
            self.policy.timeout_for(tool.as_ref()) > self.policy.default_timeout()
        })
    }

    /// Starts the call as a task and returns it (it can be polled before this returns).
    pub(super) fn start_task(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> CreateTaskResult {
        let name = request.name.to_string();
        let limit = self
            .registry
            .get(&name)
            .map(|tool| self.policy.timeout_for(tool.as_ref()))
            .unwrap_or_default();
        let ttl = u64::try_from((limit + KEEP).as_millis()).unwrap_or(u64::MAX);
        let options = TaskOptions::new()
            .with_ttl_ms(ttl)
            .with_poll_interval_ms(POLL_INTERVAL.as_millis() as u64)
            .with_status_message(format!("{name} is running"));
        let server = self.clone();
        let input = Value::Object(request.arguments.unwrap_or_default());
        let span = call_span(&name, context);
        let elicitor = PeerElicitor::new(context, None);
        let call_id = context.id.to_string();
        let peer = context.peer.clone();
        let task = self.tasks.spawn(options, move |task| {
            Box::pin(
                async move {
                    let before = server.registry.names();
                    let result = server
                        .run_task(&name, input, call_id, elicitor, &task)
                        .await;
                    if server.registry.names() != before {
                        let _ = peer.notify_tool_list_changed().await;
                    }
                    result
                }
                .instrument(span),
            )
        });
        CreateTaskResult::new(task)
    }

    /// Runs a task's call: progress becomes the task's status message, its questions the
    /// task's input requests, `tasks/cancel` the tool's cancellation.
    async fn run_task(
        &self,
        name: &str,
        input: Value,
        call_id: String,
        elicitor: PeerElicitor,
        task: &TaskContext,
    ) -> Result<rmcp::model::CallToolResult, TaskExit> {
        let cancel = CancellationToken::new();
        let status = task.clone();
        let ctx = self
            .base_context(call_id, cancel.clone())
            .with_elicitor(Arc::new(elicitor.in_task(task.clone())))
            .with_updates(move |update| {
                if let crate::ToolUpdateKind::Progress(message) = update.kind {
                    status.set_status_message(message);
                }
            });
        let call = self.registry.call_with(name, input, &ctx, &self.policy);
        tokio::pin!(call);
        tokio::select! {
            outcome = &mut call => {
                let span = tracing::Span::current();
                crate::telemetry::end_tool(&span, outcome.error.as_ref(), &outcome.output);
                Ok(to_result(outcome.output))
            }
            () = task.cancelled() => {
                // The tool sees its token cancelled; the pipeline gives it a moment to stop.
                cancel.cancel();
                call.await;
                let span = tracing::Span::current();
                crate::telemetry::failed(&span, "cancelled", "the client cancelled the task");
                Err(TaskExit::Cancelled)
            }
        }
    }
}
