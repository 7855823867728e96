//! [`Recorder`]: the one way an agent's records reach its session store.
//!
//! The recorder owns what writing the session takes: the session's id, the store (fenced),
//! the records staged for the next flush and the order they are flushed in, the lease (in
//! the fenced store) and, for calls started before their turn was stored, their [`Journal`]s.
//! Every append of an agent (its turns, its calls' starts and results, its file checkpoints,
//! the seals of a resume) goes through the recorder. What is stored when is not its choice:
//! each writer names its record's kind ([`Recorded`]), and the recorder carries out what
//! [`step::commit`] and [`step::flush_within`] decide. It gives two promises:
//!
//! - **fenced**: with a lease, each append is stored only while the lease is still the
//!   session's, checked in the append's own transaction ([`SessionStore::append_leased`]);
//! - **stops at the first failure**: once an append failed, every later one fails at once
//!   with the same error, writing nothing. A failed append may have left the store short of a
//!   record the run already acted on (a model turn whose calls are about to start); writing
//!   the records after it would leave orphans that a resume reads as a different history, and
//!   running the calls after it would run effects no stored history explains. So the run stops
//!   before its next effect, and the agent takes its conversation back from the store
//!   ([`Recorder::reload`]) before it goes on.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::hold::SessionHold;
use super::step::{self, Commit, Early, FlushPoint, Recorded};
use crate::BoxFuture;
use crate::session::{
    FileCheckpoints, NewSession, Record, Restored, SessionError, SessionInfo, SessionLease,
    SessionStore, restore,
};

/// The agent's one writer of session records (see the module's docs). Without a store it
/// keeps nothing and builds no record.
pub(crate) struct Recorder {
    session_id: Arc<str>,
    /// `None` keeps the conversation in memory only (and for sub-agents, whose work reaches
    /// the parent's session as the Task call's result).
    store: Option<Arc<Fenced>>,
    /// Records that go to the store with the next [`flush`](Self::flush): a model turn and
    /// its usage wait for the start of the turn's first calls, so that a step pays one commit
    /// for its turn rather than one a record.
    staged: Mutex<Vec<Record>>,
    /// Held from taking the staged records until the store has them, so that records reach
    /// the store in the order they were staged even when calls running together flush.
    flushing: tokio::sync::Mutex<()>,
}

impl Recorder {
    /// A recorder of the session `session_id` that stores nothing.
    pub(crate) fn in_memory(session_id: Arc<str>) -> Self {
        Recorder {
            session_id,
            store: None,
            staged: Mutex::default(),
            flushing: tokio::sync::Mutex::default(),
        }
    }

    /// A recorder of the stored session `session_id`, fenced by `hold` when there is one.
    pub(crate) fn stored(
        session_id: Arc<str>,
        store: Arc<dyn SessionStore>,
        hold: Option<SessionHold>,
    ) -> Self {
        Recorder {
            store: Some(Arc::new(Fenced::new(store, hold))),
            ..Recorder::in_memory(session_id)
        }
    }

    /// The session's id.
    pub(crate) fn session_id(&self) -> &Arc<str> {
        &self.session_id
    }

    /// The session's id, when the session is stored.
    pub(crate) fn stored_id(&self) -> Option<&str> {
        self.store.as_ref().map(|_| &*self.session_id)
    }

    /// The store, as the recorder writes to it (fenced, stopped by its first failure): for
    /// those who write the session beside the agent's turns (file checkpoints, approvals).
    pub(crate) fn store(&self) -> Option<Arc<dyn SessionStore>> {
        self.store
            .clone()
            .map(|store| store as Arc<dyn SessionStore>)
    }

    /// The session's records as stored, and the session restored from them, its open calls
    /// answered (those answers stored first, so the next resume finds the same results).
    pub(crate) async fn open(&self) -> Result<(Vec<Record>, Restored), SessionError> {
        let Some(store) = &self.store else {
            return Ok((Vec::new(), Restored::default()));
        };
        let records = store.load(&self.session_id).await?;
        let restored = restore(&records);
        store.append_all(&self.session_id, &restored.seals).await?;
        Ok((records, restored))
    }

    /// The file checkpoints of the session, stored through this recorder when it stores,
    /// the stored ones (`records`) known already.
    pub(crate) fn checkpoints(&self, records: &[Record]) -> FileCheckpoints {
        match &self.store {
            Some(store) => FileCheckpoints::stored(store.clone(), self.session_id.clone(), records),
            None => FileCheckpoints::in_memory(),
        }
    }

    /// Writes the record `make` builds, of `kind`, as [`step::commit`] decides: skipped
    /// without a store (nothing is built: a record copies the message or result it holds),
    /// staged for the next flush, or stored now with those staged before it.
    pub(crate) async fn write(
        &self,
        kind: Recorded,
        make: impl FnOnce() -> Record,
    ) -> Result<(), SessionError> {
        let commit = step::commit(kind, self.store.is_some(), None);
        self.carry_out(commit, make, None).await
    }

    /// Carries out `commit` for the record `make` builds; `held` is where a call started early
    /// holds its records (without it, a record to hold is staged).
    async fn carry_out(
        &self,
        commit: Commit,
        make: impl FnOnce() -> Record,
        held: Option<&mut Vec<Record>>,
    ) -> Result<(), SessionError> {
        match (commit, held) {
            (Commit::Skip, _) => Ok(()),
            (Commit::Hold, Some(records)) => {
                records.push(make());
                Ok(())
            }
            (Commit::Hold | Commit::Stage, _) => {
                self.stage(make);
                Ok(())
            }
            (Commit::StoreNow, _) => self.record(make).await,
        }
    }

    /// Appends the record `make` builds to the session, with those staged before it, when
    /// there is a store.
    async fn record(&self, make: impl FnOnce() -> Record) -> Result<(), SessionError> {
        self.stage(make);
        self.flush().await
    }

    /// Keeps the record `make` builds for the next [`flush`](Self::flush), when there is a
    /// store.
    fn stage(&self, make: impl FnOnce() -> Record) {
        if self.store.is_some() {
            self.staged
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(make());
        }
    }

    /// Appends the staged records to the session, in one `append_all`.
    async fn flush(&self) -> Result<(), SessionError> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let _order = self.flushing.lock().await;
        let records = std::mem::take(&mut *self.staged.lock().unwrap_or_else(|p| p.into_inner()));
        if records.is_empty() {
            return Ok(());
        }
        store.append_all(&self.session_id, &records).await
    }

    /// Writes the records staged at `point`, where nothing runs beside them, unless
    /// [`step::flush_within`] says none wait there.
    pub(crate) async fn flush_at(&self, point: FlushPoint) -> Result<(), SessionError> {
        match step::flush_within(point) {
            Some(_) => self.flush().await,
            None => Ok(()),
        }
    }

    /// Runs `run`, the calls at `point`, and writes the records staged for them as
    /// [`step::flush_within`] says: once `run` has run that long, if no record of its calls
    /// took them along sooner, and in any case before it returns. Returns what `run` gave and
    /// whether the records could be stored.
    pub(crate) async fn flush_while<T>(
        &self,
        point: FlushPoint,
        run: impl Future<Output = T>,
    ) -> (T, Result<(), SessionError>) {
        let Some(delay) = step::flush_within(point).filter(|_| self.store.is_some()) else {
            return (run.await, Ok(()));
        };
        let mut run = std::pin::pin!(run);
        let (output, stored) = tokio::select! {
            biased;
            output = &mut run => (output, Ok(())),
            () = tokio::time::sleep(delay) => {
                let (stored, output) = tokio::join!(self.flush(), run);
                (output, stored)
            }
        };
        (output, stored.and(self.flush().await))
    }

    /// After an append failed, the session as stored, its open calls answered (and those
    /// answers stored) as a resume answers them; appends go through again. `None` when every
    /// append succeeded.
    pub(crate) async fn reload(&self) -> Result<Option<Restored>, SessionError> {
        let Some(store) = self.store.as_ref().filter(|store| store.failed()) else {
            return Ok(None);
        };
        // Staged for the run that failed: they belong to a history that was not stored.
        self.staged
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        let restored = restore(&store.load(&self.session_id).await?);
        store.recovered();
        store.append_all(&self.session_id, &restored.seals).await?;
        Ok(Some(restored))
    }

    /// The session as stored, with the seals a crash needs stored first; empty without a
    /// store.
    pub(crate) async fn stored_turn(&self) -> Result<Restored, SessionError> {
        let Some(store) = &self.store else {
            return Ok(Restored::default());
        };
        let restored = restore(&store.load(&self.session_id).await?);
        store.append_all(&self.session_id, &restored.seals).await?;
        Ok(restored)
    }
}

/// Where the records of a call started before its turn was stored wait for the turn they
/// belong to (see `early.rs`).
pub(crate) struct Journal {
    /// `Some`: held until [`release`](Journal::release); `None`: stored as they come.
    held: tokio::sync::Mutex<Option<Vec<Record>>>,
}

impl Journal {
    /// A journal that holds records until released.
    pub(crate) fn holding() -> Self {
        Journal {
            held: tokio::sync::Mutex::new(Some(Vec::new())),
        }
    }

    /// Writes the record `make` builds, of `kind`, as [`step::commit`] decides for a call
    /// started early: held until [`release`](Journal::release), stored now after it (nothing
    /// is built without a store).
    pub(crate) async fn write(
        &self,
        recorder: &Recorder,
        kind: Recorded,
        make: impl FnOnce() -> Record,
    ) -> Result<(), SessionError> {
        // Under the lock, so a call's records stay in order behind those released.
        let mut held = self.held.lock().await;
        let early = match held.is_some() {
            true => Early::Holding,
            false => Early::Released,
        };
        let commit = step::commit(kind, recorder.store.is_some(), Some(early));
        recorder.carry_out(commit, make, held.as_mut()).await
    }

    /// Stages the held records in order; records after this are stored as they come.
    pub(crate) async fn release(&self, recorder: &Recorder) {
        let mut held = self.held.lock().await;
        for record in held.take().unwrap_or_default() {
            recorder.stage(|| record);
        }
    }
}

/// The store as the recorder writes to it: a [`SessionStore`] over the real one, fenced by
/// the agent's lease and stopped by its first failure (see the module's docs).
struct Fenced {
    store: Arc<dyn SessionStore>,
    hold: Option<SessionHold>,
    /// The first append that failed, until the conversation is taken back from the store.
    failed: Mutex<Option<SessionError>>,
}

impl Fenced {
    fn new(store: Arc<dyn SessionStore>, hold: Option<SessionHold>) -> Self {
        Fenced {
            store,
            hold,
            failed: Mutex::new(None),
        }
    }

    /// Whether an append failed since the conversation was last taken from the store.
    fn failed(&self) -> bool {
        self.failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// Lets appends through again: the conversation in memory is the store's again.
    fn recovered(&self) {
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

impl SessionStore for Fenced {
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
