use crate::permission::{ModeState, PermissionMode};
use tool_sdk_core::{ToolContext, ToolError, tool};

/// Presents your plan to the user and, once they approve it, leaves plan mode so you can start
/// working. Use it only in plan mode, only when the task needs code changes, and only once the
/// plan is complete: concrete steps, the files to change, how you will check the result. Do not
/// use it for research-only tasks, and do not ask "is this plan okay?" in text instead.
#[tool(
    name = "ExitPlanMode",
    acts_on(agent_state),
    category = "builtin",
    title = "Present the plan"
)]
pub async fn exit_plan_mode(
    /// The plan, in markdown, concise and complete.
    plan: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    if plan.trim().is_empty() {
        return Err(ToolError::invalid_input("the plan is empty"));
    }
    let mode = ctx.session::<ModeState>();
    if mode.get() != PermissionMode::Plan {
        return Err(ToolError::invalid_input(
            "plan mode is not on, so there is nothing to exit: just carry on with the task",
        ));
    }
    // Getting here means the permission layer let the call through: the user approved.
    mode.set(PermissionMode::Default);
    Ok(
        "The user approved your plan and plan mode is off. Start working on it now, \
        tracking the steps with TodoWrite if there are several."
            .to_owned(),
    )
}
