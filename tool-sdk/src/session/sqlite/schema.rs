//! The file's schema and its migrations, and SQLite's errors in words.

use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode};

use super::files;
use crate::session::SessionError;

/// The schema, one migration per version: `migrations[i]` takes a file from version `i` to
/// `i + 1` (`PRAGMA user_version`). Only ever append to this list.
pub(super) const MIGRATIONS: &[&str] = &[
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

/// A damaged file says so and names itself; anything else is a failed open.
/// Brings the schema from the version the file has to the newest, inside the caller's
/// transaction.
pub(super) fn migrate(connection: &Connection) -> rusqlite::Result<()> {
    let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    for (from, migration) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        connection.execute_batch(migration)?;
        connection.pragma_update(None, "user_version", (from + 1) as i64)?;
    }
    Ok(())
}

/// Runs `step` again while SQLite answers "busy" without having waited, for up to 5 s.
pub(super) fn when_not_busy<T>(
    mut step: impl FnMut() -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
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

pub(super) fn open_error(path: &Path, error: rusqlite::Error) -> SessionError {
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
pub(super) fn with_shared_memory_hint(path: &Path, error: &rusqlite::Error) -> String {
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

pub(super) fn storage_error(path: &Path, error: rusqlite::Error) -> SessionError {
    match corruption(&error) {
        true => SessionError::Corrupt {
            path: path.to_path_buf(),
            detail: error.to_string(),
            source: Some(crate::error::source(error)),
        },
        false => SessionError::storage_from(format!("{}: {error}", path.display()), error),
    }
}

pub(super) fn corruption(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt)
    )
}
