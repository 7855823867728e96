use std::sync::Arc;

use serde::{Deserialize, Serialize};

use tool_sdk_core::{BoxFuture, ToolContext, ToolError, tool};

/// One option of a question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionOption {
    /// What the user picks (1-5 words).
    pub label: String,
    /// What choosing it means.
    pub description: String,
}

/// One question for the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// The full question, ending with a question mark.
    pub question: String,
    /// A very short label for it (at most 12 characters), such as "Auth method".
    pub header: String,
    /// Two to four options. The user can always answer in their own words instead.
    #[schemars(length(min = 2, max = 4))]
    pub options: Vec<QuestionOption>,
    /// Whether several options may be chosen.
    #[serde(rename = "multiSelect", default)]
    pub multi_select: bool,
}

/// The user's answer to one question.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Answer {
    /// The question answered.
    pub question: String,
    /// The chosen labels, or the user's own words.
    pub answer: Vec<String>,
}

/// Asks the user questions on behalf of the model; the app supplies it with
/// `AgentConfig::with_question_handler`.
pub trait QuestionHandler: Send + Sync + 'static {
    /// Asks and waits for the answers, one per question. `Err` is a refusal, said to the model.
    fn ask(&self, questions: Vec<Question>) -> BoxFuture<'_, Result<Vec<Answer>, String>>;
}

impl<F> QuestionHandler for F
where
    F: Fn(Vec<Question>) -> Result<Vec<Answer>, String> + Send + Sync + 'static,
{
    fn ask(&self, questions: Vec<Question>) -> BoxFuture<'_, Result<Vec<Answer>, String>> {
        Box::pin(std::future::ready(self(questions)))
    }
}

/// The app's question handler, as app state.
#[derive(Clone)]
pub struct UserQuestions(Arc<dyn QuestionHandler>);

impl UserQuestions {
    /// Wraps a handler.
    pub fn new(handler: impl QuestionHandler) -> Self {
        UserQuestions(Arc::new(handler))
    }
}

impl std::fmt::Debug for UserQuestions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UserQuestions")
    }
}

/// Asks the user one to four multiple-choice questions and waits for the answers. Use it when
/// you need the user's preference or a decision you cannot make yourself: which approach,
/// which library, what to name something, whether an assumption holds. Do not use it to ask
/// for permission to run tools, or for things you can find out yourself.
// `read_only`: asking changes nothing, and needs no permission of its own.
#[tool(
    name = "AskUserQuestion",
    acts_on(agent_state),
    category = "builtin",
    read_only,
    title = "Ask the user"
)]
pub async fn ask_user_question(
    /// The questions, one to four.
    questions: Vec<Question>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    if !(1..=4).contains(&questions.len()) {
        return Err(ToolError::invalid_input(format!(
            "ask one to four questions, not {}",
            questions.len()
        )));
    }
    for question in &questions {
        if !(2..=4).contains(&question.options.len()) {
            return Err(ToolError::invalid_input(format!(
                "question {:?} needs two to four options, not {}",
                question.question,
                question.options.len()
            )));
        }
    }
    let handler = ctx.state::<UserQuestions>().ok_or_else(|| {
        ToolError::failed(
            "no one can answer questions here: the app running this agent has no question \
             handler. Make a reasonable assumption, say which, and carry on",
        )
    })?;
    let answers = handler
        .0
        .ask(questions)
        .await
        .map_err(|reason| ToolError::failed(format!("the user did not answer: {reason}")))?;
    let lines: Vec<String> = answers
        .iter()
        .map(|answer| format!("\"{}\" = \"{}\"", answer.question, answer.answer.join(", ")))
        .collect();
    Ok(format!(
        "The user answered: {}. Continue with these answers in mind.",
        lines.join("; ")
    ))
}
