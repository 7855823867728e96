//! A served call's questions ([`ToolContext::elicit`]): the client's `elicitation/create`, or
//! from protocol 2026-07-28 an `InputRequiredResult` and a retry (SEP-2322).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ErrorData, InputRequest, InputRequiredResult,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::task_manager::{TaskContext, TaskExit};
use serde_json::Value;

use crate::{Elicitation, ElicitationAnswer, Elicitor, ToolContext, ToolError};

/// Asks a call's questions ([`ToolContext::elicit`]) of the MCP client, form or URL mode, if
/// it declared it can: with `elicitation/create` before protocol 2026-07-28, and from then on
/// (which forbids requests to the client) in an `InputRequiredResult` (`rounds`).
pub(super) struct PeerElicitor {
    peer: Peer<RoleServer>,
    /// The client's name, for errors.
    client: String,
    /// The modes it declared: form, URL.
    modes: (bool, bool),
    /// On 2026-07-28 and later: the answers given so far, the question to send back.
    rounds: Option<Mutex<Rounds>>,
    /// In a task: its input requests, and how many questions were asked.
    task: Option<(TaskContext, AtomicUsize)>,
}

/// A call's questions on protocol 2026-07-28 and later (SEP-2322's multi round-trip): the
/// first question beyond the answers the client sent back ends the call with an
/// `InputRequiredResult`, and the client calls again with its answer; the call runs again
/// from the start and is given the answers in order. The answers so far travel in
/// `requestState` as plain JSON: they are the client's own answers, trusted no more than any
/// answer it gives.
#[derive(Default)]
pub(super) struct Rounds {
    replies: std::collections::VecDeque<ElicitationAnswer>,
    answered: Vec<ElicitationAnswer>,
    asked: Option<ElicitRequestParams>,
}

impl Rounds {
    /// The answers a retried call brings: those of `requestState`, then the one to the
    /// question asked last.
    pub(super) fn of(request: &CallToolRequestParams) -> Result<Self, ErrorData> {
        let invalid = |what: String| ErrorData::invalid_params(what, None);
        let mut replies: std::collections::VecDeque<ElicitationAnswer> =
            match &request.request_state {
                None => Default::default(),
                Some(state) => serde_json::from_str(state).map_err(|error| {
                    invalid(format!(
                        "requestState is not one this server sent ({error}): send it back as \
                         it came"
                    ))
                })?,
            };
        let key = question_key(replies.len());
        if let Some(response) = request.input_responses.as_ref().and_then(|r| r.get(&key)) {
            let result: ElicitResult = serde_json::from_value(response.clone()).map_err(|e| {
                invalid(format!(
                    "inputResponses.{key} is not an elicitation result: {e}"
                ))
            })?;
            replies.push_back(answer_of(result));
        }
        Ok(Rounds {
            replies,
            ..Rounds::default()
        })
    }

    /// The `InputRequiredResult` for the question asked, if the call asked one it had no
    /// answer for.
    fn input_required(self) -> Option<InputRequiredResult> {
        let asked = self.asked?;
        let key = question_key(self.answered.len());
        let requests = [(key, InputRequest::Elicitation(ElicitRequest::new(asked)))];
        let state = serde_json::to_string(&self.answered).unwrap_or_else(|_| "[]".into());
        Some(InputRequiredResult::new(
            Some(requests.into_iter().collect()),
            Some(state),
        ))
    }
}

/// The `inputRequests` key of a call's `n`th question (0-based).
fn question_key(n: usize) -> String {
    format!("elicitation-{n}")
}

/// An MCP elicitation result as an answer.
fn answer_of(result: ElicitResult) -> ElicitationAnswer {
    match result.action {
        ElicitationAction::Accept => ElicitationAnswer::Accept {
            content: result.content.unwrap_or(Value::Null),
        },
        ElicitationAction::Decline => ElicitationAnswer::Decline,
        _ => ElicitationAnswer::Cancel,
    }
}

impl PeerElicitor {
    pub(super) fn new(context: &RequestContext<RoleServer>, rounds: Option<Rounds>) -> Self {
        let declared = context.client_capabilities().and_then(|c| c.elicitation);
        let modes = match &declared {
            None => (false, false),
            // Neither said: form, as before modes existed.
            Some(e) => (e.form.is_some() || e.url.is_none(), e.url.is_some()),
        };
        let client = context
            .client_info()
            .map(|info| format!("`{}`", info.name))
            .unwrap_or_else(|| "the MCP client".to_owned());
        PeerElicitor {
            peer: context.peer.clone(),
            client,
            modes,
            rounds: rounds.map(Mutex::new),
            task: None,
        }
    }

    /// Asks in `task`'s input requests instead (`tasks/get` shows them, `tasks/update`
    /// answers them).
    pub(super) fn in_task(mut self, task: TaskContext) -> Self {
        self.rounds = None;
        self.task = Some((task, AtomicUsize::new(0)));
        self
    }

    /// The request for `question`, or why the client cannot be asked it.
    fn params(&self, question: &Elicitation) -> Result<ElicitRequestParams, ToolError> {
        let (declared, params) = match question {
            Elicitation::Form { message, schema } => {
                let schema = serde_json::from_value(schema.clone()).map_err(|error| {
                    ToolError::invalid_input(format!(
                        "the form cannot be sent over MCP ({error}): {schema}"
                    ))
                })?;
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: message.clone(),
                    requested_schema: schema,
                };
                (self.modes.0.then_some("elicitation"), params)
            }
            Elicitation::Url { message, url, id } => {
                let params = ElicitRequestParams::UrlElicitationParams {
                    meta: None,
                    message: message.clone(),
                    url: url.clone(),
                    elicitation_id: id.clone(),
                };
                (self.modes.1.then_some("URL-mode elicitation"), params)
            }
        };
        if declared.is_none() {
            let mode = match question {
                Elicitation::Url { .. } => "URL-mode elicitation",
                Elicitation::Form { .. } => "elicitation",
            };
            return Err(ToolError::failed(format!(
                "this tool asks its user a question, and {} cannot pass it on: it did not \
                 declare the {mode} capability. Use a client that supports it",
                self.client
            )));
        }
        Ok(params)
    }

    /// The question the call asked and has no answer for yet, when its answer comes in a
    /// retry (protocol 2026-07-28 and later).
    pub(super) fn input_required(&self) -> Option<InputRequiredResult> {
        let mut rounds = self
            .rounds
            .as_ref()?
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *rounds).input_required()
    }
}

impl Elicitor for PeerElicitor {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        ctx: &'a ToolContext,
    ) -> crate::BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        Box::pin(async move {
            let params = self.params(question)?;
            if let Some((task, asked)) = &self.task {
                let key = question_key(asked.fetch_add(1, Ordering::SeqCst));
                let request = InputRequest::Elicitation(ElicitRequest::new(params));
                let reply = match task.request_input(key, request).await {
                    Ok(reply) => reply,
                    Err(TaskExit::Cancelled) => return Err(ToolError::Cancelled),
                    Err(TaskExit::Error(error)) => {
                        return Err(ToolError::failed(error.message.into_owned()));
                    }
                };
                let reply: ElicitResult = serde_json::from_value(reply).map_err(|error| {
                    ToolError::failed(format!(
                        "the client's answer is not an elicitation result: {error}"
                    ))
                })?;
                return Ok(answer_of(reply));
            }
            if let Some(rounds) = &self.rounds {
                let mut rounds = rounds.lock().unwrap_or_else(|p| p.into_inner());
                if rounds.asked.is_none()
                    && let Some(answer) = rounds.replies.pop_front()
                {
                    rounds.answered.push(answer.clone());
                    return Ok(answer);
                }
                rounds.asked.get_or_insert(params);
                return Err(ToolError::failed(
                    "this question goes back to the client: the call runs again with its answer",
                ));
            }
            let asked = tokio::select! {
                answer = self.peer.create_elicitation(params) => answer,
                () = ctx.cancellation().cancelled() => {
                    return Err(ToolError::failed("the call was cancelled while it asked"));
                }
            };
            let answer = asked.map_err(|error| {
                ToolError::failed(format!(
                    "the MCP client did not answer the question: {error}"
                ))
            })?;
            Ok(answer_of(answer))
        })
    }
}
