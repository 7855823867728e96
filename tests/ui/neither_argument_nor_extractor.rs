use tool_sdk::tool;

/// Neither data the model could send nor something the context provides.
struct Db;

/// Looks something up.
#[tool]
async fn lookup(key: String, db: Db) -> String {
    let _ = db;
    key
}

fn main() {}
