//! The [`Tool`] trait and what flows through it: [`ToolContext`] in, [`ToolOutput`] or
//! [`ToolError`] out.
//!
//! Most tools are written with [`#[tool]`](crate::tool), which implements [`Tool`] for a
//! generated unit struct. Implement it by hand for tools whose name, description or schema are
//! only known at run time (skills loaded from disk, tools of an MCP server).

use std::any::{Any, TypeId};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

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
/// use tool_sdk::{BoxFuture, Tool, ToolContext, ToolOutput, ToolResult};
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
    /// Lowered per provider by [`crate::schema::lower`].
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

    /// How long one call may run before it is stopped; `None` leaves it to the agent's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// A free-form group such as `"builtin"`, `"filesystem"` or `"mcp"`.
    fn category(&self) -> Option<&str> {
        None
    }

    /// App state the tool extracts with [`State<T>`]; an agent checks it is all there before it
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
        Box::pin(std::future::ready(Ok(())))
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
        PermissionPrompt {
            title: self.display_title(input),
            summary: None,
            content: input.clone(),
        }
    }

    /// How a finished call is shown to the user (never sent to the model).
    fn result_display(&self, input: &Value, output: &ToolOutput) -> ResultDisplay {
        let text = output.to_text();
        let lines = text.lines().count();
        ResultDisplay {
            title: self.display_title(input),
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

/// One block of a tool result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// Its MIME type, such as `image/png`.
        media_type: String,
        /// The base64 of its bytes.
        data: String,
    },
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text { text: text.into() }
    }

    /// An image block from raw bytes.
    pub fn image(media_type: impl Into<String>, bytes: &[u8]) -> Self {
        use base64::Engine as _;
        ContentBlock::Image {
            media_type: media_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }
}

/// The result of a call as the model will see it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    /// The blocks sent back in the tool_result.
    pub content: Vec<ContentBlock>,
    /// The same result as JSON, when the tool returned a `Serialize` value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether this reports a failure the model should act on.
    #[serde(default)]
    pub is_error: bool,
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            ..Default::default()
        }
    }

    /// A JSON result: the model gets it as compact JSON text, the app as a value.
    pub fn json(value: Value) -> Self {
        let text = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        ToolOutput {
            content: vec![ContentBlock::text(text)],
            structured: Some(value),
            is_error: false,
        }
    }

    /// A result made of the given blocks.
    pub fn blocks(content: Vec<ContentBlock>) -> Self {
        ToolOutput {
            content,
            ..Default::default()
        }
    }

    /// An error result with this message.
    pub fn error(message: impl Into<String>) -> Self {
        ToolOutput {
            content: vec![ContentBlock::text(message)],
            structured: None,
            is_error: true,
        }
    }

    /// The text blocks joined by newlines (images are left out).
    pub fn to_text(&self) -> Cow<'_, str> {
        let mut texts = self.content.iter().filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            ContentBlock::Image { .. } => None,
        });
        match (texts.next(), texts.next()) {
            (None, _) => Cow::Borrowed(""),
            (Some(only), None) => Cow::Borrowed(only),
            (Some(first), Some(second)) => {
                let mut joined = format!("{first}\n{second}");
                for text in texts {
                    joined.push('\n');
                    joined.push_str(text);
                }
                Cow::Owned(joined)
            }
        }
    }
}

impl From<ToolError> for ToolOutput {
    fn from(error: ToolError) -> Self {
        ToolOutput::error(error.message_for_model())
    }
}

/// Why a call failed. Every kind becomes an `is_error` tool_result the model can act on.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The input is not what the tool accepts; the message says what to change.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// Something the input names does not exist (a file, a tool, a record).
    #[error("not found: {0}")]
    NotFound(String),
    /// The user, a rule or a hook refused the call.
    #[error("permission denied: {0}")]
    PermissionDenied(String),
    /// The call ran out of time and was stopped.
    #[error("timed out after {}", humanize(*.0))]
    Timeout(Duration),
    /// The call was cancelled before it finished.
    #[error("cancelled")]
    Cancelled,
    /// The tool ran and failed.
    #[error("{0}")]
    ExecutionFailed(String),
    /// A transient failure: the model should call the tool again, maybe with another input.
    #[error("{0}")]
    Retry(String),
}

impl ToolError {
    /// An [`InvalidInput`](ToolError::InvalidInput) error.
    pub fn invalid_input(message: impl Into<String>) -> Self {
        ToolError::InvalidInput(message.into())
    }

    /// A [`NotFound`](ToolError::NotFound) error.
    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError::NotFound(message.into())
    }

    /// A [`PermissionDenied`](ToolError::PermissionDenied) error.
    pub fn permission_denied(message: impl Into<String>) -> Self {
        ToolError::PermissionDenied(message.into())
    }

    /// An [`ExecutionFailed`](ToolError::ExecutionFailed) error.
    pub fn failed(message: impl Into<String>) -> Self {
        ToolError::ExecutionFailed(message.into())
    }

    /// A [`Retry`](ToolError::Retry) error.
    pub fn retry(message: impl Into<String>) -> Self {
        ToolError::Retry(message.into())
    }

    /// The kind, without the message.
    pub fn kind(&self) -> ToolErrorKind {
        match self {
            ToolError::InvalidInput(_) => ToolErrorKind::InvalidInput,
            ToolError::NotFound(_) => ToolErrorKind::NotFound,
            ToolError::PermissionDenied(_) => ToolErrorKind::PermissionDenied,
            ToolError::Timeout(_) => ToolErrorKind::Timeout,
            ToolError::Cancelled => ToolErrorKind::Cancelled,
            ToolError::ExecutionFailed(_) => ToolErrorKind::ExecutionFailed,
            ToolError::Retry(_) => ToolErrorKind::Retry,
        }
    }

    /// The text of the error tool_result: the message plus what the model can do about it.
    pub fn message_for_model(&self) -> String {
        match self {
            ToolError::InvalidInput(message) => {
                format!("Invalid input: {message}\nFix the input and call the tool again.")
            }
            ToolError::Timeout(after) => format!(
                "The tool timed out after {} and was stopped. Try a smaller task or a longer \
                 timeout.",
                humanize(*after)
            ),
            ToolError::Cancelled => "The tool call was cancelled before it finished.".to_owned(),
            ToolError::Retry(message) => format!("{message}\nPlease try again."),
            ToolError::ExecutionFailed(message) => format!("Error: {message}"),
            other => {
                let mut text = other.to_string();
                if let Some(first) = text.get_mut(..1) {
                    first.make_ascii_uppercase();
                }
                text
            }
        }
    }
}

/// The kinds of [`ToolError`], for matching and statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolErrorKind {
    /// See [`ToolError::InvalidInput`].
    InvalidInput,
    /// See [`ToolError::NotFound`].
    NotFound,
    /// See [`ToolError::PermissionDenied`].
    PermissionDenied,
    /// See [`ToolError::Timeout`].
    Timeout,
    /// See [`ToolError::Cancelled`].
    Cancelled,
    /// See [`ToolError::ExecutionFailed`].
    ExecutionFailed,
    /// See [`ToolError::Retry`].
    Retry,
}

fn humanize(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis}ms")
    } else if millis.is_multiple_of(1000) {
        format!("{}s", millis / 1000)
    } else {
        format!("{:.1}s", duration.as_secs_f64())
    }
}

/// Which agent a call comes from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum AgentId {
    /// The agent the app talks to.
    #[default]
    Main,
    /// A sub-agent started by the Task tool, with its id.
    Sub(Arc<str>),
}

/// A live update from a running tool, for the UI; never sent to the model.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolUpdate {
    /// The call it belongs to.
    pub tool_call_id: Arc<str>,
    /// What changed.
    pub kind: ToolUpdateKind,
}

/// What a [`ToolUpdate`] carries.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolUpdateKind {
    /// A progress line, such as `scanned 1200 files`.
    Progress(String),
    /// Structured details, merged by the UI.
    Metadata(Value),
}

type UpdateSink = Arc<dyn Fn(ToolUpdate) + Send + Sync>;

/// Values an app hands to its tools, keyed by type. Read them with [`State<T>`].
#[derive(Clone, Default)]
pub struct StateMap {
    values: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl StateMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a value, replacing any earlier value of the same type.
    pub fn insert<T: Clone + Send + Sync + 'static>(&mut self, value: T) {
        self.values.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if one was added.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// Whether a value of this type was added.
    pub fn contains(&self, type_id: TypeId) -> bool {
        self.values.contains_key(&type_id)
    }
}

impl fmt::Debug for StateMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateMap")
            .field("len", &self.values.len())
            .finish()
    }
}

/// App state injected into a tool, axum style: `state: State<Arc<Db>>` as a parameter.
///
/// The value is cloned out of the context, so hold cheap-to-clone handles (`Arc`, pools).
#[derive(Clone, Copy, Debug, Default)]
pub struct State<T>(pub T);

impl<T> std::ops::Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: Clone + Send + Sync + 'static> State<T> {
    /// Takes the `T` out of the context, or says which state is missing.
    pub fn from_context(ctx: &ToolContext) -> Result<Self, ToolError> {
        ctx.state::<T>().cloned().map(State).ok_or_else(|| {
            ToolError::failed(format!(
                "this tool needs app state of type `{}`, which the app did not provide \
                 (add it to the agent's state)",
                std::any::type_name::<T>()
            ))
        })
    }

    /// The requirement to list in [`Tool::required_state`].
    pub fn requirement() -> StateRequirement {
        StateRequirement {
            type_id: TypeId::of::<T>(),
            type_name: std::any::type_name::<T>(),
        }
    }
}

/// One piece of app state a tool needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateRequirement {
    /// Its type's id.
    pub type_id: TypeId,
    /// Its type's name, for error messages.
    pub type_name: &'static str,
}

/// What a tool read, and when: the basis of read-before-write checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRead {
    /// When the tool read it.
    pub at: SystemTime,
    /// The file's modification time as it was read.
    pub modified: Option<SystemTime>,
}

/// Remembers which files were read and which were written, shared by all calls of a session.
#[derive(Debug, Default)]
pub struct FileStateTracker {
    reads: Mutex<HashMap<PathBuf, FileRead>>,
    writes: Mutex<Vec<PathBuf>>,
}

impl FileStateTracker {
    /// Records that `path`, last modified at `modified`, was read now.
    pub fn record_read(&self, path: impl Into<PathBuf>, modified: Option<SystemTime>) {
        let read = FileRead {
            at: SystemTime::now(),
            modified,
        };
        self.lock().insert(path.into(), read);
    }

    /// The last read of `path`, if any.
    pub fn last_read(&self, path: &Path) -> Option<FileRead> {
        self.lock().get(path).copied()
    }

    /// Forgets `path`, e.g. after it was deleted.
    pub fn forget(&self, path: &Path) {
        self.lock().remove(path);
    }

    /// Records that a tool created, changed or deleted `path`.
    pub fn record_write(&self, path: impl Into<PathBuf>) {
        let path = path.into();
        let mut writes = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        if !writes.contains(&path) {
            writes.push(path);
        }
    }

    /// Every path recorded by [`record_write`](Self::record_write), in first-write order.
    pub fn written(&self) -> Vec<PathBuf> {
        self.writes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, FileRead>> {
        // A panic elsewhere while holding the lock leaves a map that is still consistent.
        self.reads
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Everything a call gets besides its input.
///
/// Cheap to clone: each call gets its own copy with its own tool call id.
#[derive(Clone)]
pub struct ToolContext {
    session_id: Arc<str>,
    agent_id: AgentId,
    tool_call_id: Arc<str>,
    working_dir: Arc<Path>,
    cancellation: CancellationToken,
    updates: Option<UpdateSink>,
    state: Arc<StateMap>,
    files: Arc<FileStateTracker>,
    subagents: Option<Arc<dyn SubagentRunner>>,
    session: Arc<SessionStore>,
    sandbox: Option<Arc<crate::permission::Sandbox>>,
}

/// Per-session values tools keep between calls (the Bash tool's working directory, the todo
/// list), one of each type, created on first use. Each agent has its own store.
#[derive(Default)]
pub struct SessionStore {
    values: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionStore").finish_non_exhaustive()
    }
}

impl SessionStore {
    /// The session's `T`, created with `T::default()` on first use.
    pub fn get<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut values = self.values.lock().unwrap_or_else(|p| p.into_inner());
        let value = values
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()))
            .clone();
        // The entry was created for `T::type_id`, so the downcast cannot fail; fall back to a
        // fresh value rather than panic all the same.
        value.downcast::<T>().unwrap_or_default()
    }
}

/// Runs a sub-agent on behalf of a tool (the Task tool). Agents put one in every call's
/// context; outside an agent there is none.
pub trait SubagentRunner: Send + Sync {
    /// Runs `request` to the end and reports back.
    fn run<'a>(
        &'a self,
        request: SubagentRequest,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<SubagentReport, ToolError>>;
}

/// What a sub-agent is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubagentRequest {
    /// A few words for the UI.
    pub description: String,
    /// The task, in full: the sub-agent sees nothing else of the conversation.
    pub prompt: String,
    /// Which configured kind of sub-agent to use; `None` for the general-purpose one.
    pub subagent_type: Option<String>,
}

/// What a sub-agent reports back.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SubagentReport {
    /// Its final answer.
    pub summary: String,
    /// How many tools it called.
    pub tool_calls: usize,
    /// Files it changed.
    pub files_modified: Vec<PathBuf>,
    /// Errors it ran into.
    pub errors: Vec<String>,
}

impl Default for ToolContext {
    /// A context for the current directory with no state: handy in tests.
    fn default() -> Self {
        let working_dir = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        ToolContext::new(working_dir)
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("agent_id", &self.agent_id)
            .field("tool_call_id", &self.tool_call_id)
            .field("working_dir", &self.working_dir)
            .field("cancelled", &self.cancellation.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context rooted at `working_dir`, with a fresh session.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        ToolContext {
            session_id: Arc::from("session"),
            agent_id: AgentId::Main,
            tool_call_id: Arc::from(""),
            working_dir: Arc::from(working_dir.into()),
            cancellation: CancellationToken::new(),
            updates: None,
            state: Arc::new(StateMap::new()),
            files: Arc::new(FileStateTracker::default()),
            subagents: None,
            session: Arc::new(SessionStore::default()),
            sandbox: None,
        }
    }

    /// Confines file tools to these directories (agents always set one).
    pub fn with_sandbox(mut self, sandbox: Arc<crate::permission::Sandbox>) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The directories file tools may use, inside an agent.
    pub fn sandbox(&self) -> Option<&crate::permission::Sandbox> {
        self.sandbox.as_deref()
    }

    /// Sets the per-session store (shared by all calls of one agent).
    pub fn with_session_store(mut self, store: Arc<SessionStore>) -> Self {
        self.session = store;
        self
    }

    /// The session's value of type `T`, kept between calls: see [`SessionStore`].
    pub fn session<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.session.get::<T>()
    }

    /// Sets who runs sub-agents for tools such as Task.
    pub fn with_subagents(mut self, runner: Arc<dyn SubagentRunner>) -> Self {
        self.subagents = Some(runner);
        self
    }

    /// Who runs sub-agents, inside an agent.
    pub fn subagents(&self) -> Option<&dyn SubagentRunner> {
        self.subagents.as_deref()
    }

    /// A command that runs in the working directory, in its own process group, which is
    /// killed whole when the [`ToolChild`](crate::ToolChild) is dropped before the command was
    /// waited for: a tool that is timed out or cancelled leaves no process behind, neither the
    /// command nor what it started. See [`ToolCommand`](crate::ToolCommand).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> crate::ToolCommand {
        crate::ToolCommand::new(program, &self.working_dir)
    }

    /// Sets the session id.
    pub fn with_session_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.session_id = id.into();
        self
    }

    /// Sets the agent the calls come from.
    pub fn with_agent_id(mut self, id: AgentId) -> Self {
        self.agent_id = id;
        self
    }

    /// Sets the id of the call this context is for.
    pub fn with_tool_call_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.tool_call_id = id.into();
        self
    }

    /// Sets the token that cancels calls made with this context.
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = token;
        self
    }

    /// Sets the app state tools read with [`State<T>`].
    pub fn with_state(mut self, state: impl Into<Arc<StateMap>>) -> Self {
        self.state = state.into();
        self
    }

    /// Sets the file-state tracker (shared across a session).
    pub fn with_file_tracker(mut self, files: Arc<FileStateTracker>) -> Self {
        self.files = files;
        self
    }

    /// Sets where [`progress`](Self::progress) and [`metadata`](Self::metadata) updates go.
    pub fn with_updates(mut self, sink: impl Fn(ToolUpdate) + Send + Sync + 'static) -> Self {
        self.updates = Some(Arc::new(sink));
        self
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The agent the call comes from.
    pub fn agent_id(&self) -> &AgentId {
        &self.agent_id
    }

    /// The tool_use id of this call (empty outside an agent).
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The directory relative paths are resolved against.
    pub fn working_dir(&self) -> &Path {
        &self.working_dir
    }

    /// Resolves `path` against the working directory.
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        self.working_dir.join(path)
    }

    /// The token that fires when the call should stop.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.cancellation
    }

    /// Whether the call should stop.
    pub fn is_cancelled(&self) -> bool {
        self.cancellation.is_cancelled()
    }

    /// Reports progress to the UI; the model never sees it.
    pub fn progress(&self, message: impl Into<String>) {
        self.send(ToolUpdateKind::Progress(message.into()));
    }

    /// Reports structured details to the UI; the model never sees them.
    pub fn metadata(&self, metadata: Value) {
        self.send(ToolUpdateKind::Metadata(metadata));
    }

    fn send(&self, kind: ToolUpdateKind) {
        if let Some(sink) = &self.updates {
            sink(ToolUpdate {
                tool_call_id: self.tool_call_id.clone(),
                kind,
            });
        }
    }

    /// The app state of type `T`, if the app provided one.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.get::<T>()
    }

    /// All app state.
    pub fn state_map(&self) -> &StateMap {
        &self.state
    }

    /// What was read in this session, and when.
    pub fn files(&self) -> &FileStateTracker {
        &self.files
    }
}
