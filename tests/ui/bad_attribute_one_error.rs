use std::sync::Arc;

use tool_sdk::{Tool, ToolContext, ToolRegistry, tool};

/// Reads a file.
#[tool(timeout = "soon")]
async fn read(file_path: String) -> String {
    file_path
}

// Uses of the tool struct: with a wrong attribute they must add no errors of their own.
async fn uses() {
    let tool: Arc<dyn Tool> = Arc::new(ReadTool);
    let registry = ToolRegistry::new();
    registry.register(tool).unwrap();
    let _ = ReadTool.call(serde_json::json!({}), &ToolContext::default()).await;
    let _ = ReadTool::default().name();
    let _ = read("x".into()).await;
}

fn main() {
    let _ = uses();
}
