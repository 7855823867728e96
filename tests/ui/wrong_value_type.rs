use tool_sdk::tool;

/// Reads a file.
#[tool(read_only = "yes", name = 5, validate = "not a path")]
async fn read(file_path: String) -> String {
    file_path
}

fn main() {}
