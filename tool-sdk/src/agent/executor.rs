//! Running one turn's tool calls: each through the checked pipeline, consecutive read-only
//! calls together, results in tool_use order, exactly one result per call whatever happens.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::events::{AgentEvent, PermissionRequest};
use super::{AgentInner, Emit};
use crate::model::{MessageContent, ToolInput, ToolUse};
use crate::permission::bash::{Classification, Decision, classify};
use crate::permission::{
    HookDecision, ModeState, PermissionAnswer, PermissionMode, PermissionQuestion, Rule,
    RuleVerdict, bash_commands_for_allow, bash_commands_for_deny,
};
use crate::{ContentBlock, Tool, ToolContext, ToolError, ToolOutput};

/// The one mutating tool plan mode lets through: it is how the plan gets approved.
const EXIT_PLAN_MODE: &str = "ExitPlanMode";
/// The shell tool, whose commands the classifier judges.
const BASH: &str = "Bash";
/// The tools `AcceptEdits` lets through.
const EDIT_TOOLS: &[&str] = &["Write", "Edit", "MultiEdit", "NotebookEdit"];

/// One call's result block, and its error line for the run result.
pub(crate) struct Outcome {
    pub(crate) block: MessageContent,
    pub(crate) error: Option<String>,
}

pub(crate) async fn execute(
    agent: &Arc<AgentInner>,
    calls: &[ToolUse],
    emit: &Emit,
    cancel: &CancellationToken,
) -> Vec<Outcome> {
    let mut outcomes = Vec::with_capacity(calls.len());
    let mut index = 0;
    while index < calls.len() {
        // A run of read-only calls goes together; anything else goes alone.
        let end = if runs_concurrently(agent, &calls[index]) {
            index
                + calls[index..]
                    .iter()
                    .take_while(|call| runs_concurrently(agent, call))
                    .count()
        } else {
            index + 1
        };
        let batch = &calls[index..end];
        let limit = agent.config.max_concurrent_tools.max(1);
        // Futures built up front: a closure inside the stream combinator would trip the
        // compiler's higher-ranked lifetime check for `Send`.
        let calls: Vec<_> = batch
            .iter()
            .map(|call| run_call(agent, call, emit, cancel))
            .collect();
        let mut results: Vec<Outcome> =
            futures::stream::iter(calls).buffered(limit).collect().await;
        outcomes.append(&mut results);
        index = end;
    }
    outcomes
}

/// Read-only tools, and calls that will not run at all (unknown tool, bad JSON).
fn runs_concurrently(agent: &AgentInner, call: &ToolUse) -> bool {
    call.input.is_malformed()
        || agent
            .registry
            .get(&call.name)
            .is_none_or(|tool| tool.is_read_only())
}

async fn run_call(
    agent: &Arc<AgentInner>,
    call: &ToolUse,
    emit: &Emit,
    cancel: &CancellationToken,
) -> Outcome {
    let started = Instant::now();
    let span = tracing::info_span!("agent.tool", tool = %call.name, id = %call.id);
    let tool = agent.registry.get(&call.name);
    let title = tool
        .as_ref()
        .and_then(|tool| {
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                tool.display_title(&call.input.json_or_empty())
            }))
            .ok()
        })
        .unwrap_or_else(|| call.name.clone());
    emit(AgentEvent::ToolRequested {
        id: call.id.clone(),
        name: call.name.clone(),
        input: call.input.json_or_empty().into_owned(),
        title,
    });

    let pipeline = AssertUnwindSafe(checked_call(agent, tool.as_deref(), call, emit, cancel))
        .catch_unwind()
        .instrument(span);
    let result = match pipeline.await {
        Ok(result) => result,
        Err(panic) => Err(ToolError::failed(format!(
            "the tool panicked: {}",
            panic_message(panic.as_ref())
        ))),
    };
    let duration = started.elapsed();
    let failed = result.as_ref().map_or(true, |(output, _)| output.is_error);
    agent.registry.record_call(&call.name, duration, failed);

    match result {
        Ok((output, input)) => {
            let output = cap(output, agent.config.max_result_chars);
            let display = tool
                .as_ref()
                .and_then(|tool| {
                    std::panic::catch_unwind(AssertUnwindSafe(|| {
                        tool.result_display(&input, &output)
                    }))
                    .ok()
                })
                .unwrap_or_else(|| crate::ResultDisplay {
                    title: call.name.clone(),
                    summary: String::new(),
                    content: Value::String(output.to_text().into_owned()),
                });
            let error = output
                .is_error
                .then(|| format!("{}: {}", call.name, output.to_text()));
            let block = result_block(&call.id, &output);
            emit(AgentEvent::ToolCompleted {
                id: call.id.clone(),
                name: call.name.clone(),
                duration,
                output,
                display,
            });
            Outcome { block, error }
        }
        Err(error) => {
            let output = ToolOutput::from(error.clone());
            let block = result_block(&call.id, &output);
            emit(AgentEvent::ToolFailed {
                id: call.id.clone(),
                name: call.name.clone(),
                duration,
                kind: error.kind(),
                output,
            });
            Outcome {
                block,
                error: Some(format!("{}: {error}", call.name)),
            }
        }
    }
}

/// Look up, parse, validate, the tool's own check, permission, run with timeout and
/// cancellation. Returns the output and the input it ran with.
async fn checked_call(
    agent: &Arc<AgentInner>,
    tool: Option<&dyn Tool>,
    call: &ToolUse,
    emit: &Emit,
    cancel: &CancellationToken,
) -> Result<(ToolOutput, Value), ToolError> {
    if cancel.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    let Some(tool) = tool else {
        return Err(ToolError::not_found(format!(
            "there is no tool named `{}`; the available tools are: {}",
            call.name,
            agent
                .specs()
                .iter()
                .map(|spec| spec.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let input = match &call.input {
        ToolInput::Parsed(input) => input,
        ToolInput::Malformed { raw, .. } => {
            let shown: String = raw.chars().take(500).collect();
            return Err(ToolError::invalid_input(format!(
                "the arguments are not a JSON object: {shown}\nSend a JSON object that matches \
                 this schema: {}",
                tool.input_schema()
            )));
        }
    };
    let mut input = agent.registry.validate(&call.name, input.clone())?;
    let ctx = agent.tool_context(&call.id, emit, cancel);
    tool.validate_input(&input, &ctx).await?;
    permit(agent, tool, &mut input, &ctx, &call.id, emit, cancel).await?;
    let limit = timeout_for(agent, tool);
    let run = tool.call(input.clone(), &ctx);
    // Dropping `run` on timeout or cancellation stops the tool; commands it started with
    // `ctx.command(..)` are killed with it.
    let output = tokio::select! {
        _ = cancel.cancelled() => return Err(ToolError::Cancelled),
        finished = tokio::time::timeout(limit, run) => match finished {
            Ok(result) => result?,
            Err(_) => return Err(ToolError::Timeout(limit)),
        },
    };
    for hook in &agent.config.post_hooks {
        hook.after(tool.name(), &input, &output, &ctx).await;
    }
    Ok((output, input))
}

/// The permission chain; see [`crate::permission`]. May rewrite `input` (hooks).
async fn permit(
    agent: &Arc<AgentInner>,
    tool: &dyn Tool,
    input: &mut Value,
    ctx: &ToolContext,
    call_id: &str,
    emit: &Emit,
    cancel: &CancellationToken,
) -> Result<(), ToolError> {
    let name = tool.name();
    let rules = &agent.config.permissions;
    let working_dir = ctx.working_dir();
    let denied = |input: &Value| {
        if let Some(rule) = rules.deny_for(name, input, working_dir, &bash_commands_for_deny) {
            return Some(ToolError::permission_denied(format!(
                "the rule `{rule}` forbids this call"
            )));
        }
        // Forbidden shell commands are refused whatever rules, hooks or modes say.
        let verdict = shell_verdict(name, input)?;
        (verdict.decision == Decision::Deny)
            .then(|| ToolError::permission_denied(format!("refused: {}", verdict.reason)))
    };
    if let Some(error) = denied(input) {
        return Err(error);
    }

    for hook in &agent.config.pre_hooks {
        match hook.check(tool, input, ctx).await {
            HookDecision::Continue => {}
            HookDecision::Allow => return Ok(()),
            HookDecision::Deny(reason) => return Err(ToolError::permission_denied(reason)),
            HookDecision::Rewrite(rewritten) => {
                // A rewritten input is checked like the model's own.
                *input = agent.registry.validate(name, rewritten)?;
                tool.validate_input(input, ctx).await?;
                if let Some(error) = denied(input) {
                    return Err(error);
                }
            }
        }
    }

    match ctx.session::<ModeState>().get() {
        PermissionMode::Plan if !tool.is_read_only() && name != EXIT_PLAN_MODE => {
            return Err(ToolError::permission_denied(format!(
                "plan mode is on: only read-only tools run until the user approves a plan. \
                 Finish researching, then present your plan with {EXIT_PLAN_MODE}"
            )));
        }
        PermissionMode::BypassPermissions => return Ok(()),
        PermissionMode::AcceptEdits if EDIT_TOOLS.contains(&name) => return Ok(()),
        _ => {}
    }

    let remembered = agent
        .remembered
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let must_ask = match rules.verdict(name, input, working_dir, &bash_commands_for_allow) {
        RuleVerdict::Deny(rule) => {
            return Err(ToolError::permission_denied(format!(
                "the rule `{rule}` forbids this call"
            )));
        }
        RuleVerdict::Ask(_) => true,
        RuleVerdict::Allow(_) => return Ok(()),
        RuleVerdict::None
            if remembered
                .iter()
                .any(|rule| rule.matches(name, input, working_dir, &bash_commands_for_allow)) =>
        {
            return Ok(());
        }
        // A shell command the classifier vouches for runs; any other asks.
        RuleVerdict::None => match shell_verdict(name, input) {
            Some(verdict) => verdict.decision != Decision::Allow,
            None => !tool.is_read_only(),
        },
    };
    if !must_ask {
        return Ok(());
    }

    let question = PermissionQuestion {
        tool: name.to_owned(),
        input: input.clone(),
        prompt: tool.permission_prompt(input),
        suggested_rule: Rule::for_call(name, input),
    };
    let answer = match &agent.config.permission_handler {
        Some(handler) => {
            tokio::select! {
                _ = cancel.cancelled() => return Err(ToolError::Cancelled),
                answer = handler.ask(&question) => answer,
            }
        }
        None => {
            let (answer, answered) = oneshot::channel();
            emit(AgentEvent::PermissionRequested(PermissionRequest {
                id: call_id.to_owned(),
                question: question.clone(),
                answer,
            }));
            tokio::select! {
                _ = cancel.cancelled() => return Err(ToolError::Cancelled),
                answer = answered => answer.unwrap_or_else(|_| {
                    PermissionAnswer::Deny(not_allowed_message(&question))
                }),
            }
        }
    };
    match answer {
        PermissionAnswer::Allow => Ok(()),
        PermissionAnswer::AllowAlways => {
            agent
                .remembered
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(question.suggested_rule);
            Ok(())
        }
        PermissionAnswer::Deny(reason) => Err(ToolError::permission_denied(reason)),
    }
}

/// What the model is told when no one could be asked.
pub(crate) fn not_allowed_message(question: &PermissionQuestion) -> String {
    format!(
        "`{}` needs the user's permission and no one could be asked. The app can allow it \
         with the rule `{}` (or run in another permission mode)",
        question.tool, question.suggested_rule
    )
}

/// The classifier's verdict on a Bash call, `None` for other tools.
fn shell_verdict(tool: &str, input: &Value) -> Option<Classification> {
    (tool == BASH).then(|| classify(input["command"].as_str().unwrap_or_default()))
}

fn timeout_for(agent: &AgentInner, tool: &dyn Tool) -> Duration {
    let default = Duration::from_secs(agent.config.tool_timeout_secs.max(1));
    let max = Duration::from_secs(agent.config.max_tool_timeout_secs.max(1));
    tool.timeout().unwrap_or(default).min(max)
}

fn result_block(id: &str, output: &ToolOutput) -> MessageContent {
    MessageContent::ToolResult {
        tool_use_id: id.to_owned(),
        content: output.content.clone(),
        is_error: output.is_error,
    }
}

/// Keeps the head and tail of long text blocks, saying how much was cut.
pub(crate) fn cap(mut output: ToolOutput, max_chars: usize) -> ToolOutput {
    for block in &mut output.content {
        let ContentBlock::Text { text } = block else {
            continue;
        };
        let total = text.chars().count();
        if total <= max_chars {
            continue;
        }
        let keep = max_chars / 2;
        let head: String = text.chars().take(keep).collect();
        let tail: String = text.chars().skip(total - keep).collect();
        let cut = total - 2 * keep;
        *text = format!(
            "{head}\n\n[... {cut} characters cut: the result was {total} characters, the limit \
             is {max_chars} ...]\n\n{tail}"
        );
    }
    output
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail() {
        let text: String = ('a'..='z').cycle().take(1000).collect();
        let capped = cap(ToolOutput::text(text.clone()), 100);
        let capped = capped.to_text();
        assert!(capped.starts_with(&text[..50]));
        assert!(capped.ends_with(&text[950..]));
        assert!(capped.contains("900 characters cut"), "{capped}");
        let short = cap(ToolOutput::text("short"), 100);
        assert_eq!(short.to_text(), "short");
    }
}
