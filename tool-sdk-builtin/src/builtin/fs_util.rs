//! What the file tools share: resolving paths, the read-before-write check, atomic writes.

use std::fs::{self, Metadata};
use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use tool_sdk_core::{ToolContext, ToolError};

/// Runs blocking file work off the async runtime.
pub(crate) async fn blocking<T, F>(work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    tokio::task::spawn_blocking(work)
        .await
        .unwrap_or_else(|error| Err(ToolError::failed(format!("the file task failed: {error}"))))
}

/// The absolute path `path` names: relative paths are taken from the working directory, and
/// `.` and `..` are removed without touching the filesystem.
pub(crate) fn resolve(ctx: &ToolContext, path: &str) -> PathBuf {
    let joined = ctx.resolve(path);
    let mut clean = PathBuf::new();
    for component in joined.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                clean.pop();
            }
            other => clean.push(other),
        }
    }
    clean
}

/// [`resolve`], then the sandbox's read check (by resolved path, symlinks followed).
pub(crate) fn resolve_for_read(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let resolved = resolve(ctx, path);
    if let Some(sandbox) = ctx.sandbox() {
        sandbox
            .check_read(&resolved)
            .map_err(|error| ToolError::permission_denied(error.to_string()))?;
    }
    Ok(resolved)
}

/// [`resolve`], then the sandbox's write check (outside, symlinks, hard links, protected).
pub(crate) fn resolve_for_write(ctx: &ToolContext, path: &str) -> Result<PathBuf, ToolError> {
    let resolved = resolve(ctx, path);
    if let Some(sandbox) = ctx.sandbox() {
        sandbox
            .check_write(&resolved)
            .map_err(|error| ToolError::permission_denied(error.to_string()))?;
    }
    Ok(resolved)
}

/// The key a file is tracked under: its canonical path when it exists (so symlinks and
/// different spellings of one file agree), else the resolved path.
pub fn tracking_key(path: &Path) -> PathBuf {
    fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The modification time, where the platform has one.
pub fn modified(metadata: &Metadata) -> Option<SystemTime> {
    metadata.modified().ok()
}

/// Refuses directories, FIFOs, sockets and devices, by file type and before anything opens
/// them: opening a FIFO would block until a writer shows up.
pub(crate) fn ensure_regular_file(path: &Path, metadata: &Metadata) -> Result<(), ToolError> {
    let file_type = metadata.file_type();
    if file_type.is_file() {
        return Ok(());
    }
    let what = if file_type.is_dir() {
        "a directory, not a file (list it with a shell command such as `ls` instead)"
    } else {
        special_file_kind(metadata)
    };
    Err(ToolError::invalid_input(format!(
        "{} is {what}; only regular files can be used here",
        path.display()
    )))
}

#[cfg(unix)]
fn special_file_kind(metadata: &Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let file_type = metadata.file_type();
    if file_type.is_fifo() {
        "a named pipe (FIFO)"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_block_device() {
        "a block device"
    } else if file_type.is_char_device() {
        "a character device"
    } else {
        "not a regular file"
    }
}

#[cfg(not(unix))]
fn special_file_kind(_metadata: &Metadata) -> &'static str {
    "not a regular file"
}

/// The metadata of `path`, or `None` when nothing is there.
pub(crate) fn metadata_if_exists(path: &Path) -> Result<Option<Metadata>, ToolError> {
    match fs::metadata(path) {
        Ok(metadata) => Ok(Some(metadata)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(io_error(path, "inspect", &error)),
    }
}

/// A `NotFound` error naming `path`, with a sibling of a similar name when there is one.
pub(crate) fn not_found(path: &Path) -> ToolError {
    let mut message = format!("file does not exist: {}", path.display());
    if let Some(similar) = similar_sibling(path) {
        message.push_str(&format!(" (did you mean {}?)", similar.display()));
    }
    ToolError::not_found(message)
}

fn similar_sibling(path: &Path) -> Option<PathBuf> {
    let parent = path.parent()?;
    let wanted = path.file_name()?.to_string_lossy().to_lowercase();
    let wanted_stem = Path::new(&wanted)
        .file_stem()?
        .to_string_lossy()
        .into_owned();
    let mut best: Option<(f64, PathBuf)> = None;
    for entry in fs::read_dir(parent).ok()?.flatten().take(10_000) {
        let name = entry.file_name().to_string_lossy().to_lowercase();
        let stem = Path::new(&name)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Same name in another case, same stem with another extension, or a near spelling.
        let score = if name == wanted {
            2.0
        } else if stem == wanted_stem {
            1.5
        } else {
            strsim::jaro_winkler(&name, &wanted)
        };
        if score >= 0.85 && best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, entry.path()));
        }
    }
    best.map(|(_, path)| path)
}

/// An I/O failure as the model should see it.
pub(crate) fn io_error(path: &Path, action: &str, error: &io::Error) -> ToolError {
    match error.kind() {
        io::ErrorKind::NotFound => not_found(path),
        io::ErrorKind::PermissionDenied => ToolError::failed(format!(
            "cannot {action} {}: permission denied",
            path.display()
        )),
        _ => ToolError::failed(format!("cannot {action} {}: {error}", path.display())),
    }
}

/// Checks that an existing file may be overwritten: it was read in this session and has not
/// changed on disk since.
pub(crate) fn ensure_read_and_unchanged(
    ctx: &ToolContext,
    path: &Path,
    metadata: &Metadata,
) -> Result<(), ToolError> {
    let key = tracking_key(path);
    let Some(read) = ctx.files().last_read(&key) else {
        return Err(ToolError::invalid_input(format!(
            "{} has not been read yet in this session. Read it with the Read tool first, \
             then make the change",
            path.display()
        )));
    };
    if read.modified != modified(metadata) {
        return Err(ToolError::invalid_input(format!(
            "{} was modified on disk since it was last read (by the user or another \
             program). Read it again to see its current contents before changing it",
            path.display()
        )));
    }
    Ok(())
}

/// After a tool wrote `path`: records the write, and records a fresh read so a following
/// Edit or Write of the same file is allowed.
pub(crate) fn record_written(ctx: &ToolContext, path: &Path) {
    let key = tracking_key(path);
    let modified = fs::metadata(&key).ok().as_ref().and_then(modified);
    ctx.files().record_write(key.clone());
    ctx.files().record_read(key, modified);
}

/// Replaces `path` with `content` atomically (after noting its content in the context's
/// [`FileCheckpointer`](tool_sdk_core::FileCheckpointer), if any): a temporary file in the same directory is
/// written, flushed and renamed over it, so readers see the old or the new contents, never a
/// mix. An existing file keeps its permissions; a symlink is written through, to its target.
/// A new file gets the usual permissions (0666 less the umask).
///
/// Inside an agent the write goes through the sandbox instead, whose temp-file-and-rename is
/// confined by the kernel to the sandbox's directories: a directory swapped for a symlink
/// after the path was checked cannot lead the write outside.
pub(crate) fn write_atomic(
    ctx: &ToolContext,
    path: &Path,
    content: &[u8],
) -> Result<(), ToolError> {
    if let Some(checkpointer) = ctx.file_checkpointer() {
        // What the file holds now, noted before it changes, so the change can be undone.
        let previous = match fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(io_error(path, "read", &error)),
        };
        checkpointer
            .before_change(path, previous.as_deref(), content)
            .map_err(|error| {
                ToolError::failed(format!(
                    "{} was not changed: its earlier content could not be saved for a \
                     rewind ({error})",
                    path.display()
                ))
            })?;
    }
    if let Some(sandbox) = ctx.sandbox() {
        return sandbox
            .write_atomic(path, content)
            .map(|_| ())
            .map_err(|error| ToolError::permission_denied(error.to_string()));
    }
    let existing = metadata_if_exists(path)?;
    let target = match &existing {
        Some(_) => fs::canonicalize(path).map_err(|e| io_error(path, "resolve", &e))?,
        None => path.to_path_buf(),
    };
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if existing.is_none() {
        fs::create_dir_all(&dir).map_err(|e| io_error(&dir, "create the directory", &e))?;
    }
    let mut builder = tempfile::Builder::new();
    builder.prefix(".tool-sdk-").suffix(".tmp");
    #[cfg(unix)]
    let new_file_permissions = {
        use std::os::unix::fs::PermissionsExt;
        fs::Permissions::from_mode(0o666)
    };
    #[cfg(unix)]
    if existing.is_none() {
        // Created with this mode, so the umask applies as it would to any new file.
        builder.permissions(new_file_permissions);
    }
    let mut temp = builder
        .tempfile_in(&dir)
        .map_err(|e| io_error(&dir, "create a temporary file in", &e))?;
    // On any error `temp` is dropped on return, which deletes the temporary file.
    fill(&mut temp, content, existing.as_ref()).map_err(|e| io_error(&target, "write", &e))?;
    temp.persist(&target)
        .map_err(|e| io_error(&target, "replace", &e.error))?;
    Ok(())
}

fn fill(
    temp: &mut tempfile::NamedTempFile,
    content: &[u8],
    existing: Option<&Metadata>,
) -> io::Result<()> {
    temp.write_all(content)?;
    if let Some(metadata) = existing {
        // Set explicitly: unlike the mode given at creation, this is not cut by the umask.
        fs::set_permissions(temp.path(), metadata.permissions())?;
    }
    temp.as_file().sync_all()
}

/// How many lines `text` has, as an editor counts them.
pub(crate) fn line_count(text: &str) -> usize {
    text.lines().count()
}

/// `1 line` or `n lines`.
pub(crate) fn lines_label(n: usize) -> String {
    if n == 1 {
        "1 line".to_owned()
    } else {
        format!("{n} lines")
    }
}
