use tool_sdk::{tool, ToolContext};

/// Reads a file.
#[tool]
async fn read(file_path: String, ctx: &ToolContext, again: &ToolContext) -> String {
    format!("{file_path}{}{}", ctx.tool_call_id(), again.tool_call_id())
}

fn main() {}
