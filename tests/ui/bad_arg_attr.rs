use tool_sdk::tool;

/// Reads a file.
#[tool]
async fn read(#[arg(defualt = 5)] limit: u64, #[arg(rename = "x")] #[arg(default)] other: u64) -> u64 {
    limit + other
}

fn main() {}
