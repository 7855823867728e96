//! How a call's permission question is asked and stored: through a `PermissionRequested`
//! event (or the app's handler), each question and answer recorded before the call goes on,
//! or deferred to the store when approvals are deferred.

use std::sync::Mutex;

use tokio::sync::oneshot;

use super::events::{AgentEvent, Emit, PermissionRequest};
use super::inner::AgentInner;
use super::recorder::Journal;
use super::step::Recorded;
use crate::model::ToolUse;
use crate::permission::{
    PermissionAnswer, PermissionHandler, PermissionQuestion, not_allowed_message,
};
use crate::session::{PendingApproval, Record, SessionError};
use crate::tool::BoxFuture;

/// Writes a call's record of `kind`, through `journal` when the call has one.
pub(super) async fn record(
    agent: &AgentInner,
    journal: Option<&Journal>,
    kind: Recorded,
    make: impl FnOnce() -> Record,
) -> Result<(), SessionError> {
    match journal {
        Some(journal) => journal.write(&agent.recorder, kind, make).await,
        None => agent.recorder.write(kind, make).await,
    }
}

/// Asks through a `PermissionRequested` event when the app set no handler; a request
/// nobody answers is refused, naming the rule that would allow the call.
pub(super) struct EventAsker<'a> {
    pub(super) call_id: &'a str,
    pub(super) emit: &'a Emit,
}

impl PermissionHandler for EventAsker<'_> {
    fn ask<'a>(&'a self, question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer> {
        let (answer, answered) = oneshot::channel();
        (self.emit)(AgentEvent::PermissionRequested(PermissionRequest {
            id: self.call_id.to_owned(),
            question: question.clone(),
            answer,
        }));
        Box::pin(async move {
            answered
                .await
                .unwrap_or_else(|_| PermissionAnswer::Deny(not_allowed_message(question)))
        })
    }
}

/// Stores each permission question and its answer around the app's handler. A question that
/// cannot be stored is refused (the call does not run) and the failure ends the run.
///
/// With `answer` (stored earlier, for a deferred question) it answers with it, storing
/// nothing. With `defer` it asks nobody: it stores the question as deferred, notes it in
/// `deferred` and refuses the call for now (that refusal is never stored nor sent).
pub(super) struct RecordingAsker<'a> {
    pub(super) agent: &'a AgentInner,
    pub(super) call: &'a ToolUse,
    pub(super) asker: &'a dyn PermissionHandler,
    pub(super) answer: Option<&'a PermissionAnswer>,
    /// Where the records go while the call's turn is not stored yet.
    pub(super) journal: Option<&'a Journal>,
    pub(super) defer: bool,
    pub(super) deferred: Mutex<Option<PendingApproval>>,
    pub(super) failure: Mutex<Option<SessionError>>,
}

impl RecordingAsker<'_> {
    fn refuse(&self, error: SessionError) -> PermissionAnswer {
        let answer = PermissionAnswer::Deny(format!(
            "this call did not run: the session could not be stored ({error})"
        ));
        let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        failure.get_or_insert(error);
        answer
    }
}

impl PermissionHandler for RecordingAsker<'_> {
    fn ask<'a>(&'a self, question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer> {
        Box::pin(async move {
            if let Some(answer) = self.answer {
                return answer.clone();
            }
            let asked = Record::PermissionAsked {
                id: self.call.id.clone(),
                tool: question.tool.clone(),
                title: question.prompt.title.clone(),
            };
            if let Err(error) =
                record(self.agent, self.journal, Recorded::Permission, || asked).await
            {
                return self.refuse(error);
            }
            if self.defer {
                let deferred = Record::ApprovalDeferred {
                    id: self.call.id.clone(),
                };
                if let Err(error) =
                    record(self.agent, self.journal, Recorded::Permission, || deferred).await
                {
                    return self.refuse(error);
                }
                let pending = PendingApproval {
                    call_id: self.call.id.clone(),
                    tool: question.tool.clone(),
                    title: question.prompt.title.clone(),
                    input: self.call.input.json_or_empty().into_owned(),
                };
                *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(pending);
                return PermissionAnswer::Deny("the approval was deferred".into());
            }
            let answer = self.asker.ask(question).await;
            let (allowed, always, message) = match &answer {
                PermissionAnswer::Allow => (true, false, None),
                PermissionAnswer::AllowAlways => (true, true, None),
                PermissionAnswer::Deny(message) => (false, false, Some(message.clone())),
            };
            let answered = Record::PermissionAnswered {
                id: self.call.id.clone(),
                allowed,
                always,
                message,
            };
            match record(self.agent, self.journal, Recorded::Permission, || answered).await {
                Ok(()) => answer,
                Err(error) => self.refuse(error),
            }
        })
    }
}
