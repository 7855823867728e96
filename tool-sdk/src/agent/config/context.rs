//! `config.context`'s builder methods, beside [`ContextSettings`]'s fields in the context
//! manager.

use crate::agent::ContextSettings;

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
