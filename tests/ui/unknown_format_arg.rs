use tool_sdk::tool;

/// Reads a file.
#[tool(title = "Read {fiel_path}", permission = "Allow {0}? {offset:?}")]
async fn read(file_path: String, offset: Option<u64>) -> String {
    format!("{file_path}{offset:?}")
}

fn main() {}
