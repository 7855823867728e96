//! Agents as durable [Temporal](https://temporal.io) workflows: a run outlives the process that
//! started it, and any worker of a pool goes on with it when the one running it dies.
//!
//! The agent loop is the workflow ([`AgentWorkflow`]); each model turn and each tool call is an
//! activity, run by whichever [`AgentWorker`] polls the task queue. A [`AgentClient`] starts a
//! run and awaits its result from any process.
//!
//! **What runs where.** The conversation lives in a [`SessionStore`](tool_sdk::session::SessionStore)
//! that every worker and the client share (a PostgreSQL database across machines, an SQLite
//! file on one): it is a `tool_sdk` session like any other, so listing, `--resume` and fork
//! keep working. The workflow carries only ids and counts; each activity reads the
//! conversation from the store by session id and position and appends what it adds, so the
//! workflow's history grows with the number of steps, not with the square of the
//! conversation.
//!
//! **Retries from what a tool declares.** A read-only tool, or one annotated
//! `idempotent`, is run again by another worker when the worker running it dies, and its new
//! result is used. Any other tool is run at most once: when its worker died, the model gets
//! [`WORKER_STOPPED_MESSAGE`], as a resumed SQLite session says of a call its process left
//! open. A dead worker is noticed by its missing heartbeats ([`RunOptions::heartbeat_timeout`]).
//! A tool's timeout (its own, or the worker's default) bounds its activity too.
//!
//! ```no_run
//! use std::sync::Arc;
//! use tool_sdk::model::anthropic::AnthropicModel;
//! use tool_sdk::session::SqliteStore;
//! use tool_sdk::ToolRegistry;
//! use tool_sdk_temporal::{AgentClient, AgentParts, AgentWorker, RunOptions};
//!
//! // In each worker process (any number, on any host that reaches the server and the store).
//! async fn worker_main() -> Result<(), Box<dyn std::error::Error>> {
//!     let parts = AgentParts::new(
//!         Arc::new(AnthropicModel::from_env("claude-sonnet-4-5")?),
//!         Arc::new(ToolRegistry::from_inventory()?),
//!         Arc::new(SqliteStore::open("sessions.db")?),
//!     );
//!     let worker = AgentWorker::connect("127.0.0.1:7233", "agents", parts).await?;
//!     worker.run().await?;
//!     Ok(())
//! }
//!
//! // Anywhere: start a run and await it.
//! async fn ask() -> Result<(), Box<dyn std::error::Error>> {
//!     let store = Arc::new(SqliteStore::open("sessions.db")?);
//!     let client = AgentClient::connect("127.0.0.1:7233", "agents", store).await?;
//!     let run = client.start("Summarise README.md", RunOptions::default()).await?;
//!     let outcome = run.result().await?;
//!     println!("{}", outcome.text);
//!     Ok(())
//! }
//! ```
//!
//! **Approvals, cancellation, long runs.** A call the config's permission mode and rules
//! would ask about ([`AgentParts::permissions`]) waits in the server,
//! holding no process, until [`RunHandle::answer_approval`]; its question is in the session,
//! where [`AgentClient::pending_approvals`] finds it. [`RunHandle::cancel`] cancels the
//! running tool's `CancellationToken`. A run continues as a new workflow run every
//! [`RunOptions::continue_after`] turns, or when the server suggests it.
//!
//! **The same `AgentConfig`.** [`AgentParts::from_config`] takes the config an in-process
//! agent is made of: tools by name, permission mode and rules, hooks, limits and budgets, the
//! context window, sub-agents, MCP servers; what runs where is listed on [`AgentParts`].
//! A typed answer too: [`AgentClient::start_as`] asks for one of `T`'s schema, refused and
//! sent back as `Agent::prompt_as` does, and [`RunHandle::output`] returns it as `T`.
//!
//! **Watching a run.** [`RunHandle::events`] streams what a run stores (turns, calls,
//! questions) and, while an activity runs, what its heartbeats carry: the model's text and
//! thinking as they stream ([`RunEvent::TextDelta`], [`RunEvent::ThinkingDelta`]) and a
//! tool's progress ([`RunEvent::ToolProgress`]). The workers pace those heartbeats (news at
//! most every 150 ms), and they never enter the workflow's history.

// Temporal's macros make an undocumented associated constant of each activity and of the
// workflow's run method (what a workflow or a client names them by): the methods have docs.
#[allow(missing_docs)]
mod activities;
mod client;
mod error;
mod events;
mod live;
mod parts;
mod payloads;
mod questions;
mod records;
mod worker;
#[allow(missing_docs)]
mod workflow;

pub use activities::{
    AgentActivities, ApprovalAnswer, BudgetStop, CallDone, CallInput, CallPlan, ContextOutcome,
    PromptInput, RunSettings, StopInput, TurnInput, TurnOutcome, TypedAnswer,
};
pub use client::{AgentClient, RunHandle, RunInfo, RunOutcome, RunStatus};
pub use error::TemporalError;
pub use events::RunEvent;
pub use parts::{ACTIVITY_GRACE, AgentParts, RunOptions, ToolRetries};
pub use worker::AgentWorker;
pub use workflow::{AgentWorkflow, RunInput, RunSummary, WORKER_STOPPED_MESSAGE, WORKFLOW_TYPE};
