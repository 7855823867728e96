use tool_sdk::tool;

#[derive(schemars::JsonSchema)]
struct Point {
    x: f64,
}

/// Moves to a point.
#[tool]
async fn go(to: Point) -> String {
    format!("{}", to.x)
}

fn main() {}
