//! A model that calls every tool it is offered with made-up, schema-valid arguments: for
//! testing an app's tools through the agent loop without writing a script.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use super::sample::Sampler;
use super::{MessageContent, Model, ModelError, ModelRequest, ModelStream, OutputFormat, ToolUse};
use crate::tool::ContentBlock;
use tool_sdk_model::__private::play;

/// Which of the offered tools the first turn calls.
#[derive(Clone, Debug)]
enum Calls {
    All,
    Only(Vec<String>),
}

/// Calls the tools it is offered with arguments made up from their input schemas, then
/// answers: Pydantic AI's `TestModel`, for unit tests of an app's tools through the loop.
///
/// To a new prompt it calls every tool of the request (or those named with
/// [`calling`](Self::calling), or none), all in one turn, each with arguments valid against
/// the tool's schema: required and optional properties, enums and `const`, one branch of a
/// `oneOf`/`anyOf`, nested objects and arrays within `minItems`/`maxItems`, strings within
/// their lengths, matching their `pattern` and in the common formats (`date-time`, `uri`,
/// `email`...), numbers within their bounds and steps, `$ref`s into `$defs` as schemars emits
/// them, and `null` for `Option`s now and then. Once the results are back it answers with a JSON object of each
/// tool's name and result text (or [`with_text`](Self::with_text)'s text). Asked for a typed
/// answer ([`Agent::prompt_as`](crate::agent::Agent::prompt_as)), it calls
/// [`OutputFormat::TOOL_NAME`] with a value made up from the answer's schema instead.
///
/// The same [`seed`](Self::with_seed) gives the same arguments. Clones share the request
/// log, as [`ScriptedModel`](super::ScriptedModel)'s do.
///
/// ```
/// use std::sync::Arc;
/// use tool_sdk::agent::{Agent, AgentConfig};
/// use tool_sdk::model::TestModel;
/// use tool_sdk::{JsonSchema, ToolRegistry, schemars, tool};
///
/// /// A review.
/// #[derive(serde::Deserialize, JsonSchema)]
/// struct Review {
///     /// How many stars.
///     #[schemars(range(min = 1, max = 5))]
///     stars: u8,
///     comment: Option<String>,
/// }
///
/// /// Rates something.
/// #[tool(register = false, read_only)]
/// async fn rate(#[input] review: Review) -> String {
///     assert!((1..=5).contains(&review.stars));
///     format!("{} stars", review.stars)
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let registry = ToolRegistry::new();
/// registry.register(Arc::new(RateTool)).unwrap();
/// let model = TestModel::new().with_seed(7);
/// let agent = Agent::create(
///     AgentConfig::new()
///         .with_model(model.clone())
///         .with_registry(Arc::new(registry)),
/// )
/// .await
/// .unwrap();
/// let result = agent.prompt("Rate it").await.unwrap();
/// assert!(result.errors.is_empty(), "{:?}", result.errors);
/// assert!(result.text.starts_with(r#"{"rate":""#), "{}", result.text);
/// assert_eq!(model.requests()[0].tools[0].name, "rate");
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct TestModel {
    calls: Calls,
    seed: u64,
    text: Option<String>,
    arguments: HashMap<String, Value>,
    output: Option<Value>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
}

impl Default for TestModel {
    fn default() -> Self {
        Self::new()
    }
}

impl TestModel {
    /// A model that calls every tool offered, with seed 0.
    pub fn new() -> Self {
        TestModel {
            calls: Calls::All,
            seed: 0,
            text: None,
            arguments: HashMap::new(),
            output: None,
            requests: Arc::default(),
        }
    }

    /// Calls only these tools (an empty list: none). A name the request does not offer
    /// fails the turn, naming the tools that were offered.
    pub fn calling<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.calls = Calls::Only(names.into_iter().map(Into::into).collect());
        self
    }

    /// Calls no tool: answers at once.
    pub fn calling_none(self) -> Self {
        self.calling(Vec::<String>::new())
    }

    /// Makes arguments from this seed: the same seed and request, the same arguments.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Answers with this text once the tools have run, instead of their results as JSON.
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Calls `tool` with these arguments instead of made-up ones (for a schema whose
    /// `pattern` no made-up string matches, or a case worth pinning).
    pub fn with_arguments(mut self, tool: impl Into<String>, arguments: Value) -> Self {
        self.arguments.insert(tool.into(), arguments);
        self
    }

    /// Gives this typed answer instead of one made up from its schema.
    pub fn with_output(mut self, answer: Value) -> Self {
        self.output = Some(answer);
        self
    }

    /// Every request received so far, as [`ScriptedModel::requests`](super::ScriptedModel::requests).
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A value valid against `schema` (a whole schema document: its `$ref`s point into it),
    /// made from this model's seed; or why none can be made.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_sdk::model::TestModel;
    ///
    /// let schema = json!({"type": "integer", "minimum": 10, "maximum": 12});
    /// let value = TestModel::new().with_seed(3).sample(&schema).unwrap();
    /// assert!((10..=12).contains(&value.as_i64().unwrap()));
    /// ```
    pub fn sample(&self, schema: &Value) -> Result<Value, String> {
        sample(schema, self.seed)
    }

    fn turn(&self, request: &ModelRequest) -> Result<Vec<MessageContent>, ModelError> {
        // The results of this model's calls are back (or a typed answer was refused).
        let answered = request.messages.last().is_some_and(|message| {
            message
                .content
                .iter()
                .any(|block| matches!(block, MessageContent::ToolResult { .. }))
        });
        // Each turn of the conversation draws other values; the same turn, the same ones.
        let turn = request.messages.len() as u64;
        if !answered {
            let calls = self.calls(request, turn)?;
            if !calls.is_empty() {
                return Ok(calls);
            }
        }
        if let Some(format) = &request.output {
            let answer = match &self.output {
                Some(answer) => answer.clone(),
                None => self.arguments_for(OutputFormat::TOOL_NAME, &format.schema, turn)?,
            };
            return Ok(vec![MessageContent::ToolUse(ToolUse::new(
                format!("toolu_test_{turn}_answer"),
                OutputFormat::TOOL_NAME,
                answer,
            ))]);
        }
        let text = match &self.text {
            Some(text) => text.clone(),
            None => summary(request),
        };
        Ok(vec![MessageContent::Text { text }])
    }

    fn calls(&self, request: &ModelRequest, turn: u64) -> Result<Vec<MessageContent>, ModelError> {
        let chosen: Vec<_> = match &self.calls {
            Calls::All => request.tools.iter().collect(),
            Calls::Only(names) => names
                .iter()
                .map(|name| {
                    request
                        .tools
                        .iter()
                        .find(|spec| &spec.name == name)
                        .ok_or_else(|| {
                            let offered: Vec<&str> =
                                request.tools.iter().map(|s| s.name.as_str()).collect();
                            refusal(format!(
                                "TestModel was told to call `{name}`, but the request offers \
                                 no tool of that name (offered: {})",
                                if offered.is_empty() {
                                    "none".to_owned()
                                } else {
                                    offered.join(", ")
                                }
                            ))
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        chosen
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                let input = match self.arguments.get(&spec.name) {
                    Some(input) => input.clone(),
                    None => self.arguments_for(&spec.name, &spec.input_schema, turn)?,
                };
                Ok(MessageContent::ToolUse(ToolUse::new(
                    format!("toolu_test_{turn}_{index}"),
                    &spec.name,
                    input,
                )))
            })
            .collect()
    }

    fn arguments_for(&self, tool: &str, schema: &Value, turn: u64) -> Result<Value, ModelError> {
        sample(schema, self.seed ^ fnv(tool) ^ turn.rotate_left(32)).map_err(|why| {
            refusal(format!(
                "TestModel cannot make up arguments for `{tool}`: {why}"
            ))
        })
    }
}

impl Model for TestModel {
    fn model_id(&self) -> &str {
        "test"
    }

    fn provider_name(&self) -> &str {
        "test"
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.clone());
        match self.turn(request) {
            Ok(content) => play(content, None, request),
            Err(error) => Box::pin(futures::stream::iter([Err(error)])),
        }
    }
}

/// How many values are tried before the sampler's guesses are given up on: `oneOf`
/// branches that overlap, `not`, `uniqueItems` and the like are settled by drawing again.
const ATTEMPTS: usize = 32;

/// A value for `schema` drawn from `seed`, checked with the validator tool inputs get.
fn sample(schema: &Value, seed: u64) -> Result<Value, String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let validator = {
        let mut builder = jsonschema::options().offline();
        if schema.get("$schema").is_none() {
            builder = builder.with_draft(jsonschema::Draft::Draft202012);
        }
        builder
            .build(schema)
            .map_err(|error| format!("the schema is not usable: {error}"))?
    };
    let mut last = String::new();
    for _ in 0..ATTEMPTS {
        let value = Sampler::new(schema, &mut rng).sample()?;
        match validator.validate(&value) {
            Ok(()) => return Ok(value),
            Err(error) => last = format!("{value} is not valid: {error}"),
        }
    }
    Err(format!(
        "no value made up in {ATTEMPTS} tries fits the schema (the last: {last})"
    ))
}

/// The last message's tool results as `{"tool name": "result text"}`, as Pydantic's
/// `TestModel` answers.
fn summary(request: &ModelRequest) -> String {
    let Some(last) = request.messages.last() else {
        return "success (no tool calls)".into();
    };
    let names: HashMap<&str, &str> = request
        .messages
        .iter()
        .flat_map(|message| message.tool_uses())
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let mut results = Map::new();
    for block in &last.content {
        if let MessageContent::ToolResult {
            tool_use_id,
            content,
            ..
        } = block
        {
            let text: String = content.iter().filter_map(ContentBlock::readable).collect();
            let name = names.get(tool_use_id.as_str()).unwrap_or(&"unknown tool");
            results.insert((*name).to_owned(), Value::String(text));
        }
    }
    if results.is_empty() {
        "success (no tool calls)".into()
    } else {
        Value::Object(results).to_string()
    }
}

fn refusal(message: String) -> ModelError {
    ModelError::Api {
        status: 400,
        message,
    }
}

/// FNV-1a: a hash that stays the same across runs and Rust versions, so seeds do too.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
