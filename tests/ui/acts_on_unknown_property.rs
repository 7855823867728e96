use tool_sdk::tool;

/// Writes a file.
#[tool(acts_on(writes = "path"))]
async fn save(file_path: String) -> String {
    file_path
}

/// Runs a command.
#[tool(acts_on(shell))]
async fn run(command: String) -> String {
    command
}

fn main() {}
