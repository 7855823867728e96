//! Input schemas: of a generated parameter struct (from a table of its fields) and of an
//! `#[input]` type, and the probe that finds whether a type is `JsonSchema`.

use std::sync::OnceLock;

use serde_json::Value;

use super::Tag;

/// The canonical schema of the input struct generated from parameters, from its
/// `JsonSchema::json_schema` and name. Its doc comment is for Rust readers, so it is left out:
/// the tool's description already tells the model.
///
/// What [`crate::schema::schema_for`] gets from schemars' generic `into_root_schema_for`,
/// done here once for every tool: a generated struct never refers to itself, so the root needs
/// only its `$schema` and `$defs` added (in the same key order, the `title` added and then
/// dropped as there).
pub fn params_schema(
    name: &str,
    json_schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
) -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = json_schema(&mut generator);
    let meta_schema = generator.settings().meta_schema.clone();
    let definitions_key = generator
        .settings()
        .definitions_path
        .trim_start_matches('/')
        .to_owned();
    let mut definitions = generator.take_definitions(false);
    let object = schema.ensure_object();
    object.entry("title").or_insert_with(|| name.into());
    if let Some(meta_schema) = meta_schema {
        object.insert("$schema".into(), meta_schema.into());
    }
    if !definitions.is_empty()
        && let Some(target) = object
            .entry(definitions_key)
            .or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()
    {
        target.append(&mut definitions);
    }
    let mut value = schema.to_value();
    if let Some(root) = value.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    value
}

/// A tool's input schema, built on first use and kept in the tool's own `static`.
///
/// Not generic (the builder is a plain `fn`), so the `OnceLock` machinery is compiled once
/// here rather than once per tool.
pub fn schema_once(cell: &'static OnceLock<Value>, build: fn() -> Value) -> &'static Value {
    cell.get_or_init(build)
}

/// Makes the root of an `#[input]` type's schema refuse keys it does not name, as a generated
/// parameter struct does (`deny_unknown_fields`): the validator then refuses an unknown key
/// with a did-you-mean instead of serde dropping it silently.
///
/// A schema that already says what to do with other keys (`additionalProperties` set by
/// `deny_unknown_fields`, a flattened map, or `#[schemars(extend(...))]`) is kept. So is a
/// root that is not a plain object: with `allOf`/`anyOf`/`oneOf`/`$ref` (an enum, a flattened
/// enum), `additionalProperties` would not see the branches' properties and would refuse
/// valid keys.
pub fn close_unknown_fields(schema: &mut Value) {
    const DECIDES_OTHER_KEYS: [&str; 11] = [
        "additionalProperties",
        "unevaluatedProperties",
        "patternProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "$ref",
        "not",
        "if",
        "then",
        "else",
    ];
    let Some(root) = schema.as_object_mut() else {
        return;
    };
    let plain_object = root.get("type").and_then(Value::as_str) == Some("object")
        && !DECIDES_OTHER_KEYS.iter().any(|key| root.contains_key(*key));
    if plain_object {
        root.insert("additionalProperties".into(), Value::Bool(false));
    }
}

// ---- Schemas: arguments and `#[input]` types must be `JsonSchema` ----
//
// A plain `T: JsonSchema` bound would fail with rustc's own message, which lists a few of the
// trait's hundreds of implementors and says nothing of what to do (and the generated input
// struct's derive would fail the same way at the same spot). So whether `T` is `JsonSchema` is
// probed instead, the way return values are: the generated code never states the bound, and
// one assertion per type turns a failed probe into a single message that says what to derive.

/// Picked for `JsonSchema` types.
#[derive(Clone, Copy)]
pub struct SchemaTag;
/// Picked for anything else: the schema assertion then fails to compile.
#[derive(Clone, Copy)]
pub struct NoSchemaTag;

/// Specific impl.
pub trait ViaJsonSchema {
    /// The tag.
    fn __tool_schema_tag(&self) -> SchemaTag {
        SchemaTag
    }
}
impl<T: schemars::JsonSchema + ?Sized> ViaJsonSchema for &Tag<T> {}

/// Fallback impl.
pub trait ViaNoSchema {
    /// The tag.
    fn __tool_schema_tag(&self) -> NoSchemaTag {
        NoSchemaTag
    }
}
impl<T: ?Sized> ViaNoSchema for Tag<T> {}

/// Holds when the probe found `T` to be `JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{T}` cannot be a tool's `#[input]`: it does not implement `JsonSchema`",
    label = "the model is told the input's JSON Schema, so this type must implement \
             `JsonSchema`",
    note = "derive it on your struct: `#[derive(serde::Deserialize, JsonSchema)]`, with \
            `use tool_sdk::{{schemars, JsonSchema}};`"
)]
pub trait InputSchema<T: ?Sized> {}
impl<T: ?Sized> InputSchema<T> for SchemaTag {}

/// Compile-time check that an `#[input]` type is `JsonSchema`.
pub fn assert_input_schema<T: ?Sized, S: InputSchema<T>>(_probe: S) {}

/// A type's `JsonSchema` functions, looked up where the type is concrete. Generic only in the
/// field's type, so a crate of tools compiles them once per type it uses, not once per field.
#[derive(Clone, Copy)]
pub struct SchemaFns {
    subschema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
    is_option: fn() -> bool,
}

impl SchemaTag {
    /// `T`'s functions.
    pub fn fns<T: schemars::JsonSchema + ?Sized>(self) -> SchemaFns {
        SchemaFns {
            subschema: |generator| generator.subschema_for::<T>(),
            // A hidden method, but the derive asks for it too: whether a field is an `Option`
            // (and so not required) is only known through it.
            is_option: T::_schemars_private_is_option,
        }
    }

    /// The canonical schema of an `#[input]` type, closed to unknown keys unless the tool
    /// allows them (see [`close_unknown_fields`]).
    pub fn input_schema<T: schemars::JsonSchema + ?Sized>(self, allow_unknown: bool) -> Value {
        let mut schema = crate::schema_for::<T>();
        if !allow_unknown {
            close_unknown_fields(&mut schema);
        }
        schema
    }
}

impl NoSchemaTag {
    /// Stand-ins, never called: code that picks this tag does not compile.
    pub fn fns<T: ?Sized>(self) -> SchemaFns {
        SchemaFns {
            subschema: |_| schemars::Schema::default(),
            is_option: || false,
        }
    }

    /// A stand-in, never called: code that picks this tag does not compile.
    pub fn input_schema<T: ?Sized>(self, _allow_unknown: bool) -> Value {
        Value::Null
    }
}

/// One field of a generated input struct, as its `JsonSchema` impl describes it.
pub struct FieldSchema {
    /// The key the model sends.
    pub name: &'static str,
    /// From the field's doc comment, as schemars' derive splits it.
    pub title: &'static str,
    /// From `#[arg(description = ...)]` or the doc comment.
    pub description: &'static str,
    /// The field type's functions ([`SchemaTag::fns`]).
    pub fns: SchemaFns,
    /// For a field with a default (which makes it optional): the default as JSON, when it is
    /// `Serialize`.
    pub default: Option<fn() -> Option<Value>>,
}

/// The schema of a generated input struct, exactly as `#[derive(JsonSchema)]` would write it
/// (same keys, same order), but from a table: the derive would need a `JsonSchema` bound on
/// each field's type (whose error is rustc's, not ours) or a distinct wrapper type per field,
/// and each such type compiles its own copy of schemars' generic `subschema_for`.
pub fn params_json_schema(
    generator: &mut schemars::SchemaGenerator,
    description: &str,
    deny_unknown_fields: bool,
    params: &[super::ParamSpec],
) -> schemars::Schema {
    use schemars::_private::{insert_metadata_property_if_nonempty, insert_object_property};

    let mut schema = if deny_unknown_fields {
        schemars::json_schema!({ "type": "object", "additionalProperties": false })
    } else {
        schemars::json_schema!({ "type": "object" })
    };
    let fields = params.iter().filter_map(|param| match param {
        super::ParamSpec::Arg(field) => Some(field),
        super::ParamSpec::Injected(_) => None,
    });
    for field in fields {
        let mut property = (field.fns.subschema)(generator);
        insert_metadata_property_if_nonempty(&mut property, "title", field.title);
        insert_metadata_property_if_nonempty(&mut property, "description", field.description);
        if let Some(default) = field.default.and_then(|default| default()) {
            property.insert("default".into(), default);
        }
        let optional = generator.contract().is_deserialize()
            && (field.default.is_some() || (field.fns.is_option)());
        insert_object_property(&mut schema, field.name, optional, property);
    }
    insert_metadata_property_if_nonempty(&mut schema, "description", description);
    schema
}
