//! What the workflow and the activities pass each other: ids, positions, flags and counts,
//! never the conversation (which stays in the session store).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tool_sdk::agent::OutputSchema;
use tool_sdk::model::Usage;

use crate::parts::ToolRetries;

/// What a run takes from the worker's config, read once when it starts (and kept in the
/// workflow's history, so that a replay decides the same).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// The config's `max_turns`.
    pub max_turns: u32,
    /// Whether the config has hooks (the stop hooks are asked only then).
    pub hooks: bool,
    /// How many times stop hooks may send a run on.
    pub max_stop_continuations: u32,
    /// Whether the config manages the context window: each model turn is then preceded by
    /// [`prepare_context`](crate::AgentActivities::prepare_context). (Runs started before
    /// it existed read `false`, and compact inside the model turn, as they did.)
    #[serde(default)]
    pub manages_context: bool,
}

/// What preparing a turn's context cost.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextOutcome {
    /// The tokens of the summary's request, when it compacted.
    pub usage: Usage,
    /// The budget the summary spent, if it did: the run stops before the turn.
    pub budget: Option<BudgetStop>,
}

/// A run's prompt, to store at position `at` of its session once the prompt hooks let it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptInput {
    /// The session.
    pub session_id: String,
    /// The prompt.
    pub prompt: String,
    /// How many records the session held when the run started.
    pub at: u32,
}

/// A turn without calls, whose stop hooks are asked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StopInput {
    /// The session.
    pub session_id: String,
    /// Which model turn of the session it is (from 0).
    pub index: u32,
    /// How many times hooks sent this run on already.
    pub continued: u32,
}

/// Which model turn of a session to take: the `index`th (from 0) of the whole session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnInput {
    /// The session.
    pub session_id: String,
    /// How many model turns the session holds before this one.
    pub index: u32,
    /// The tokens the run used before this turn: what its budgets are checked against.
    #[serde(default)]
    pub run_usage: Usage,
    /// The typed answer the run asks for, if it does.
    #[serde(default)]
    pub output: Option<OutputSchema>,
    /// How many of the run's typed answers were refused before this turn.
    #[serde(default)]
    pub refused: u32,
}

/// What the workflow needs of a model turn: its calls (not their inputs), its usage, and
/// whether it spent a budget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnOutcome {
    /// The turn's calls, in order.
    pub calls: Vec<CallPlan>,
    /// The tokens the turn used.
    #[serde(default)]
    pub usage: Usage,
    /// The budget the run spent with this turn, if it did: why it stops, and what the model
    /// is told of the turn's calls, which do not run.
    #[serde(default)]
    pub budget: Option<BudgetStop>,
    /// Of a typed run: what became of the answer the turn gave; `None` when it gave none.
    #[serde(default)]
    pub answer: Option<TypedAnswer>,
}

/// What became of the typed answer a turn gave.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TypedAnswer {
    /// It was taken (checked against the schema, and unwrapped): the run is over.
    Accepted(Value),
    /// It was refused and sent back, with what is wrong with it: the model answers again.
    Refused,
    /// It was refused and no retry was left: the run ends without an answer, for this reason.
    Failed(String),
}

/// A run stopped by a budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BudgetStop {
    /// Which budget, and what was spent.
    pub reason: String,
    /// What each call of the turn is answered.
    pub not_run: String,
}

/// One call as the workflow schedules it: from what its tool declares.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallPlan {
    /// The tool_use id.
    pub id: String,
    /// The tool.
    pub name: String,
    /// Whether the tool only reads: it runs beside the turn's other read-only calls.
    pub read_only: bool,
    /// Whether the call may be run again when its worker dies: read-only or idempotent, or
    /// given retries of its own.
    pub retry: bool,
    /// Its tool's own retries, if the worker's parts give it some.
    #[serde(default)]
    pub retries: Option<ToolRetries>,
    /// How long its activity may run, in milliseconds: the tool's timeout plus
    /// [`ACTIVITY_GRACE`](crate::ACTIVITY_GRACE).
    pub timeout_ms: u64,
}

/// A call of a session, by its tool_use id.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallInput {
    /// The session.
    pub session_id: String,
    /// The tool_use id.
    pub call_id: String,
    /// The answer to the call's approval, once it was asked and answered.
    #[serde(default)]
    pub answer: Option<ApprovalAnswer>,
    /// For [`seal_call`](crate::AgentActivities::seal_call): what the model is told (default:
    /// [`WORKER_STOPPED_MESSAGE`](crate::WORKER_STOPPED_MESSAGE)).
    #[serde(default)]
    pub reason: Option<String>,
}

/// A person's answer to the approval a call waits for.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalAnswer {
    /// The tool_use id.
    pub call_id: String,
    /// Whether the call may run.
    pub allow: bool,
    /// What the model is told when it may not.
    pub message: Option<String>,
    /// Whether calls the question's suggested rule covers may run unasked for the rest of
    /// the session ("allow always").
    #[serde(default)]
    pub always: bool,
    /// Whether this answers the call's tool's question ([`tool_sdk::ToolContext::elicit`]),
    /// stored in the session by the client, rather than a permission question: it only has
    /// the call run again.
    #[serde(default)]
    pub elicitation: bool,
}

/// How a call ended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallDone {
    /// Whether its result is an error for the model.
    pub is_error: bool,
    /// Whether this attempt ran the tool (or sealed the call); `false` when the result was
    /// stored already.
    pub ran: bool,
    /// Whether the call did not run because it waits for an approval (its question stored).
    #[serde(default)]
    pub waiting: bool,
    /// From [`seal_call`](crate::AgentActivities::seal_call): the call never started (its worker
    /// died before), so nothing was sealed and it may simply run.
    #[serde(default)]
    pub not_started: bool,
}

impl CallDone {
    pub(crate) fn stored(is_error: bool) -> Self {
        CallDone {
            is_error,
            ran: false,
            waiting: false,
            not_started: false,
        }
    }
}
