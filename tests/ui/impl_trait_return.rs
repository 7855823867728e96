use tool_sdk::tool;

/// Opens a file.
#[tool]
async fn open(file_path: String) -> impl std::fmt::Display {
    file_path
}

fn main() {}
