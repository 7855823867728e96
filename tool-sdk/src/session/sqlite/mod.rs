//! [`SqliteStore`]: sessions in one SQLite file, SQLite compiled in (no system library).

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use super::files;
use super::lease::new_token;
use super::{
    NewSession, Record, SessionError, SessionInfo, SessionLease, SessionStore, read_record,
    unreadable,
};
use crate::BoxFuture;
use rows::{
    Inserted, Row, SELECT_SESSION, begin_immediate, commit_rows, from_millis, info_of_row, millis,
    session_row,
};
use schema::{MIGRATIONS, migrate, open_error, storage_error, when_not_busy};

mod rows;
mod schema;

/// Sessions in one SQLite file. Cheap to clone (clones share the connection); several
/// processes may open the same file, SQLite locks it (a writer waits up to 5 s for another).
///
/// **Durability**: the file is in WAL mode with `synchronous = NORMAL`. A record whose
/// `append` returned survives the process being killed at any point (SIGKILL included): it is
/// in the write-ahead log, which SQLite replays on the next open. What NORMAL gives up against
/// FULL is the last few appends on a power cut or an OS crash (the log is flushed to the disk
/// at checkpoints, not at each commit); the file is not corrupted either way. In exchange an
/// append does not wait for a disk flush. BENCHMARKS.md ("Sessions") has what an append and
/// an agent step cost.
///
/// **Threads**: an append runs on the calling task when nothing stands in its way (the
/// connection is free and no other process holds the file's write lock): it then writes one
/// or two pages to the log, tens of microseconds without waiting for the disk, which costs
/// less than handing it to another thread. Otherwise, and for everything else (reads, leases,
/// and the checkpoints that copy the log into the file and flush it, started every thousand
/// pages or so), the SQL runs in Tokio's blocking pool, where waiting for the disk or for
/// another process's lock stalls no task. So the store's methods need a Tokio runtime;
/// [`open`](Self::open) works on the calling thread.
///
/// ```
/// use tool_sdk::session::{SessionStore, SqliteStore};
///
/// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
/// assert!(store.list().await.unwrap().is_empty());
/// # });
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    // A std mutex, never held across an await: inside `spawn_blocking`, or by an append on
    // the calling task that got it without waiting.
    connection: Arc<Mutex<Connection>>,
    path: Arc<Path>,
    /// About how many pages went to the log since the last checkpoint (SQLite's own are off
    /// on this connection: they would flush the disk inside an append).
    unchecked_pages: Arc<AtomicUsize>,
    /// What this connection's last append left, to skip reading it again when nobody else
    /// wrote since. Only touched while the connection's lock is held.
    last_append: Arc<Mutex<Option<LastAppend>>>,
}

/// The state of the file after an append through this connection.
#[derive(Clone)]
struct LastAppend {
    /// `PRAGMA data_version` then: it changes when another connection commits.
    data_version: i64,
    session: String,
    /// The seq the session's next record takes.
    next_seq: i64,
}

/// How long a writer waits for another process's write lock.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Pages in the log after which a checkpoint starts (SQLite's default for its own).
const CHECKPOINT_PAGES: usize = 1000;

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (or creates) the file at `path` and brings its schema up to date. A file that is
    /// not a session database, or one written by a newer tool-sdk, is refused and left as it
    /// is.
    ///
    /// The file and SQLite's `-wal` and `-shm` beside it are readable and writable by their
    /// owner only (`0600` on Unix, whatever the umask; existing ones readable by others are
    /// made so): they hold prompts, file contents and command output. The directory is the
    /// caller's: make it private too. A `-wal` or `-shm` that SQLite could not write (not a
    /// plain file, or not writable by this user) is refused here, naming it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, SessionError> {
        let path = path.as_ref();
        files::prepare(path).map_err(|unusable| SessionError::Open {
            path: path.to_path_buf(),
            detail: unusable.detail,
            source: unusable.source.map(crate::error::source),
        })?;
        let connection = Connection::open(path).map_err(|error| open_error(path, error))?;
        let store = SqliteStore {
            connection: Arc::new(Mutex::new(connection)),
            path: Arc::from(path),
            unchecked_pages: Arc::default(),
            last_append: Arc::default(),
        };
        store.prepare()?;
        Ok(store)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Deletes the session `id`, its records and its lease: for an app that started a
    /// session and then had nothing to keep in it, such as one whose first request never
    /// reached the provider. Delete only a session no agent is using (drop the agent first).
    /// Sessions forked from it keep their copy of its history. An unknown id is
    /// [`SessionError::UnknownSession`].
    pub async fn delete(&self, id: &str) -> Result<(), SessionError> {
        let id = id.to_owned();
        let last_append = self.last_append.clone();
        self.with_connection(move |connection, path| {
            let fail = |error| storage_error(path, error);
            *last_append.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let transaction = connection.transaction().map_err(fail)?;
            transaction
                .execute("DELETE FROM leases WHERE session_id = ?1", params![id])
                .map_err(fail)?;
            transaction
                .execute("DELETE FROM records WHERE session_id = ?1", params![id])
                .map_err(fail)?;
            let deleted = transaction
                .execute("DELETE FROM sessions WHERE id = ?1", params![id])
                .map_err(fail)?;
            if deleted == 0 {
                return Err(SessionError::UnknownSession { id });
            }
            transaction.commit().map_err(fail)
        })
        .await
    }

    fn prepare(&self) -> Result<(), SessionError> {
        let path = self.path.clone();
        let connection = self.connection.lock().unwrap_or_else(|p| p.into_inner());
        let fail = |error| open_error(&path, error);
        connection.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // The first statement that reads the file: where a file of garbage is found out.
        let version: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .map_err(fail)?;
        let supported = MIGRATIONS.len() as i64;
        if version > supported {
            return Err(SessionError::NewerSchema {
                path: path.to_path_buf(),
                found: version,
                supported,
            });
        }
        // Switching a new file to WAL needs it to itself; where another opener holds it, SQLite
        // answers "busy" at once rather than waiting (to avoid a deadlock), so wait here.
        let mode: String = when_not_busy(|| {
            connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
        })
        .map_err(fail)?;
        if !mode.eq_ignore_ascii_case("wal") {
            tracing::warn!(path = %path.display(), mode, "SQLite did not switch to WAL mode");
        }
        connection
            .execute_batch(
                "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; \
                 PRAGMA wal_autocheckpoint = 0;",
            )
            .map_err(fail)?;
        if version == supported {
            return Ok(());
        }
        // Under the write lock, the version read again: another process opening the same new
        // file may have migrated it meanwhile, and each step must run once. The steps and the
        // version bumps commit together, so a crash mid-migration leaves the file as it was.
        when_not_busy(|| connection.execute_batch("BEGIN IMMEDIATE")).map_err(fail)?;
        let migrated = migrate(&connection);
        let end = if migrated.is_ok() {
            "COMMIT"
        } else {
            "ROLLBACK"
        };
        let ended = connection.execute_batch(end);
        migrated.and(ended).map_err(fail)
    }

    /// Runs `job` on the connection in Tokio's blocking pool: a commit may wait for the disk
    /// or for another process's lock, which must not stall the runtime's workers.
    fn with_connection<T: Send + 'static>(
        &self,
        job: impl FnOnce(&mut Connection, &Path) -> Result<T, SessionError> + Send + 'static,
    ) -> BoxFuture<'static, Result<T, SessionError>> {
        let connection = self.connection.clone();
        let path = self.path.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut connection = connection.lock().unwrap_or_else(|p| p.into_inner());
                job(&mut connection, &path)
            })
            .await
            .map_err(|error| {
                SessionError::storage_from(format!("the store's task failed: {error}"), error)
            })?
        })
    }

    /// Counts `pages` written to the log, and starts a checkpoint in the blocking pool when
    /// they pass [`CHECKPOINT_PAGES`]. A failed checkpoint loses nothing (the log keeps the
    /// pages) and is tried again after as many pages more.
    fn wrote(&self, pages: usize) {
        let before = self.unchecked_pages.fetch_add(pages, Ordering::Relaxed);
        if before + pages < CHECKPOINT_PAGES
            || self
                .unchecked_pages
                .compare_exchange(before + pages, 0, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        let connection = self.connection.clone();
        let path = self.path.clone();
        tokio::task::spawn_blocking(move || {
            let connection = connection.lock().unwrap_or_else(|p| p.into_inner());
            let checkpoint = connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            if let Err(error) = checkpoint {
                tracing::warn!(path = %path.display(), %error, "SQLite checkpoint failed");
            }
        });
    }
}

/// Appends `rows` to session `id` on the calling thread if that needs no waiting: `Ok(false)`
/// when another process holds the write lock (nothing was written).
fn append_now(
    connection: &mut Connection,
    last_append: &Mutex<Option<LastAppend>>,
    id: &str,
    rows: &[Row],
    fence: Option<&str>,
) -> Result<bool, Inserted> {
    connection.busy_timeout(Duration::ZERO)?;
    let appended = match begin_immediate(connection) {
        Err(error) if error.sqlite_error_code() == Some(ErrorCode::DatabaseBusy) => Ok(false),
        Err(error) => Err(Inserted::Failed(error)),
        Ok(()) => commit_rows(connection, last_append, id, rows, fence).map(|()| true),
    };
    connection.busy_timeout(BUSY_TIMEOUT)?;
    appended
}

impl SqliteStore {
    /// Appends `records` to session `id`; with a `fence`, only while that lease is still the
    /// session's (checked inside the append's transaction).
    fn append_rows<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
        fence: Option<&'a SessionLease>,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        // Serialised here, on the caller's thread, so the blocking job owns plain strings.
        let rows: Result<Vec<Row>, _> = records.iter().map(Row::of).collect();
        let id = id.to_owned();
        Box::pin(async move {
            let rows = rows?;
            if rows.is_empty() {
                return Ok(());
            }
            let token = fence.map(|lease| lease.token().to_owned());
            let holder = fence.map(|lease| lease.holder().to_owned());
            let pages = rows.iter().map(|row| row.body.len()).sum::<usize>() / 4096 + 1;
            let now = self.connection.try_lock().ok().map(|mut connection| {
                append_now(
                    &mut connection,
                    &self.last_append,
                    &id,
                    &rows,
                    token.as_deref(),
                )
                .map_err(|error| error.into_session_error(&id, holder.as_deref(), &self.path))
            });
            match now {
                Some(Ok(true)) => {}
                Some(Err(error)) => return Err(error),
                // The connection is busy, or another process holds the write lock: wait in
                // the blocking pool.
                None | Some(Ok(false)) => {
                    let last_append = self.last_append.clone();
                    self.with_connection(move |connection, path| {
                        begin_immediate(connection)
                            .map_err(Inserted::Failed)
                            .and_then(|()| {
                                commit_rows(connection, &last_append, &id, &rows, token.as_deref())
                            })
                            .map_err(|error| error.into_session_error(&id, holder.as_deref(), path))
                    })
                    .await?
                }
            }
            self.wrote(pages);
            Ok(())
        })
    }

    /// [`SessionStore::acquire`], or [`SessionStore::take_over`] from `dead`.
    fn take_lease(
        &self,
        id: &str,
        holder: &str,
        ttl: Duration,
        dead: Option<&str>,
    ) -> BoxFuture<'static, Result<SessionLease, SessionError>> {
        let (id, holder) = (id.to_owned(), holder.to_owned());
        let dead = dead.map(str::to_owned);
        self.with_connection(move |connection, path| {
            let fail = |error| storage_error(path, error);
            // Counted from before the store's clock is read, so the lease never outlives
            // what the caller believes.
            let since = Instant::now();
            // IMMEDIATE: the write lock is taken before the lease is read, so two processes
            // cannot both see the session free and both take it.
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(fail)?;
            let known = transaction
                .query_row("SELECT 1 FROM sessions WHERE id = ?1", params![id], |_| {
                    Ok(())
                })
                .optional()
                .map_err(fail)?;
            if known.is_none() {
                return Err(SessionError::UnknownSession { id });
            }
            let now = millis(SystemTime::now());
            match live_lease(&transaction, &id, now).map_err(fail)? {
                // A holder known to be dead is no reason to wait out its ttl.
                Some(SessionError::Busy { holder: live, .. })
                    if dead.as_deref() == Some(live.as_str()) => {}
                Some(busy) => return Err(busy),
                None => {}
            }
            let token = new_token();
            transaction
                .execute(
                    "INSERT INTO leases (session_id, holder, token, expires_at)
                     VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (session_id) DO UPDATE SET
                        holder = excluded.holder,
                        token = excluded.token,
                        expires_at = excluded.expires_at",
                    params![id, holder, token, now.saturating_add(ttl_millis(ttl))],
                )
                .map_err(fail)?;
            transaction.commit().map_err(fail)?;
            Ok(SessionLease::new(id, holder, token, ttl, since))
        })
    }
}

impl SessionStore for SqliteStore {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        let last_append = self.last_append.clone();
        self.with_connection(move |connection, path| {
            // The new session goes first in `list`: the last append's session no longer is.
            *last_append.lock().unwrap_or_else(|p| p.into_inner()) = None;
            let now = SystemTime::now();
            let id = format!("session-{}-{:08x}", millis(now), fastrand::u32(..));
            let working_dir = new.working_dir.to_string_lossy().into_owned();
            let (parent_id, parent_at) = match &new.parent {
                Some(parent) => (Some(parent.session.clone()), Some(parent.at as i64)),
                None => (None, None),
            };
            // One statement, so the parent cannot go between the check and the insert.
            let created = connection
                .execute(
                    "INSERT INTO sessions
                        (id, title, working_dir, created_at, updated_at, touched, parent_id,
                         parent_at)
                     SELECT ?1, ?2, ?3, ?4, ?4,
                        (SELECT COALESCE(MAX(touched), 0) + 1 FROM sessions), ?5, ?6
                     WHERE ?5 IS NULL OR EXISTS (SELECT 1 FROM sessions WHERE id = ?5)",
                    params![
                        id,
                        new.title,
                        working_dir,
                        millis(now),
                        parent_id,
                        parent_at
                    ],
                )
                .map_err(|error| storage_error(path, error))?;
            if let (0, Some(parent)) = (created, parent_id) {
                return Err(SessionError::UnknownParent { parent });
            }
            Ok(SessionInfo {
                id,
                title: new.title,
                working_dir: new.working_dir,
                created_at: from_millis(millis(now)),
                updated_at: from_millis(millis(now)),
                parent: new.parent,
            })
        })
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.append_all(id, std::slice::from_ref(record))
    }

    fn append_all<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.append_rows(id, records, None)
    }

    fn append_leased<'a>(
        &'a self,
        lease: &'a SessionLease,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.append_rows(lease.session(), records, Some(lease))
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>> {
        let id = id.to_owned();
        self.with_connection(move |connection, path| {
            let fail = |error| storage_error(path, error);
            // In one read transaction, so the records match the session row read.
            let transaction = connection.transaction().map_err(fail)?;
            session_row(&transaction, &id, path)?;
            let mut statement = transaction
                .prepare("SELECT seq, kind, body FROM records WHERE session_id = ?1 ORDER BY seq")
                .map_err(fail)?;
            let rows = statement
                .query_map(params![id], |row| {
                    let seq = row.get::<_, i64>(0)?;
                    let kind = row.get::<_, String>(1)?;
                    Ok(match row.get::<_, String>(2) {
                        Ok(body) => read_record(&id, seq, &kind, &body),
                        Err(error) => unreadable(&id, seq, &kind, error.to_string()),
                    })
                })
                .map_err(fail)?;
            rows.map(|row| row.map_err(fail)).collect()
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
        let id = id.to_owned();
        self.with_connection(move |connection, path| session_row(connection, &id, path))
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
        self.with_connection(move |connection, path| {
            let fail = |error| storage_error(path, error);
            let mut statement = connection
                .prepare(&format!("{SELECT_SESSION} ORDER BY touched DESC"))
                .map_err(fail)?;
            let rows = statement.query_map([], info_of_row).map_err(fail)?;
            rows.map(|row| row.map_err(fail)).collect()
        })
    }

    // Leases expire by the clock of the host that took or renewed them: the same clock for
    // every process on one machine, which is where one SQLite file is shared.
    fn acquire<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        self.take_lease(id, holder, ttl, None)
    }

    fn take_over<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
        dead: &'a str,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        self.take_lease(id, holder, ttl, Some(dead))
    }

    fn renew<'a>(
        &'a self,
        lease: &'a SessionLease,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        let lease = lease.clone();
        self.with_connection(move |connection, path| {
            let fail = |error| storage_error(path, error);
            let since = Instant::now();
            let transaction = connection
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(fail)?;
            let now = millis(SystemTime::now());
            // The token, not the holder, says whether the lease is still ours: it changes
            // whenever anyone takes the session, even the same holder.
            let renewed = transaction
                .execute(
                    "UPDATE leases SET expires_at = ?3 WHERE session_id = ?1 AND token = ?2",
                    params![
                        lease.session(),
                        lease.token(),
                        now.saturating_add(ttl_millis(lease.ttl()))
                    ],
                )
                .map_err(fail)?;
            if renewed == 0 {
                return Err(live_lease(&transaction, lease.session(), now)
                    .map_err(fail)?
                    .unwrap_or_else(|| SessionError::LeaseLost {
                        id: lease.session().to_owned(),
                        holder: lease.holder().to_owned(),
                    }));
            }
            transaction.commit().map_err(fail)?;
            Ok(lease.renewed(since))
        })
    }

    fn release<'a>(&'a self, lease: &'a SessionLease) -> BoxFuture<'a, Result<(), SessionError>> {
        let lease = lease.clone();
        self.with_connection(move |connection, path| {
            connection
                .execute(
                    "DELETE FROM leases WHERE session_id = ?1 AND token = ?2",
                    params![lease.session(), lease.token()],
                )
                .map_err(|error| storage_error(path, error))?;
            Ok(())
        })
    }
}

/// The live lease on session `id` at `now`, as the error that refuses another taker.
fn live_lease(
    connection: &Connection,
    id: &str,
    now: i64,
) -> rusqlite::Result<Option<SessionError>> {
    let lease = connection
        .query_row(
            "SELECT holder, expires_at FROM leases WHERE session_id = ?1 AND expires_at > ?2",
            params![id, now],
            |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)),
        )
        .optional()?;
    Ok(lease.map(|(holder, expires_at)| SessionError::Busy {
        id: id.to_owned(),
        holder,
        expires_in: Duration::from_millis(u64::try_from(expires_at - now).unwrap_or(0)),
    }))
}

fn ttl_millis(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
