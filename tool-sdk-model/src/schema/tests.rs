use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::gemini::GEMINI_MAX_RECURSION;
use super::*;

/// A point on the plane.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Point {
    x: f64,
    y: f64,
}

#[derive(JsonSchema, Deserialize)]
#[allow(dead_code)]
enum Color {
    Red,
    Green,
}

/// A shape to draw.
#[derive(JsonSchema, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[allow(dead_code)]
enum Shape {
    Circle { radius: f64 },
    Square { side: u32 },
}

#[derive(JsonSchema, Deserialize)]
#[allow(dead_code)]
enum Action {
    Stop,
    Move(Point),
    Say { text: String },
}

#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Input {
    /// Who is asking.
    name: String,
    /// Where to start.
    start: Point,
    waypoints: Vec<Point>,
    end: Option<Point>,
    color: Color,
    tint: Option<Color>,
    shape: Shape,
    action: Action,
    tags: Vec<String>,
    note: Option<String>,
    limit: Option<u64>,
    counts: HashMap<String, u32>,
    #[serde(default)]
    retries: u32,
    #[serde(rename = "type")]
    kind: String,
}

/// A recursive input.
#[derive(JsonSchema, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

fn input() -> Value {
    schema_for::<Input>()
}

/// Every subschema of `schema` (itself included), with a path for messages.
fn walk<'a>(schema: &'a Value, path: String, out: &mut Vec<(String, &'a Value)>) {
    out.push((path.clone(), schema));
    let Value::Object(o) = schema else { return };
    for key in ["properties", "$defs", "definitions"] {
        if let Some(Value::Object(map)) = o.get(key) {
            for (name, sub) in map {
                walk(sub, format!("{path}/{key}/{name}"), out);
            }
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = o.get(key) {
            for (i, sub) in list.iter().enumerate() {
                walk(sub, format!("{path}/{key}/{i}"), out);
            }
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub @ Value::Object(_)) = o.get(key) {
            walk(sub, format!("{path}/{key}"), out);
        }
    }
}

fn nodes(schema: &Value) -> Vec<(String, &Value)> {
    let mut out = Vec::new();
    walk(schema, String::new(), &mut out);
    out
}

fn names(v: Option<&Value>) -> Vec<String> {
    let mut n: Vec<String> = match v {
        Some(Value::Array(a)) => a.iter().map(|s| s.as_str().unwrap().to_string()).collect(),
        Some(Value::Object(o)) => o.keys().cloned().collect(),
        _ => Vec::new(),
    };
    n.sort();
    n
}

/// Asserts the OpenAI strict rules at every level; returns how many object schemas it checked.
fn assert_strict_everywhere(schema: &Value) -> usize {
    const ALLOWED: &[&str] = &[
        "$ref",
        "$defs",
        "type",
        "description",
        "title",
        "enum",
        "const",
        "anyOf",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "prefixItems",
        "pattern",
        "format",
        "minLength",
        "maxLength",
        "multipleOf",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minItems",
        "maxItems",
    ];
    const FORMATS: &[&str] = &[
        "date-time",
        "time",
        "date",
        "duration",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "uuid",
    ];
    let mut objects = 0;
    for (path, node) in nodes(schema) {
        let Value::Object(o) = node else { continue };
        for key in o.keys() {
            assert!(
                ALLOWED.contains(&key.as_str()),
                "{path}: keyword {key} left in {node}"
            );
        }
        if let Some(f) = o.get("format") {
            assert!(FORMATS.contains(&f.as_str().unwrap()), "{path}: format {f}");
        }
        if o.contains_key("$ref") {
            assert_eq!(o.len(), 1, "{path}: $ref with siblings: {node}");
        }
        let is_object = o.contains_key("properties")
            || o.get("type") == Some(&json!("object"))
            || o.get("type")
                .and_then(Value::as_array)
                .is_some_and(|t| t.contains(&json!("object")));
        if is_object {
            objects += 1;
            let extra = o.get("additionalProperties");
            // A map (`additionalProperties` a schema, or `true`) is deliberately kept.
            let is_map = extra.is_some_and(|e| e.is_object() || e == &json!(true))
                && !o.contains_key("properties");
            assert!(
                extra == Some(&json!(false)) || is_map,
                "{path}: additionalProperties must be false: {node}"
            );
            assert!(o.contains_key("type"), "{path}: object without type");
            assert_eq!(
                names(o.get("required")),
                names(o.get("properties")),
                "{path}: required"
            );
        }
        if let (Some(Value::Array(types)), Some(Value::Array(values))) =
            (o.get("type"), o.get("enum"))
            && types.contains(&json!("null"))
        {
            assert!(
                values.contains(&Value::Null),
                "{path}: nullable enum without null"
            );
        }
    }
    objects
}

/// Asserts Gemini's OpenAPI subset at every level; returns how many schemas it checked.
fn assert_gemini_clean(schema: &Value) -> usize {
    const ALLOWED: &[&str] = &[
        "type",
        "format",
        "title",
        "description",
        "nullable",
        "enum",
        "maxItems",
        "minItems",
        "properties",
        "required",
        "minProperties",
        "maxProperties",
        "minLength",
        "maxLength",
        "pattern",
        "example",
        "anyOf",
        "propertyOrdering",
        "default",
        "items",
        "minimum",
        "maximum",
    ];
    const TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];
    let all = nodes(schema);
    for (path, node) in &all {
        let o = node
            .as_object()
            .unwrap_or_else(|| panic!("{path}: not an object: {node}"));
        for key in o.keys() {
            assert!(
                ALLOWED.contains(&key.as_str()),
                "{path}: keyword {key} left in {node}"
            );
        }
        if let Some(t) = o.get("type") {
            assert!(
                TYPES.contains(&t.as_str().unwrap_or("<not a string>")),
                "{path}: type {t}"
            );
        }
        if let Some(f) = o.get("format") {
            assert!(f == "enum" || f == "date-time", "{path}: format {f}");
        }
        if let Some(e) = o.get("enum") {
            assert!(
                e.as_array().unwrap().iter().all(Value::is_string),
                "{path}: enum {e}"
            );
        }
        if let Some(p) = o.get("properties") {
            assert!(
                !p.as_object().unwrap().is_empty(),
                "{path}: empty properties"
            );
            assert_eq!(
                o.get("type"),
                Some(&json!("object")),
                "{path}: properties on non-object"
            );
        }
        for r in names(o.get("required")) {
            assert!(
                o["properties"].get(&r).is_some(),
                "{path}: required {r} is no property"
            );
        }
    }
    all.len()
}

#[test]
fn canonical_schema_is_2020_12_with_defs_and_no_root_title() {
    let s = input();
    assert_eq!(s["$schema"], "https://json-schema.org/draft/2020-12/schema");
    assert!(s.get("title").is_none());
    assert!(s["$defs"]["Point"].is_object());
    assert_eq!(s["properties"]["name"]["description"], "Who is asking.");
    assert!(s["properties"].get("type").is_some() && s["properties"].get("kind").is_none());
    assert_eq!(s["additionalProperties"], false);
}

#[test]
fn anthropic_and_mcp_keep_the_canonical_schema() {
    let s = input();
    assert_eq!(lower(&s, Provider::Anthropic), s);
    assert_eq!(lower(&s, Provider::Mcp), s);
    let mut plain = s.clone();
    plain.as_object_mut().unwrap().remove("$schema");
    assert_eq!(lower(&s, Provider::OpenAi), plain);
    assert_eq!(
        lower(
            &json!({"properties": {"a": {"type": "string"}}}),
            Provider::Mcp
        ),
        json!({"type": "object", "properties": {"a": {"type": "string"}}})
    );
    assert_eq!(
        lower(&json!(true), Provider::Mcp),
        json!({"type": "object"})
    );
}

#[test]
fn strict_rules_hold_everywhere() {
    let s = input();
    let strict = lower(&s, Provider::OpenAiStrict);
    // Root, Point, Shape's two variants, Action's two object variants and Say's content, the
    // inlined `start`, the map: the walk must really have visited them.
    assert!(assert_strict_everywhere(&strict) >= 8, "{strict:#}");
    let props = &strict["properties"];
    assert!(strict.get("$schema").is_none());
    assert_eq!(
        props["limit"],
        json!({"type": ["integer", "null"], "minimum": 0})
    );
    assert_eq!(props["note"], json!({"type": ["string", "null"]}));
    assert_eq!(
        props["retries"],
        json!({"type": ["integer", "null"], "minimum": 0})
    );
    assert_eq!(
        props["end"],
        json!({"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]})
    );
    assert_eq!(
        props["tint"],
        json!({"anyOf": [{"$ref": "#/$defs/Color"}, {"type": "null"}]})
    );
    assert_eq!(props["color"], json!({"$ref": "#/$defs/Color"}));
    assert_eq!(
        strict["$defs"]["Color"],
        json!({"type": "string", "enum": ["Red", "Green"]})
    );
    // A documented struct field (`$ref` + description) is inlined, keeping its description.
    assert_eq!(props["start"]["description"], "Where to start.");
    assert_eq!(names(props["start"].get("properties")), ["x", "y"]);
    assert_eq!(props["start"]["additionalProperties"], false);
    assert_eq!(
        props["waypoints"]["items"],
        json!({"$ref": "#/$defs/Point"})
    );
    assert_eq!(props["type"], json!({"type": "string"}));
    // The map keeps its value schema (see the comment in `Strict::lower`).
    assert_eq!(
        props["counts"],
        json!({"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}})
    );
    let shape = &strict["$defs"]["Shape"];
    assert!(shape.get("oneOf").is_none());
    assert_eq!(
        shape["anyOf"][0]["properties"]["kind"],
        json!({"type": "string", "const": "circle"})
    );
    assert_eq!(shape["description"], "A shape to draw.");
    let action = &strict["$defs"]["Action"]["anyOf"];
    assert_eq!(action[0], json!({"type": "string", "enum": ["Stop"]}));
    assert_eq!(
        action[2]["properties"]["Say"]["additionalProperties"],
        false
    );
    let mut expected = names(s.get("properties"));
    expected.sort();
    assert_eq!(names(strict.get("required")), expected);
    assert!(names(s.get("required")).len() < expected.len());
}

#[test]
fn strict_handles_hand_written_schemas() {
    let s = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$defs": {"D": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "type": "object",
        "properties": {
            "e": {"enum": ["a", "b"]},
            "te": {"type": "string", "enum": ["a"]},
            "c": {"const": "x", "description": "constant"},
            "r": {"$ref": "#/$defs/D", "description": "documented ref"},
            "all": {"allOf": [{"$ref": "#/$defs/D"}, {"properties": {"b": {"type": "integer"}}, "required": ["b"]}]},
            "free": {"type": "object", "additionalProperties": true},
            "date": {"type": "string", "format": "date-time", "default": "now"},
            "neg": {"not": {"type": "string"}, "type": "integer", "uniqueItems": true},
            "me": {"$ref": "#", "description": "myself"}
        },
        "required": ["r", "me"]
    });
    let strict = lower(&s, Provider::OpenAiStrict);
    assert!(assert_strict_everywhere(&strict) >= 4, "{strict:#}");
    let p = &strict["properties"];
    assert_eq!(p["e"], json!({"enum": ["a", "b", null]}));
    assert_eq!(
        p["te"],
        json!({"type": ["string", "null"], "enum": ["a", null]})
    );
    assert_eq!(
        p["c"],
        json!({"description": "constant", "anyOf": [{"const": "x"}, {"type": "null"}]})
    );
    assert_eq!(p["r"]["description"], "documented ref");
    assert_eq!(p["r"]["type"], "object");
    assert_eq!(p["r"]["required"], json!(["a"]));
    assert_eq!(
        p["r"]["properties"]["a"],
        json!({"type": ["string", "null"]})
    );
    let all = &p["all"]["anyOf"][0];
    assert_eq!(names(all.get("properties")), ["a", "b"]);
    assert_eq!(all["properties"]["b"], json!({"type": "integer"}));
    assert_eq!(p["free"]["additionalProperties"], true);
    assert_eq!(
        p["date"],
        json!({"type": ["string", "null"], "format": "date-time"})
    );
    assert_eq!(p["neg"], json!({"type": ["integer", "null"]}));
    // A documented reference to the root is inlined once, without the root-only keywords;
    // inside, the recursion stays a bare `$ref`.
    assert_eq!(p["me"]["description"], "myself");
    assert!(p["me"].get("$defs").is_none() && p["me"].get("$schema").is_none());
    assert_eq!(p["me"]["properties"]["me"], json!({"$ref": "#"}));
}

#[test]
fn gemini_is_clean_everywhere() {
    let s = input();
    let g = lower(&s, Provider::Gemini);
    assert!(assert_gemini_clean(&g) >= 25, "{g:#}");
    let p = &g["properties"];
    assert_eq!(
        p["limit"],
        json!({"type": "integer", "nullable": true, "minimum": 0})
    );
    assert_eq!(p["note"], json!({"type": "string", "nullable": true}));
    assert_eq!(
        p["retries"],
        json!({"type": "integer", "minimum": 0, "default": 0})
    );
    assert_eq!(
        p["name"],
        json!({"type": "string", "description": "Who is asking."})
    );
    assert_eq!(p["type"], json!({"type": "string"}));
    assert_eq!(
        p["color"],
        json!({"type": "string", "enum": ["Red", "Green"]})
    );
    assert_eq!(
        p["tint"],
        json!({"type": "string", "enum": ["Red", "Green"], "nullable": true})
    );
    let point = json!({
        "description": "A point on the plane.",
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
    });
    let mut start = point.clone();
    start["description"] = json!("Where to start.");
    assert_eq!(p["start"], start);
    let mut end = point.clone();
    end["nullable"] = json!(true);
    assert_eq!(p["end"], end);
    assert_eq!(p["waypoints"], json!({"type": "array", "items": point}));
    assert_eq!(p["counts"], json!({"type": "object"}));
    assert_eq!(
        p["shape"]["anyOf"][1]["properties"]["kind"],
        json!({"type": "string", "enum": ["square"]})
    );
    assert_eq!(p["shape"]["description"], "A shape to draw.");
    assert_eq!(
        p["action"]["anyOf"][0],
        json!({"type": "string", "enum": ["Stop"]})
    );
    assert_eq!(p["action"]["anyOf"][1]["properties"]["Move"], point);
    assert_eq!(names(g.get("required")), names(s.get("required")));
}

#[test]
fn gemini_cuts_recursion_and_lowers_odd_keywords() {
    let s = schema_for::<Tree>();
    let g = lower(&s, Provider::Gemini);
    assert_gemini_clean(&g);
    let mut node = &g;
    let mut levels = 0;
    while node.get("properties").is_some() {
        node = &node["properties"]["children"]["items"];
        levels += 1;
    }
    assert_eq!(*node, json!({"type": "object"}));
    assert_eq!(levels, 1 + GEMINI_MAX_RECURSION);

    let odd = json!({
        "type": "object",
        "properties": {
            "t": {"type": ["string", "integer", "null"]},
            "n": {"type": "null"},
            "c": {"const": 3},
            "e": {"enum": [1, "a"]},
            "f": {"type": "string", "format": "date-time", "examples": ["x"]},
            "o": {"oneOf": [{"type": "string"}, {"type": "boolean"}]},
            "tuple": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "integer"}]},
            "empty": {"type": "object", "properties": {}, "required": ["ghost"]}
        }
    });
    let g = lower(&odd, Provider::Gemini);
    assert_gemini_clean(&g);
    let p = &g["properties"];
    assert_eq!(
        p["t"],
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true})
    );
    assert_eq!(p["n"], json!({"nullable": true}));
    assert_eq!(p["c"], json!({"type": "integer"}));
    assert_eq!(p["e"], json!({}));
    assert_eq!(p["f"], json!({"type": "string", "format": "date-time"}));
    assert_eq!(
        p["o"],
        json!({"anyOf": [{"type": "string"}, {"type": "boolean"}]})
    );
    assert_eq!(
        p["tuple"],
        json!({"type": "array", "items": {"type": "integer"}})
    );
    assert_eq!(p["empty"], json!({"type": "object"}));
}

#[test]
fn root_object_error_reports_non_objects() {
    assert_eq!(root_object_error(&input()), None);
    assert_eq!(root_object_error(&json!({"properties": {}})), None);
    assert_eq!(
        root_object_error(&schema_for::<String>()).as_deref(),
        Some("the input schema's root must be an object, but it is of type \"string\"")
    );
    let color = root_object_error(&schema_for::<Color>()).unwrap();
    assert!(color.contains("\"string\""), "{color}");
    let action = root_object_error(&schema_for::<Action>()).unwrap();
    assert!(action.contains("oneOf"), "{action}");
    assert!(root_object_error(&json!(true)).is_some());
    assert!(root_object_error(&json!({"type": ["object", "null"]})).is_some());
}

#[test]
fn tool_definitions_have_each_provider_shape() {
    let s = input();
    let def = |p, a, o| tool_definition("draw", "Draws.", &s, p, a, o);
    assert_eq!(
        def(Provider::Anthropic, None, None),
        json!({"name": "draw", "description": "Draws.", "input_schema": s})
    );
    assert_eq!(
        def(Provider::OpenAi, None, None),
        json!({"type": "function", "function": {
            "name": "draw", "description": "Draws.", "parameters": lower(&s, Provider::OpenAi)
        }})
    );
    assert_eq!(
        def(Provider::OpenAiStrict, None, None),
        json!({"type": "function", "function": {
            "name": "draw", "description": "Draws.", "strict": true,
            "parameters": lower(&s, Provider::OpenAiStrict)
        }})
    );
    assert_eq!(
        def(Provider::Gemini, None, None),
        json!({"name": "draw", "description": "Draws.", "parameters": lower(&s, Provider::Gemini)})
    );
    let annotations = json!({"readOnlyHint": true});
    let output = json!({"properties": {"ok": {"type": "boolean"}}});
    assert_eq!(
        def(Provider::Mcp, Some(&annotations), Some(&output)),
        json!({
            "name": "draw", "description": "Draws.", "inputSchema": s,
            "annotations": annotations,
            "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
        })
    );
    assert_eq!(
        def(Provider::Mcp, Some(&json!({})), None),
        json!({"name": "draw", "description": "Draws.", "inputSchema": s})
    );
    // Gemini rejects an object without properties: a no-argument tool has no `parameters`.
    let none = json!({"type": "object", "properties": {}, "additionalProperties": false});
    assert_eq!(
        tool_definition("ping", "Pings.", &none, Provider::Gemini, None, None),
        json!({"name": "ping", "description": "Pings."})
    );
}

#[test]
fn lower_survives_junk() {
    let mut deep = json!({"type": "string"});
    for i in 0..500 {
        deep = if i % 2 == 0 {
            json!({"properties": {"a": deep}, "anyOf": [true, {"type": "null"}]})
        } else {
            json!({"items": deep, "oneOf": [true, 1]})
        };
    }
    let mut defs = Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/D{}", i + 1);
        defs.insert(
            format!("D{i}"),
            json!({"type": "object", "properties": {"a": {"$ref": next}, "b": {"$ref": next, "description": "d"}}}),
        );
    }
    let dag = json!({"$defs": defs, "properties": {"root": {"$ref": "#/$defs/D0"}}});
    let junk = [
        json!(null),
        json!(3.5),
        json!("schema"),
        json!([1, {"type": "object"}, []]),
        json!(false),
        json!({}),
        json!({"$ref": "#"}),
        json!({"$ref": "#", "description": "me again"}),
        json!({"properties": {"a": {"$ref": "#", "title": "t"}, "b": {"$ref": "#/nowhere"}}}),
        json!({"$ref": 5, "type": []}),
        json!({"$defs": {"A": {"$ref": "#/$defs/A", "description": "loop"}},
               "properties": {"a": {"$ref": "#/$defs/A", "title": "t"}}}),
        json!({"type": 7, "properties": [1, 2], "required": "x", "anyOf": {}, "enum": 3,
               "allOf": [1, {"$ref": "#"}, {"allOf": "no"}], "items": [true], "const": {"a": 1},
               "additionalProperties": [], "$defs": [], "format": 9, "nullable": "yes"}),
        json!({"type": "object", "properties": {"x": null, "y": 1, "z": [{"$ref": "#"}]}}),
        deep,
        dag,
    ];
    let providers = [
        Provider::Anthropic,
        Provider::OpenAi,
        Provider::OpenAiStrict,
        Provider::Gemini,
        Provider::Mcp,
    ];
    for schema in &junk {
        let _ = root_object_error(schema);
        for p in providers {
            let lowered = lower(schema, p);
            let _ = tool_definition("t", "", schema, p, Some(schema), Some(schema));
            if p == Provider::Gemini {
                assert!(nodes(&lowered).iter().all(|(_, n)| n.get("$ref").is_none()));
            }
        }
    }
}
