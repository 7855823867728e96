use tool_sdk::tool;

/// Reads a file.
#[tool]
async fn read(file_path: &str, lines: &Vec<u32>) -> String {
    format!("{file_path}{lines:?}")
}

fn main() {}
