//! OpenAI Chat Completions client. (Placeholder until the client lands.)
#![allow(missing_docs, dead_code)]
use super::{Model, ModelError, ModelRequest, ModelStream, RetryPolicy};
pub struct OpenAiModel {
    id: String,
    key: Option<String>,
    retry: RetryPolicy,
    base: String,
}
impl OpenAiModel {
    pub fn new(id: impl Into<String>, key: Option<String>) -> Self {
        Self {
            id: id.into(),
            key,
            retry: RetryPolicy::default(),
            base: String::new(),
        }
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
impl Model for OpenAiModel {
    fn model_id(&self) -> &str {
        &self.id
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> ModelStream<'a> {
        Box::pin(futures::stream::iter([Err(ModelError::Transport(
            "not yet".into(),
        ))]))
    }
}
