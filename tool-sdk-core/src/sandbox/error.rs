//! Why the sandbox refused a path, in words a model can act on.

use std::io;
use std::path::{Path, PathBuf};

use crate::error::Shared;

/// Why the sandbox refused a path. The message says what was refused and why, in words a
/// model can act on.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The path is empty, contains a NUL byte, or climbs (`..`) out of a directory that does
    /// not exist.
    #[error("{}: invalid path: {reason}", .path.display())]
    InvalidPath {
        /// The path as given.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// The resolved path lies outside every root.
    #[error("{}", outside_message(.path, .resolved, .working_dir, .allowed))]
    Outside {
        /// The path as given.
        path: PathBuf,
        /// Where it resolves to.
        resolved: PathBuf,
        /// The sandbox's working directory.
        working_dir: PathBuf,
        /// The other allowed directories.
        allowed: Vec<PathBuf>,
    },
    /// A write inside a directory allowed for reading only.
    #[error(
        "{} is in {}, which is allowed for reading only; write inside the working directory instead",
        .path.display(), .root.display()
    )]
    ReadOnly {
        /// The path as given.
        path: PathBuf,
        /// The read-only root it lies in.
        root: PathBuf,
    },
    /// A write to a symbolic link.
    #[error(
        "{} is a symbolic link; the sandbox does not write through links: write its target {} instead",
        .path.display(), .target.display()
    )]
    Symlink {
        /// The path as given.
        path: PathBuf,
        /// Where the link resolves to.
        target: PathBuf,
    },
    /// A symbolic link whose target does not exist.
    #[error(
        "{} is a symbolic link whose target does not exist; refusing to follow it",
        .path.display()
    )]
    DanglingSymlink {
        /// The path as given.
        path: PathBuf,
    },
    /// A write to a file with several hard links.
    #[error(
        "{} has {links} hard links; writing it would also change the file under its other names, so it is refused",
        .path.display()
    )]
    HardLinked {
        /// The path as given.
        path: PathBuf,
        /// How many links the file has.
        links: u64,
    },
    /// Not a regular file (directory, FIFO, socket, device).
    #[error("{} is a {kind}, not a regular file", .path.display())]
    NotRegularFile {
        /// The path as given.
        path: PathBuf,
        /// What it is instead.
        kind: String,
    },
    /// A protected path (`.git` internals, shell startup files, `.ssh`, agent configuration).
    #[error(
        "{} is protected ({rule}); the agent may not write it. Ask the user to make this change",
        .path.display()
    )]
    Protected {
        /// The path as given.
        path: PathBuf,
        /// The rule that protects it.
        rule: String,
    },
    /// The file system reported an error (not found, permission denied, a path that changed
    /// and now leads outside the root, ...).
    #[error("{}: {message}", .path.display())]
    Io {
        /// The path as given.
        path: PathBuf,
        /// The error's kind.
        kind: io::ErrorKind,
        /// The error's message.
        message: String,
        /// The error itself.
        source: Shared<io::Error>,
    },
}

fn outside_message(
    path: &Path,
    resolved: &Path,
    working_dir: &Path,
    allowed: &[PathBuf],
) -> String {
    let mut s = if path == resolved {
        format!("{} is outside", path.display())
    } else {
        format!(
            "{} resolves to {}, which is outside",
            path.display(),
            resolved.display()
        )
    };
    s.push_str(&format!(" the working directory {}", working_dir.display()));
    if allowed.is_empty() {
        s.push_str("; only paths inside it may be used");
    } else {
        let list: Vec<String> = allowed.iter().map(|p| p.display().to_string()).collect();
        s.push_str(&format!(
            " and the allowed directories ({}); use a path inside one of them",
            list.join(", ")
        ));
    }
    s
}

impl SandboxError {
    pub(super) fn io(path: &Path, err: io::Error) -> Self {
        SandboxError::Io {
            path: path.to_path_buf(),
            kind: err.kind(),
            message: err.to_string(),
            source: err.into(),
        }
    }

    pub(super) fn invalid(path: &Path, reason: &str) -> Self {
        SandboxError::InvalidPath {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_message_names_roots() {
        let msg = SandboxError::Outside {
            path: "/etc/passwd".into(),
            resolved: "/etc/passwd".into(),
            working_dir: "/ws".into(),
            allowed: vec!["/data".into()],
        }
        .to_string();
        assert_eq!(
            msg,
            "/etc/passwd is outside the working directory /ws and the allowed directories (/data); use a path inside one of them"
        );
    }
}
