//! What the crate's errors share.
//!
//! Every error of this crate keeps the error beneath it ([`std::error::Error::source`]): an
//! [`AgentError`](crate::agent::AgentError) from a failed HTTP request leads to its
//! `reqwest::Error`, one from a session store to its `rusqlite::Error`,
//! `tokio_postgres::Error` or `std::io::Error`. Walk the chain and downcast to inspect it:
//!
//! ```
//! use std::error::Error;
//!
//! /// The first error of type `T` in `error`'s chain.
//! fn find<'a, T: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a T> {
//!     let mut next = Some(error);
//!     while let Some(error) = next {
//!         if let Some(found) = error.downcast_ref::<T>() {
//!             return Some(found);
//!         }
//!         next = error.source();
//!     }
//!     None
//! }
//!
//! let error = tool_sdk::agent::AgentConfig::from_file("/no/such/agent.toml").unwrap_err();
//! let io = find::<std::io::Error>(&error).expect("the file's I/O error");
//! assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
//! ```

pub use tool_sdk_core::error::{ErrorSource, Shared};

/// `error` as an [`ErrorSource`].
pub(crate) fn source(error: impl std::error::Error + Send + Sync + 'static) -> ErrorSource {
    ErrorSource::of(error)
}
