use tool_sdk::tool;

/// Adds a pair.
#[tool]
async fn add((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}
