//! One `#[tool]`'s schema lowered for every provider, each checked everywhere for what that
//! provider demands: nested structs, enums, `Vec`, `Option` and maps included.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use tool_sdk::schema::Provider;
use tool_sdk::{Tool, ToolContext, ToolRegistry, build_tools, tool};

/// A postal address.
#[derive(Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Address {
    street: String,
    /// Post code, if known.
    zip: Option<String>,
}

/// How to deliver.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)]
enum Speed {
    Standard,
    Express,
}

/// A payment, with data per variant.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(dead_code)]
enum Payment {
    Card { last4: String },
    Invoice { days: u32 },
}

/// Ships a parcel.
#[tool(register = false)]
async fn ship(
    /// Where to.
    to: Address,
    /// Extra stops on the way.
    via: Vec<Address>,
    speed: Speed,
    payment: Option<Payment>,
    /// Free-form labels.
    labels: HashMap<String, String>,
    /// Parcel weight in grams.
    weight: Option<u32>,
    #[arg(default = 1)] copies: u32,
) -> String {
    let _ = (speed, payment);
    format!(
        "{} via {} stop(s), {} label(s), {}g x{copies}",
        to.street,
        via.len(),
        labels.len(),
        weight.unwrap_or(0)
    )
}

/// Every subschema of `schema`, the root included, with its JSON pointer.
fn walk<'a>(schema: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.clone(), schema));
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                walk(value, format!("{path}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                walk(value, format!("{path}/{index}"), out);
            }
        }
        _ => {}
    }
}

fn all_nodes(schema: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    walk(schema, String::new(), &mut out);
    out
}

/// Object schemas that describe a struct (maps use `additionalProperties` as a schema).
fn is_struct_schema(node: &Value) -> bool {
    node.get("properties").is_some_and(Value::is_object)
}

fn admits_null(node: &Value) -> bool {
    match node.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(types)) => types.iter().any(|t| t == "null"),
        _ => node
            .get("anyOf")
            .and_then(Value::as_array)
            .is_some_and(|branches| branches.iter().any(admits_null)),
    }
}

fn definition(provider: Provider) -> Value {
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ShipTool)];
    build_tools(&tools, provider).remove(0)
}

#[test]
fn anthropic_gets_the_canonical_schema() {
    let definition = definition(Provider::Anthropic);
    assert_eq!(definition["name"], "ship");
    assert_eq!(definition["description"], "Ships a parcel.");
    assert_eq!(&definition["input_schema"], ShipTool.input_schema());
    let schema = &definition["input_schema"];
    assert_eq!(
        schema["required"],
        json!(["to", "via", "speed", "labels"]),
        "Option and defaulted arguments are optional"
    );
    assert_eq!(schema["properties"]["via"]["type"], "array");
    assert_eq!(
        schema["properties"]["labels"]["additionalProperties"]["type"],
        "string"
    );
    assert!(schema["$defs"]["Address"]["properties"]["zip"].is_object());
}

#[test]
fn openai_strict_closes_every_object_and_requires_every_property() {
    let definition = definition(Provider::OpenAiStrict);
    assert_eq!(definition["type"], "function");
    assert_eq!(definition["function"]["strict"], true);
    let schema = &definition["function"]["parameters"];
    let canonical = ShipTool.input_schema();

    let mut structs = 0;
    for (path, node) in all_nodes(schema) {
        if !is_struct_schema(node) {
            continue;
        }
        structs += 1;
        assert_eq!(node["additionalProperties"], false, "open object at {path}");
        let properties: Vec<&String> = node["properties"].as_object().unwrap().keys().collect();
        let required: Vec<&str> = node["required"]
            .as_array()
            .unwrap_or_else(|| panic!("no required at {path}"))
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for property in &properties {
            assert!(
                required.contains(&property.as_str()),
                "{property} not required at {path}"
            );
        }
    }
    assert!(
        structs >= 4,
        "root, Address and both Payment variants: {structs}"
    );
    for (path, node) in all_nodes(schema) {
        assert!(
            node.get("default").is_none() || path.ends_with("/properties/default"),
            "default at {path}"
        );
        if let Some(format) = node.get("format").and_then(Value::as_str) {
            panic!("format {format:?} at {path} is not allowed in strict mode");
        }
    }
    // Optional in the canonical schema -> nullable in strict; required stays non-null.
    let properties = &schema["properties"];
    assert!(
        admits_null(&properties["weight"]),
        "{}",
        properties["weight"]
    );
    assert!(
        admits_null(&properties["payment"]),
        "{}",
        properties["payment"]
    );
    assert!(admits_null(&properties["copies"]), "defaulted -> nullable");
    assert!(!admits_null(&properties["via"]));
    assert!(!admits_null(&properties["speed"]));
    let zip = &schema["$defs"]["Address"]["properties"]["zip"];
    assert!(admits_null(zip), "nested optional: {zip}");
    // A map cannot be expressed in strict mode; it is kept rather than silently emptied.
    assert_eq!(
        properties["labels"]["additionalProperties"],
        canonical["properties"]["labels"]["additionalProperties"]
    );
}

#[tokio::test]
async fn strict_mode_nulls_for_optional_arguments_reach_the_tool_as_defaults() {
    // OpenAI strict sends every property; the ones the model leaves out come as null.
    let registry = ToolRegistry::new();
    registry.register(Arc::new(ShipTool)).unwrap();
    let input = json!({
        "to": {"street": "Main St", "zip": null},
        "via": [],
        "speed": "express",
        "payment": null,
        "labels": {},
        "weight": null,
        "copies": null
    });
    let out = registry.call("ship", input, &ToolContext::default()).await;
    assert!(!out.is_error, "{}", out.to_text());
    assert_eq!(out.to_text(), "Main St via 0 stop(s), 0 label(s), 0g x1");
}

#[test]
fn openai_plain_drops_only_the_meta_schema() {
    let definition = definition(Provider::OpenAi);
    let parameters = &definition["function"]["parameters"];
    assert!(definition["function"].get("strict").is_none());
    assert!(parameters.get("$schema").is_none());
    let mut canonical = ShipTool.input_schema().clone();
    canonical.as_object_mut().unwrap().remove("$schema");
    assert_eq!(parameters, &canonical);
}

#[test]
fn gemini_gets_an_inlined_openapi_subset() {
    let definition = definition(Provider::Gemini);
    assert_eq!(definition["name"], "ship");
    let schema = &definition["parameters"];
    for (path, node) in all_nodes(schema) {
        let Value::Object(map) = node else { continue };
        if path.ends_with("/properties") {
            continue; // keys here are property names, not keywords
        }
        for banned in [
            "$schema",
            "$ref",
            "$defs",
            "additionalProperties",
            "const",
            "oneOf",
        ] {
            assert!(!map.contains_key(banned), "{banned} at {path}: {node}");
        }
        if let Some(kind) = map.get("type") {
            assert!(kind.is_string(), "type array at {path}: {kind}");
            assert_ne!(kind, "null", "null type at {path}");
        }
    }
    let properties = &schema["properties"];
    assert_eq!(properties["weight"]["type"], "integer");
    assert_eq!(properties["weight"]["nullable"], true);
    assert_eq!(properties["to"]["type"], "object", "$ref inlined");
    assert_eq!(properties["to"]["properties"]["zip"]["nullable"], true);
    assert_eq!(
        properties["via"]["items"]["properties"]["street"]["type"],
        "string"
    );
    assert_eq!(properties["speed"]["enum"], json!(["standard", "express"]));
    assert_eq!(properties["labels"]["type"], "object");
    assert_eq!(properties["payment"]["nullable"], true);
}

#[test]
fn mcp_gets_input_schema_and_annotations() {
    /// Lists files.
    #[tool(register = false, read_only, open_world = false)]
    async fn list(dir: String) -> String {
        dir
    }
    let tools: Vec<Arc<dyn Tool>> = vec![Arc::new(ListTool)];
    let definition = build_tools(&tools, Provider::Mcp).remove(0);
    assert_eq!(definition["name"], "list");
    assert_eq!(definition["inputSchema"]["type"], "object");
    assert_eq!(definition["inputSchema"]["required"], json!(["dir"]));
    assert_eq!(
        definition["annotations"],
        json!({"readOnlyHint": true, "openWorldHint": false})
    );
    let ship = definition_for_mcp();
    assert!(
        ship.get("annotations").is_none(),
        "no hints, no annotations: {ship}"
    );
}

fn definition_for_mcp() -> Value {
    definition(Provider::Mcp)
}
