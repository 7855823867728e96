//! Canonical input schemas and their lowering for each model provider.
//!
//! A tool's input schema is generated once (JSON Schema 2020-12, via schemars) and then
//! lowered, on demand, to the dialect each provider's tool-list format accepts.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

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

/// The canonical schema of a tool input type: JSON Schema draft 2020-12 from schemars,
/// `$defs` kept, `$schema` kept, the root `title` removed (it is the Rust type name, noise for a
/// model).
pub fn schema_for<T: schemars::JsonSchema + ?Sized>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.remove("title");
    }
    value
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

/// How many times one `$ref` may be expanded inside itself when Gemini forces inlining.
const GEMINI_MAX_RECURSION: usize = 2;

/// Upper bound on schema nodes Gemini inlining may produce (a DAG of `$ref`s can otherwise
/// grow exponentially when inlined).
const GEMINI_NODE_BUDGET: usize = 50_000;

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

/// Resolves a local `$ref` (`#` or a `#/...` JSON pointer) against the root schema.
fn resolve_ref<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    match reference {
        "#" => Some(root),
        r if r.starts_with("#/") => root.pointer(&r[1..]),
        _ => None,
    }
}

/// A copy of a `$ref` target suitable for inlining: the keywords that only make sense at the
/// document root are removed.
fn inlinable(target: &Map<String, Value>) -> Map<String, Value> {
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
fn merge_all_of(schema: &mut Map<String, Value>, all_of: Value, root: &Value) {
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
struct Strict<'a> {
    root: &'a Value,
    /// `$ref`s being inlined on the current path (to stop at recursive types).
    inlining: Vec<String>,
}

impl Strict<'_> {
    fn lower(&mut self, schema: Value, depth: usize) -> Value {
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

/// Lowering to Gemini's OpenAPI 3.0 subset.
struct Gemini<'a> {
    root: &'a Value,
    /// `$ref`s being expanded on the current path.
    expanding: Vec<String>,
    /// Nodes left to produce.
    budget: usize,
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
    fn lower(&mut self, schema: Value, depth: usize) -> Value {
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
        // No type arrays: `["x", "null"]` becomes `"x"` plus `nullable`.
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
        // Gemini enums are strings only.
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
        // No `const`: a string constant is a one-value enum; other constants only keep their
        // type (Gemini cannot pin a number or a boolean).
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::{Value, json};

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
}
