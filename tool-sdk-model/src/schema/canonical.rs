//! The canonical schema (JSON Schema 2020-12 from schemars), and reading it: local `$ref`s and
//! `allOf` merging, which both lowerings need.

use serde_json::{Map, Value};

pub use tool_sdk_core::schema_for;

/// Resolves a local `$ref` (`#` or a `#/...` JSON pointer) against the root schema.
pub(super) fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    match reference {
        "#" => Some(root),
        r if r.starts_with("#/") => root.pointer(&r[1..]),
        _ => None,
    }
}

/// A copy of a `$ref` target suitable for inlining: the keywords that only make sense at the
/// document root are removed.
pub(super) fn inlinable(target: &Map<String, Value>) -> Map<String, Value> {
    let mut copy = target.clone();
    for key in ["$defs", "definitions", "$schema", "$id"] {
        copy.remove(key);
    }
    copy
}

/// Folds `allOf` parts into `schema`: `properties` and `required` are unioned, any other keyword
/// is taken from the first place it appears (the schema's own keywords win). `$ref` parts are
/// resolved one level. An approximation of the intersection, which neither strict OpenAI nor
/// Gemini can express.
pub(super) fn merge_all_of(schema: &mut Map<String, Value>, all_of: Value, root: &Value) {
    let Value::Array(parts) = all_of else { return };
    for part in parts {
        let Value::Object(mut part) = part else {
            continue;
        };
        if let Some(Value::String(r)) = part.get("$ref")
            && let Some(Value::Object(target)) = resolve_ref(root, r)
        {
            let mut resolved = inlinable(target);
            part.remove("$ref");
            resolved.extend(part);
            part = resolved;
        }
        for (key, value) in part {
            if let Some(existing) = schema.get_mut(&key) {
                match (key.as_str(), existing, value) {
                    ("properties", Value::Object(mine), Value::Object(theirs)) => {
                        for (name, prop) in theirs {
                            mine.entry(name).or_insert(prop);
                        }
                    }
                    ("required", Value::Array(mine), Value::Array(theirs)) => {
                        for name in theirs {
                            if !mine.contains(&name) {
                                mine.push(name);
                            }
                        }
                    }
                    _ => {}
                }
            } else {
                schema.insert(key, value);
            }
        }
    }
}
