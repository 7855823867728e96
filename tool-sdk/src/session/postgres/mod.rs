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

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls};

use super::redact::redact_password;
use super::{NewSession, Record, SessionError, SessionInfo, SessionLease, SessionStore};
use crate::BoxFuture;
use calls::{describe, millis};

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

// After `retrying!`, which its calls use.
mod calls;
