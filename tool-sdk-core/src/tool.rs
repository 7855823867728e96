//! The [`Tool`] trait and what flows through it: [`ToolContext`] in, [`ToolOutput`] or
//! [`ToolError`] out.
//!
//! Most tools are written with [`#[tool]`](macro@crate::tool), which implements [`Tool`] for a
//! generated unit struct. Implement it by hand for tools whose name, description or schema are
//! only known at run time (skills loaded from disk, tools of an MCP server).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{StateRequirement, ToolContext, ToolError, ToolOutput};

/// A boxed, sendable future: what the object-safe methods of [`Tool`] return.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a tool call ends with.
pub type ToolResult = Result<ToolOutput, ToolError>;

/// A tool an LLM can call.
///
/// Object safe: agents hold tools as `Arc<dyn Tool>`. Only [`name`](Tool::name),
/// [`description`](Tool::description), [`input_schema`](Tool::input_schema) and
/// [`call`](Tool::call) are required; everything else has a sensible default.
///
/// # A hand-written tool
///
/// ```
/// use serde_json::{json, Value};
/// use tool_sdk_core::{BoxFuture, Tool, ToolContext, ToolOutput, ToolResult};
///
/// /// Greets whoever the model names. Its schema is built at start-up.
/// struct Greeter { schema: Value }
///
/// impl Tool for Greeter {
///     fn name(&self) -> &str { "greet" }
///     fn description(&self) -> &str { "Greets a person by name." }
///     fn input_schema(&self) -> &Value { &self.schema }
///     fn call<'a>(&'a self, input: Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
///         Box::pin(async move {
///             let name = input["name"].as_str().unwrap_or("stranger");
///             Ok(ToolOutput::text(format!("Hello, {name}!")))
///         })
///     }
/// }
///
/// let greeter = Greeter {
///     schema: json!({"type": "object", "properties": {"name": {"type": "string"}}}),
/// };
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let out = greeter.call(json!({"name": "Ada"}), &ToolContext::default()).await.unwrap();
/// assert_eq!(out.to_text(), "Hello, Ada!");
/// # });
/// ```
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by; matches `^[a-zA-Z0-9_-]{1,64}$`.
    fn name(&self) -> &str;

    /// Tells the model what the tool does and when to use it.
    fn description(&self) -> &str;

    /// The canonical JSON Schema of the input: an object schema, draft 2020-12.
    ///
    /// Lowered per provider by `tool_sdk_core::schema::lower`.
    fn input_schema(&self) -> &Value;

    /// The JSON Schema of structured output, when the tool has one.
    fn output_schema(&self) -> Option<&Value> {
        None
    }

    /// Behaviour hints: read-only, destructive, idempotent, open world.
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::default()
    }

    /// Whether the tool leaves the world as it found it. Read-only calls may run concurrently;
    /// anything else runs alone, in order. Unknown counts as not read-only.
    fn is_read_only(&self) -> bool {
        self.annotations().read_only == Some(true)
    }

    /// What a call acts on: files it reads or writes, a shell command, a URL, or only the
    /// agent's own state. The permission gate decides from this declaration (never from the
    /// tool's name): rules like `Edit(src/**)` match the path a writing tool names, the Bash
    /// classifier judges the command a shell tool runs, and tools that only touch the agent's
    /// own state (a todo list) run without asking.
    fn acts_on(&self) -> ActsOn {
        ActsOn::Unspecified
    }

    /// How long one call may run before it is stopped; `None` leaves it to the agent's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// A free-form group such as `"builtin"`, `"filesystem"` or `"mcp"`.
    fn category(&self) -> Option<&str> {
        None
    }

    /// App state the tool extracts with [`State<T>`](crate::State) (or another extractor,
    /// [`FromToolContext`](crate::FromToolContext)); an agent checks it is all there before it
    /// starts, so a missing value is a start-up error rather than a failed call.
    fn required_state(&self) -> Vec<StateRequirement> {
        Vec::new()
    }

    /// The tool's own check of a schema-valid input, run before permission is asked.
    ///
    /// An `Err` goes back to the model as an error result; the tool is not called.
    fn validate_input<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        let _ = (input, ctx);
        no_check()
    }

    /// Runs the tool on a schema-valid input.
    ///
    /// Must stop promptly when the future is dropped or [`ToolContext::cancellation`] fires.
    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult>;

    /// A short title for a pending or running call, such as `Read src/main.rs`.
    fn display_title(&self, input: &Value) -> String {
        let _ = input;
        self.name().to_owned()
    }

    /// What the user is shown when asked to allow this call.
    fn permission_prompt(&self, input: &Value) -> PermissionPrompt {
        PermissionPrompt::for_input(self.display_title(input), input)
    }

    /// How a finished call is shown to the user (never sent to the model).
    fn result_display(&self, input: &Value, output: &ToolOutput) -> ResultDisplay {
        ResultDisplay::of_output(self.display_title(input), output)
    }
}

// The defaults above are compiled once for every type that implements `Tool` (a crate of 100
// `#[tool]`s has 100 copies of each), so their bodies only call out to these, compiled once.

/// The default [`Tool::validate_input`]: every schema-valid input passes.
pub(crate) fn no_check<'a>() -> BoxFuture<'a, Result<(), ToolError>> {
    // A unit struct: boxing it allocates nothing.
    Box::pin(Passed)
}

/// The check that every input passes.
struct Passed;

impl std::future::Future for Passed {
    type Output = Result<(), ToolError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::task::Poll::Ready(Ok(()))
    }
}

impl PermissionPrompt {
    /// The default [`Tool::permission_prompt`]: the title and the input as it is.
    fn for_input(title: String, input: &Value) -> Self {
        PermissionPrompt {
            title,
            summary: None,
            content: input.clone(),
        }
    }
}

impl ResultDisplay {
    /// The default [`Tool::result_display`]: the output's text and its line count.
    pub(crate) fn of_output(title: String, output: &ToolOutput) -> Self {
        let text = output.to_text();
        let lines = text.lines().count();
        ResultDisplay {
            title,
            summary: match (output.is_error, lines) {
                (true, _) => "failed".to_owned(),
                (false, 1) => "1 line".to_owned(),
                (false, n) => format!("{n} lines"),
            },
            content: Value::String(text.into_owned()),
        }
    }
}

impl fmt::Debug for dyn Tool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tool")
            .field("name", &self.name())
            .field("read_only", &self.is_read_only())
            .finish_non_exhaustive()
    }
}

/// Behaviour hints, as MCP's tool annotations. Each is tri-state: `None` means unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A human-readable title for the tool itself (not for one call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment.
    #[serde(rename = "readOnlyHint", skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data (meaningful when not read-only).
    #[serde(rename = "destructiveHint", skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling the tool twice with the same input has no further effect.
    #[serde(rename = "idempotentHint", skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside systems (the web, other services).
    #[serde(rename = "openWorldHint", skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
}

/// What a tool's calls act on, declared by the tool ([`Tool::acts_on`]; `#[tool(acts_on(...))]`).
///
/// Each variant that names a field says which input property holds the path, command or URL.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ActsOn {
    /// Nothing declared: read-only tools run, others ask; rules match the tool by name.
    #[default]
    Unspecified,
    /// Only the agent's own state (a todo list, the permission mode, a question to the user):
    /// runs without asking, also in plan mode.
    AgentState,
    /// Reads the file or directory named by this property (absent: the working directory).
    ReadsPath(&'static str),
    /// Writes the file named by this property; `Edit(...)` rules and `acceptEdits` apply.
    WritesPath(&'static str),
    /// Runs the shell command in this property; the Bash classifier and `Bash(...)` rules
    /// judge it.
    ShellCommand(&'static str),
    /// Fetches the URL in this property; `WebFetch(domain:...)` rules match its host.
    FetchesUrl(&'static str),
}

/// What the user is asked before a call runs.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PermissionPrompt {
    /// One line, such as `Write src/lib.rs`.
    pub title: String,
    /// An optional second line.
    pub summary: Option<String>,
    /// The details: a string or any JSON (by default the input).
    pub content: Value,
}

/// How a finished call is shown to the user.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResultDisplay {
    /// One line, such as `Read src/lib.rs`.
    pub title: String,
    /// A short summary, such as `120 lines`.
    pub summary: String,
    /// The details: a string or any JSON.
    pub content: Value,
}
