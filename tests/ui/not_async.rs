use tool_sdk::tool;

/// Reads a file.
#[tool]
fn read(file_path: String) -> String {
    file_path
}

fn main() {}
