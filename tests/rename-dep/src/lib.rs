//! `tool-sdk` renamed to `my_sdk` in Cargo.toml: `#[tool]` must still find its runtime.

use my_sdk::{ToolError, tool};

/// Adds two numbers.
#[tool(read_only, title = "{a} + {b}")]
pub async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
    a.checked_add(b)
        .ok_or_else(|| ToolError::invalid_input("the sum overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use my_sdk::{Tool, ToolContext, ToolRegistry};

    #[tokio::test]
    async fn generated_paths_follow_the_renamed_dependency() {
        let ctx = ToolContext::default();
        let out = AddTool
            .call(serde_json::json!({"a": 2, "b": 40}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.to_text(), "42");
        assert_eq!(
            AddTool.display_title(&serde_json::json!({"a": 1, "b": 2})),
            "1 + 2"
        );
        assert!(ToolRegistry::global().unwrap().contains("add"));
    }
}
