//! What the sampler reads off a schema: bounds, formats, implied types, merged subschemas.

use serde_json::{Map, Number, Value};

/// The type a schema without `type` describes by its other keywords.
pub(super) fn implied_type(schema: &Map<String, Value>) -> &'static str {
    let has = |keys: &[&str]| keys.iter().any(|k| schema.contains_key(*k));
    if has(&[
        "properties",
        "required",
        "additionalProperties",
        "minProperties",
    ]) {
        "object"
    } else if has(&["items", "prefixItems", "minItems", "maxItems"]) {
        "array"
    } else if has(&["minLength", "maxLength", "pattern", "format"]) {
        "string"
    } else if has(&[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    ]) {
        "number"
    } else {
        "null"
    }
}

/// The lower and upper bounds, each with whether it is exclusive: 2020-12 numbers, and
/// draft 4's boolean `exclusiveMinimum`/`exclusiveMaximum`.
pub(super) type Bound = Option<(f64, bool)>;

pub(super) fn bounds(schema: &Map<String, Value>) -> (Bound, Bound) {
    let side = |inclusive: &str, exclusive: &str, tighter: fn(f64, f64) -> bool| {
        let plain = schema.get(inclusive).and_then(Value::as_f64);
        match schema.get(exclusive) {
            Some(Value::Bool(true)) => plain.map(|b| (b, true)),
            Some(Value::Number(n)) => {
                let ex = n.as_f64().unwrap_or_default();
                match plain {
                    Some(b) if !tighter(ex, b) => Some((b, false)),
                    _ => Some((ex, true)),
                }
            }
            _ => plain.map(|b| (b, false)),
        }
    };
    (
        side("minimum", "exclusiveMinimum", |ex, b| ex >= b),
        side("maximum", "exclusiveMaximum", |ex, b| ex <= b),
    )
}

pub(super) fn within(low: Bound, high: Bound, v: f64) -> bool {
    low.is_none_or(|(b, ex)| if ex { v > b } else { v >= b })
        && high.is_none_or(|(b, ex)| if ex { v < b } else { v <= b })
}

pub(super) fn describe_bounds(schema: &Map<String, Value>) -> String {
    let keys = [
        "minimum",
        "exclusiveMinimum",
        "maximum",
        "exclusiveMaximum",
        "multipleOf",
    ];
    keys.iter()
        .filter_map(|k| schema.get(*k).map(|v| format!("{k} {v}")))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn number(value: f64) -> Value {
    Number::from_f64(value).map_or(Value::Null, Value::Number)
}

/// A valid example of a common string format.
pub(super) fn formatted(format: &str) -> Option<&'static str> {
    Some(match format {
        "date-time" => "2024-01-02T03:04:05Z",
        "date" => "2024-01-02",
        "time" => "03:04:05Z",
        "duration" => "P1D",
        "email" | "idn-email" => "user@example.com",
        "hostname" | "idn-hostname" => "example.com",
        "ipv4" => "192.0.2.1",
        "ipv6" => "2001:db8::1",
        "uri" | "iri" | "url" => "https://example.com/",
        "uri-reference" | "iri-reference" => "/path",
        "uri-template" => "https://example.com/{id}",
        "uuid" => "123e4567-e89b-12d3-a456-426614174000",
        "json-pointer" => "/a/b",
        "relative-json-pointer" => "0/a",
        "regex" => "^a+$",
        _ => return None,
    })
}

/// The schema's keywords with `other`'s on top; `properties` and `required` are joined.
pub(super) fn merge(base: &Value, other: &Value) -> Value {
    let (Value::Object(base), Value::Object(other)) = (base, other) else {
        return other.clone();
    };
    let mut out = base.clone();
    for (key, value) in other {
        match (key.as_str(), out.get_mut(key), value) {
            ("properties", Some(Value::Object(mine)), Value::Object(theirs)) => {
                for (name, schema) in theirs {
                    let joined = match mine.get(name) {
                        Some(existing) => merge(existing, schema),
                        None => schema.clone(),
                    };
                    mine.insert(name.clone(), joined);
                }
            }
            ("required", Some(Value::Array(mine)), Value::Array(theirs)) => {
                for name in theirs {
                    if !mine.contains(name) {
                        mine.push(name.clone());
                    }
                }
            }
            // Annotations are not constraints: the target's stay.
            ("description" | "title" | "default" | "examples", Some(_), _) => {}
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    Value::Object(out)
}

pub(super) fn without(schema: &Map<String, Value>, key: &str) -> Value {
    let mut out = schema.clone();
    out.remove(key);
    Value::Object(out)
}

pub(super) fn without_ref(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => without(object, "$ref"),
        other => other.clone(),
    }
}

/// `%25`-style escapes in a `$ref`'s pointer (schemars writes none, others may).
pub(super) fn percent_decode(pointer: &str) -> String {
    let bytes = pointer.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(byte) = pointer
                .get(i + 1..i + 3)
                .and_then(|hex| u8::from_str_radix(hex, 16).ok())
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| pointer.to_owned())
}

pub(super) fn here(at: &str) -> String {
    if at.is_empty() {
        "at the root".into()
    } else {
        format!("at {at}")
    }
}
