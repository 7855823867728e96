//! Tests of tool-sdk-core's schema and output-shape support that need this crate's validator.

use serde_json::{Value, json};
use tool_sdk_core::__private::{OutputShape, SchemaTag};

use crate::ToolOutput;

// ---- `#[input]` schemas closed to unknown keys ----

fn closed<T: schemars::JsonSchema>() -> Value {
    SchemaTag.input_schema::<T>(false)
}

fn accepts(schema: &Value, input: &Value) -> bool {
    crate::validate::InputValidator::new(schema, Default::default())
        .unwrap()
        .check(input.clone())
        .is_ok()
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct Plain {
    a: u8,
    #[serde(flatten)]
    inner: Inner,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct Inner {
    b: u8,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct WithEnum {
    a: u8,
    #[serde(flatten)]
    choice: Choice,
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
enum Choice {
    Left { left: u8 },
    Right { right: u8 },
}

#[allow(dead_code)]
#[derive(schemars::JsonSchema)]
struct WithMap {
    a: u8,
    #[serde(flatten)]
    rest: std::collections::BTreeMap<String, u8>,
}

#[test]
fn a_plain_input_struct_refuses_unknown_keys() {
    let schema = closed::<Plain>();
    assert!(accepts(&schema, &json!({"a": 1, "b": 2})), "{schema}");
    assert!(
        !accepts(&schema, &json!({"a": 1, "b": 2, "c": 3})),
        "{schema}"
    );
}

#[test]
fn a_schema_that_decides_other_keys_itself_is_kept() {
    // A flattened enum: closing the root would refuse the branches' keys.
    let schema = closed::<WithEnum>();
    assert_eq!(schema, tool_sdk_core::schema_for::<WithEnum>());
    assert!(
        accepts(&schema, &json!({"a": 1, "Left": {"left": 2}})),
        "{schema}"
    );
    // A flattened map takes any other key.
    let schema = closed::<WithMap>();
    assert_eq!(schema, tool_sdk_core::schema_for::<WithMap>());
    assert!(accepts(&schema, &json!({"a": 1, "x": 2})), "{schema}");
}

// ---- `Json<T>` output shapes ----

#[test]
fn an_object_schema_is_kept_and_anything_else_is_wrapped() {
    #[allow(dead_code)]
    #[derive(schemars::JsonSchema)]
    struct Point {
        x: i32,
    }
    let point = OutputShape::of::<Point>();
    assert!(!point.wrapped);
    assert_eq!(point.schema["properties"]["x"]["type"], "integer");

    let list = OutputShape::of::<Vec<Point>>();
    assert!(list.wrapped);
    assert_eq!(list.schema["type"], "object");
    assert_eq!(list.schema["properties"]["result"]["type"], "array");
    // The reference inside still resolves from the root.
    assert!(list.schema["$defs"]["Point"].is_object(), "{}", list.schema);
    let validator = crate::validate::InputValidator::new(&list.schema, Default::default()).unwrap();
    let output = list.fit(ToolOutput::json(json!([{"x": 1}])));
    assert_eq!(output.to_text(), r#"[{"x":1}]"#);
    assert!(validator.is_valid(output.structured.as_ref().unwrap()));
    assert!(!validator.is_valid(&json!({"result": [{"x": "1"}]})));
}
