//! Servers' questions for the user: `elicitation/create` during a call, an
//! `InputRequiredResult` (2026-07-28) or a -32042 error in its answer. Each is asked through
//! the elicitor of the calling tool's context, as the tool's own question would be.

use std::collections::{HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, DEFAULT_MRTR_MAX_ROUNDS,
    ElicitRequestParams, ElicitResult, ElicitationAction, ErrorData, InputRequest, InputRequests,
    InputResponses, ServerResult,
};
use rmcp::service::Peer;
use rmcp::{RoleClient, ServiceError};
use serde_json::Value;

use super::ClientInner;
use crate::tool::{Elicitation, ElicitationAnswer, ToolContext, ToolError, ToolOutput, ToolResult};

impl ClientInner {
    /// Makes the call `params` until the server answers it with a result or an error (not
    /// with questions for the user, which are asked and the call made again, a few rounds at
    /// most). `Err` is the call's result already: a page the user did not open, too many
    /// rounds, a failure to send.
    pub(super) async fn send_in_rounds(
        self: &Arc<Self>,
        peer: &Peer<RoleClient>,
        mut params: CallToolRequestParams,
        ctx: &ToolContext,
        stderr: &Arc<Mutex<VecDeque<String>>>,
    ) -> Result<Result<ServerResult, ServiceError>, ToolResult> {
        let seq = self.calls.fetch_add(1, Ordering::SeqCst);
        // A server may ask the user in its answer: from 2026-07-28 in an
        // `InputRequiredResult`, before that (pages to open first) with a -32042 error. The
        // user is asked and the call made again, a few rounds at most.
        let mut rounds = 0;
        loop {
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params.clone()));
            let response = self
                .send(peer, request, ctx, seq, stderr)
                .await
                .map_err(Err)?;
            let input = match response {
                Ok(ServerResult::InputRequiredResult(input)) => input,
                Err(ServiceError::McpError(error)) if error.code.0 == URL_ELICITATION_REQUIRED => {
                    match pages_to_open(&error) {
                        Some(pages) if rounds < DEFAULT_MRTR_MAX_ROUNDS => {
                            rounds += 1;
                            if let Some(refused) = self.open_pages(ctx, pages).await {
                                return Err(Ok(refused));
                            }
                            continue;
                        }
                        _ => break Ok(Err(ServiceError::McpError(error))),
                    }
                }
                other => break Ok(other),
            };
            rounds += 1;
            if rounds > DEFAULT_MRTR_MAX_ROUNDS {
                return Err(Err(ToolError::failed(format!(
                    "MCP server `{}` asked for input {DEFAULT_MRTR_MAX_ROUNDS} times in one \
                     call; the call is given up",
                    self.name
                ))));
            }
            let requests = input.input_requests.unwrap_or_default();
            let responses = self
                .answer_requests(ctx, requests, &mut HashSet::new())
                .await?;
            params.input_responses = Some(responses);
            params.request_state = input.request_state;
        }
    }

    /// Asks the user the server's questions not asked before (`answered`, by key): a task's,
    /// or those of a call's input-required result.
    pub(super) async fn answer_requests(
        &self,
        ctx: &ToolContext,
        requests: InputRequests,
        answered: &mut HashSet<String>,
    ) -> Result<InputResponses, ToolResult> {
        let mut responses = InputResponses::new();
        for (key, request) in requests {
            if answered.contains(&key) {
                continue;
            }
            let InputRequest::Elicitation(request) = request else {
                return Err(Err(ToolError::failed(format!(
                    "MCP server `{}` asked for input this client does not give (only \
                     elicitation is supported): {key}",
                    self.name
                ))));
            };
            let answer = ask_through(ctx, request.params).await;
            responses.insert(
                key.clone(),
                serde_json::to_value(answer).unwrap_or_default(),
            );
            answered.insert(key);
        }
        Ok(responses)
    }

    /// Asks the user to open each of `pages` (a -32042 error's); the call is made again
    /// when they all were, else its result says which was not.
    async fn open_pages(
        &self,
        ctx: &ToolContext,
        pages: Vec<ElicitRequestParams>,
    ) -> Option<ToolOutput> {
        for page in pages {
            let url = match &page {
                ElicitRequestParams::UrlElicitationParams { url, .. } => url.clone(),
                _ => String::new(),
            };
            let answer = ask_through(ctx, page).await;
            if answer.action != ElicitationAction::Accept {
                return Some(ToolOutput::error(format!(
                    "MCP server `{}` needs the user to open {url} first, and they did not",
                    self.name
                )));
            }
        }
        None
    }

    /// Asks the user a server's `elicitation/create`, through the latest of this client's
    /// calls in flight that can ask (the request does not say which call it is for: a server
    /// asks during the call that needs the answer). With none, the question is cancelled.
    pub(super) async fn ask_user(&self, request: ElicitRequestParams) -> ElicitResult {
        let asking = self
            .lock_progress()
            .values()
            .filter(|call| call.ctx.elicitor().is_some())
            .max_by_key(|call| call.seq)
            .map(|call| call.ctx.clone());
        match asking {
            Some(ctx) => ask_through(&ctx, request).await,
            None => {
                tracing::warn!(
                    server = %self.name,
                    "an MCP server asked the user a question outside a call that can ask; \
                     it is cancelled"
                );
                ElicitResult::new(ElicitationAction::Cancel)
            }
        }
    }
}

/// The JSON-RPC error code of "open these pages first" (URL elicitation required).
const URL_ELICITATION_REQUIRED: i32 = -32042;

/// The pages a -32042 error asks the user to open (its `data.elicitations`), if it names any.
fn pages_to_open(error: &ErrorData) -> Option<Vec<ElicitRequestParams>> {
    let elicitations = error.data.as_ref()?.get("elicitations")?.clone();
    let pages: Vec<ElicitRequestParams> = serde_json::from_value(elicitations).ok()?;
    (!pages.is_empty()).then_some(pages)
}

/// A server's elicitation as our question; `None` for a mode this client does not know.
fn question_of(request: ElicitRequestParams) -> Option<Elicitation> {
    match request {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => Some(Elicitation::Form {
            message,
            schema: serde_json::to_value(requested_schema).unwrap_or_default(),
        }),
        ElicitRequestParams::UrlElicitationParams {
            message,
            url,
            elicitation_id,
            ..
        } => Some(Elicitation::Url {
            message,
            url,
            id: elicitation_id,
        }),
        _ => None,
    }
}

/// Fills the fields the user left out with the form's defaults (SEP-1034).
fn with_defaults(schema: &Value, values: &mut serde_json::Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default")
            && !values.contains_key(name)
        {
            values.insert(name.clone(), default.clone());
        }
    }
}

/// Asks `request` through the elicitor of the call `ctx` (an agent's app, or the client of
/// the MCP server this tool is served from). A call that cannot ask, an unknown mode, or a
/// question that could not be asked (deferred, say) is answered "cancel".
pub(super) async fn ask_through(ctx: &ToolContext, request: ElicitRequestParams) -> ElicitResult {
    let cancel = || ElicitResult::new(ElicitationAction::Cancel);
    let Some(question) = question_of(request) else {
        return cancel();
    };
    match ctx.ask_user(&question).await {
        Ok(ElicitationAnswer::Accept { mut content }) => {
            let accepted = ElicitResult::new(ElicitationAction::Accept);
            if let (Elicitation::Form { schema, .. }, Value::Object(values)) =
                (&question, &mut content)
            {
                with_defaults(schema, values);
            }
            match content {
                Value::Null => accepted,
                content => accepted.with_content(content),
            }
        }
        Ok(ElicitationAnswer::Decline) => ElicitResult::new(ElicitationAction::Decline),
        Ok(ElicitationAnswer::Cancel) => cancel(),
        Err(error) => {
            tracing::info!(%error, "a server's question was not answered");
            cancel()
        }
    }
}
