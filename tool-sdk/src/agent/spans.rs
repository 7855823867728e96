//! The agent's spans, named and filled after OpenTelemetry's semantic conventions for
//! generative AI ([`crate::telemetry`] lists them). The `otel.*` fields name the
//! OpenTelemetry span and set its kind and status (tracing-opentelemetry's convention); any
//! other subscriber shows them as fields.

use tracing::Span;
use tracing::field::Empty;

use super::error::AgentError;
use super::events::RunResult;
use super::inner::AgentInner;
use crate::AgentId;
use crate::model::{ModelError, ModelRequest, ModelResponse, StopReason, ToolUse, Usage};
pub(crate) use crate::telemetry::end_tool;
use crate::telemetry::failed;

/// A run: `invoke_agent {name}`, a child of the span current where the run starts (the Task
/// call's span, for a sub-agent).
pub(crate) fn invoke_agent(agent: &AgentInner) -> Span {
    let name = agent.config.name.as_deref();
    let span_name = match name {
        Some(name) => format!("invoke_agent {name}"),
        None => "invoke_agent".to_owned(),
    };
    let id = match &agent.agent_id {
        AgentId::Main => "main",
        AgentId::Sub(id) => id,
    };
    tracing::info_span!(
        "invoke_agent",
        otel.name = span_name.as_str(),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "invoke_agent",
        gen_ai.provider.name = agent.model.provider_name(),
        gen_ai.agent.name = name,
        gen_ai.agent.id = id,
        gen_ai.conversation.id = &**agent.recorder.session_id(),
        gen_ai.request.model = agent.model.model_id(),
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        error.type = Empty,
    )
}

/// The run's totals and, if it failed, why.
pub(crate) fn end_run(span: &Span, result: &RunResult) {
    span.record("gen_ai.usage.input_tokens", all_input(&result.usage));
    span.record(
        "gen_ai.usage.output_tokens",
        int(result.usage.output_tokens),
    );
    match &result.error {
        // Waiting for answers is not a failure: the run goes on with `continue_run`.
        None | Some(AgentError::ApprovalsPending(_)) => {}
        Some(error) => failed(span, &agent_error_type(error), &error.to_string()),
    }
}

/// One model turn: `chat {model}`.
pub(crate) fn chat(agent: &AgentInner, request: &ModelRequest) -> Span {
    let model = agent.model.model_id();
    tracing::info_span!(
        "chat",
        otel.name = format!("chat {model}").as_str(),
        otel.kind = "client",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "chat",
        gen_ai.provider.name = agent.model.provider_name(),
        gen_ai.request.model = model,
        gen_ai.request.max_tokens = i64::from(request.max_tokens),
        gen_ai.request.temperature = request.temperature.map(f64::from),
        gen_ai.response.finish_reasons = Empty,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        error.type = Empty,
    )
}

/// What the turn used and why it stopped, or why it failed.
pub(crate) fn end_chat(span: &Span, response: &Result<ModelResponse, AgentError>) {
    // Nobody listens (no subscriber, or one that filters the span out): nothing to record.
    if span.is_disabled() {
        return;
    }
    let response = match response {
        Ok(response) => response,
        Err(error) => return failed(span, &agent_error_type(error), &error.to_string()),
    };
    // Which model answered, when the agent's model is several (a fallback served the turn).
    if let Some(model) = &response.model {
        span.record("gen_ai.response.model", model.as_str());
    }
    let usage = &response.usage;
    span.record("gen_ai.usage.input_tokens", all_input(usage));
    span.record("gen_ai.usage.output_tokens", int(usage.output_tokens));
    span.record(
        "gen_ai.usage.cache_read.input_tokens",
        int(usage.cache_read_input_tokens),
    );
    span.record(
        "gen_ai.usage.cache_creation.input_tokens",
        int(usage.cache_creation_input_tokens),
    );
    let reason = finish_reason(&response.stop_reason);
    // The conventions want an array of strings, which `tracing` fields cannot hold: set on
    // the OpenTelemetry span directly when there is one, a plain field otherwise.
    #[cfg(feature = "otel")]
    {
        use tracing_opentelemetry::OpenTelemetrySpanExt;
        span.set_attribute(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(
                vec![opentelemetry::StringValue::from(reason.to_owned())].into(),
            ),
        );
    }
    #[cfg(not(feature = "otel"))]
    span.record("gen_ai.response.finish_reasons", reason);
}

/// One tool call: `execute_tool {name}`.
pub(crate) fn execute_tool(call: &ToolUse) -> Span {
    tracing::info_span!(
        "execute_tool",
        otel.name = format!("execute_tool {}", call.name).as_str(),
        otel.kind = "internal",
        otel.status_code = Empty,
        otel.status_description = Empty,
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = call.name.as_str(),
        gen_ai.tool.call.id = call.id.as_str(),
        gen_ai.tool.type = "function",
        error.type = Empty,
    )
}

/// A call that did not run because its start could not be stored.
pub(crate) fn end_tool_unstored(span: &Span, message: &str) {
    failed(span, "session_store", message);
}

/// Input tokens with the cached ones, as the conventions count them.
fn all_input(usage: &Usage) -> i64 {
    int(usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens)
}

/// A count as an OpenTelemetry int (i64): tracing-opentelemetry records a `u64` as a
/// string.
fn int(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn finish_reason(reason: &StopReason) -> &str {
    match reason {
        StopReason::EndTurn => "end_turn",
        StopReason::ToolUse => "tool_use",
        StopReason::MaxTokens => "max_tokens",
        StopReason::StopSequence => "stop_sequence",
        StopReason::Refusal => "refusal",
        StopReason::Other(other) => other,
    }
}

/// A low-cardinality name for `error.type`: the HTTP status of a provider's error, or the
/// kind of failure.
fn agent_error_type(error: &AgentError) -> String {
    match error {
        AgentError::Model(error) => match error {
            ModelError::RateLimited { .. } => "rate_limited".into(),
            ModelError::Overloaded { .. } => "overloaded".into(),
            ModelError::Server { status, .. } | ModelError::Api { status, .. } => {
                status.to_string()
            }
            ModelError::Transport { .. } => "transport".into(),
            ModelError::Stream { .. } => "stream".into(),
            ModelError::MissingApiKey(_) => "missing_api_key".into(),
            ModelError::PromptTooLong { .. } => "prompt_too_long".into(),
            ModelError::AllModelsFailed { .. } => "all_models_failed".into(),
            _ => "model".into(),
        },
        AgentError::Config(_) => "config".into(),
        AgentError::Registry(_) => "registry".into(),
        AgentError::MissingState { .. } => "missing_state".into(),
        AgentError::MaxTurns(_) => "max_turns".into(),
        AgentError::PromptBlocked(_) => "prompt_blocked".into(),
        AgentError::Cancelled => "cancelled".into(),
        AgentError::BudgetExceeded { .. } => "budget_exceeded".into(),
        AgentError::TokenLimitExceeded { .. } => "token_limit_exceeded".into(),
        AgentError::Session(_) => "session_store".into(),
        AgentError::ApprovalsPending(_) => "approvals_pending".into(),
        AgentError::OutputInvalid { .. } => "output_invalid".into(),
        AgentError::ContinueFirst => "continue_first".into(),
        AgentError::NothingToContinue => "nothing_to_continue".into(),
        AgentError::NoTypedAnswer => "no_typed_answer".into(),
        AgentError::AnswerType { .. } => "answer_type".into(),
        #[cfg(feature = "mcp-client")]
        AgentError::Mcp(_) => "mcp".into(),
    }
}
