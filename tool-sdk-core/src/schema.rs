//! The canonical schema of a type, as tool inputs and typed outputs use it.

use serde_json::Value;

/// The canonical schema of a tool input type: JSON Schema draft 2020-12 from schemars,
/// `$defs` kept, `$schema` kept, the root `title` removed (it is the Rust type name, noise for a
/// model).
pub fn schema_for<T: schemars::JsonSchema + ?Sized>() -> Value {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.remove("title");
    }
    value
}
