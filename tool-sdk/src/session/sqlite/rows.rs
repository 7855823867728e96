//! Rows in and out: records into the `records` table, sessions out of `sessions`.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rusqlite::{Connection, OptionalExtension, params};

use super::{LastAppend, storage_error};
use crate::session::{ForkPoint, Record, SessionError, SessionInfo, title_of};

/// A record as it goes into the `records` table.
pub(super) struct Row {
    pub(super) kind: &'static str,
    pub(super) body: String,
    /// The title it gives a session that has none (a user message's).
    pub(super) title: Option<String>,
}

impl Row {
    pub(super) fn of(record: &Record) -> Result<Row, SessionError> {
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

pub(super) enum Inserted {
    Unknown,
    /// The lease that fenced the append is no longer the session's.
    Fenced,
    Failed(rusqlite::Error),
}

impl Inserted {
    pub(super) fn into_session_error(
        self,
        id: &str,
        holder: Option<&str>,
        path: &Path,
    ) -> SessionError {
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
pub(super) fn fenced(
    connection: &Connection,
    id: &str,
    fence: Option<&str>,
) -> Result<(), Inserted> {
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
pub(super) fn commit_rows(
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
pub(super) fn begin_immediate(connection: &Connection) -> rusqlite::Result<()> {
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
pub(super) fn insert_rows(
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
pub(super) const SELECT_SESSION: &str = "SELECT id, title, working_dir, created_at, \
    MAX(updated_at, COALESCE((SELECT created_at FROM records \
        WHERE records.session_id = sessions.id ORDER BY seq DESC LIMIT 1), 0)), \
    parent_id, parent_at FROM sessions";

pub(super) fn session_row(
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

pub(super) fn info_of_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionInfo> {
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

pub(super) fn millis(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

pub(super) fn from_millis(millis: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(millis).unwrap_or(0))
}
