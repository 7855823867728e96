//! How a call's permission question is asked and stored: through a `PermissionRequested`
//! event (or the app's handler), each question and answer recorded before the call goes on,
//! or deferred to the store when approvals are deferred; and the same for the questions tools
//! ask ([`CallElicitor`]).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::events::{AgentEvent, ElicitationRequest, Emit, PermissionRequest};
use super::inner::AgentInner;
use super::recorder::Journal;
use super::step::Recorded;
use crate::model::ToolUse;
use crate::permission::{
    PermissionAnswer, PermissionHandler, PermissionQuestion, not_allowed_message,
};
use crate::session::{PendingApproval, Record, SessionError};
use crate::tool::BoxFuture;
use crate::{Elicitation, ElicitationAnswer, Elicitor, ToolContext, ToolError};

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
    /// The question deferred (the call's permission question, or its tool's), and why a
    /// record could not be stored, if one could not.
    pub(super) fn finish(
        self,
        elicitor: &CallElicitor,
    ) -> (Option<PendingApproval>, Option<SessionError>) {
        let deferred = self
            .deferred
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        let failure = self.failure.into_inner().unwrap_or_else(|p| p.into_inner());
        (
            deferred.or_else(|| elicitor.take_deferred(self.call)),
            failure.or_else(|| elicitor.take_failure()),
        )
    }

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
                    elicitation: None,
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

/// Asks the app the questions a call's tool asks ([`crate::ToolContext::elicit`]): through the
/// app's elicitation handler, or an `ElicitationRequested` event. Each question and answer is
/// stored before the tool goes on. A call that runs again (its question was deferred) is given
/// its stored answers, in order, instead of asking; with `defer`, a question beyond them is
/// stored as deferred, noted in `deferred`, and the tool gets an error (the call's outcome is
/// then "deferred", whatever the tool made of it).
pub(super) struct CallElicitor {
    pub(super) agent: Arc<AgentInner>,
    /// The call's id and tool: not the whole call, whose input a question rarely needs (a
    /// deferred one gets it in `take_deferred`), and which every call would copy.
    pub(super) id: String,
    pub(super) tool: String,
    pub(super) emit: Emit,
    pub(super) journal: Option<Arc<Journal>>,
    pub(super) defer: bool,
    pub(super) replies: Mutex<VecDeque<ElicitationAnswer>>,
    /// The question deferred, if one was.
    pub(super) deferred: Mutex<Option<Elicitation>>,
    pub(super) failure: Mutex<Option<SessionError>>,
}

impl CallElicitor {
    /// The elicitor of `call`, given `replies` (stored answers, when it runs again).
    pub(super) fn for_call(
        agent: &Arc<AgentInner>,
        call: &ToolUse,
        emit: &Emit,
        journal: Option<&Arc<Journal>>,
        replies: Option<&Vec<ElicitationAnswer>>,
    ) -> Arc<Self> {
        let permissions = &agent.config.permissions;
        Arc::new(CallElicitor {
            agent: agent.clone(),
            id: call.id.clone(),
            tool: call.name.clone(),
            emit: emit.clone(),
            journal: journal.cloned(),
            defer: agent.config.session.defer_approvals
                && permissions.elicitation_handler.is_none(),
            replies: Mutex::new(replies.cloned().unwrap_or_default().into()),
            deferred: Mutex::new(None),
            failure: Mutex::new(None),
        })
    }

    /// Stores `make`'s record; a failure is kept for the call's outcome (it ends the run).
    async fn store(&self, make: impl FnOnce() -> Record) -> Result<(), ToolError> {
        let journal = self.journal.as_deref();
        record(&self.agent, journal, Recorded::Permission, make)
            .await
            .map_err(|error| {
                let message = format!("the question could not be stored ({error})");
                let mut failure = self.failure.lock().unwrap_or_else(|p| p.into_inner());
                failure.get_or_insert(error);
                ToolError::failed(message)
            })
    }

    /// The question deferred, if one was, as the pending approval of `call` (this one's).
    pub(super) fn take_deferred(&self, call: &ToolUse) -> Option<PendingApproval> {
        let question = self
            .deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()?;
        Some(PendingApproval {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            title: question.message().to_owned(),
            input: call.input.json_or_empty().into_owned(),
            elicitation: Some(question),
        })
    }

    /// Why a question or answer could not be stored, if one could not.
    pub(super) fn take_failure(&self) -> Option<SessionError> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// Asks the app: its handler, or an event (dropped unanswered: cancelled).
    async fn ask_app(
        &self,
        question: &Elicitation,
        ctx: &ToolContext,
    ) -> Result<ElicitationAnswer, ToolError> {
        if let Some(handler) = &self.agent.config.permissions.elicitation_handler {
            return handler.elicit(question, ctx).await;
        }
        let (answer, answered) = oneshot::channel();
        (self.emit)(AgentEvent::ElicitationRequested(ElicitationRequest {
            id: self.id.clone(),
            tool: self.tool.clone(),
            question: question.clone(),
            answer,
        }));
        Ok(answered.await.unwrap_or(ElicitationAnswer::Cancel))
    }
}

impl Elicitor for CallElicitor {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        Box::pin(async move {
            let replay = self
                .replies
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop_front();
            if let Some(answer) = replay {
                return Ok(answer);
            }
            let deferred = || {
                ToolError::failed(
                    "this question waits for the user's answer: the call runs again once it \
                     is given",
                )
            };
            if self
                .deferred
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
            {
                return Err(deferred());
            }
            let id = &self.id;
            self.store(|| Record::ElicitationAsked {
                id: id.clone(),
                question: question.clone(),
            })
            .await?;
            if self.defer {
                self.store(|| Record::ApprovalDeferred { id: id.clone() })
                    .await?;
                *self.deferred.lock().unwrap_or_else(|p| p.into_inner()) = Some(question.clone());
                return Err(deferred());
            }
            let answer = self.ask_app(question, ctx).await?;
            self.store(|| Record::ElicitationAnswered {
                id: id.clone(),
                answer: answer.clone(),
            })
            .await?;
            Ok(answer)
        })
    }
}
