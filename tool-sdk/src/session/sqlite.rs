//! [`SqliteStore`]: sessions in one SQLite file, SQLite compiled in (no system library).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use super::files;
use super::lease::new_token;
use super::{
    ForkPoint, NewSession, Record, SessionError, SessionInfo, SessionLease, SessionStore,
    read_record, title_of, unreadable,
};
use crate::BoxFuture;

/// The schema, one migration per version: `migrations[i]` takes a file from version `i` to
/// `i + 1` (`PRAGMA user_version`). Only ever append to this list.
const MIGRATIONS: &[&str] = &[
    // 1: sessions and their records. `touched` orders `list` by the last append even when
    // two appends share a clock millisecond.
    "CREATE TABLE sessions (
        id TEXT PRIMARY KEY NOT NULL,
        title TEXT NOT NULL,
        working_dir TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        touched INTEGER NOT NULL,
        parent_id TEXT,
        parent_at INTEGER
    );
    CREATE INDEX sessions_touched ON sessions (touched);
    CREATE TABLE records (
        session_id TEXT NOT NULL REFERENCES sessions (id),
        seq INTEGER NOT NULL,
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (session_id, seq)
    ) WITHOUT ROWID;",
    // 2: leases (`SessionStore::acquire`), at most one per session. `expires_at` is in
    // milliseconds since the epoch by the clock of the process that wrote it.
    "CREATE TABLE leases (
        session_id TEXT PRIMARY KEY NOT NULL REFERENCES sessions (id),
        holder TEXT NOT NULL,
        token TEXT NOT NULL,
        expires_at INTEGER NOT NULL
    ) WITHOUT ROWID;",
];

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

/// A record as it goes into the `records` table.
struct Row {
    kind: &'static str,
    body: String,
    /// The title it gives a session that has none (a user message's).
    title: Option<String>,
}

impl Row {
    fn of(record: &Record) -> Result<Row, SessionError> {
        let body = serde_json::to_string(record).map_err(|error| {
            SessionError::storage_from(
                format!("the record cannot be written as JSON: {error}"),
                error,
            )
        })?;
        let title = match record {
            Record::UserMessage { message } => Some(title_of(message)),
            _ => None,
        };
        Ok(Row {
            kind: record.kind(),
            body,
            title,
        })
    }
}

enum Inserted {
    Unknown,
    /// The lease that fenced the append is no longer the session's.
    Fenced,
    Failed(rusqlite::Error),
}

impl Inserted {
    fn into_session_error(self, id: &str, holder: Option<&str>, path: &Path) -> SessionError {
        match self {
            Inserted::Unknown => SessionError::UnknownSession { id: id.to_owned() },
            Inserted::Fenced => SessionError::LeaseLost {
                id: id.to_owned(),
                holder: holder.unwrap_or_default().to_owned(),
            },
            Inserted::Failed(error) => storage_error(path, error),
        }
    }
}

/// Fails with [`Inserted::Fenced`] when `fence` (a lease's token) is no longer the lease of
/// session `id`: another process took the session over. Read inside the append's
/// transaction, which holds the file's write lock, so no taker can come between.
fn fenced(connection: &Connection, id: &str, fence: Option<&str>) -> Result<(), Inserted> {
    let Some(token) = fence else {
        return Ok(());
    };
    let ours = connection
        .prepare_cached("SELECT 1 FROM leases WHERE session_id = ?1 AND token = ?2")?
        .query_row(params![id, token], |_| Ok(()))
        .optional()?;
    match ours {
        Some(()) => Ok(()),
        None => Err(Inserted::Fenced),
    }
}

impl From<rusqlite::Error> for Inserted {
    fn from(error: rusqlite::Error) -> Self {
        Inserted::Failed(error)
    }
}

/// Appends `rows` to session `id` in `transaction` and commits it; remembers what the append
/// left for the next one (forgets it on any failure).
///
/// The transaction was begun with [`begin_immediate`]; it is committed or rolled back here.
/// Both run as cached statements, as every statement of an append does: nothing is parsed.
fn commit_rows(
    connection: &Connection,
    last_append: &Mutex<Option<LastAppend>>,
    id: &str,
    rows: &[Row],
    fence: Option<&str>,
) -> Result<(), Inserted> {
    let mut last_append = last_append.lock().unwrap_or_else(|p| p.into_inner());
    let known = last_append.take();
    let committed = fenced(connection, id, fence)
        .and_then(|()| insert_rows(connection, known, id, rows))
        .and_then(|appended| {
            connection.prepare_cached("COMMIT")?.execute([])?;
            Ok(appended)
        });
    match committed {
        Ok(appended) => {
            *last_append = Some(appended);
            Ok(())
        }
        Err(error) => {
            // Nothing of the append stays; a failed COMMIT may have ended the transaction
            // already, so a ROLLBACK that finds none is no news.
            let _ = connection.execute_batch("ROLLBACK");
            Err(error)
        }
    }
}

/// Begins a transaction that holds the file's write lock from its start, so that an append
/// reads the session's last seq under the lock that its insert needs.
fn begin_immediate(connection: &Connection) -> rusqlite::Result<()> {
    connection.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
    Ok(())
}

/// Appends `rows` to session `id` inside the caller's transaction.
///
/// An append writes as few pages as it can, since each page is a write to the log at commit:
/// the records' own page, and the session's row only when something about it changes (its
/// title, or its place in `list` when another session was touched since). A session's
/// `updated_at` is read from its last record rather than written at each append. When no
/// other connection wrote since this one's last append to the same session (`PRAGMA
/// data_version` is unchanged), what that append left (`known`) is still true and is not
/// read again.
fn insert_rows(
    connection: &Connection,
    known: Option<LastAppend>,
    id: &str,
    rows: &[Row],
) -> Result<LastAppend, Inserted> {
    let data_version: i64 = connection
        .prepare_cached("PRAGMA data_version")?
        .query_row([], |row| row.get(0))?;
    let first = match known {
        Some(known) if known.data_version == data_version && known.session == id => known.next_seq,
        _ => {
            let next: Option<i64> = connection
                .prepare_cached(
                    "SELECT (SELECT COALESCE(MAX(seq), -1) + 1 FROM records WHERE session_id = ?1)
                     FROM sessions WHERE id = ?1",
                )?
                .query_row(params![id], |row| row.get(0))
                .optional()?;
            let Some(next) = next else {
                return Err(Inserted::Unknown);
            };
            connection
                .prepare_cached(
                    "UPDATE sessions SET touched = (SELECT MAX(touched) + 1 FROM sessions)
                     WHERE id = ?1 AND touched < (SELECT MAX(touched) FROM sessions)",
                )?
                .execute(params![id])?;
            next
        }
    };
    let now = millis(SystemTime::now());
    let mut insert = connection.prepare_cached(
        "INSERT INTO records (session_id, seq, kind, body, created_at) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut next_seq = first;
    for (seq, row) in (first..).zip(rows) {
        insert.execute(params![id, seq, row.kind, row.body, now])?;
        next_seq = seq + 1;
        if let Some(title) = &row.title {
            connection
                .prepare_cached("UPDATE sessions SET title = ?2 WHERE id = ?1 AND title = ''")?
                .execute(params![id, title])?;
        }
    }
    Ok(LastAppend {
        data_version,
        session: id.to_owned(),
        next_seq,
    })
}

/// A session's columns for [`info_of_row`]. `updated_at` is the time of its last record: an
/// append does not write the session's row (see [`insert_rows`]).
const SELECT_SESSION: &str = "SELECT id, title, working_dir, created_at, \
    MAX(updated_at, COALESCE((SELECT created_at FROM records \
        WHERE records.session_id = sessions.id ORDER BY seq DESC LIMIT 1), 0)), \
    parent_id, parent_at FROM sessions";

fn session_row(
    connection: &Connection,
    id: &str,
    path: &Path,
) -> Result<SessionInfo, SessionError> {
    connection
        .query_row(
            &format!("{SELECT_SESSION} WHERE id = ?1"),
            params![id],
            info_of_row,
        )
        .optional()
        .map_err(|error| storage_error(path, error))?
        .ok_or_else(|| SessionError::UnknownSession { id: id.to_owned() })
}

fn info_of_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
    let parent_id: Option<String> = row.get(5)?;
    let parent_at: Option<i64> = row.get(6)?;
    Ok(SessionInfo {
        id: row.get(0)?,
        title: row.get(1)?,
        working_dir: PathBuf::from(row.get::<_, String>(2)?),
        created_at: from_millis(row.get(3)?),
        updated_at: from_millis(row.get(4)?),
        parent: parent_id.map(|session| ForkPoint {
            session,
            at: usize::try_from(parent_at.unwrap_or(0)).unwrap_or(0),
        }),
    })
}

fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}

/// A damaged file says so and names itself; anything else is a failed open.
/// Brings the schema from the version the file has to the newest, inside the caller's
/// transaction.
fn migrate(connection: &Connection) -> rusqlite::Result<()> {
    let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    for (from, migration) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        connection.execute_batch(migration)?;
        connection.pragma_update(None, "user_version", (from + 1) as i64)?;
    }
    Ok(())
}

/// Runs `step` again while SQLite answers "busy" without having waited, for up to 5 s.
fn when_not_busy<T>(mut step: impl FnMut() -> rusqlite::Result<T>) -> rusqlite::Result<T> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match step() {
            Err(error)
                if error.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

fn open_error(path: &Path, error: rusqlite::Error) -> SessionError {
    match corruption(&error) {
        true => SessionError::Corrupt {
            path: path.to_path_buf(),
            detail: error.to_string(),
            source: Some(crate::error::source(error)),
        },
        false => SessionError::Open {
            path: path.to_path_buf(),
            detail: with_shared_memory_hint(path, &error),
            source: Some(crate::error::source(error)),
        },
    }
}

/// SQLite says only "disk I/O error" when its `-shm` cannot be created, grown or mapped (a
/// full disk, most often): name the file.
fn with_shared_memory_hint(path: &Path, error: &rusqlite::Error) -> String {
    use rusqlite::ffi;
    let shared_memory = matches!(
        error,
        rusqlite::Error::SqliteFailure(failure, _) if matches!(
            failure.extended_code,
            ffi::SQLITE_IOERR_SHMOPEN
                | ffi::SQLITE_IOERR_SHMSIZE
                | ffi::SQLITE_IOERR_SHMMAP
                | ffi::SQLITE_IOERR_SHMLOCK
                | ffi::SQLITE_READONLY_CANTINIT
        )
    );
    match shared_memory {
        true => format!(
            "{error}: SQLite cannot create, grow or map its shared-memory file {} (is the \
             disk full, or the file not writable?)",
            files::side_file(path, "-shm").display()
        ),
        false => error.to_string(),
    }
}

fn storage_error(path: &Path, error: rusqlite::Error) -> SessionError {
    match corruption(&error) {
        true => SessionError::Corrupt {
            path: path.to_path_buf(),
            detail: error.to_string(),
            source: Some(crate::error::source(error)),
        },
        false => SessionError::storage_from(format!("{}: {error}", path.display()), error),
    }
}

fn corruption(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Message;

    fn runtime() -> tokio::runtime::Runtime {
        // Timers on: a test that waits for the background checkpoint sleeps between looks.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_time()
            .build()
            .expect("a runtime")
    }

    #[test]
    fn records_come_back_in_order_and_list_is_newest_first() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
            let first = store.create(NewSession::new("/a")).await.unwrap();
            let second = store.create(NewSession::new("/b")).await.unwrap();
            let records = [
                Record::user(Message::user("Fix the build\nsecond line")),
                Record::model_turn(Message::assistant("On it.")),
                Record::user(Message::user("Thanks")),
            ];
            for record in &records {
                store.append(&first.id, record).await.unwrap();
            }
            assert_eq!(store.load(&first.id).await.unwrap(), records);
            assert!(store.load(&second.id).await.unwrap().is_empty());
            // `first` was appended to last, so it comes first; its title is its first prompt's
            // first line, not changed by later prompts.
            let ids: Vec<_> = store
                .list()
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(ids, [first.id.clone(), second.id.clone()]);
            let info = store.get(&first.id).await.unwrap();
            assert_eq!(info.title, "Fix the build");
            assert_eq!(info.working_dir, PathBuf::from("/a"));
            assert!(info.updated_at >= info.created_at);
        });
    }

    #[test]
    fn a_deleted_session_is_gone_with_its_records_and_lease_and_the_others_stay() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
            let kept = store.create(NewSession::new("/a")).await.unwrap();
            let gone = store.create(NewSession::new("/a")).await.unwrap();
            let prompt = Record::user(Message::user("hello?"));
            store.append(&kept.id, &prompt).await.unwrap();
            store.append(&gone.id, &prompt).await.unwrap();
            store
                .acquire(&gone.id, "me", Duration::from_secs(60))
                .await
                .unwrap();

            store.delete(&gone.id).await.unwrap();
            let unknown =
                |error| matches!(error, SessionError::UnknownSession { id } if id == gone.id);
            assert!(unknown(store.get(&gone.id).await.unwrap_err()));
            assert!(unknown(store.append(&gone.id, &prompt).await.unwrap_err()));
            assert!(unknown(store.delete(&gone.id).await.unwrap_err()));
            let connection = Connection::open(dir.path().join("s.db")).unwrap();
            let rows: i64 = connection
                .query_row(
                    "SELECT (SELECT COUNT(*) FROM records WHERE session_id = ?1)
                          + (SELECT COUNT(*) FROM leases WHERE session_id = ?1)",
                    params![gone.id],
                    |row| row.get(0),
                )
                .unwrap();
            assert_eq!(rows, 0);
            let listed: Vec<_> = store
                .list()
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(store.load(&kept.id).await.unwrap(), [prompt]);
            assert_eq!(listed, [kept.id]);
        });
    }

    #[test]
    fn an_unknown_session_is_an_error_that_changes_nothing() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
            let record = Record::user(Message::user("hi"));
            let error = store.append("nope", &record).await.unwrap_err();
            assert!(matches!(&error, SessionError::UnknownSession { id } if id == "nope"));
            assert!(error.to_string().contains("no session `nope`"));
            assert!(matches!(
                store.load("nope").await,
                Err(SessionError::UnknownSession { .. })
            ));
            assert!(store.list().await.unwrap().is_empty());
        });
    }

    #[test]
    fn a_file_of_schema_1_gains_leases_and_keeps_its_sessions() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            // A file as the first release wrote it: migration 1 only.
            let connection = Connection::open(&path).unwrap();
            connection.execute_batch(MIGRATIONS[0]).unwrap();
            connection.pragma_update(None, "user_version", 1).unwrap();
            connection
                .execute(
                    "INSERT INTO sessions VALUES ('old', 'Old', '/w', 1, 1, 1, NULL, NULL)",
                    [],
                )
                .unwrap();
            drop(connection);

            let store = SqliteStore::open(&path).unwrap();
            assert_eq!(store.get("old").await.unwrap().title, "Old");
            let lease = store
                .acquire("old", "me", Duration::from_secs(5))
                .await
                .unwrap();
            assert!(matches!(
                store.acquire("old", "you", Duration::from_secs(5)).await,
                Err(SessionError::Busy { holder, .. }) if holder == "me"
            ));
            store.release(&lease).await.unwrap();
            let version: i64 = store
                .with_connection(|connection, _| {
                    Ok(connection
                        .query_row("PRAGMA user_version", [], |row| row.get(0))
                        .unwrap())
                })
                .await
                .unwrap();
            assert_eq!(version, 2);
        });
    }

    #[test]
    fn append_all_stores_in_order_titles_and_reorders_list() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("s.db")).unwrap();
            let first = store.create(NewSession::new("/w")).await.unwrap();
            let second = store.create(NewSession::new("/w")).await.unwrap();
            let records = [
                Record::user(Message::user("one")),
                Record::model_turn(Message::assistant("two")),
                Record::user(Message::user("three")),
            ];
            store.append_all(&first.id, &records).await.unwrap();
            assert_eq!(store.load(&first.id).await.unwrap(), records);
            // The first user message titles the session; the session is listed first again
            // once it is appended to after another.
            assert_eq!(store.get(&first.id).await.unwrap().title, "one");
            store.append_all(&second.id, &records[..1]).await.unwrap();
            store.append_all(&first.id, &records[1..2]).await.unwrap();
            let listed: Vec<_> = store
                .list()
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(listed, [first.id.clone(), second.id.clone()]);

            // An unknown session is refused; an empty batch is nothing to do.
            let unknown = store.append_all("nope", &records).await.unwrap_err();
            assert!(matches!(unknown, SessionError::UnknownSession { id } if id == "nope"));
            assert!(store.append_all(&first.id, &[]).await.is_ok());
            assert_eq!(store.load(&first.id).await.unwrap().len(), 4);
        });
    }

    #[test]
    fn an_append_waits_for_another_writer_without_stalling_the_runtime() {
        // One thread for every task: an append that waited for the lock on it would stop the
        // ticker too.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        let store = SqliteStore::open(&path).unwrap();
        let id = runtime
            .block_on(store.create(NewSession::new("/w")))
            .unwrap()
            .id;
        // Another process's writer, as SQLite sees it: its own connection holding the lock.
        let other = Connection::open(&path).unwrap();
        other.execute_batch("BEGIN IMMEDIATE").unwrap();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            released.recv().unwrap();
            other.execute_batch("COMMIT").unwrap();
        });
        runtime.block_on(async {
            let ticks = Arc::new(AtomicUsize::new(0));
            let ticker = tokio::spawn({
                let ticks = ticks.clone();
                async move {
                    loop {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        if ticks.fetch_add(1, Ordering::SeqCst) == 10 {
                            release.send(()).unwrap();
                        }
                    }
                }
            });
            store
                .append(&id, &Record::user(Message::user("after the other")))
                .await
                .unwrap();
            ticker.abort();
            assert!(
                ticks.load(Ordering::SeqCst) > 10,
                "the runtime kept running"
            );
        });
        writer.join().unwrap();
        assert_eq!(runtime.block_on(store.load(&id)).unwrap().len(), 1);
    }

    #[test]
    fn the_log_is_checkpointed_into_the_file() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let store = SqliteStore::open(&path).unwrap();
            let id = store.create(NewSession::new("/w")).await.unwrap().id;
            let size = || std::fs::metadata(&path).unwrap().len();
            let before = size();
            // Each record fills about a page: past the threshold, a checkpoint copies the
            // log's pages into the file.
            let record = Record::user(Message::user("x".repeat(3000)));
            for _ in 0..CHECKPOINT_PAGES + 10 {
                store.append(&id, &record).await.unwrap();
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while size() < before + 1_000_000 && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(size() >= before + 1_000_000, "{} bytes", size());
            assert_eq!(store.load(&id).await.unwrap().len(), CHECKPOINT_PAGES + 10);
        });
    }

    #[test]
    fn what_an_append_remembers_is_dropped_when_another_connection_writes() {
        runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let (here, there) = (
                SqliteStore::open(&path).unwrap(),
                SqliteStore::open(&path).unwrap(),
            );
            let first = here.create(NewSession::new("/w")).await.unwrap().id;
            let second = here.create(NewSession::new("/w")).await.unwrap().id;
            let record = |text: &str| Record::user(Message::user(text));
            here.append(&first, &record("1")).await.unwrap();
            // Another connection appends to the same session, then to another one.
            there.append(&first, &record("2")).await.unwrap();
            there.append(&second, &record("x")).await.unwrap();
            // This connection's next append takes the next seq and puts its session first.
            here.append(&first, &record("3")).await.unwrap();
            assert_eq!(
                here.load(&first).await.unwrap(),
                [record("1"), record("2"), record("3")]
            );
            let listed: Vec<_> = there
                .list()
                .await
                .unwrap()
                .into_iter()
                .map(|s| s.id)
                .collect();
            assert_eq!(listed, [first, second]);
        });
    }

    #[test]
    fn a_newer_schema_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.db");
        drop(SqliteStore::open(&path).unwrap());
        let connection = Connection::open(&path).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
        drop(connection);
        let error = SqliteStore::open(&path).unwrap_err();
        assert!(matches!(
            &error,
            SessionError::NewerSchema { path: p, found: 99, supported }
                if *p == path && *supported == MIGRATIONS.len() as i64
        ));
        let connection = Connection::open(&path).unwrap();
        let version: i64 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, 99);
    }
}
