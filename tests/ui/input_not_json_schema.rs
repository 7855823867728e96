use tool_sdk::tool;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
}

/// Moves to a point.
#[tool]
async fn go(#[input] to: Point) -> String {
    format!("{}", to.x)
}

fn main() {}
