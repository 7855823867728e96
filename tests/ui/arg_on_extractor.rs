use tool_sdk::{State, tool};

/// Reads app state.
#[tool]
async fn read(#[arg(rename = "n")] count: State<u8>) -> String {
    count.0.to_string()
}

fn main() {}
