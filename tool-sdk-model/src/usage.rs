//! Tokens used by a model request.

use serde::{Deserialize, Serialize};

/// Tokens used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens neither read from nor written to the cache (Anthropic's `input_tokens`;
    /// OpenAI's `prompt_tokens` less its `cached_tokens`): the prompt is all four input
    /// kinds together, [`Usage::prompt_tokens`].
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens read from the cache.
    pub cache_read_input_tokens: u64,
    /// Prompt tokens written to the cache.
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    /// Every prompt token, cached or not.
    pub fn prompt_tokens(&self) -> u64 {
        self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens
    }

    /// Every token, prompt and output.
    pub fn total_tokens(&self) -> u64 {
        self.prompt_tokens() + self.output_tokens
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
    }
}
