use tool_sdk::tool;

#[derive(Debug)]
struct Oops;

/// Opens a file.
#[tool]
async fn open(file_path: String) -> Result<String, Oops> {
    Ok(file_path)
}

fn main() {}
