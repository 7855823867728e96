//! Anthropic Messages API client. (Being written.)
