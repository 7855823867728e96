//! The stored side of an agent: resuming and forking a session, its pending approvals, and
//! putting files back from its checkpoints.

use std::sync::Arc;

use super::Agent;
use super::config::AgentConfig;
use super::error::{AgentError, ConfigError, StoreNeed};
use super::hold::SessionHold;
use super::hooks::{SessionEnd, SessionEndReason, SessionSource};
use super::inner::AgentInner;
use super::recorder::Recorder;
use crate::permission::PermissionAnswer;
use crate::session::{
    ForkPoint, NewSession, PendingApproval, RewindReport, SessionError, SessionStore, records_for,
    restore,
};

impl Agent {
    /// Opens the stored session `id` again, with its history as it was stored: the run goes on
    /// with [`prompt`](Agent::prompt) or [`run`](Agent::run), or [`continue_run`] when the
    /// last message is the user's. `config` must name the store
    /// ([`SessionSettings::with_store`](super::SessionSettings::with_store) or `[session] store`); its working directory, if
    /// unset, is the session's.
    ///
    /// After a crash, every tool call left open gets its one result, and those results are
    /// stored so the next resume sees the same history: a call that had started is answered
    /// as an error saying it may have partly happened
    /// ([`STOPPED_MESSAGE`](crate::session::STOPPED_MESSAGE)), one that had not, as an error
    /// saying it did not run. No call is ever run again by a resume. A model turn the crash
    /// cut off was never stored: [`continue_run`] asks for it again. Calls waiting for
    /// [deferred approvals](super::SessionSettings::with_deferred_approvals) are not sealed: they are
    /// [`pending_approvals`](Agent::pending_approvals), and run or are refused once answered.
    ///
    /// [`continue_run`]: Agent::continue_run
    pub async fn resume(config: AgentConfig, id: &str) -> Result<Agent, AgentError> {
        let store = required_store(&config, StoreNeed::Resume)?;
        Self::open_stored(config, store, id).await
    }

    /// Starts a new session with the first `at` messages of the session `id` (`at` is how many
    /// messages are kept, `0..=len`), then goes on independently of it: what either does
    /// next is not seen by the other. If the kept history ends with tool calls, they are
    /// answered as calls that did not run. The fork's [`session_id`](Agent::session_id) is
    /// new; [`SessionInfo::parent`](crate::session::SessionInfo::parent) names where it came
    /// from.
    pub async fn fork(config: AgentConfig, id: &str, at: usize) -> Result<Agent, AgentError> {
        let store = required_store(&config, StoreNeed::Fork)?;
        let source = store.get(id).await?;
        let messages = restore(&store.load(id).await?).messages;
        if at > messages.len() {
            return Err(SessionError::ForkPoint {
                id: id.to_owned(),
                at,
                len: messages.len(),
            }
            .into());
        }
        let fork = store
            .create(
                NewSession::new(source.working_dir)
                    .with_title(source.title)
                    .with_parent(ForkPoint {
                        session: id.to_owned(),
                        at,
                    }),
            )
            .await?;
        // The copied history in one commit, not one a message.
        store
            .append_all(&fork.id, &records_for(&messages[..at]))
            .await?;
        Self::open_stored(config, store, &fork.id).await
    }

    /// Loads, seals and attaches the stored session `id`.
    async fn open_stored(
        mut config: AgentConfig,
        store: Arc<dyn SessionStore>,
        id: &str,
    ) -> Result<Agent, AgentError> {
        let session = store.get(id).await?;
        // Taken before the session is read: another process may be running it.
        let hold = SessionHold::take(&store, id, config.session.lease).await?;
        let recorder = Recorder::stored(Arc::from(session.id), store, hold);
        // Its seals are stored before anything else runs.
        let (records, mut restored) = recorder.open().await?;
        let resume_notes = std::mem::take(&mut restored.skipped).into();
        if config.working_dir.is_none() {
            config.working_dir = Some(session.working_dir);
        }
        let mut inner = AgentInner::build(config).await?;
        inner.checkpoints = Arc::new(recorder.checkpoints(&records));
        inner.recorder = recorder;
        inner.context.restore(&restored);
        inner.messages = tokio::sync::Mutex::new(restored.messages.into());
        inner.session_start = std::sync::Mutex::new(Some(SessionSource::Resume));
        inner.ledger.restore(&records);
        Ok(Agent {
            inner: Arc::new(inner),
            resume_notes,
        })
    }

    /// What resuming the session left out of its history, one note each: a record the store
    /// could not read back, a model turn stored twice. The conversation goes on without them.
    /// Empty when nothing was left out, and for an agent made by [`Agent::create`].
    pub fn resume_notes(&self) -> &[String] {
        &self.resume_notes
    }

    /// Ends the session: its hooks see [`Hook::session_end`](super::Hook::session_end). The agent stays
    /// usable: its next run starts the session again for the hooks (as
    /// [`SessionSource::Startup`]), and a stored session simply goes on.
    pub async fn close(&self) {
        let session_id = self.inner.recorder.stored_id();
        let end = SessionEnd {
            session_id,
            reason: SessionEndReason::Closed,
        };
        self.inner.config.hooks.session_end(end).await;
        *self
            .inner
            .session_start
            .lock()
            .unwrap_or_else(|p| p.into_inner()) = Some(SessionSource::Startup);
    }

    /// The session's id: the stored session's when the agent has a session store (give it to
    /// [`Agent::resume`]), else one made up for this agent.
    pub fn session_id(&self) -> &str {
        self.inner.recorder.session_id()
    }

    /// The calls waiting for a permission answer after a run stopped for them
    /// ([`SessionSettings::with_deferred_approvals`](super::SessionSettings::with_deferred_approvals)), read from the store (so answers given by
    /// another process count). Empty without a session store.
    pub async fn pending_approvals(&self) -> Result<Vec<PendingApproval>, AgentError> {
        let id = self.inner.recorder.session_id();
        match self.inner.recorder.store() {
            Some(store) => Ok(crate::session::pending_approvals(&*store, id).await?),
            None => Ok(Vec::new()),
        }
    }

    /// Answers the permission question the call `call_id` waits for (see
    /// [`crate::session::answer_approval`]); once none is left,
    /// [`continue_run`](Agent::continue_run) goes on. An id that waits for nothing is a
    /// [`SessionError::NoPendingApproval`] naming those that do.
    pub async fn answer_approval(
        &self,
        call_id: &str,
        answer: PermissionAnswer,
    ) -> Result<(), AgentError> {
        let store = self.answer_store(call_id)?;
        let id = self.inner.recorder.session_id();
        crate::session::answer_approval(&*store, id, call_id, answer).await?;
        Ok(())
    }

    /// Answers the question the tool of the call `call_id` asked and the run did not wait for
    /// (see [`crate::session::answer_elicitation`]); once nothing is left pending,
    /// [`continue_run`](Agent::continue_run) runs the call again, its questions answered from
    /// the session.
    pub async fn answer_elicitation(
        &self,
        call_id: &str,
        answer: crate::ElicitationAnswer,
    ) -> Result<(), AgentError> {
        let store = self.answer_store(call_id)?;
        let id = self.inner.recorder.session_id();
        crate::session::answer_elicitation(&*store, id, call_id, answer).await?;
        Ok(())
    }

    /// The store a deferred answer goes to; without one nothing waits.
    fn answer_store(
        &self,
        call_id: &str,
    ) -> Result<Arc<dyn crate::session::SessionStore>, AgentError> {
        self.inner.recorder.store().ok_or_else(|| {
            SessionError::NoPendingApproval {
                session: self.inner.recorder.session_id().to_string(),
                call: call_id.to_owned(),
                pending: Vec::new(),
            }
            .into()
        })
    }

    /// Puts every file that Write, Edit or NotebookEdit changed at or after message `to` (an
    /// index into [`messages`](Agent::messages)) back as it was before that message: its
    /// earlier content, or removed if the agent created it. A file changed by someone else
    /// since the agent last wrote it is left alone and reported in
    /// [`RewindReport::changed_outside`] ([`rewind_files_forced`](Agent::rewind_files_forced)
    /// overwrites it). The conversation is not changed.
    ///
    /// With a session store the checkpoints are stored, so this works after
    /// [`resume`](Agent::resume) for changes an earlier process made; without one they are
    /// kept in memory for the life of this agent. A [fork](Agent::fork) starts with none.
    /// Waits for a run in progress to end. Files are written back in place, not atomically.
    pub async fn rewind_files(&self, to: usize) -> Result<RewindReport, AgentError> {
        self.rewind(to, false).await
    }

    /// [`rewind_files`](Agent::rewind_files), also overwriting files changed outside the
    /// agent.
    pub async fn rewind_files_forced(&self, to: usize) -> Result<RewindReport, AgentError> {
        self.rewind(to, true).await
    }

    async fn rewind(&self, to: usize, force: bool) -> Result<RewindReport, AgentError> {
        // Held so that no run changes files meanwhile.
        let _messages = self.inner.messages.lock().await;
        Ok(self.inner.checkpoints.rewind(to, force).await?)
    }
}

/// The store `config` names, which resuming and forking need.
fn required_store(
    config: &AgentConfig,
    need: StoreNeed,
) -> Result<Arc<dyn SessionStore>, AgentError> {
    Ok(config
        .resolve_session_store()?
        .ok_or(ConfigError::NoSessionStore { need })?)
}
