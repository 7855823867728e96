//! Compiled input validators: all errors at once, AJV-style, with schema-guided coercion.
//!
//! Every input a model sends to a tool is checked against the tool's JSON Schema
//! (draft 2020-12 unless the schema's `$schema` says otherwise). An [`InputValidator`] is
//! compiled once per tool and reused for every call; [`InputValidator::check`] reports every
//! problem of one input together, in wording a model can act on:
//!
//! ```text
//! /: must NOT have additional property 'fiel_path'; allowed properties: file_path, limit, offset (did you mean 'file_path'?)
//! /: must have required property 'file_path'
//! /offset: must be integer or null, got "ten"
//! ```
//!
//! With [`ValidationOptions::coerce`] (the default), an input that fails is first repaired
//! where the schema makes the intent unambiguous: `"5"` becomes `5` and `"true"` becomes
//! `true` where only a number/integer or a boolean fits, and a `null` sent for an optional
//! property that cannot be null is dropped. A valid input is never touched. The walk follows
//! same-document `$ref`s, `properties`, `additionalProperties`, `items`/`prefixItems` and
//! the branches of `allOf`/`anyOf`/`oneOf` that fit the value (and whose `const` tag
//! properties it does not contradict).
//!
//! `format` is an annotation, as draft 2020-12 specifies: it is not asserted, so the
//! schemars formats (`uint64`, `double`, ...) and the tool's own deserialization decide.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashSet;
use std::fmt;
use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::{Map, Number, Value};

/// Deepest nesting of arrays and objects in an input that is validated. Anything deeper is
/// rejected before the (recursive) validator sees it. It is above what `serde_json` parses
/// with its default recursion limit, so no input parsed from JSON text is refused for it.
const MAX_INPUT_DEPTH: usize = 128;
/// Deepest nesting of arrays and objects accepted in a schema.
const MAX_SCHEMA_DEPTH: usize = 256;
/// Recursion cap of the schema walks (schema hops plus input levels).
const MAX_WALK_DEPTH: usize = 512;
/// Steps one coercion walk may take, whatever the schema (cyclic `$ref`s, wide `anyOf`s).
const WALK_BUDGET: usize = 1_000_000;
/// Steps the `$ref`-cycle scan of a schema may take before it assumes the worst.
const SCAN_BUDGET: usize = 1_000_000;
/// Nesting of `anyOf`/`oneOf`/`propertyNames` errors that is explained in detail.
const MAX_DESCRIBE_DEPTH: usize = 32;
/// Issues reported for one input; the rest are counted in a last issue.
const MAX_ISSUES: usize = 50;
/// Characters of a shown value (compact JSON) before it is cut with "...".
const MAX_SHOWN_CHARS: usize = 60;
/// Enum options or property names listed in one message.
const MAX_LISTED: usize = 20;
/// Longest name the did-you-mean hint compares.
const MAX_SUGGEST_CHARS: usize = 64;
/// Longest library message passed through unchanged.
const MAX_FALLBACK_CHARS: usize = 300;

/// How inputs are checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidationOptions {
    /// Turn "5" into 5 and "true" into true where the schema wants a number/integer or a boolean
    /// (and only where the value does not already match), and drop a `null` sent for an
    /// optional property whose schema does not admit null. On by default.
    pub coerce: bool,
}

impl Default for ValidationOptions {
    fn default() -> Self {
        Self { coerce: true }
    }
}

/// A tool's compiled input schema. Build once, use for every call. Send + Sync.
#[derive(Clone)]
pub struct InputValidator {
    schema: Value,
    validator: jsonschema::Validator,
    options: ValidationOptions,
    /// Whether the validator could recurse as deep as the input (recursive `$ref`s,
    /// `uniqueItems`), so that the input's depth must be bounded before validating.
    guard_depth: bool,
}

impl fmt::Debug for InputValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputValidator")
            .field("schema", &self.schema)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The schema itself is not valid JSON Schema.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid input schema: {message}")]
pub struct SchemaError {
    /// What is wrong with the schema.
    pub message: String,
}

impl SchemaError {
    fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

impl InputValidator {
    /// Compiles `schema`. External references are never fetched: a schema must be
    /// self-contained (`$defs`/`definitions` of its own root).
    ///
    /// # Errors
    ///
    /// [`SchemaError`] when the schema is not valid JSON Schema, refers to something it does
    /// not contain, or is nested unreasonably deep.
    pub fn new(schema: &Value, options: ValidationOptions) -> Result<Self, SchemaError> {
        if exceeds_depth(schema, MAX_SCHEMA_DEPTH) {
            return Err(SchemaError::new(format!(
                "schema is nested more than {MAX_SCHEMA_DEPTH} levels deep"
            )));
        }
        let has_dialect = schema.get("$schema").is_some();
        let built = catch_unwind(AssertUnwindSafe(|| {
            let mut builder = jsonschema::options().offline();
            if !has_dialect {
                builder = builder.with_draft(jsonschema::Draft::Draft202012);
            }
            builder.build(schema).map_err(|error| error.to_string())
        }));
        let validator = match built {
            Ok(Ok(validator)) => validator,
            Ok(Err(message)) => return Err(SchemaError::new(message)),
            Err(_) => return Err(SchemaError::new("the schema could not be compiled")),
        };
        Ok(Self {
            guard_depth: RefScan::needs_depth_guard(schema),
            schema: schema.clone(),
            validator,
            options,
        })
    }

    /// Checks (and, when allowed, coerces) an input. Returns the input to pass to the tool.
    ///
    /// A valid input comes back unchanged, without any work beyond validation. An invalid one
    /// is coerced (see [`ValidationOptions::coerce`]) and validated again; if it is still
    /// invalid, every problem of the (coerced) input is reported.
    ///
    /// # Errors
    ///
    /// [`InputErrors`] with every problem found, sorted by input path.
    pub fn check(&self, mut input: Value) -> Result<Value, InputErrors> {
        if self.guard_depth && exceeds_depth(&input, MAX_INPUT_DEPTH) {
            return Err(too_deep(input));
        }
        if self.validator.is_valid(&input) {
            return Ok(input);
        }
        if !self.guard_depth && exceeds_depth(&input, MAX_INPUT_DEPTH) {
            return Err(too_deep(input));
        }
        if self.options.coerce {
            let mut walk = Walk::new(&self.schema);
            if walk.coerce(&self.schema, &mut input, 0) && self.validator.is_valid(&input) {
                return Ok(input);
            }
        }
        Err(self.errors_for(&input))
    }

    /// Whether `input` is valid as it is (no coercion). The fast path of [`Self::check`].
    #[must_use]
    pub fn is_valid(&self, input: &Value) -> bool {
        if self.guard_depth && exceeds_depth(input, MAX_INPUT_DEPTH) {
            return false;
        }
        self.validator.is_valid(input)
    }

    /// The schema this validator was compiled from.
    #[must_use]
    pub fn schema(&self) -> &Value {
        &self.schema
    }

    /// The options this validator was built with.
    #[must_use]
    pub fn options(&self) -> ValidationOptions {
        self.options
    }

    fn errors_for(&self, input: &Value) -> InputErrors {
        let described = catch_unwind(AssertUnwindSafe(|| {
            let mut issues = Vec::new();
            for error in self.validator.iter_errors(input) {
                self.describe(&error, &mut issues, 0);
            }
            issues
        }));
        let mut issues = described.unwrap_or_default();
        if issues.is_empty() {
            issues.push(InputIssue::new("", "must match the input schema"));
        }
        InputErrors::new(issues)
    }

    /// Turns one library error into issues (several for unknown keys, a branch's errors for
    /// `anyOf`/`oneOf`).
    fn describe(&self, error: &ValidationError<'_>, out: &mut Vec<InputIssue>, depth: usize) {
        let path = error.instance_path().as_str();
        let instance: &Value = error.instance();
        let message = match error.kind() {
            ValidationErrorKind::Type { kind } => {
                let mut types: Vec<JsonType> = match kind {
                    TypeKind::Single(single) => vec![*single],
                    TypeKind::Multiple(set) => set.iter().collect(),
                };
                types.sort_by_key(|t| type_rank(*t));
                let names: Vec<String> = types.iter().map(|t| t.as_str().to_owned()).collect();
                format!("must be {}, got {}", join_or(&names), show(instance))
            }
            ValidationErrorKind::Required { property } => {
                format!(
                    "must have required property {}",
                    quote_name(&plain(property))
                )
            }
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                for name in unexpected {
                    let message = self.unknown_property("additional", name, error);
                    out.push(InputIssue::new(path, message));
                }
                return;
            }
            ValidationErrorKind::UnevaluatedProperties { unexpected } => {
                for name in unexpected {
                    let message = self.unknown_property("unevaluated", name, error);
                    out.push(InputIssue::new(path, message));
                }
                return;
            }
            ValidationErrorKind::Enum { options } => match options.as_array() {
                Some(options) => one_of_message(options.iter(), instance),
                None => one_of_message(std::iter::once(&**options), instance),
            },
            ValidationErrorKind::Constant { expected_value } => format!(
                "must be equal to constant {}, got {}",
                show(expected_value),
                show(instance)
            ),
            ValidationErrorKind::Minimum { limit } => format!("must be >= {}", show(limit)),
            ValidationErrorKind::Maximum { limit } => format!("must be <= {}", show(limit)),
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                format!("must be > {}", show(limit))
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                format!("must be < {}", show(limit))
            }
            ValidationErrorKind::MinLength { limit } => {
                format!("must NOT have fewer than {limit} characters")
            }
            ValidationErrorKind::MaxLength { limit } => {
                format!("must NOT have more than {limit} characters")
            }
            ValidationErrorKind::MinItems { limit } => {
                format!("must NOT have fewer than {limit} items")
            }
            ValidationErrorKind::MaxItems { limit } => {
                format!("must NOT have more than {limit} items")
            }
            ValidationErrorKind::AdditionalItems { limit } => {
                format!("must NOT have more than {limit} items")
            }
            ValidationErrorKind::MinProperties { limit } => {
                format!("must NOT have fewer than {limit} properties")
            }
            ValidationErrorKind::MaxProperties { limit } => {
                format!("must NOT have more than {limit} properties")
            }
            ValidationErrorKind::Pattern { pattern } => {
                format!(
                    "must match pattern {}",
                    show(&Value::String(pattern.clone()))
                )
            }
            ValidationErrorKind::Format { format } => {
                format!("must match format {}", show(&Value::String(format.clone())))
            }
            ValidationErrorKind::MultipleOf { multiple_of } => {
                format!("must be multiple of {multiple_of}")
            }
            ValidationErrorKind::UniqueItems => "must NOT have duplicate items".to_owned(),
            ValidationErrorKind::Contains => "must contain at least one valid item".to_owned(),
            ValidationErrorKind::Not { .. } => "must NOT be valid against the 'not' schema".into(),
            ValidationErrorKind::FalseSchema => "must NOT be present (schema is false)".to_owned(),
            ValidationErrorKind::UnevaluatedItems { unexpected } => format!(
                "must NOT have unevaluated items ({} unexpected)",
                unexpected.len()
            ),
            ValidationErrorKind::OneOfMultipleValid { .. } => format!(
                "must match exactly one schema in oneOf, but matches more than one, got {}",
                show(instance)
            ),
            ValidationErrorKind::AnyOf { context } => {
                self.describe_alternatives(error, context, "anyOf", out, depth);
                return;
            }
            ValidationErrorKind::OneOfNotValid { context } => {
                self.describe_alternatives(error, context, "oneOf", out, depth);
                return;
            }
            ValidationErrorKind::PropertyNames { error: inner } => {
                let mut inner_issues = Vec::new();
                if depth < MAX_DESCRIBE_DEPTH {
                    self.describe(inner, &mut inner_issues, depth + 1);
                }
                let name = show(inner.instance());
                if inner_issues.is_empty() {
                    out.push(InputIssue::new(
                        path,
                        format!("property name {name} is invalid"),
                    ));
                }
                for issue in inner_issues {
                    out.push(InputIssue::new(
                        path,
                        format!("property name {name} is invalid: {}", issue.message),
                    ));
                }
                return;
            }
            _ => truncate_chars(&error.to_string(), MAX_FALLBACK_CHARS),
        };
        out.push(InputIssue::new(path, message));
    }

    /// `must NOT have additional property 'x'; allowed properties: ... (did you mean 'y'?)`.
    fn unknown_property(&self, what: &str, name: &str, error: &ValidationError<'_>) -> String {
        let mut message = format!("must NOT have {what} property {}", quote_name(name));
        let schema_path = error.schema_path().as_str();
        let parent = schema_path
            .rsplit_once('/')
            .map_or("", |(parent, _)| parent);
        let Some(node) = self.schema.pointer(parent) else {
            return message;
        };
        let mut allowed: Vec<&str> = Vec::new();
        if what == "additional" {
            if let Some(properties) = node.get("properties").and_then(Value::as_object) {
                allowed.extend(properties.keys().map(String::as_str));
            }
        } else {
            let mut walk = Walk::new(&self.schema);
            walk.property_names(node, 0, &mut allowed);
        }
        if allowed.is_empty() {
            return message;
        }
        message.push_str("; allowed properties: ");
        let listed: Vec<String> = allowed
            .iter()
            .take(MAX_LISTED)
            .map(|name| truncate_chars(name, MAX_SHOWN_CHARS))
            .collect();
        message.push_str(&listed.join(", "));
        if allowed.len() > MAX_LISTED {
            message.push_str(&format!(", ... ({} more)", allowed.len() - MAX_LISTED));
        }
        let present = error.instance().as_object();
        let candidates = allowed
            .iter()
            .copied()
            .filter(|candidate| present.is_none_or(|object| !object.contains_key(*candidate)));
        if let Some(suggestion) = suggest(name, candidates) {
            message.push_str(&format!(" (did you mean {}?)", quote_name(suggestion)));
        }
        message
    }

    /// Explains a failed `anyOf`/`oneOf`: the errors of the branch the input was evidently
    /// meant for, or else the shapes it could have had.
    fn describe_alternatives(
        &self,
        error: &ValidationError<'_>,
        context: &[Vec<ValidationError<'static>>],
        keyword: &str,
        out: &mut Vec<InputIssue>,
        depth: usize,
    ) {
        let here = error.instance_path().as_str();
        if depth < MAX_DESCRIBE_DEPTH && self.explain_branches(here, error, context, out, depth) {
            return;
        }
        let quantifier = if keyword == "oneOf" {
            "exactly one"
        } else {
            "at least one"
        };
        out.push(InputIssue::new(
            here,
            format!(
                "must match {quantifier} schema in {keyword}, got {}",
                show(error.instance())
            ),
        ));
    }

    /// The detailed part of [`Self::describe_alternatives`]; false when it has nothing better
    /// than the generic message.
    fn explain_branches(
        &self,
        here: &str,
        error: &ValidationError<'_>,
        context: &[Vec<ValidationError<'static>>],
        out: &mut Vec<InputIssue>,
        depth: usize,
    ) -> bool {
        let branches: Vec<Branch<'_>> = context.iter().map(|b| Branch::classify(b, here)).collect();
        let candidates: Vec<&[ValidationError<'static>]> = branches
            .iter()
            .filter_map(|b| match b {
                Branch::Candidate { errors, .. } => Some(*errors),
                _ => None,
            })
            .collect();
        // A branch the input fits at this level, failing only further in: that's the one.
        let committed = candidates
            .iter()
            .filter(|errors| errors.iter().all(|e| e.instance_path().as_str() != here))
            .min_by_key(|errors| errors.len());
        let all_miss_properties = branches.iter().all(|b| match b {
            Branch::Candidate { missing, .. } => !missing.is_empty(),
            _ => true,
        });
        let chosen = match (committed, candidates.as_slice()) {
            (Some(errors), _) => Some(*errors),
            (None, [only]) => Some(*only),
            (None, [_, _, ..]) if !all_miss_properties => {
                candidates.iter().copied().min_by_key(|errors| errors.len())
            }
            _ => None,
        };
        if let Some(errors) = chosen {
            for e in errors {
                self.describe(e, out, depth + 1);
            }
            return true;
        }
        if candidates.is_empty() {
            // Tagged objects whose tag matches no branch: say so at the tag.
            let mut tags = branches.iter().filter_map(|b| match b {
                Branch::Tag {
                    path,
                    expected,
                    actual,
                } => Some((*path, *expected, *actual)),
                _ => None,
            });
            if let Some((path, first, actual)) = tags.next() {
                let expected = std::iter::once(first).chain(
                    tags.filter(|(other, _, _)| *other == path)
                        .map(|(_, expected, _)| expected),
                );
                out.push(InputIssue::new(path, one_of_message(expected, actual)));
                return true;
            }
        }
        // What the input could have been.
        let mut shapes: Vec<String> = Vec::new();
        let mut values: Vec<&Value> = Vec::new();
        let mut only_values = true;
        for branch in &branches {
            match branch {
                Branch::Shape {
                    values: branch_values,
                    types,
                } => {
                    if branch_values.is_empty() {
                        only_values = false;
                        shapes.extend(types.iter().map(|t| t.as_str().to_owned()));
                    } else {
                        shapes.extend(branch_values.iter().map(|v| show(v)));
                        values.extend(branch_values.iter().copied());
                    }
                }
                Branch::Candidate { missing, .. } => {
                    only_values = false;
                    let names: Vec<String> = missing.iter().map(|name| quote_name(name)).collect();
                    let noun = if names.len() == 1 {
                        "property"
                    } else {
                        "properties"
                    };
                    shapes.push(format!("an object with {noun} {}", join_and(&names)));
                }
                Branch::Tag { .. } => {}
            }
        }
        if shapes.is_empty() {
            return false;
        }
        let instance: &Value = error.instance();
        let message = if only_values {
            one_of_message(values.into_iter(), instance)
        } else {
            let mut unique: Vec<String> = Vec::new();
            for shape in shapes {
                if !unique.contains(&shape) {
                    unique.push(shape);
                }
            }
            if unique.len() > MAX_LISTED {
                let more = unique.len() - MAX_LISTED;
                unique.truncate(MAX_LISTED);
                unique.push(format!("{more} more"));
            }
            let mut message = format!("must be {}, got {}", join_or(&unique), show(instance));
            if let Value::String(actual) = instance
                && let Some(suggestion) = suggest(actual, values.iter().filter_map(|v| v.as_str()))
            {
                message.push_str(&format!(
                    " (did you mean {}?)",
                    show(&Value::String(suggestion.to_owned()))
                ));
            }
            message
        };
        out.push(InputIssue::new(here, message));
        true
    }
}

/// How one branch of a failed `anyOf`/`oneOf` relates to the input at `here`.
enum Branch<'e> {
    /// The input has the wrong type or value for it: these are what it would have taken.
    Shape {
        values: Vec<&'e Value>,
        types: Vec<JsonType>,
    },
    /// An object whose tag property (a `const`, at `path`) names another branch.
    Tag {
        path: &'e str,
        expected: &'e Value,
        actual: &'e Value,
    },
    /// The input has the right shape; `errors` are what is wrong, `missing` the required
    /// properties it lacks at `here`.
    Candidate {
        errors: &'e [ValidationError<'static>],
        missing: Vec<Cow<'e, str>>,
    },
}

impl<'e> Branch<'e> {
    fn classify(errors: &'e [ValidationError<'static>], here: &str) -> Self {
        let mut values: Vec<&'e Value> = Vec::new();
        let mut types: Vec<JsonType> = Vec::new();
        let mut mismatch = false;
        let mut missing = Vec::new();
        for e in errors.iter().filter(|e| e.instance_path().as_str() == here) {
            match e.kind() {
                ValidationErrorKind::Constant { expected_value } => {
                    mismatch = true;
                    values.push(expected_value);
                }
                ValidationErrorKind::Enum { options } => {
                    mismatch = true;
                    match options.as_array() {
                        Some(options) => values.extend(options.iter()),
                        None => values.push(options),
                    }
                }
                ValidationErrorKind::Type { kind } => {
                    mismatch = true;
                    match kind {
                        TypeKind::Single(single) => types.push(*single),
                        TypeKind::Multiple(set) => types.extend(set.iter()),
                    }
                }
                ValidationErrorKind::Required { property } => missing.push(match property {
                    Value::String(name) => Cow::Borrowed(name.as_str()),
                    other => Cow::Owned(show(other)),
                }),
                _ => {}
            }
        }
        if mismatch {
            types.sort_by_key(|t| type_rank(*t));
            return Branch::Shape { values, types };
        }
        let tag = errors.iter().find_map(|e| match e.kind() {
            ValidationErrorKind::Constant { expected_value }
                if is_child_path(e.instance_path().as_str(), here) =>
            {
                Some(Branch::Tag {
                    path: e.instance_path().as_str(),
                    expected: expected_value,
                    actual: e.instance(),
                })
            }
            _ => None,
        });
        tag.unwrap_or(Branch::Candidate { errors, missing })
    }
}

/// Every problem found in one input.
///
/// Sorted by input path, then message, without duplicates. At most 50 issues are kept; when
/// there were more, a last issue at `/` says how many were left out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", DisplayIssues(.issues))]
pub struct InputErrors {
    issues: Vec<InputIssue>,
}

impl InputErrors {
    /// Collects issues: sorts them by path (array indices numerically) and message, drops
    /// duplicates, and caps their number.
    #[must_use]
    pub fn new(mut issues: Vec<InputIssue>) -> Self {
        issues.sort_by(|a, b| {
            compare_paths(&a.path, &b.path).then_with(|| a.message.cmp(&b.message))
        });
        issues.dedup();
        if issues.len() > MAX_ISSUES {
            let more = issues.len() - MAX_ISSUES;
            issues.truncate(MAX_ISSUES);
            issues.push(InputIssue {
                path: "/".to_owned(),
                message: format!("... and {more} more issues not shown"),
            });
        }
        Self { issues }
    }

    /// The issues, in order.
    #[must_use]
    pub fn issues(&self) -> &[InputIssue] {
        &self.issues
    }

    /// The issues, owned.
    #[must_use]
    pub fn into_issues(self) -> Vec<InputIssue> {
        self.issues
    }

    /// How many issues there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.issues.len()
    }

    /// Whether there are none (never the case for errors returned by [`InputValidator::check`]).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.issues.is_empty()
    }
}

struct DisplayIssues<'a>(&'a [InputIssue]);

impl fmt::Display for DisplayIssues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, issue) in self.0.iter().enumerate() {
            if index > 0 {
                f.write_str("\n")?;
            }
            fmt::Display::fmt(issue, f)?;
        }
        Ok(())
    }
}

/// One problem: where (JSON pointer of the input, "/" for the root) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputIssue {
    /// JSON pointer (RFC 6901) into the input; "/" for the input itself.
    pub path: String,
    /// What is wrong there, e.g. `must be integer, got "ten"`.
    pub message: String,
}

impl InputIssue {
    fn new(pointer: &str, message: impl Into<String>) -> Self {
        Self {
            path: if pointer.is_empty() {
                "/".to_owned()
            } else {
                pointer.to_owned()
            },
            message: message.into(),
        }
    }
}

impl fmt::Display for InputIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

// ---------------------------------------------------------------------------------------------
// Depth guards

/// Whether `value` nests arrays/objects more than `limit` levels deep. Recursion is bounded by
/// `limit`.
fn exceeds_depth(value: &Value, limit: usize) -> bool {
    match value {
        Value::Array(items) => limit == 0 || items.iter().any(|v| exceeds_depth(v, limit - 1)),
        Value::Object(map) => limit == 0 || map.values().any(|v| exceeds_depth(v, limit - 1)),
        _ => false,
    }
}

/// The error for an input nested too deeply. Takes the input to drop it without recursion.
fn too_deep(input: Value) -> InputErrors {
    let mut stack = vec![input];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
    InputErrors::new(vec![InputIssue::new(
        "",
        format!("must NOT be nested more than {MAX_INPUT_DEPTH} levels deep"),
    )])
}

/// Finds whether the compiled validator may recurse as deep as the input: a `$ref` cycle, a
/// reference this scan cannot follow, or `uniqueItems` (which hashes and compares whole items).
struct RefScan<'s> {
    root: &'s Value,
    active: Vec<String>,
    done: HashSet<String>,
    steps: usize,
}

impl<'s> RefScan<'s> {
    fn needs_depth_guard(root: &'s Value) -> bool {
        let mut scan = RefScan {
            root,
            active: vec![String::new()],
            done: HashSet::new(),
            steps: 0,
        };
        scan.scan(root, 0)
    }

    fn scan(&mut self, node: &'s Value, depth: usize) -> bool {
        self.steps += 1;
        if depth > 4 * MAX_WALK_DEPTH || self.steps > SCAN_BUDGET {
            return true;
        }
        match node {
            Value::Array(items) => items.iter().any(|item| self.scan(item, depth + 1)),
            Value::Object(map) => {
                for (key, value) in map {
                    match key.as_str() {
                        "enum" | "const" | "default" | "examples" => continue,
                        "uniqueItems" if value.as_bool() == Some(true) => return true,
                        "$dynamicRef" | "$recursiveRef" => return true,
                        "$id" | "id" if value.is_string() && !std::ptr::eq(node, self.root) => {
                            return true;
                        }
                        "$ref" => {
                            if let Value::String(reference) = value
                                && self.follow(reference, depth)
                            {
                                return true;
                            }
                            continue;
                        }
                        _ => {}
                    }
                    if self.scan(value, depth + 1) {
                        return true;
                    }
                }
                false
            }
            _ => false,
        }
    }

    /// Follows a `$ref`; true when it closes a cycle or cannot be followed.
    fn follow(&mut self, reference: &str, depth: usize) -> bool {
        let Some(pointer) = local_pointer(reference) else {
            return true;
        };
        let pointer = pointer.into_owned();
        if self.active.contains(&pointer) {
            return true;
        }
        if self.done.contains(&pointer) {
            return false;
        }
        let Some(target) = self.root.pointer(&pointer) else {
            return true;
        };
        self.active.push(pointer);
        if self.scan(target, depth + 1) {
            return true;
        }
        if let Some(pointer) = self.active.pop() {
            self.done.insert(pointer);
        }
        false
    }
}

/// The JSON pointer of a same-document `$ref` ("#", "#/$defs/X", percent-decoded).
fn local_pointer(reference: &str) -> Option<Cow<'_, str>> {
    let fragment = reference.strip_prefix('#')?;
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return None;
    }
    if !fragment.contains('%') {
        return Some(Cow::Borrowed(fragment));
    }
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && index + 2 < bytes.len()
            && let (Some(high), Some(low)) = (hex(bytes[index + 1]), hex(bytes[index + 2]))
        {
            decoded.push(high * 16 + low);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok().map(Cow::Owned)
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Schema walks: admitted types, coercion, property names

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
struct Walk<'s> {
    root: &'s Value,
    budget: usize,
}

impl<'s> Walk<'s> {
    fn new(root: &'s Value) -> Self {
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
    fn coerce(&mut self, schema: &'s Value, value: &mut Value, depth: usize) -> bool {
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
    fn property_names(&mut self, schema: &'s Value, depth: usize, out: &mut Vec<&'s str>) {
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

// ---------------------------------------------------------------------------------------------
// Message helpers

/// `value` as compact JSON, cut to about 60 characters with "...". Serializes no more of it
/// than that, however big or deep it is.
fn show(value: &Value) -> String {
    struct Limited(Vec<u8>);
    impl io::Write for Limited {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let room = (4 * MAX_SHOWN_CHARS + 8).saturating_sub(self.0.len());
            if room == 0 {
                return Err(io::Error::other("enough"));
            }
            let taken = buf.len().min(room);
            self.0.extend_from_slice(&buf[..taken]);
            Ok(taken)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut out = Limited(Vec::new());
    // An error only means the output was cut.
    let _ = serde_json::to_writer(&mut out, value);
    let text = String::from_utf8_lossy(&out.0);
    truncate_chars(&text, MAX_SHOWN_CHARS)
}

/// `text` cut to `max` characters, ending in "..." when cut.
fn truncate_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let keep = max.saturating_sub(3);
            let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
            format!("{}...", &text[..end])
        }
    }
}

/// A property name for a message: `'name'`, cut when long.
fn quote_name(name: &str) -> String {
    format!("'{}'", truncate_chars(name, MAX_SHOWN_CHARS))
}

/// A string as itself, anything else as JSON.
fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => show(other),
    }
}

/// "a", "a or b", "a, b or c".
fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// "a", "a and b", "a, b and c".
fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `must be one of "a", "b", got "d"`, with a did-you-mean hint for a near string.
fn one_of_message<'v>(options: impl Iterator<Item = &'v Value>, actual: &Value) -> String {
    let mut unique: Vec<&Value> = Vec::new();
    for option in options {
        if !unique.contains(&option) {
            unique.push(option);
        }
    }
    let listed: Vec<String> = unique.iter().take(MAX_LISTED).map(|v| show(v)).collect();
    let mut message = format!("must be one of {}", listed.join(", "));
    if unique.len() > MAX_LISTED {
        message.push_str(&format!(", ... ({} more)", unique.len() - MAX_LISTED));
    }
    message.push_str(&format!(", got {}", show(actual)));
    if let Value::String(actual) = actual {
        let strings = unique.iter().filter_map(|v| v.as_str());
        if let Some(suggestion) = suggest(actual, strings) {
            message.push_str(&format!(
                " (did you mean {}?)",
                show(&Value::String(suggestion.to_owned()))
            ));
        }
    }
    message
}

/// The candidate closest to `name` (ignoring case, `_` and `-`), if close enough.
fn suggest<'c>(name: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    fn normalize(s: &str) -> String {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    }
    if name.chars().count() > MAX_SUGGEST_CHARS {
        return None;
    }
    let wanted = normalize(name);
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        if candidate == name || candidate.chars().count() > MAX_SUGGEST_CHARS {
            continue;
        }
        let other = normalize(candidate);
        let longest = wanted.chars().count().max(other.chars().count());
        // Optimal string alignment: a swapped pair of letters counts as one edit.
        let distance = strsim::osa_distance(&wanted, &other);
        if distance <= (longest / 3).max(1)
            && distance < longest.max(1)
            && best.is_none_or(|(d, _)| distance < d)
        {
            best = Some((distance, candidate));
        }
    }
    best.map(|(_, candidate)| candidate)
}

/// Where a type is listed in messages: as schemars writes them, null last.
fn type_rank(t: JsonType) -> u8 {
    match t {
        JsonType::Integer => 0,
        JsonType::Number => 1,
        JsonType::String => 2,
        JsonType::Boolean => 3,
        JsonType::Array => 4,
        JsonType::Object => 5,
        JsonType::Null => 6,
    }
}

/// Whether pointer `path` is a direct child of pointer `parent`.
fn is_child_path(path: &str, parent: &str) -> bool {
    path.strip_prefix(parent)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|segment| !segment.contains('/'))
}

/// Orders JSON pointers segment by segment, array indices numerically.
fn compare_paths(a: &str, b: &str) -> Ordering {
    let segments = |p: &str| {
        let p = if p == "/" { "" } else { p };
        p.split('/').skip(1).map(str::to_owned).collect::<Vec<_>>()
    };
    let (a, b) = (segments(a), segments(b));
    for (x, y) in a.iter().zip(&b) {
        let order = match (x.parse::<u64>(), y.parse::<u64>()) {
            (Ok(x), Ok(y)) => x.cmp(&y),
            _ => x.cmp(y),
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn schema_of<T: JsonSchema>() -> Value {
        let root = schemars::generate::SchemaSettings::draft2020_12()
            .into_generator()
            .into_root_schema_for::<T>();
        serde_json::to_value(root).expect("schema serializes")
    }

    fn validator_of<T: JsonSchema>() -> InputValidator {
        InputValidator::new(&schema_of::<T>(), ValidationOptions::default()).expect("valid schema")
    }

    fn strict_validator_of<T: JsonSchema>() -> InputValidator {
        InputValidator::new(&schema_of::<T>(), ValidationOptions { coerce: false })
            .expect("valid schema")
    }

    fn messages(errors: &InputErrors) -> Vec<String> {
        errors.issues().iter().map(ToString::to_string).collect()
    }

    fn check_err(validator: &InputValidator, input: Value) -> Vec<String> {
        match validator.check(input) {
            Ok(value) => panic!("expected errors, got Ok({value})"),
            Err(errors) => messages(&errors),
        }
    }

    /// Builds `[[[...1...]]]` `depth` levels deep.
    fn nested_arrays(depth: usize) -> Value {
        let mut value = json!(1);
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    /// Drops a value of any depth without recursion (the test thread has a small stack).
    fn drop_flat(value: Value) {
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
                _ => {}
            }
        }
    }

    // Field names are declared in alphabetical order, so messages listing them read the same
    // whether or not serde_json keeps insertion order.
    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ReadFile {
        file_path: String,
        limit: Option<u32>,
        offset: Option<u64>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        f: f64,
        n: u64,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        A,
        B,
        C,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize, Debug, PartialEq)]
    enum Documented {
        /// Fast.
        Fast,
        /// Slow.
        Slow,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize, Debug, PartialEq)]
    #[serde(tag = "kind")]
    enum Tagged {
        A { x: u32 },
        B { y: String },
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Everything {
        #[schemars(range(min = 1))]
        count: u32,
        enabled: bool,
        inner: Option<Inner>,
        items: Vec<Inner>,
        #[schemars(length(max = 2))]
        list: Vec<String>,
        map: BTreeMap<String, u64>,
        mode: Mode,
        #[schemars(length(min = 1))]
        name: String,
        offset: Option<u64>,
        #[schemars(pattern("^a"))]
        prefix: String,
        #[serde(default)]
        retries: u32,
        ratio: f64,
        tagged: Tagged,
        tuple: (u32, bool),
    }

    fn everything() -> Value {
        json!({
            "count": 3,
            "enabled": false,
            "inner": {"f": 1.5, "n": 2},
            "items": [{"f": 0.5, "n": 1}],
            "list": ["x"],
            "map": {"k": 1},
            "mode": "a",
            "name": "n",
            "offset": 7,
            "prefix": "abc",
            "retries": 1,
            "ratio": 0.25,
            "tagged": {"kind": "A", "x": 1},
            "tuple": [1, true]
        })
    }

    fn with(patch: Value) -> Value {
        let mut input = everything();
        for (key, value) in patch.as_object().expect("patch is an object") {
            input[key] = value.clone();
        }
        input
    }

    #[test]
    fn validator_is_send_sync_and_reusable() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<InputValidator>();
        assert_send_sync::<InputErrors>();
        assert_send_sync::<SchemaError>();
        let validator = validator_of::<Everything>();
        for _ in 0..3 {
            assert_eq!(validator.check(everything()), Ok(everything()));
        }
        let parsed: Everything = serde_json::from_value(everything()).expect("fixture is valid");
        assert_eq!(parsed.tuple, (1, true));
        assert_eq!(validator.schema(), &schema_of::<Everything>());
    }

    #[test]
    fn all_problems_are_reported_together() {
        let validator = validator_of::<ReadFile>();
        let errors = validator
            .check(json!({"fiel_path": "/tmp/a", "offset": "ten"}))
            .expect_err("invalid");
        assert_eq!(errors.len(), 3);
        assert!(!errors.is_empty());
        assert_eq!(
            errors.to_string(),
            "/: must NOT have additional property 'fiel_path'; allowed properties: file_path, \
             limit, offset (did you mean 'file_path'?)\n\
             /: must have required property 'file_path'\n\
             /offset: must be integer or null, got \"ten\""
        );
        assert_eq!(errors.issues()[2].path, "/offset");
        assert_eq!(
            errors.issues()[2].message,
            "must be integer or null, got \"ten\""
        );
    }

    #[test]
    fn no_suggestion_when_nothing_is_close_or_the_close_name_is_present() {
        let validator = validator_of::<ReadFile>();
        assert_eq!(
            check_err(&validator, json!({"file_path": "a", "zzz": 1})),
            [
                "/: must NOT have additional property 'zzz'; allowed properties: file_path, limit, \
              offset"
            ]
        );
        assert_eq!(
            check_err(&validator, json!({"file_path": "a", "fiel_path": 1})),
            [
                "/: must NOT have additional property 'fiel_path'; allowed properties: file_path, \
              limit, offset"
            ]
        );
        assert_eq!(
            check_err(&validator, json!({"filePath": "a"})),
            [
                "/: must NOT have additional property 'filePath'; allowed properties: file_path, \
                 limit, offset (did you mean 'file_path'?)",
                "/: must have required property 'file_path'"
            ]
        );
    }

    #[test]
    fn keyword_messages() {
        let validator = validator_of::<Everything>();
        let cases = [
            (json!({"count": 0}), "/count: must be >= 1"),
            (
                json!({"name": ""}),
                "/name: must NOT have fewer than 1 characters",
            ),
            (
                json!({"prefix": "xyz"}),
                "/prefix: must match pattern \"^a\"",
            ),
            (
                json!({"list": ["a", "b", "c"]}),
                "/list: must NOT have more than 2 items",
            ),
            (
                json!({"mode": "d"}),
                "/mode: must be one of \"a\", \"b\", \"c\", got \"d\"",
            ),
            (
                json!({"mode": "A"}),
                "/mode: must be one of \"a\", \"b\", \"c\", got \"A\" (did you mean \"a\"?)",
            ),
            (
                json!({"enabled": "yes"}),
                "/enabled: must be boolean, got \"yes\"",
            ),
            (json!({"items": {}}), "/items: must be array, got {}"),
            (json!({"offset": -1}), "/offset: must be >= 0"),
            (json!({"ratio": null}), "/ratio: must be number, got null"),
        ];
        for (patch, expected) in cases {
            assert_eq!(
                check_err(&validator, with(patch.clone())),
                [expected],
                "{patch}"
            );
        }
    }

    #[test]
    fn const_and_documented_enum_messages() {
        let validator =
            InputValidator::new(&json!({"const": "x"}), ValidationOptions::default()).unwrap();
        assert_eq!(
            check_err(&validator, json!("y")),
            ["/: must be equal to constant \"x\", got \"y\""]
        );
        // Variants with docs become `oneOf` of `const`s; the message is the same as for `enum`.
        let validator = validator_of::<Documented>();
        assert_eq!(
            check_err(&validator, json!("Medium")),
            ["/: must be one of \"Fast\", \"Slow\", got \"Medium\""]
        );
        assert_eq!(
            check_err(&validator, json!("fast")),
            ["/: must be one of \"Fast\", \"Slow\", got \"fast\" (did you mean \"Fast\"?)"]
        );
    }

    #[test]
    fn optional_struct_reports_the_struct_errors() {
        let validator = validator_of::<Everything>();
        assert_eq!(
            check_err(&validator, with(json!({"inner": {"n": "x", "g": 1}}))),
            [
                "/inner: must NOT have additional property 'g'; allowed properties: f, n",
                "/inner: must have required property 'f'",
                "/inner/n: must be integer, got \"x\"",
            ]
        );
        assert_eq!(
            check_err(&validator, with(json!({"inner": "abc"}))),
            ["/inner: must be object or null, got \"abc\""]
        );
    }

    #[test]
    fn tagged_enum_reports_the_chosen_variant() {
        let validator = validator_of::<Everything>();
        assert_eq!(
            check_err(&validator, with(json!({"tagged": {"kind": "A", "x": "s"}}))),
            ["/tagged/x: must be integer, got \"s\""]
        );
        assert_eq!(
            check_err(&validator, with(json!({"tagged": {"kind": "B"}}))),
            ["/tagged: must have required property 'y'"]
        );
        assert_eq!(
            check_err(&validator, with(json!({"tagged": {"kind": "C", "x": 1}}))),
            ["/tagged/kind: must be one of \"A\", \"B\", got \"C\""]
        );
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize)]
    enum External {
        Unit,
        Pair(u32, u32),
        Rec { a: u32 },
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize)]
    #[serde(untagged)]
    enum Untagged {
        N(u32),
        S { s: String },
    }

    #[test]
    fn externally_tagged_and_untagged_enums() {
        let validator = validator_of::<External>();
        assert_eq!(
            check_err(&validator, json!("Unti")),
            ["/: must be \"Unit\" or object, got \"Unti\" (did you mean \"Unit\"?)"]
        );
        assert_eq!(
            check_err(&validator, json!({"Nope": 1})),
            [
                "/: must be \"Unit\", an object with property 'Pair' or an object with property \
              'Rec', got {\"Nope\":1}"
            ]
        );
        assert_eq!(
            check_err(&validator, json!({"Rec": {"a": "x"}})),
            ["/Rec/a: must be integer, got \"x\""]
        );
        assert_eq!(
            check_err(&validator, json!({"Pair": [1]})),
            ["/Pair: must NOT have fewer than 2 items"]
        );
        assert_eq!(
            validator.check(json!({"Rec": {"a": "4"}})),
            Ok(json!({"Rec": {"a": 4}}))
        );

        let validator = validator_of::<Untagged>();
        assert_eq!(check_err(&validator, json!(-1)), ["/: must be >= 0"]);
        assert_eq!(
            check_err(&validator, json!([])),
            ["/: must be integer or object, got []"]
        );
        assert_eq!(
            check_err(&validator, json!({"s": 5})),
            ["/s: must be string, got 5"]
        );
        assert_eq!(validator.check(json!("5")), Ok(json!(5)));
    }

    #[test]
    fn long_values_are_truncated() {
        let validator = validator_of::<Everything>();
        let huge = "é".repeat(1_000_000);
        let errors = check_err(&validator, with(json!({ "count": huge })));
        assert_eq!(errors.len(), 1);
        let expected = format!("/count: must be integer, got \"{}...", "é".repeat(56));
        assert_eq!(errors[0], expected);
    }

    #[test]
    fn coerces_numbers_and_booleans_where_the_schema_wants_them() {
        let validator = validator_of::<Everything>();
        let input = with(json!({
            "count": "5",
            "enabled": "true",
            "ratio": "2.5",
            "offset": " 12 ",
            "inner": {"f": "1e3", "n": "9"},
            "items": [{"f": "0.5", "n": "1"}, {"f": 1.0, "n": "18446744073709551615"}],
            "map": {"a": "3"},
            "tagged": {"kind": "A", "x": "4"},
            "tuple": ["6", "FALSE"],
        }));
        let coerced = validator.check(input).expect("coerced into a valid input");
        assert_eq!(
            coerced,
            with(json!({
                "count": 5,
                "enabled": true,
                "ratio": 2.5,
                "offset": 12,
                "inner": {"f": 1000.0, "n": 9},
                "items": [{"f": 0.5, "n": 1}, {"f": 1.0, "n": 18_446_744_073_709_551_615_u64}],
                "map": {"a": 3},
                "tagged": {"kind": "A", "x": 4},
                "tuple": [6, false],
            }))
        );
        let parsed: Everything = serde_json::from_value(coerced).expect("deserializes");
        assert_eq!(parsed.count, 5);
        assert_eq!(parsed.inner, Some(Inner { f: 1000.0, n: 9 }));
        assert_eq!(parsed.tagged, Tagged::A { x: 4 });
    }

    #[test]
    fn integral_float_strings_become_integers() {
        let validator = validator_of::<Everything>();
        let coerced = validator
            .check(with(json!({"count": "1e1"})))
            .expect("coerced");
        assert_eq!(coerced["count"], json!(10));
        assert!(coerced["count"].is_u64());
    }

    #[test]
    fn coerces_through_ref() {
        let schema = json!({
            "$defs": {"N": {"type": "integer"}, "B": {"$ref": "#/$defs/%42%6Fol"}, "Bool": {"type": "boolean"}},
            "type": "object",
            "properties": {"n": {"$ref": "#/$defs/N"}, "b": {"$ref": "#/$defs/B"}}
        });
        let validator = InputValidator::new(&schema, ValidationOptions::default()).unwrap();
        assert_eq!(
            validator.check(json!({"n": "5", "b": "false"})),
            Ok(json!({"n": 5, "b": false}))
        );
    }

    #[test]
    fn fractional_string_is_not_coerced_into_an_integer() {
        let validator = validator_of::<Everything>();
        assert_eq!(
            check_err(&validator, with(json!({"count": "5.5", "enabled": "true"}))),
            ["/count: must be integer, got \"5.5\""]
        );
        assert_eq!(
            check_err(&validator, with(json!({"count": "five"}))),
            ["/count: must be integer, got \"five\""]
        );
        assert_eq!(
            check_err(&validator, with(json!({"ratio": "NaN"}))),
            ["/ratio: must be number, got \"NaN\""]
        );
    }

    #[test]
    fn errors_are_reported_for_the_coerced_input() {
        let validator = validator_of::<Everything>();
        assert_eq!(
            check_err(&validator, with(json!({"count": "0", "enabled": "maybe"}))),
            [
                "/count: must be >= 1",
                "/enabled: must be boolean, got \"maybe\""
            ]
        );
    }

    #[test]
    fn coercion_off_reports_errors() {
        let validator = strict_validator_of::<Everything>();
        assert_eq!(
            check_err(&validator, with(json!({"count": "5", "retries": null}))),
            [
                "/count: must be integer, got \"5\"",
                "/retries: must be integer, got null"
            ]
        );
        assert_eq!(validator.options(), ValidationOptions { coerce: false });
    }

    #[test]
    fn null_for_an_optional_non_nullable_property_is_dropped() {
        let validator = validator_of::<Everything>();
        let mut expected = everything();
        expected.as_object_mut().unwrap().remove("retries");
        assert_eq!(
            validator.check(with(json!({"retries": null}))),
            Ok(expected)
        );
        // Nullable properties keep their null; required ones are errors.
        let coerced = validator
            .check(with(json!({"retries": null, "offset": null})))
            .unwrap();
        assert_eq!(coerced["offset"], Value::Null);
        assert!(coerced.get("retries").is_none());
        assert_eq!(
            check_err(&validator, with(json!({"count": null}))),
            ["/count: must be integer, got null"]
        );
    }

    #[test]
    fn valid_input_comes_back_unchanged() {
        let schema = json!({
            "type": "object",
            "properties": {
                "id": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "s": {"type": "string"},
                "n": {"type": ["integer", "null"]}
            }
        });
        let validator = InputValidator::new(&schema, ValidationOptions::default()).unwrap();
        let input = json!({"id": "5", "s": "true", "n": null, "extra": "7"});
        assert!(validator.is_valid(&input));
        assert_eq!(validator.check(input.clone()), Ok(input));
        // A string that a string branch takes is never coerced, even in an invalid input.
        let coerced = validator.check(json!({"id": "5", "n": "3"})).unwrap();
        assert_eq!(coerced, json!({"id": "5", "n": 3}));
    }

    #[test]
    fn is_valid_does_not_coerce() {
        let validator = validator_of::<Everything>();
        let input = with(json!({"count": "5"}));
        assert!(!validator.is_valid(&input));
        assert!(validator.is_valid(&everything()));
        assert!(validator.check(input).is_ok());
    }

    #[test]
    fn invalid_schemas_are_errors() {
        let options = ValidationOptions::default();
        for schema in [
            json!({"type": 5}),
            json!({"$ref": "#/$defs/missing"}),
            json!({"$ref": "http://example.com/schema.json"}),
            json!({"pattern": "(("}),
            json!(5),
        ] {
            let error = InputValidator::new(&schema, options).expect_err(&schema.to_string());
            assert!(!error.message.is_empty());
            assert!(
                error.to_string().starts_with("invalid input schema: "),
                "{error}"
            );
        }
        let mut deep = json!({"type": "integer"});
        for _ in 0..200 {
            deep = json!({"anyOf": [deep]});
        }
        let error = InputValidator::new(&deep, options).expect_err("too deep");
        assert_eq!(error.message, "schema is nested more than 256 levels deep");
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Free {
        data: Value,
    }

    #[test]
    fn deep_inputs_never_overflow_the_stack() {
        let recursive = validator_of::<Tree>();
        assert!(recursive.guard_depth);
        let errors = recursive
            .check(nested_arrays(10_000))
            .expect_err("too deep");
        assert_eq!(
            messages(&errors),
            ["/: must NOT be nested more than 128 levels deep"]
        );
        let deep = nested_arrays(10_000);
        assert!(!recursive.is_valid(&deep));
        drop_flat(deep);

        // A deep but legitimate tree (as deep as serde_json parses) is validated normally.
        let mut tree = json!({"label": "leaf", "children": []});
        for _ in 0..60 {
            tree = json!({"label": "node", "children": [tree]});
        }
        assert!(recursive.is_valid(&tree));

        let free = validator_of::<Free>();
        assert!(!free.guard_depth);
        // (`json!` would serialize the deep value recursively, so build the objects by hand.)
        let mut input = Map::new();
        input.insert("data".into(), nested_arrays(10_000));
        let mut valid = free
            .check(Value::Object(input))
            .expect("a free-form field takes anything");
        // (Cloning or comparing it would recurse too: reuse the returned value.)
        assert!(valid["data"][0][0].is_array());
        valid["more"] = json!(1);
        let errors = free.check(valid).map(drop_flat).expect_err("unknown key");
        assert_eq!(
            messages(&errors),
            ["/: must NOT be nested more than 128 levels deep"]
        );
    }

    #[test]
    fn hostile_inputs_give_errors_not_panics() {
        let validator = validator_of::<Everything>();
        let weird = json!({
            "": null, "~/": 1, "\u{0}": "\u{202e}", "🦀🦀": [[[[]]]], "a/b": {"c~d": 1},
            "count": "\u{1F600}", "mode": "\u{0}", "name": 1e308, "offset": -0.0,
            "items": [null, 1, "x", {"f": "inf"}], "tuple": [], "map": {"k": "-1", "a/b~": "x"}
        });
        let errors = validator.check(weird).expect_err("hostile input");
        let text = errors.to_string();
        assert!(
            text.contains("/: must NOT have additional property '~/'"),
            "{text}"
        );
        assert!(
            text.contains("/count: must be integer, got \"😀\""),
            "{text}"
        );
        assert!(text.contains("/map/k: must be >= 0"), "{text}");
        assert!(
            text.contains("/map/a~1b~0: must be integer, got \"x\""),
            "{text}"
        );
        assert!(
            text.contains("/tuple: must NOT have fewer than 2 items"),
            "{text}"
        );
        assert!(
            text.contains("/items/3/f: must be number, got \"inf\""),
            "{text}"
        );
        let paths: Vec<&str> = errors.issues().iter().map(|i| i.path.as_str()).collect();
        let mut sorted = paths.clone();
        sorted.sort_by(|a, b| compare_paths(a, b));
        assert_eq!(paths, sorted);

        for input in [
            json!(null),
            json!("x".repeat(100_000)),
            json!([1, 2, 3]),
            Value::Array((0..10_000).map(|i| json!({ format!("k{i}"): i })).collect()),
            json!({"\u{FFFF}": {"\u{10FFFF}": ["\u{200B}"]}}),
        ] {
            let errors = validator.check(input).expect_err("never valid");
            assert!(!errors.is_empty());
            assert!(errors.len() <= MAX_ISSUES + 1);
        }
    }

    #[test]
    fn many_issues_are_capped() {
        let validator = InputValidator::new(
            &json!({"type": "array", "items": {"type": "integer"}}),
            ValidationOptions::default(),
        )
        .unwrap();
        let errors = validator
            .check(json!(vec!["x"; 120]))
            .expect_err("all wrong");
        assert_eq!(errors.len(), MAX_ISSUES + 1);
        assert_eq!(
            errors.issues()[0].to_string(),
            "/0: must be integer, got \"x\""
        );
        assert_eq!(errors.issues()[2].path, "/2");
        assert_eq!(errors.issues()[10].path, "/10");
        assert_eq!(
            errors.issues()[MAX_ISSUES].to_string(),
            "/: ... and 70 more issues not shown"
        );
    }

    #[test]
    fn cyclic_and_odd_schemas_do_not_hang_or_panic() {
        let options = ValidationOptions::default();
        let cyclic = json!({"$defs": {"A": {"anyOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/A"}]}}, "$ref": "#/$defs/A"});
        let validator = InputValidator::new(&cyclic, options).expect("the library takes it");
        assert!(validator.guard_depth);
        let _ = validator.check(json!({"a": ["5", {"b": "true"}]}));
        for schema in [json!(true), json!(false), json!({})] {
            let validator = InputValidator::new(&schema, options).unwrap();
            let _ = validator.check(json!(["1", "x"]));
        }
        // Draft 7 from `$schema`: array-form `items` is a tuple there.
        let draft7 = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "items": [{"type": "integer"}],
            "additionalItems": {"type": "boolean"}
        });
        let validator = InputValidator::new(&draft7, options).unwrap();
        assert_eq!(validator.check(json!(["1", "true"])), Ok(json!([1, true])));
        let never = InputValidator::new(&json!(false), options).unwrap();
        assert_eq!(
            check_err(&never, json!(1)),
            ["/: must NOT be present (schema is false)"]
        );
    }

    #[test]
    fn issues_are_sorted_and_deduplicated() {
        let errors = InputErrors::new(vec![
            InputIssue::new("/items/10", "b"),
            InputIssue::new("/items/2", "b"),
            InputIssue::new("", "z"),
            InputIssue::new("/items/2", "a"),
            InputIssue::new("/items/2", "b"),
        ]);
        assert_eq!(
            messages(&errors),
            ["/: z", "/items/2: a", "/items/2: b", "/items/10: b"]
        );
    }

    #[test]
    fn helpers() {
        assert_eq!(suggest("unti", ["unit"].into_iter()), Some("unit"));
        assert_eq!(
            suggest("File-Path", ["file_path"].into_iter()),
            Some("file_path")
        );
        assert_eq!(
            suggest("offest", ["limit", "offset"].into_iter()),
            Some("offset")
        );
        assert_eq!(suggest("x", ["y"].into_iter()), None);
        assert_eq!(truncate_chars("abcdef", 5), "ab...");
        assert_eq!(truncate_chars("abcde", 5), "abcde");
        assert_eq!(join_or(&["a".into(), "b".into(), "c".into()]), "a, b or c");
        assert_eq!(
            local_pointer("#/$defs/A%20B").as_deref(),
            Some("/$defs/A B")
        );
        assert_eq!(local_pointer("#foo"), None);
        assert_eq!(local_pointer("other.json#/a"), None);
    }
}
