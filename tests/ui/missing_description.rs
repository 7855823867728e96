use tool_sdk::tool;

#[tool]
async fn read(file_path: String) -> String {
    file_path
}

fn main() {}
