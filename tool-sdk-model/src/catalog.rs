//! What the agent knows about a model beyond its id: its context window, what its tokens cost,
//! and how long a prompt prefix must be before the provider will cache it.
//!
//! [`Catalog::default`] knows the current Anthropic, OpenAI and Gemini models; apps add or override
//! entries with [`Catalog::insert`] (a dated id such as `claude-sonnet-4-5-20250929` finds the
//! entry of its longest known prefix, `claude-sonnet-4-5`).
//!
//! ```
//! use tool_sdk::model::{Catalog, ModelInfo, Price, Usage};
//!
//! let mut catalog = Catalog::default();
//! catalog.insert("my-finetune", ModelInfo::new(32_000, Price::per_million(1.0, 2.0)));
//! let info = catalog.lookup("claude-sonnet-4-5-20250929").unwrap();
//! assert_eq!(info.context_window, 200_000);
//! let usage = Usage { input_tokens: 1_000_000, ..Usage::default() };
//! assert_eq!(info.price.cost_usd(&usage), 3.0);
//! assert!(catalog.lookup("my-finetune-v2").is_some());
//! assert!(catalog.lookup("unknown-model").is_none());
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Usage;

/// USD per million tokens of each kind [`Usage`] counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Price {
    /// Prompt tokens neither read from nor written to the cache.
    pub input: f64,
    /// Generated tokens.
    pub output: f64,
    /// Prompt tokens read from the cache.
    pub cache_read: f64,
    /// Prompt tokens written to the cache.
    pub cache_write: f64,
}

impl Price {
    /// Input and output prices, with the cache priced as Anthropic does: reads at 0.1x and
    /// writes (five-minute entries) at 1.25x the input price.
    pub fn per_million(input: f64, output: f64) -> Self {
        Price {
            input,
            output,
            cache_read: input * 0.1,
            cache_write: input * 1.25,
        }
    }

    /// This price with cache reads at `cache_read` per million and writes at the input price
    /// (OpenAI's automatic caching does not charge for writes).
    pub fn with_cache_read(mut self, cache_read: f64) -> Self {
        self.cache_read = cache_read;
        self.cache_write = self.input;
        self
    }

    /// What `usage` costs, in USD.
    pub fn cost_usd(&self, usage: &Usage) -> f64 {
        (usage.input_tokens as f64 * self.input
            + usage.output_tokens as f64 * self.output
            + usage.cache_read_input_tokens as f64 * self.cache_read
            + usage.cache_creation_input_tokens as f64 * self.cache_write)
            / 1_000_000.0
    }
}

/// One model's limits and prices.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The most tokens a request (prompt and output) may hold.
    pub context_window: u64,
    /// What its tokens cost.
    pub price: Price,
    /// The shortest prompt prefix, in tokens, the provider caches (Anthropic refuses shorter
    /// breakpoints silently; 0 when the provider caches on its own).
    pub min_cacheable_tokens: u64,
}

impl ModelInfo {
    /// A model with this window and price, whose provider caches any prefix.
    pub fn new(context_window: u64, price: Price) -> Self {
        ModelInfo {
            context_window,
            price,
            min_cacheable_tokens: 0,
        }
    }

    /// The same, caching only prefixes of at least `tokens`.
    pub fn with_min_cacheable_tokens(mut self, tokens: u64) -> Self {
        self.min_cacheable_tokens = tokens;
        self
    }
}

/// Models by id prefix: [`Catalog::default`] knows the current Anthropic, OpenAI and Gemini models,
/// [`Catalog::insert`] adds or overrides entries, [`Catalog::lookup`] takes the longest prefix.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Catalog {
    models: BTreeMap<String, ModelInfo>,
}

impl Catalog {
    /// A catalog that knows no model.
    pub fn empty() -> Self {
        Catalog {
            models: BTreeMap::new(),
        }
    }

    /// Adds or replaces the entry for ids starting with `prefix`.
    pub fn insert(&mut self, prefix: impl Into<String>, info: ModelInfo) -> &mut Self {
        self.models.insert(prefix.into(), info);
        self
    }

    /// The entry of the longest prefix of `model_id` the catalog knows: the id itself, or a
    /// prefix followed by `-` and a date or a name (`claude-sonnet-4-5-20250929`,
    /// `gpt-4o-2024-08-06`, `my-finetune-v2`). A prefix followed by a version number is not
    /// the same model: `claude-opus-4` is not `claude-opus-4-6`'s entry, nor `gpt-5` the
    /// entry of `gpt-5.5`, so a model newer than the catalog has no price rather than an old
    /// model's.
    pub fn lookup(&self, model_id: &str) -> Option<&ModelInfo> {
        self.models
            .iter()
            .filter(|(prefix, _)| is_variant_of(model_id, prefix))
            .max_by_key(|(prefix, _)| prefix.len())
            .map(|(_, info)| info)
    }

    /// Every entry, by prefix.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ModelInfo)> {
        self.models
            .iter()
            .map(|(prefix, info)| (prefix.as_str(), info))
    }
}

/// Whether `model_id` is `prefix`, or `prefix` with a suffix that is not a newer version.
fn is_variant_of(model_id: &str, prefix: &str) -> bool {
    let Some(rest) = model_id.strip_prefix(prefix) else {
        return false;
    };
    let Some(suffix) = rest.strip_prefix('-') else {
        return rest.is_empty();
    };
    // `-5` or `-10` after `claude-opus-4` is a minor version; `-20250929` or `-2024` a date.
    let first = suffix.split('-').next().unwrap_or_default();
    let is_version =
        !first.is_empty() && first.len() <= 2 && first.bytes().all(|b| b.is_ascii_digit());
    !is_version
}

impl Default for Catalog {
    /// Public list prices (USD per million tokens) and windows, checked on 2026-11-29 against
    /// the providers' model pages (platform.claude.com/docs/en/models, developers.openai.com's
    /// model and pricing pages). Not modelled: long-prompt tiers (OpenAI's 2x input above 272K
    /// tokens on GPT-5.4 and later), 1-hour cache writes, batch discounts.
    fn default() -> Self {
        // Anthropic: cache reads at 0.1x input and five-minute writes at 1.25x, except where
        // the model page says otherwise.
        let claude = |window, input, output, min| {
            ModelInfo::new(window, Price::per_million(input, output)).with_min_cacheable_tokens(min)
        };
        let openai = |window, input, output, cached| {
            ModelInfo::new(
                window,
                Price::per_million(input, output).with_cache_read(cached),
            )
        };
        const M: u64 = 1_000_000;
        const K200: u64 = 200_000;
        let mut catalog = Catalog::empty();
        // Opus 5.5's page lists cache reads at $0.20 (0.05x) and writes at $5.
        let mut opus_5_5 = claude(M, 4.0, 20.0, 1024);
        opus_5_5.price.cache_read = 0.20;
        catalog
            .insert("claude-fable-5-1", claude(M, 10.0, 50.0, 1024))
            .insert("claude-opus-5-5", opus_5_5)
            .insert("claude-opus-5", claude(M, 5.0, 25.0, 1024))
            .insert("claude-sonnet-5-5", claude(M, 2.0, 10.0, 1024))
            .insert("claude-sonnet-5", claude(M, 2.0, 10.0, 1024))
            // Haiku 5.5 is priced "from $0.10 / $0.50" in tiers the pages did not spell out:
            // left out rather than guessed.
            .insert("claude-opus-4-6", claude(M, 5.0, 25.0, 1024))
            .insert("claude-sonnet-4-6", claude(M, 3.0, 15.0, 1024))
            .insert("claude-opus-4-5", claude(K200, 5.0, 25.0, 4096))
            .insert("claude-opus-4-1", claude(K200, 15.0, 75.0, 1024))
            .insert("claude-opus-4", claude(K200, 15.0, 75.0, 1024))
            .insert("claude-sonnet-4-5", claude(K200, 3.0, 15.0, 1024))
            .insert("claude-sonnet-4", claude(K200, 3.0, 15.0, 1024))
            .insert("claude-3-7-sonnet", claude(K200, 3.0, 15.0, 1024))
            .insert("claude-haiku-4-5", claude(K200, 1.0, 5.0, 4096))
            .insert("claude-3-5-haiku", claude(K200, 0.8, 4.0, 2048))
            // OpenAI: cached input at the listed price; writes are free.
            .insert("gpt-5.5", openai(1_050_000, 5.0, 30.0, 0.5))
            .insert("gpt-5.5-pro", openai(1_050_000, 30.0, 180.0, 3.0))
            // GPT-5.4's window is not on the pages read; 400K is GPT-5's, the least it has.
            .insert("gpt-5.4", openai(400_000, 2.5, 15.0, 0.25))
            .insert("gpt-5.4-mini", openai(400_000, 0.75, 4.5, 0.075))
            .insert("gpt-5.4-nano", openai(400_000, 0.2, 1.25, 0.02))
            .insert("gpt-5", openai(400_000, 1.25, 10.0, 0.125))
            .insert("gpt-5-mini", openai(400_000, 0.25, 2.0, 0.025))
            .insert("gpt-5-nano", openai(400_000, 0.05, 0.4, 0.005))
            .insert("gpt-4.1", openai(1_047_576, 2.0, 8.0, 0.5))
            .insert("gpt-4.1-mini", openai(1_047_576, 0.4, 1.6, 0.1))
            .insert("gpt-4.1-nano", openai(1_047_576, 0.1, 0.4, 0.025))
            .insert("gpt-4o", openai(128_000, 2.5, 10.0, 1.25))
            .insert("gpt-4o-mini", openai(128_000, 0.15, 0.6, 0.075))
            .insert("o3", openai(200_000, 2.0, 8.0, 0.5))
            .insert("o3-mini", openai(200_000, 1.1, 4.4, 0.55))
            .insert("o4-mini", openai(200_000, 1.1, 4.4, 0.275));
        add_gemini(&mut catalog);
        catalog
    }
}

/// The Gemini API's models (paid tier, standard requests, USD per million tokens), checked
/// on 2026-11-29 against what is published of Google's pricing page
/// (ai.google.dev/gemini-api/docs/pricing). That page itself was not reachable from here: the
/// figures come from pages that quote it (its own forum, and price guides dated 2025-12 to
/// 2026-05), and agree between them on input and output.
///
/// What could not be confirmed, or cannot be said here:
/// - the cache-read prices of 2.5 Flash (0.03), 2.5 Flash-Lite (0.01), 3 Pro and 3.1 Pro
///   (0.20) and 3 Flash (0.05): each is 10% of the input price, as Google's caching discount
///   of 90% for these models says, but no quote of the page gave them (2.5 Pro's 0.125 and 3.1
///   Flash-Lite's 0.025 were quoted);
/// - the Pro models charge more for prompts over 200k tokens (2.5 Pro 2.50 in and 15.00 out,
///   3 and 3.1 Pro 4.00 and 18.00); one price per model cannot say so, and the lower tier is
///   the one kept, so a run of very long prompts costs more than reported;
/// - Gemini 3.5 Flash was quoted by one page only, and is left out;
/// - audio input is priced higher; caching storage (per hour) is not a token price.
///
/// The window is the input limit (1,048,576 tokens for each); Gemini caches prefixes on its
/// own (implicit caching), so no minimum for breakpoints applies and writes cost nothing extra.
fn add_gemini(catalog: &mut Catalog) {
    let gemini = |input, output, cached| {
        ModelInfo::new(
            1_048_576,
            Price::per_million(input, output).with_cache_read(cached),
        )
    };
    catalog
        .insert("gemini-2.5-pro", gemini(1.25, 10.0, 0.125))
        .insert("gemini-2.5-flash", gemini(0.30, 2.50, 0.03))
        .insert("gemini-2.5-flash-lite", gemini(0.10, 0.40, 0.01))
        .insert("gemini-3-pro", gemini(2.0, 12.0, 0.20))
        .insert("gemini-3.1-pro", gemini(2.0, 12.0, 0.20))
        .insert("gemini-3-flash", gemini(0.50, 3.0, 0.05))
        .insert("gemini-3.1-flash-lite", gemini(0.25, 1.50, 0.025));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins() {
        let catalog = Catalog::default();
        let mini = catalog.lookup("gpt-4o-mini-2024-07-18").unwrap();
        assert_eq!(mini.price.input, 0.15);
        let full = catalog.lookup("gpt-4o-2024-08-06").unwrap();
        assert_eq!(full.price.input, 2.5);
        let opus45 = catalog.lookup("claude-opus-4-5-20251101").unwrap();
        assert_eq!(opus45.price.input, 5.0);
        let opus41 = catalog.lookup("claude-opus-4-1-20250805").unwrap();
        assert_eq!(opus41.price.input, 15.0);
        assert!(catalog.lookup("claude").is_none());
        let lite = catalog
            .lookup("gemini-2.5-flash-lite-preview-06-17")
            .unwrap();
        assert_eq!(lite.price.input, 0.10);
        let flash = catalog.lookup("gemini-2.5-flash-preview-05-20").unwrap();
        assert_eq!(flash.price.input, 0.30);
        let pro3 = catalog.lookup("gemini-3-pro-preview").unwrap();
        assert_eq!((pro3.price.output, pro3.context_window), (12.0, 1_048_576));
    }

    /// A model newer than the catalog is unknown (no cost), never priced as an older one.
    #[test]
    fn a_newer_version_is_not_an_older_models_variant() {
        let catalog = Catalog::default();
        for newer in [
            "claude-opus-4-9",
            "claude-sonnet-5-7",
            "gpt-5.9",
            "gpt-4.5-preview",
        ] {
            assert!(catalog.lookup(newer).is_none(), "{newer}");
        }
        assert_eq!(catalog.lookup("claude-opus-5-5").unwrap().price.input, 4.0);
        assert_eq!(catalog.lookup("claude-opus-5").unwrap().price.input, 5.0);
        assert_eq!(
            catalog.lookup("gpt-5.5-2026-04-23").unwrap().price.output,
            30.0
        );
        assert_eq!(
            catalog.lookup("o3-mini-2025-01-31").unwrap().price.input,
            1.1
        );
        assert_eq!(catalog.lookup("gpt-5-mini").unwrap().price.input, 0.25);
        let mut mine = Catalog::empty();
        mine.insert(
            "my-finetune",
            ModelInfo::new(1, Price::per_million(1.0, 1.0)),
        );
        assert!(mine.lookup("my-finetune-v2").is_some());
        assert!(mine.lookup("my-finetuned").is_none());
    }

    /// OpenAI's cached tokens are priced once, at the cached price.
    #[test]
    fn cached_openai_tokens_cost_the_cached_price() {
        let info = *Catalog::default().lookup("gpt-5.5").unwrap();
        let usage = Usage {
            input_tokens: 1_000,
            cache_read_input_tokens: 9_000,
            output_tokens: 0,
            cache_creation_input_tokens: 0,
        };
        let expected = (1_000.0 * 5.0 + 9_000.0 * 0.5) / 1e6;
        assert!((info.price.cost_usd(&usage) - expected).abs() < 1e-12);
    }

    #[test]
    fn cost_counts_every_kind_of_token() {
        let price = Price::per_million(3.0, 15.0);
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 2_000,
            cache_read_input_tokens: 10_000,
            cache_creation_input_tokens: 4_000,
        };
        let expected = (1_000.0 * 3.0 + 2_000.0 * 15.0 + 10_000.0 * 0.3 + 4_000.0 * 3.75) / 1e6;
        assert!((price.cost_usd(&usage) - expected).abs() < 1e-12);
    }
}
