//! Which model the coder talks to: the provider from the flags or the environment.

use std::sync::Arc;

use tool_sdk::model::anthropic::AnthropicModel;
use tool_sdk::model::gemini::GeminiModel;
use tool_sdk::model::openai::OpenAiModel;
use tool_sdk::model::openai_responses::OpenAiResponsesModel;
use tool_sdk::model::{Model, ModelError};

use crate::{Args, ProviderChoice, demo, warn};

/// The provider from the flags, else from the environment, else the scripted demo.
pub fn provider_choice(args: &Args) -> ProviderChoice {
    let env = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    args.provider.unwrap_or(if env("ANTHROPIC_API_KEY") {
        ProviderChoice::Anthropic
    } else if env("OPENAI_API_KEY") || env("OPENAI_BASE_URL") {
        ProviderChoice::Openai
    } else if env("GEMINI_API_KEY") || env("GOOGLE_API_KEY") {
        ProviderChoice::Gemini
    } else {
        ProviderChoice::Demo
    })
}

/// The model of `provider`; the scripted demo's works on `cwd`.
pub fn choose_model(
    args: &Args,
    provider: ProviderChoice,
    cwd: &std::path::Path,
) -> Result<Arc<dyn Model>, ModelError> {
    let model_id = args.model.clone();
    Ok(match provider {
        ProviderChoice::Anthropic => Arc::new(AnthropicModel::from_env(
            model_id.unwrap_or_else(|| "claude-sonnet-4-5".into()),
        )?),
        ProviderChoice::Openai => Arc::new(OpenAiModel::from_env(
            model_id.unwrap_or_else(|| "gpt-4.1".into()),
        )?),
        ProviderChoice::Gemini => Arc::new(GeminiModel::from_env(
            model_id.unwrap_or_else(|| "gemini-2.5-flash".into()),
        )?),
        ProviderChoice::OpenaiResponses => Arc::new(OpenAiResponsesModel::from_env(
            model_id.unwrap_or_else(|| "gpt-5".into()),
        )?),
        ProviderChoice::Demo => {
            if let Some(model) = &args.model {
                warn(&format!(
                    "--model {model} is ignored: the scripted demo plays the model (set \
                     ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY, or pass --provider)"
                ));
            }
            Arc::new(demo::model(cwd))
        }
    })
}
