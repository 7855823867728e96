//! The words of error messages: values shown short, names quoted, lists joined, the closest
//! name suggested.

use std::cmp::Ordering;
use std::io;

use jsonschema::JsonType;
use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::{MAX_LISTED, MAX_SHOWN_CHARS, MAX_SUGGEST_CHARS};

/// `value` as compact JSON, cut to about 60 characters with "...". Serializes no more of it
/// than that, however big or deep it is.
pub(super) fn show(value: &Value) -> String {
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
pub(super) fn truncate_chars(text: &str, max: usize) -> String {
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
pub(super) fn quote_name(name: &str) -> String {
    format!("'{}'", truncate_chars(name, MAX_SHOWN_CHARS))
}

/// A string as itself, anything else as JSON.
pub(super) fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => show(other),
    }
}

/// "a", "a or b", "a, b or c".
pub(super) fn join_or(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// "a", "a and b", "a, b and c".
pub(super) fn join_and(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `must be one of "a", "b", got "d"`, with a did-you-mean hint for a near string.
pub(super) fn one_of_message<'v>(
    options: impl Iterator<Item = &'v Value>,
    actual: &Value,
) -> String {
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
pub(super) fn suggest<'c>(
    name: &str,
    candidates: impl Iterator<Item = &'c str>,
) -> Option<&'c str> {
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
pub(super) fn type_rank(t: JsonType) -> u8 {
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
pub(super) fn is_child_path(path: &str, parent: &str) -> bool {
    path.strip_prefix(parent)
        .and_then(|rest| rest.strip_prefix('/'))
        .is_some_and(|segment| !segment.contains('/'))
}

/// Orders JSON pointers segment by segment, array indices numerically.
pub(super) fn compare_paths(a: &str, b: &str) -> Ordering {
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

/// The message of an error that needs no more than its own kind (a bound, a pattern, a
/// format...); `None` for the others.
pub(super) fn plain_message(kind: &ValidationErrorKind) -> Option<String> {
    Some(match kind {
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
        _ => return None,
    })
}
