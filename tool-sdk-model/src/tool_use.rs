//! A tool call in an assistant message, and its arguments as the model sent them.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool call in an assistant message.
///
/// Serialized as `{"id", "name", "input"}`, plus `"malformed": "<raw text>"` (with `input`
/// `{}`) for a call whose arguments did not parse.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUse {
    /// The call's id, echoed by its result.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, or the text the model sent when they were not a JSON object.
    pub input: ToolInput,
}

impl ToolUse {
    /// A call with these parsed arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ToolUse {
            id: id.into(),
            name: name.into(),
            input: ToolInput::Parsed(input),
        }
    }

    /// A call from the model's raw argument text (see [`ToolInput::from_raw`]).
    pub fn from_raw(id: impl Into<String>, name: impl Into<String>, raw: &str) -> Self {
        ToolUse {
            id: id.into(),
            name: name.into(),
            input: ToolInput::from_raw(raw),
        }
    }
}

/// A tool call's arguments: a JSON value, or the model's text when it was not a JSON object.
///
/// A malformed call has no JSON to run with, so it cannot be passed to a tool by mistake; the
/// agent answers it with an error that quotes the text.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolInput {
    /// The arguments as JSON.
    Parsed(Value),
    /// Arguments that were not a JSON object.
    Malformed {
        /// The model's text, verbatim.
        raw: String,
        /// Why it is not a JSON object.
        error: String,
    },
}

impl ToolInput {
    /// The model's raw argument text: empty means `{}`, a JSON object is parsed, anything else
    /// is [`Malformed`](ToolInput::Malformed).
    pub fn from_raw(raw: &str) -> Self {
        if raw.trim().is_empty() {
            return ToolInput::Parsed(Value::Object(Map::new()));
        }
        let error = match serde_json::from_str::<Value>(raw) {
            Ok(value @ Value::Object(_)) => return ToolInput::Parsed(value),
            Ok(other) => format!("a JSON {}, not an object", json_kind(&other)),
            Err(error) => format!("not valid JSON: {error}"),
        };
        ToolInput::Malformed {
            raw: raw.to_owned(),
            error,
        }
    }

    /// The arguments, when they parsed.
    pub fn parsed(&self) -> Option<&Value> {
        match self {
            ToolInput::Parsed(value) => Some(value),
            ToolInput::Malformed { .. } => None,
        }
    }

    /// The model's text, when the arguments did not parse.
    pub fn malformed(&self) -> Option<&str> {
        match self {
            ToolInput::Parsed(_) => None,
            ToolInput::Malformed { raw, .. } => Some(raw),
        }
    }

    /// Whether the arguments did not parse.
    pub fn is_malformed(&self) -> bool {
        matches!(self, ToolInput::Malformed { .. })
    }

    /// The arguments, or `{}` for a malformed call: what is shown, and echoed back to the
    /// provider (which would reject text that is not JSON). Never what a tool runs with.
    pub fn json_or_empty(&self) -> Cow<'_, Value> {
        match self {
            ToolInput::Parsed(value) => Cow::Borrowed(value),
            ToolInput::Malformed { .. } => Cow::Owned(Value::Object(Map::new())),
        }
    }
}

impl From<Value> for ToolInput {
    fn from(value: Value) -> Self {
        ToolInput::Parsed(value)
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// [`ToolUse`] as it is stored: the form it had before [`ToolInput`], so saved conversations
/// and token estimates stay as they were.
#[derive(Serialize)]
struct ToolUseOut<'a> {
    id: &'a str,
    name: &'a str,
    input: Cow<'a, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    malformed: Option<&'a str>,
}

#[derive(Deserialize)]
struct ToolUseIn {
    id: String,
    name: String,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    malformed: Option<String>,
}

impl Serialize for ToolUse {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        ToolUseOut {
            id: &self.id,
            name: &self.name,
            input: self.input.json_or_empty(),
            malformed: self.input.malformed(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolUse {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let stored = ToolUseIn::deserialize(deserializer)?;
        let input = match stored.malformed {
            None => ToolInput::Parsed(stored.input),
            Some(raw) => match ToolInput::from_raw(&raw) {
                malformed @ ToolInput::Malformed { .. } => malformed,
                // Marked malformed when it was received; it stays so.
                ToolInput::Parsed(_) => ToolInput::Malformed {
                    raw,
                    error: "received as malformed".into(),
                },
            },
        };
        Ok(ToolUse {
            id: stored.id,
            name: stored.name,
            input,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::MessageContent;

    #[test]
    fn raw_arguments_parse_only_as_a_json_object() {
        assert_eq!(ToolInput::from_raw("  "), ToolInput::Parsed(json!({})));
        assert_eq!(
            ToolInput::from_raw(r#"{"a":1}"#).parsed(),
            Some(&json!({"a": 1}))
        );
        for (raw, why) in [("[1]", "array"), ("{\"a\":", "not valid JSON")] {
            let input = ToolInput::from_raw(raw);
            assert_eq!(input.parsed(), None, "{raw}");
            assert_eq!(input.malformed(), Some(raw));
            let ToolInput::Malformed { error, .. } = &input else {
                unreachable!()
            };
            assert!(error.contains(why), "{raw}: {error}");
            assert_eq!(*input.json_or_empty(), json!({}));
        }
    }

    #[test]
    fn tool_use_keeps_its_stored_form() {
        let parsed = ToolUse::new("t1", "read", json!({"path": "a"}));
        let malformed = ToolUse::from_raw("t2", "read", "{\"path\": ");
        assert_eq!(
            serde_json::to_value(&parsed).unwrap(),
            json!({"id": "t1", "name": "read", "input": {"path": "a"}})
        );
        assert_eq!(
            serde_json::to_value(&malformed).unwrap(),
            json!({"id": "t2", "name": "read", "input": {}, "malformed": "{\"path\": "})
        );
        for call in [parsed, malformed] {
            let block = MessageContent::ToolUse(call);
            let json = serde_json::to_string(&block).unwrap();
            assert_eq!(
                serde_json::from_str::<MessageContent>(&json).unwrap(),
                block
            );
        }
    }
}
