//! [`Recorder`]: the one way an agent's records reach its session store.
//!
//! Every append of an agent (its turns, its calls' starts and results, its file checkpoints,
//! the seals of a resume) goes through the recorder, which gives two promises:
//!
//! - **fenced**: with a lease, each append is stored only while the lease is still the
//!   session's, checked in the append's own transaction ([`SessionStore::append_leased`]);
//! - **stops at the first failure**: once an append failed, every later one fails at once
//!   with the same error, writing nothing. A failed append may have left the store short of a
//!   record the run already acted on (a model turn whose calls are about to start); writing
//!   the records after it would leave orphans that a resume reads as a different history, and
//!   running the calls after it would run effects no stored history explains. So the run stops
//!   before its next effect, and the agent takes its conversation back from the store
//!   ([`AgentInner::reload`](super::AgentInner)) before it goes on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::hold::SessionHold;
use crate::BoxFuture;
use crate::session::{NewSession, Record, SessionError, SessionInfo, SessionLease, SessionStore};

/// The agent's writer of session records: a [`SessionStore`] over the real one, fenced by the
/// agent's lease and stopped by its first failure (see the module's docs).
pub(crate) struct Recorder {
    store: Arc<dyn SessionStore>,
    hold: Option<SessionHold>,
    /// The first append that failed, until the conversation is taken back from the store.
    failed: Mutex<Option<SessionError>>,
}

impl Recorder {
    pub(crate) fn new(store: Arc<dyn SessionStore>, hold: Option<SessionHold>) -> Self {
        Recorder {
            store,
            hold,
            failed: Mutex::new(None),
        }
    }

    /// Whether an append failed since the conversation was last taken from the store.
    pub(crate) fn failed(&self) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Lets appends through again: the conversation in memory is the store's again.
    pub(crate) fn recovered(&self) {
        *self.failed.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    async fn write(&self, id: &str, records: &[Record]) -> Result<(), SessionError> {
        if records.is_empty() {
            return Ok(());
        }
        if let Some(error) = &*self.failed.lock().unwrap_or_else(|p| p.into_inner()) {
            return Err(SessionError::storage_from(
                format!("nothing more is stored after an earlier record could not be ({error})"),
                error.clone(),
            ));
        }
        let written = match &self.hold {
            Some(hold) => match hold.check() {
                Ok(()) if hold.lease().session() == id => {
                    self.store.append_leased(hold.lease(), records).await
                }
                Ok(()) => self.store.append_all(id, records).await,
                Err(lost) => Err(lost),
            },
            None => self.store.append_all(id, records).await,
        };
        if let Err(error) = &written {
            let mut failed = self.failed.lock().unwrap_or_else(|p| p.into_inner());
            failed.get_or_insert_with(|| error.clone());
        }
        written
    }
}

impl SessionStore for Recorder {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        self.store.create(new)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(self.write(id, std::slice::from_ref(record)))
    }

    fn append_all<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(self.write(id, records))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>> {
        self.store.load(id)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
        self.store.get(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
        self.store.list()
    }

    fn acquire<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        self.store.acquire(id, holder, ttl)
    }

    fn renew<'a>(
        &'a self,
        lease: &'a SessionLease,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        self.store.renew(lease)
    }

    fn release<'a>(&'a self, lease: &'a SessionLease) -> BoxFuture<'a, Result<(), SessionError>> {
        self.store.release(lease)
    }
}
