//! Sub-agents for the Task tool: a child agent with its own conversation and a restricted
//! tool set, whose events reach the parent's stream tagged with the child's id.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::events::{AgentEvent, Emit};
use super::inner::{AgentInner, resolve_tools};
use super::recorder::Recorder;
use crate::{
    AgentId, BoxFuture, SubagentReport, SubagentRequest, SubagentRunner, ToolContext, ToolError,
};

/// The Task tool's own name: children never get it, so sub-agents cannot nest forever.
const TASK_TOOL: &str = "Task";

pub(crate) struct Subagents {
    parent: Arc<AgentInner>,
    emit: Emit,
}

impl Subagents {
    pub(crate) fn new(parent: Arc<AgentInner>, emit: Emit) -> Self {
        Subagents { parent, emit }
    }

    fn child(&self, request: &SubagentRequest) -> Result<AgentInner, ToolError> {
        let parent = &self.parent;
        let mut config = parent.config.clone();
        let kind = match &request.subagent_type {
            None => None,
            Some(name) if name == "general-purpose" && !config.subagents.contains_key(name) => None,
            Some(name) => Some(config.subagents.get(name).cloned().ok_or_else(|| {
                let known: Vec<&str> = std::iter::once("general-purpose")
                    .chain(config.subagents.keys().map(String::as_str))
                    .collect();
                ToolError::invalid_input(format!(
                    "unknown subagent_type `{name}`; available: {}",
                    known.join(", ")
                ))
            })?),
        };
        let tools = match kind.as_ref().and_then(|kind| kind.tools.clone()) {
            Some(patterns) => resolve_tools(&parent.registry, Some(&patterns))
                .map_err(|error| ToolError::failed(error.to_string()))?,
            None => parent.registry.get_tools(None).unwrap_or_default(),
        };
        let tools = tools
            .into_iter()
            .filter(|tool| tool.name() != TASK_TOOL)
            .collect();
        // A sub-agent's run lives inside the Task call and has no session of its own to wait
        // in: its questions are asked (or refused) as usual.
        config.session.defer_approvals = false;
        // The parent's sub-agent stop hooks are its stop hooks; it has no session of its own.
        config.run_hooks.stop = config.run_hooks.subagent_stop.clone();
        config.run_hooks.prompt.clear();
        config.run_hooks.session.clear();
        // Its traces name it after its kind.
        config.name = Some(
            request
                .subagent_type
                .clone()
                .unwrap_or_else(|| "general-purpose".to_owned()),
        );
        if let Some(kind) = kind {
            config.system_prompt = kind.system_prompt.or(config.system_prompt);
        }
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = AgentId::Sub(Arc::from(format!(
            "task-{}",
            NEXT.fetch_add(1, Ordering::Relaxed)
        )));
        let mut child = AgentInner::new(parent.model.clone(), &parent.registry, tools, config, id)
            .map_err(|error| ToolError::failed(error.to_string()))?;
        // The child shares the session's file tracker and state, not its conversation.
        child.files = parent.files.clone();
        child.checkpoints = parent.checkpoints.clone();
        child.call_message = parent.call_message.clone();
        child.state = parent.state.clone();
        child.recorder = Recorder::in_memory(parent.recorder.session_id().clone());
        child.ledger = parent.ledger.clone();
        Ok(child)
    }
}

impl SubagentRunner for Subagents {
    fn run<'a>(
        &'a self,
        request: SubagentRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<SubagentReport, ToolError>> {
        Box::pin(async move {
            let child = Arc::new(self.child(&request)?);
            let agent_id = child.agent_id.clone();
            let parent_emit = self.emit.clone();
            let forward = self.emit.forward(move |event| {
                parent_emit(AgentEvent::Subagent {
                    agent_id: agent_id.clone(),
                    event: Box::new(event),
                })
            });
            // Cancelling the parent's run (or timing out this call) stops the child too.
            let cancel = ctx.cancellation().child_token();
            let result = child.run(Some(request.prompt), forward, cancel).await;
            if let Some(error) = result.error {
                return Err(ToolError::failed(format!(
                    "the sub-agent failed: {error}{}",
                    if result.text.is_empty() {
                        String::new()
                    } else {
                        format!("; its last words: {}", result.text)
                    }
                )));
            }
            Ok(SubagentReport {
                summary: result.text,
                tool_calls: result.tool_calls,
                files_modified: result.files_modified,
                errors: result.errors,
            })
        })
    }
}
