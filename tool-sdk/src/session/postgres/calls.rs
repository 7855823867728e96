//! Each call of the store, one attempt at a time on the connection given.

use std::error::Error as _;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, GenericClient, IsolationLevel, Row};

use super::{Attempt, PostgresStore};
use crate::BoxFuture;
use crate::session::lease::new_token;
use crate::session::{
    ForkPoint, NewSession, Record, SessionError, SessionInfo, SessionLease, read_record, title_of,
};

/// One attempt at each call, on the connection given. Errors before a transaction's COMMIT
/// are [`Attempt::Retry`] when the connection was closed: nothing was committed. A COMMIT that
/// fails is not retried: whether it took effect is unknown.
impl PostgresStore {
    /// [`SessionStore::acquire`], or [`SessionStore::take_over`] from `dead`.
    pub(super) fn take_lease<'a>(
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
    pub(super) fn append_rows<'a>(
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

    pub(super) fn retry_or_fail(&self, error: tokio_postgres::Error) -> Attempt {
        match error.is_closed() {
            true => Attempt::Retry(error),
            false => Attempt::Fail(self.storage_error(error)),
        }
    }

    pub(super) fn commit_failed(&self, error: tokio_postgres::Error) -> Attempt {
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

    pub(super) async fn try_create(
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

    pub(super) async fn try_append(
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

    pub(super) async fn try_load(
        &self,
        client: &mut Client,
        id: &str,
    ) -> Result<Vec<Record>, Attempt> {
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

    pub(super) async fn try_list(&self, client: &Client) -> Result<Vec<SessionInfo>, Attempt> {
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
    pub(super) async fn try_acquire(
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

    pub(super) async fn try_renew(
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
    pub(super) async fn live_lease(
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

const SELECT_SESSION: &str =
    "SELECT id, title, working_dir, created_at, updated_at, parent_id, parent_at FROM sessions";

impl PostgresStore {
    pub(super) async fn session_row(
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

    pub(super) fn info_of_row(&self, row: &Row) -> Result<SessionInfo, SessionError> {
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

pub(super) fn millis(time: SystemTime) -> u128 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

/// An error with its causes, on one line: tokio-postgres's own message is only its kind
/// ("error connecting to server", "db error"), the useful words are in the causes.
pub(super) fn describe(error: &tokio_postgres::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(inner) = cause {
        text.push_str(": ");
        text.push_str(&inner.to_string());
        cause = inner.source();
    }
    text.replace('\n', "; ")
}
