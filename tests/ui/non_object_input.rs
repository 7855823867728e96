use tool_sdk::tool;

/// Reads files.
#[tool]
async fn read(#[input] paths: Vec<String>) -> String {
    paths.join(",")
}

fn main() {}
