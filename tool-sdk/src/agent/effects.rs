//! [`AgentEffects`]: an agent's parts as [`Agent::create`](super::Agent::create) assembles
//! them, for a driver that performs the loop's effects one at a time somewhere else.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::AgentConfig;
use super::error::AgentError;
use super::hooks::StopContext;
use super::inner::AgentInner;
use crate::model::{History, Model, ModelRequest, Usage};
use crate::permission::{PermissionGate, PermissionMode};
use crate::pipeline::CallPolicy;
use crate::{AgentId, ToolContext, ToolError, ToolRegistry};

/// An agent's parts, built from an [`AgentConfig`] exactly as [`Agent::create`] builds them
/// (model and fallbacks, the tools the model may see, MCP servers, permission rules and
/// hooks, limits, prices), without a session or a loop: for a driver that performs the
/// loop's effects one at a time elsewhere, such as `tool-sdk-temporal`'s activities, while
/// its workflow makes the [`decisions`](super::decisions).
///
/// Each method is one effect's ingredients, the same as the in-process agent's: the request
/// a turn sends, the policy and context a call runs with, the hooks' verdicts, what a turn
/// costs and when a budget stops a run.
///
/// [`Agent::create`]: super::Agent::create
#[derive(Clone)]
pub struct AgentEffects {
    inner: Arc<AgentInner>,
}

impl std::fmt::Debug for AgentEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentEffects")
            .field("model", &self.inner.model.model_id())
            .finish_non_exhaustive()
    }
}

impl AgentEffects {
    /// Builds the parts as [`Agent::create`](super::Agent::create) does, with the same errors
    /// (an unknown tool, a missing model, app state a tool needs, a budget without a price).
    pub async fn build(config: AgentConfig) -> Result<AgentEffects, AgentError> {
        let inner = AgentInner::build(config).await?;
        Ok(AgentEffects {
            inner: Arc::new(inner),
        })
    }

    /// The config the parts were built from, project files (instructions, Claude settings)
    /// merged in.
    pub fn config(&self) -> &AgentConfig {
        &self.inner.config
    }

    /// The model, with its fallbacks.
    pub fn model(&self) -> &Arc<dyn Model> {
        &self.inner.model
    }

    /// The tools the model may see (MCP servers' included), validated as the agent validates
    /// them.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.inner.registry
    }

    /// The request the agent sends for `messages`: its system prompt, tools, token and
    /// thinking settings, prompt caching.
    pub fn request(&self, messages: History) -> ModelRequest {
        let config = &self.inner.config;
        ModelRequest {
            system: config.model.system_prompt.clone(),
            messages,
            tools: self.inner.specs(),
            max_tokens: config.model.max_tokens,
            temperature: config.model.temperature,
            output: None,
            cache: config.prompt_cache(self.inner.ledger.info()),
            thinking: config.model.thinking,
            effort: config.model.effort,
        }
    }

    /// How calls are made: the config's timeouts and result caps, its permission rules and
    /// `pre_tool_use` hooks (the gate), its `post_tool_use` hooks.
    pub fn policy(&self) -> &CallPolicy {
        &self.inner.policy
    }

    /// The permission gate of [`policy`](Self::policy): to preview whether a call would ask
    /// before it runs.
    pub fn gate(&self) -> &Arc<PermissionGate> {
        &self.inner.gate
    }

    /// The permission mode the config starts in.
    pub fn permission_mode(&self) -> PermissionMode {
        self.inner.config.permissions.mode
    }

    /// The directory tools work in.
    pub fn working_dir(&self) -> &Path {
        &self.inner.working_dir
    }

    /// The context a call of session `session_id` runs with: the config's app state, the
    /// sandbox of its directories, the file tracker, `cancel` as its cancellation.
    pub fn tool_context(
        &self,
        session_id: &str,
        call_id: &str,
        cancel: CancellationToken,
    ) -> ToolContext {
        let inner = &self.inner;
        ToolContext::new(inner.working_dir.clone())
            .with_session_id(session_id)
            .with_agent_id(AgentId::Main)
            .with_state(inner.state.clone())
            .with_file_tracker(inner.files.clone())
            .with_session_values(inner.session.clone())
            .with_sandbox(inner.sandbox.clone())
            .with_tool_call_id(call_id)
            .with_cancellation(cancel)
    }

    /// Whether the agent would manage the context window (clear old tool results, compact the
    /// conversation): compaction is on and the window is known (configured, or the model's).
    pub fn manages_context(&self) -> bool {
        let config = &self.inner.config;
        let model_window = self.inner.ledger.info().map(|info| info.context_window);
        super::step::context_window(
            config.context.compaction,
            config.context.window,
            model_window,
        )
        .is_some()
    }

    /// What `usage` costs at the model's price; `None` when the price is unknown.
    pub fn cost_usd(&self, usage: &Usage) -> Option<f64> {
        self.inner.ledger.cost_usd(usage)
    }

    /// The error that stops a run which used `run_usage` in all, once it has spent one of
    /// the config's budgets (`max_budget_usd`, `max_run_tokens`).
    pub fn budget_stop(&self, run_usage: &Usage) -> Option<AgentError> {
        self.inner.ledger.budget_stop(run_usage)
    }

    /// Runs the `user_prompt_submit` hooks on a prompt: `Err` with the reason a hook blocked
    /// it, else the context they add (each a user message after the prompt).
    pub async fn check_prompt(&self, prompt: &str) -> Result<Vec<String>, String> {
        self.inner.config.hooks.check_prompt(prompt).await
    }

    /// Runs the `stop` hooks when the model answered without calls, having been sent on
    /// `continued` times already: the message to go on with, if a hook has the run go on.
    /// Whether to ask at all is the workflow's to decide
    /// ([`max_stop_continuations`](super::Hooks::max_stop_continuations)).
    pub async fn check_stop(&self, text: &str, continued: u32) -> Option<String> {
        let stop = StopContext {
            agent: &AgentId::Main,
            text,
            continued,
        };
        self.inner.config.hooks.check_stop(&stop).await
    }

    /// Tells the `post_tool_use_failure` hooks about a call that ended (`error`, as
    /// [`run_call`](crate::pipeline::run_call)'s outcome has it: `None` when it did not fail).
    pub async fn tool_ended(
        &self,
        tool: &str,
        call_id: &str,
        input: &Value,
        error: Option<&ToolError>,
    ) {
        let hooks = &self.inner.config.hooks;
        hooks.tool_failed(tool, call_id, input, error).await;
    }
}
