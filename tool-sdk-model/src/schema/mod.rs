//! Canonical input schemas and their lowering for each model provider.
//!
//! A tool's input schema is generated once (JSON Schema 2020-12, via schemars) and then
//! lowered, on demand, to the dialect each provider's tool-list format accepts.

mod canonical;
mod gemini;
mod strict;
#[cfg(test)]
mod tests;

use serde_json::{Value, json};

pub use canonical::schema_for;
use gemini::{GEMINI_NODE_BUDGET, Gemini};
use strict::Strict;

/// Which API a tool list is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// Anthropic Messages API: full JSON Schema in `input_schema`.
    Anthropic,
    /// OpenAI function calling, best effort (no `strict`).
    OpenAi,
    /// OpenAI function calling with `strict: true` (Structured Outputs subset of JSON Schema).
    OpenAiStrict,
    /// Gemini `functionDeclarations` (a subset of the OpenAPI 3.0 schema object).
    Gemini,
    /// Model Context Protocol `tools/list` (JSON Schema, root must be `type: "object"`).
    Mcp,
}

/// `Some(message)` when the schema's root is not an object schema (tool inputs must be JSON
/// objects). A root with `"type": "object"`, or with `properties` and no `type`, counts as an
/// object.
pub fn root_object_error(schema: &Value) -> Option<String> {
    const PREFIX: &str = "the input schema's root must be an object";
    let Value::Object(root) = schema else {
        let kind = match schema {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::String(_) => "a string",
            Value::Array(_) => "an array",
            Value::Object(_) => "an object",
        };
        return Some(format!(
            "{PREFIX}, but the schema itself is {kind}, not a JSON Schema object"
        ));
    };
    match root.get("type") {
        Some(Value::String(t)) if t == "object" => None,
        Some(Value::Array(types)) if types.len() == 1 && types[0] == "object" => None,
        Some(other) => Some(format!("{PREFIX}, but it is of type {other}")),
        None if root.contains_key("properties") => None,
        None => {
            let what = ["$ref", "anyOf", "oneOf", "allOf", "enum", "const"]
                .into_iter()
                .find(|k| root.contains_key(*k));
            Some(match what {
                Some(k) => format!("{PREFIX}, but it has no \"type\" and is a `{k}` schema"),
                None => format!("{PREFIX}, but it declares neither \"type\" nor \"properties\""),
            })
        }
    }
}

/// The schema as the provider wants it. Pure; never panics on any JSON input (lowering an odd
/// schema just does its best).
pub fn lower(schema: &Value, provider: Provider) -> Value {
    match provider {
        Provider::Anthropic => schema.clone(),
        Provider::OpenAi => {
            let mut out = schema.clone();
            if let Value::Object(root) = &mut out {
                root.remove("$schema");
            }
            out
        }
        Provider::OpenAiStrict => Strict {
            root: schema,
            inlining: Vec::new(),
        }
        .lower(schema.clone(), 0),
        Provider::Gemini => Gemini {
            root: schema,
            expanding: Vec::new(),
            budget: GEMINI_NODE_BUDGET,
        }
        .lower(schema.clone(), 0),
        Provider::Mcp => match schema {
            Value::Object(root) if root.contains_key("type") => schema.clone(),
            Value::Object(root) => {
                let mut root = root.clone();
                root.insert("type".into(), "object".into());
                Value::Object(root)
            }
            Value::Bool(true) => json!({"type": "object"}),
            _ => schema.clone(),
        },
    }
}

/// One tool's definition in the provider's tool-list format:
/// Anthropic `{"name","description","input_schema"}`;
/// OpenAi `{"type":"function","function":{"name","description","parameters"}}`;
/// OpenAiStrict the same plus `"strict": true` inside `"function"`, parameters lowered strictly;
/// Gemini `{"name","description","parameters"}` (one entry of `functionDeclarations`;
/// `parameters` is left out when the tool takes no arguments, as Gemini rejects an object
/// schema with no properties); Mcp `{"name","description","inputSchema"}` plus `"annotations"`
/// when given a non-empty object and `"outputSchema"` when given. `annotations` and
/// `output_schema` are ignored for the other providers.
pub fn tool_definition(
    name: &str,
    description: &str,
    schema: &Value,
    provider: Provider,
    annotations: Option<&Value>,
    output_schema: Option<&Value>,
) -> Value {
    let lowered = lower(schema, provider);
    match provider {
        Provider::Anthropic => json!({
            "name": name,
            "description": description,
            "input_schema": lowered,
        }),
        Provider::OpenAi => json!({
            "type": "function",
            "function": {"name": name, "description": description, "parameters": lowered},
        }),
        Provider::OpenAiStrict => json!({
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": lowered,
                "strict": true,
            },
        }),
        Provider::Gemini => {
            let mut def = json!({"name": name, "description": description});
            let no_arguments = lowered.get("type").is_some_and(|t| t == "object")
                && lowered.get("properties").is_none();
            if !no_arguments {
                def["parameters"] = lowered;
            }
            def
        }
        Provider::Mcp => {
            let mut def = json!({"name": name, "description": description, "inputSchema": lowered});
            if let Some(a) = annotations.filter(|a| a.as_object().is_some_and(|o| !o.is_empty())) {
                def["annotations"] = a.clone();
            }
            if let Some(out) = output_schema {
                def["outputSchema"] = lower(out, Provider::Mcp);
            }
            def
        }
    }
}

/// Recursion limit for the lowering walks; deeper input is returned as is (strict) or cut to
/// `{}` (Gemini). Generated schemas are nowhere near this deep.
const MAX_DEPTH: usize = 96;
