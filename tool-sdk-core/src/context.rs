//! What a call gets besides its input: [`ToolContext`] (working directory, sandbox,
//! cancellation, progress, app state, session values, sub-agents).

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::elicit::{Elicitor, UserWait};
use crate::{BoxFuture, ToolError};

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

    /// The requirement to list in [`Tool::required_state`](crate::Tool::required_state).
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
    tool_call_id: Arc<str>,
    cancellation: CancellationToken,
    updates: Option<UpdateSink>,
    /// Who asks the user when the call elicits, set per call by the runtime, and how long
    /// the call waited for the answers.
    pub(crate) elicitor: Option<(Arc<dyn Elicitor>, Arc<UserWait>)>,
    /// What the calls of an agent share: one handle to copy per call, not one per field.
    shared: Arc<Shared>,
}

/// The part of a [`ToolContext`] that is the same for every call of a turn.
#[derive(Clone)]
struct Shared {
    session_id: Arc<str>,
    agent_id: AgentId,
    working_dir: Arc<Path>,
    state: Arc<StateMap>,
    files: Arc<FileStateTracker>,
    subagents: Option<Arc<dyn SubagentRunner>>,
    session: Arc<SessionValues>,
    #[cfg(feature = "sandbox")]
    sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    checkpointer: Option<Arc<dyn FileCheckpointer>>,
}

/// Per-session values tools keep between calls (the Bash tool's working directory, the todo
/// list), one of each type, created on first use. Each agent has its own set. They live in
/// memory only; the durable record of a conversation is tool-sdk's `session::SessionStore`.
#[derive(Default)]
pub struct SessionValues {
    values: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl fmt::Debug for SessionValues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionValues").finish_non_exhaustive()
    }
}

impl SessionValues {
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
            .field("session_id", &self.shared.session_id)
            .field("agent_id", &self.shared.agent_id)
            .field("tool_call_id", &self.tool_call_id)
            .field("working_dir", &self.shared.working_dir)
            .field("cancelled", &self.cancellation.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// A context rooted at `working_dir`, with a fresh session.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        ToolContext {
            tool_call_id: Arc::from(""),
            cancellation: CancellationToken::new(),
            updates: None,
            elicitor: None,
            shared: Arc::new(Shared {
                session_id: Arc::from("session"),
                agent_id: AgentId::Main,
                working_dir: Arc::from(working_dir.into()),
                state: Arc::new(StateMap::new()),
                files: Arc::new(FileStateTracker::default()),
                subagents: None,
                session: Arc::new(SessionValues::default()),
                #[cfg(feature = "sandbox")]
                sandbox: None,
                checkpointer: None,
            }),
        }
    }

    /// The shared part, to change: copied first if other contexts hold it too.
    fn shared_mut(&mut self) -> &mut Shared {
        Arc::make_mut(&mut self.shared)
    }

    /// Lets the file tools (Write, Edit, NotebookEdit) note each file's content before they
    /// change it, so the change can be undone (agents set one; see
    /// tool-sdk's `session::FileCheckpoints`).
    pub fn with_file_checkpointer(mut self, checkpointer: Arc<dyn FileCheckpointer>) -> Self {
        self.shared_mut().checkpointer = Some(checkpointer);
        self
    }

    /// Where file tools note a file's content before changing it, if anywhere.
    pub fn file_checkpointer(&self) -> Option<&dyn FileCheckpointer> {
        self.shared.checkpointer.as_deref()
    }

    /// Confines file tools to these directories (agents always set one).
    #[cfg(feature = "sandbox")]
    pub fn with_sandbox(mut self, sandbox: Arc<crate::sandbox::Sandbox>) -> Self {
        self.shared_mut().sandbox = Some(sandbox);
        self
    }

    /// The directories file tools may use, inside an agent.
    #[cfg(feature = "sandbox")]
    pub fn sandbox(&self) -> Option<&crate::sandbox::Sandbox> {
        self.shared.sandbox.as_deref()
    }

    /// Sets the per-session values (shared by all calls of one agent).
    pub fn with_session_values(mut self, store: Arc<SessionValues>) -> Self {
        self.shared_mut().session = store;
        self
    }

    /// The session's value of type `T`, kept between calls: see [`SessionValues`].
    pub fn session<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        self.shared.session.get::<T>()
    }

    /// Sets who runs sub-agents for tools such as Task.
    pub fn with_subagents(mut self, runner: Arc<dyn SubagentRunner>) -> Self {
        self.shared_mut().subagents = Some(runner);
        self
    }

    /// Who runs sub-agents, inside an agent.
    pub fn subagents(&self) -> Option<&dyn SubagentRunner> {
        self.shared.subagents.as_deref()
    }

    /// A command that runs in the working directory, in its own process group, which is
    /// killed whole when the [`ToolChild`](crate::ToolChild) is dropped before the command was
    /// waited for: a tool that is timed out or cancelled leaves no process behind, neither the
    /// command nor what it started. See [`ToolCommand`](crate::ToolCommand).
    #[cfg(feature = "process")]
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> crate::process::ToolCommand {
        crate::process::ToolCommand::new(program, &self.shared.working_dir)
    }

    /// Sets the session id.
    pub fn with_session_id(mut self, id: impl Into<Arc<str>>) -> Self {
        self.shared_mut().session_id = id.into();
        self
    }

    /// Sets the agent the calls come from.
    pub fn with_agent_id(mut self, id: AgentId) -> Self {
        self.shared_mut().agent_id = id;
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
        self.shared_mut().state = state.into();
        self
    }

    /// Sets the file-state tracker (shared across a session).
    pub fn with_file_tracker(mut self, files: Arc<FileStateTracker>) -> Self {
        self.shared_mut().files = files;
        self
    }

    /// Sets where [`progress`](Self::progress) and [`metadata`](Self::metadata) updates go.
    pub fn with_updates(mut self, sink: impl Fn(ToolUpdate) + Send + Sync + 'static) -> Self {
        self.updates = Some(Arc::new(sink));
        self
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.shared.session_id
    }

    /// The agent the call comes from.
    pub fn agent_id(&self) -> &AgentId {
        &self.shared.agent_id
    }

    /// The tool_use id of this call (empty outside an agent).
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// The directory relative paths are resolved against.
    pub fn working_dir(&self) -> &Path {
        &self.shared.working_dir
    }

    /// Resolves `path` against the working directory.
    pub fn resolve(&self, path: impl AsRef<Path>) -> PathBuf {
        self.shared.working_dir.join(path)
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

    /// Sets who asks the user when this call elicits (runtimes do, per call).
    pub fn with_elicitor(mut self, elicitor: Arc<dyn Elicitor>) -> Self {
        self.elicitor = Some((elicitor, Arc::default()));
        self
    }

    /// Who asks the user when this call elicits, if anyone can.
    pub fn elicitor(&self) -> Option<&Arc<dyn Elicitor>> {
        self.elicitor.as_ref().map(|(elicitor, _)| elicitor)
    }

    /// The app state of type `T`, if the app provided one.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.shared.state.get::<T>()
    }

    /// All app state.
    pub fn state_map(&self) -> &StateMap {
        &self.shared.state
    }

    /// What was read in this session, and when.
    pub fn files(&self) -> &FileStateTracker {
        &self.shared.files
    }
}

/// Told by a tool before it changes a file, so the change can be undone. Put in a
/// [`ToolContext`] with [`with_file_checkpointer`](ToolContext::with_file_checkpointer);
/// agents do, with tool-sdk's `session::FileCheckpoints`.
pub trait FileCheckpointer: Send + Sync {
    /// `path` is about to hold `new` instead of `previous` (`None`: it does not exist yet).
    /// Called on a blocking thread (the file tools run there), inside a Tokio runtime. An
    /// error stops the change: a change that could not be undone is not made.
    fn before_change(&self, path: &Path, previous: Option<&[u8]>, new: &[u8])
    -> Result<(), String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_changed_leaves_the_original_as_it_was() {
        let base = ToolContext::new("/work")
            .with_session_id("one")
            .with_tool_call_id("call_1");
        let copy = base
            .clone()
            .with_session_id("two")
            .with_agent_id(AgentId::Sub("helper".into()))
            .with_tool_call_id("call_2");
        assert_eq!(base.session_id(), "one");
        assert_eq!(base.agent_id(), &AgentId::Main);
        assert_eq!(base.tool_call_id(), "call_1");
        assert_eq!(copy.session_id(), "two");
        assert_eq!(copy.tool_call_id(), "call_2");
        assert_eq!(copy.working_dir(), Path::new("/work"));
    }

    #[test]
    fn copies_share_the_session_values() {
        let base = ToolContext::new("/work");
        let copy = base.clone().with_tool_call_id("call_1");
        *base.session::<Mutex<u32>>().lock().unwrap() = 7;
        assert_eq!(*copy.session::<Mutex<u32>>().lock().unwrap(), 7);
    }
}
