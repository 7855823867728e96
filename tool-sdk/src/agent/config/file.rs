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

use crate::model::{Effort, ModelInfo, Thinking};
use crate::permission::{PermissionMode, PermissionRules};

#[derive(Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(super) struct ConfigFile {
    name: Option<String>,
    #[serde(deserialize_with = "model_table")]
    model: Option<ModelTable>,
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
    #[cfg(feature = "mcp-client")]
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

/// The `[model]` table: the model (a [`ModelSpec`](super::ModelSpec)'s keys, when it names
/// one) and what requests ask of its thinking.
#[derive(Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct ModelTable {
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<super::ProviderKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    base_url: Option<String>,
    api_key_env: Option<String>,
    #[serde(skip_serializing)]
    api_key: Option<String>,
    #[serde(skip_serializing_if = "Thinking::is_off")]
    thinking: Thinking,
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<Effort>,
}

impl ModelTable {
    /// The table of these settings; `None` when it would be empty.
    fn of(
        spec: Option<super::ModelSpec>,
        thinking: Thinking,
        effort: Option<Effort>,
    ) -> Option<Self> {
        if spec.is_none() && thinking.is_off() && effort.is_none() {
            return None;
        }
        let mut table = ModelTable {
            thinking,
            effort,
            ..ModelTable::default()
        };
        if let Some(spec) = spec {
            table.provider = Some(spec.provider);
            table.id = Some(spec.id);
            table.base_url = spec.base_url;
            table.api_key_env = spec.api_key_env;
            table.api_key = spec.api_key;
        }
        Some(table)
    }

    /// The model it names, if it names one ([`model_table`] checked that it names it whole).
    fn spec(&mut self) -> Option<super::ModelSpec> {
        Some(super::ModelSpec {
            provider: self.provider?,
            id: self.id.take()?,
            base_url: self.base_url.take(),
            api_key_env: self.api_key_env.take(),
            api_key: self.api_key.take(),
        })
    }
}

/// Reads the `[model]` table: a model is named with both `provider` and `id`, or not at all
/// (the table may then hold only `thinking` and `effort`, for a model given in code).
fn model_table<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<ModelTable>, D::Error> {
    let table = Option::<ModelTable>::deserialize(deserializer)?;
    if let Some(table) = &table {
        let named =
            table.base_url.is_some() || table.api_key_env.is_some() || table.api_key.is_some();
        let missing = match (&table.provider, &table.id) {
            (Some(_), None) => Some("`id` (the model id, such as \"claude-sonnet-4-5\")"),
            (None, Some(_)) => Some("`provider` (\"anthropic\" or \"openai\")"),
            (None, None) if named => Some("`provider` and `id`"),
            _ => None,
        };
        if let Some(missing) = missing {
            return Err(serde::de::Error::custom(format!(
                "the [model] table names a model without its {missing}"
            )));
        }
    }
    Ok(table)
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
        let mut table = file.model.unwrap_or_default();
        AgentConfig {
            name: file.name,
            model: ModelSettings {
                source: table.spec().map(ModelSource::Spec),
                thinking: table.thinking,
                effort: table.effort,
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
            #[cfg(feature = "mcp-client")]
            mcp: super::McpSettings {
                servers: file.mcp_servers,
                oauth: Default::default(),
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
            #[cfg(feature = "mcp-client")]
            mcp,
            subagents,
            project_memory,
            claude_settings,
            ..
        } = config;
        ConfigFile {
            name,
            model: ModelTable::of(
                match model.source {
                    Some(ModelSource::Spec(spec)) => Some(spec),
                    _ => None,
                },
                model.thinking,
                model.effort,
            ),
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
            #[cfg(feature = "mcp-client")]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_table_may_hold_only_thinking_but_names_a_model_whole() {
        let config: AgentConfig = toml::from_str("[model]\nthinking = \"adaptive\"\n").unwrap();
        assert!(config.model.source.is_none());
        assert_eq!(config.model.thinking, Thinking::Adaptive);
        let written = toml::to_string(&config).unwrap();
        assert!(
            written.contains("[model]\nthinking = \"adaptive\""),
            "{written}"
        );
        assert!(!written.contains("provider"), "{written}");

        let config: AgentConfig = toml::from_str(
            "[model]\nprovider = \"anthropic\"\nid = \"claude-sonnet-4-5\"\neffort = \"low\"\n",
        )
        .unwrap();
        assert_eq!(config.model.effort, Some(Effort::Low));
        assert!(matches!(
            &config.model.source,
            Some(ModelSource::Spec(spec)) if spec.id == "claude-sonnet-4-5"
        ));
        // Nothing asked: no table.
        let written = toml::to_string(&AgentConfig::default()).unwrap();
        assert!(!written.contains("[model]"), "{written}");

        for (table, missing) in [
            ("provider = \"anthropic\"", "without its `id`"),
            ("id = \"gpt-4.1\"", "without its `provider`"),
            ("base_url = \"http://localhost:1\"", "`provider` and `id`"),
        ] {
            let error = toml::from_str::<AgentConfig>(&format!("[model]\n{table}\n"))
                .unwrap_err()
                .to_string();
            assert!(error.contains(missing), "{table}: {error}");
        }
        let error = toml::from_str::<AgentConfig>("[model]\nthinking = \"lots\"\n")
            .unwrap_err()
            .to_string();
        assert!(error.contains("`lots`"), "{error}");
    }
}
