//! What can go wrong between an app, the Temporal server and the session store.

use tool_sdk::agent::AgentError;
use tool_sdk::session::SessionError;

/// An error of a worker or a client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TemporalError {
    /// The server's address is not one (`host:port`, or a URL).
    #[error("`{address}` is not a Temporal server address: {reason}")]
    Address {
        /// The address given.
        address: String,
        /// Why it is not one.
        reason: String,
    },
    /// The server could not be reached, or refused the worker or the client.
    #[error("cannot connect to the Temporal server at {address}: {reason}")]
    Connect {
        /// The address given.
        address: String,
        /// What the SDK said.
        reason: String,
    },
    /// The worker could not be made or stopped with an error.
    #[error("the Temporal worker failed: {0}")]
    Worker(String),
    /// Starting the workflow, or awaiting it, failed.
    #[error("the agent workflow {workflow_id} failed: {reason}")]
    Workflow {
        /// The workflow's id.
        workflow_id: String,
        /// What the server said.
        reason: String,
    },
    /// The worker's `AgentConfig` is not one an agent can be made of (what
    /// `Agent::create` would say of it).
    #[error("the agent's config is refused: {0}")]
    Config(#[source] AgentError),
    /// A typed run ([`AgentClient::start_as`](crate::AgentClient::start_as)) ended without an
    /// answer of its type: its answers were refused until no retry was left, it stopped
    /// before answering, or its answer does not deserialize as the type.
    #[error("the run gave no typed answer: {0}")]
    Output(String),
    /// The session store failed.
    #[error(transparent)]
    Session(#[from] SessionError),
}
