//! Where tools are found: the global registry every `#[tool]` joins, and instance registries
//! an app fills at run time (MCP servers, skills, tools built from config).
//!
//! A registry checks each tool once, when it is added: a valid name, an object input schema
//! that compiles, no other tool of the same name. It keeps one compiled validator and call
//! statistics per tool, and runs the checked call pipeline ([`ToolRegistry::execute`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::schema::{self, Provider};
use crate::tool::{Tool, ToolError, ToolOutput};
use crate::validate::{InputValidator, ValidationOptions};
pub use tool_sdk_core::ToolRegistration;

mod error;

pub use error::RegistryError;
use error::did_you_mean;

/// Registered names that look like `name`, closest first.
pub(crate) fn near_matches<'a>(
    name: &str,
    names: impl IntoIterator<Item = &'a str>,
) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut scored: Vec<(f64, &str)> = names
        .into_iter()
        .map(|candidate| {
            let score = strsim::jaro_winkler(&lower, &candidate.to_lowercase());
            (score, candidate)
        })
        .filter(|(score, _)| *score >= 0.8)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(3)
        .map(|(_, n)| n.to_owned())
        .collect()
}

/// A tool's name, description and whether it is offered to the model.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Whether it is offered to the model.
    pub enabled: bool,
    /// Whether it only reads.
    pub read_only: bool,
    /// Its category, if any.
    pub category: Option<String>,
}

/// How a tool has been doing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ToolStats {
    /// Calls made.
    pub calls: u64,
    /// Calls that ended in an error (including invalid input).
    pub failures: u64,
    /// Time spent in all calls.
    pub total_duration: Duration,
}

impl ToolStats {
    /// The mean duration of a call, if there was one.
    pub fn mean_duration(&self) -> Option<Duration> {
        u32::try_from(self.calls)
            .ok()
            .filter(|calls| *calls > 0)
            .map(|calls| self.total_duration / calls)
    }
}

#[derive(Default)]
struct StatCounters {
    calls: AtomicU64,
    failures: AtomicU64,
    nanos: AtomicU64,
}

impl StatCounters {
    fn record(&self, duration: Duration, failed: bool) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.failures
            .fetch_add(u64::from(failed), Ordering::Relaxed);
        let nanos = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_add(nanos, Ordering::Relaxed);
    }
}

pub(crate) struct Entry {
    pub(crate) tool: Arc<dyn Tool>,
    defined_at: String,
    enabled: AtomicBool,
    validator: InputValidator,
    /// The output schema compiled on the first output checked (or why it does not compile).
    output_validator: OnceLock<Result<InputValidator, String>>,
    stats: StatCounters,
}

/// A set of tools by name.
///
/// ```
/// use std::sync::Arc;
/// use tool_sdk::{tool, ToolRegistry, ToolContext};
///
/// /// Says hello.
/// #[tool(register = false)]
/// async fn hello(name: String) -> String {
///     format!("Hello, {name}!")
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// registry.register(Arc::new(HelloTool)).unwrap();
/// let ctx = ToolContext::default();
///
/// let ok = registry.call("hello", serde_json::json!({"name": "Ada"}), &ctx).await;
/// assert_eq!(ok.to_text(), "Hello, Ada!");
///
/// let bad = registry.call("hello", serde_json::json!({"name": 7}), &ctx).await;
/// assert!(bad.is_error);
/// assert!(bad.to_text().contains("/name: must be string, got 7"));
/// # });
/// ```
pub struct ToolRegistry {
    entries: RwLock<BTreeMap<String, Arc<Entry>>>,
    options: ValidationOptions,
}

impl Default for ToolRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names())
            .field("options", &self.options)
            .finish()
    }
}

impl ToolRegistry {
    /// An empty registry with default validation (coercion on).
    pub fn new() -> Self {
        Self::with_options(ValidationOptions::default())
    }

    /// An empty registry that validates inputs with these options.
    pub fn with_options(options: ValidationOptions) -> Self {
        ToolRegistry {
            entries: RwLock::new(BTreeMap::new()),
            options,
        }
    }

    /// A new registry holding every `#[tool]` linked into the program (except those with
    /// `register = false`). Fails if two share a name, naming both definitions.
    pub fn from_inventory() -> Result<Self, RegistryError> {
        Self::from_inventory_with(ValidationOptions::default())
    }

    /// [`from_inventory`](Self::from_inventory) with validation options.
    pub fn from_inventory_with(options: ValidationOptions) -> Result<Self, RegistryError> {
        let registry = Self::with_options(options);
        let mut registrations: Vec<&ToolRegistration> = ToolRegistration::all().collect();
        // Link order is arbitrary; sorting makes "first" and "second" in errors stable.
        registrations.sort_by_cached_key(|r| (r.name(), r.defined_at()));
        let mut errors = Vec::new();
        for registration in registrations {
            let tool = registration.make();
            debug_assert_eq!(tool.name(), registration.name());
            if let Err(error) = registry.insert(tool, registration.defined_at(), false) {
                errors.push(error);
            }
        }
        match errors.len() {
            0 => Ok(registry),
            1 => Err(errors.remove(0)),
            _ => Err(RegistryError::Multiple(errors)),
        }
    }

    /// The registry of every `#[tool]` in the program, built on first use.
    ///
    /// Tools registered here at run time are seen by every user of the global registry;
    /// prefer an instance registry for tools that belong to one agent.
    pub fn global() -> Result<&'static ToolRegistry, RegistryError> {
        static GLOBAL: OnceLock<Result<ToolRegistry, RegistryError>> = OnceLock::new();
        GLOBAL
            .get_or_init(ToolRegistry::from_inventory)
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Adds a tool. The error names both definitions when the name is taken.
    ///
    /// The caller's source location is recorded as where the tool was defined.
    #[track_caller]
    pub fn register(&self, tool: Arc<dyn Tool>) -> Result<(), RegistryError> {
        let caller = std::panic::Location::caller();
        let defined_at = format!("{}:{}", caller.file(), caller.line());
        self.insert(tool, defined_at, false)
    }

    /// Adds a tool, saying where it comes from (e.g. `MCP server "github"`).
    pub fn register_from(
        &self,
        tool: Arc<dyn Tool>,
        defined_at: impl Into<String>,
    ) -> Result<(), RegistryError> {
        self.insert(tool, defined_at.into(), false)
    }

    /// [`register_from`](Self::register_from), replacing a tool of the same name in one step:
    /// a call looking it up meanwhile finds the old tool or the new, never none.
    #[cfg(feature = "mcp-client")]
    pub(crate) fn replace_from(
        &self,
        tool: Arc<dyn Tool>,
        defined_at: impl Into<String>,
    ) -> Result<(), RegistryError> {
        self.insert(tool, defined_at.into(), true)
    }

    fn insert(
        &self,
        tool: Arc<dyn Tool>,
        defined_at: String,
        replace: bool,
    ) -> Result<(), RegistryError> {
        let name = tool.name().to_owned();
        if !is_valid_name(&name) {
            return Err(RegistryError::InvalidName { name, defined_at });
        }
        let schema_error = |message: String| RegistryError::InvalidSchema {
            name: name.clone(),
            defined_at: defined_at.clone(),
            message,
        };
        if let Some(message) = schema::root_object_error(tool.input_schema()) {
            return Err(schema_error(message));
        }
        let validator = InputValidator::new(tool.input_schema(), self.options)
            .map_err(|error| schema_error(error.to_string()))?;
        let mut entries = self.write();
        if let Some(existing) = entries.get(&name).filter(|_| !replace) {
            return Err(RegistryError::DuplicateName {
                name,
                first: existing.defined_at.clone(),
                second: defined_at,
            });
        }
        let entry = Entry {
            tool,
            defined_at,
            enabled: AtomicBool::new(true),
            validator,
            output_validator: OnceLock::new(),
            stats: StatCounters::default(),
        };
        entries.insert(name, Arc::new(entry));
        Ok(())
    }

    /// Removes a tool; returns it if it was there.
    pub fn unregister(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.write().remove(name).map(|entry| entry.tool.clone())
    }

    /// The tool of this name.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.read().get(name).map(|entry| entry.tool.clone())
    }

    /// Whether a tool of this name is registered.
    pub fn contains(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// Where the tool of this name was defined.
    pub fn defined_at(&self, name: &str) -> Option<String> {
        self.read().get(name).map(|entry| entry.defined_at.clone())
    }

    /// All names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The enabled tools with these names, in the order given, or all enabled tools (sorted by
    /// name) for `None`. An unknown name is an error listing the near matches.
    pub fn get_tools(&self, names: Option<&[&str]>) -> Result<Vec<Arc<dyn Tool>>, RegistryError> {
        let entries = self.read();
        match names {
            None => Ok(entries
                .values()
                .filter(|entry| entry.enabled.load(Ordering::Relaxed))
                .map(|entry| entry.tool.clone())
                .collect()),
            Some(names) => {
                let mut tools = Vec::with_capacity(names.len());
                let mut errors = Vec::new();
                for name in names {
                    match entries.get(*name) {
                        Some(entry) => tools.push(entry.tool.clone()),
                        None => errors.push(RegistryError::UnknownTool {
                            name: (*name).to_owned(),
                            suggestions: near_matches(name, entries.keys().map(String::as_str)),
                            available: entries.keys().cloned().collect(),
                        }),
                    }
                }
                match errors.len() {
                    0 => Ok(tools),
                    1 => Err(errors.remove(0)),
                    _ => Err(RegistryError::Multiple(errors)),
                }
            }
        }
    }

    /// The tools whose category is `"builtin"`.
    pub fn builtin_tools(&self) -> Vec<Arc<dyn Tool>> {
        self.read()
            .values()
            .filter(|entry| entry.tool.category() == Some("builtin"))
            .map(|entry| entry.tool.clone())
            .collect()
    }

    /// Offers the tool to the model, or stops offering it. Returns whether it exists.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> bool {
        self.read()
            .get(name)
            .map(|entry| entry.enabled.store(enabled, Ordering::Relaxed))
            .is_some()
    }

    /// Name, description and status of every tool, sorted by name.
    pub fn tool_infos(&self) -> Vec<ToolInfo> {
        self.read()
            .values()
            .map(|entry| ToolInfo {
                name: entry.tool.name().to_owned(),
                description: entry.tool.description().to_owned(),
                enabled: entry.enabled.load(Ordering::Relaxed),
                read_only: entry.tool.is_read_only(),
                category: entry.tool.category().map(str::to_owned),
            })
            .collect()
    }

    /// The tool list of every enabled tool, in the provider's format.
    pub fn build_tools(&self, provider: Provider) -> Vec<Value> {
        build_tools(&self.get_tools(None).unwrap_or_default(), provider)
    }

    /// Checks an input against the tool's schema, coercing where allowed. Returns the input
    /// to call the tool with, or an [`InvalidInput`](ToolError::InvalidInput) error listing
    /// every problem.
    pub fn validate(&self, name: &str, input: Value) -> Result<Value, ToolError> {
        let entry = self.entry(name)?;
        check_input(&entry, input)
    }

    /// Adds one call to a tool's statistics (the call pipeline records every call it runs).
    pub fn record_call(&self, name: &str, duration: Duration, failed: bool) {
        if let Some(entry) = self.read().get(name) {
            entry.stats.record(duration, failed);
        }
    }

    /// The call statistics of a tool.
    pub fn stats(&self, name: &str) -> Option<ToolStats> {
        self.read().get(name).map(|entry| ToolStats {
            calls: entry.stats.calls.load(Ordering::Relaxed),
            failures: entry.stats.failures.load(Ordering::Relaxed),
            total_duration: Duration::from_nanos(entry.stats.nanos.load(Ordering::Relaxed)),
        })
    }

    /// The tool of this name, or a [`NotFound`](ToolError::NotFound) error the model can act
    /// on: the closest names first, then the others (a long list is cut).
    pub fn resolve(&self, name: &str) -> Result<Arc<dyn Tool>, ToolError> {
        self.entry(name).map(|entry| entry.tool.clone())
    }

    pub(crate) fn entry(&self, name: &str) -> Result<Arc<Entry>, ToolError> {
        let entries = self.read();
        entries
            .get(name)
            .cloned()
            .ok_or_else(|| ToolError::not_found(unknown_tool_message(name, entries.keys())))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<Entry>>> {
        // The map is replaced atomically under the lock, so a poisoned lock is still whole.
        self.entries.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Arc<Entry>>> {
        self.entries.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// How many other names an unknown-tool error lists after the closest ones.
const LISTED_NAMES: usize = 20;

fn unknown_tool_message<'a>(name: &str, names: impl Iterator<Item = &'a String> + Clone) -> String {
    let suggestions = near_matches(name, names.clone().map(String::as_str));
    // The closest names first: with many MCP tools, the useful ones would be lost otherwise.
    let ordered: Vec<&str> = suggestions
        .iter()
        .map(|s| s.as_str())
        .chain(
            names
                .map(|n| n.as_str())
                .filter(|other| !suggestions.iter().any(|s| s == other)),
        )
        .collect();
    let mut listed = ordered
        .iter()
        .take(LISTED_NAMES)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if ordered.len() > LISTED_NAMES {
        listed.push_str(&format!(" and {} more", ordered.len() - LISTED_NAMES));
    }
    if listed.is_empty() {
        listed.push_str("none");
    }
    format!(
        "no tool is named `{name}`{}; available tools: {listed}",
        did_you_mean(&suggestions)
    )
}

impl Entry {
    /// [`ToolRegistry::validate`] for a tool already looked up.
    pub(crate) fn validate(&self, input: Value) -> Result<Value, ToolError> {
        check_input(self, input)
    }

    /// Whether `input` passes the schema as it is (no coercion, no copy).
    pub(crate) fn is_valid(&self, input: &Value) -> bool {
        self.validator.is_valid(input)
    }

    /// Checks a successful output against the tool's output schema, if it declares one: the
    /// structured value must be there and match (no coercion).
    pub(crate) fn check_output(&self, output: &ToolOutput) -> Result<(), ToolError> {
        let Some(schema) = self.tool.output_schema() else {
            return Ok(());
        };
        let name = self.tool.name();
        let compiled = self.output_validator.get_or_init(|| {
            InputValidator::new(schema, ValidationOptions { coerce: false })
                .map_err(|error| error.to_string())
        });
        let validator = compiled.as_ref().map_err(|error| {
            ToolError::failed(format!(
                "the output schema of `{name}` is not a valid JSON Schema: {error}"
            ))
        })?;
        let Some(value) = &output.structured else {
            return Err(ToolError::failed(format!(
                "`{name}` declares an output schema but returned no structured output (return \
                 `Json(..)`, or set `ToolOutput::structured`)"
            )));
        };
        if validator.is_valid(value) {
            return Ok(());
        }
        let errors = match validator.check(value.clone()) {
            Ok(_) => return Ok(()),
            Err(errors) => errors,
        };
        Err(ToolError::failed(format!(
            "the output of `{name}` does not match its output schema:\n{errors}"
        )))
    }

    /// [`ToolRegistry::record_call`] for a tool already looked up.
    pub(crate) fn record(&self, duration: Duration, failed: bool) {
        self.stats.record(duration, failed);
    }
}

fn check_input(entry: &Entry, input: Value) -> Result<Value, ToolError> {
    entry.validator.check(input).map_err(|errors| {
        ToolError::invalid_input(format!(
            "the input does not match the schema of `{}`:\n{errors}",
            entry.tool.name()
        ))
    })
}

/// Whether `name` matches `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// These tools' definitions in the provider's tool-list format.
pub fn build_tools(tools: &[Arc<dyn Tool>], provider: Provider) -> Vec<Value> {
    tools
        .iter()
        .map(|tool| {
            let annotations = serde_json::to_value(tool.annotations()).ok();
            schema::tool_definition(
                tool.name(),
                tool.description(),
                tool.input_schema(),
                provider,
                annotations.as_ref(),
                tool.output_schema(),
            )
        })
        .collect()
}

/// Tools from the global registry: the named ones in order, or all for `None`.
pub fn get_tools(names: Option<&[&str]>) -> Result<Vec<Arc<dyn Tool>>, RegistryError> {
    ToolRegistry::global()?.get_tools(names)
}

/// The built-in tools (category `"builtin"`) of the global registry.
pub fn builtin_tools() -> Result<Vec<Arc<dyn Tool>>, RegistryError> {
    Ok(ToolRegistry::global()?.builtin_tools())
}

/// Name, description and status of every tool in the global registry.
pub fn tool_infos() -> Result<Vec<ToolInfo>, RegistryError> {
    Ok(ToolRegistry::global()?.tool_infos())
}
