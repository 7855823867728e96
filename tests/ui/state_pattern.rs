use tool_sdk::{State, tool};

/// Reads app state.
#[tool]
async fn read(
    State(ref by_ref): State<String>,
    State((a, b)): State<(u8, u8)>,
    _: State<u8>,
) -> String {
    format!("{by_ref}{a}{b}")
}

fn main() {}
