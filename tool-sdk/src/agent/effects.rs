//! [`AgentEffects`]: an agent's parts as [`Agent::create`](super::Agent::create) assembles
//! them, for a driver that performs the loop's effects one at a time somewhere else.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::config::AgentConfig;
use super::error::AgentError;
use super::events::{Emit, RunResult};
use super::hooks::{Notification, NotificationKind, SessionSource, SessionStart, StopContext};
use super::inner::AgentInner;
use super::output::{OutputSchema, OutputVerdict, judge_schema};
use super::subagent::Subagents;
use crate::builtin::{file_key, file_modified};
use crate::model::{History, Message, MessageContent, Model, ModelRequest, Usage};
use crate::permission::{PermissionGate, PermissionMode};
use crate::pipeline::CallPolicy;
use crate::session::{Record, SessionStore, restore};
use crate::validate::ValidationOptions;
use crate::{AgentId, FileStateTracker, ToolContext, ToolError, ToolRegistry};

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
    /// Each session's file tracker (which files its calls read, for the edit tools' "read it
    /// first"), most recently used last: the sessions of this process's runs, at most
    /// [`TRACKED_SESSIONS`].
    files: Arc<Mutex<SessionFiles>>,
}

/// Sessions' file trackers by session id, most recently used last.
type SessionFiles = Vec<(String, Arc<FileStateTracker>)>;

/// How many sessions' file trackers a process keeps; a session's calls past that rebuild it.
const TRACKED_SESSIONS: usize = 256;

/// The tools whose successful call leaves a file read (or written, so known) by the session.
const FILE_TOOLS: [&str; 4] = ["Read", "Write", "Edit", "MultiEdit"];

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
            files: Arc::default(),
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
    /// sandbox of its directories, the session's file tracker, `cancel` as its cancellation,
    /// and the Task tool's sub-agents, which run inside the call as they do in process (their
    /// conversations are not stored; a call of theirs that would ask is refused, naming the
    /// rule that would allow it).
    ///
    /// The file tracker (which files the session read, so that an edit tool may change them)
    /// is the session's on this process; a session whose earlier calls ran elsewhere (another
    /// process, one that died) has it rebuilt from its `records`: each file a successful
    /// Read, Write or Edit named counts as read in its present state.
    pub fn tool_context(
        &self,
        session_id: &str,
        call_id: &str,
        cancel: CancellationToken,
        records: &[Record],
    ) -> ToolContext {
        let inner = &self.inner;
        let files = self.session_files(session_id, records);
        let context = ToolContext::new(inner.working_dir.clone())
            .with_session_id(session_id)
            .with_agent_id(AgentId::Main)
            .with_state(inner.state.clone())
            .with_file_tracker(files.clone())
            .with_session_values(inner.session.clone())
            .with_sandbox(inner.sandbox.clone())
            .with_tool_call_id(call_id)
            .with_cancellation(cancel);
        let Some(_) = inner.registry.get("Task") else {
            return context;
        };
        match inner.for_session(session_id, None) {
            Ok(mut parent) => {
                // The sub-agents share the session's files, as in process.
                parent.files = files;
                // Nobody listens here: a question of theirs is refused.
                let nobody = Emit::questions_to(|_| {});
                context.with_subagents(Arc::new(Subagents::new(Arc::new(parent), nobody)))
            }
            // The config was checked when the parts were built: this does not fail.
            Err(_) => context,
        }
    }

    /// The file tracker of `session_id`: kept, or rebuilt from `records`.
    fn session_files(&self, session_id: &str, records: &[Record]) -> Arc<FileStateTracker> {
        let mut files = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(at) = files.iter().position(|(id, _)| id == session_id) {
            let kept = files.remove(at);
            let tracker = kept.1.clone();
            files.push(kept);
            return tracker;
        }
        if files.len() >= TRACKED_SESSIONS {
            files.remove(0);
        }
        let tracker = Arc::new(files_read(records));
        files.push((session_id.to_owned(), tracker.clone()));
        tracker
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

    /// The messages of a request that continues the stored session `session_id` (its
    /// `records`), as the agent would send them: when the window is managed, older tool
    /// results are cleared or the conversation compacted first (the `pre_compact` hooks
    /// asked, the summary requested from the model), each change appended to `store` before
    /// the view uses it, as in process. `run_usage` is what the run used so far: a budget the
    /// summary spends stops it.
    pub async fn context_view(
        &self,
        session_id: &str,
        records: &[Record],
        store: Arc<dyn SessionStore>,
        run_usage: Usage,
    ) -> Result<History, AgentError> {
        self.managed_view(session_id, records, store, run_usage)
            .await
            .0
    }

    /// Clears or compacts the stored session `session_id` (its `records`) as
    /// [`context_view`](Self::context_view) would before the next request, each change
    /// appended to `store`; returns the tokens of the summary's request (none when it did not
    /// compact), for the caller to count in the run's (`run_usage` so far). A budget the
    /// summary spends is not an error here: [`budget_stop`](Self::budget_stop) of the run's
    /// new total says so.
    pub async fn prepare_context(
        &self,
        session_id: &str,
        records: &[Record],
        store: Arc<dyn SessionStore>,
        run_usage: Usage,
    ) -> Result<Usage, AgentError> {
        let (view, total) = self
            .managed_view(session_id, records, store, run_usage)
            .await;
        let less = |all: u64, before: u64| all.saturating_sub(before);
        let spent = Usage {
            input_tokens: less(total.input_tokens, run_usage.input_tokens),
            output_tokens: less(total.output_tokens, run_usage.output_tokens),
            cache_read_input_tokens: less(
                total.cache_read_input_tokens,
                run_usage.cache_read_input_tokens,
            ),
            cache_creation_input_tokens: less(
                total.cache_creation_input_tokens,
                run_usage.cache_creation_input_tokens,
            ),
        };
        match view {
            Err(error) if self.budget_stop(&total).is_none() => Err(error),
            _ => Ok(spent),
        }
    }

    /// [`context_view`](Self::context_view), with the run's usage after it (`run_usage`
    /// and the summary's).
    async fn managed_view(
        &self,
        session_id: &str,
        records: &[Record],
        store: Arc<dyn SessionStore>,
        run_usage: Usage,
    ) -> (Result<History, AgentError>, Usage) {
        let restored = restore(records);
        let messages = History::from(restored.messages.clone());
        if !self.manages_context() {
            return (Ok(messages), run_usage);
        }
        let step = match self.inner.for_session(session_id, Some(store)) {
            Ok(step) => step,
            Err(error) => return (Err(error), run_usage),
        };
        step.context.restore(&restored);
        let mut result = RunResult {
            usage: run_usage,
            ..RunResult::default()
        };
        let nobody = Emit::questions_to(|_| {});
        let never = CancellationToken::new();
        let view = step
            .context_view(&messages, &mut result, &nobody, &never)
            .await;
        (view, result.usage)
    }

    /// What the typed answer of `turn` (a model turn just taken, of a run that asked for an
    /// answer of `schema`) comes to, after `refused` answers of the run were refused: taken,
    /// sent back with what is wrong with it (up to the config's `max_output_retries` times),
    /// the run failed, or not given yet; with the records that tell the model. The decisions
    /// and texts of [`Agent::prompt_as`](super::Agent::prompt_as), except that the answer is
    /// checked against the schema only: deserializing it as its type is for whoever knows
    /// the type.
    pub fn judge_output(
        &self,
        schema: &OutputSchema,
        turn: &Message,
        refused: u32,
    ) -> Result<OutputVerdict, AgentError> {
        let config = &self.inner.config;
        let options = ValidationOptions {
            coerce: config.coerce_inputs,
        };
        let max = config.limits.max_output_retries;
        judge_schema(schema, options, turn, refused, max)
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

    /// Tells the `session_start` hooks that a run of the stored session `session_id` begins:
    /// its first (`new`) or a later one, as an agent that resumes it would.
    pub async fn session_started(&self, session_id: &str, new: bool) {
        let source = match new {
            true => SessionSource::Startup,
            false => SessionSource::Resume,
        };
        let start = SessionStart {
            session_id: Some(session_id),
            source,
        };
        self.inner.config.hooks.session_start(start).await;
    }

    /// Tells the `notification` hooks that a call of the tool `tool` waits for the user's
    /// permission (its question stored for them).
    pub async fn permission_prompt(&self, tool: &str) {
        let notification = Notification {
            kind: NotificationKind::PermissionPrompt,
            message: format!("The agent needs your permission to use {tool}"),
        };
        self.inner.config.hooks.notify(&notification).await;
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

/// The files the successful file-tool calls of `records` named, each as read in its present
/// state.
fn files_read(records: &[Record]) -> FileStateTracker {
    let tracker = FileStateTracker::default();
    let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
    for record in records {
        match record {
            Record::ModelTurn { message } => {
                for call in message.tool_uses() {
                    if let (true, Some(input)) = (
                        FILE_TOOLS.contains(&call.name.as_str()),
                        call.input.parsed(),
                    ) {
                        calls.insert(&call.id, (&call.name, input));
                    }
                }
            }
            Record::ToolResult {
                block:
                    MessageContent::ToolResult {
                        tool_use_id,
                        is_error: false,
                        ..
                    },
            } => {
                let path = calls
                    .get(tool_use_id.as_str())
                    .and_then(|(_, input)| input.get("file_path").and_then(Value::as_str));
                let Some(path) = path.map(Path::new) else {
                    continue;
                };
                if let Ok(metadata) = std::fs::metadata(path) {
                    tracker.record_read(file_key(path), file_modified(&metadata));
                }
            }
            _ => {}
        }
    }
    tracker
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Message, Role, ScriptedModel, ToolInput, ToolUse};

    #[tokio::test]
    async fn each_session_has_its_own_files_and_one_unseen_is_rebuilt_from_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "x").unwrap();
        let config = AgentConfig::new()
            .with_model(ScriptedModel::new([]))
            .with_registry(Arc::new(ToolRegistry::new()))
            .with_working_dir(dir.path());
        let effects = AgentEffects::build(config).await.unwrap();
        let cancel = CancellationToken::new;
        let key = file_key(&file);

        let a = effects.tool_context("a", "c1", cancel(), &[]);
        a.files().record_read(key.clone(), None);
        let b = effects.tool_context("b", "c2", cancel(), &[]);
        assert!(
            b.files().last_read(&key).is_none(),
            "b's calls did not read it"
        );
        let a_again = effects.tool_context("a", "c3", cancel(), &[]);
        assert!(a_again.files().last_read(&key).is_some());

        // A session this process has not seen: its successful Read counts, a failed one not.
        let read = |id: &str, path: &Path| ToolUse {
            id: id.to_owned(),
            name: "Read".to_owned(),
            input: ToolInput::Parsed(serde_json::json!({"file_path": path})),
        };
        let missing = dir.path().join("missing.txt");
        let turn = Message {
            role: Role::Assistant,
            content: vec![
                MessageContent::ToolUse(read("r1", &file)),
                MessageContent::ToolUse(read("r2", &missing)),
            ],
        };
        let result = |id: &str, is_error: bool| Record::ToolResult {
            block: MessageContent::ToolResult {
                tool_use_id: id.to_owned(),
                content: Vec::new(),
                is_error,
            },
        };
        let records = [
            Record::model_turn(turn),
            result("r1", false),
            result("r2", true),
        ];
        let c = effects.tool_context("c", "c4", cancel(), &records);
        assert!(c.files().last_read(&key).is_some());
        assert!(c.files().last_read(&file_key(&missing)).is_none());
    }
}
