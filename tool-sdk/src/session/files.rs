//! The files of a [`SqliteStore`](super::SqliteStore), made ready before SQLite opens them:
//! private to their owner, and its side files ones SQLite can write.
//!
//! A session file holds prompts, file contents and command output, so it is created `0600`
//! whatever the umask; SQLite gives the `-wal` and `-shm` it creates the mode of the database
//! file. Files left readable by others (by an older tool-sdk, or by hand) lose those bits.

use std::path::{Path, PathBuf};

/// Why a file is not ready: in words for the person who has to fix it, and the I/O error
/// beneath, if any.
pub(super) struct Unusable {
    pub(super) detail: String,
    pub(super) source: Option<std::io::Error>,
}

fn unusable(detail: String, source: impl Into<Option<std::io::Error>>) -> Unusable {
    Unusable {
        detail,
        source: source.into(),
    }
}

/// Readies the database at `path` and its `-wal` and `-shm`; the error says what is wrong, in
/// words for the person who has to fix it.
pub(super) fn prepare(path: &Path) -> Result<(), Unusable> {
    // SQLite's own names for a database in memory or a temporary one, and URIs: no file of
    // ours to create.
    let text = path.to_string_lossy();
    if text.is_empty() || text == ":memory:" || text.starts_with("file:") {
        return Ok(());
    }
    create_private(path)?;
    for side in [side_file(path, "-wal"), side_file(path, "-shm")] {
        usable_side_file(&side)?;
    }
    for file in [
        path.to_path_buf(),
        side_file(path, "-wal"),
        side_file(path, "-shm"),
    ] {
        make_private(&file);
    }
    Ok(())
}

/// `path` with `suffix` added to its file name, as SQLite names its side files.
pub(super) fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Creates the database file, empty and `0600`, when it does not exist yet: SQLite would
/// create it by the umask, readable by everyone under the usual one.
#[cfg(unix)]
fn create_private(path: &Path) -> Result<(), Unusable> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let created = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path);
    match created {
        // The umask may have taken the owner's bits too; a mode set afterwards ignores it.
        Ok(file) => file
            .set_permissions(std::fs::Permissions::from_mode(0o600))
            .map_err(|e| unusable(format!("cannot make {} private: {e}", path.display()), e)),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(unusable(
            format!("cannot create {}: {error}", path.display()),
            error,
        )),
    }
}

#[cfg(not(unix))]
fn create_private(_path: &Path) -> Result<(), Unusable> {
    Ok(())
}

/// Takes the group's and others' permissions off `file` if it exists and has any. A file
/// this user does not own (a store shared on purpose through a group) is left as it is, with
/// a warning.
#[cfg(unix)]
fn make_private(file: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let Ok(metadata) = std::fs::symlink_metadata(file) else {
        return;
    };
    let mode = metadata.permissions().mode();
    if !metadata.is_file() || mode & 0o077 == 0 {
        return;
    }
    let private = std::fs::Permissions::from_mode(mode & 0o7700);
    if let Err(error) = std::fs::set_permissions(file, private) {
        tracing::warn!(
            file = %file.display(),
            %error,
            "a session file is readable by other users and its mode cannot be changed"
        );
    }
}

#[cfg(not(unix))]
fn make_private(_file: &Path) {}

/// Refuses a `-wal` or `-shm` SQLite could not use as its own: one it cannot open for writing
/// falls back to read-only and fails every append later with "attempt to write a readonly
/// database", and opening one that is a FIFO can block forever.
#[cfg(unix)]
fn usable_side_file(side: &Path) -> Result<(), Unusable> {
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    let metadata = match std::fs::symlink_metadata(side) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => {
            return Err(unusable(
                format!("cannot read {}: {error}", side.display()),
                error,
            ));
        }
    };
    let kind = metadata.file_type();
    let what = if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_block_device() || kind.is_char_device() {
        "a device"
    } else {
        ""
    };
    let remedy = "if no process has the store open, remove it and SQLite makes a new one";
    if !what.is_empty() {
        return Err(unusable(
            format!(
                "{} is {what}, not a file SQLite can use as its own; {remedy}",
                side.display()
            ),
            None,
        ));
    }
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(side)
        .map(drop)
        .map_err(|error| {
            let detail = format!(
                "cannot open {} for writing ({error}), which SQLite needs to write to the \
                 store; {remedy}",
                side.display()
            );
            unusable(detail, error)
        })
}

#[cfg(not(unix))]
fn usable_side_file(_side: &Path) -> Result<(), Unusable> {
    Ok(())
}
