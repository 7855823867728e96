//! Typed tool output: a `#[tool]` returning `Json<T>` declares `T`'s schema as its output
//! schema, returns the value as structured output beside its JSON text, and (in debug builds,
//! so here) has every output checked against the schema on the call pipeline.

use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};
use tool_sdk::agent::{Agent, AgentConfig};
use tool_sdk::model::{MessageContent, ScriptedModel, ScriptedTurn};
use tool_sdk::pipeline::CallPolicy;
use tool_sdk::{
    BoxFuture, ContentBlock, Json, JsonSchema, Tool, ToolContext, ToolError, ToolOutput,
    ToolRegistry, ToolResult, schemars, tool,
};

/// A city's weather.
#[derive(Serialize, JsonSchema)]
struct Weather {
    city: String,
    celsius: i32,
    /// Anything worth knowing.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// Looks up the weather; fails for an empty city.
#[tool(read_only, register = false)]
async fn weather(city: String) -> Result<Json<Weather>, ToolError> {
    if city.is_empty() {
        return Err(ToolError::invalid_input("name a city"));
    }
    Ok(Json(Weather {
        city,
        celsius: 21,
        note: None,
    }))
}

/// The squares up to `n`: a list, so its schema is wrapped in `{"result": ...}`.
#[tool(read_only, register = false)]
async fn squares(n: u32) -> Json<Vec<u32>> {
    Json((1..=n).map(|i| i * i).collect())
}

// `Json` renamed on import and hidden behind an alias: the macro probes the type, not its
// spelling.
use tool_sdk::Json as Typed;
type Reading = Typed<Weather>;

/// Reads the thermometer.
#[tool(read_only, register = false)]
async fn thermometer() -> Reading {
    Typed(Weather {
        city: "here".into(),
        celsius: 19,
        note: Some("indoors".into()),
    })
}

/// A serializable value without `Json`: JSON output, no schema.
#[tool(read_only, register = false)]
async fn untyped() -> Weather {
    Weather {
        city: "there".into(),
        celsius: 3,
        note: None,
    }
}

/// A type whose `Serialize` and `JsonSchema` disagree: the schema says integer, the value is
/// a string. The output check catches what the compiler cannot.
#[derive(Serialize, JsonSchema)]
struct Liar {
    #[schemars(with = "i64")]
    count: String,
}

/// Claims a number, returns a string.
#[tool(read_only, register = false)]
async fn liar() -> Json<Liar> {
    Json(Liar {
        count: "three".into(),
    })
}

/// A hand-written tool that declares an output schema and returns whatever the input says.
struct Declared {
    input: Value,
    output: Value,
}

impl Tool for Declared {
    fn name(&self) -> &str {
        "declared"
    }
    fn description(&self) -> &str {
        "Returns `value` as structured output (none when `value` is missing)."
    }
    fn input_schema(&self) -> &Value {
        &self.input
    }
    fn output_schema(&self) -> Option<&Value> {
        Some(&self.output)
    }
    fn call<'a>(&'a self, input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        Box::pin(async move {
            Ok(match input.get("value") {
                Some(value) => ToolOutput::json(value.clone()),
                None => ToolOutput::text("no structure"),
            })
        })
    }
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(WeatherTool)).unwrap();
    registry.register(Arc::new(SquaresTool)).unwrap();
    registry.register(Arc::new(ThermometerTool)).unwrap();
    registry.register(Arc::new(UntypedTool)).unwrap();
    registry.register(Arc::new(LiarTool)).unwrap();
    registry
        .register(Arc::new(Declared {
            input: json!({"type": "object", "properties": {"value": {}}}),
            output: json!({"type": "object", "properties": {"n": {"type": "integer"}},
                "required": ["n"]}),
        }))
        .unwrap();
    registry
}

#[test]
fn json_returns_declare_their_schema() {
    let schema = WeatherTool.output_schema().expect("an output schema");
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["celsius"]["type"], "integer");
    assert_eq!(
        schema["properties"]["note"]["description"],
        "Anything worth knowing."
    );
    assert_eq!(schema["required"], json!(["city", "celsius"]));
    // Built once, like the input schema.
    assert!(std::ptr::eq(schema, WeatherTool.output_schema().unwrap()));

    // Renamed and aliased: the same schema.
    assert_eq!(ThermometerTool.output_schema(), Some(schema));

    // Not an object: wrapped, `$defs` and all, so that MCP clients accept it.
    let squares = SquaresTool.output_schema().unwrap();
    assert_eq!(squares["type"], "object");
    assert_eq!(squares["required"], json!(["result"]));
    assert_eq!(squares["properties"]["result"]["type"], "array");

    // Without `Json`, no schema: plain JSON output as before.
    assert_eq!(UntypedTool.output_schema(), None);
}

#[tokio::test]
async fn a_json_result_is_text_for_the_model_and_structured_for_the_app() {
    let registry = registry();
    let ctx = ToolContext::default();
    let out = registry
        .call("weather", json!({"city": "Oslo"}), &ctx)
        .await;
    assert!(!out.is_error, "{out:?}");
    assert_eq!(out.to_text(), r#"{"city":"Oslo","celsius":21}"#);
    assert_eq!(out.structured, Some(json!({"city": "Oslo", "celsius": 21})));

    let out = registry.call("squares", json!({"n": 3}), &ctx).await;
    assert_eq!(out.to_text(), "[1,4,9]");
    assert_eq!(out.structured, Some(json!({"result": [1, 4, 9]})));

    // An error keeps its kind and carries no structure.
    let error = registry
        .execute("weather", json!({"city": ""}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error, ToolError::invalid_input("name a city"));
}

#[tokio::test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "the default policy checks outputs in debug builds"
)]
async fn an_output_that_breaks_its_schema_is_an_error_in_debug_builds() {
    let registry = registry();
    let ctx = ToolContext::default();

    let out = registry.call("liar", json!({}), &ctx).await;
    assert!(out.is_error, "{out:?}");
    let text = out.to_text();
    assert!(
        text.contains("the output of `liar` does not match its output schema"),
        "{text}"
    );
    assert!(text.contains("/count: must be integer"), "{text}");

    // A hand-written tool: held to the schema it declares.
    let out = registry
        .call("declared", json!({"value": {"n": 1}}), &ctx)
        .await;
    assert!(!out.is_error, "{out:?}");
    let out = registry
        .call("declared", json!({"value": {"n": "one", "m": 2}}), &ctx)
        .await;
    assert!(out.is_error, "{out:?}");
    assert!(out.to_text().contains("/n: must be integer"), "{out:?}");
    let out = registry.call("declared", json!({"value": {}}), &ctx).await;
    assert!(
        out.to_text().contains("must have required property 'n'"),
        "{out:?}"
    );
    let out = registry.call("declared", json!({}), &ctx).await;
    assert!(out.is_error, "{out:?}");
    assert!(
        out.to_text().contains("returned no structured output"),
        "{out:?}"
    );

    // Off (as in release builds): passed through as the tool made it.
    let unchecked = CallPolicy::new().with_output_check(false);
    let outcome = registry
        .call_with("liar", json!({}), &ctx, &unchecked)
        .await;
    assert!(!outcome.output.is_error, "{:?}", outcome.output);
    assert_eq!(outcome.output.structured, Some(json!({"count": "three"})));
}

#[tokio::test]
async fn the_agent_gives_the_model_the_json() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_call("weather", json!({"city": "Oslo"})),
        ScriptedTurn::text("It is 21 degrees in Oslo."),
    ]);
    let agent = Agent::create(
        AgentConfig::new()
            .with_model(model.clone())
            .with_registry(Arc::new(registry()))
            .with_tools(["weather"]),
    )
    .await
    .unwrap();
    let result = agent.prompt("Weather in Oslo?").await.unwrap();
    assert_eq!(result.text, "It is 21 degrees in Oslo.");

    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    let results: Vec<(&[ContentBlock], bool)> = requests[1]
        .messages
        .last()
        .unwrap()
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                content, is_error, ..
            } => Some((content.as_slice(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(
        results,
        [(
            &[ContentBlock::text(r#"{"city":"Oslo","celsius":21}"#)][..],
            false
        )]
    );
}
