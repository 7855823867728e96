use std::borrow::Cow;
use tool_sdk::tool;

/// Echoes text.
#[tool]
async fn echo(text: Cow<'static, str>, other: Cow<'_, str>) -> String {
    format!("{text}{other}")
}

fn main() {}
