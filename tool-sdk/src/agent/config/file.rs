//! The shape of a config file: the keys and tables it has always had, read into
//! [`AgentConfig`]'s groups and written back from them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    AgentConfig, ContextSettings, Limits, ModelSettings, ModelSource, PermissionSettings,
    SessionLeasing, SessionSettings, StoreSource, SubagentConfig,
};

use crate::model::ModelInfo;
use crate::permission::{PermissionMode, PermissionRules};

#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct ConfigFile {
    name: Option<String>,
    model: Option<super::ModelSpec>,
    system_prompt: Option<String>,
    tools: Option<Vec<String>>,
    working_dir: Option<PathBuf>,
    additional_dirs: Vec<PathBuf>,
    max_turns: u32,
    max_tokens: u32,
    temperature: Option<f32>,
    #[serde(rename = "tool_timeout_secs", with = "seconds")]
    tool_timeout: Duration,
    #[serde(rename = "max_tool_timeout_secs", with = "seconds")]
    max_tool_timeout: Duration,
    max_concurrent_tools: usize,
    max_result_chars: usize,
    coerce_inputs: bool,
    max_output_retries: u32,
    permission_mode: PermissionMode,
    permissions: PermissionRules,
    project_memory: bool,
    claude_settings: bool,
    prompt_caching: bool,
    subagents: BTreeMap<String, SubagentConfig>,
    #[cfg(feature = "mcp")]
    #[serde(
        rename = "mcpServers",
        alias = "mcp_servers",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    mcp_servers: BTreeMap<String, crate::mcp::McpServerConfig>,
    #[serde(skip_serializing_if = "SessionTable::is_empty")]
    session: SessionTable,
    #[serde(skip_serializing_if = "ContextSettings::is_default")]
    context: ContextSettings,
    #[serde(
        with = "super::super::model_table",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    models: BTreeMap<String, ModelInfo>,
    max_budget_usd: Option<f64>,
    max_run_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    fallback_models: Vec<super::ModelSpec>,
}

/// The `[session]` table.
#[derive(Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct SessionTable {
    store: Option<String>,
    #[serde(
        rename = "lease_secs",
        with = "leasing_seconds",
        skip_serializing_if = "SessionLeasing::is_auto"
    )]
    lease: SessionLeasing,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    defer_approvals: bool,
}

impl SessionTable {
    fn is_empty(&self) -> bool {
        self.store.is_none() && self.lease.is_auto() && !self.defer_approvals
    }
}

impl Default for ConfigFile {
    fn default() -> Self {
        AgentConfig::default().into()
    }
}

impl From<ConfigFile> for AgentConfig {
    fn from(file: ConfigFile) -> Self {
        AgentConfig {
            name: file.name,
            model: ModelSettings {
                source: file.model.map(ModelSource::Spec),
                system_prompt: file.system_prompt,
                max_tokens: file.max_tokens,
                temperature: file.temperature,
                prompt_caching: file.prompt_caching,
                models: file.models,
                fallback_models: file
                    .fallback_models
                    .into_iter()
                    .map(ModelSource::Spec)
                    .collect(),
                ..ModelSettings::default()
            },
            tools: file.tools,
            working_dir: file.working_dir,
            coerce_inputs: file.coerce_inputs,
            limits: Limits {
                max_turns: file.max_turns,
                tool_timeout: file.tool_timeout,
                max_tool_timeout: file.max_tool_timeout,
                max_concurrent_tools: file.max_concurrent_tools,
                max_result_chars: file.max_result_chars,
                max_output_retries: file.max_output_retries,
                max_budget_usd: file.max_budget_usd,
                max_run_tokens: file.max_run_tokens,
            },
            permissions: PermissionSettings {
                mode: file.permission_mode,
                rules: file.permissions,
                additional_dirs: file.additional_dirs,
                ..PermissionSettings::default()
            },
            project_memory: file.project_memory,
            claude_settings: file.claude_settings,
            subagents: file.subagents,
            #[cfg(feature = "mcp")]
            mcp: super::McpSettings {
                servers: file.mcp_servers,
            },
            session: SessionSettings {
                store: file.session.store.map(StoreSource::Spec),
                lease: file.session.lease,
                defer_approvals: file.session.defer_approvals,
            },
            context: file.context,
            ..AgentConfig::default()
        }
    }
}

/// What a file can hold: a model instance, a store instance, hooks and handlers are left out.
impl From<AgentConfig> for ConfigFile {
    fn from(config: AgentConfig) -> Self {
        let AgentConfig {
            name,
            model,
            tools,
            working_dir,
            coerce_inputs,
            limits,
            permissions,
            session,
            context,
            #[cfg(feature = "mcp")]
            mcp,
            subagents,
            project_memory,
            claude_settings,
            ..
        } = config;
        ConfigFile {
            name,
            model: match model.source {
                Some(ModelSource::Spec(spec)) => Some(spec),
                _ => None,
            },
            system_prompt: model.system_prompt,
            tools,
            working_dir,
            additional_dirs: permissions.additional_dirs,
            max_turns: limits.max_turns,
            max_tokens: model.max_tokens,
            temperature: model.temperature,
            tool_timeout: limits.tool_timeout,
            max_tool_timeout: limits.max_tool_timeout,
            max_concurrent_tools: limits.max_concurrent_tools,
            max_result_chars: limits.max_result_chars,
            coerce_inputs,
            max_output_retries: limits.max_output_retries,
            permission_mode: permissions.mode,
            permissions: permissions.rules,
            project_memory,
            claude_settings,
            prompt_caching: model.prompt_caching,
            subagents,
            #[cfg(feature = "mcp")]
            mcp_servers: mcp.servers,
            session: SessionTable {
                store: match session.store {
                    Some(StoreSource::Spec(spec)) => Some(spec),
                    _ => None,
                },
                lease: session.lease,
                defer_approvals: session.defer_approvals,
            },
            context,
            models: model.models,
            max_budget_usd: limits.max_budget_usd,
            max_run_tokens: limits.max_run_tokens,
            // Instances cannot be written to a file; specs can.
            fallback_models: model
                .fallback_models
                .into_iter()
                .filter_map(|source| match source {
                    ModelSource::Spec(spec) => Some(spec),
                    ModelSource::Instance(_) => None,
                })
                .collect(),
        }
    }
}

/// [`SessionLeasing`] as `lease_secs`: absent for `Auto`, `0` for `Off`, else the ttl.
mod leasing_seconds {
    use serde::{Deserializer, Serializer};

    use super::SessionLeasing;

    pub(super) fn serialize<S: Serializer>(
        value: &SessionLeasing,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            SessionLeasing::Ttl(ttl) => super::seconds::serialize(ttl, serializer),
            SessionLeasing::Off => serializer.serialize_u64(0),
            SessionLeasing::Auto => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<SessionLeasing, D::Error> {
        let ttl = super::optional_seconds::deserialize(deserializer)?;
        Ok(match ttl {
            None => SessionLeasing::Auto,
            Some(ttl) if ttl.is_zero() => SessionLeasing::Off,
            Some(ttl) => SessionLeasing::Ttl(ttl),
        })
    }
}

/// [`seconds`], for a setting that may be absent.
mod optional_seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer};

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        #[derive(Deserialize)]
        struct Seconds(#[serde(with = "super::seconds")] Duration);
        Ok(Option::<Seconds>::deserialize(deserializer)?.map(|Seconds(value)| value))
    }
}

/// Durations as seconds in config files (`1.5` is 1.5 s), [`Duration`] in code.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub(super) fn serialize<S: Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match value.subsec_nanos() {
            0 => serializer.serialize_u64(value.as_secs()),
            _ => serializer.serialize_f64(value.as_secs_f64()),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        let secs = f64::deserialize(deserializer)?;
        Duration::try_from_secs_f64(secs)
            .map_err(|_| D::Error::custom(format!("{secs} is not a number of seconds (0 or more)")))
    }
}
