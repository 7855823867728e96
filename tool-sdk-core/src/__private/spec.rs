//! What `#[tool]` generates per tool is data: one `static` [`ToolSpec`] (name, description,
//! hints, templates, and pointers to the few functions that must know the tool's types). The
//! behaviour is here, compiled once for every tool: the tool struct's `Tool` methods are
//! `#[inline]` one-liners that call these, and a registered tool is a [`SpecTool`], one `Tool`
//! impl for all of them. A crate of 100 tools then compiles 100 tables instead of 100 `Tool`
//! impls, each with its own copy of every default method and of an async state machine.

use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::Value;

use crate::json::OutputShape;
use crate::{
    ActsOn, BoxFuture, PermissionPrompt, ResultDisplay, StateRequirement, Tool, ToolAnnotations,
    ToolContext, ToolError, ToolOutput, ToolResult,
};

/// Starts a call: reads the arguments and takes the injected values (the errors of both are
/// the call's result), then returns the future of the tool's fn, not yet polled.
pub type Start = for<'a> fn(Value, &'a ToolContext) -> Result<BoxFuture<'a, ToolResult>, ToolError>;

/// A tool's own check of its input (`validate = path`).
pub type Validate = for<'a> fn(&'a Value, &'a ToolContext) -> BoxFuture<'a, Result<(), ToolError>>;

/// One piece of a `title`/`permission` template.
#[derive(Clone, Copy, Debug)]
pub enum Piece {
    /// Text as it is.
    Text(&'static str),
    /// The input property of this name (see [`super::render_arg`]).
    Arg(&'static str),
}

/// The behaviour hints of `#[tool(read_only, destructive, ...)]`; `None` when not given.
#[derive(Clone, Copy, Debug)]
pub struct Hints {
    /// `read_only`.
    pub read_only: Option<bool>,
    /// `destructive`.
    pub destructive: Option<bool>,
    /// `idempotent`.
    pub idempotent: Option<bool>,
    /// `open_world`.
    pub open_world: Option<bool>,
}

/// Everything `#[tool]` knows about one tool.
pub struct ToolSpec {
    /// `Tool::name`.
    pub name: &'static str,
    /// `Tool::description`.
    pub description: &'static str,
    /// Builds the input schema, once (kept in `input_schema`).
    pub build_input_schema: fn() -> Value,
    /// The input schema, built on first use.
    pub input_schema: OnceLock<Value>,
    /// Builds the output shape (`Json<T>` returns), once; `None` for a fn without a return
    /// type.
    pub build_output_shape: Option<fn() -> Option<OutputShape>>,
    /// The output shape, built on first use.
    pub output_shape: OnceLock<Option<OutputShape>>,
    /// The behaviour hints.
    pub hints: Hints,
    /// `acts_on(...)`.
    pub acts_on: ActsOn,
    /// `timeout_ms`.
    pub timeout_ms: Option<u64>,
    /// `category`.
    pub category: Option<&'static str>,
    /// What the injected parameters need; `None` when no parameter can be injected.
    pub required_state: Option<fn() -> Vec<StateRequirement>>,
    /// `validate = path`.
    pub validate: Option<Validate>,
    /// `title = "..."`.
    pub title: Option<&'static [Piece]>,
    /// `permission = "..."`.
    pub permission: Option<&'static [Piece]>,
    /// Starts a call.
    pub start: Start,
}

impl ToolSpec {
    /// `Tool::input_schema`.
    pub fn input_schema(&self) -> &Value {
        self.input_schema.get_or_init(self.build_input_schema)
    }

    /// The output shape of a `Json<T>` return, if any.
    pub fn output_shape(&self) -> Option<&OutputShape> {
        let build = self.build_output_shape?;
        self.output_shape.get_or_init(build).as_ref()
    }

    /// `Tool::output_schema`.
    pub fn output_schema(&self) -> Option<&Value> {
        self.output_shape().map(|shape| &shape.schema)
    }

    /// `Tool::annotations`.
    pub fn annotations(&self) -> ToolAnnotations {
        let Hints {
            read_only,
            destructive,
            idempotent,
            open_world,
        } = self.hints;
        ToolAnnotations {
            read_only,
            destructive,
            idempotent,
            open_world,
            ..ToolAnnotations::default()
        }
    }

    /// `Tool::is_read_only`: only an explicit `read_only` counts.
    pub fn is_read_only(&self) -> bool {
        self.hints.read_only == Some(true)
    }

    /// `Tool::timeout`.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout_ms.map(Duration::from_millis)
    }

    /// `Tool::required_state`.
    pub fn required_state(&self) -> Vec<StateRequirement> {
        self.required_state
            .map(|required| required())
            .unwrap_or_default()
    }

    /// `Tool::validate_input`.
    pub fn validate_input<'a>(
        &self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        match self.validate {
            Some(validate) => validate(input, ctx),
            // Boxes a unit struct: no allocation a call, as the trait's default.
            None => crate::tool::no_check(),
        }
    }

    /// `Tool::call`: an error in the arguments is the call's result, without a poll of the
    /// tool's fn.
    pub fn call<'a>(&self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        match (self.start)(input, ctx) {
            Ok(call) => call,
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }

    /// `Tool::display_title`: the `title` template, or the name.
    pub fn display_title(&self, input: &Value) -> String {
        match self.title {
            Some(pieces) => render(pieces, input),
            None => self.name.to_owned(),
        }
    }

    /// `Tool::permission_prompt`: the `permission` template over the input, or the title.
    pub fn permission_prompt(&self, input: &Value) -> PermissionPrompt {
        let title = match self.permission {
            Some(pieces) => render(pieces, input),
            None => self.display_title(input),
        };
        PermissionPrompt {
            title,
            summary: None,
            content: input.clone(),
        }
    }

    /// `Tool::result_display`, as the trait's default.
    pub fn result_display(&self, input: &Value, output: &ToolOutput) -> ResultDisplay {
        ResultDisplay::of_output(self.display_title(input), output)
    }
}

/// A template's text over the input.
fn render(pieces: &[Piece], input: &Value) -> String {
    let mut text = String::new();
    for piece in pieces {
        match piece {
            Piece::Text(piece) => text.push_str(piece),
            Piece::Arg(key) => super::render_arg(&mut text, input, key),
        }
    }
    text
}

/// Has a tool's table: a `#[tool]`'s struct, or a [`SpecTool`]. Their whole `Tool` impl is
/// the blanket one below, so a crate of tools has nothing of `Tool` to type-check or compile
/// per tool; a method is compiled only where it is used on that struct.
pub trait HasSpec {
    /// The tool's table.
    fn spec(&self) -> &'static ToolSpec;
}

/// The tool a registration makes: the same `Tool` impl, compiled once, for every `#[tool]`.
#[derive(Clone, Copy)]
pub struct SpecTool(pub &'static ToolSpec);

impl HasSpec for SpecTool {
    fn spec(&self) -> &'static ToolSpec {
        self.0
    }
}

impl<T: HasSpec + Send + Sync + 'static> Tool for T {
    fn name(&self) -> &str {
        self.spec().name
    }

    fn description(&self) -> &str {
        self.spec().description
    }

    fn input_schema(&self) -> &Value {
        self.spec().input_schema()
    }

    fn output_schema(&self) -> Option<&Value> {
        self.spec().output_schema()
    }

    fn annotations(&self) -> ToolAnnotations {
        self.spec().annotations()
    }

    fn is_read_only(&self) -> bool {
        self.spec().is_read_only()
    }

    fn acts_on(&self) -> ActsOn {
        self.spec().acts_on
    }

    fn timeout(&self) -> Option<Duration> {
        self.spec().timeout()
    }

    fn category(&self) -> Option<&str> {
        self.spec().category
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        self.spec().required_state()
    }

    fn validate_input<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        self.spec().validate_input(input, ctx)
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        self.spec().call(input, ctx)
    }

    fn display_title(&self, input: &Value) -> String {
        self.spec().display_title(input)
    }

    fn permission_prompt(&self, input: &Value) -> PermissionPrompt {
        self.spec().permission_prompt(input)
    }

    fn result_display(&self, input: &Value, output: &ToolOutput) -> ResultDisplay {
        self.spec().result_display(input, output)
    }
}

pin_project_lite::pin_project! {
    /// The future of a call: the tool fn's own future, and what turns its value into a
    /// result. Generic only in that future, so each tool adds this small `poll`, not an async
    /// block of its own around the fn.
    pub struct Finish<F: Future> {
        #[pin]
        call: F,
        convert: fn(F::Output) -> ToolResult,
        spec: &'static ToolSpec,
    }
}

impl<F: Future> Future for Finish<F> {
    type Output = ToolResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolResult> {
        let this = self.project();
        match this.call.poll(cx) {
            Poll::Ready(value) => Poll::Ready(this.spec.fit((this.convert)(value))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl ToolSpec {
    /// A result fitted to the output shape of a `Json<T>` return; any other as it is.
    fn fit(&self, result: ToolResult) -> ToolResult {
        crate::json::fit_output(result, self.output_shape())
    }

    /// The call's future, boxed: the fn's future, then the conversion of its value, then the
    /// output shape.
    pub fn finish<'a, F>(
        &'static self,
        call: F,
        convert: fn(F::Output) -> ToolResult,
    ) -> BoxFuture<'a, ToolResult>
    where
        F: Future + Send + 'a,
    {
        Box::pin(Finish {
            call,
            convert,
            spec: self,
        })
    }
}
