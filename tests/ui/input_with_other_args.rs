use tool_sdk::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    file_path: String,
}

/// Reads a file.
#[tool]
async fn read(#[input] args: Args, offset: u64) -> String {
    format!("{}{offset}", args.file_path)
}

fn main() {}
