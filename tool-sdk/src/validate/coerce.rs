//! Schema-guided coercion, and the schema walks it is built on (the types a schema admits, the
//! property names it declares).

use serde_json::{Map, Number, Value};

use super::depth::local_pointer;
use super::{MAX_DESCRIBE_DEPTH, MAX_WALK_DEPTH, WALK_BUDGET};

/// A set of JSON types as bits; integral numbers and other numbers apart.
type Types = u8;
const T_NULL: Types = 1;
const T_BOOL: Types = 2;
const T_INT: Types = 4;
const T_FRAC: Types = 8;
const T_STRING: Types = 16;
const T_ARRAY: Types = 32;
const T_OBJECT: Types = 64;
const T_ALL: Types = 127;

fn types_named(name: &str) -> Types {
    match name {
        "null" => T_NULL,
        "boolean" => T_BOOL,
        "integer" => T_INT,
        "number" => T_INT | T_FRAC,
        "string" => T_STRING,
        "array" => T_ARRAY,
        "object" => T_OBJECT,
        _ => T_ALL,
    }
}

fn type_of(value: &Value) -> Types {
    match value {
        Value::Null => T_NULL,
        Value::Bool(_) => T_BOOL,
        Value::Number(n) if is_integral(n) => T_INT,
        Value::Number(_) => T_FRAC,
        Value::String(_) => T_STRING,
        Value::Array(_) => T_ARRAY,
        Value::Object(_) => T_OBJECT,
    }
}

fn is_integral(n: &Number) -> bool {
    n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// A walk over the schema guided by an input, with `$ref`s resolved in the schema's root.
/// Bounded in depth and in total steps, so any schema shape terminates.
pub(super) struct Walk<'s> {
    root: &'s Value,
    budget: usize,
}

impl<'s> Walk<'s> {
    pub(super) fn new(root: &'s Value) -> Self {
        Self {
            root,
            budget: WALK_BUDGET,
        }
    }

    fn step(&mut self, depth: usize) -> bool {
        if depth > MAX_WALK_DEPTH || self.budget == 0 {
            return false;
        }
        self.budget -= 1;
        true
    }

    fn resolve(&self, reference: &str) -> Option<&'s Value> {
        self.root.pointer(&local_pointer(reference)?)
    }

    /// The types a value may have under `schema`, judged from `type`, `const`, `enum`, `$ref`
    /// and the combinators (not from the other keywords). When unsure: all types.
    fn admitted(&mut self, schema: &'s Value, depth: usize) -> Types {
        let Value::Object(s) = schema else {
            return if schema.as_bool() == Some(false) {
                0
            } else {
                T_ALL
            };
        };
        if !self.step(depth) {
            return T_ALL;
        }
        let mut set = T_ALL;
        match s.get("type") {
            Some(Value::String(name)) => set &= types_named(name),
            Some(Value::Array(names)) => {
                set &= names.iter().fold(0, |acc, name| {
                    acc | name.as_str().map_or(T_ALL, types_named)
                });
            }
            _ => {}
        }
        if let Some(constant) = s.get("const") {
            set &= type_of(constant);
        }
        if let Some(Value::Array(options)) = s.get("enum") {
            set &= options.iter().fold(0, |acc, option| acc | type_of(option));
        }
        if let Some(Value::String(reference)) = s.get("$ref")
            && let Some(target) = self.resolve(reference)
        {
            set &= self.admitted(target, depth + 1);
        }
        if let Some(Value::Array(branches)) = s.get("allOf") {
            for branch in branches {
                set &= self.admitted(branch, depth + 1);
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(keyword) {
                let mut union = 0;
                for branch in branches {
                    union |= self.admitted(branch, depth + 1);
                }
                set &= union;
            }
        }
        set
    }

    /// Coerces `value` in place where `schema` asks for it; true when anything changed.
    pub(super) fn coerce(&mut self, schema: &'s Value, value: &mut Value, depth: usize) -> bool {
        let Value::Object(s) = schema else {
            return false;
        };
        if !self.step(depth) {
            return false;
        }
        if let Value::String(text) = value {
            let admitted = self.admitted(schema, depth);
            if admitted & T_STRING != 0 {
                return false;
            }
            return match coerce_scalar(text, admitted) {
                Some(coerced) => {
                    *value = coerced;
                    true
                }
                None => false,
            };
        }
        if !value.is_object() && !value.is_array() {
            return false;
        }
        let mut changed = false;
        if let Some(Value::String(reference)) = s.get("$ref")
            && let Some(target) = self.resolve(reference)
        {
            changed |= self.coerce(target, value, depth + 1);
        }
        if let Some(Value::Array(branches)) = s.get("allOf") {
            for branch in branches {
                changed |= self.coerce(branch, value, depth + 1);
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(keyword) {
                for branch in branches {
                    if self.admitted(branch, depth + 1) & type_of(value) != 0
                        && self.tags_match(branch, value, depth + 1)
                    {
                        changed |= self.coerce(branch, value, depth + 1);
                    }
                }
            }
        }
        match value {
            Value::Object(map) => changed |= self.coerce_object(s, map, depth),
            Value::Array(items) => changed |= self.coerce_array(s, items, depth),
            _ => {}
        }
        changed
    }

    fn coerce_object(
        &mut self,
        s: &'s Map<String, Value>,
        map: &mut Map<String, Value>,
        depth: usize,
    ) -> bool {
        let mut changed = false;
        let properties = s.get("properties").and_then(Value::as_object);
        if let Some(properties) = properties {
            let required = s.get("required").and_then(Value::as_array);
            map.retain(|key, value| {
                let Some(property) = properties.get(key) else {
                    return true;
                };
                let drop = value.is_null()
                    && !required.is_some_and(|r| r.iter().any(|name| name.as_str() == Some(key)))
                    && self.admitted(property, depth + 1) & T_NULL == 0;
                changed |= drop;
                !drop
            });
        }
        let additional = match s.get("additionalProperties") {
            Some(schema @ Value::Object(_)) if !s.contains_key("patternProperties") => Some(schema),
            _ => None,
        };
        for (key, value) in map.iter_mut() {
            if let Some(property) = properties.and_then(|p| p.get(key)).or(additional) {
                changed |= self.coerce(property, value, depth + 1);
            }
        }
        changed
    }

    fn coerce_array(
        &mut self,
        s: &'s Map<String, Value>,
        items: &mut [Value],
        depth: usize,
    ) -> bool {
        let (prefix, rest) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (_, Some(Value::Array(prefix))) => (prefix.as_slice(), s.get("additionalItems")),
            (_, rest) => (&[][..], rest),
        };
        let mut changed = false;
        for (index, item) in items.iter_mut().enumerate() {
            if let Some(schema) = prefix.get(index).or(rest) {
                changed |= self.coerce(schema, item, depth + 1);
            }
        }
        changed
    }

    /// False when `branch` pins a property to a `const` (a tag) that the object has otherwise.
    fn tags_match(&mut self, branch: &'s Value, value: &Value, depth: usize) -> bool {
        let Value::Object(object) = value else {
            return true;
        };
        let mut branch = branch;
        for hop in 0.. {
            let Some(Value::String(reference)) = branch.get("$ref") else {
                break;
            };
            match self.resolve(reference) {
                Some(target) if hop < 8 && self.step(depth) => branch = target,
                _ => return true,
            }
        }
        let Some(properties) = branch.get("properties").and_then(Value::as_object) else {
            return true;
        };
        properties.iter().all(
            |(key, property)| match (property.get("const"), object.get(key)) {
                (Some(tag), Some(actual)) => tag == actual,
                _ => true,
            },
        )
    }

    /// Names of the properties `schema` declares, through `$ref` and the combinators.
    pub(super) fn property_names(
        &mut self,
        schema: &'s Value,
        depth: usize,
        out: &mut Vec<&'s str>,
    ) {
        let Value::Object(s) = schema else {
            return;
        };
        if !self.step(depth) || depth > MAX_DESCRIBE_DEPTH {
            return;
        }
        if let Some(properties) = s.get("properties").and_then(Value::as_object) {
            for name in properties.keys() {
                if !out.contains(&name.as_str()) {
                    out.push(name);
                }
            }
        }
        if let Some(Value::String(reference)) = s.get("$ref")
            && let Some(target) = self.resolve(reference)
        {
            self.property_names(target, depth + 1, out);
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(keyword) {
                for branch in branches {
                    self.property_names(branch, depth + 1, out);
                }
            }
        }
    }
}

/// A number or boolean for `text`, if one of the `admitted` types takes it.
fn coerce_scalar(text: &str, admitted: Types) -> Option<Value> {
    let text = text.trim();
    if admitted & (T_INT | T_FRAC) != 0 {
        if let Ok(n) = text.parse::<i64>() {
            return Some(Value::from(n));
        }
        if let Ok(n) = text.parse::<u64>() {
            return Some(Value::from(n));
        }
        // `f64::from_str` also takes "inf"/"NaN": only finite numbers count.
        if let Ok(f) = text.parse::<f64>()
            && f.is_finite()
        {
            if admitted & T_FRAC != 0 {
                return Number::from_f64(f).map(Value::Number);
            }
            if f.fract() == 0.0 {
                // Integers as integers: serde's u64/i64 refuse 5.0.
                if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                    #[allow(clippy::cast_possible_truncation)]
                    return Some(Value::from(f as i64));
                }
                if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    return Some(Value::from(f as u64));
                }
            }
        }
    }
    if admitted & T_BOOL != 0 {
        if text.eq_ignore_ascii_case("true") {
            return Some(Value::Bool(true));
        }
        if text.eq_ignore_ascii_case("false") {
            return Some(Value::Bool(false));
        }
    }
    None
}
