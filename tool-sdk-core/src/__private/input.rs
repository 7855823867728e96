//! The model's JSON read into a tool's arguments, with serde's own messages.

use std::fmt::Display;

use serde_json::Value;

use crate::ToolError;

/// The input of a generated parameter struct as its object of fields. Not generic: one copy
/// for every tool.
pub fn input_object(
    input: Value,
    type_name: &str,
    fields: &[Option<&str>],
    deny_unknown: bool,
) -> Result<serde_json::Map<String, Value>, ToolError> {
    let Value::Object(object) = input else {
        return Err(ToolError::invalid_input(format!(
            "invalid type: {}, expected struct {type_name}",
            unexpected(&input)
        )));
    };
    if deny_unknown
        && let Some(key) = object
            .keys()
            .find(|key| !fields.contains(&Some(key.as_str())))
    {
        let fields: Vec<&str> = fields.iter().flatten().copied().collect();
        let expected = match fields[..] {
            [] => "there are no fields".to_owned(),
            [only] => format!("expected `{only}`"),
            _ => {
                let listed: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
                format!("expected one of {}", listed.join(", "))
            }
        };
        return Err(ToolError::invalid_input(format!(
            "unknown field `{key}`, {expected}"
        )));
    }
    Ok(object)
}

/// How serde names a JSON value of the wrong type.
fn unexpected(value: &Value) -> String {
    match value {
        Value::Null => "null".to_owned(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".to_owned(),
        Value::Object(_) => "map".to_owned(),
    }
}

/// One field of a generated parameter struct, taken out of its input object. Generic only in
/// the field's type, so it is compiled once per type in a crate, not once per tool; an absent
/// field is what serde's derive makes of one (`None` for an `Option`, else an error).
pub fn take_field<T: ToolArgument>(
    object: &mut serde_json::Map<String, Value>,
    name: &'static str,
) -> Result<T, ToolError> {
    match take_value(object, name) {
        Some(value) => T::deserialize(value).map_err(|error| field_error(name, &error)),
        None => T::deserialize(Missing(name)).map_err(|error| field_error(name, &error)),
    }
}

/// [`take_field`] for a field with a default.
pub fn take_field_or<T: ToolArgument>(
    object: &mut serde_json::Map<String, Value>,
    name: &'static str,
    default: fn() -> T,
) -> Result<T, ToolError> {
    match take_value(object, name) {
        Some(value) => T::deserialize(value).map_err(|error| field_error(name, &error)),
        None => Ok(default()),
    }
}

/// Moves a field's value out of the input, leaving `null` behind. A scan, not a hash look-up:
/// tools have a handful of fields, and removing from the map would hash every name.
fn take_value(object: &mut serde_json::Map<String, Value>, name: &str) -> Option<Value> {
    object
        .iter_mut()
        .find(|(key, _)| key.as_str() == name)
        .map(|(_, value)| value.take())
}

fn field_error(name: &str, error: &dyn Display) -> ToolError {
    let error = error.to_string();
    match error.starts_with("missing field") {
        true => ToolError::invalid_input(error),
        false => ToolError::invalid_input(format!("field `{name}`: {error}")),
    }
}

/// The value of an absent field: an `Option` takes it as `None`, anything else refuses it.
struct Missing(&'static str);

impl<'de> serde::Deserializer<'de> for Missing {
    type Error = serde_json::Error;

    fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::missing_field(self.0))
    }

    fn deserialize_option<V: serde::de::Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// Turns the input's object back into the struct's `Deserialize` error type, for the
/// generated `Deserialize` impl (which users may call; the tool itself does not).
pub fn deserialize_error<E: serde::de::Error>(error: ToolError) -> E {
    match error {
        ToolError::InvalidInput(message) => E::custom(message),
        other => E::custom(other),
    }
}

/// Deserializes a (schema-valid) input.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: Value) -> Result<T, ToolError> {
    serde_json::from_value(input).map_err(|error| ToolError::invalid_input(error.to_string()))
}

/// Deserializes an input without taking it.
pub fn parse_input_ref<'de, T: serde::Deserialize<'de>>(input: &'de Value) -> Result<T, ToolError> {
    T::deserialize(input).map_err(|error| ToolError::invalid_input(error.to_string()))
}

/// A type the model's JSON can be turned into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument",
    label = "the model sends JSON, so this type must implement `Deserialize`",
    note = "derive it on your type: `#[derive(serde::Deserialize)]`; or, for a value the tool \
            takes from its context rather than from the model, implement `FromToolContext` for it"
)]
pub trait ToolArgument: serde::de::DeserializeOwned {}
impl<T: serde::de::DeserializeOwned> ToolArgument for T {}

/// A struct the model's JSON object can be turned into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's `#[input]`",
    label = "the model sends a JSON object, so this type must implement `Deserialize`",
    note = "derive it on your struct: `#[derive(serde::Deserialize)]`"
)]
pub trait ToolInputType: serde::de::DeserializeOwned {}
impl<T: serde::de::DeserializeOwned> ToolInputType for T {}

/// Compile-time check of an `#[input]` type.
pub fn assert_input<T: ToolInputType>() {}
