//! The path sandbox: the check file tools run before touching a path a model chose.
//!
//! Every decision is made on the *resolved* path, never on the string the model wrote:
//! relative paths are joined to the working directory, `..` and symbolic links are resolved
//! by the operating system (`canonicalize`), and the result must lie inside one of the roots
//! component by component (`/ws-evil/x` is not inside `/ws`). A path that does not exist yet is
//! resolved through its deepest existing ancestor; the part that does not exist may not contain
//! `..` and may not start with a dangling symbolic link.
//!
//! Checking a path and then opening it by name leaves a window in which the path can change
//! (a directory swapped for a symbolic link to `/`). The `open_*` methods therefore open through
//! [`cap_std`]: the root is opened as a directory handle and the path is opened relative to it,
//! with the kernel refusing any step that leaves the root (`openat2` with `RESOLVE_BENEATH` on
//! Linux, a component-by-component walk elsewhere). What is then opened is checked again on the
//! handle (`fstat`), so the type and link count tested are those of the file actually written.
//!
//! Writes are refused, besides outside the writable roots, for:
//! - a path whose last component is a symbolic link, wherever it points: the model is told the
//!   link's target and can write that path, so nothing is lost, and the file written is always
//!   the one named (an atomic replace through a link would otherwise silently swap the link
//!   for a regular file, and protection rules would have to reason about two names);
//! - files with more than one hard link (writing one name would change the others, which may
//!   lie outside the sandbox);
//! - anything that is not a regular file: directories, FIFOs, sockets, devices;
//! - protected paths ([`ProtectedPattern`]), unless protection is bypassed.

use std::fs;
use std::io::{self, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

mod error;
mod open;
mod protected;

pub use error::SandboxError;
pub use protected::{PROTECTED_DIRS, PROTECTED_FILES, ProtectedPattern};

use open::{
    canonical_dir, check_writable_file, not_regular, open_beneath, resolve_missing, set_flags,
};
use protected::fold_name;

#[derive(Clone, Debug)]
struct Root {
    path: PathBuf,
    /// The directory, opened once when the root was added: every confined open starts from
    /// this handle, so a root renamed away and replaced (by a link to elsewhere) since then
    /// takes no write.
    dir: Arc<Dir>,
    writable: bool,
}

impl Root {
    fn open(path: PathBuf, writable: bool) -> io::Result<Self> {
        let dir = Dir::open_ambient_dir(&path, ambient_authority())?;
        Ok(Root {
            path,
            dir: Arc::new(dir),
            writable,
        })
    }
}

/// Confines file tools to a working directory and chosen extra directories.
///
/// Build it with [`Sandbox::new`], add roots with [`allow_dir`](Sandbox::allow_dir) and
/// [`allow_read_dir`](Sandbox::allow_read_dir); the most specific root containing a path
/// decides whether it may be written (a read-only directory inside the working directory stays
/// read-only). Roots are canonicalised once, at construction, and trusted from then on.
///
/// File tools call [`check_read`](Sandbox::check_read) or [`check_write`](Sandbox::check_write)
/// on the path the model gave and report the error to the model on refusal; they open through
/// [`open_read`](Sandbox::open_read), [`open_write`](Sandbox::open_write) or
/// [`write_atomic`](Sandbox::write_atomic) rather than `std::fs`, so that a path changed after
/// the check cannot lead outside. Tools walking a checked directory (Glob, Grep) open what they
/// find with [`open_read_resolved`](Sandbox::open_read_resolved).
///
/// ```no_run
/// use std::path::Path;
/// use tool_sdk_core::sandbox::Sandbox;
///
/// let sandbox = Sandbox::new("/ws")?.allow_read_dir("/usr/share/doc")?;
/// match sandbox.check_write(Path::new("../etc/passwd")) {
///     Ok(path) => println!("may write {}", path.display()),
///     Err(refusal) => println!("tell the model: {refusal}"),
/// }
/// sandbox.write_atomic(Path::new("src/new.rs"), b"fn main() {}\n")?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Sandbox {
    working_dir: PathBuf,
    roots: Vec<Root>,
    protected: Vec<ProtectedPattern>,
    bypass: bool,
}

/// Which kind of access a resolution is for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

impl Sandbox {
    /// A sandbox rooted at `working_dir` (readable and writable), with the default protected
    /// patterns ([`PROTECTED_DIRS`], [`PROTECTED_FILES`]).
    pub fn new(working_dir: impl AsRef<Path>) -> io::Result<Self> {
        let working_dir = canonical_dir(working_dir.as_ref())?;
        let protected = PROTECTED_DIRS
            .iter()
            .map(|d| ProtectedPattern::Component((*d).to_string()))
            .chain(
                PROTECTED_FILES
                    .iter()
                    .map(|f| ProtectedPattern::FileName((*f).to_string())),
            )
            .collect();
        Ok(Sandbox {
            roots: vec![Root::open(working_dir.clone(), true)?],
            working_dir,
            protected,
            bypass: false,
        })
    }

    /// Adds a readable and writable directory (relative paths are taken from the working
    /// directory).
    pub fn allow_dir(self, dir: impl AsRef<Path>) -> io::Result<Self> {
        self.add_root(dir.as_ref(), true)
    }

    /// Adds a directory that may be read but not written.
    pub fn allow_read_dir(self, dir: impl AsRef<Path>) -> io::Result<Self> {
        self.add_root(dir.as_ref(), false)
    }

    fn add_root(mut self, dir: &Path, writable: bool) -> io::Result<Self> {
        let path = canonical_dir(&self.working_dir.join(dir))?;
        // The last call for a directory decides; the working directory stays first.
        match self.roots.iter_mut().find(|r| r.path == path) {
            Some(root) => root.writable = writable,
            None => self.roots.push(Root::open(path, writable)?),
        }
        Ok(self)
    }

    /// Adds a protected pattern.
    pub fn protect(mut self, pattern: ProtectedPattern) -> Self {
        let pattern = match pattern {
            ProtectedPattern::Under(p) => {
                let p = self.working_dir.join(p);
                ProtectedPattern::Under(fs::canonicalize(&p).unwrap_or(p))
            }
            other => other,
        };
        self.protected.push(pattern);
        self
    }

    /// When `yes`, writes to protected paths are allowed (every other rule still holds).
    pub fn bypass_protection(mut self, yes: bool) -> Self {
        self.bypass = yes;
        self
    }

    /// The canonical working directory.
    pub fn working_dir(&self) -> &Path {
        &self.working_dir
    }

    /// The canonical roots other than the working directory, with whether each is writable.
    pub fn allowed_dirs(&self) -> impl Iterator<Item = (&Path, bool)> {
        self.roots[1..]
            .iter()
            .map(|r| (r.path.as_path(), r.writable))
    }

    /// The handles of the writable roots, opened when the sandbox was built: what the Bash
    /// tool's OS containment lets the shell write beneath, whatever their paths name now.
    #[doc(hidden)]
    pub fn writable_root_dirs(&self) -> impl Iterator<Item = Arc<Dir>> + '_ {
        self.roots
            .iter()
            .filter(|r| r.writable)
            .map(|r| r.dir.clone())
    }

    /// The protected patterns in force (ignored when protection is bypassed).
    pub fn protected(&self) -> &[ProtectedPattern] {
        &self.protected
    }

    /// Whether `path` may be read; the resolved path on success. Directories pass (Glob and
    /// Grep walk them); a path that does not exist passes if it would lie inside a root.
    pub fn check_read(&self, path: &Path) -> Result<PathBuf, SandboxError> {
        let (resolved, _) = self.resolve(path, Access::Read)?;
        Ok(resolved)
    }

    /// Whether `path` may be written; the resolved path on success. The path may not exist
    /// yet, even with missing parent directories.
    pub fn check_write(&self, path: &Path) -> Result<PathBuf, SandboxError> {
        let (resolved, exists) = self.resolve(path, Access::Write)?;
        let lexical = self.lexical(path);
        // The last component as named must not be a link (see the module docs).
        match fs::symlink_metadata(&lexical) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(SandboxError::Symlink {
                    path: path.to_path_buf(),
                    target: resolved,
                });
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(SandboxError::io(path, e)),
        }
        self.check_protected(path, &lexical)?;
        self.check_protected(path, &resolved)?;
        if exists {
            let meta = fs::symlink_metadata(&resolved).map_err(|e| SandboxError::io(path, e))?;
            check_writable_file(path, &meta)?;
        }
        Ok(resolved)
    }

    /// Checks `path` for reading and opens it, confined to its root. Only regular files open.
    pub fn open_read(&self, path: &Path) -> Result<fs::File, SandboxError> {
        let resolved = self.check_read(path)?;
        self.open_read_resolved(&resolved)
    }

    /// Opens a path previously returned by [`check_read`](Self::check_read) without resolving
    /// it again: the kernel keeps the open beneath the root, so a directory swapped for a link
    /// to outside since the check makes the open fail. Only regular files open (FIFOs are
    /// opened non-blocking, then refused; the flag stays on the handle, where it has no effect
    /// on a regular file).
    pub fn open_read_resolved(&self, resolved: &Path) -> Result<fs::File, SandboxError> {
        let (root, rel) = self.split_resolved(resolved)?;
        let mut opts = OpenOptions::new();
        opts.read(true);
        set_flags(&mut opts, false);
        let file = open_beneath(root, rel, &opts, resolved)?;
        let meta = file.metadata().map_err(|e| SandboxError::io(resolved, e))?;
        if !meta.is_file() {
            return Err(not_regular(resolved, &meta));
        }
        Ok(file)
    }

    /// Checks `path` for writing and opens it for writing in place, creating it if missing
    /// (its parent directory must exist) and truncating it once it is known to be a regular
    /// file with a single link.
    pub fn open_write(&self, path: &Path) -> Result<fs::File, SandboxError> {
        let resolved = self.check_write(path)?;
        self.open_write_resolved(&resolved)
    }

    /// Opens for writing a path previously returned by [`check_write`](Self::check_write),
    /// confined like [`open_read_resolved`](Self::open_read_resolved). The last component is
    /// opened without following links; protection, type and link count are checked again, the
    /// last two on the opened handle.
    pub fn open_write_resolved(&self, resolved: &Path) -> Result<fs::File, SandboxError> {
        let (root, rel) = self.split_resolved(resolved)?;
        self.check_root_writable(resolved, root)?;
        self.check_protected(resolved, resolved)?;
        let mut opts = OpenOptions::new();
        opts.write(true).create(true);
        set_flags(&mut opts, true);
        let file = open_beneath(root, rel, &opts, resolved)?;
        let meta = file.metadata().map_err(|e| SandboxError::io(resolved, e))?;
        check_writable_file(resolved, &meta)?;
        file.set_len(0).map_err(|e| SandboxError::io(resolved, e))?;
        Ok(file)
    }

    /// Checks `path` for writing and replaces its contents atomically: missing parent
    /// directories are created, the contents go to a new temporary file in the same directory
    /// (keeping the old file's permissions), which is then renamed over the target. Every step
    /// is confined to the root. Returns the resolved path written.
    pub fn write_atomic(&self, path: &Path, contents: &[u8]) -> Result<PathBuf, SandboxError> {
        let resolved = self.check_write(path)?;
        let (root, rel) = self.split_resolved(&resolved)?;
        let io_err = |e: io::Error| SandboxError::io(&resolved, e);
        let name = rel
            .file_name()
            .ok_or_else(|| SandboxError::invalid(path, "no file name"))?;
        let parent_rel = rel.parent().unwrap_or(Path::new(""));
        let dir = if parent_rel.as_os_str().is_empty() {
            root.dir.try_clone().map_err(io_err)?
        } else {
            root.dir.create_dir_all(parent_rel).map_err(io_err)?;
            root.dir.open_dir(parent_rel).map_err(io_err)?
        };

        // The old file's permissions, read through a handle checked like a write target.
        let mut ro = OpenOptions::new();
        ro.read(true);
        set_flags(&mut ro, true);
        let old_perms = match dir.open_with(name, &ro) {
            Ok(old) => {
                let old = old.into_std();
                let meta = old.metadata().map_err(io_err)?;
                check_writable_file(&resolved, &meta)?;
                Some(meta.permissions())
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err(e)),
        };

        // Not derived from the target's name, which may already be as long as a name can be.
        let tmp_name = format!(".tool-sdk-{:016x}.tmp", fastrand::u64(..));
        let mut opts = OpenOptions::new();
        opts.write(true).create_new(true);
        set_flags(&mut opts, true);
        let mut tmp = dir.open_with(&tmp_name, &opts).map_err(io_err)?.into_std();
        let written = (|| {
            tmp.write_all(contents)?;
            if let Some(perms) = old_perms {
                tmp.set_permissions(perms)?;
            }
            tmp.sync_all()?;
            drop(tmp);
            // rename replaces the directory entry itself: it never follows a link or writes
            // through a hard link in the last component.
            dir.rename(&tmp_name, &dir, name)
        })();
        if let Err(e) = written {
            let _ = dir.remove_file(&tmp_name);
            return Err(io_err(e));
        }
        Ok(resolved)
    }

    /// `path` joined to the working directory and normalised lexically (`//`, `./` and a
    /// trailing `/` dropped; `..` kept).
    fn lexical(&self, path: &Path) -> PathBuf {
        self.working_dir.join(path).components().collect()
    }

    /// Resolves `path` and finds its root; for writes, the root must be writable. Returns the
    /// resolved path and whether it exists.
    fn resolve(&self, path: &Path, access: Access) -> Result<(PathBuf, bool), SandboxError> {
        if path.as_os_str().is_empty() {
            return Err(SandboxError::invalid(path, "the path is empty"));
        }
        if path.as_os_str().as_encoded_bytes().contains(&0) {
            return Err(SandboxError::invalid(path, "the path contains a NUL byte"));
        }
        let full = self.working_dir.join(path);
        let (resolved, exists) = match fs::canonicalize(&full) {
            Ok(p) => (p, true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => (resolve_missing(path, &full)?, false),
            Err(e) => return Err(SandboxError::io(path, e)),
        };
        let Some(root) = self.root_of(&resolved) else {
            return Err(SandboxError::Outside {
                path: path.to_path_buf(),
                resolved,
                working_dir: self.working_dir.clone(),
                allowed: self.roots[1..].iter().map(|r| r.path.clone()).collect(),
            });
        };
        if access == Access::Write {
            self.check_root_writable(path, root)?;
        }
        Ok((resolved, exists))
    }

    /// The most specific root containing `resolved`, by whole components.
    fn root_of(&self, resolved: &Path) -> Option<&Root> {
        self.roots
            .iter()
            .filter(|r| resolved.starts_with(&r.path))
            .max_by_key(|r| r.path.components().count())
    }

    fn check_root_writable(&self, path: &Path, root: &Root) -> Result<(), SandboxError> {
        if root.writable {
            Ok(())
        } else {
            Err(SandboxError::ReadOnly {
                path: path.to_path_buf(),
                root: root.path.clone(),
            })
        }
    }

    /// Splits an already resolved path into its root and the part below it. The path must be
    /// absolute, made only of plain components, and strictly below a root.
    fn split_resolved<'p>(&self, resolved: &'p Path) -> Result<(&Root, &'p Path), SandboxError> {
        let plain = resolved.is_absolute()
            && resolved.components().all(|c| {
                matches!(
                    c,
                    Component::RootDir | Component::Normal(_) | Component::Prefix(_)
                )
            });
        if !plain {
            return Err(SandboxError::invalid(
                resolved,
                "not a resolved path: check it with check_read or check_write first",
            ));
        }
        let Some(root) = self.root_of(resolved) else {
            return Err(SandboxError::Outside {
                path: resolved.to_path_buf(),
                resolved: resolved.to_path_buf(),
                working_dir: self.working_dir.clone(),
                allowed: self.roots[1..].iter().map(|r| r.path.clone()).collect(),
            });
        };
        let rel = resolved.strip_prefix(&root.path).unwrap_or(resolved);
        if rel.as_os_str().is_empty() {
            return Err(SandboxError::NotRegularFile {
                path: resolved.to_path_buf(),
                kind: "directory".into(),
            });
        }
        Ok((root, rel))
    }

    fn check_protected(&self, path: &Path, candidate: &Path) -> Result<(), SandboxError> {
        if self.bypass {
            return Ok(());
        }
        let names: Vec<String> = candidate
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(fold_name(&n.to_string_lossy())),
                _ => None,
            })
            .collect();
        for pattern in &self.protected {
            let hit = match pattern {
                ProtectedPattern::Component(name) => {
                    let name = fold_name(name);
                    names.contains(&name)
                }
                ProtectedPattern::FileName(name) => names.last() == Some(&fold_name(name)),
                ProtectedPattern::Under(p) => candidate.starts_with(p),
            };
            if hit {
                return Err(SandboxError::Protected {
                    path: path.to_path_buf(),
                    rule: format!("the sandbox protects {pattern}"),
                });
            }
        }
        Ok(())
    }
}
