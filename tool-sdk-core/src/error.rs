//! [`Shared`]: an error held by another, kept findable by downcast.

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

impl ErrorSource {
    /// `error`, shared and type-erased.
    pub fn of(error: impl std::error::Error + Send + Sync + 'static) -> Self {
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
