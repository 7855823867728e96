use tool_sdk::tool;

/// Deletes a file.
#[tool(read_only, destructive)]
async fn delete(file_path: String) -> String {
    file_path
}

fn main() {}
