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
//! same-document `$ref`s, `properties`, `additionalProperties`, `items`/`prefixItems`,
//! `allOf`, and the `anyOf`/`oneOf` branches that fit the value's type (and whose `const` tag
//! properties it does not contradict). Those branches are alternatives: a value that one of
//! them takes as sent is left alone, and otherwise each branch is tried on its own copy of the
//! value, so that an untagged enum never switches variant because another variant's
//! coercion was applied too.
//!
//! `format` is an annotation, as draft 2020-12 specifies: it is not asserted, so the
//! schemars formats (`uint64`, `double`, ...) and the tool's own deserialization decide.

mod coerce;
mod depth;
mod messages;
#[cfg(test)]
mod tests;
mod wording;

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde_json::Value;

use coerce::{BranchValidators, Walk};
use depth::{RefScan, exceeds_depth, too_deep};
use wording::compare_paths;

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
    /// Validators of `anyOf`/`oneOf` branches, compiled as coercion needs them.
    branches: Arc<BranchValidators>,
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
            branches: Arc::default(),
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
            let mut walk = Walk::new(&self.schema).with_branches(&self.branches);
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
