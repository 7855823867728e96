//! Which parameters are injected: a parameter whose type implements
//! [`FromToolContext`] comes from the context, any other is an argument of the input. Decided
//! by a probe at type-check time, `(&&Tag::<T>::of_type()).__tool_param_tag()`, like return
//! values: a macro cannot ask whether a type implements a trait.

use serde_json::Value;

use super::{FieldSchema, SchemaTag, Tag, ToolArgument, take_field, take_field_or};
use crate::{FromToolContext, StateRequirement, ToolContext, ToolError};

/// Picked for [`FromToolContext`] types.
#[derive(Clone, Copy)]
pub struct InjectTag;
/// Picked for anything else: an argument the model sends.
#[derive(Clone, Copy)]
pub struct ArgTag;

/// Specific impl. Any lifetime: `&'a ToolContext` is an extractor for the context's own.
pub trait ViaInjected {
    /// The tag.
    fn __tool_param_tag(&self) -> InjectTag {
        InjectTag
    }
}
impl<'a, T: FromToolContext<'a>> ViaInjected for &Tag<T> {}

/// Fallback impl.
pub trait ViaArgument {
    /// The tag.
    fn __tool_param_tag(&self) -> ArgTag {
        ArgTag
    }
}
impl<T: ?Sized> ViaArgument for Tag<T> {}

/// One parameter of a parameter-style tool, other than `#[input]`.
pub enum ParamSpec {
    /// A property of the input.
    Arg(FieldSchema),
    /// Taken from the context, with the app state it needs.
    Injected(Option<StateRequirement>),
}

impl ArgTag {
    /// The parameter's entry: its schema.
    pub fn spec<T: ?Sized>(self, field: FieldSchema) -> ParamSpec {
        ParamSpec::Arg(field)
    }

    /// Its name in the input.
    pub fn name(self, name: &'static str) -> Option<&'static str> {
        Some(name)
    }

    /// An argument needs no app state.
    pub fn required<T: ?Sized>(self) -> Option<StateRequirement> {
        None
    }

    /// Reads the argument out of the input.
    pub fn take<T: ToolArgument>(
        self,
        object: &mut serde_json::Map<String, Value>,
        name: &'static str,
        _ctx: Option<&ToolContext>,
    ) -> Result<T, ToolError> {
        take_field(object, name)
    }

    /// Reads the argument out of the input, or its default.
    pub fn take_or<T: ToolArgument>(
        self,
        object: &mut serde_json::Map<String, Value>,
        name: &'static str,
        default: fn() -> T,
        _ctx: Option<&ToolContext>,
    ) -> Result<T, ToolError> {
        take_field_or(object, name, default)
    }

    /// Never compiles: this type is not an extractor (a reference parameter must be one; the
    /// bound's message says so).
    pub fn inject<'a, T: FromToolContext<'a>>(self, ctx: &'a ToolContext) -> Result<T, ToolError> {
        T::from_context(ctx)
    }

    /// Never compiles: beside `#[input]`, a parameter must be an extractor.
    pub fn inject_beside_input<'a, T: InjectedBesideInput<'a>>(
        self,
        ctx: &'a ToolContext,
    ) -> Result<T, ToolError> {
        T::from_context(ctx)
    }
}

impl InjectTag {
    /// The parameter's entry: the state it needs.
    pub fn spec<'a, T: FromToolContext<'a>>(self, _field: FieldSchema) -> ParamSpec {
        ParamSpec::Injected(T::required_state())
    }

    /// Not in the input.
    pub fn name(self, _name: &'static str) -> Option<&'static str> {
        None
    }

    /// The app state the extractor needs.
    pub fn required<'a, T: FromToolContext<'a>>(self) -> Option<StateRequirement> {
        T::required_state()
    }

    /// Takes the value from the context (`None`: plain deserialization, which has none).
    pub fn take<'a, T: FromToolContext<'a>>(
        self,
        _object: &mut serde_json::Map<String, Value>,
        name: &'static str,
        ctx: Option<&'a ToolContext>,
    ) -> Result<T, ToolError> {
        match ctx {
            Some(ctx) => T::from_context(ctx),
            None => Err(ToolError::invalid_input(format!(
                "`{name}` is taken from the tool's context, which plain deserialization has \
                 not got"
            ))),
        }
    }

    /// [`take`](Self::take): a default does not apply (an assertion reports `#[arg]`).
    pub fn take_or<'a, T: FromToolContext<'a>>(
        self,
        object: &mut serde_json::Map<String, Value>,
        name: &'static str,
        _default: fn() -> T,
        ctx: Option<&'a ToolContext>,
    ) -> Result<T, ToolError> {
        self.take(object, name, ctx)
    }

    /// Takes the value from the context.
    pub fn inject<'a, T: FromToolContext<'a>>(self, ctx: &'a ToolContext) -> Result<T, ToolError> {
        T::from_context(ctx)
    }

    /// Takes the value from the context.
    pub fn inject_beside_input<'a, T: FromToolContext<'a>>(
        self,
        ctx: &'a ToolContext,
    ) -> Result<T, ToolError> {
        T::from_context(ctx)
    }
}

/// An extractor, beside `#[input]`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter beside `#[input]`: the `#[input]` struct takes \
               the whole input, and `{Self}` is not taken from the tool's context",
    label = "beside `#[input]`, every parameter is injected from the tool's context",
    note = "move this argument into the input struct, or implement `FromToolContext` for it"
)]
pub trait InjectedBesideInput<'a>: FromToolContext<'a> {}
impl<'a, T: FromToolContext<'a>> InjectedBesideInput<'a> for T {}

/// Holds for an argument: `#[arg]` applies.
#[diagnostic::on_unimplemented(
    message = "`#[arg]` does not apply to `{T}`: it is injected from the tool's context (it \
               implements `FromToolContext`), not sent by the model",
    label = "remove `#[arg(...)]` from this parameter"
)]
pub trait ArgAttribute<T: ?Sized> {}
impl<T: ?Sized> ArgAttribute<T> for ArgTag {}

/// Compile-time check that a parameter with `#[arg]` is an argument.
pub fn assert_arg_attribute<T: ?Sized, P: ArgAttribute<T>>(_probe: P) {}

/// Holds when the schema probe found `T` to be `JsonSchema`.
#[diagnostic::on_unimplemented(
    message = "`{T}` cannot be a tool argument: it does not implement `JsonSchema`",
    label = "the model is told each argument's JSON Schema, so this type must implement \
             `JsonSchema`",
    note = "derive it on your type: `#[derive(serde::Deserialize, JsonSchema)]`, with \
            `use tool_sdk::{{schemars, JsonSchema}};`; or, for a value the tool takes from its \
            context rather than from the model, implement `FromToolContext` for it"
)]
pub trait ArgumentSchema<T: ?Sized> {}
impl<T: ?Sized> ArgumentSchema<T> for SchemaTag {}

impl ArgTag {
    /// Compile-time check that an argument's type is `JsonSchema`.
    pub fn assert_schema<T: ?Sized, S: ArgumentSchema<T>>(self, _probe: S) {}
}

impl InjectTag {
    /// An injected parameter has no schema.
    pub fn assert_schema<T: ?Sized, S>(self, _probe: S) {}
}

/// The app state a tool's parameters need.
pub fn required_state(params: &[ParamSpec]) -> Vec<StateRequirement> {
    params
        .iter()
        .filter_map(|param| match param {
            ParamSpec::Injected(requirement) => *requirement,
            ParamSpec::Arg(_) => None,
        })
        .collect()
}
