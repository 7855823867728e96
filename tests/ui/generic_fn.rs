use tool_sdk::tool;

/// Echoes a value.
#[tool]
async fn echo<T: Into<String>>(value: String) -> String {
    value
}

fn main() {}
