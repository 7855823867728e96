//! `config.context`: how requests are kept inside the model's context window.

use serde::{Deserialize, Serialize};

use crate::agent::ConfigError;

/// How an agent keeps its requests inside the model's context window (`[context]` in a config
/// file). See [`ContextSettings::with_compaction`].
///
/// ```
/// use tool_sdk::agent::AgentConfig;
///
/// let config: AgentConfig = toml::from_str(r#"
///     [context]
///     window = 100000
///     clear_at = 0.6
/// "#).unwrap();
/// assert_eq!(config.context.window, Some(100_000));
/// assert!(config.context.compaction);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ContextSettings {
    /// The model's context window in tokens, when the [`Catalog`](crate::model::Catalog) does
    /// not know the model id or is wrong about it. With neither, the window is not managed.
    pub window: Option<u64>,
    /// Whether the window is managed at all: old tool results cleared and the conversation
    /// compacted (default: on).
    pub compaction: bool,
    /// The share of the room above which older tool results are cleared (default 0.7). The
    /// room is the window less the answer's `max_tokens`, as are all the shares below.
    pub clear_at: f64,
    /// The share of the room a batch of clearing brings the request under, when clearing can
    /// (default 0.1): well under `clear_at`, so that one batch (one break of the prompt
    /// cache) lasts many turns. Higher keeps more recent results in view, for more batches.
    pub clear_to: f64,
    /// The share of the room above which the conversation is compacted (default 0.85).
    pub compact_at: f64,
    /// How many of the most recent tool results are never cleared (default 1). Results the
    /// model has not read yet are never cleared either.
    pub keep_tool_results: usize,
    /// The share of the room the recent messages kept verbatim by a compaction may take
    /// (default 0.25); at least the last turn is kept whatever its size.
    pub keep_recent: f64,
}

impl Default for ContextSettings {
    fn default() -> Self {
        ContextSettings {
            window: None,
            compaction: true,
            clear_at: 0.7,
            clear_to: 0.1,
            compact_at: 0.85,
            keep_tool_results: 1,
            keep_recent: 0.25,
        }
    }
}

impl ContextSettings {
    pub(crate) fn is_default(&self) -> bool {
        *self == ContextSettings::default()
    }

    /// The first mistake in the settings, when the window is managed.
    pub(crate) fn problem(&self) -> Option<ConfigError> {
        if !self.compaction {
            return None;
        }
        let shares = [
            ("clear_at", self.clear_at),
            ("clear_to", self.clear_to),
            ("compact_at", self.compact_at),
            ("keep_recent", self.keep_recent),
        ];
        // `!(x > 0.0)` and not `x <= 0.0`: NaN is not a share either.
        if let Some((name, value)) = shares
            .into_iter()
            .find(|&(_, value)| !(value > 0.0 && value <= 1.0))
        {
            return Some(ConfigError::ContextShare { name, value });
        }
        let order = [
            ("clear_to", self.clear_to, "clear_at", self.clear_at),
            ("clear_at", self.clear_at, "compact_at", self.compact_at),
        ];
        order
            .into_iter()
            .find(|&(_, lower_value, _, upper_value)| lower_value > upper_value)
            .map(
                |(lower, lower_value, upper, upper_value)| ConfigError::ContextOrder {
                    lower,
                    lower_value,
                    upper,
                    upper_value,
                },
            )
    }
}

impl ContextSettings {
    /// Sets the model's context window, in tokens, whatever the model id: for a model the
    /// [`Catalog`](crate::model::Catalog) does not know, or to manage the window as if it
    /// were smaller (`window` in the `[context]` table).
    pub fn with_window(mut self, tokens: u64) -> Self {
        self.window = Some(tokens);
        self
    }

    /// Turns the management of the context window on (the default) or off. On, when the
    /// window is known (from the [`Catalog`](crate::model::Catalog) or
    /// [`with_window`](Self::with_window)), each request is estimated before it is sent,
    /// against the room the window leaves the prompt once `max_tokens` is reserved for the
    /// answer: above `clear_at` of it (0.7) the results of older tool calls are replaced by a
    /// short note in what the model sees, down to `clear_to` (0.1), and above `compact_at`
    /// (0.85), or when the provider answers that the prompt is too long, the older part of
    /// the conversation is replaced by a summary the model writes. The full conversation is
    /// kept in [`RunResult::messages`](crate::agent::RunResult::messages) and the session.
    /// (`compaction` in the `[context]` table.)
    pub fn with_compaction(mut self, on: bool) -> Self {
        self.compaction = on;
        self
    }

    /// Sets the shares of the prompt's room (the window less `max_tokens`) above which tool
    /// results are cleared and the conversation compacted (`clear_at`, `compact_at` in the
    /// `[context]` table). A `clear_to` above the new `clear_at` is lowered to it.
    pub fn with_thresholds(mut self, clear_at: f64, compact_at: f64) -> Self {
        self.clear_at = clear_at;
        self.clear_to = self.clear_to.min(clear_at);
        self.compact_at = compact_at;
        self
    }
}
