//! What the crate's errors share.
//!
//! Every error of this crate keeps the error beneath it ([`std::error::Error::source`]): an
//! [`AgentError`](crate::agent::AgentError) from a failed HTTP request leads to its
//! `reqwest::Error`, one from a session store to its `rusqlite::Error`,
//! `tokio_postgres::Error` or `std::io::Error`. Walk the chain and downcast to inspect it.

use std::sync::Arc;

/// The error beneath another, shared so that the error holding it stays `Clone` (errors
/// travel in run results and events, which are).
pub type ErrorSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// `error` as an [`ErrorSource`].
pub(crate) fn source(error: impl std::error::Error + Send + Sync + 'static) -> ErrorSource {
    Arc::new(error)
}
