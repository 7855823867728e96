use tool_sdk::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    file_path: String,
}

/// Reads a file.
#[tool(title = "Read {path}")]
async fn read(#[input] args: Args) -> String {
    args.file_path
}

fn main() {}
