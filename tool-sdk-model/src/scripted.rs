//! A model that plays back a script: for tests and offline demos.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::{
    Message, MessageContent, Model, ModelError, ModelEvent, ModelRequest, ModelResponse,
    ModelStream, StopReason, ToolInput, ToolUse, Usage,
};
use tool_sdk_core::ContentBlock;

/// One scripted assistant turn: text, tool calls, or an error.
#[derive(Clone, Debug)]
pub struct ScriptedTurn {
    content: Vec<MessageContent>,
    error: Option<ModelError>,
    /// Answers a request for a typed answer ([`ModelRequest::output`]), and fails any other.
    typed: bool,
    /// The usage reported, instead of the estimate from the text's length.
    usage: Option<Usage>,
}

impl ScriptedTurn {
    /// A turn that says `text` and stops.
    pub fn text(text: impl Into<String>) -> Self {
        ScriptedTurn {
            content: vec![MessageContent::Text { text: text.into() }],
            error: None,
            typed: false,
            usage: None,
        }
    }

    /// A typed final answer (for `agent::Agent::prompt_as`): the
    /// value as the turn's JSON text, the way OpenAI's `response_format` answers. The turn
    /// fails if the request did not ask for a typed answer ([`ModelRequest::output`]). To
    /// answer the Anthropic way instead, script a call of
    /// [`OutputFormat::TOOL_NAME`](super::OutputFormat::TOOL_NAME) with
    /// [`tool_call`](Self::tool_call).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_sdk::model::{ScriptedModel, ScriptedTurn};
    ///
    /// let model = ScriptedModel::new([ScriptedTurn::output(json!({"city": "Lisbon"}))]);
    /// # let _ = model;
    /// ```
    pub fn output(value: Value) -> Self {
        ScriptedTurn {
            content: vec![MessageContent::Text {
                text: value.to_string(),
            }],
            error: None,
            typed: true,
            usage: None,
        }
    }

    /// This turn, reporting `usage` (for tests of costs and budgets) instead of the estimate
    /// of about four characters a token.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// A turn that calls one tool.
    pub fn tool_call(name: impl Into<String>, input: Value) -> Self {
        ScriptedTurn {
            content: Vec::new(),
            error: None,
            typed: false,
            usage: None,
        }
        .with_tool_call(name, input)
    }

    /// A turn whose tool-call arguments are this raw text, as a model might garble them.
    pub fn raw_tool_call(name: impl Into<String>, raw_arguments: &str) -> Self {
        ScriptedTurn {
            content: Vec::new(),
            error: None,
            typed: false,
            usage: None,
        }
        .with_raw_tool_call(name, raw_arguments)
    }

    /// Adds a call whose arguments are this raw text (say, truncated JSON); a turn can hold
    /// any number of them.
    pub fn with_raw_tool_call(mut self, name: impl Into<String>, raw_arguments: &str) -> Self {
        let id = format!(
            "toolu_scripted_raw_{}_{}",
            self.content.len(),
            fastrand::u32(..)
        );
        self.content.push(MessageContent::ToolUse(ToolUse::from_raw(
            id,
            name,
            raw_arguments,
        )));
        self
    }

    /// A turn that calls one tool with a tool_use id of the test's choosing.
    pub fn tool_call_with_id(id: impl Into<String>, name: impl Into<String>, input: Value) -> Self {
        ScriptedTurn {
            content: Vec::new(),
            error: None,
            typed: false,
            usage: None,
        }
        .with_tool_call_id(id, name, input)
    }

    /// A turn that fails with this error.
    pub fn error(error: ModelError) -> Self {
        ScriptedTurn {
            content: Vec::new(),
            error: Some(error),
            typed: false,
            usage: None,
        }
    }

    /// Adds text before the tool calls (or after earlier text).
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.content
            .push(MessageContent::Text { text: text.into() });
        self
    }

    /// Adds one more tool call to this turn (parallel tool use).
    pub fn with_tool_call(self, name: impl Into<String>, input: Value) -> Self {
        let id = format!(
            "toolu_scripted_{}_{}",
            self.content.len(),
            fastrand::u32(..)
        );
        self.with_tool_call_id(id, name, input)
    }

    /// Adds a call with a tool_use id of the test's choosing.
    pub fn with_tool_call_id(
        mut self,
        id: impl Into<String>,
        name: impl Into<String>,
        input: Value,
    ) -> Self {
        self.content
            .push(MessageContent::ToolUse(ToolUse::new(id, name, input)));
        self
    }
}

type Responder = dyn Fn(&ModelRequest) -> ScriptedTurn + Send + Sync;

/// Plays back [`ScriptedTurn`]s in order, one per model call, and records every request.
///
/// Clones share the script and the request log: hand one clone to the agent and read the
/// requests from the other.
///
/// ```
/// use serde_json::json;
/// use tool_sdk::model::{ScriptedModel, ScriptedTurn};
///
/// let model = ScriptedModel::new([
///     ScriptedTurn::tool_call_with_id("call_1", "get_weather", json!({"city": "Lisbon"})),
///     ScriptedTurn::text("It is sunny in Lisbon."),
/// ]);
/// let for_the_agent = model.clone();
/// # let _ = for_the_agent;
/// assert_eq!(model.requests().len(), 0);
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Clone)]
pub struct ScriptedModel {
    turns: Arc<Mutex<VecDeque<ScriptedTurn>>>,
    responder: Option<Arc<Responder>>,
    requests: Arc<Mutex<Vec<ModelRequest>>>,
    id: Arc<str>,
}

impl std::fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptedModel").finish_non_exhaustive()
    }
}

impl ScriptedModel {
    /// Plays these turns, then fails every further call.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        ScriptedModel {
            turns: Arc::new(Mutex::new(turns.into_iter().collect())),
            responder: None,
            requests: Arc::default(),
            id: Arc::from("scripted"),
        }
    }

    /// Calls itself `id` (default `scripted`): for a script standing in for a model a
    /// catalog prices, or for telling two scripted models apart (a fallback's).
    pub fn with_model_id(mut self, id: impl Into<String>) -> Self {
        self.id = Arc::from(id.into());
        self
    }

    /// Answers each call with `respond(request)` once the fixed turns are used up: for demos
    /// that react to tool results.
    pub fn with_responder(
        mut self,
        respond: impl Fn(&ModelRequest) -> ScriptedTurn + Send + Sync + 'static,
    ) -> Self {
        self.responder = Some(Arc::new(respond));
        self
    }

    /// Every request received so far. Each request's [`messages`](ModelRequest::messages) is a
    /// snapshot of the conversation as it was sent, sharing its messages with the others, so
    /// keeping every request costs no copy of the history.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// How many scripted turns are left.
    pub fn remaining(&self) -> usize {
        self.turns.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    fn next_turn(&self, request: &ModelRequest) -> ScriptedTurn {
        self.requests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.clone());
        let scripted = self
            .turns
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop_front();
        match (scripted, &self.responder) {
            (Some(turn), _) => turn,
            (None, Some(respond)) => respond(request),
            (None, None) => ScriptedTurn::error(ModelError::Api {
                status: 400,
                message: "the script has no more turns".into(),
            }),
        }
    }
}

impl Model for ScriptedModel {
    fn model_id(&self) -> &str {
        &self.id
    }

    fn provider_name(&self) -> &str {
        "scripted"
    }

    fn stream<'a>(&'a self, request: &'a ModelRequest) -> ModelStream<'a> {
        let mut turn = self.next_turn(request);
        if turn.typed && request.output.is_none() {
            turn.error = Some(ModelError::Api {
                status: 400,
                message: "the script answers with a typed answer (ScriptedTurn::output), but \
                          the request asked for none: use Agent::prompt_as"
                    .into(),
            });
        }
        match turn.error {
            Some(error) => Box::pin(futures::stream::iter([Err(error)])),
            None => play(turn.content, turn.usage, request),
        }
    }
}

/// Streams a whole turn as a provider would: text word by word, each call announced, then
/// the turn with its usage (`usage`, or an estimate of about four characters a token).
#[doc(hidden)]
pub fn play<'a>(
    content: Vec<MessageContent>,
    usage: Option<Usage>,
    request: &ModelRequest,
) -> ModelStream<'a> {
    let mut events = Vec::new();
    for block in &content {
        match block {
            MessageContent::Text { text } => {
                // Word by word, as a real stream arrives.
                for piece in text.split_inclusive(' ') {
                    events.push(Ok(ModelEvent::TextDelta(piece.to_owned())));
                }
            }
            MessageContent::ToolUse(tool_use) => events.push(Ok(ModelEvent::ToolUseStarted {
                id: tool_use.id.clone(),
                name: tool_use.name.clone(),
            })),
            _ => {}
        }
    }
    let has_tools = content
        .iter()
        .any(|block| matches!(block, MessageContent::ToolUse(_)));
    let input_tokens = request
        .messages
        .iter()
        .map(|m: &Message| approximate_tokens(m))
        .sum();
    let output_tokens = content
        .iter()
        .map(|block| block_chars(block).div_ceil(4))
        .sum();
    events.push(Ok(ModelEvent::Completed(ModelResponse {
        content,
        stop_reason: if has_tools {
            StopReason::ToolUse
        } else {
            StopReason::EndTurn
        },
        usage: usage.unwrap_or(Usage {
            input_tokens,
            output_tokens,
            ..Usage::default()
        }),
        model: None,
    })));
    Box::pin(futures::stream::iter(events))
}

/// About four characters a token: enough for usage totals in demos and tests.
fn approximate_tokens(message: &Message) -> u64 {
    message
        .content
        .iter()
        .map(block_chars)
        .sum::<u64>()
        .div_ceil(4)
}

/// About the length of a block's JSON: its strings, keys and numbers, without building it
/// (escapes and the tags' exact size left out: it is an estimate, and a cheap one, since the
/// whole history is measured at every step).
fn block_chars(block: &MessageContent) -> u64 {
    const FRAME: u64 = 16;
    let chars = match block {
        MessageContent::Text { text } => return text.len() as u64,
        MessageContent::Image { media_type, data } => media_type.len() + data.len(),
        MessageContent::ToolUse(call) => {
            let input = match &call.input {
                ToolInput::Parsed(value) => json_chars(value) as usize,
                ToolInput::Malformed { raw, .. } => raw.len(),
            };
            call.id.len() + call.name.len() + input
        }
        MessageContent::ToolResult {
            tool_use_id,
            content,
            ..
        } => {
            let blocks: usize = content
                .iter()
                .map(|block| match block {
                    ContentBlock::Text { text } => text.len(),
                    ContentBlock::Image { media_type, data } => media_type.len() + data.len(),
                    other => other.readable().map_or(0, |text| text.len()),
                })
                .sum();
            tool_use_id.len() + blocks
        }
        MessageContent::Thinking {
            thinking,
            signature,
        } => thinking.len() + signature.len(),
        MessageContent::RedactedThinking { data } => data.len(),
        MessageContent::ThoughtSignature { signature, .. } => signature.len(),
        MessageContent::ProviderItem { item, .. } => json_chars(item) as usize,
    };
    chars as u64 + FRAME
}

/// About the length of a value's compact JSON.
fn json_chars(value: &Value) -> u64 {
    match value {
        Value::Null => 4,
        Value::Bool(_) => 5,
        Value::Number(number) => match number.as_u64() {
            Some(n) => u64::from(n.checked_ilog10().unwrap_or(0)) + 1,
            None => 8,
        },
        Value::String(text) => text.len() as u64 + 2,
        Value::Array(items) => 2 + items.iter().map(|item| json_chars(item) + 1).sum::<u64>(),
        Value::Object(map) => {
            2 + map
                .iter()
                .map(|(key, item)| key.len() as u64 + 4 + json_chars(item))
                .sum::<u64>()
        }
    }
}
