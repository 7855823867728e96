//! [`PostgresStore`]: sessions in a PostgreSQL database, shared by every process and machine
//! that connects to it.
//!
//! The tables mirror [`SqliteStore`](super::SqliteStore)'s, and so does the behaviour: same
//! ids, same titles, records in the order appended, `list` newest first. What PostgreSQL adds
//! is many writers on many hosts: an append locks its session's row, so two processes
//! appending to one session get one gap-free sequence between them, and leases expire by the
//! database's clock, so hosts whose clocks disagree still agree on who holds a session.
//!
//! Durability is the server's: an append returns once its transaction has committed, which
//! with PostgreSQL's defaults (`synchronous_commit = on`) means it is flushed to the server's
//! write-ahead log.

use std::error::Error as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, GenericClient, IsolationLevel, NoTls, Row};

use super::lease::new_token;
use super::redact::redact_password;
use super::{
    ForkPoint, NewSession, Record, SessionError, SessionInfo, SessionLease, SessionStore,
    read_record, title_of,
};
use crate::BoxFuture;

/// The schema, one migration per version: `MIGRATIONS[i]` takes a database from version `i`
/// to `i + 1` (the row of `session_schema`). Only ever append to this list. Versions 1 and 2
/// match [`SqliteStore`](super::SqliteStore)'s; 3 has no SQLite counterpart.
const MIGRATIONS: &[&str] = &[
    // 1: sessions and their records. `touched` (from a sequence, so concurrent appends never
    // share one) orders `list` by the last append. Bodies are `text`, not `jsonb`: jsonb
    // reorders object keys, and a tool call's input must come back exactly as the model wrote
    // it.
    "CREATE SEQUENCE sessions_touched;
    CREATE TABLE sessions (
        id text PRIMARY KEY,
        title text NOT NULL,
        working_dir text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL,
        touched bigint NOT NULL,
        parent_id text,
        parent_at bigint
    );
    CREATE INDEX sessions_touched_order ON sessions (touched);
    CREATE TABLE records (
        session_id text NOT NULL REFERENCES sessions (id),
        seq bigint NOT NULL,
        kind text NOT NULL,
        body text NOT NULL,
        created_at timestamptz NOT NULL,
        PRIMARY KEY (session_id, seq)
    );",
    // 2: leases (`SessionStore::acquire`), at most one per session, expiring by the
    // database's clock.
    "CREATE TABLE leases (
        session_id text PRIMARY KEY REFERENCES sessions (id),
        holder text NOT NULL,
        token text NOT NULL,
        expires_at timestamptz NOT NULL
    );",
    // 3: titles as their UTF-8 bytes: `text` cannot hold a NUL, which a prompt, and so the
    // title taken from it, may have.
    "ALTER TABLE sessions ALTER COLUMN title TYPE bytea USING convert_to(title, 'UTF8');",
];

/// The advisory lock that makes two processes connecting to a new database at once migrate
/// it one after the other ("tool-sdk" in ASCII).
const MIGRATION_LOCK: i64 = 0x746f_6f6c_2d73_646b;

/// How long a connection attempt may take when the URL sets no `connect_timeout`: a host that
/// drops packets would otherwise hang the first call for minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Sessions in a PostgreSQL database. Cheap to clone (clones share one connection).
///
/// Connect with a URL (`postgres://user:password@host:5432/db`, or a Unix socket as
/// `postgres://user@%2Fvar%2Frun%2Fpostgresql/db` or `postgres:///db?host=/var/run/postgresql`)
/// or a `key=value` string (`host=/var/run/postgresql dbname=db`). The connection is not
/// encrypted (no TLS): use a Unix socket or a network you trust.
///
/// The store creates its tables (`sessions`, `records`, `leases` and `session_schema`, which
/// holds the schema version) on first connection, so give it a database, or a schema through
/// `options=-csearch_path=...`, of its own. A database written by a newer tool-sdk is refused
/// and left alone.
///
/// A connection found lost before anything was committed (the server restarted while the
/// store sat idle) is replaced and the call made again; one lost while a transaction commits
/// fails the call, since whether it took effect is unknown. A server that is down fails each
/// call with [`SessionError::Open`]. Calls on one store run one after another; open several
/// stores for parallel work. The store must be used from a Tokio runtime, which runs its
/// connection.
///
/// ```no_run
/// use tool_sdk::session::{NewSession, PostgresStore, SessionStore};
///
/// # async fn demo() -> Result<(), tool_sdk::session::SessionError> {
/// let store = PostgresStore::connect("postgres://agent@db.internal/sessions").await?;
/// let session = store.create(NewSession::new("/work")).await?;
/// assert_eq!(store.list().await?[0].id, session.id);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    config: Config,
    /// The URL as given, without its password: what messages show.
    shown: String,
    client: Mutex<Option<Client>>,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("url", &self.inner.shown)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// Connects to the database at `url` and brings its schema up to date. Fails with
    /// [`SessionError::Open`] when the server cannot be reached or refuses the login (the
    /// message names the URL without its password), and with [`SessionError::NewerSchema`]
    /// when a newer tool-sdk wrote the database.
    pub async fn connect(url: &str) -> Result<Self, SessionError> {
        let store = Self::lazy(url)?;
        drop(store.client(false).await?);
        Ok(store)
    }

    /// A store for the database at `url` that connects on first use: for code that cannot
    /// wait here, like [`open_store`](super::open_store). Only a malformed `url` fails now.
    pub fn lazy(url: &str) -> Result<Self, SessionError> {
        let shown = redact_password(url);
        let mut config: Config = url.parse().map_err(|error| SessionError::Open {
            path: PathBuf::from(&shown),
            detail: format!("not a PostgreSQL URL: {}", describe(&error)),
            source: Some(crate::error::source(error)),
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                config,
                shown,
                client: Mutex::new(None),
            }),
        })
    }

    /// The URL it connects to, without its password.
    pub fn url(&self) -> &str {
        &self.inner.shown
    }

    /// The connection, opened (and the schema checked) if there is none, it was lost, or
    /// `fresh` asks for a new one.
    async fn client(&self, fresh: bool) -> Result<MappedMutexGuard<'_, Client>, SessionError> {
        let mut slot = self.inner.client.lock().await;
        if fresh || slot.as_ref().is_none_or(Client::is_closed) {
            *slot = None;
            *slot = Some(self.open().await?);
        }
        MutexGuard::try_map(slot, Option::as_mut)
            .map_err(|_| SessionError::storage(format!("{}: no connection", self.inner.shown)))
    }

    async fn open(&self) -> Result<Client, SessionError> {
        let runtime =
            tokio::runtime::Handle::try_current().map_err(|error| SessionError::Open {
                path: self.path(),
                detail: "PostgresStore must be used from a Tokio runtime".to_owned(),
                source: Some(crate::error::source(error)),
            })?;
        let (mut client, connection) = self
            .inner
            .config
            .connect(NoTls)
            .await
            .map_err(|error| self.open_error(error))?;
        let shown = self.inner.shown.clone();
        runtime.spawn(async move {
            if let Err(error) = connection.await {
                tracing::warn!(url = %shown, error = %describe(&error), "session store connection lost");
            }
        });
        self.migrate(&mut client).await?;
        Ok(client)
    }

    /// Brings the schema up to date in one transaction, under an advisory lock so that
    /// processes connecting at once take turns: a crash midway leaves the database as it was.
    async fn migrate(&self, client: &mut Client) -> Result<(), SessionError> {
        let fail = |error: tokio_postgres::Error| self.open_error(error);
        let transaction = client.transaction().await.map_err(fail)?;
        transaction
            .batch_execute(&format!(
                "SELECT pg_advisory_xact_lock({MIGRATION_LOCK});
                 CREATE TABLE IF NOT EXISTS session_schema (version bigint NOT NULL);"
            ))
            .await
            .map_err(fail)?;
        let version: i64 = transaction
            .query_one("SELECT coalesce(max(version), 0) FROM session_schema", &[])
            .await
            .map_err(fail)?
            .try_get(0)
            .map_err(fail)?;
        let supported = MIGRATIONS.len() as i64;
        if version > supported {
            return Err(SessionError::NewerSchema {
                path: self.path(),
                found: version,
                supported,
            });
        }
        if version == supported {
            return transaction.commit().await.map_err(fail);
        }
        for migration in MIGRATIONS.iter().skip(version.max(0) as usize) {
            transaction.batch_execute(migration).await.map_err(fail)?;
        }
        transaction
            .execute("DELETE FROM session_schema", &[])
            .await
            .map_err(fail)?;
        transaction
            .execute(
                "INSERT INTO session_schema (version) VALUES ($1)",
                &[&supported],
            )
            .await
            .map_err(fail)?;
        transaction.commit().await.map_err(fail)
    }

    /// The URL, as the `path` of the errors shared with the SQLite store.
    fn path(&self) -> PathBuf {
        PathBuf::from(&self.inner.shown)
    }

    fn open_error(&self, error: tokio_postgres::Error) -> SessionError {
        SessionError::Open {
            path: self.path(),
            detail: describe(&error),
            source: Some(crate::error::source(error)),
        }
    }

    fn storage_error(&self, error: tokio_postgres::Error) -> SessionError {
        let hint = if error.is_closed() {
            " (the connection was lost; the next call connects again)"
        } else if error.code() == Some(&SqlState::CHARACTER_NOT_IN_REPERTOIRE) {
            // Prompts and titles may hold one; a working directory or a lease holder may not.
            " (PostgreSQL text cannot hold a NUL character)"
        } else {
            ""
        };
        let detail = format!("{}: {}{hint}", self.inner.shown, describe(&error));
        SessionError::storage_from(detail, error)
    }
}

/// How one attempt at a call failed.
enum Attempt {
    /// The connection was found closed before anything could have been committed: the call
    /// may be made again on a new connection. This is how a server restart that happened
    /// while the store sat idle shows up.
    Retry(tokio_postgres::Error),
    /// Anything else, said in the caller's words.
    Fail(SessionError),
}

impl From<SessionError> for Attempt {
    fn from(error: SessionError) -> Self {
        Attempt::Fail(error)
    }
}

/// Runs `$attempt` (an expression using the connection `$client`) and, when it fails with
/// [`Attempt::Retry`], once more on a new connection. A macro rather than a function taking a
/// closure: the attempt borrows the connection it is given, which a closure's future cannot
/// name.
macro_rules! retrying {
    ($store:ident, $client:ident => $attempt:expr) => {{
        let mut fresh = false;
        loop {
            #[allow(unused_mut)]
            let mut $client = $store.client(fresh).await?;
            match $attempt.await {
                Ok(value) => break Ok(value),
                Err(Attempt::Retry(_)) if !fresh => fresh = true,
                Err(Attempt::Retry(error)) => break Err($store.storage_error(error)),
                Err(Attempt::Fail(error)) => break Err(error),
            }
        }
    }};
}

impl SessionStore for PostgresStore {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        Box::pin(async move {
            let id = format!(
                "session-{}-{:08x}",
                millis(SystemTime::now()),
                fastrand::u32(..)
            );
            let created = retrying!(self, client => self.try_create(&mut client, &id, &new))?;
            Ok(SessionInfo {
                id,
                title: new.title,
                working_dir: new.working_dir,
                created_at: created,
                updated_at: created,
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
        Box::pin(async move { retrying!(self, client => self.try_load(&mut client, id)) })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
        Box::pin(async move { retrying!(self, client => self.session_row(&*client, id)) })
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
        Box::pin(async move { retrying!(self, client => self.try_list(&client)) })
    }

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
        // Made again after a lost connection: renewing twice is the same as once.
        Box::pin(async move { retrying!(self, client => self.try_renew(&client, lease)) })
    }

    fn release<'a>(&'a self, lease: &'a SessionLease) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            retrying!(self, client => async {
                client
                    .execute(
                        "DELETE FROM leases WHERE session_id = $1 AND token = $2",
                        &[&lease.session(), &lease.token()],
                    )
                    .await
                    .map_err(|error| self.retry_or_fail(error))?;
                Ok(())
            })
        })
    }
}

/// One attempt at each call, on the connection given. Errors before a transaction's COMMIT
/// are [`Attempt::Retry`] when the connection was closed: nothing was committed. A COMMIT that
/// fails is not retried: whether it took effect is unknown.
impl PostgresStore {
    /// [`SessionStore::acquire`], or [`SessionStore::take_over`] from `dead`.
    fn take_lease<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
        dead: Option<&'a str>,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        Box::pin(async move {
            // A lease freed between taking and reading it is tried again; three rounds lost
            // in a row to other processes means it changes hands too fast to say who holds
            // it.
            for _ in 0..3 {
                let taken = retrying!(self, client => self.try_acquire(&mut client, id, holder, ttl, dead))?;
                if let Some(lease) = taken {
                    return Ok(lease);
                }
            }
            Err(SessionError::storage(format!(
                "{}: the lease of session `{id}` changed hands too often to be taken",
                self.inner.shown
            )))
        })
    }

    /// Appends `records` to session `id`; with a `fence`, only while that lease is still the
    /// session's (checked inside the append's transaction).
    fn append_rows<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
        fence: Option<&'a SessionLease>,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            let rows = records
                .iter()
                .map(|record| {
                    serde_json::to_string(record)
                        .map(|body| (record.kind(), body))
                        .map_err(|error| {
                            let detail = format!("the record cannot be written as JSON: {error}");
                            SessionError::storage_from(detail, error)
                        })
                })
                .collect::<Result<Vec<_>, _>>()?;
            if rows.is_empty() {
                return Ok(());
            }
            let title = records.iter().find_map(|record| match record {
                Record::UserMessage { message } => Some(title_of(message)),
                _ => None,
            });
            retrying!(self, client => self.try_append(&mut client, id, &rows, &title, fence))
        })
    }

    fn retry_or_fail(&self, error: tokio_postgres::Error) -> Attempt {
        match error.is_closed() {
            true => Attempt::Retry(error),
            false => Attempt::Fail(self.storage_error(error)),
        }
    }

    fn commit_failed(&self, error: tokio_postgres::Error) -> Attempt {
        match error.is_closed() {
            true => {
                let detail = format!(
                    "{}: the connection was lost while committing, so whether the change was \
                     stored is unknown ({})",
                    self.inner.shown,
                    describe(&error)
                );
                Attempt::Fail(SessionError::storage_from(detail, error))
            }
            false => Attempt::Fail(self.storage_error(error)),
        }
    }

    async fn try_create(
        &self,
        client: &mut Client,
        id: &str,
        new: &NewSession,
    ) -> Result<SystemTime, Attempt> {
        let retry = |error| self.retry_or_fail(error);
        let working_dir = new.working_dir.to_string_lossy();
        // A NUL is no text PostgreSQL takes, and no session's id.
        if let Some(parent) = new.parent.as_ref().filter(|p| p.session.contains('\0')) {
            return Err(Attempt::Fail(SessionError::UnknownParent {
                parent: parent.session.clone(),
            }));
        }
        let (parent_id, parent_at) = match &new.parent {
            Some(parent) => (
                Some(parent.session.as_str()),
                Some(i64::try_from(parent.at).unwrap_or(i64::MAX)),
            ),
            None => (None, None),
        };
        // In a transaction (one INSERT alone would commit as it runs), so that a connection
        // found closed can be told from a commit whose answer was lost.
        let transaction = client.transaction().await.map_err(retry)?;
        // No row when the parent is missing. The parent's row is not locked: sessions are
        // never deleted.
        let created = transaction
            .query_opt(
                "INSERT INTO sessions
                    (id, title, working_dir, created_at, updated_at, touched, parent_id,
                     parent_at)
                 SELECT $1, $2, $3, now(), now(), nextval('sessions_touched'), $4, $5
                 WHERE $4::text IS NULL OR EXISTS (SELECT 1 FROM sessions WHERE id = $4)
                 RETURNING created_at",
                &[
                    &id,
                    &new.title.as_bytes(),
                    &working_dir,
                    &parent_id,
                    &parent_at,
                ],
            )
            .await
            .map_err(retry)?;
        let created = match (created, parent_id) {
            (Some(row), _) => row.try_get(0).map_err(retry)?,
            (None, parent) => {
                return Err(Attempt::Fail(SessionError::UnknownParent {
                    parent: parent.unwrap_or_default().to_owned(),
                }));
            }
        };
        transaction
            .commit()
            .await
            .map_err(|error| self.commit_failed(error))?;
        Ok(created)
    }

    async fn try_append(
        &self,
        client: &mut Client,
        id: &str,
        rows: &[(&str, String)],
        title: &Option<String>,
        fence: Option<&SessionLease>,
    ) -> Result<(), Attempt> {
        let retry = |error| self.retry_or_fail(error);
        let transaction = client.transaction().await.map_err(retry)?;
        // The UPDATE locks the session's row until commit, so appends to one session, from
        // any process, take turns; the INSERT is a statement of its own so that it reads
        // `max(seq)` after the lock is held (each statement sees what committed before it
        // began). Hence one gap-free sequence per session.
        let updated = transaction
            .execute(
                "UPDATE sessions SET
                    updated_at = now(),
                    touched = nextval('sessions_touched'),
                    title = CASE WHEN title = ''::bytea AND $2::bytea IS NOT NULL THEN $2
                            ELSE title END
                 WHERE id = $1",
                &[&id, &title.as_deref().map(str::as_bytes)],
            )
            .await
            .map_err(retry)?;
        if updated == 0 {
            // Dropping the transaction rolls it back.
            return Err(Attempt::Fail(SessionError::UnknownSession {
                id: id.to_owned(),
            }));
        }
        if let Some(lease) = fence {
            // FOR SHARE: a taker's UPDATE of the lease waits for this commit, and one that
            // committed first has changed the token, so the row is not found.
            let ours = transaction
                .query_opt(
                    "SELECT 1 FROM leases WHERE session_id = $1 AND token = $2 FOR SHARE",
                    &[&id, &lease.token()],
                )
                .await
                .map_err(retry)?;
            if ours.is_none() {
                return Err(Attempt::Fail(SessionError::LeaseLost {
                    id: id.to_owned(),
                    holder: lease.holder().to_owned(),
                }));
            }
        }
        for (kind, body) in rows {
            transaction
                .execute(
                    "INSERT INTO records (session_id, seq, kind, body, created_at)
                     SELECT $1, coalesce(max(seq), -1) + 1, $2, $3, now()
                     FROM records WHERE session_id = $1",
                    &[&id, kind, body],
                )
                .await
                .map_err(retry)?;
        }
        transaction
            .commit()
            .await
            .map_err(|error| self.commit_failed(error))
    }

    async fn try_load(&self, client: &mut Client, id: &str) -> Result<Vec<Record>, Attempt> {
        let retry = |error| self.retry_or_fail(error);
        // One snapshot for both reads, so the records match the session row read.
        let transaction = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(retry)?;
        self.session_row(&transaction, id).await?;
        let rows = transaction
            .query(
                "SELECT seq, kind, body FROM records WHERE session_id = $1 ORDER BY seq",
                &[&id],
            )
            .await
            .map_err(retry)?;
        let mut records = Vec::with_capacity(rows.len());
        for row in rows {
            let seq: i64 = row.try_get(0).map_err(retry)?;
            let kind: &str = row.try_get(1).map_err(retry)?;
            let body: &str = row.try_get(2).map_err(retry)?;
            records.push(read_record(id, seq, kind, body));
        }
        // Read only: nothing to lose if the commit's answer is.
        transaction.commit().await.map_err(retry)?;
        Ok(records)
    }

    async fn try_list(&self, client: &Client) -> Result<Vec<SessionInfo>, Attempt> {
        let rows = client
            .query(&format!("{SELECT_SESSION} ORDER BY touched DESC"), &[])
            .await
            .map_err(|error| self.retry_or_fail(error))?;
        Ok(rows
            .iter()
            .map(|row| self.info_of_row(row))
            .collect::<Result<_, _>>()?)
    }

    /// The lease, or `None` when the lease in the way was freed before it could be read.
    async fn try_acquire(
        &self,
        client: &mut Client,
        id: &str,
        holder: &str,
        ttl: Duration,
        dead: Option<&str>,
    ) -> Result<Option<SessionLease>, Attempt> {
        let retry = |error| self.retry_or_fail(error);
        // Counted from before the database reads its clock, so the lease never outlives
        // what the caller believes.
        let since = Instant::now();
        let token = new_token();
        let transaction = client.transaction().await.map_err(retry)?;
        // One statement: a live lease is kept (the WHERE fails) unless its holder is `dead`,
        // an expired one is replaced, and a concurrent taker waits on the row and then sees
        // the winner's.
        let taken = transaction
            .query_opt(
                "INSERT INTO leases (session_id, holder, token, expires_at)
                 VALUES ($1, $2, $3, now() + make_interval(secs => $4))
                 ON CONFLICT (session_id) DO UPDATE SET
                    holder = excluded.holder,
                    token = excluded.token,
                    expires_at = excluded.expires_at
                 WHERE leases.expires_at <= now() OR leases.holder = $5
                 RETURNING token",
                &[&id, &holder, &token, &ttl.as_secs_f64(), &dead],
            )
            .await;
        match taken {
            Ok(Some(_)) => {}
            Ok(None) => {
                return match self.live_lease(&transaction, id).await? {
                    Some(busy) => Err(Attempt::Fail(busy)),
                    None => Ok(None),
                };
            }
            Err(error) if error.code() == Some(&SqlState::FOREIGN_KEY_VIOLATION) => {
                return Err(Attempt::Fail(SessionError::UnknownSession {
                    id: id.to_owned(),
                }));
            }
            Err(error) => return Err(retry(error)),
        }
        transaction
            .commit()
            .await
            .map_err(|error| self.commit_failed(error))?;
        Ok(Some(SessionLease::new(id, holder, token, ttl, since)))
    }

    async fn try_renew(
        &self,
        client: &Client,
        lease: &SessionLease,
    ) -> Result<SessionLease, Attempt> {
        let since = Instant::now();
        // The token, not the holder, says whether the lease is still ours: it changes
        // whenever anyone takes the session, even the same holder.
        let renewed = client
            .execute(
                "UPDATE leases SET expires_at = now() + make_interval(secs => $3)
                 WHERE session_id = $1 AND token = $2",
                &[&lease.session(), &lease.token(), &lease.ttl().as_secs_f64()],
            )
            .await
            .map_err(|error| self.retry_or_fail(error))?;
        if renewed == 0 {
            let lost = SessionError::LeaseLost {
                id: lease.session().to_owned(),
                holder: lease.holder().to_owned(),
            };
            return Err(Attempt::Fail(
                self.live_lease(client, lease.session())
                    .await?
                    .unwrap_or(lost),
            ));
        }
        Ok(lease.renewed(since))
    }

    /// The live lease on session `id`, as the error that refuses another taker.
    async fn live_lease(
        &self,
        client: &impl GenericClient,
        id: &str,
    ) -> Result<Option<SessionError>, Attempt> {
        let retry = |error| self.retry_or_fail(error);
        let Some(row) = client
            .query_opt(
                "SELECT holder, extract(epoch FROM expires_at - now())::float8 FROM leases
                 WHERE session_id = $1 AND expires_at > now()",
                &[&id],
            )
            .await
            .map_err(retry)?
        else {
            return Ok(None);
        };
        let seconds: f64 = row.try_get(1).map_err(retry)?;
        Ok(Some(SessionError::Busy {
            id: id.to_owned(),
            holder: row.try_get(0).map_err(retry)?,
            expires_in: Duration::try_from_secs_f64(seconds).unwrap_or_default(),
        }))
    }
}

const SELECT_SESSION: &str = "SELECT id, title, working_dir, created_at, updated_at, parent_id, \
                              parent_at FROM sessions";

impl PostgresStore {
    async fn session_row(
        &self,
        client: &impl GenericClient,
        id: &str,
    ) -> Result<SessionInfo, Attempt> {
        // No id has one, and PostgreSQL would refuse the query for it.
        if id.contains('\0') {
            return Err(SessionError::UnknownSession { id: id.to_owned() }.into());
        }
        let row = client
            .query_opt(&format!("{SELECT_SESSION} WHERE id = $1"), &[&id])
            .await
            .map_err(|error| self.retry_or_fail(error))?
            .ok_or_else(|| SessionError::UnknownSession { id: id.to_owned() })?;
        Ok(self.info_of_row(&row)?)
    }

    fn info_of_row(&self, row: &Row) -> Result<SessionInfo, SessionError> {
        let fail = |error: tokio_postgres::Error| self.storage_error(error);
        let parent_id: Option<String> = row.try_get(5).map_err(fail)?;
        let parent_at: Option<i64> = row.try_get(6).map_err(fail)?;
        let title = String::from_utf8(row.try_get(1).map_err(fail)?).map_err(|error| {
            let detail = format!(
                "{}: a session's title is not UTF-8: {error}",
                self.inner.shown
            );
            SessionError::storage_from(detail, error)
        })?;
        Ok(SessionInfo {
            id: row.try_get(0).map_err(fail)?,
            title,
            working_dir: PathBuf::from(row.try_get::<_, String>(2).map_err(fail)?),
            created_at: row.try_get(3).map_err(fail)?,
            updated_at: row.try_get(4).map_err(fail)?,
            parent: parent_id.map(|session| ForkPoint {
                session,
                at: usize::try_from(parent_at.unwrap_or(0)).unwrap_or(0),
            }),
        })
    }
}

fn millis(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// An error with its causes, on one line: tokio-postgres's own message is only its kind
/// ("error connecting to server", "db error"), the useful words are in the causes.
fn describe(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text.replace('\n', "; ")
}
