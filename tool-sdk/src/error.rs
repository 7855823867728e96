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

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// An error held by another and shared by its clones (errors travel in run results and
/// events, which are `Clone`). It dereferences to `E`, and `E` itself is what
/// [`source`](std::error::Error::source) gives, so a downcast to `E` finds it (an `Arc<E>`
/// in its place would be an error of its own type, hiding `E`).
pub struct Shared<E: ?Sized>(Arc<E>);

/// Any error beneath another: a [`Shared`] `dyn Error`.
pub type ErrorSource = Shared<dyn std::error::Error + Send + Sync + 'static>;

impl<E> Shared<E> {
    /// Shares `error`.
    pub fn new(error: E) -> Self {
        Shared(Arc::new(error))
    }
}

impl<E> From<E> for Shared<E> {
    fn from(error: E) -> Self {
        Shared::new(error)
    }
}

impl<E: ?Sized> Clone for Shared<E> {
    fn clone(&self) -> Self {
        Shared(self.0.clone())
    }
}

impl<E: ?Sized> Deref for Shared<E> {
    type Target = E;

    fn deref(&self) -> &E {
        &self.0
    }
}

impl<E: fmt::Debug + ?Sized> fmt::Debug for Shared<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<E: fmt::Display + ?Sized> fmt::Display for Shared<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `error` as an [`ErrorSource`].
pub(crate) fn source(error: impl std::error::Error + Send + Sync + 'static) -> ErrorSource {
    Shared(Arc::new(error))
}
