use tool_sdk::tool;

/// Prints a value.
#[tool]
async fn show(value: impl std::fmt::Display) -> String {
    value.to_string()
}

fn main() {}
