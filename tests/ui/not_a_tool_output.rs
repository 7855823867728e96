use tool_sdk::tool;

struct Handle;

/// Opens a file.
#[tool]
async fn open(file_path: String) -> Result<Handle, String> {
    let _ = file_path;
    Ok(Handle)
}

fn main() {}
