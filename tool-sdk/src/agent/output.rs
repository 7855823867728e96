//! Typed final answers: [`Agent::prompt_as`](super::Agent::prompt_as) and
//! [`Agent::prompt_as_stream`](super::Agent::prompt_as_stream).
//!
//! The run asks the model for an answer of `T`'s JSON Schema ([`ModelRequest::output`](crate::model::ModelRequest::output); each
//! client asks in its provider's own way), takes the answer from a call of the output tool or
//! from the final text, and checks it with the validator tool inputs get (and by
//! deserializing `T`). An answer that fails goes back to the model with the AJV-style list of
//! what is wrong, up to [`Limits::max_output_retries`](super::Limits::max_output_retries) times; then the run fails with
//! [`AgentError::OutputInvalid`]. Where a turn gives its answer, whether a refused one goes
//! back or fails the run, and what each output call is answered are decided in `step.rs`;
//! this file checks the answer against the schema and carries the decisions out.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::{AgentError, ConfigError};
use super::events::{AgentEvent, AgentRun, Emit, RunResult};
use super::inner::AgentInner;
use super::step::{self, Answer, OutputResult, Recorded, Refusal};
use crate::ContentBlock;
use crate::model::{History, Message, MessageContent, OutputFormat, Role, ToolUse};
use crate::schema::{root_object_error, schema_for};
use crate::session::{Record, push_user_message_to};
use crate::validate::ValidationOptions;
use crate::validate::{InputErrors, InputIssue, InputValidator};

/// The property a non-object answer is wrapped in: providers want an object at the root.
const WRAPPED: &str = "value";

/// What a run that wants a typed answer checks it with.
pub(crate) struct OutputSpec {
    pub(crate) format: OutputFormat,
    validator: InputValidator,
    /// Whether `T`'s schema was wrapped in `{"value": ...}`.
    wrapped: bool,
    /// Deserializes the answer as `T`, to catch what the schema cannot say.
    accepts: fn(&Value) -> Result<(), String>,
}

impl OutputSpec {
    /// The spec of `T`, its validator compiled with the agent's validation options.
    pub(crate) fn of<T: JsonSchema + DeserializeOwned>(
        options: ValidationOptions,
    ) -> Result<Self, AgentError> {
        Self::from_schema(&OutputSchema::of::<T>(), options, |value| {
            T::deserialize(value)
                .map(|_| ())
                .map_err(|error| error.to_string())
        })
        .map_err(|source| {
            ConfigError::OutputSchema {
                type_name: std::any::type_name::<T>(),
                source,
            }
            .into()
        })
    }

    /// The spec of a schema made elsewhere; `accepts` checks what the schema cannot say.
    fn from_schema(
        schema: &OutputSchema,
        options: ValidationOptions,
        accepts: fn(&Value) -> Result<(), String>,
    ) -> Result<Self, crate::validate::SchemaError> {
        Ok(OutputSpec {
            format: schema.format(),
            validator: InputValidator::new(&schema.schema, options)?,
            wrapped: schema.wrapped,
            accepts,
        })
    }

    /// The answer in `value`, checked (and coerced, where the options allow), unwrapped.
    fn check(&self, value: Value) -> Result<Value, InputErrors> {
        let mut value = self.validator.check(value)?;
        if self.wrapped {
            value = value
                .as_object_mut()
                .and_then(|object| object.remove(WRAPPED))
                .unwrap_or(Value::Null);
        }
        (self.accepts)(&value).map_err(|error| issue(format!("does not deserialize: {error}")))?;
        Ok(value)
    }

    /// The answer in an output call's input.
    fn check_call(&self, call: &ToolUse) -> Result<Value, InputErrors> {
        match call.input.parsed() {
            Some(input) => self.check(input.clone()),
            None => Err(issue(format!(
                "must be a JSON object, but it is not: {}",
                call.input.malformed().unwrap_or_default()
            ))),
        }
    }

    /// The answer in a turn's text: JSON, maybe in a Markdown code fence.
    fn check_text(&self, text: &str) -> Result<Value, InputErrors> {
        let text = text.trim();
        let text = text
            .strip_prefix("```json")
            .or_else(|| text.strip_prefix("```"))
            .and_then(|rest| rest.strip_suffix("```"))
            .unwrap_or(text);
        let value = serde_json::from_str(text)
            .map_err(|error| issue(format!("must be JSON text, but it is not: {error}")))?;
        // The schema sent has the wrapper; an answer given bare is taken too.
        match (self.wrapped, &value) {
            (true, Value::Object(object)) if object.contains_key(WRAPPED) => self.check(value),
            (true, _) => self.check(json!({ WRAPPED: value })),
            (false, _) => self.check(value),
        }
    }
}

/// A typed answer's shape, as a driver that runs the loop elsewhere carries it (it
/// serializes): made by [`OutputSchema::of`] where the answer's type is known (the client),
/// checked by [`AgentEffects::judge_output`](super::AgentEffects::judge_output) where it is
/// not (a worker), as [`Agent::prompt_as`](super::Agent::prompt_as) checks it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputSchema {
    /// The shape's name (the type's schema name).
    pub name: String,
    /// The JSON Schema the model is asked for; its root is an object.
    pub schema: Value,
    /// Whether the type's own schema is wrapped in `{"value": ...}` (providers want an
    /// object at the root): the answer is the wrapper's `value`.
    pub wrapped: bool,
}

impl OutputSchema {
    /// The shape of `T`, as `prompt_as::<T>` asks for it.
    pub fn of<T: JsonSchema>() -> Self {
        let mut schema = schema_for::<T>();
        let wrapped = root_object_error(&schema).is_some();
        if wrapped {
            schema = wrap(schema);
        }
        OutputSchema {
            name: T::schema_name().into_owned(),
            schema,
            wrapped,
        }
    }

    /// The format a request asks for the answer with.
    pub fn format(&self) -> OutputFormat {
        OutputFormat::new(&self.name, self.schema.clone())
    }
}

/// What a turn's typed answer comes to
/// ([`AgentEffects::judge_output`](super::AgentEffects::judge_output)).
#[derive(Clone, Debug)]
pub struct OutputVerdict {
    /// What the run does next.
    pub next: OutputNext,
    /// The records that answer the turn's output calls, or send a refused answer in its text
    /// back: to store after the turn, before anything else.
    pub records: Vec<Record>,
}

/// What a run that wants a typed answer does after a turn.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum OutputNext {
    /// The answer was taken (checked, and unwrapped): the run is over.
    Accepted(Value),
    /// The answer was refused and goes back to the model (in `records`), which answers again.
    Retry(InputErrors),
    /// The answer was refused and no retry is left: the run fails with this error.
    Failed(AgentError),
    /// No answer in this turn: the turn's calls with these ids run (its output calls made
    /// beside them are answered in `records`), and the answer is asked for after them.
    RunCalls(Vec<String>),
}

/// What the answer of `turn` comes to, after `refused` refused ones, checked with `spec`:
/// the decisions and the texts of [`AgentInner::take_output`].
fn judge(spec: &OutputSpec, turn: &Message, refused: u32, max_retries: u32) -> OutputVerdict {
    let (answers, others): (Vec<&ToolUse>, Vec<&ToolUse>) = turn
        .tool_uses()
        .partition(|call| call.name == OutputFormat::TOOL_NAME);
    let other_ids = || others.iter().map(|call| call.id.clone()).collect();
    let answer = step::find_answer(answers.len(), others.len());
    let checked = match (answer, answers.first()) {
        (Answer::NotYet, _) => {
            let next = OutputNext::RunCalls(other_ids());
            return OutputVerdict {
                next,
                records: Vec::new(),
            };
        }
        (Answer::TooSoon, _) => {
            let records = answers.iter().enumerate().map(|(index, call)| {
                let result = step::output_result(index, false, false);
                Record::ToolResult {
                    block: output_block(call, result, None),
                }
            });
            return OutputVerdict {
                next: OutputNext::RunCalls(other_ids()),
                records: records.collect(),
            };
        }
        (Answer::OutputCall, Some(call)) => spec.check_call(call),
        (Answer::Text | Answer::OutputCall, _) => spec.check_text(&turn.text()),
    };
    let accepted = checked.is_ok();
    let (next, reply) = match checked {
        Ok(value) => (OutputNext::Accepted(value), None),
        Err(errors) => match step::refuse_answer(refused + 1, max_retries) {
            Refusal::Fail => {
                let attempts = refused + 1;
                let error = AgentError::OutputInvalid { attempts, errors };
                (OutputNext::Failed(error), None)
            }
            Refusal::Retry => {
                let reply = refusal(&errors, answer == Answer::Text);
                (OutputNext::Retry(errors), Some(reply))
            }
        },
    };
    let records = match (answer, reply) {
        (Answer::OutputCall, reply) => answers
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let result = step::output_result(index, true, accepted);
                Record::ToolResult {
                    block: output_block(call, result, reply.as_deref()),
                }
            })
            .collect(),
        (_, Some(reply)) => vec![Record::user(Message::user(reply))],
        (_, None) => Vec::new(),
    };
    OutputVerdict { next, records }
}

/// What the answer of `turn` comes to, checked against `schema` only (whoever knows its type
/// deserializes it), `options` as the agent validates: [`judge`], for
/// [`AgentEffects::judge_output`](super::AgentEffects::judge_output).
pub(crate) fn judge_schema(
    schema: &OutputSchema,
    options: ValidationOptions,
    turn: &Message,
    refused: u32,
    max_retries: u32,
) -> Result<OutputVerdict, AgentError> {
    let spec = OutputSpec::from_schema(schema, options, |_| Ok(())).map_err(|source| {
        ConfigError::OutputSchema {
            type_name: "(the run's typed answer)",
            source,
        }
    })?;
    Ok(judge(&spec, turn, refused, max_retries))
}

/// `{"value": schema}`, the definitions moved to the new root so that `$ref`s still resolve.
fn wrap(mut schema: Value) -> Value {
    let mut root = serde_json::Map::new();
    if let Value::Object(inner) = &mut schema {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(moved) = inner.remove(key) {
                root.insert(key.into(), moved);
            }
        }
    }
    root.insert("type".into(), "object".into());
    root.insert("properties".into(), json!({ WRAPPED: schema }));
    root.insert("required".into(), json!([WRAPPED]));
    root.insert("additionalProperties".into(), false.into());
    Value::Object(root)
}

fn issue(message: String) -> InputErrors {
    InputErrors::new(vec![InputIssue {
        path: "/".into(),
        message,
    }])
}

/// What the run does after a turn, when it wants a typed answer.
pub(crate) enum OutputStep {
    /// The answer was taken: the run is over.
    Accepted,
    /// The answer was refused and sent back: ask the model again.
    Retry,
    /// No answer in this turn: run these calls; `answered` holds the results already given
    /// (to an output call made beside them).
    Run {
        calls: Vec<ToolUse>,
        answered: HashMap<String, MessageContent>,
    },
}

impl AgentInner {
    /// Looks for the typed answer in a turn just taken (already in `messages`) and answers
    /// it: accepted, refused with the list of its problems (counted in `refused`), or not
    /// given yet. Where the answer is and what follows are [`step`]'s to say.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn take_output(
        &self,
        spec: &OutputSpec,
        calls: &[&ToolUse],
        text: &str,
        refused: &mut u32,
        messages: &mut History,
        result: &mut RunResult,
        emit: &Emit,
    ) -> Result<OutputStep, AgentError> {
        let (answers, others): (Vec<ToolUse>, Vec<ToolUse>) = calls
            .iter()
            .map(|call| (*call).clone())
            .partition(|call| call.name == OutputFormat::TOOL_NAME);
        let answer = step::find_answer(answers.len(), others.len());
        let checked = match (answer, answers.first()) {
            (Answer::NotYet, _) => {
                return Ok(OutputStep::Run {
                    calls: others,
                    answered: HashMap::new(),
                });
            }
            (Answer::TooSoon, _) => return self.answer_later(&answers, calls).await,
            (Answer::OutputCall, Some(call)) => spec.check_call(call),
            (Answer::Text | Answer::OutputCall, _) => spec.check_text(text),
        };
        let accepted = checked.is_ok();
        let mut reply = None;
        let outcome = match checked {
            Ok(value) => {
                result.output = Some(value);
                Ok(OutputStep::Accepted)
            }
            Err(errors) => {
                *refused += 1;
                emit(AgentEvent::OutputRejected {
                    attempt: *refused,
                    errors: errors.clone(),
                });
                match step::refuse_answer(*refused, self.config.limits.max_output_retries) {
                    Refusal::Fail => Err(AgentError::OutputInvalid {
                        attempts: *refused,
                        errors,
                    }),
                    Refusal::Retry => {
                        reply = Some(refusal(&errors, answer == Answer::Text));
                        Ok(OutputStep::Retry)
                    }
                }
            }
        };
        // An answer given in calls is answered in their results, one given in text by a
        // message when it goes back.
        if answer == Answer::OutputCall {
            self.answer_outputs(&answers, accepted, reply.as_deref(), messages)
                .await?;
        } else if let Some(message) = reply {
            let message = Message::user(message);
            self.recorder
                .write(Recorded::Prompt, || Record::user(message.clone()))
                .await?;
            push_user_message_to(messages, message);
        }
        outcome
    }

    /// The answer came beside other calls: the output calls are answered (and stored) with
    /// the rule, and the other calls run; the answer is asked for again after them.
    async fn answer_later(
        &self,
        answers: &[ToolUse],
        calls: &[&ToolUse],
    ) -> Result<OutputStep, AgentError> {
        let mut answered = HashMap::new();
        for (index, call) in answers.iter().enumerate() {
            let block = output_block(call, step::output_result(index, false, false), None);
            self.recorder
                .write(Recorded::Result, || Record::ToolResult {
                    block: block.clone(),
                })
                .await?;
            answered.insert(call.id.clone(), block);
        }
        Ok(OutputStep::Run {
            calls: calls.iter().map(|call| (*call).clone()).collect(),
            answered,
        })
    }

    /// Answers (and stores) every output call of a turn that made no other call, as
    /// [`step::output_result`] says: `accepted` or not, refused with `refusal` when the
    /// answer goes back to the model.
    async fn answer_outputs(
        &self,
        answers: &[ToolUse],
        accepted: bool,
        refusal: Option<&str>,
        messages: &mut History,
    ) -> Result<(), AgentError> {
        let mut content = Vec::new();
        for (index, call) in answers.iter().enumerate() {
            let block = output_block(call, step::output_result(index, true, accepted), refusal);
            self.recorder
                .write(Recorded::Result, || Record::ToolResult {
                    block: block.clone(),
                })
                .await?;
            content.push(block);
        }
        messages.push(Message {
            role: Role::User,
            content,
        });
        Ok(())
    }
}

/// What a refused answer is sent back with: what is wrong, and how to answer again (in the
/// text, or by calling the output tool again).
fn refusal(errors: &InputErrors, in_text: bool) -> String {
    format!(
        "Your final answer does not match the required schema:\n{errors}\n{}",
        match in_text {
            true => "Answer again with only the corrected JSON.".to_owned(),
            false => format!(
                "Call `{}` again with the corrected answer.",
                OutputFormat::TOOL_NAME
            ),
        }
    )
}

/// The result block of the output call `call`, saying what [`OutputResult`] it got
/// (`refusal`: what a refused answer is sent back with, when it is).
fn output_block(call: &ToolUse, result: OutputResult, refusal: Option<&str>) -> MessageContent {
    let text = match result {
        OutputResult::Received => "The answer was received.".to_owned(),
        OutputResult::Refused => refusal
            .unwrap_or("The answer was refused; the run stopped.")
            .to_owned(),
        OutputResult::NotCounted => "Only the first answer counts.".to_owned(),
        OutputResult::CallAlone => format!(
            "`{}` must be called alone, once the other tools' results are in: call it again \
             then.",
            OutputFormat::TOOL_NAME
        ),
    };
    MessageContent::ToolResult {
        tool_use_id: call.id.clone(),
        content: vec![ContentBlock::Text { text }],
        is_error: result.is_error(),
    }
}

impl RunResult {
    /// The typed answer of a run started with [`Agent::prompt_as_stream`](super::Agent::prompt_as_stream) (or
    /// [`prompt_as`](super::Agent::prompt_as)), as `T`: the run's error if it failed.
    pub fn output_as<T: DeserializeOwned>(&self) -> Result<T, AgentError> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let Some(value) = &self.output else {
            return Err(AgentError::NoTypedAnswer);
        };
        T::deserialize(value).map_err(|error| AgentError::AnswerType {
            type_name: std::any::type_name::<T>(),
            source: error.into(),
        })
    }
}

/// A run that ends with a typed answer ([`Agent::prompt_as_stream`](super::Agent::prompt_as_stream)): a stream of
/// [`AgentEvent`]s, as [`AgentRun`], whose [`Finished`](AgentEvent::Finished) result holds the
/// answer ([`RunResult::output_as`]); or [`output`](Self::output) to wait for it.
pub struct TypedRun<T> {
    run: AgentRun,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for TypedRun<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedRun").field("run", &self.run).finish()
    }
}

impl<T: DeserializeOwned> TypedRun<T> {
    pub(crate) fn new(run: AgentRun) -> Self {
        TypedRun {
            run,
            _type: PhantomData,
        }
    }

    /// Stops the run (see [`AgentRun::cancel`]).
    pub fn cancel(&self) {
        self.run.cancel();
    }

    /// Drains the events (refusing permission requests, as [`AgentRun::result`]) and returns
    /// the answer.
    pub async fn output(self) -> Result<T, AgentError> {
        self.run.result().await.output_as()
    }
}

impl<T> Stream for TypedRun<T> {
    type Item = AgentEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentEvent>> {
        Pin::new(&mut self.run).poll_next(cx)
    }
}
