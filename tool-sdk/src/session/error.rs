//! Why a session store could not do what was asked.

use std::path::PathBuf;
use std::time::Duration;

use super::lease;
use crate::error::ErrorSource;

/// Why a session store could not do what was asked. A failure of the database or the file
/// system keeps its `rusqlite::Error`, `tokio_postgres::Error` or `std::io::Error` as its
/// [`source`](std::error::Error::source).
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// No session has this id. Nothing was changed.
    #[error("no session `{id}` in this store (`SessionStore::list` shows the sessions it has)")]
    UnknownSession {
        /// The id asked for.
        id: String,
    },
    /// The file is not a session database, or it is damaged.
    #[error(
        "{} is not a session database, or it is damaged ({detail}); \
         move it away to start afresh",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What SQLite said.
        detail: String,
        /// SQLite's error.
        source: Option<ErrorSource>,
    },
    /// The file was written by a newer tool-sdk, with a schema this one does not know.
    #[error(
        "{} holds sessions in schema version {found}, newer than this tool-sdk understands \
         (up to {supported}); upgrade tool-sdk to open it",
        path.display()
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Its schema version.
        found: i64,
        /// The newest this build knows.
        supported: i64,
    },
    /// The store could not be opened.
    #[error("cannot open the session store {}: {detail}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        detail: String,
        /// The error beneath.
        source: Option<ErrorSource>,
    },
    /// A stored record could not be read back. The stores of this crate do not fail for it:
    /// their [`load`](super::SessionStore::load) gives a
    /// [`Record::Unreadable`](super::Record::Unreadable) in its place.
    #[error("record {seq} of session `{id}` cannot be read: {detail}")]
    BadRecord {
        /// The session.
        id: String,
        /// The record's position in the session.
        seq: i64,
        /// Why.
        detail: String,
    },
    /// A new session's parent ([`NewSession::with_parent`](super::NewSession::with_parent))
    /// is not in the store. Nothing was created.
    #[error(
        "cannot create a fork of session `{parent}`: there is no such session in this store \
         (`SessionStore::list` shows the sessions it has)"
    )]
    UnknownParent {
        /// The parent named.
        parent: String,
    },
    /// A fork point past the end of the session.
    #[error("cannot fork session `{id}` at message {at}: it has only {len} messages")]
    ForkPoint {
        /// The session.
        id: String,
        /// The fork point asked for.
        at: usize,
        /// How many messages the session has.
        len: usize,
    },
    /// Another process holds the session's lease
    /// ([`SessionStore::acquire`](super::SessionStore::acquire)).
    #[error(
        "session `{id}` is busy: process {holder} holds it (its lease expires in {} s if that \
         process died)",
        lease::whole_seconds(expires_in)
    )]
    Busy {
        /// The session.
        id: String,
        /// Who holds it, as they said when they took it.
        holder: String,
        /// How long until the lease expires unless its holder renews it.
        expires_in: Duration,
    },
    /// A lease could not be renewed: it expired and another process took the session, or it
    /// was released. Its holder must stop running the session.
    #[error(
        "the lease on session `{id}` that {holder} held is lost: it expired and another \
         process may have taken the session over; stop running it"
    )]
    LeaseLost {
        /// The session.
        id: String,
        /// Who held the lease.
        holder: String,
    },
    /// The store has no leases ([`SessionStore::acquire`](super::SessionStore::acquire) is
    /// not implemented), so it cannot keep two processes from running one session.
    #[error(
        "this session store has no leases, so it cannot make sure that session `{id}` is run \
         by one process at a time"
    )]
    NoLeases {
        /// The session.
        id: String,
    },
    /// A `[session] store = "..."` that names no store this build has.
    #[error(
        "unknown session store `{0}`: use `sqlite:PATH`, or `postgres://...` in a build with \
         tool-sdk's `postgres` feature"
    )]
    UnknownStore(String),
    /// Reading or writing failed.
    #[error("the session store failed: {detail}")]
    Storage {
        /// What failed, and where.
        detail: String,
        /// The error beneath (the database's or the file system's), if any.
        source: Option<ErrorSource>,
    },
    /// An answer to an approval (or a tool's question) nobody is waiting for: a call id the
    /// session does not have, one already answered or run, or one waiting for the other kind
    /// of answer (`answer_approval` answers permission questions, `answer_elicitation` the
    /// questions tools ask).
    #[error(
        "session `{session}` has no answer of this kind waiting for call `{call}`; the calls \
         waiting for one are: {}",
        if pending.is_empty() { "none".to_owned() } else { pending.join(", ") }
    )]
    NoPendingApproval {
        /// The session.
        session: String,
        /// The call id given.
        call: String,
        /// The ids of the calls that are waiting.
        pending: Vec<String>,
    },
}

impl SessionError {
    /// A [`Storage`](Self::Storage) error with nothing beneath it: what a store of your own
    /// returns when it cannot read or write.
    pub fn storage(detail: impl Into<String>) -> Self {
        SessionError::Storage {
            detail: detail.into(),
            source: None,
        }
    }

    /// A [`Storage`](Self::Storage) error that `source` (the database's or the file system's
    /// error) caused.
    pub fn storage_from(
        detail: impl Into<String>,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        SessionError::Storage {
            detail: detail.into(),
            source: Some(crate::error::source(source)),
        }
    }
}
