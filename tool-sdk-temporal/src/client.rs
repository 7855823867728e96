//! The client: starts runs and awaits them, from any process.

use std::path::PathBuf;
use std::sync::Arc;

use std::time::SystemTime;

use futures::TryStreamExt;
use serde::de::DeserializeOwned;
use serde_json::Value;
use temporalio_client::{
    Client, WorkflowCancelOptions, WorkflowDescribeOptions, WorkflowExecutionStatus,
    WorkflowFetchHistoryOptions, WorkflowGetResultOptions, WorkflowHandle, WorkflowHistory,
    WorkflowListOptions, WorkflowSignalOptions, WorkflowStartOptions,
};
use tool_sdk::agent::OutputSchema;
use tool_sdk::model::{Message, Role, Usage};
use tool_sdk::permission::PermissionAnswer;
use tool_sdk::session::{
    NewSession, PendingApproval, Record, SessionStore, answer_elicitation, pending_approvals,
    stored_conversation,
};
use tool_sdk::{ElicitationAnswer, JsonSchema};

use crate::activities::ApprovalAnswer;
use crate::error::TemporalError;
use crate::parts::RunOptions;
use crate::workflow::{AgentWorkflow, RunInput};

/// Starts agent runs on a task queue and awaits them. The conversation is written to and read
/// from `store`, the store the workers share.
#[derive(Clone)]
pub struct AgentClient {
    client: Client,
    task_queue: String,
    store: Arc<dyn SessionStore>,
    working_dir: PathBuf,
}

/// A run on Temporal: its session, its workflow.
pub struct RunHandle {
    pub(crate) handle: WorkflowHandle<Client, AgentWorkflow>,
    pub(crate) session_id: String,
    workflow_id: String,
    pub(crate) store: Arc<dyn SessionStore>,
    /// How many of the session's records come before the run's (its events start after).
    pub(crate) from: usize,
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    /// The session the conversation is in.
    pub session_id: String,
    /// The model's last answer, read from the session.
    pub text: String,
    /// Model turns taken.
    pub turns: u32,
    /// Calls answered because the worker running them died and they may not run twice.
    pub sealed: u32,
    /// Why the run stopped before the model finished (`max_turns` reached, a budget spent),
    /// if it did. Where `Agent::prompt` returns `AgentError::MaxTurns` or a budget's error, a
    /// run on Temporal ends with this set instead: the run itself went as it should, and its
    /// conversation (every call answered) is in the session.
    pub stopped: Option<String>,
    /// A typed run's answer ([`AgentClient::start_as`]), checked against its schema.
    pub output: Option<Value>,
    /// The tokens the run used: its turns', and its compaction summaries'.
    pub usage: Usage,
}

/// A run as the server knows it: [`AgentClient::list_runs`], [`RunHandle::describe`].
#[derive(Clone, Debug, PartialEq)]
pub struct RunInfo {
    /// The workflow's id.
    pub workflow_id: String,
    /// The run's session, when the workflow has the default id (`agent-<session id>`).
    pub session_id: Option<String>,
    /// Whether it runs, or how it ended.
    pub status: RunStatus,
    /// When its current workflow run started (a run that continued as new has several).
    pub started: Option<SystemTime>,
    /// When it ended, if it did.
    pub closed: Option<SystemTime>,
    /// How many events its current workflow run's history holds.
    pub history_length: u64,
}

/// Where a run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunStatus {
    /// It runs, or waits (for a worker, an approval).
    Running,
    /// It ended: the model answered, or `max_turns` or a budget stopped it.
    Completed,
    /// It failed (the model failed, a hook blocked it).
    Failed,
    /// It was cancelled.
    Cancelled,
    /// It was terminated (by an operator, or a timeout).
    Terminated,
    /// A status the server reports that is none of these.
    Other,
}

impl From<WorkflowExecutionStatus> for RunStatus {
    fn from(status: WorkflowExecutionStatus) -> Self {
        match status {
            WorkflowExecutionStatus::Running => RunStatus::Running,
            WorkflowExecutionStatus::Completed => RunStatus::Completed,
            WorkflowExecutionStatus::Failed => RunStatus::Failed,
            WorkflowExecutionStatus::Canceled => RunStatus::Cancelled,
            WorkflowExecutionStatus::Terminated | WorkflowExecutionStatus::TimedOut => {
                RunStatus::Terminated
            }
            // A run that continued as new goes on in its next workflow run.
            WorkflowExecutionStatus::ContinuedAsNew => RunStatus::Running,
            _ => RunStatus::Other,
        }
    }
}

/// An error and its causes, each said once (`a: b: c`): a failed run's reason is in the
/// activity failure beneath the workflow's.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

/// The session of a workflow with the default id.
fn session_of(workflow_id: &str) -> Option<String> {
    workflow_id.strip_prefix("agent-").map(str::to_owned)
}

impl AgentClient {
    /// A client of `task_queue` on the server at `address` (`host:port` or a URL), whose
    /// sessions are in `store`. New sessions work in the process's working directory.
    pub async fn connect(
        address: &str,
        task_queue: &str,
        store: Arc<dyn SessionStore>,
    ) -> Result<AgentClient, TemporalError> {
        Ok(AgentClient {
            client: crate::worker::connect(address).await?,
            task_queue: task_queue.to_owned(),
            store,
            working_dir: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        })
    }

    /// The directory new sessions work in.
    pub fn with_working_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.working_dir = dir.into();
        self
    }

    /// Starts a run in a new session. The prompt is stored by the run, once the worker's
    /// `user_prompt_submit` hooks let it through (with the context they add).
    pub async fn start(
        &self,
        prompt: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunHandle, TemporalError> {
        let session = self.new_session().await?;
        self.continue_session(&session, prompt, options).await
    }

    /// A new session in the client's working directory: its id.
    async fn new_session(&self) -> Result<String, TemporalError> {
        let session = self
            .store
            .create(NewSession::new(self.working_dir.clone()))
            .await?;
        Ok(session.id)
    }

    /// Starts a run that goes on with the conversation of `session_id` (one run at a time per
    /// session: the workflow id is the session's unless `options` names another).
    pub async fn continue_session(
        &self,
        session_id: &str,
        prompt: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunHandle, TemporalError> {
        self.start_run(session_id, prompt.into(), options, None)
            .await
    }

    /// [`start`](Self::start), for a typed answer, as
    /// [`Agent::prompt_as`](tool_sdk::agent::Agent::prompt_as) asks for one: the model is
    /// asked for an answer of `T`'s JSON Schema, and one that does not match goes back to it
    /// with what is wrong, up to the worker's `max_output_retries` times. Await it with
    /// [`RunHandle::output`].
    pub async fn start_as<T: JsonSchema>(
        &self,
        prompt: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunHandle, TemporalError> {
        let session = self.new_session().await?;
        self.continue_session_as::<T>(&session, prompt, options)
            .await
    }

    /// [`continue_session`](Self::continue_session), for a typed answer (see
    /// [`start_as`](Self::start_as)).
    pub async fn continue_session_as<T: JsonSchema>(
        &self,
        session_id: &str,
        prompt: impl Into<String>,
        options: RunOptions,
    ) -> Result<RunHandle, TemporalError> {
        let output = Some(OutputSchema::of::<T>());
        self.start_run(session_id, prompt.into(), options, output)
            .await
    }

    async fn start_run(
        &self,
        session_id: &str,
        prompt: String,
        options: RunOptions,
        output: Option<OutputSchema>,
    ) -> Result<RunHandle, TemporalError> {
        let store = &*self.store;
        let records = store.load(session_id).await?;
        let turns_before = records
            .iter()
            .filter(|record| matches!(record, Record::ModelTurn { .. }))
            .count() as u32;
        let workflow_id = options
            .workflow_id
            .clone()
            .unwrap_or_else(|| format!("agent-{session_id}"));
        let input = RunInput {
            session_id: session_id.to_owned(),
            turns_before,
            max_turns: options.max_turns.unwrap_or(0),
            heartbeat_timeout_ms: options.heartbeat_timeout.as_millis() as u64,
            model_timeout_ms: options.model_timeout.as_millis() as u64,
            retry_attempts: options.retry_attempts.max(1),
            continue_after: options.continue_after,
            // Stored by the run's first activity, after the worker's prompt hooks: a prompt
            // they block is never stored, as in process.
            prompt: Some(prompt),
            records_before: records.len() as u32,
            output,
            local_reads: options.local_reads,
            ..RunInput::default()
        };
        let start = WorkflowStartOptions::new(self.task_queue.clone(), workflow_id.clone()).build();
        self.client
            .start_workflow(AgentWorkflow::run, input, start)
            .await
            .map_err(|error| TemporalError::Workflow {
                workflow_id: workflow_id.clone(),
                reason: error.to_string(),
            })?;
        Ok(RunHandle {
            handle: self.client.get_workflow_handle(workflow_id.clone()),
            session_id: session_id.to_owned(),
            workflow_id,
            store: self.store.clone(),
            // The prompt is the run's first record: its events start after it.
            from: records.len() + 1,
        })
    }
}

impl AgentClient {
    /// The handle of the run of `session_id` started earlier, from this process or another
    /// (`workflow_id`: the one it was started with, if not the session's).
    pub fn attach(&self, session_id: &str, workflow_id: Option<&str>) -> RunHandle {
        let workflow_id = workflow_id.map_or_else(|| format!("agent-{session_id}"), str::to_owned);
        RunHandle {
            handle: self.client.get_workflow_handle(workflow_id.clone()),
            session_id: session_id.to_owned(),
            workflow_id,
            store: self.store.clone(),
            from: 0,
        }
    }

    /// The agent runs of this client's task queue, newest first (with `limit`, at most that
    /// many). Read from the server's visibility store, which may lag a run's start or end by
    /// a moment.
    pub async fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunInfo>, TemporalError> {
        let query = format!(
            "WorkflowType = '{}' AND TaskQueue = '{}'",
            crate::workflow::WORKFLOW_TYPE,
            self.task_queue.replace('\'', "''")
        );
        let options = WorkflowListOptions::builder().maybe_limit(limit).build();
        let runs: Vec<_> = self
            .client
            .list_workflows(query, options)
            .try_collect()
            .await
            .map_err(|error| TemporalError::Workflow {
                workflow_id: "(listing)".to_owned(),
                reason: error.to_string(),
            })?;
        Ok(runs
            .iter()
            .map(|run| RunInfo {
                workflow_id: run.id().to_owned(),
                session_id: session_of(run.id()),
                status: run.status().into(),
                started: run.start_time(),
                closed: run.close_time(),
                history_length: run.history_length().max(0) as u64,
            })
            .collect())
    }

    /// The calls of `session_id` waiting for an approval, read from the store (no worker is
    /// needed): answer them with [`RunHandle::answer_approval`].
    pub async fn pending_approvals(
        &self,
        session_id: &str,
    ) -> Result<Vec<PendingApproval>, TemporalError> {
        Ok(pending_approvals(&*self.store, session_id).await?)
    }
}

impl RunHandle {
    /// Answers the approval the call `call_id` waits for (or will wait for): the run goes on
    /// with it as soon as a worker takes its next task. `Allow` lets the call run;
    /// `AllowAlways` too, and the session's later calls that the question's suggested rule
    /// covers run unasked (the answer is in the session's records, which every worker reads);
    /// `Deny` answers it with the message as an error result.
    pub async fn answer_approval(
        &self,
        call_id: &str,
        answer: PermissionAnswer,
    ) -> Result<(), TemporalError> {
        let (allow, always, message) = match answer {
            PermissionAnswer::Allow => (true, false, None),
            PermissionAnswer::AllowAlways => (true, true, None),
            PermissionAnswer::Deny(message) => (false, false, Some(message)),
        };
        let answer = ApprovalAnswer {
            call_id: call_id.to_owned(),
            allow,
            always,
            message,
            elicitation: false,
        };
        self.signal(answer).await
    }

    /// Answers the question the tool of the call `call_id` asked
    /// ([`ToolContext::elicit`](tool_sdk::ToolContext::elicit)), which waits in the server:
    /// the answer is stored in the session, then the call runs again from the start with it
    /// (as in process, the tool asks before it acts).
    pub async fn answer_elicitation(
        &self,
        call_id: &str,
        answer: ElicitationAnswer,
    ) -> Result<(), TemporalError> {
        answer_elicitation(&*self.store, &self.session_id, call_id, answer).await?;
        let wake = ApprovalAnswer {
            call_id: call_id.to_owned(),
            allow: true,
            always: false,
            message: None,
            elicitation: true,
        };
        self.signal(wake).await
    }

    async fn signal(&self, answer: ApprovalAnswer) -> Result<(), TemporalError> {
        self.handle
            .signal(
                AgentWorkflow::answer_approval,
                answer,
                WorkflowSignalOptions::default(),
            )
            .await
            .map_err(|error| TemporalError::Workflow {
                workflow_id: self.workflow_id.clone(),
                reason: error.to_string(),
            })
    }

    /// The error of a request about this run's workflow that failed.
    pub(crate) fn failed(&self, error: impl std::fmt::Display) -> TemporalError {
        TemporalError::Workflow {
            workflow_id: self.workflow_id.clone(),
            reason: error.to_string(),
        }
    }

    /// The run as the server knows it now.
    pub async fn describe(&self) -> Result<RunInfo, TemporalError> {
        let described = self
            .handle
            .describe(WorkflowDescribeOptions::default())
            .await
            .map_err(|error| self.failed(error))?;
        Ok(RunInfo {
            workflow_id: self.workflow_id.clone(),
            session_id: Some(self.session_id.clone()),
            status: described.status().into(),
            started: described.start_time(),
            closed: described.close_time(),
            history_length: described.history_length() as u64,
        })
    }

    /// The session the run's conversation is in.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The workflow's id.
    pub fn workflow_id(&self) -> &str {
        &self.workflow_id
    }

    /// Asks the server to cancel the run: its running activities are cancelled, which cancels
    /// the running tool's `CancellationToken` (at its worker's next heartbeat), and
    /// [`result`](Self::result) fails.
    pub async fn cancel(&self) -> Result<(), TemporalError> {
        self.handle
            .cancel(WorkflowCancelOptions::default())
            .await
            .map_err(|error| TemporalError::Workflow {
                workflow_id: self.workflow_id.clone(),
                reason: error.to_string(),
            })
    }

    /// The workflow's history as the server recorded it, event by event: to measure it, or to
    /// replay it against the current code (`temporalio_sdk::workflow_replayer`).
    pub fn history(&self) -> WorkflowHistory {
        self.handle
            .fetch_history(WorkflowFetchHistoryOptions::default())
    }

    /// Waits for the run to end (however many workers die meanwhile) and reads its answer
    /// from the session.
    pub async fn result(&self) -> Result<RunOutcome, TemporalError> {
        let summary = self
            .handle
            .get_result(WorkflowGetResultOptions::default())
            .await
            .map_err(|error| TemporalError::Workflow {
                workflow_id: self.workflow_id.clone(),
                reason: with_causes(&error),
            })?;
        if let Some(reason) = summary.output_failed {
            return Err(TemporalError::Output(reason));
        }
        let messages = stored_conversation(&*self.store, &self.session_id).await?;
        let text = messages
            .last()
            .filter(|message| message.role == Role::Assistant)
            .map(Message::text)
            .unwrap_or_default();
        Ok(RunOutcome {
            session_id: self.session_id.clone(),
            text,
            turns: summary.turns,
            sealed: summary.sealed,
            stopped: summary.stopped,
            output: summary.output,
            usage: summary.usage,
        })
    }

    /// Waits for a typed run ([`AgentClient::start_as`]) to end, and returns its answer as
    /// `T`; fails as [`result`](Self::result) does, and when the run ended without an answer
    /// (its answers were refused until no retry was left, or it stopped before answering) or
    /// its answer does not deserialize as `T`.
    pub async fn output<T: DeserializeOwned>(&self) -> Result<T, TemporalError> {
        let outcome = self.result().await?;
        let Some(value) = outcome.output else {
            let reason = match outcome.stopped {
                Some(stopped) => format!("the run stopped before answering: {stopped}"),
                None => "the run was not started for a typed answer (`start_as`)".to_owned(),
            };
            return Err(TemporalError::Output(reason));
        };
        T::deserialize(value).map_err(|error| {
            let type_name = std::any::type_name::<T>();
            TemporalError::Output(format!("the answer is not a `{type_name}`: {error}"))
        })
    }
}
