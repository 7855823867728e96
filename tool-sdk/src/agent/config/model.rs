//! `config.model`: which model, and what each request asks of it.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agent::{AgentError, ConfigError};
use crate::model::{
    Catalog, Effort, FallbackModel, Model, ModelError, ModelInfo, PromptCache, RetryPolicy,
    Thinking,
    anthropic::{AnthropicModel, interleaved_thinking},
    gemini::GeminiModel,
    openai::OpenAiModel,
    openai_responses::OpenAiResponsesModel,
};

/// The model an agent talks to, and what its requests ask: the `[model]` table of a config
/// file (with its `thinking` and `effort`) and the request settings beside it
/// (`system_prompt`, `max_tokens`, `temperature`, `prompt_caching`, `[models."<prefix>"]` at
/// the top of a file).
///
/// The model itself is set with [`AgentConfig::with_model`](super::AgentConfig::with_model);
/// the rest with the builder methods here, through
/// [`AgentConfig::model`](super::AgentConfig::model):
///
/// ```
/// use tool_sdk::agent::AgentConfig;
/// use tool_sdk::model::{ModelInfo, Price, TestModel};
///
/// let config = AgentConfig::new()
///     .with_model(TestModel::new())
///     .model(|model| {
///         model
///             .with_system_prompt("You are terse.")
///             .with_max_tokens(1024)
///             .with_temperature(0.2)
///             .with_model_info("my-finetune", ModelInfo::new(32_000, Price::per_million(1.0, 2.0)))
///     });
/// assert_eq!(config.model.max_tokens, 1024);
/// assert_eq!(config.model.models["my-finetune"].price.output, 2.0);
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ModelSettings {
    /// The model: an instance, or a [`ModelSpec`] built from the environment when the agent
    /// is created. `None` fails `Agent::create`.
    pub source: Option<ModelSource>,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The most tokens per model turn (default 8192).
    pub max_tokens: u32,
    /// Sampling temperature (default: the provider's).
    pub temperature: Option<f32>,
    /// Whether the model thinks before it answers (default: off): see
    /// [`with_thinking`](Self::with_thinking).
    pub thinking: Thinking,
    /// How eagerly the model spends tokens (default: the provider's): see
    /// [`with_effort`](Self::with_effort).
    pub effort: Option<Effort>,
    /// Retries of failed requests, for a model built from a [`ModelSpec`] (an instance has
    /// its own).
    pub retry: Option<RetryPolicy>,
    /// Whether the provider is asked to cache the prompt's prefix (on by default): see
    /// [`with_prompt_caching`](Self::with_prompt_caching).
    pub prompt_caching: bool,
    /// The catalog model ids are looked up in, for their window and prices (default: the
    /// built-in [`Catalog`]).
    pub catalog: Option<Catalog>,
    /// Catalog entries of the config's own, by id prefix, over [`catalog`](Self::catalog)'s
    /// (`[models."<prefix>"]` in a file).
    pub models: BTreeMap<String, ModelInfo>,
    /// The models a request goes to, in order, when the model fails: see
    /// [`with_fallback_models`](Self::with_fallback_models).
    pub fallback_models: Vec<ModelSource>,
}

impl Default for ModelSettings {
    fn default() -> Self {
        ModelSettings {
            source: None,
            system_prompt: None,
            max_tokens: 8192,
            temperature: None,
            thinking: Thinking::Off,
            effort: None,
            retry: None,
            prompt_caching: true,
            catalog: None,
            models: BTreeMap::new(),
            fallback_models: Vec::new(),
        }
    }
}

/// Where the agent's model comes from: what
/// [`AgentConfig::with_model`](super::AgentConfig::with_model) takes (a model, an
/// `Arc<dyn Model>`, or a [`ModelSpec`]).
#[derive(Clone)]
pub enum ModelSource {
    /// A model named as in a config file's `[model]` table, built when the agent is created.
    Spec(ModelSpec),
    /// A model instance.
    Instance(Arc<dyn Model>),
}

impl std::fmt::Debug for ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelSource::Spec(spec) => spec.fmt(f),
            ModelSource::Instance(model) => write!(f, "Instance({})", model.model_id()),
        }
    }
}

impl From<ModelSpec> for ModelSource {
    fn from(spec: ModelSpec) -> Self {
        ModelSource::Spec(spec)
    }
}

impl<M: Model + 'static> From<M> for ModelSource {
    fn from(model: M) -> Self {
        ModelSource::Instance(Arc::new(model))
    }
}

/// A model named in a config file.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// Which API.
    pub provider: ProviderKind,
    /// The model id, such as `claude-sonnet-4-5` or `gpt-4.1`.
    pub id: String,
    /// Another endpoint, e.g. `http://localhost:11434/v1` for Ollama.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default: the provider's usual one,
    /// `ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, or `GEMINI_API_KEY` then `GOOGLE_API_KEY`).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// The API key itself. Prefer `api_key_env`: config files get committed.
    #[serde(default, skip_serializing)]
    pub api_key: Option<String>,
}

impl std::fmt::Debug for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSpec")
            .field("provider", &self.provider)
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key_env", &self.api_key_env)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

/// `provider:id` (`anthropic:claude-sonnet-4-5`, `openai:gpt-4.1`, `gemini:gemini-2.5-pro`),
/// or a bare id whose provider is plain from its name (`claude-…` is Anthropic's; `gpt-…`,
/// `o1…`, `o3…`, `o4…` OpenAI's; `gemini-…` Gemini's). The key comes from the provider's usual
/// environment variable.
impl std::str::FromStr for ModelSpec {
    type Err = ConfigError;

    fn from_str(text: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| ConfigError::BadModelSpec {
            spec: text.to_owned(),
            why: why.to_owned(),
        };
        let (provider, id) = match text.split_once(':') {
            Some((provider, id)) => {
                let provider = match provider {
                    "anthropic" => ProviderKind::Anthropic,
                    "openai" => ProviderKind::OpenAi,
                    "gemini" => ProviderKind::Gemini,
                    "openai-responses" => ProviderKind::OpenAiResponses,
                    _ => {
                        return Err(bad(
                            "the provider must be `anthropic`, `openai`, `openai-responses` or \
                             `gemini`",
                        ));
                    }
                };
                (provider, id)
            }
            None if text.starts_with("claude") => (ProviderKind::Anthropic, text),
            None if text.starts_with("gemini") => (ProviderKind::Gemini, text),
            None if ["gpt", "o1", "o3", "o4"]
                .iter()
                .any(|p| text.starts_with(p)) =>
            {
                (ProviderKind::OpenAi, text)
            }
            None => {
                return Err(bad(
                    "say which provider serves it, as `anthropic:<id>`, `openai:<id>` or \
                     `gemini:<id>`",
                ));
            }
        };
        if id.is_empty() {
            return Err(bad("the model id is empty"));
        }
        Ok(ModelSpec {
            provider,
            id: id.to_owned(),
            base_url: None,
            api_key_env: None,
            api_key: None,
        })
    }
}

/// The APIs a [`ModelSpec`] can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Chat Completions, or any compatible server.
    OpenAi,
    /// The Gemini API (`provider = "gemini"`).
    Gemini,
    /// OpenAI's Responses API (`provider = "openai-responses"`), reasoning carried across
    /// turns; the key from `OPENAI_API_KEY`.
    #[serde(rename = "openai-responses")]
    OpenAiResponses,
}

impl ModelSettings {
    /// Sets the system prompt.
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the most tokens per model turn.
    pub fn with_max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = tokens;
        self
    }

    /// Sets the sampling temperature.
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Asks the model to think before it answers: [`Thinking::budget`] (Claude 4.5 and
    /// earlier), [`Thinking::Adaptive`] (Claude 4.6 and later), or [`Thinking::Off`]
    /// (`thinking = 4096`, `"adaptive"` or `"off"` in a file's `[model]` table). Sub-agents
    /// inherit it.
    ///
    /// `Agent::create` refuses what the API would: a budget under
    /// [`Thinking::MIN_BUDGET_TOKENS`] or not below `max_tokens` (unless the model thinks
    /// between tool calls, see
    /// [`interleaved_thinking`](crate::model::anthropic::interleaved_thinking)), and a
    /// `temperature` other than 1. While the model thinks, a typed answer's tool is offered,
    /// not forced. The thinking streams as
    /// [`AgentEvent::ThinkingDelta`](crate::agent::AgentEvent::ThinkingDelta) and is billed as
    /// output tokens.
    ///
    /// ```
    /// use tool_sdk::agent::AgentConfig;
    /// use tool_sdk::model::{Effort, Thinking};
    ///
    /// let config = AgentConfig::new().model(|m| {
    ///     m.with_max_tokens(16_000)
    ///         .with_thinking(Thinking::budget(8_000))
    ///         .with_effort(Effort::Medium)
    /// });
    /// assert_eq!(config.model.thinking, Thinking::budget(8_000));
    /// ```
    pub fn with_thinking(mut self, thinking: Thinking) -> Self {
        self.thinking = thinking;
        self
    }

    /// Sets how eagerly the model spends tokens, on thinking, text and tool calls alike
    /// (`effort = "medium"` in a file's `[model]` table): Anthropic's `output_config.effort`,
    /// OpenAI's `reasoning_effort` (see [`Effort`]).
    pub fn with_effort(mut self, effort: Effort) -> Self {
        self.effort = Some(effort);
        self
    }

    /// What the API would refuse in the thinking settings, for a model `model_id` offered
    /// tools (`has_tools`) or not.
    pub(crate) fn thinking_problem(&self, model_id: &str, has_tools: bool) -> Option<ConfigError> {
        if self.thinking.is_off() {
            return None;
        }
        if let Some(temperature) = self.temperature.filter(|t| *t != 1.0) {
            return Some(ConfigError::TemperatureWithThinking { temperature });
        }
        let Thinking::Budget { budget_tokens } = self.thinking else {
            return None;
        };
        if budget_tokens < Thinking::MIN_BUDGET_TOKENS {
            return Some(ConfigError::ThinkingBudgetTooSmall { budget_tokens });
        }
        // Interleaved thinking's budget spans the whole turn's thinking blocks: it may
        // exceed one request's max_tokens.
        let interleaved = has_tools && interleaved_thinking(model_id);
        if budget_tokens >= self.max_tokens && !interleaved {
            return Some(ConfigError::ThinkingBudgetNotBelowMaxTokens {
                budget_tokens,
                max_tokens: self.max_tokens,
            });
        }
        None
    }

    /// Sets how failed model requests are retried (for a model built from a [`ModelSpec`]).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Asks the provider to cache the prompt's prefix, or not (default: on;
    /// `prompt_caching = false` in a file). Sub-agents inherit it.
    ///
    /// On Anthropic each request then carries up to four `cache_control` breakpoints (the
    /// tools, the system prompt, the end of the conversation and the end the previous request
    /// had), placed only where the prefix reaches the model's minimum
    /// ([`ModelInfo::min_cacheable_tokens`], 1024 tokens for a model the [`Catalog`] does not
    /// know). Reads cost 0.1x the input price, writes 1.25x: turn it off for one-shot prompts
    /// that are never continued. OpenAI caches on its own whatever this says.
    pub fn with_prompt_caching(mut self, on: bool) -> Self {
        self.prompt_caching = on;
        self
    }

    /// Starts from `catalog` instead of [`Catalog::default`]; entries added with
    /// [`with_model_info`](Self::with_model_info) still take precedence.
    pub fn with_catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// Adds or replaces the catalog entry of model ids starting with `prefix`, so runs of a
    /// model the built-in [`Catalog`] does not know (a fine-tune, a local model) get a cost,
    /// or a negotiated price replaces the list price (`[models."<prefix>"]` in a file). The
    /// longest matching prefix wins.
    pub fn with_model_info(mut self, prefix: impl Into<String>, info: ModelInfo) -> Self {
        self.models.insert(prefix.into(), info);
        self
    }

    /// Sets the models a request moves on to, in order, when the model is overloaded, rate
    /// limited, failing with a 5xx or unreachable, once its retries are spent and before it
    /// streamed anything (Claude Code's `--fallback-model`; `[[fallback_models]]` tables in a
    /// file, each like `[model]`). Each takes what [`AgentConfig::with_model`] does. The switch
    /// is an [`AgentEvent::ModelFallback`](crate::agent::AgentEvent::ModelFallback) and a
    /// [`Record::ModelFallback`](crate::session::Record::ModelFallback), it lasts for that
    /// request only, and the request is priced at the model that answered it. When every
    /// model fails, the run fails with [`ModelError::AllModelsFailed`], naming each.
    ///
    /// [`AgentConfig::with_model`]: super::AgentConfig::with_model
    ///
    /// ```
    /// use tool_sdk::agent::{AgentConfig, ModelSpec};
    ///
    /// let spare: ModelSpec = "openai:gpt-4.1".parse().unwrap();
    /// let config = AgentConfig::new().model(|m| m.with_fallback_models([spare]));
    /// assert_eq!(config.model.fallback_models.len(), 1);
    /// ```
    pub fn with_fallback_models<S: Into<ModelSource>>(
        mut self,
        models: impl IntoIterator<Item = S>,
    ) -> Self {
        self.fallback_models = models.into_iter().map(Into::into).collect();
        self
    }

    /// The ids of the fallback models, in order.
    pub(crate) fn fallback_ids(&self) -> Vec<&str> {
        self.fallback_models.iter().map(ModelSource::id).collect()
    }

    /// The catalog (the built-in one or the one given) with the config's own entries.
    pub(crate) fn full_catalog(&self) -> Catalog {
        let mut catalog = self.catalog.clone().unwrap_or_default();
        for (prefix, info) in &self.models {
            catalog.insert(prefix.clone(), *info);
        }
        catalog
    }

    /// What a request to a model with catalog entry `info` asks of the cache: `None` when
    /// caching is off.
    pub(crate) fn prompt_cache(&self, info: Option<&ModelInfo>) -> Option<PromptCache> {
        self.prompt_caching.then(|| PromptCache::for_info(info))
    }

    /// The model instance, built from its spec if need be: a [`FallbackModel`] over it and
    /// the fallback models when there are any.
    pub(crate) fn resolve(&self) -> Result<Arc<dyn Model>, AgentError> {
        let retry = self.retry.unwrap_or_default();
        let main = match &self.source {
            Some(source) => source.build(retry)?,
            None => return Err(ConfigError::MissingModel.into()),
        };
        if self.fallback_models.is_empty() {
            return Ok(main);
        }
        let fallbacks = self
            .fallback_models
            .iter()
            .map(|source| source.build(retry));
        let fallbacks = fallbacks.collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(FallbackModel::new(main, fallbacks)))
    }
}

impl ModelSource {
    /// The model's id.
    fn id(&self) -> &str {
        match self {
            ModelSource::Spec(spec) => &spec.id,
            ModelSource::Instance(model) => model.model_id(),
        }
    }

    fn build(&self, retry: RetryPolicy) -> Result<Arc<dyn Model>, AgentError> {
        match self {
            ModelSource::Instance(model) => Ok(model.clone()),
            ModelSource::Spec(spec) => spec.build(retry),
        }
    }
}

impl ModelSpec {
    fn build(&self, retry: RetryPolicy) -> Result<Arc<dyn Model>, AgentError> {
        let key = |default_var: &str| -> Option<String> {
            if let Some(key) = &self.api_key {
                return Some(key.clone());
            }
            let var = self.api_key_env.as_deref().unwrap_or(default_var);
            std::env::var(var).ok().filter(|key| !key.is_empty())
        };
        let model: Arc<dyn Model> = match self.provider {
            ProviderKind::Anthropic => {
                let var = self.api_key_env.as_deref().unwrap_or("ANTHROPIC_API_KEY");
                let api_key = key("ANTHROPIC_API_KEY").ok_or_else(|| {
                    AgentError::Model(ModelError::MissingApiKey(format!(
                        "set {var} to use Anthropic's {}",
                        self.id
                    )))
                })?;
                let mut model = AnthropicModel::new(&self.id, api_key).with_retry(retry);
                if let Some(url) = &self.base_url {
                    model = model.with_base_url(url);
                }
                Arc::new(model)
            }
            ProviderKind::OpenAi => {
                let api_key = key("OPENAI_API_KEY");
                if api_key.is_none() && self.base_url.is_none() {
                    let var = self.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
                    return Err(AgentError::Model(ModelError::MissingApiKey(format!(
                        "set {var} to use OpenAI's {} (or a base_url for a local server)",
                        self.id
                    ))));
                }
                let mut model = OpenAiModel::new(&self.id, api_key).with_retry(retry);
                if let Some(url) = &self.base_url {
                    model = model.with_base_url(url);
                }
                Arc::new(model)
            }
            ProviderKind::Gemini => {
                let api_key = key("GEMINI_API_KEY")
                    .or_else(|| {
                        // Google's SDKs read either name; a named variable is the only one.
                        self.api_key_env
                            .is_none()
                            .then(|| key("GOOGLE_API_KEY"))
                            .flatten()
                    })
                    .ok_or_else(|| {
                        let var = self.api_key_env.as_deref().unwrap_or("GEMINI_API_KEY");
                        AgentError::Model(ModelError::MissingApiKey(format!(
                            "set {var} to use Gemini's {}",
                            self.id
                        )))
                    })?;
                let mut model = GeminiModel::new(&self.id, api_key).with_retry(retry);
                if let Some(url) = &self.base_url {
                    model = model.with_base_url(url);
                }
                Arc::new(model)
            }
            ProviderKind::OpenAiResponses => {
                let var = self.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
                let api_key = key("OPENAI_API_KEY").ok_or_else(|| {
                    AgentError::Model(ModelError::MissingApiKey(format!(
                        "set {var} to use OpenAI's {} through the Responses API",
                        self.id
                    )))
                })?;
                let mut model = OpenAiResponsesModel::new(&self.id, api_key).with_retry(retry);
                if let Some(url) = &self.base_url {
                    model = model.with_base_url(url);
                }
                Arc::new(model)
            }
        };
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinking_settings_the_api_would_refuse_are_problems() {
        let settings = |thinking, max_tokens, temperature: Option<f32>| ModelSettings {
            thinking,
            max_tokens,
            temperature,
            ..ModelSettings::default()
        };
        let problem = |s: ModelSettings, model: &str, tools: bool| s.thinking_problem(model, tools);
        let sonnet = "claude-sonnet-4-5";
        // Off, or within the rules: nothing to say.
        assert!(problem(settings(Thinking::Off, 100, Some(0.3)), sonnet, false).is_none());
        assert!(problem(settings(Thinking::budget(4096), 8192, None), sonnet, false).is_none());
        assert!(problem(settings(Thinking::Adaptive, 100, Some(1.0)), sonnet, true).is_none());
        assert!(matches!(
            problem(settings(Thinking::budget(1000), 8192, None), sonnet, true),
            Some(ConfigError::ThinkingBudgetTooSmall {
                budget_tokens: 1000
            })
        ));
        assert!(matches!(
            problem(settings(Thinking::Adaptive, 8192, Some(0.5)), sonnet, true),
            Some(ConfigError::TemperatureWithThinking { temperature: 0.5 })
        ));
        let too_big = settings(Thinking::budget(8192), 8192, None);
        assert!(matches!(
            problem(too_big.clone(), sonnet, false),
            Some(ConfigError::ThinkingBudgetNotBelowMaxTokens {
                budget_tokens: 8192,
                max_tokens: 8192
            })
        ));
        // Interleaved thinking between tool calls may spend more than one request's room.
        assert!(problem(too_big.clone(), sonnet, true).is_none());
        assert!(problem(too_big, "claude-3-7-sonnet-20250219", true).is_some());
    }
}
