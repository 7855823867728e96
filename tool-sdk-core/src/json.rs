//! [`Json<T>`]: typed tool output, with an output schema derived from `T`.

use std::marker::PhantomData;
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use crate::__private::{SchemaTag, Tag};
use crate::output::{ToolError, ToolOutput};
use crate::schema_for;

/// A typed result: a `#[tool]` that returns `Json<T>` (or `Result<Json<T>, E>`) gets an output
/// schema generated from `T`, and each call's value as structured output beside its JSON text.
///
/// The model reads the compact JSON text. An MCP client sees the schema as the tool's
/// `outputSchema` and the value as `structuredContent`. In debug builds (tests too) every
/// call that takes the pipeline (an agent's, the registry's, the MCP server's) has its
/// structured output checked against the schema, so a `T` whose `Serialize` and `JsonSchema`
/// disagree fails loudly (see
/// tool-sdk's `pipeline::CallPolicy::with_output_check`).
///
/// MCP wants an output schema whose root is an object. A `T` whose schema is not
/// `"type": "object"` (a number, a list, an enum) is wrapped: the schema becomes
/// `{"result": <T's schema>}` and the structured output `{"result": <value>}`, while the model
/// still reads the bare value.
///
/// ```
/// use serde::Serialize;
/// use tool_sdk_core::{Json, JsonSchema, Tool, ToolError, schemars, tool};
///
/// /// Today's weather in one city.
/// #[derive(Serialize, JsonSchema)]
/// struct Weather {
///     city: String,
///     celsius: i32,
/// }
///
/// /// Looks up the weather.
/// #[tool(register = false)]
/// async fn weather(city: String) -> Result<Json<Weather>, ToolError> {
///     Ok(Json(Weather { city, celsius: 21 }))
/// }
///
/// let schema = WeatherTool.output_schema().unwrap();
/// assert_eq!(schema["properties"]["celsius"]["type"], "integer");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Json<T>(pub T);

impl<T> Json<T> {
    /// The value inside.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> From<T> for Json<T> {
    fn from(value: T) -> Self {
        Json(value)
    }
}

impl<T: serde::Serialize> serde::Serialize for Json<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<T> std::ops::Deref for Json<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

/// A tool's output schema as `#[tool]` builds it from `Json<T>`, and whether values are wrapped
/// in `{"result": ...}` to fit it.
#[doc(hidden)]
#[derive(Clone, Debug, PartialEq)]
pub struct OutputShape {
    /// The schema, its root an object.
    pub schema: Value,
    /// Whether `T`'s schema was not an object and values go in `{"result": ...}`.
    pub wrapped: bool,
}

impl OutputShape {
    /// The shape of `T`'s values, with the same schema settings as tool inputs.
    pub fn of<T: schemars::JsonSchema + ?Sized>() -> Self {
        Self::from_schema(schema_for::<T>())
    }

    fn from_schema(mut schema: Value) -> Self {
        if schema.get("type").is_some_and(|t| t == "object") {
            return OutputShape {
                schema,
                wrapped: false,
            };
        }
        // `$defs` stay at the root, where the `#/$defs/...` references inside point.
        let mut root = Map::new();
        if let Some(inner) = schema.as_object_mut() {
            for key in ["$schema", "$defs"] {
                if let Some(value) = inner.remove(key) {
                    root.insert(key.to_owned(), value);
                }
            }
        }
        root.insert("type".into(), "object".into());
        root.insert("properties".into(), json!({ "result": schema }));
        root.insert("required".into(), json!(["result"]));
        root.insert("additionalProperties".into(), false.into());
        OutputShape {
            schema: Value::Object(root),
            wrapped: true,
        }
    }

    /// Puts a successful output's structured value in `{"result": ...}` when the shape says so.
    pub fn fit(&self, mut output: ToolOutput) -> ToolOutput {
        if self.wrapped
            && !output.is_error
            && let Some(value) = output.structured.take()
        {
            output.structured = Some(json!({ "result": value }));
        }
        output
    }
}

// ---- `#[tool]` support: which return types have an output schema ----
//
// Probed by type, like return values in `__private`, so that `Json` renamed on import or behind
// a type alias still counts: `(&&Tag::<R>::of_type()).__tool_output_shape_tag()`, then `T` is
// probed for `JsonSchema` as arguments are.

/// Picked for `Json<T>` and `Result<Json<T>, E>`: `T` must then be `JsonSchema`.
#[doc(hidden)]
pub struct JsonReturnTag<T>(PhantomData<T>);
/// Picked for any other return type: no output schema.
#[doc(hidden)]
pub struct PlainReturnTag;

/// Specific impl: a return type that carries a `Json<T>`.
#[doc(hidden)]
pub trait ViaJsonReturn {
    /// The `T` of `Json<T>`.
    type Inner;
    /// The tag.
    fn __tool_output_shape_tag(&self) -> JsonReturnTag<Self::Inner> {
        JsonReturnTag(PhantomData)
    }
}
impl<T> ViaJsonReturn for &Tag<Json<T>> {
    type Inner = T;
}
impl<T, E> ViaJsonReturn for &Tag<Result<Json<T>, E>> {
    type Inner = T;
}

/// Fallback impl.
#[doc(hidden)]
pub trait ViaPlainReturn {
    /// The tag.
    fn __tool_output_shape_tag(&self) -> PlainReturnTag {
        PlainReturnTag
    }
}
impl<T: ?Sized> ViaPlainReturn for Tag<T> {}

/// Holds when the schema probe found `T` to be `JsonSchema` (see `__private`'s argument
/// probe: one clear message instead of rustc's list of `JsonSchema` implementors).
#[doc(hidden)]
#[diagnostic::on_unimplemented(
    message = "`{T}` cannot be returned in `Json`: it does not implement `JsonSchema`",
    label = "a tool returning `Json<T>` declares `T`'s JSON Schema as its output schema",
    note = "derive it on your type: `#[derive(serde::Serialize, JsonSchema)]`, with \
            `use tool_sdk::{{schemars, JsonSchema}};` (or return `T` itself, without `Json`, \
            for JSON output with no schema)"
)]
pub trait OutputSchema<T> {
    /// `T`'s output shape.
    fn build(self) -> OutputShape;
}
impl<T: schemars::JsonSchema> OutputSchema<T> for SchemaTag {
    fn build(self) -> OutputShape {
        OutputShape::of::<T>()
    }
}

impl<T> JsonReturnTag<T> {
    /// Stands for `T`, for the schema probe.
    pub fn inner(&self) -> Tag<T> {
        Tag::of_type()
    }

    /// `T`'s output shape; `probe` is what the schema probe found for `T`.
    pub fn shape<S: OutputSchema<T>>(self, probe: S) -> Option<OutputShape> {
        Some(probe.build())
    }
}

impl PlainReturnTag {
    /// Stands for nothing in particular: there is no `T` to probe.
    pub fn inner(&self) -> Tag<()> {
        Tag::of_type()
    }

    /// None: the tool has no output schema.
    pub fn shape<S>(self, _probe: S) -> Option<OutputShape> {
        None
    }
}

/// A tool's output shape, built on first use and kept in the tool's own `static`.
#[doc(hidden)]
pub fn output_shape_once(
    cell: &'static OnceLock<Option<OutputShape>>,
    build: fn() -> Option<OutputShape>,
) -> Option<&'static OutputShape> {
    cell.get_or_init(build).as_ref()
}

/// A call's result fitted to the tool's output shape.
#[doc(hidden)]
pub fn fit_output(
    result: Result<ToolOutput, ToolError>,
    shape: Option<&OutputShape>,
) -> Result<ToolOutput, ToolError> {
    match shape {
        Some(shape) => result.map(|output| shape.fit(output)),
        None => result,
    }
}
