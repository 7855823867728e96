use tool_sdk::tool;

// Every mistake at once: not async, a bad name, a borrowed argument, an unknown title arg.
#[tool(name = "no spaces", title = "{nope}")]
fn read(file_path: &str) -> String {
    file_path.to_owned()
}

fn main() {
    // The fn is still emitted, so this call type-checks and adds no error of its own.
    let _ = read("x");
}
