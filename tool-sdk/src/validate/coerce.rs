//! Schema-guided coercion, and the schema walks it is built on (the types a schema admits, the
//! property names it declares).

use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use jsonschema::{Draft, Registry, Validator};
use serde_json::{Map, Number, Value, json};

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

/// Where branch validators find the schema's root, and where they live themselves: any two
/// distinct URIs do.
const ROOT_URI: &str = "json-schema:///tool-sdk/input";
const BRANCH_URI: &str = "json-schema:///tool-sdk/branch";

/// Validators of single `anyOf`/`oneOf` branches, by the branch's JSON pointer in the schema.
/// Compiled when coercion first needs one (only for an invalid input whose value more than one
/// branch could be meant for), and shared by the clones of an `InputValidator`.
#[derive(Default)]
pub(super) struct BranchValidators {
    /// The schema's root as the branch validators' `$ref`s find it (`None` if it cannot be
    /// registered). Prepared once: it indexes the whole schema.
    registry: OnceLock<Option<Registry<'static>>>,
    compiled: Mutex<HashMap<String, Option<Arc<Validator>>>>,
}

impl BranchValidators {
    /// How many branch validators were compiled (or failed to).
    #[cfg(test)]
    pub(super) fn compiled(&self) -> usize {
        self.compiled
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The validator of the subschema at `pointer` in `root`; `None` if it does not compile.
    fn get(&self, root: &Value, pointer: &str) -> Option<Arc<Validator>> {
        // The map is only read or added to, so a poisoned lock is still whole.
        let compiled = || self.compiled.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = compiled().get(pointer) {
            return found.clone();
        }
        // Compiled outside the lock: another thread may do the same work, never wait for it.
        let registry = self.registry.get_or_init(|| {
            let prepared = catch_unwind(AssertUnwindSafe(|| {
                Registry::new()
                    .draft(Draft::Draft202012)
                    .add(ROOT_URI, root.clone())
                    .ok()?
                    .prepare()
                    .ok()
            }));
            prepared.ok().flatten()
        });
        let validator = registry
            .as_ref()
            .and_then(|registry| compile_branch(registry, root, pointer))
            .map(Arc::new);
        compiled()
            .entry(pointer.to_owned())
            .or_insert(validator)
            .clone()
    }
}

/// Compiles the subschema at `pointer` as a reference into the whole schema, so its own
/// `$ref`s resolve as they do in the root validator (same draft choice, too).
fn compile_branch(registry: &Registry<'_>, root: &Value, pointer: &str) -> Option<Validator> {
    let mut reference = format!("{ROOT_URI}#");
    for byte in pointer.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/!$&'()*+,;=:@".contains(&byte) {
            reference.push(char::from(byte));
        } else {
            let _ = write!(reference, "%{byte:02X}");
        }
    }
    let mut wrapper = json!({ "$ref": reference });
    let dialect = root.get("$schema");
    if let Some(dialect) = dialect {
        wrapper["$schema"] = dialect.clone();
    }
    let built = catch_unwind(AssertUnwindSafe(|| {
        let mut options = jsonschema::options()
            .offline()
            .with_registry(registry)
            .with_base_uri(BRANCH_URI);
        if dialect.is_none() {
            options = options.with_draft(Draft::Draft202012);
        }
        options.build(&wrapper).ok()
    }));
    built.ok().flatten()
}

/// A walk over the schema guided by an input, with `$ref`s resolved in the schema's root.
/// Bounded in depth and in total steps, so any schema shape terminates.
pub(super) struct Walk<'s> {
    root: &'s Value,
    budget: usize,
    /// For coercion: validators of `anyOf`/`oneOf` branches.
    branches: Option<&'s BranchValidators>,
    /// JSON pointer of the schema node being coerced against (where its branches are).
    at: String,
}

impl<'s> Walk<'s> {
    pub(super) fn new(root: &'s Value) -> Self {
        Self {
            root,
            budget: WALK_BUDGET,
            branches: None,
            at: String::new(),
        }
    }

    /// A walk that can coerce through `anyOf`/`oneOf` (see [`Self::coerce_union`]).
    pub(super) fn with_branches(mut self, branches: &'s BranchValidators) -> Self {
        self.branches = Some(branches);
        self
    }

    /// Coerces `value` against `schema`, found at `self.at` plus `segment`.
    fn coerce_at(
        &mut self,
        segment: fmt::Arguments<'_>,
        schema: &'s Value,
        value: &mut Value,
        depth: usize,
    ) -> bool {
        let len = self.at.len();
        let _ = self.at.write_fmt(segment);
        let changed = self.coerce(schema, value, depth);
        self.at.truncate(len);
        changed
    }

    /// Takes the cost of copying or validating `value` from the budget; false when it is spent.
    fn charge(&mut self, value: &Value) -> bool {
        let mut cost = 0;
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            cost += 1;
            if cost > self.budget {
                self.budget = 0;
                return false;
            }
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        self.budget -= cost;
        true
    }

    /// Whether the branch at `pointer` takes `value` as it is.
    fn fits(&mut self, pointer: &str, value: &Value) -> bool {
        let Some(branches) = self.branches else {
            return false;
        };
        self.charge(value)
            && branches
                .get(self.root, pointer)
                .is_some_and(|validator| validator.is_valid(value))
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
            && let Some(pointer) = local_pointer(reference)
            && let Some(target) = self.root.pointer(&pointer)
        {
            let here = std::mem::replace(&mut self.at, pointer.into_owned());
            changed |= self.coerce(target, value, depth + 1);
            self.at = here;
        }
        // Every `allOf` branch must hold, so each one's coercion is the value's to keep.
        if let Some(Value::Array(branches)) = s.get("allOf") {
            for (index, branch) in branches.iter().enumerate() {
                changed |= self.coerce_at(format_args!("/allOf/{index}"), branch, value, depth + 1);
            }
        }
        for keyword in ["anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(keyword) {
                changed |= self.coerce_union(keyword, branches, value, depth + 1);
            }
        }
        match value {
            Value::Object(map) => changed |= self.coerce_object(s, map, depth),
            Value::Array(items) => changed |= self.coerce_array(s, items, depth),
            _ => {}
        }
        changed
    }

    /// Coerces `value` for the `anyOf`/`oneOf` `keyword` of the schema at `self.at`.
    ///
    /// Each branch the value may be meant for (by type, and by the `const` tags it does not
    /// contradict) is coerced on a copy of its own, so that what one branch coerces never
    /// changes what another sees. A branch that takes the value as it is wins, and nothing
    /// changes. Otherwise the first copy that its branch takes does, preferring a branch with
    /// a place for every property of the value: an untagged variant that would drop some of
    /// them loses to one that takes them all. When no copy is taken, the value stays as sent,
    /// so that its errors are about what the model sent; unless only one branch was in
    /// question, whose coercion then stays as it does elsewhere in an invalid input.
    fn coerce_union(
        &mut self,
        keyword: &str,
        branches: &'s [Value],
        value: &mut Value,
        depth: usize,
    ) -> bool {
        let kind = type_of(value);
        let mut candidates = Vec::new();
        for (index, branch) in branches.iter().enumerate() {
            if self.admitted(branch, depth) & kind != 0 && self.tags_match(branch, value, depth) {
                candidates.push(index);
            }
        }
        match candidates[..] {
            [] => return false,
            [only] => {
                let segment = format_args!("/{keyword}/{only}");
                return self.coerce_at(segment, &branches[only], value, depth);
            }
            _ => {}
        }
        let pointers: Vec<String> = candidates
            .iter()
            .map(|index| format!("{}/{keyword}/{index}", self.at))
            .collect();
        if pointers.iter().any(|pointer| self.fits(pointer, value)) {
            return false;
        }
        let mut best: Option<(usize, Value)> = None;
        for (&index, pointer) in candidates.iter().zip(&pointers) {
            if !self.charge(value) {
                break;
            }
            let mut copy = value.clone();
            let here = std::mem::replace(&mut self.at, pointer.clone());
            let changed = self.coerce(&branches[index], &mut copy, depth);
            self.at = here;
            if !changed || !self.fits(pointer, &copy) {
                continue;
            }
            let dropped = self.dropped_properties(&branches[index], &copy);
            if best.as_ref().is_none_or(|(least, _)| dropped < *least) {
                best = Some((dropped, copy));
                if dropped == 0 {
                    break;
                }
            }
        }
        match best {
            Some((_, copy)) => {
                *value = copy;
                true
            }
            None => false,
        }
    }

    /// How many properties of `value` `branch` has no place for (its deserializer would drop
    /// them). None when it declares no properties or takes others by schema.
    fn dropped_properties(&mut self, branch: &'s Value, value: &Value) -> usize {
        let Value::Object(object) = value else {
            return 0;
        };
        let mut names = Vec::new();
        if self.property_names(branch, 0, &mut names) || names.is_empty() {
            return 0;
        }
        object
            .keys()
            .filter(|key| !names.contains(&key.as_str()))
            .count()
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
            if let Some(property) = properties.and_then(|p| p.get(key)) {
                let segment = format_args!("/properties/{}", PointerToken(key));
                changed |= self.coerce_at(segment, property, value, depth + 1);
            } else if let Some(additional) = additional {
                let segment = format_args!("/additionalProperties");
                changed |= self.coerce_at(segment, additional, value, depth + 1);
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
        let (prefix, prefix_name, rest, rest_name) = match (s.get("prefixItems"), s.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix.as_slice(), "prefixItems", rest, "items"),
            (_, Some(Value::Array(prefix))) => (
                prefix.as_slice(),
                "items",
                s.get("additionalItems"),
                "additionalItems",
            ),
            (_, rest) => (&[][..], "", rest, "items"),
        };
        let mut changed = false;
        for (index, item) in items.iter_mut().enumerate() {
            if let Some(schema) = prefix.get(index) {
                let segment = format_args!("/{prefix_name}/{index}");
                changed |= self.coerce_at(segment, schema, item, depth + 1);
            } else if let Some(schema) = rest {
                let segment = format_args!("/{rest_name}");
                changed |= self.coerce_at(segment, schema, item, depth + 1);
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

    /// Names of the properties `schema` declares, through `$ref` and the combinators. True
    /// when it also takes other properties by schema (`additionalProperties` that is not
    /// `false`, or `patternProperties`).
    pub(super) fn property_names(
        &mut self,
        schema: &'s Value,
        depth: usize,
        out: &mut Vec<&'s str>,
    ) -> bool {
        let Value::Object(s) = schema else {
            return false;
        };
        if !self.step(depth) || depth > MAX_DESCRIBE_DEPTH {
            return false;
        }
        let mut open = s.contains_key("patternProperties")
            || s.get("additionalProperties")
                .is_some_and(|additional| additional != &Value::Bool(false));
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
            open |= self.property_names(target, depth + 1, out);
        }
        for keyword in ["allOf", "anyOf", "oneOf"] {
            if let Some(Value::Array(branches)) = s.get(keyword) {
                for branch in branches {
                    open |= self.property_names(branch, depth + 1, out);
                }
            }
        }
        open
    }
}

/// A property name as a JSON pointer token (`~` and `/` escaped).
struct PointerToken<'a>(&'a str);

impl fmt::Display for PointerToken<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '~' => f.write_str("~0")?,
                '/' => f.write_str("~1")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
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
