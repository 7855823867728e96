//! The questions a call may wait for: a permission question (the gate would ask), or its
//! tool's own (`ToolContext::elicit`). Both are stored in the session and wait in the server,
//! holding no process, for a person's answer.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;
use temporalio_sdk::activities::ActivityError;
use tool_sdk::Tool;
use tool_sdk::model::{MessageContent, ToolInput, ToolUse};
use tool_sdk::permission::{
    CallFacts, PermissionAnswer, PermissionHandler, PermissionPreview, PermissionQuestion, Rule,
};
use tool_sdk::session::{Record, SessionStore};
use tool_sdk::{
    BoxFuture, ContentBlock, Elicitation, ElicitationAnswer, Elicitor, ToolContext, ToolError,
};

use crate::activities::{AgentActivities, retry};
use crate::payloads::{CallDone, CallInput};
use crate::records::{find_call, has};

impl AgentActivities {
    /// What the gate says of `call` before it starts: it runs (approved by a person, now or
    /// "always" earlier in the session, or not a question at all), or how it ended (it waits
    /// for an answer, with its question stored; or it was refused).
    pub(crate) async fn permission(
        &self,
        records: &[Record],
        call: &ToolUse,
        input: &CallInput,
    ) -> Result<Permission, ActivityError> {
        let (store, session) = (&*self.store, input.session_id.as_str());
        // The answer to its tool's question (stored by the client) only wakes the call.
        let answer = input.answer.as_ref().filter(|answer| !answer.elicitation);
        if let Some(answer) = answer {
            let mut add = Vec::with_capacity(2);
            if !has(records, &call.id, |record| {
                matches!(record, Record::PermissionAnswered { .. })
            }) {
                add.push(Record::PermissionAnswered {
                    id: call.id.clone(),
                    allowed: answer.allow,
                    always: answer.allow && answer.always,
                    message: answer.message.clone(),
                });
            }
            if !answer.allow {
                let message = answer.message.as_deref().unwrap_or(REFUSED_MESSAGE);
                add.push(Record::ToolResult {
                    block: MessageContent::ToolResult {
                        tool_use_id: call.id.clone(),
                        content: vec![ContentBlock::text(message)],
                        is_error: true,
                    },
                });
            }
            store.append_all(session, &add).await.map_err(retry)?;
            let refused = CallDone {
                is_error: true,
                ran: true,
                waiting: false,
                not_started: false,
            };
            return Ok(match answer.allow {
                true => Permission::Approved,
                false => Permission::Ended(refused),
            });
        }
        let Some(tool) = self.effects.registry().get(&call.name) else {
            return Ok(Permission::Unasked);
        };
        let input_value = match &call.input {
            ToolInput::Parsed(value) => value,
            ToolInput::Malformed { .. } => return Ok(Permission::Unasked),
        };
        let (gate, mode) = (self.effects.gate(), self.effects.permission_mode());
        let dir = self.effects.working_dir();
        if gate.preview(&*tool, input_value, dir, mode) != PermissionPreview::Asks {
            return Ok(Permission::Unasked);
        }
        // Allowed before: the call runs again (its tool asked a question, or its worker died
        // before it started).
        let allowed = records.iter().any(|record| {
            matches!(record, Record::PermissionAnswered { id, allowed: true, .. } if *id == call.id)
        });
        if allowed {
            return Ok(Permission::Approved);
        }
        if self.allowed_always(records, &*tool, input_value) {
            return Ok(Permission::Approved);
        }
        if !has(records, &call.id, |record| {
            matches!(record, Record::PermissionAsked { .. })
        }) {
            let asked = [
                Record::PermissionAsked {
                    id: call.id.clone(),
                    tool: call.name.clone(),
                    title: tool.permission_prompt(input_value).title,
                },
                Record::ApprovalDeferred {
                    id: call.id.clone(),
                },
            ];
            store.append_all(session, &asked).await.map_err(retry)?;
            self.effects.permission_prompt(&call.name).await;
        }
        Ok(Permission::Ended(CallDone {
            is_error: false,
            ran: false,
            waiting: true,
            not_started: false,
        }))
    }

    /// Whether a person answered "allow always" to an earlier call of the session whose
    /// rule (the one the question suggested) covers this one: the rules a session remembers
    /// are in its records, so any worker knows them.
    fn allowed_always(&self, records: &[Record], tool: &dyn Tool, input: &Value) -> bool {
        let dir = self.effects.working_dir();
        let facts = CallFacts::for_tool(tool, input, dir);
        records.iter().any(|record| {
            let Record::PermissionAnswered {
                id, always: true, ..
            } = record
            else {
                return false;
            };
            let Some(earlier) = find_call(records, id) else {
                return false;
            };
            let (Some(earlier_tool), Some(earlier_input)) = (
                self.effects.registry().get(&earlier.name),
                earlier.input.parsed(),
            ) else {
                return false;
            };
            let rule = Rule::for_call(&CallFacts::for_tool(&*earlier_tool, earlier_input, dir));
            rule.matches(&facts, input, dir)
        })
    }
}

/// A call's tool's questions ([`tool_sdk::ToolContext::elicit`]) on Temporal: answered from
/// the session's `ElicitationAnswered` records, in order (a call that runs again after its
/// question was answered); a question beyond them is stored with `ApprovalDeferred`, as an
/// agent with deferred approvals stores it, and the tool gets an error: the call waits in the
/// server, holding no process, for `RunHandle::answer_elicitation`.
pub(crate) struct StoredElicitor {
    store: Arc<dyn SessionStore>,
    session: String,
    call: ToolUse,
    replies: Mutex<VecDeque<ElicitationAnswer>>,
    /// The question an earlier attempt stored that is still unanswered: not stored twice.
    unanswered: bool,
    deferred: AtomicBool,
    failure: Mutex<Option<String>>,
}

impl StoredElicitor {
    pub(crate) fn new(
        store: &Arc<dyn SessionStore>,
        session: &str,
        call: &ToolUse,
        records: &[Record],
    ) -> Self {
        let mut replies = VecDeque::new();
        let mut unanswered = false;
        for record in records {
            match record {
                Record::ElicitationAsked { id, .. } if *id == call.id => unanswered = true,
                Record::ElicitationAnswered { id, answer } if *id == call.id => {
                    replies.push_back(answer.clone());
                    unanswered = false;
                }
                _ => {}
            }
        }
        StoredElicitor {
            store: store.clone(),
            session: session.to_owned(),
            call: call.clone(),
            replies: Mutex::new(replies),
            unanswered,
            deferred: AtomicBool::new(false),
            failure: Mutex::new(None),
        }
    }

    pub(crate) fn deferred(&self) -> bool {
        self.deferred.load(Ordering::SeqCst)
    }

    pub(crate) fn take_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

impl Elicitor for StoredElicitor {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        _ctx: &'a ToolContext,
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
            let waits = || {
                ToolError::failed(
                    "this question waits for the user's answer: the call runs again once it \
                     is given",
                )
            };
            if self.deferred.swap(true, Ordering::SeqCst) || self.unanswered {
                return Err(waits());
            }
            let id = self.call.id.clone();
            let asked = [
                Record::ElicitationAsked {
                    id: id.clone(),
                    question: question.clone(),
                },
                Record::ApprovalDeferred { id },
            ];
            if let Err(error) = self.store.append_all(&self.session, &asked).await {
                let message = format!("the question could not be stored ({error})");
                *self.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(message.clone());
                return Err(ToolError::failed(message));
            }
            Err(waits())
        })
    }
}

/// What the permission check before a call decided.
pub(crate) enum Permission {
    /// It runs with no question (the gate would not ask).
    Unasked,
    /// It runs: a person allowed it, or allowed such calls always in this session.
    Approved,
    /// It does not run now.
    Ended(CallDone),
}

/// What the model is told of a call a person refused without a message.
const REFUSED_MESSAGE: &str = "the user refused this call";

/// The gate's questions during a call: answered by the approval the call was given (the gate
/// was previewed before the call started, so a question without one came from a hook).
pub(crate) struct Answered(pub(crate) bool);

impl PermissionHandler for Answered {
    fn ask<'a>(&'a self, _question: &'a PermissionQuestion) -> BoxFuture<'a, PermissionAnswer> {
        let answer = match self.0 {
            true => PermissionAnswer::Allow,
            false => PermissionAnswer::Deny("no approval was given for this call".to_owned()),
        };
        Box::pin(std::future::ready(answer))
    }
}
