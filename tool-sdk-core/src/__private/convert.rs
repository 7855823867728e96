//! Return values and errors into tool results, picked by autoref specialisation (see the
//! module above).

use std::borrow::Cow;
use std::convert::Infallible;
use std::fmt::Display;

use serde_json::Value;

use super::Tag;
use crate::{ContentBlock, ToolError, ToolOutput};

// ---- Return values: `Result<T, E>` or plain `T` ----

/// Picked for `Result<T, E>`.
pub struct ResultTag;
/// Picked for anything else.
pub struct PlainTag;

/// Specific impl: `Result`.
pub trait ViaResult {
    /// The tag.
    fn __tool_return_tag(&self) -> ResultTag {
        ResultTag
    }
}
impl<T, E> ViaResult for &Tag<Result<T, E>> {}

/// Fallback impl: any value.
pub trait ViaPlain {
    /// The tag.
    fn __tool_return_tag(&self) -> PlainTag {
        PlainTag
    }
}
impl<T: ?Sized> ViaPlain for Tag<T> {}

impl ResultTag {
    /// A `Result` stays as it is.
    pub fn split<T, E>(self, result: Result<T, E>) -> Result<T, E> {
        result
    }
}

impl PlainTag {
    /// A plain value cannot fail.
    pub fn split<T>(self, value: T) -> Result<T, Infallible> {
        Ok(value)
    }
}

// ---- Success values: tool outputs as they are, anything else as JSON ----

/// Something a tool can return as it is: text, content blocks, or a full [`ToolOutput`].
///
/// Any other `Serialize` type is sent to the model as JSON.
pub trait IntoToolOutput {
    /// Converts it.
    fn into_tool_output(self) -> ToolOutput;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolOutput {
        self
    }
}
impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}
impl IntoToolOutput for &str {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}
impl IntoToolOutput for Cow<'_, str> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text(self)
    }
}
impl IntoToolOutput for ContentBlock {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::blocks(vec![self])
    }
}
impl IntoToolOutput for Vec<ContentBlock> {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::blocks(self)
    }
}
impl IntoToolOutput for Value {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::json(self)
    }
}
impl IntoToolOutput for () {
    fn into_tool_output(self) -> ToolOutput {
        ToolOutput::text("Done.")
    }
}

/// Picked for [`IntoToolOutput`] types.
pub struct OutputTag;
/// Picked for anything else, which must be `Serialize`.
pub struct SerializeTag;

/// Specific impl.
pub trait ViaToolOutput {
    /// The tag.
    fn __tool_output_tag(&self) -> OutputTag {
        OutputTag
    }
}
impl<T: IntoToolOutput> ViaToolOutput for &Tag<T> {}

/// Fallback impl.
pub trait ViaSerialize {
    /// The tag.
    fn __tool_output_tag(&self) -> SerializeTag {
        SerializeTag
    }
}
impl<T: ?Sized> ViaSerialize for Tag<T> {}

/// A value a tool can return.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool output",
    label = "a tool must return text, content blocks, a `ToolOutput` or a `Serialize` type",
    note = "return `String`, `ToolOutput`, `Vec<ContentBlock>`, or derive `serde::Serialize` on \
            this type (it is then sent to the model as JSON); wrap any of them in `Result` to \
            fail"
)]
pub trait SerializeOutput: serde::Serialize {}
impl<T: serde::Serialize> SerializeOutput for T {}

impl OutputTag {
    /// Converts it as it is.
    pub fn convert<T: IntoToolOutput>(self, value: T) -> Result<ToolOutput, ToolError> {
        Ok(value.into_tool_output())
    }
}

impl SerializeTag {
    /// Converts it to JSON.
    pub fn convert<T: SerializeOutput>(self, value: T) -> Result<ToolOutput, ToolError> {
        serde_json::to_value(&value)
            .map(ToolOutput::json)
            .map_err(|error| ToolError::failed(format!("the tool's result is not JSON: {error}")))
    }
}

// ---- Errors: `ToolError` keeps its kind, anything `Display` is an execution failure ----

/// Picked for [`ToolError`].
pub struct ToolErrorTag;
/// Picked for anything else, which must be `Display`.
pub struct DisplayTag;

/// Specific impl.
pub trait ViaToolError {
    /// The tag.
    fn __tool_error_tag(&self) -> ToolErrorTag {
        ToolErrorTag
    }
}
impl ViaToolError for &Tag<ToolError> {}

/// Fallback impl.
pub trait ViaDisplay {
    /// The tag.
    fn __tool_error_tag(&self) -> DisplayTag {
        DisplayTag
    }
}
impl<T: ?Sized> ViaDisplay for Tag<T> {}

/// An error a tool can fail with.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's error type",
    label = "a tool's error must be a `ToolError` or implement `Display`",
    note = "use `ToolError` to choose the kind (invalid input, not found, retry, ...), or any \
            error type that implements `Display` such as `std::io::Error`, `anyhow::Error` or \
            `String`"
)]
pub trait ErrorMessage: Display {}
impl<T: Display + ?Sized> ErrorMessage for T {}

impl ToolErrorTag {
    /// Kept as it is.
    pub fn convert(self, error: ToolError) -> ToolError {
        error
    }

    /// Kept as it is: the validator chose the kind.
    pub fn invalid_input(self, error: ToolError) -> ToolError {
        error
    }
}

impl DisplayTag {
    /// An execution failure with the error's text (alternate form, so that error chains such
    /// as anyhow's are kept).
    pub fn convert<E: ErrorMessage>(self, error: E) -> ToolError {
        ToolError::failed(format!("{error:#}"))
    }

    /// An invalid-input error with the error's text.
    pub fn invalid_input<E: ErrorMessage>(self, error: E) -> ToolError {
        ToolError::invalid_input(format!("{error:#}"))
    }
}
