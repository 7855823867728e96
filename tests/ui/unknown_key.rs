use tool_sdk::tool;

/// Reads a file.
#[tool(nmae = "Read", readonly)]
async fn read(file_path: String) -> String {
    file_path
}

fn main() {}
