//! Lowering to OpenAI's strict mode (the Structured Outputs subset of JSON Schema).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::MAX_DEPTH;
use super::canonical::{inlinable, merge_all_of, resolve_ref};

/// Formats strict mode accepts; schemars' numeric formats ("uint64", "int32", "double", ...) are
/// not among them.
const STRICT_FORMATS: [&str; 9] = [
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

/// Keywords strict mode accepts (OpenAI "Supported schemas"); everything else is removed.
/// `default`, `$schema`, `examples`, `allOf` (merged beforehand), `oneOf` (turned into `anyOf`),
/// `not`, `if`/`then`/`else`, `dependent*`, `patternProperties`, `propertyNames`, `uniqueItems`,
/// `unevaluated*`, ... are rejected by the API, so they go.
const STRICT_KEYWORDS: [&str; 24] = [
    "$ref",
    "$defs",
    "definitions",
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

/// Annotation keywords that do not constrain a value.
const ANNOTATIONS: [&str; 6] = [
    "description",
    "title",
    "default",
    "examples",
    "$comment",
    "deprecated",
];

/// Whether the type keyword (string or array) names `name`.
fn type_names(schema: &Map<String, Value>, name: &str) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == name,
        Some(Value::Array(ts)) => ts.iter().any(|t| t == name),
        _ => false,
    }
}

/// Whether `schema` certainly accepts `null` (conservative: `$ref`s are not followed).
fn admits_null(schema: &Value) -> bool {
    let Value::Object(o) = schema else {
        return schema == &Value::Bool(true);
    };
    if let Some(c) = o.get("const") {
        return c.is_null();
    }
    if let Some(e) = o.get("enum") {
        return e.as_array().is_some_and(|e| e.contains(&Value::Null));
    }
    if o.contains_key("type") {
        return type_names(o, "null");
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = o.get(key) {
            return branches
                .as_array()
                .is_some_and(|b| b.iter().any(admits_null));
        }
    }
    // No type, no enum/const, no union: unconstrained unless it is a reference or an object
    // shape.
    !["$ref", "allOf", "properties", "not"]
        .iter()
        .any(|k| o.contains_key(*k))
}

/// Lowering to the OpenAI strict (Structured Outputs) subset.
pub(super) struct Strict<'a> {
    pub(super) root: &'a Value,
    /// `$ref`s being inlined on the current path (to stop at recursive types).
    pub(super) inlining: Vec<String>,
}

impl Strict<'_> {
    pub(super) fn lower(&mut self, schema: Value, depth: usize) -> Value {
        let Value::Object(mut o) = schema else {
            return schema;
        };
        if depth > MAX_DEPTH {
            return Value::Object(o);
        }
        if let Some(all_of) = o.remove("allOf") {
            merge_all_of(&mut o, all_of, self.root);
        }
        // Strict mode rejects `$ref` with sibling keywords (`{"$ref": ..., "description": ...}`,
        // which schemars emits for documented fields): inline the target, siblings winning.
        if o.len() > 1
            && let Some(Value::String(r)) = o.get("$ref")
            && !self.inlining.contains(r)
            && let Some(Value::Object(target)) = resolve_ref(self.root, r)
        {
            let r = r.clone();
            let mut inlined = inlinable(target);
            o.remove("$ref");
            inlined.extend(o);
            self.inlining.push(r);
            let out = self.lower(Value::Object(inlined), depth + 1);
            self.inlining.pop();
            return out;
        }
        if o.len() > 1 && o.contains_key("$ref") {
            // Recursive or unresolvable: a bare `$ref` is accepted, its siblings are not.
            o.retain(|k, _| k == "$ref");
        }
        // `oneOf` is not supported, `anyOf` is. schemars uses `oneOf` for enums whose variants
        // are disjoint by construction (distinct tags or keys), so `anyOf` means the same.
        if let Some(one_of) = o.remove("oneOf")
            && !o.contains_key("anyOf")
        {
            o.insert("anyOf".into(), one_of);
        }
        if matches!(o.get("properties"), Some(Value::Object(_))) && !o.contains_key("type") {
            o.insert("type".into(), "object".into());
        }
        if type_names(&o, "object") && !o.contains_key("additionalProperties") {
            o.insert("additionalProperties".into(), false.into());
        }
        // An explicit `additionalProperties` (a map such as `HashMap<String, T>`, or `true`) is
        // kept as is. Strict mode cannot express a map; replacing it with `false` would make
        // the model always send an empty map (silent data loss), and turning it into a list of
        // pairs would change the tool's input shape. Keeping it makes OpenAI reject the tool
        // with an explicit error naming the field, so the author can choose non-strict mode
        // or a different input type.
        if let Some(Value::Object(props)) = o.remove("properties") {
            self.lower_properties(&mut o, props, depth);
        }
        for key in ["items", "additionalProperties"] {
            if let Some(sub) = o.remove(key) {
                let sub = match sub {
                    Value::Array(list) => {
                        Value::Array(list.into_iter().map(|s| self.lower(s, depth + 1)).collect())
                    }
                    other => self.lower(other, depth + 1),
                };
                o.insert(key.into(), sub);
            }
        }
        for key in ["anyOf", "prefixItems"] {
            if let Some(Value::Array(list)) = o.get_mut(key) {
                for s in list.iter_mut() {
                    *s = self.lower(s.take(), depth + 1);
                }
            }
        }
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = o.get_mut(key) {
                for s in defs.values_mut() {
                    *s = self.lower(s.take(), depth + 1);
                }
            }
        }
        o.retain(|k, v| match k.as_str() {
            "format" => v.as_str().is_some_and(|f| STRICT_FORMATS.contains(&f)),
            k => STRICT_KEYWORDS.contains(&k),
        });
        Value::Object(o)
    }

    /// Every property required (optional ones made nullable instead), each lowered.
    fn lower_properties(
        &mut self,
        o: &mut Map<String, Value>,
        props: Map<String, Value>,
        depth: usize,
    ) {
        let was_required: HashSet<String> = o
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let mut required = Vec::with_capacity(props.len());
        let mut lowered = Map::new();
        for (name, prop) in props {
            // Every property must be required; optional ones become nullable instead.
            let prop = if was_required.contains(&name) {
                prop
            } else {
                make_nullable(prop)
            };
            lowered.insert(name.clone(), self.lower(prop, depth + 1));
            required.push(Value::String(name));
        }
        o.insert("properties".into(), Value::Object(lowered));
        o.insert("required".into(), Value::Array(required));
    }
}

/// Makes a (strict-mode) property schema accept `null`, for a property that was optional.
fn make_nullable(schema: Value) -> Value {
    if admits_null(&schema) {
        return schema;
    }
    let Value::Object(mut o) = schema else {
        return schema;
    };
    let add_null_to_enum = |o: &mut Map<String, Value>| {
        if let Some(Value::Array(e)) = o.get_mut("enum")
            && !e.contains(&Value::Null)
        {
            e.push(Value::Null);
        }
    };
    if !o.contains_key("const") {
        match o.get_mut("type") {
            Some(Value::String(t)) => {
                let t = std::mem::take(t);
                o.insert("type".into(), json!([t, "null"]));
                add_null_to_enum(&mut o);
                return Value::Object(o);
            }
            Some(Value::Array(ts)) => {
                ts.push("null".into());
                add_null_to_enum(&mut o);
                return Value::Object(o);
            }
            _ => {}
        }
    }
    let constraints: Vec<&str> = o
        .keys()
        .map(String::as_str)
        .filter(|k| !ANNOTATIONS.contains(k))
        .collect();
    match constraints.as_slice() {
        ["enum"] => {
            add_null_to_enum(&mut o);
            return Value::Object(o);
        }
        [union @ ("anyOf" | "oneOf")] => {
            let union = union.to_string();
            if let Some(Value::Array(branches)) = o.get_mut(&union) {
                branches.push(json!({"type": "null"}));
                return Value::Object(o);
            }
        }
        _ => {}
    }
    // `$ref`, `const`, or anything else: wrap, keeping the annotations on the outside (a `$ref`
    // left alone inside the `anyOf` needs no inlining).
    let mut wrapper = Map::new();
    for key in ["title", "description"] {
        if let Some(v) = o.remove(key) {
            wrapper.insert(key.into(), v);
        }
    }
    wrapper.insert("anyOf".into(), json!([Value::Object(o), {"type": "null"}]));
    Value::Object(wrapper)
}
