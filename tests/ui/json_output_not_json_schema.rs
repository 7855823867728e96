use tool_sdk::{Json, ToolError, tool};

#[derive(serde::Serialize)]
struct Weather {
    celsius: i32,
}

/// Returns typed output whose type has no schema.
#[tool]
async fn weather() -> Result<Json<Weather>, ToolError> {
    Ok(Json(Weather { celsius: 21 }))
}

fn main() {}
