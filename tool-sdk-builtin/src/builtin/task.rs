use tool_sdk_core::{SubagentRequest, ToolContext, ToolError, tool};

/// Launches a sub-agent to handle a complex, multi-step task on its own, with its own context
/// and tools, and returns its final report.
///
/// Use it for open-ended searches or work that would take many tool calls. The sub-agent sees
/// none of this conversation: put everything it needs into `prompt`, and say exactly what it
/// should report back. Independent tasks can be launched in parallel.
// `read_only`: delegating changes nothing by itself (every call the sub-agent makes passes
// the permission chain on its own), and independent tasks should run side by side.
// `timeout`: a sub-agent takes many steps; the tools' default of two minutes would cut most
// short. The policy's maximum (ten minutes unless the app raises it) still applies.
#[tool(
    name = "Task",
    category = "builtin",
    read_only,
    timeout = "30m",
    title = "Task: {description}"
)]
pub async fn task(
    /// A short (3-5 word) description of the task.
    description: String,
    /// The task for the sub-agent to perform, in full.
    prompt: String,
    /// The kind of sub-agent to use (default: general-purpose).
    subagent_type: Option<String>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let runner = ctx.subagents().ok_or_else(|| {
        ToolError::failed("the Task tool only works inside an agent, which runs the sub-agent")
    })?;
    let report = runner
        .run(
            SubagentRequest {
                description,
                prompt,
                subagent_type,
            },
            ctx,
        )
        .await?;
    let mut text = report.summary;
    text.push_str(&format!(
        "\n\n[sub-agent: {} tool call(s)",
        report.tool_calls
    ));
    if !report.files_modified.is_empty() {
        let files: Vec<String> = report
            .files_modified
            .iter()
            .map(|path| path.display().to_string())
            .collect();
        text.push_str(&format!("; files modified: {}", files.join(", ")));
    }
    if !report.errors.is_empty() {
        text.push_str(&format!("; errors: {}", report.errors.join(" | ")));
    }
    text.push(']');
    Ok(text)
}
