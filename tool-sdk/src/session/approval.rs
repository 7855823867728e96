//! Permission answers a run did not wait for, stored for any process to give.

use serde::{Deserialize, Serialize};

use super::{Record, SessionError, SessionStore, restore};
use crate::permission::PermissionAnswer;

/// A tool call waiting for a permission answer that the run did not wait for (see
/// [`with_deferred_approvals`](crate::agent::SessionSettings::with_deferred_approvals)).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PendingApproval {
    /// The tool_use id: give it to [`answer_approval`].
    pub call_id: String,
    /// The tool.
    pub tool: String,
    /// The question's title, as it would have been shown to the user.
    pub title: String,
    /// The input the model sent.
    pub input: serde_json::Value,
    /// `Some`: the call ran, and waits for the user's answer to this question its tool asked
    /// ([`ToolContext::elicit`](crate::ToolContext::elicit)): give it with
    /// [`answer_elicitation`]. `None`: the call waits for permission to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<crate::Elicitation>,
}

/// The calls of the session `id` waiting for a permission answer, in call order: those the
/// run stopped for and nobody answered yet. Computed from the stored records, so any process
/// with the store can ask.
pub async fn pending_approvals(
    store: &dyn SessionStore,
    id: &str,
) -> Result<Vec<PendingApproval>, SessionError> {
    Ok(restore(&store.load(id).await?).pending)
}

/// Answers the approval the call `call_id` of the session `id` waits for, storing it as a
/// [`Record::PermissionAnswered`]: [`PermissionAnswer::Allow`] (or `AllowAlways`) lets the
/// call run when the run continues, [`PermissionAnswer::Deny`] answers it with the message as
/// an error result. The run goes on with
/// [`Agent::continue_run`](crate::agent::Agent::continue_run) once nothing is pending.
///
/// A call id that is not waiting is a [`SessionError::NoPendingApproval`], and nothing is
/// stored. Two processes answering the same call at once may both store an answer; the first
/// stored counts.
pub async fn answer_approval(
    store: &dyn SessionStore,
    id: &str,
    call_id: &str,
    answer: PermissionAnswer,
) -> Result<(), SessionError> {
    waiting(store, id, call_id, false).await?;
    let (allowed, always, message) = match answer {
        PermissionAnswer::Allow => (true, false, None),
        PermissionAnswer::AllowAlways => (true, true, None),
        PermissionAnswer::Deny(message) => (false, false, Some(message)),
    };
    store
        .append(
            id,
            &Record::PermissionAnswered {
                id: call_id.to_owned(),
                allowed,
                always,
                message,
            },
        )
        .await
}

/// Answers the question the tool of the call `call_id` of the session `id` asked
/// ([`ToolContext::elicit`](crate::ToolContext::elicit)) and the run did not wait for, storing
/// it as a [`Record::ElicitationAnswered`]: when the run continues
/// ([`Agent::continue_run`](crate::agent::Agent::continue_run)), the call runs again from the
/// start and its questions are answered from the session, this one with `answer`.
///
/// A call id that is not waiting for such an answer is a [`SessionError::NoPendingApproval`],
/// and nothing is stored.
pub async fn answer_elicitation(
    store: &dyn SessionStore,
    id: &str,
    call_id: &str,
    answer: crate::ElicitationAnswer,
) -> Result<(), SessionError> {
    waiting(store, id, call_id, true).await?;
    let record = Record::ElicitationAnswered {
        id: call_id.to_owned(),
        answer,
    };
    store.append(id, &record).await
}

/// Checks that the call `call_id` of the session `id` waits for an answer: to its tool's
/// question (`elicitation`) or for permission.
async fn waiting(
    store: &dyn SessionStore,
    id: &str,
    call_id: &str,
    elicitation: bool,
) -> Result<(), SessionError> {
    let pending = pending_approvals(store, id).await?;
    let kind = |p: &PendingApproval| p.elicitation.is_some() == elicitation;
    if pending.iter().any(|p| p.call_id == call_id && kind(p)) {
        return Ok(());
    }
    Err(SessionError::NoPendingApproval {
        session: id.to_owned(),
        call: call_id.to_owned(),
        pending: pending
            .into_iter()
            .filter(kind)
            .map(|p| p.call_id)
            .collect(),
    })
}
