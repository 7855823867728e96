//! A model that moves on to the next of a list when one is overloaded or down.

use std::sync::Arc;

use futures::StreamExt;

use super::{Model, ModelError, ModelEvent, ModelRequest, ModelStream};

/// A model that is a list of models: each request goes to the first, and moves on to the next
/// only when one fails in a way another provider may not (overloaded, rate limited, a 5xx, a
/// connection that could not be made) before it streamed anything. Each model's own retries
/// (its [`RetryPolicy`](super::RetryPolicy)) are spent first. A switch is announced by a
/// [`ModelEvent::ModelFallback`] and lasts for that request only: the next one tries the
/// first model again, as Claude Code's `--fallback-model` and Pydantic AI's `FallbackModel`
/// do. An error no other model would answer differently (a bad request, a prompt too long,
/// a missing key) is returned at once.
///
/// An agent builds one from
/// `agent::ModelSettings::with_fallback_models`.
///
/// ```
/// use std::sync::Arc;
/// use tool_sdk::model::{FallbackModel, Model, ScriptedModel, ScriptedTurn};
///
/// let main = ScriptedModel::new(vec![ScriptedTurn::text("from the main model")]);
/// let spare = ScriptedModel::new(vec![ScriptedTurn::text("from the spare")]);
/// let model = FallbackModel::new(Arc::new(main), [Arc::new(spare) as Arc<dyn Model>]);
/// assert_eq!(model.model_id(), "scripted");
/// assert_eq!(model.models().len(), 2);
/// ```
pub struct FallbackModel {
    models: Vec<Arc<dyn Model>>,
}

impl FallbackModel {
    /// `main`, then each of `fallbacks` in order.
    pub fn new(main: Arc<dyn Model>, fallbacks: impl IntoIterator<Item = Arc<dyn Model>>) -> Self {
        let mut models = vec![main];
        models.extend(fallbacks);
        FallbackModel { models }
    }

    /// The models, the main one first.
    pub fn models(&self) -> &[Arc<dyn Model>] {
        &self.models
    }
}

impl std::fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<&str> = self.models.iter().map(|m| m.model_id()).collect();
        f.debug_struct("FallbackModel")
            .field("models", &ids)
            .finish()
    }
}

/// Whether a request that failed with `error`, before anything streamed, goes to the next
/// model: only for failures of the provider (overloaded, rate limited, a 5xx, unreachable),
/// never for ones of the request, which the next model would refuse too.
pub(crate) fn falls_back(error: &ModelError) -> bool {
    error.is_retryable()
}

/// `event`, its turn marked as `id`'s when it is the completed turn.
fn served_by(event: Result<ModelEvent, ModelError>, id: &str) -> Result<ModelEvent, ModelError> {
    match event {
        Ok(ModelEvent::Completed(mut response)) => {
            response.model.get_or_insert_with(|| id.to_owned());
            Ok(ModelEvent::Completed(response))
        }
        other => other,
    }
}

impl Model for FallbackModel {
    /// The main model's id: the one the agent is priced and named by.
    fn model_id(&self) -> &str {
        self.models[0].model_id()
    }

    fn provider_name(&self) -> &str {
        self.models[0].provider_name()
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        Box::pin(async_stream::stream! {
            let mut failures: Vec<(String, ModelError)> = Vec::new();
            for (at, model) in self.models.iter().enumerate() {
                let mut stream = model.stream(request);
                let first = stream.next().await;
                let error = match first {
                    Some(Err(error)) if falls_back(&error) => error,
                    first => {
                        // It answered (or failed in a way no other model would mend): from
                        // here on, its stream is the request's.
                        let Some(first) = first else { return };
                        let id = model.model_id();
                        yield served_by(first, id);
                        while let Some(event) = stream.next().await {
                            yield served_by(event, id);
                        }
                        return;
                    }
                };
                failures.push((model.model_id().to_owned(), error.clone()));
                if let Some(next) = self.models.get(at + 1) {
                    tracing::warn!(
                        from = %model.model_id(),
                        to = %next.model_id(),
                        %error,
                        "the model failed; trying the next one"
                    );
                    yield Ok(ModelEvent::ModelFallback {
                        from: model.model_id().to_owned(),
                        to: next.model_id().to_owned(),
                        reason: error.to_string(),
                    });
                }
            }
            yield Err(ModelError::AllModelsFailed { failures });
        })
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::{Message, ScriptedModel, ScriptedTurn};

    fn overloaded() -> ScriptedTurn {
        ScriptedTurn::error(ModelError::Overloaded {
            message: "Overloaded".into(),
            retry_after: None,
        })
    }

    async fn events(model: &FallbackModel) -> Vec<Result<ModelEvent, ModelError>> {
        let request = ModelRequest {
            messages: vec![Message::user("hi")].into(),
            ..ModelRequest::default()
        };
        model.stream(&request).collect().await
    }

    #[tokio::test]
    async fn each_request_tries_the_main_model_first_and_says_who_answered() {
        let main = ScriptedModel::new([overloaded(), ScriptedTurn::text("main again")]);
        let spare =
            ScriptedModel::new([ScriptedTurn::text("from the spare")]).with_model_id("spare");
        let model = FallbackModel::new(Arc::new(main.clone()), [Arc::new(spare) as Arc<dyn Model>]);

        let first = events(&model).await;
        let Some(Ok(ModelEvent::ModelFallback { from, to, reason })) = first.first() else {
            panic!("{first:?}");
        };
        assert_eq!((from.as_str(), to.as_str()), ("scripted", "spare"));
        assert!(reason.contains("overloaded"), "{reason}");
        let Some(Ok(ModelEvent::Completed(turn))) = first.last() else {
            panic!("{first:?}");
        };
        assert_eq!(turn.model.as_deref(), Some("spare"));

        let second = events(&model).await;
        let Some(Ok(ModelEvent::Completed(turn))) = second.last() else {
            panic!("{second:?}");
        };
        assert_eq!(turn.model.as_deref(), Some("scripted"));
        assert_eq!(main.requests().len(), 2);
    }

    #[tokio::test]
    async fn an_error_no_other_model_would_mend_is_returned_at_once() {
        let refused = ScriptedTurn::error(ModelError::Api {
            status: 400,
            message: "bad request".into(),
        });
        let spare = ScriptedModel::new([ScriptedTurn::text("unused")]).with_model_id("spare");
        let model = FallbackModel::new(
            Arc::new(ScriptedModel::new([refused])),
            [Arc::new(spare.clone()) as Arc<dyn Model>],
        );
        let events = events(&model).await;
        assert!(
            matches!(events[..], [Err(ModelError::Api { status: 400, .. })]),
            "{events:?}"
        );
        assert_eq!(spare.requests().len(), 0);
    }
}
