//! Error text a model can act on: AJV-style messages, the errors of the `anyOf`/`oneOf` branch
//! an input was meant for, and did-you-mean hints.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{JsonType, ValidationError};
use serde_json::Value;

use super::coerce::Walk;
use super::wording::{
    is_child_path, join_and, join_or, one_of_message, plain, plain_message, quote_name, show,
    suggest, truncate_chars, type_rank,
};
use super::{
    InputErrors, InputIssue, InputValidator, MAX_DESCRIBE_DEPTH, MAX_FALLBACK_CHARS, MAX_LISTED,
    MAX_SHOWN_CHARS,
};

impl InputValidator {
    pub(super) fn errors_for(&self, input: &Value) -> InputErrors {
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
            kind => plain_message(kind)
                .unwrap_or_else(|| truncate_chars(&error.to_string(), MAX_FALLBACK_CHARS)),
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
        let Some(message) = shapes_message(&branches, error.instance()) else {
            return false;
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

/// `must be X or Y, got Z`: the shapes and values the branches of an `anyOf`/`oneOf` allow,
/// with a did-you-mean for a near value; `None` when no branch says what it wants.
fn shapes_message(branches: &[Branch<'_>], instance: &Value) -> Option<String> {
    let mut shapes: Vec<String> = Vec::new();
    let mut values: Vec<&Value> = Vec::new();
    let mut only_values = true;
    for branch in branches {
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
        return None;
    }
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
    Some(message)
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
