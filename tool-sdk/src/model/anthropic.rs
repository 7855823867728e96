//! Anthropic Messages API client. (Placeholder until the client lands.)
#![allow(missing_docs, dead_code)]
use super::{Model, ModelError, ModelRequest, ModelStream, RetryPolicy};
pub struct AnthropicModel {
    id: String,
    key: String,
    retry: RetryPolicy,
    base: String,
}
impl AnthropicModel {
    pub fn new(id: impl Into<String>, key: impl Into<String>) -> Self {
        Self {
            id: id.into(),
            key: key.into(),
            retry: RetryPolicy::default(),
            base: String::new(),
        }
    }
    pub fn from_env(id: &str) -> Result<Self, ModelError> {
        Ok(Self::new(
            id,
            std::env::var("ANTHROPIC_API_KEY")
                .map_err(|_| ModelError::MissingApiKey("ANTHROPIC_API_KEY".into()))?,
        ))
    }
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }
    pub fn with_base_url(mut self, url: impl Into<String>) -> Self {
        self.base = url.into();
        self
    }
}
impl Model for AnthropicModel {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> ModelStream<'a> {
        Box::pin(futures::stream::iter([Err(ModelError::Transport(
            "not yet".into(),
        ))]))
    }
}
