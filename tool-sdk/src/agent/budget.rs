//! What the agent's tokens cost, and the budgets that stop a run.
//!
//! The agent looks its model up once, in the [`Catalog`] its config makes
//! ([`ModelSettings::with_model_info`](super::ModelSettings::with_model_info), `[models."<prefix>"]` in a file), and prices each
//! turn's [`Usage`] with it. A model the catalog does not know has no cost: every `cost_usd`
//! is `None` (and a warning is logged once), never a misleading `0.0`.
//!
//! Budgets are per run ([`Limits::with_max_budget_usd`](super::Limits::with_max_budget_usd),
//! [`Limits::with_max_run_tokens`](super::Limits::with_max_run_tokens)): checked before each model request and after each
//! model turn. A turn that reaches one has its tool calls answered as calls that did not run,
//! stored like any result, so the conversation stays valid and a later prompt (or a
//! [`resume`](super::Agent::resume)) goes on from there with a fresh budget.

use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::config::AgentConfig;
use super::error::{AgentError, ConfigError};
use super::events::RunResult;
use super::step::Budget;
use crate::model::{ModelInfo, Usage};
use crate::session::Record;

/// The agent's model, its price, the conversation's token totals and the run limits. Shared
/// by an agent and its sub-agents, whose tokens count in the totals.
pub(crate) struct Ledger {
    model_id: String,
    info: Option<ModelInfo>,
    /// The fallback models' entries, by id: a turn one of them served is priced by it.
    fallbacks: Vec<(String, Option<ModelInfo>)>,
    budget: Budget,
    /// Whether the "price unknown" warning was logged.
    warned: AtomicBool,
    /// Tokens of the whole conversation, resumed sessions included.
    totals: Mutex<Usage>,
}

impl Ledger {
    /// The model's catalog entry (the config's own entries first), if it has one.
    pub(crate) fn info(&self) -> Option<&ModelInfo> {
        self.info.as_ref()
    }

    /// Looks `model_id` up in the config's catalog; a budget the agent could not enforce
    /// (no price for the model, or not a sensible amount) is an error.
    /// `fallbacks` are the ids of the models a request may fall back to.
    pub(crate) fn new(
        config: &AgentConfig,
        model_id: &str,
        fallbacks: &[&str],
    ) -> Result<Self, AgentError> {
        let catalog = config.catalog();
        let info = catalog.lookup(model_id).copied();
        let fallbacks: Vec<(String, Option<ModelInfo>)> = fallbacks
            .iter()
            .map(|id| (id.to_string(), catalog.lookup(id).copied()))
            .collect();
        if let Some(limit) = config.limits.max_budget_usd {
            if !limit.is_finite() || limit < 0.0 {
                return Err(ConfigError::BadBudget(limit).into());
            }
            let unpriced = std::iter::once((model_id, info.as_ref()))
                .chain(
                    fallbacks
                        .iter()
                        .map(|(id, info)| (id.as_str(), info.as_ref())),
                )
                .find(|(_, info)| info.is_none());
            if let Some((model, _)) = unpriced {
                return Err(ConfigError::UnknownPrice {
                    model: model.to_owned(),
                }
                .into());
            }
        }
        Ok(Ledger {
            model_id: model_id.to_owned(),
            info,
            fallbacks,
            budget: Budget {
                price: info.map(|info| info.price),
                max_usd: config.limits.max_budget_usd,
                max_tokens: config.limits.max_run_tokens,
            },
            warned: AtomicBool::new(false),
            totals: Mutex::new(Usage::default()),
        })
    }

    /// What `usage` costs; `None`, and a warning the first time, when the price is unknown.
    pub(crate) fn cost_usd(&self, usage: &Usage) -> Option<f64> {
        match &self.info {
            Some(info) => Some(info.price.cost_usd(usage)),
            None => {
                if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
                    tracing::warn!(
                        model = %self.model_id,
                        "the price of this model is unknown: costs are reported as None; add \
                         it with `ModelSettings::with_model_info` or `[models.\"<prefix>\"]`"
                    );
                }
                None
            }
        }
    }

    /// Counts one model request in the conversation's totals and the run's cost (the caller
    /// added its usage to `result.usage`); returns the request's cost. `served_by` names the
    /// model that answered, when a fallback did: its price applies to this request.
    pub(crate) fn add_turn(
        &self,
        usage: Usage,
        served_by: Option<&str>,
        result: &mut RunResult,
    ) -> Option<f64> {
        *self.totals.lock().unwrap_or_else(|p| p.into_inner()) += usage;
        let main_total = self.cost_usd(&result.usage);
        let fallback = served_by
            .filter(|id| *id != self.model_id)
            .map(|id| self.fallback_price(id));
        let Some(main_total) = main_total else {
            result.cost_usd = None;
            return fallback.flatten().map(|info| info.price.cost_usd(&usage));
        };
        let main = self.info.map(|info| info.price);
        // The run is priced at the main model's price, plus what requests a fallback served
        // cost beyond it: the earlier ones' share is what the run's cost was beyond its usage
        // at the main price (0, exactly, when no fallback served).
        let before = minus(result.usage, usage);
        let earlier_extra = match (result.cost_usd, main) {
            (Some(cost), Some(price)) => cost - price.cost_usd(&before),
            _ => 0.0,
        };
        let main_turn = self.cost_usd(&usage);
        let (turn_cost, extra) = match fallback {
            None => (main_turn, 0.0),
            Some(None) => {
                result.cost_usd = None;
                return None;
            }
            Some(Some(info)) => {
                let cost = info.price.cost_usd(&usage);
                (Some(cost), cost - main_turn.unwrap_or(0.0))
            }
        };
        result.cost_usd = Some(main_total + earlier_extra + extra);
        turn_cost
    }

    /// The catalog entry of the fallback model `id`.
    fn fallback_price(&self, id: &str) -> Option<ModelInfo> {
        let found = self.fallbacks.iter().find(|(known, _)| known == id);
        found.and_then(|(_, info)| *info)
    }

    /// Adds the usage records of a stored session to the totals (a resume).
    pub(crate) fn restore(&self, records: &[Record]) {
        let mut totals = self.totals.lock().unwrap_or_else(|p| p.into_inner());
        for record in records {
            if let Record::Usage { usage } = record {
                *totals += *usage;
            }
        }
    }

    /// Tokens of the whole conversation.
    pub(crate) fn totals(&self) -> Usage {
        *self.totals.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The error that stops the run, once it has spent a budget.
    pub(crate) fn stop(&self, result: &RunResult) -> Option<AgentError> {
        self.budget.stop(&result.usage)
    }

    /// The error that stops a run which used `usage` in all, once it has spent a budget.
    pub(crate) fn budget_stop(&self, usage: &Usage) -> Option<AgentError> {
        self.budget.stop(usage)
    }

    /// `Err` once the run has spent a budget: the error the run ends with.
    pub(crate) fn check(&self, result: &RunResult) -> Result<(), AgentError> {
        self.stop(result).map_or(Ok(()), Err)
    }

    /// The id of the agent's model, as its provider knows it.
    pub(crate) fn model_id(&self) -> &str {
        &self.model_id
    }
}

/// `total` less `part`, field by field.
fn minus(total: Usage, part: Usage) -> Usage {
    Usage {
        input_tokens: total.input_tokens.saturating_sub(part.input_tokens),
        output_tokens: total.output_tokens.saturating_sub(part.output_tokens),
        cache_read_input_tokens: total
            .cache_read_input_tokens
            .saturating_sub(part.cache_read_input_tokens),
        cache_creation_input_tokens: total
            .cache_creation_input_tokens
            .saturating_sub(part.cache_creation_input_tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_models_table_in_a_file_extends_the_catalog() {
        let config: AgentConfig = toml::from_str(
            r#"
            max_budget_usd = 0.25
            max_run_tokens = 100000
            [models."my-finetune"]
            context_window = 32000
            input_per_million = 1.0
            output_per_million = 4.0
            cache_read_per_million = 0.5
            [models."claude-sonnet-4"]
            context_window = 1000000
            input_per_million = 6.0
            output_per_million = 22.5
            "#,
        )
        .unwrap();
        assert_eq!(config.limits.max_budget_usd, Some(0.25));
        assert_eq!(config.limits.max_run_tokens, Some(100_000));
        let catalog = config.catalog();
        let mine = catalog.lookup("my-finetune-v2").unwrap();
        assert_eq!(mine.context_window, 32_000);
        assert_eq!(mine.price.cache_read, 0.5);
        assert_eq!(mine.price.cache_write, 1.25);
        // Overrides the built-in entry (and its dated ids), not those of newer versions.
        assert_eq!(
            catalog
                .lookup("claude-sonnet-4-20250514")
                .unwrap()
                .price
                .input,
            6.0
        );
        assert_eq!(
            catalog.lookup("claude-sonnet-4-5").unwrap().price.input,
            3.0
        );
        assert_eq!(catalog.lookup("claude-opus-4-5").unwrap().price.input, 5.0);
        // And back: what is written reads the same.
        let again: AgentConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
        assert_eq!(again.model.models, config.model.models);
    }

    #[test]
    fn a_negative_price_or_budget_is_refused_with_the_reason() {
        let error = toml::from_str::<AgentConfig>(
            "[models.x]\ncontext_window = 1\ninput_per_million = -1.0\noutput_per_million = 1.0",
        )
        .err()
        .unwrap()
        .to_string();
        assert!(error.contains("0 or more"), "{error}");
        let config = AgentConfig::new().limits(|l| l.with_max_budget_usd(f64::NAN));
        let error = Ledger::new(&config, "gpt-4o", &[])
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("max_budget_usd"), "{error}");
    }

    #[test]
    fn a_budget_needs_a_known_price() {
        let config = AgentConfig::new().limits(|l| l.with_max_budget_usd(1.0));
        let error = Ledger::new(&config, "scripted", &[])
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("with_model_info(\"scripted\""), "{error}");
        assert!(Ledger::new(&config, "gpt-4o-2024-08-06", &[]).is_ok());
    }
}
