//! An agent's MCP servers: their tools join the agent's tool set at `create`, and change with
//! `list_changed`, reconnections, [`Agent::add_or_update_mcp_server`](super::Agent::add_or_update_mcp_server) and
//! [`Agent::remove_mcp_server`](super::Agent::remove_mcp_server).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use super::config::AgentConfig;
use super::error::{AgentError, ConfigError};
use crate::error::{ErrorSource, source};
use crate::mcp::{McpClient, McpError, McpOAuth, McpScope, McpServerConfig};
use crate::model::ToolSpec;
use crate::registry::near_matches;
use crate::{RegistryError, Tool, ToolRegistry};

pub(crate) struct AgentMcp {
    tools: Arc<ToolSet>,
    working_dir: PathBuf,
    /// The app's token store and authorizer for OAuth servers.
    oauth: McpOAuth,
    clients: tokio::sync::Mutex<BTreeMap<String, McpClient>>,
}

/// The agent's registry and offered specs, as the MCP side changes them.
struct ToolSet {
    registry: Arc<ToolRegistry>,
    specs: Arc<RwLock<Arc<[ToolSpec]>>>,
    /// The config's `tools` list, compiled once; `None` lets every tool through.
    patterns: Option<globset::GlobSet>,
    /// Each connected server's tools in the registry; a server not in here is ignored.
    names: Mutex<BTreeMap<String, Vec<String>>>,
}

impl ToolSet {
    fn allowed(&self, name: &str) -> bool {
        self.patterns
            .as_ref()
            .is_none_or(|patterns| patterns.is_match(name))
    }

    /// Replaces `server`'s tools with `tools` (those the config's `tools` let through). A tool
    /// in both lists is swapped in one step, and those gone are removed after: a call made
    /// meanwhile (the server's list changed during a turn) still finds its tool.
    fn apply(&self, server: &str, tools: Vec<Arc<dyn Tool>>) -> Vec<String> {
        let mut names = self.names.lock().unwrap_or_else(|p| p.into_inner());
        let Some(current) = names.get_mut(server) else {
            return Vec::new();
        };
        let old = std::mem::take(current);
        let mut added = Vec::new();
        let mut specs = Vec::new();
        for tool in tools {
            let name = tool.name().to_owned();
            if !self.allowed(&name) {
                continue;
            }
            let spec = ToolSpec {
                name: name.clone(),
                description: tool.description().to_owned(),
                input_schema: tool.input_schema().clone(),
            };
            let from = format!("MCP server `{server}`");
            let registered = match old.contains(&name) {
                true => self.registry.replace_from(tool, from),
                false => self.registry.register_from(tool, from),
            };
            match registered {
                Ok(()) => {
                    added.push(name);
                    specs.push(spec);
                }
                Err(error) => tracing::warn!(%error, server, "MCP tool left out"),
            }
        }
        for name in old.iter().filter(|name| !added.contains(name)) {
            self.registry.unregister(name);
        }
        *current = added.clone();
        let mut offered = self.specs.write().unwrap_or_else(|p| p.into_inner());
        *offered = offered
            .iter()
            .filter(|spec| !old.contains(&spec.name))
            .cloned()
            .chain(specs)
            .collect();
        added
    }

    fn forget(&self, server: &str) {
        let old = self
            .names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(server)
            .unwrap_or_default();
        for name in &old {
            self.registry.unregister(name);
        }
        let mut offered = self.specs.write().unwrap_or_else(|p| p.into_inner());
        *offered = offered
            .iter()
            .filter(|spec| !old.contains(&spec.name))
            .cloned()
            .collect();
    }
}

impl AgentMcp {
    /// The MCP servers of an agent whose tools are `registry`, offered as `specs`, those
    /// matching `patterns` (all, when `None`); `.mcp.json` is in `working_dir`.
    pub(crate) fn new(
        registry: Arc<ToolRegistry>,
        specs: Arc<RwLock<Arc<[ToolSpec]>>>,
        patterns: Option<&[String]>,
        working_dir: PathBuf,
        oauth: McpOAuth,
    ) -> Self {
        AgentMcp {
            tools: Arc::new(ToolSet {
                registry,
                specs,
                patterns: patterns.map(tool_patterns),
                names: Mutex::new(BTreeMap::new()),
            }),
            working_dir,
            oauth,
            clients: tokio::sync::Mutex::new(BTreeMap::new()),
        }
    }

    /// Connects every configured server at once; any failure fails the agent, naming each
    /// server that failed. Then checks the exact `mcp__...` names of the config's `tools`.
    pub(crate) async fn connect_configured(&self, config: &AgentConfig) -> Result<(), AgentError> {
        let connecting = config.mcp.servers.iter().map(|(name, server)| {
            McpClient::connect_with(name.clone(), server.clone(), self.oauth.clone())
        });
        let results = futures::future::join_all(connecting).await;
        let mut failures = Vec::new();
        for result in results {
            match result {
                Ok(client) => {
                    self.install(client).await;
                }
                Err(error) => failures.push(error),
            }
        }
        if !failures.is_empty() {
            for client in std::mem::take(&mut *self.clients.lock().await).into_values() {
                client.close().await;
            }
            if failures.len() == 1 {
                return Err(failures.remove(0).into());
            }
            return Err(McpError {
                server: failures
                    .iter()
                    .map(|f| f.server.clone())
                    .collect::<Vec<_>>()
                    .join("`, `"),
                message: failures
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("\n"),
                // One chain to walk: the first server's.
                source: failures[0].source.clone(),
            }
            .into());
        }
        let mut names = self.tools.registry.names();
        // Suggest from everything the servers offer, not only what `tools` let through.
        for client in self.clients.lock().await.values() {
            names.extend(client.tools().iter().map(|t| t.name().to_owned()));
        }
        names.sort();
        names.dedup();
        let mut unknown = Vec::new();
        for pattern in config.tools.iter().flatten() {
            if pattern.starts_with("mcp__")
                && !pattern.contains(['*', '?'])
                && !self.tools.registry.contains(pattern)
            {
                unknown.push(RegistryError::UnknownTool {
                    name: pattern.clone(),
                    suggestions: near_matches(pattern, names.iter().map(String::as_str)),
                    available: names.clone(),
                });
            }
        }
        match unknown.len() {
            0 => Ok(()),
            1 => Err(unknown.remove(0).into()),
            _ => Err(RegistryError::Multiple(unknown).into()),
        }
    }

    /// Adds a connected client's tools and follows its changes; replaces a client of the same
    /// name.
    async fn install(&self, client: McpClient) -> Vec<String> {
        let name = client.name().to_owned();
        let mut clients = self.clients.lock().await;
        if let Some(old) = clients.remove(&name) {
            self.tools.forget(&name);
            old.close().await;
        }
        self.tools
            .names
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.clone(), Vec::new());
        let added = self.tools.apply(&name, client.tools());
        let tools = Arc::downgrade(&self.tools);
        client.on_tools_changed(Arc::new(move |server, listed| {
            if let Some(tools) = tools.upgrade() {
                tools.apply(server, listed);
            }
        }));
        clients.insert(name, client);
        added
    }

    fn project_file(&self) -> PathBuf {
        self.working_dir.join(".mcp.json")
    }
}

/// Reads `.mcp.json`, lets `change` edit its `mcpServers`, writes it back.
fn edit_project_file(
    path: &Path,
    change: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>),
) -> Result<(), AgentError> {
    let failed = |message: &str| ConfigError::json_file(path, message, None);
    let broken = |error: ErrorSource| ConfigError::json_file(path, error.to_string(), Some(error));
    let mut document = match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text).map_err(|e| broken(source(e)))?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => serde_json::json!({}),
        Err(error) => return Err(broken(source(error)).into()),
    };
    let Some(root) = document.as_object_mut() else {
        return Err(failed("not a JSON object").into());
    };
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| serde_json::json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Err(failed("`mcpServers` is not an object").into());
    };
    change(servers);
    let text = serde_json::to_string_pretty(&document).map_err(|e| broken(source(e)))?;
    Ok(std::fs::write(path, text + "\n").map_err(|e| broken(source(e)))?)
}

impl AgentMcp {
    /// Connects (or reconnects, with a new config) the server `name` and offers its tools;
    /// returns their names. On failure the old server, if any, stays.
    pub(crate) async fn add(
        &self,
        name: &str,
        config: McpServerConfig,
        scope: McpScope,
    ) -> Result<Vec<String>, AgentError> {
        let client = McpClient::connect_with(name, config.clone(), self.oauth.clone()).await?;
        if scope == McpScope::Project {
            let value =
                serde_json::to_value(&config).map_err(|e| ConfigError::McpConfig(e.into()))?;
            edit_project_file(&self.project_file(), |servers| {
                servers.insert(name.to_owned(), value);
            })?;
        }
        Ok(self.install(client).await)
    }

    /// Disconnects the server `name` and withdraws its tools; returns whether it was
    /// connected.
    pub(crate) async fn remove(&self, name: &str, scope: McpScope) -> Result<bool, AgentError> {
        let client = self.clients.lock().await.remove(name);
        self.tools.forget(name);
        if let Some(client) = &client {
            client.close().await;
        }
        if scope == McpScope::Project {
            edit_project_file(&self.project_file(), |servers| {
                servers.remove(name);
            })?;
        }
        Ok(client.is_some())
    }

    /// The names of the connected servers.
    pub(crate) async fn servers(&self) -> Vec<String> {
        self.clients.lock().await.keys().cloned().collect()
    }
}

/// The `tools` list as one matcher: exact names match themselves, globs their names. A
/// pattern that is not a valid glob matches only itself.
fn tool_patterns(patterns: &[String]) -> globset::GlobSet {
    let mut set = globset::GlobSetBuilder::new();
    for pattern in patterns {
        let glob =
            globset::Glob::new(pattern).or_else(|_| globset::Glob::new(&globset::escape(pattern)));
        if let Ok(glob) = glob {
            set.add(glob);
        }
    }
    set.build().unwrap_or_else(|_| globset::GlobSet::empty())
}
