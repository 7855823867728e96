use tool_sdk::tool;

struct Reader;

impl Reader {
    /// Reads a file.
    #[tool]
    async fn read(&self, file_path: String) -> String {
        file_path
    }
}

fn main() {}
