//! Lowering to Gemini's `functionDeclarations` schema (a subset of the OpenAPI 3.0 schema object).

use serde_json::{Map, Value, json};

use super::MAX_DEPTH;
use super::canonical::{inlinable, merge_all_of, resolve_ref};

/// How many times one `$ref` may be expanded inside itself when Gemini forces inlining.
pub(super) const GEMINI_MAX_RECURSION: usize = 2;

/// Upper bound on schema nodes Gemini inlining may produce (a DAG of `$ref`s can otherwise
/// grow exponentially when inlined).
pub(super) const GEMINI_NODE_BUDGET: usize = 50_000;

/// Lowering to Gemini's OpenAPI 3.0 subset.
pub(super) struct Gemini<'a> {
    pub(super) root: &'a Value,
    /// `$ref`s being expanded on the current path.
    pub(super) expanding: Vec<String>,
    /// Nodes left to produce.
    pub(super) budget: usize,
}

/// Whether a Gemini schema field may be kept with this value. Gemini rejects unknown fields
/// ("Invalid JSON payload received. Unknown name ...") and values of the wrong JSON type.
fn gemini_keeps(key: &str, value: &Value) -> bool {
    match key {
        // Gemini (Developer API) accepts only these two formats and fails the request on
        // others; schemars' "uint64", "double", ... would be fatal.
        "format" => value == "enum" || value == "date-time",
        "type" | "title" | "description" | "pattern" => value.is_string(),
        "minItems" | "maxItems" | "minProperties" | "maxProperties" | "minLength" | "maxLength"
        | "minimum" | "maximum" => value.is_number(),
        "required" | "propertyOrdering" => value
            .as_array()
            .is_some_and(|a| a.iter().all(Value::is_string)),
        "enum" => value
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(Value::is_string)),
        // Both documented; Gemini accepts `default` (and ignores it).
        "example" | "default" => true,
        _ => false,
    }
}

/// Whether an `anyOf` branch only admits `null`.
fn is_null_schema(schema: &Value) -> bool {
    let Value::Object(o) = schema else {
        return false;
    };
    let null_type = match o.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(|t| t == "null"),
        _ => false,
    };
    null_type || o.get("const").is_some_and(Value::is_null) || o.get("enum") == Some(&json!([null]))
}

impl Gemini<'_> {
    pub(super) fn lower(&mut self, schema: Value, depth: usize) -> Value {
        if depth > MAX_DEPTH || self.budget == 0 {
            return Value::Object(Map::new());
        }
        self.budget -= 1;
        // Boolean schemas and junk have no Gemini form; `{}` is the unconstrained schema.
        let Value::Object(mut o) = schema else {
            return Value::Object(Map::new());
        };
        if let Some(all_of) = o.remove("allOf") {
            merge_all_of(&mut o, all_of, self.root);
        }
        if let Some(reference) = o.remove("$ref") {
            return self.inline_ref(&reference, o, depth);
        }
        let mut nullable = o.remove("nullable") == Some(Value::Bool(true));
        if let Some(one_of) = o.remove("oneOf")
            && !o.contains_key("anyOf")
        {
            o.insert("anyOf".into(), one_of);
        }
        nullable |= type_without_null(&mut o);
        nullable |= strings_only_enum(&mut o);
        nullable |= const_as_enum(&mut o);
        if o.contains_key("properties") && !o.contains_key("type") {
            o.insert("type".into(), "object".into());
        }
        // No tuples: a `prefixItems` tuple (schemars' `(A, B)`) becomes an array of `A | B`.
        if let Some(Value::Array(prefix)) = o.remove("prefixItems")
            && !o.contains_key("items")
        {
            o.insert("items".into(), json!({"anyOf": prefix}));
        }
        let any_of = o.remove("anyOf");
        let mut out = Map::new();
        for (key, value) in o {
            match key.as_str() {
                "properties" => {
                    if let Value::Object(props) = value {
                        let props = props
                            .into_iter()
                            .map(|(name, p)| (name, self.lower(p, depth + 1)))
                            .collect();
                        out.insert(key, Value::Object(props));
                    }
                }
                "items" => {
                    let items = match value {
                        // A 2019-09 tuple `items: [...]` has no Gemini form.
                        Value::Array(_) => continue,
                        other => self.lower(other, depth + 1),
                    };
                    out.insert(key, items);
                }
                k if gemini_keeps(k, &value) => {
                    out.insert(key, value);
                }
                _ => {}
            }
        }
        // `anyOf: [X, {"type": "null"}]` becomes X with `nullable: true`.
        if let Some(Value::Array(branches)) = any_of {
            let mut kept = Vec::with_capacity(branches.len());
            for branch in branches {
                if is_null_schema(&branch) {
                    nullable = true;
                } else {
                    let branch = self.lower(branch, depth + 1);
                    if !kept.contains(&branch) {
                        kept.push(branch);
                    }
                }
            }
            if kept.len() == 1 {
                if let Some(Value::Object(only)) = kept.pop() {
                    for (key, value) in only {
                        out.entry(key).or_insert(value);
                    }
                }
            } else if !kept.is_empty() {
                out.insert("anyOf".into(), Value::Array(kept));
            }
        }
        if nullable {
            out.insert("nullable".into(), true.into());
        }
        tidy_gemini_object(&mut out);
        Value::Object(out)
    }

    /// Inlines a `$ref` (Gemini has no `$defs`), cutting recursion off with a plain object.
    fn inline_ref(
        &mut self,
        reference: &Value,
        siblings: Map<String, Value>,
        depth: usize,
    ) -> Value {
        let reference = reference.as_str().unwrap_or_default();
        let target = resolve_ref(self.root, reference);
        let repeats = self.expanding.iter().filter(|r| *r == reference).count();
        let mut out = match target {
            Some(target) if repeats < GEMINI_MAX_RECURSION => {
                let target = match target {
                    Value::Object(t) => Value::Object(inlinable(t)),
                    other => other.clone(),
                };
                self.expanding.push(reference.to_string());
                let lowered = self.lower(target, depth + 1);
                self.expanding.pop();
                match lowered {
                    Value::Object(m) => m,
                    _ => Map::new(),
                }
            }
            // A recursive type, cut off here.
            Some(_) => Map::from_iter([("type".to_string(), Value::from("object"))]),
            // Not resolvable (external, or dangling): unconstrained.
            None => Map::new(),
        };
        if !siblings.is_empty()
            && let Value::Object(siblings) = self.lower(Value::Object(siblings), depth + 1)
        {
            out.extend(siblings);
        }
        tidy_gemini_object(&mut out);
        Value::Object(out)
    }
}

/// No type arrays: `["x", "null"]` becomes `"x"`, and `true` for the `nullable` it implies.
fn type_without_null(o: &mut Map<String, Value>) -> bool {
    let mut nullable = false;
    match o.remove("type") {
        Some(Value::Array(types)) => {
            let mut rest: Vec<Value> = Vec::new();
            for t in types {
                if t == "null" {
                    nullable = true;
                } else if t.is_string() && !rest.contains(&t) {
                    rest.push(t);
                }
            }
            match rest.len() {
                0 => {}
                1 => {
                    o.insert("type".into(), rest.remove(0));
                }
                _ if !o.contains_key("anyOf") => {
                    let branches = rest.into_iter().map(|t| json!({"type": t})).collect();
                    o.insert("anyOf".into(), Value::Array(branches));
                }
                _ => {
                    o.insert("type".into(), rest.remove(0));
                }
            }
        }
        Some(Value::String(t)) if t == "null" => nullable = true,
        Some(t) => {
            o.insert("type".into(), t);
        }
        None => {}
    }
    nullable
}

/// Gemini enums are strings only; `true` when the enum allowed null.
fn strings_only_enum(o: &mut Map<String, Value>) -> bool {
    let mut nullable = false;
    if let Some(Value::Array(values)) = o.remove("enum") {
        let mut kept = Vec::with_capacity(values.len());
        for v in values {
            if v.is_null() {
                nullable = true;
            } else {
                kept.push(v);
            }
        }
        if !kept.is_empty() && kept.iter().all(Value::is_string) {
            o.insert("enum".into(), Value::Array(kept));
        }
    }
    nullable
}

/// No `const`: a string constant is a one-value enum; other constants only keep their type
/// (Gemini cannot pin a number or a boolean). `true` when the constant is null.
fn const_as_enum(o: &mut Map<String, Value>) -> bool {
    let mut nullable = false;
    if let Some(c) = o.remove("const") {
        let inferred = match &c {
            Value::Null => {
                nullable = true;
                None
            }
            Value::String(_) => {
                o.entry("enum").or_insert_with(|| json!([c]));
                Some("string")
            }
            Value::Bool(_) => Some("boolean"),
            Value::Number(n) if n.is_f64() => Some("number"),
            Value::Number(_) => Some("integer"),
            Value::Array(_) => Some("array"),
            Value::Object(_) => Some("object"),
        };
        if let Some(t) = inferred {
            o.entry("type").or_insert_with(|| t.into());
        }
    }
    nullable
}

/// Gemini rejects `properties` on non-object types, an empty `properties`, and `required` names
/// that are not properties.
fn tidy_gemini_object(schema: &mut Map<String, Value>) {
    let is_object = schema.get("type").is_none_or(|t| t == "object");
    let names: Vec<String> = match schema.get("properties") {
        Some(Value::Object(p)) if is_object && !p.is_empty() => p.keys().cloned().collect(),
        _ => {
            schema.remove("properties");
            Vec::new()
        }
    };
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.retain(|r| r.as_str().is_some_and(|r| names.iter().any(|n| n == r)));
        if required.is_empty() {
            schema.remove("required");
        }
    }
}
