use tool_sdk::tool;

/// A struct.
#[tool]
struct Read {
    file_path: String,
}

fn main() {}
