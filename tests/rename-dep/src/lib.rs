//! `tool-sdk` renamed to `my_sdk` in Cargo.toml: `#[tool]` must still find its runtime.
//! And no dependency on schemars: the SDK's re-export is enough to derive `JsonSchema`.

use my_sdk::{JsonSchema, ToolError, schemars, tool};

/// Adds two numbers.
#[tool(read_only, title = "{a} + {b}")]
pub async fn add(a: i64, b: i64) -> Result<i64, ToolError> {
    a.checked_add(b)
        .ok_or_else(|| ToolError::invalid_input("the sum overflows"))
}

/// A stop on a trip.
#[derive(serde::Deserialize, JsonSchema)]
pub struct Stop {
    /// The place.
    pub name: String,
}

/// A trip.
#[derive(serde::Deserialize, JsonSchema)]
pub struct Trip {
    /// Where to stop, in order.
    pub stops: Vec<Stop>,
    /// How many nights in all.
    pub nights: Option<u32>,
}

/// Plans a trip.
#[tool(register = false)]
pub async fn plan(#[input] trip: Trip) -> String {
    let names: Vec<&str> = trip.stops.iter().map(|stop| stop.name.as_str()).collect();
    format!(
        "{} for {} nights",
        names.join(" > "),
        trip.nights.unwrap_or(0)
    )
}

/// Visits a stop.
#[tool(register = false)]
pub async fn visit(stop: Stop, nights: Option<u32>) -> String {
    format!("{} x{}", stop.name, nights.unwrap_or(1))
}

/// How long a trip is.
#[derive(serde::Serialize, JsonSchema)]
pub struct Length {
    /// Nights in all.
    pub nights: u32,
}

/// Measures a trip: typed output, through the renamed crate.
#[tool(register = false)]
pub async fn measure(#[input] trip: Trip) -> my_sdk::Json<Length> {
    my_sdk::Json(Length {
        nights: trip.nights.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use my_sdk::{Tool, ToolContext, ToolRegistry};

    #[tokio::test]
    async fn generated_paths_follow_the_renamed_dependency() {
        let ctx = ToolContext::default();
        let out = AddTool
            .call(serde_json::json!({"a": 2, "b": 40}), &ctx)
            .await
            .unwrap();
        assert_eq!(out.to_text(), "42");
        assert_eq!(
            AddTool.display_title(&serde_json::json!({"a": 1, "b": 2})),
            "1 + 2"
        );
        assert!(ToolRegistry::global().unwrap().contains("add"));
    }

    #[tokio::test]
    async fn json_schema_derives_through_the_sdk_re_export() {
        let ctx = ToolContext::default();
        let schema = PlanTool.input_schema();
        assert_eq!(schema["required"], serde_json::json!(["stops"]), "{schema}");
        assert_eq!(
            schema["$defs"]["Stop"]["properties"]["name"]["description"],
            "The place."
        );
        let input = serde_json::json!({"stops": [{"name": "A"}, {"name": "B"}], "nights": 3});
        let out = PlanTool.call(input, &ctx).await.unwrap();
        assert_eq!(out.to_text(), "A > B for 3 nights");

        let schema = VisitTool.input_schema();
        assert_eq!(schema["required"], serde_json::json!(["stop"]), "{schema}");
        let input = serde_json::json!({"stop": {"name": "C"}});
        let out = VisitTool.call(input, &ctx).await.unwrap();
        assert_eq!(out.to_text(), "C x1");

        let schema = MeasureTool.output_schema().unwrap();
        assert_eq!(
            schema["properties"]["nights"]["description"],
            "Nights in all."
        );
        let input = serde_json::json!({"stops": [], "nights": 2});
        let out = MeasureTool.call(input, &ctx).await.unwrap();
        assert_eq!(out.structured, Some(serde_json::json!({"nights": 2})));
    }
}
