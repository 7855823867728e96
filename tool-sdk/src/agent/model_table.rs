//! `[models."<prefix>"]` tables of a config file: a [`ModelInfo`] with flat per-million
//! prices (the catalog entries `AgentConfig::with_model_info` adds in code).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::model::{ModelInfo, Price};

/// One table, as written in a file.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    context_window: u64,
    input_per_million: f64,
    output_per_million: f64,
    /// Default: a tenth of the input price (Anthropic's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_read_per_million: Option<f64>,
    /// Default: 1.25 times the input price (Anthropic's five-minute entries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cache_write_per_million: Option<f64>,
    #[serde(default)]
    min_cacheable_tokens: u64,
}

pub(super) fn serialize<S: serde::Serializer>(
    models: &BTreeMap<String, ModelInfo>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let entries: BTreeMap<&String, Entry> = models
        .iter()
        .map(|(prefix, info)| {
            let entry = Entry {
                context_window: info.context_window,
                input_per_million: info.price.input,
                output_per_million: info.price.output,
                cache_read_per_million: Some(info.price.cache_read),
                cache_write_per_million: Some(info.price.cache_write),
                min_cacheable_tokens: info.min_cacheable_tokens,
            };
            (prefix, entry)
        })
        .collect();
    entries.serialize(serializer)
}

pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, ModelInfo>, D::Error> {
    use serde::de::Error;
    let entries = BTreeMap::<String, Entry>::deserialize(deserializer)?;
    entries
        .into_iter()
        .map(|(prefix, entry)| {
            let prices = [
                Some(entry.input_per_million),
                Some(entry.output_per_million),
                entry.cache_read_per_million,
                entry.cache_write_per_million,
            ];
            if prices
                .into_iter()
                .flatten()
                .any(|p| !p.is_finite() || p < 0.0)
            {
                return Err(D::Error::custom(format!(
                    "models.\"{prefix}\": prices are USD per million tokens, 0 or more"
                )));
            }
            let mut price = Price::per_million(entry.input_per_million, entry.output_per_million);
            if let Some(read) = entry.cache_read_per_million {
                price.cache_read = read;
            }
            if let Some(write) = entry.cache_write_per_million {
                price.cache_write = write;
            }
            let info = ModelInfo::new(entry.context_window, price)
                .with_min_cacheable_tokens(entry.min_cacheable_tokens);
            Ok((prefix, info))
        })
        .collect()
}
