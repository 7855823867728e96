//! An MCP server on rmcp alone whose one tool, `report`, runs only as a task (the tasks
//! extension of protocol 2026-07-28, SEP-2663): a client that does not declare the extension
//! is refused with -32021 (Missing Required Client Capability), as the extension says a server
//! that cannot serve a call otherwise must. Serves on stdio.
//!
//! The report takes two stages of 300 ms, each its task's status message; `tasks/cancel`
//! stops it, and it writes `cancelled` into the directory given as its argument. `confirm`
//! asks the user from its task with `elicitation/create` (as a server of a 2025-11-25 session
//! may) and says what the answer was.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, ElicitRequestParams, ElicitationSchema, ErrorData,
    GetTaskParams, GetTaskResult, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::task_manager::{TaskExit, TaskManager, TaskOptions};
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::json;

#[derive(Clone)]
struct Reports {
    tasks: TaskManager,
    dir: PathBuf,
}

impl ServerHandler for Reports {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tasks()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("task-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let schema = json!({"type": "object", "properties": {"topic": {"type": "string"}},
            "required": ["topic"]});
        let schema = serde_json::from_value(schema).map_err(|e| {
            ErrorData::internal_error(format!("the schema does not parse: {e}"), None)
        })?;
        let report = Tool::new(
            "report",
            "Writes a report on a topic, in the background.",
            Arc::new(schema),
        );
        let confirm = Tool::new(
            "confirm",
            "Asks the user to confirm, in the background.",
            Arc::new(Default::default()),
        );
        Ok(ListToolsResult::with_all_items(vec![report, confirm]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let declared = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.supports_tasks());
        if !declared {
            let tasks = ClientCapabilities::builder().enable_tasks().build();
            return Err(ErrorData::missing_required_client_capability(tasks));
        }
        if request.name == "confirm" {
            let peer = context.peer.clone();
            let task = self
                .tasks
                .spawn(TaskOptions::new().with_poll_interval_ms(100), |_| {
                    Box::pin(async move {
                        let question = ElicitRequestParams::FormElicitationParams {
                            meta: None,
                            message: "Go on?".to_owned(),
                            requested_schema: ElicitationSchema::builder().build_unchecked(),
                        };
                        let answer = peer.create_elicitation(question).await.map_err(|e| {
                            ErrorData::internal_error(format!("no answer: {e}"), None)
                        })?;
                        let text = format!("confirmed: {:?}", answer.action);
                        Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
                    })
                });
            return Ok(CallToolResponse::Task(CreateTaskResult::new(task)));
        }
        let topic = request
            .arguments
            .as_ref()
            .and_then(|arguments| arguments.get("topic"))
            .and_then(|topic| topic.as_str())
            .unwrap_or("nothing")
            .to_owned();
        let dir = self.dir.clone();
        let options = TaskOptions::new().with_poll_interval_ms(100);
        let task = self.tasks.spawn(options, move |task| {
            Box::pin(async move {
                for stage in ["gathering sources on", "writing up"] {
                    task.set_status_message(format!("{stage} {topic}"));
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(300)) => {}
                        () = task.cancelled() => {
                            let _ = std::fs::write(dir.join("cancelled"), stage);
                            return Err(TaskExit::Cancelled);
                        }
                    }
                }
                let text = format!("a report on {topic}");
                Ok(CallToolResult::success(vec![ContentBlock::text(text)]))
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: mcp-task-server DIR")?;
    let server = Reports {
        tasks: TaskManager::new(),
        dir: dir.into(),
    };
    server
        .serve(rmcp::transport::stdio())
        .await?
        .waiting()
        .await?;
    Ok(())
}
