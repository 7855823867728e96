use tool_sdk::tool;

/// Reads a file.
#[tool(name = "Read", name = "Open")]
async fn read(file_path: String) -> String {
    file_path
}

fn main() {}
