use tool_sdk::tool;

/// Reads a file.
#[tool(timeout = "30 seconds")]
async fn read(file_path: String) -> String {
    file_path
}

/// Never runs.
#[tool(timeout = "0s")]
async fn never() -> String {
    String::new()
}

fn main() {}
