//! Models behind one trait: a request of messages and tool specs in, a stream of events out.
//!
//! Clients: [`anthropic::AnthropicModel`] (Messages API, SSE), [`openai::OpenAiModel`] (Chat
//! Completions, SSE; any compatible server through `base_url`), [`gemini::GeminiModel`]
//! (Gemini API `streamGenerateContent`, SSE),
//! [`openai_responses::OpenAiResponsesModel`] (OpenAI's Responses API, SSE, reasoning carried
//! across turns), [`ScriptedModel`], which
//! plays back turns for tests and offline demos, and [`TestModel`], which calls every tool it
//! is offered with arguments made up from their schemas.
//!
//! Everything but [`TestModel`] is the crate `tool-sdk-model`, re-exported here: it builds
//! beside the rest of the SDK.

mod sample;
mod test_model;

pub use test_model::TestModel;
pub use tool_sdk_model::*;
