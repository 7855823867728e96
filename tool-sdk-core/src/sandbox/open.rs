//! Resolving and opening paths beneath a root's directory handle, and what an opened file
//! must be to be written.

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::fs::OpenOptions;

use super::{Root, SandboxError};

/// Resolves a path that does not exist: canonicalises its deepest existing ancestor and appends
/// the rest, which may hold only plain names and may not start with a (dangling) link.
pub(super) fn resolve_missing(path: &Path, full: &Path) -> Result<PathBuf, SandboxError> {
    let comps: Vec<Component<'_>> = full.components().collect();
    for i in (1..comps.len()).rev() {
        let prefix: PathBuf = comps[..i].iter().collect();
        let base = match fs::canonicalize(&prefix) {
            Ok(base) => base,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(SandboxError::io(path, e)),
        };
        let mut resolved = base;
        for (j, c) in comps[i..].iter().enumerate() {
            match c {
                Component::Normal(n) => {
                    resolved.push(n);
                    if j == 0 && fs::symlink_metadata(&resolved).is_ok() {
                        // It exists yet canonicalize said not found: a dangling link.
                        return Err(SandboxError::DanglingSymlink {
                            path: path.to_path_buf(),
                        });
                    }
                }
                Component::CurDir => {}
                _ => {
                    return Err(SandboxError::invalid(
                        path,
                        "`..` after a directory that does not exist",
                    ));
                }
            }
        }
        return Ok(resolved);
    }
    Err(SandboxError::io(
        path,
        io::Error::new(io::ErrorKind::NotFound, "no part of the path exists"),
    ))
}

pub(super) fn canonical_dir(dir: &Path) -> io::Result<PathBuf> {
    let path = fs::canonicalize(dir)?;
    if !fs::metadata(&path)?.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is not a directory", path.display()),
        ));
    }
    Ok(path)
}

/// Opens `rel` beneath `root` through its directory handle: the kernel refuses to leave it.
pub(super) fn open_beneath(
    root: &Root,
    rel: &Path,
    opts: &OpenOptions,
    shown: &Path,
) -> Result<fs::File, SandboxError> {
    root.dir
        .open_with(rel, opts)
        .map(|f| f.into_std())
        .map_err(|e| SandboxError::Io {
            path: shown.to_path_buf(),
            kind: e.kind(),
            message: format!(
                "refused by the open confined to {}: {e}",
                root.path.display()
            ),
            source: e.into(),
        })
}

/// Non-blocking (a FIFO must not hang the agent; it is refused once opened) and, for writes,
/// not following a link in the last component.
#[cfg(unix)]
pub(super) fn set_flags(opts: &mut OpenOptions, no_follow: bool) {
    use cap_std::fs::OpenOptionsExt;
    let mut flags = libc::O_NONBLOCK;
    if no_follow {
        flags |= libc::O_NOFOLLOW;
    }
    opts.custom_flags(flags);
}

#[cfg(not(unix))]
pub(super) fn set_flags(_opts: &mut OpenOptions, _no_follow: bool) {}

#[cfg(unix)]
pub(super) fn link_count(meta: &fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt;
    meta.nlink()
}

#[cfg(not(unix))]
pub(super) fn link_count(_meta: &fs::Metadata) -> u64 {
    1
}

pub(super) fn check_writable_file(path: &Path, meta: &fs::Metadata) -> Result<(), SandboxError> {
    if !meta.is_file() {
        return Err(not_regular(path, meta));
    }
    let links = link_count(meta);
    if links > 1 {
        return Err(SandboxError::HardLinked {
            path: path.to_path_buf(),
            links,
        });
    }
    Ok(())
}

pub(super) fn not_regular(path: &Path, meta: &fs::Metadata) -> SandboxError {
    let ft = meta.file_type();
    let mut kind = if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symbolic link"
    } else {
        "special file"
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if ft.is_fifo() {
            kind = "FIFO (named pipe)";
        } else if ft.is_socket() {
            kind = "socket";
        } else if ft.is_block_device() {
            kind = "block device";
        } else if ft.is_char_device() {
            kind = "character device";
        }
    }
    SandboxError::NotRegularFile {
        path: path.to_path_buf(),
        kind: kind.to_string(),
    }
}
