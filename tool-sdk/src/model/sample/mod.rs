//! Values made up from a JSON Schema, for [`TestModel`](super::TestModel): every type, bounds,
//! lengths, enums and `const`, `oneOf`/`anyOf`/`allOf`, `$ref` into `$defs` (as schemars
//! emits them), string patterns and the common string formats.

use serde_json::{Map, Value, json};

use keywords::{
    bounds, describe_bounds, formatted, here, implied_type, merge, number, percent_decode, within,
    without, without_ref,
};

mod keywords;
mod pattern;
#[cfg(test)]
mod tests;

/// The largest `minLength`, `minItems` or `minProperties` honoured: a test value that big
/// is a mistake in the schema, and would take the memory of one.
const MOST: u64 = 100_000;

/// How deep `$ref`s may nest before only what is required is made: recursive types end.
const DEEP: usize = 10;
/// Past this, the schema is taken to recurse without end.
const TOO_DEEP: usize = 64;

/// Makes up values valid against one schema document (the root that `$ref`s point into).
pub(super) struct Sampler<'a> {
    root: &'a Value,
    rng: &'a mut fastrand::Rng,
}

impl<'a> Sampler<'a> {
    pub(super) fn new(root: &'a Value, rng: &'a mut fastrand::Rng) -> Self {
        Sampler { root, rng }
    }

    /// A value for the root schema, or why none can be made.
    pub(super) fn sample(&mut self) -> Result<Value, String> {
        self.value(self.root, 0, "")
    }

    fn value(&mut self, schema: &Value, depth: usize, at: &str) -> Result<Value, String> {
        if depth > TOO_DEEP {
            return Err(format!("{}: the schema nests without end", here(at)));
        }
        let object = match schema {
            Value::Bool(true) => return Ok(Value::Null),
            Value::Bool(false) => {
                return Err(format!("{}: the schema `false` accepts nothing", here(at)));
            }
            Value::Object(object) => object,
            other => return Err(format!("{}: {other} is not a schema", here(at))),
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            let target = self.resolve(reference, at)?;
            // Keywords beside `$ref` (2019-09 and later) apply too.
            let merged = merge(target, &without(object, "$ref"));
            return self.value(&merged, depth + 1, at);
        }
        if let Some(all) = object.get("allOf").and_then(Value::as_array) {
            let mut merged = without(object, "allOf");
            for part in all {
                let part = match part.get("$ref").and_then(Value::as_str) {
                    Some(reference) => merge(self.resolve(reference, at)?, &without_ref(part)),
                    None => part.clone(),
                };
                merged = merge(&merged, &part);
            }
            return self.value(&merged, depth + 1, at);
        }
        if let Some(value) = object.get("const") {
            return Ok(value.clone());
        }
        if let Some(choices) = object.get("enum").and_then(Value::as_array) {
            if choices.is_empty() {
                return Err(format!("{}: the enum is empty", here(at)));
            }
            return Ok(choices[self.rng.usize(..choices.len())].clone());
        }
        for key in ["oneOf", "anyOf"] {
            if let Some(branches) = object.get(key).and_then(Value::as_array) {
                if branches.is_empty() {
                    return Err(format!("{}: `{key}` has no branch", here(at)));
                }
                let branch = self.branch(branches, depth);
                let merged = merge(&without(object, key), branch);
                return self.value(&merged, depth + 1, at);
            }
        }
        let kind = match object.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(Value::Array(kinds)) if !kinds.is_empty() => {
                // Deep down, `null` ends a recursive type.
                let null = kinds.iter().any(|k| k == "null");
                let pick = if depth >= DEEP && null {
                    "null"
                } else {
                    kinds[self.rng.usize(..kinds.len())]
                        .as_str()
                        .unwrap_or("null")
                };
                pick.to_owned()
            }
            None => implied_type(object).to_owned(),
            Some(other) => {
                return Err(format!("{}: `type` {other} names no type", here(at)));
            }
        };
        match kind.as_str() {
            "null" => Ok(Value::Null),
            "boolean" => Ok(Value::Bool(self.rng.bool())),
            "integer" => self.integer(object, at),
            "number" => self.number(object, at),
            "string" => self.string(object, at),
            "array" => self.array(object, depth, at),
            "object" => self.object(object, depth, at),
            other => Err(format!("{}: unknown type `{other}`", here(at))),
        }
    }

    /// A `oneOf`/`anyOf` branch: any, until deep down, where one without a `$ref` (say the
    /// `null` of an `Option`) ends a recursive type.
    fn branch<'s>(&mut self, branches: &'s [Value], depth: usize) -> &'s Value {
        if depth >= DEEP
            && let Some(plain) = branches
                .iter()
                .find(|b| !b.to_string().contains("\"$ref\""))
        {
            return plain;
        }
        &branches[self.rng.usize(..branches.len())]
    }

    fn resolve(&self, reference: &str, at: &str) -> Result<&'a Value, String> {
        let pointer = reference.strip_prefix('#').ok_or_else(|| {
            format!(
                "{}: `$ref` {reference} points outside the schema, which a test model cannot \
                 follow",
                here(at)
            )
        })?;
        let pointer = percent_decode(pointer);
        self.root
            .pointer(&pointer)
            .ok_or_else(|| format!("{}: `$ref` {reference} points at nothing", here(at)))
    }

    fn integer(&mut self, schema: &Map<String, Value>, at: &str) -> Result<Value, String> {
        let (low, high) = bounds(schema);
        let mut low = low.map_or(i64::MIN as f64, |(b, exclusive)| {
            let up = b.ceil();
            if exclusive && up == b { up + 1.0 } else { up }
        });
        let mut high = high.map_or(i64::MAX as f64, |(b, exclusive)| {
            let down = b.floor();
            if exclusive && down == b {
                down - 1.0
            } else {
                down
            }
        });
        // Small numbers near the bounds, as a person would write.
        match (low > i64::MIN as f64, high < i64::MAX as f64) {
            (false, false) => (low, high) = (0.0, 100.0),
            (true, false) => high = low + 100.0,
            (false, true) => low = high - 100.0,
            (true, true) => {}
        }
        let step = schema
            .get("multipleOf")
            .and_then(Value::as_f64)
            .filter(|m| *m > 0.0);
        let step = match step {
            Some(m) if m.fract() == 0.0 => m,
            Some(m) => {
                // An integer multiple of a fraction: the smallest whole multiple of it.
                let whole = (1..=1000)
                    .map(f64::from)
                    .find(|k| ((k * m).round() - k * m).abs() < 1e-9)
                    .map(|k| (k * m).round());
                whole
                    .ok_or_else(|| format!("{}: no integer is a multiple of {m} here", here(at)))?
            }
            None => 1.0,
        };
        let first = (low / step).ceil();
        let last = (high / step).floor();
        if first > last {
            return Err(format!(
                "{}: no integer between the bounds {}",
                here(at),
                describe_bounds(schema)
            ));
        }
        let span = (last - first).min(1e15) as u64;
        let k = first + self.rng.u64(..=span) as f64;
        Ok(json!((k * step) as i64))
    }

    fn number(&mut self, schema: &Map<String, Value>, at: &str) -> Result<Value, String> {
        let (low, high) = bounds(schema);
        let step = schema.get("multipleOf").and_then(Value::as_f64);
        if let Some(m) = step.filter(|m| *m > 0.0) {
            // Multiples counted from the lower bound up, or from the upper one down.
            let (start, dir) = match (low, high) {
                (Some((b, _)), _) => ((b / m).ceil(), 1.0),
                (None, Some((b, _))) => ((b / m).floor(), -1.0),
                (None, None) => (0.0, 1.0),
            };
            let found = (0..1000)
                .map(|i| (start + dir * f64::from(i)) * m)
                .find(|v| within(low, high, *v));
            return found.map(number).ok_or_else(|| {
                format!(
                    "{}: no multiple of {m} {}",
                    here(at),
                    describe_bounds(schema)
                )
            });
        }
        let (lo, hi) = match (low, high) {
            (None, None) => (0.0, 100.0),
            (Some((b, _)), None) => (b, b + 100.0),
            (None, Some((b, _))) => (b - 100.0, b),
            (Some((l, _)), Some((h, _))) => (l, h),
        };
        let open = low.is_some_and(|(_, ex)| ex) || high.is_some_and(|(_, ex)| ex);
        if lo > hi || (open && lo == hi) {
            return Err(format!(
                "{}: no number between the bounds {}",
                here(at),
                describe_bounds(schema)
            ));
        }
        // Strictly inside, so exclusive bounds hold; two decimals when that stays inside.
        let raw = lo + (hi - lo) * (0.1 + 0.8 * self.rng.f64());
        let round = (raw * 100.0).round() / 100.0;
        Ok(number(if within(low, high, round) { round } else { raw }))
    }

    fn string(&mut self, schema: &Map<String, Value>, at: &str) -> Result<Value, String> {
        let min = least(schema, "minLength", at)?;
        let max = schema
            .get("maxLength")
            .and_then(Value::as_u64)
            .map_or(usize::MAX, |m| m as usize);
        if min > max {
            return Err(format!(
                "{}: minLength {min} is above maxLength {max}",
                here(at)
            ));
        }
        // The pattern first: validators check it always, and formats only when asked.
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            return self.matching(pattern, min, max, at).map(Value::String);
        }
        let format = schema.get("format").and_then(Value::as_str);
        if let Some(text) = format.and_then(formatted) {
            let length = text.chars().count();
            if (min..=max).contains(&length) {
                return Ok(Value::String(text.to_owned()));
            }
        }
        // A short word, not empty unless it must be.
        let shortest = min.max(1).min(max);
        let length = self.rng.usize(shortest..=max.min(shortest + 7));
        Ok(Value::String(
            (0..length).map(|_| self.rng.lowercase()).collect(),
        ))
    }

    /// A string matching `pattern`, within the lengths: made from the parsed pattern, drawn
    /// again while a length is off.
    fn matching(
        &mut self,
        pattern: &str,
        min: usize,
        max: usize,
        at: &str,
    ) -> Result<String, String> {
        let hir = regex_syntax::Parser::new()
            .parse(pattern)
            .map_err(|error| {
                format!("{}: the pattern {pattern:?} is unusable: {error}", here(at))
            })?;
        for _ in 0..32 {
            let mut text = String::new();
            pattern::write(&hir, self.rng, &mut text);
            if (min..=max).contains(&text.chars().count()) {
                return Ok(text);
            }
        }
        Err(format!(
            "{}: cannot make up a string of {min} to {max} characters matching the pattern \
             {pattern:?}; give the tool's arguments with `TestModel::with_arguments`",
            here(at)
        ))
    }

    fn array(
        &mut self,
        schema: &Map<String, Value>,
        depth: usize,
        at: &str,
    ) -> Result<Value, String> {
        let min = least(schema, "minItems", at)?;
        let max = schema
            .get("maxItems")
            .and_then(Value::as_u64)
            .map_or(usize::MAX, |m| m as usize);
        if min > max {
            return Err(format!(
                "{}: minItems {min} is above maxItems {max}",
                here(at)
            ));
        }
        // Tuples: 2020-12 `prefixItems`, or draft 4-7 `items` as an array.
        let (prefix, rest) = match (schema.get("prefixItems"), schema.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), rest),
            (_, Some(Value::Array(prefix))) => (prefix.as_slice(), schema.get("additionalItems")),
            (_, rest) => (&[][..], rest),
        };
        let rest_allowed = !matches!(rest, Some(Value::Bool(false)));
        let wanted = if depth >= DEEP {
            min
        } else {
            self.rng.usize(min..=max.min(min + 2))
        };
        let length = if rest_allowed {
            wanted.max(prefix.len().min(max)).max(min)
        } else {
            prefix.len()
        };
        if length < min || length > max {
            return Err(format!(
                "{}: a tuple of {} items cannot have {min} to {max} items",
                here(at),
                prefix.len()
            ));
        }
        let unique = schema.get("uniqueItems") == Some(&Value::Bool(true));
        let anything = Value::Bool(true);
        let mut items: Vec<Value> = Vec::with_capacity(length);
        let mut tries = 0;
        while items.len() < length {
            let index = items.len();
            let item_schema = prefix.get(index).or(rest).unwrap_or(&anything);
            let item = self.value(item_schema, depth + 1, &format!("{at}/{index}"))?;
            if unique && items.contains(&item) {
                tries += 1;
                if tries > 64 {
                    // Fewer distinct values than items asked: stop when the minimum is met.
                    if items.len() >= min {
                        break;
                    }
                    return Err(format!(
                        "{}: cannot make {min} distinct items (uniqueItems)",
                        here(at)
                    ));
                }
                continue;
            }
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn object(
        &mut self,
        schema: &Map<String, Value>,
        depth: usize,
        at: &str,
    ) -> Result<Value, String> {
        let empty = Map::new();
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let min = least(schema, "minProperties", at)?;
        let max = schema
            .get("maxProperties")
            .and_then(Value::as_u64)
            .map_or(usize::MAX, |m| m as usize);
        let mut out = Map::new();
        for name in &required {
            let property = properties.get(*name).unwrap_or(&Value::Bool(true));
            let value = self.value(property, depth + 1, &format!("{at}/{name}"))?;
            out.insert((*name).to_owned(), value);
        }
        // Optional properties: about half, unless deep in a recursive type.
        for (name, property) in properties {
            if out.contains_key(name) || out.len() >= max {
                continue;
            }
            let wanted = out.len() < min || (depth < DEEP && self.rng.bool());
            if wanted {
                let value = self.value(property, depth + 1, &format!("{at}/{name}"))?;
                out.insert(name.clone(), value);
            }
        }
        let extra = schema
            .get("additionalProperties")
            .unwrap_or(&Value::Bool(true));
        let mut n = 0;
        while out.len() < min {
            if extra == &Value::Bool(false) {
                return Err(format!(
                    "{}: minProperties {min} is more than the properties allowed",
                    here(at)
                ));
            }
            n += 1;
            let name = format!("extra_{n}");
            let value = self.value(extra, depth + 1, &format!("{at}/{name}"))?;
            out.insert(name, value);
        }
        if out.len() > max {
            return Err(format!(
                "{}: {} required properties, but maxProperties is {max}",
                here(at),
                required.len()
            ));
        }
        Ok(Value::Object(out))
    }
}

/// A `min...` keyword's value, 0 when absent; an error past [`MOST`].
fn least(schema: &Map<String, Value>, key: &str, at: &str) -> Result<usize, String> {
    match schema.get(key).and_then(Value::as_u64).unwrap_or(0) {
        n if n > MOST => Err(format!(
            "{}: {key} {n} is more than a test value should hold ({MOST} at most)",
            here(at)
        )),
        n => Ok(n as usize),
    }
}
