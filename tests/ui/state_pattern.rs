use tool_sdk::{State, tool};

type Shared = State<u8>;

/// Reads app state.
#[tool]
async fn read(
    State(ref by_ref): State<String>,
    State((a, b)): State<(u8, u8)>,
    State(aliased): Shared,
    _: State<u8>,
) -> String {
    format!("{by_ref}{a}{b}{aliased}")
}

fn main() {}
