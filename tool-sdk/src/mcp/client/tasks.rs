//! A call the server runs as a task (the `io.modelcontextprotocol/tasks` extension, SEP-2663 of
//! protocol 2026-07-28): polled with `tasks/get` at the interval the server asks for, its
//! status messages as the tool's progress, its questions asked of the user and answered with
//! `tasks/update`, and `tasks/cancel` sent when the call is cancelled or times out.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolResult, CancelTaskParams, ErrorData, GetTaskParams, ServerResult, Task, TaskPayload,
    UpdateTaskParams,
};
use rmcp::service::Peer;
use rmcp::{RoleClient, ServiceError};
use serde_json::Value;

use super::{CallProgress, ClientInner, Waiting};
use crate::tool::{ToolContext, ToolError, ToolOutput, ToolResult};

/// The poll interval when the server names none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// The bounds put on the interval a server names.
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(50), Duration::from_secs(10));

impl ClientInner {
    /// Follows `task` until it ends: its answer as the call's, or (`Err`) the call's result
    /// already.
    pub(super) async fn follow_task(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        task: Task,
        ctx: &ToolContext,
        stderr: &Arc<Mutex<VecDeque<String>>>,
    ) -> Result<Result<ServerResult, ServiceError>, ToolResult> {
        // A server of a 2025-11-25 session may still send the task's questions as
        // `elicitation/create`: they reach this call's context while it is followed.
        let key = format!("task {}", task.task_id);
        let call = Arc::new(CallProgress {
            ctx: ctx.clone(),
            seq: self.calls.fetch_add(1, Ordering::SeqCst),
            last: Mutex::new(None),
            changed: tokio::sync::Notify::new(),
        });
        self.lock_progress().insert(key.clone(), call);
        let (id, cancel_peer) = (task.task_id.clone(), peer.clone());
        let mut pending = Waiting::new(self.clone(), key, async move {
            let _ = cancel_peer.cancel_task(CancelTaskParams::new(id)).await;
        });
        let mut said = None;
        let mut answered = HashSet::new();
        let mut interval = poll_interval(&task);
        let mut status = task;
        loop {
            if status.status_message != said {
                said = status.status_message.clone();
                if let Some(message) = &said {
                    ctx.progress(message.clone());
                }
            }
            let polled = tokio::select! {
                // Dropping `pending` sends `tasks/cancel`.
                _ = ctx.cancellation().cancelled() => return Err(Err(ToolError::Cancelled)),
                polled = async {
                    tokio::time::sleep(interval).await;
                    peer.get_task(GetTaskParams::new(status.task_id.clone())).await
                } => polled,
            };
            let detailed = match polled {
                Ok(polled) => polled.task,
                Err(ServiceError::McpError(error)) => {
                    pending.answered();
                    return Err(Err(ToolError::failed(format!(
                        "MCP server `{}` lost track of the task running the call: {}",
                        self.name, error.message
                    ))));
                }
                Err(error) => return Err(Err(self.call_failed(&error, stderr))),
            };
            interval = poll_interval(&detailed.task);
            status = detailed.task;
            let requests = match detailed.payload {
                TaskPayload::Completed { result } => {
                    pending.answered();
                    return Ok(completed(&self.name, result));
                }
                TaskPayload::Failed { error } => {
                    pending.answered();
                    return Ok(Err(failed(error)));
                }
                TaskPayload::Cancelled => {
                    pending.answered();
                    return Err(Ok(ToolOutput::error(format!(
                        "MCP server `{}` cancelled the task running the call{}",
                        self.name,
                        status
                            .status_message
                            .as_deref()
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    ))));
                }
                TaskPayload::InputRequired { input_requests } => input_requests,
                _ => continue,
            };
            let responses = self.answer_requests(ctx, requests, &mut answered).await?;
            if !responses.is_empty() {
                let update = UpdateTaskParams::new(status.task_id.clone(), responses);
                if let Err(error) = peer.update_task(update).await {
                    return Err(Err(self.call_failed(&error, stderr)));
                }
            }
        }
    }
}

/// The interval `task` asks to be polled at, within [`POLL_BOUNDS`].
fn poll_interval(task: &Task) -> Duration {
    task.poll_interval_ms
        .map(Duration::from_millis)
        .unwrap_or(DEFAULT_POLL)
        .clamp(POLL_BOUNDS.0, POLL_BOUNDS.1)
}

/// A completed task's result as the answer to the call.
fn completed(
    server: &str,
    result: serde_json::Map<String, Value>,
) -> Result<ServerResult, ServiceError> {
    match serde_json::from_value::<CallToolResult>(Value::Object(result)) {
        Ok(result) => Ok(ServerResult::CallToolResult(result)),
        Err(error) => Err(ServiceError::McpError(ErrorData::internal_error(
            format!(
                "MCP server `{server}` finished the task with something other than a tool result: {error}"
            ),
            None,
        ))),
    }
}

/// A failed task's JSON-RPC error as the answer to the call.
fn failed(error: serde_json::Map<String, Value>) -> ServiceError {
    let error = serde_json::from_value::<ErrorData>(Value::Object(error.clone()))
        .unwrap_or_else(|_| ErrorData::internal_error(Value::Object(error).to_string(), None));
    ServiceError::McpError(error)
}
