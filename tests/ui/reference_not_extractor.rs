use tool_sdk::tool;

/// Not an extractor.
struct Db;

/// Looks something up.
#[tool]
async fn lookup(key: String, db: &Db) -> String {
    let _ = db;
    key
}

fn main() {}
