use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use ignore::{WalkBuilder, WalkState};

use tokio_util::sync::CancellationToken;
use tool_sdk_core::{ToolContext, ToolError, tool};

/// How many paths Glob returns at most.
const MAX_FILES: usize = 100;

/// Finds files by name with a glob pattern, in any codebase size, fast.
///
/// Patterns use glob syntax: `*` matches within one directory level, `**` across levels,
/// `?` one character, `[abc]` a class, `{a,b}` alternatives, e.g. `**/*.rs` or
/// `src/**/*.{ts,tsx}`. The pattern is matched against paths relative to `path`. Files that
/// .gitignore or .ignore exclude, and hidden files, are skipped. Returns absolute paths, the
/// most recently modified first, at most 100. Use it when you know roughly what a file is
/// called; to search inside files use Grep; for open-ended searches that need several rounds
/// of globbing and grepping, use the Task tool. Several searches that might be useful can be
/// run in parallel.
#[tool(
    name = "Glob",
    acts_on(reads = "path"),
    category = "builtin",
    read_only,
    idempotent,
    title = "Glob {pattern}"
)]
pub async fn glob(
    /// The glob pattern to match files against, e.g. `**/*.rs`.
    pattern: String,
    /// The directory to search in (default: the working directory). Omit it for the default;
    /// do not pass "undefined" or "null".
    path: Option<String>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let root = search_root(ctx, path.as_deref())?;
    if !root.is_dir() {
        return Err(ToolError::invalid_input(format!(
            "{} is not a directory; pass a directory as `path`",
            root.display()
        )));
    }
    let relative = pattern.strip_prefix("./").unwrap_or(&pattern);
    let absolute = Path::new(relative).is_absolute();
    let target = Target::new(relative, absolute)?;

    let progress = ctx.clone();
    let newest = run_blocking(ctx, move |cancel| {
        // Walked on every core, as fd does. Each thread keeps its own newest MAX_FILES and a
        // count, merged when the thread ends: no lock per match, and no sort of every match.
        let merged = Mutex::new(Newest::default());
        let seen = AtomicUsize::new(0);
        let mtimes = Mtimes::new(&root);
        let mut walk = walker(&root);
        if let Some(prefix) = literal_prefix(relative_pattern(&pattern, absolute)) {
            // `src/**/*.rs` can only match under `src`: skip every other subtree. The walk
            // still starts at the root, so hidden and ignored directories stay skipped.
            let (root, prefix) = (root.clone(), prefix.to_path_buf());
            walk.filter_entry(move |entry| {
                let path = below(entry.path(), &root);
                within(&prefix, path) || within(path, &prefix)
            });
        }
        walk.build_parallel().run(|| {
            let (seen, progress, target, root, mtimes) =
                (&seen, &progress, &target, &root, &mtimes);
            let mut collector = Collector {
                newest: Newest::default(),
                into: &merged,
            };
            Box::new(move |entry| {
                let entry = match next_file(entry, cancel, seen, progress, "Looked at") {
                    Ok(entry) => entry,
                    Err(state) => return state,
                };
                if target.is_match(&entry, root) {
                    collector
                        .newest
                        .offer(mtimes.of(entry.path()), entry.path());
                }
                WalkState::Continue
            })
        });
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(merged.into_inner().unwrap_or_else(|p| p.into_inner()))
    })
    .await?;

    if newest.total == 0 {
        return Ok("No files found".to_owned());
    }
    let total = newest.total;
    let mut text = newest
        .into_sorted()
        .iter()
        .map(|(_, path)| path.display().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    if total > MAX_FILES {
        text.push_str(&format!(
            "\n(Results are truncated: {} more files matched. Use a more specific pattern or \
             path.)",
            total - MAX_FILES
        ));
    }
    Ok(text)
}

/// What a walked file is matched against. `**/*.c` and `drivers/**/*.h` only look at the
/// file name (and, for the second, that the file lies under `drivers`), as fd does: cheaper
/// than running the whole pattern over every relative path, with the same answers.
enum Target {
    /// The file name matches; for `dir/**/name`, the file also lies under `dir`.
    Name {
        name: GlobMatcher,
        under: Option<PathBuf>,
    },
    /// The path relative to the root matches.
    Relative(GlobMatcher),
    /// The absolute path matches (the pattern is absolute).
    Absolute(GlobMatcher),
}

impl Target {
    fn new(relative: &str, absolute: bool) -> Result<Self, ToolError> {
        let compile = |pattern: &str| {
            GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|glob| glob.compile_matcher())
                .map_err(|e| ToolError::invalid_input(format!("invalid glob pattern: {e}")))
        };
        // Checked whole first, so a bad pattern is reported as the user wrote it.
        let whole = compile(relative)?;
        if absolute {
            return Ok(Self::Absolute(whole));
        }
        // `**/name` matches `name` at any depth, the root included; `dir/**/name` the same
        // beneath `dir`. Only when `name` cannot span directories (no `/`) and `dir` is plain.
        let (under, name) = match relative.split_once("**/") {
            Some(("", name)) => (None, name),
            Some((dir, name)) => match literal_prefix(Some(relative)) {
                Some(prefix) if dir.strip_suffix('/') == prefix.to_str() => {
                    (Some(prefix.to_path_buf()), name)
                }
                _ => return Ok(Self::Relative(whole)),
            },
            None => return Ok(Self::Relative(whole)),
        };
        if name.is_empty() || name.contains('/') || name.contains("**") {
            return Ok(Self::Relative(whole));
        }
        Ok(Self::Name {
            name: compile(name)?,
            under,
        })
    }

    fn is_match(&self, entry: &ignore::DirEntry, root: &Path) -> bool {
        let full = entry.path();
        match self {
            Self::Name { name, under } => {
                name.is_match(entry.file_name())
                    && under.as_ref().is_none_or(|dir| {
                        let path = below(full, root);
                        within(path, dir) && path != dir
                    })
            }
            Self::Relative(glob) => glob.is_match(below(full, root)),
            Self::Absolute(glob) => glob.is_match(full),
        }
    }
}

/// Reads the modification times of files beneath the search root. On Linux it asks for the
/// mtime alone (`statx`), by the path relative to a handle on the root: the kernel then walks
/// only the components below the root, not the whole absolute path again for every file.
struct Mtimes {
    root: PathBuf,
    #[cfg(target_os = "linux")]
    dir: Option<std::os::fd::OwnedFd>,
}

impl Mtimes {
    fn new(root: &Path) -> Self {
        #[cfg(target_os = "linux")]
        let dir = {
            use rustix::fs::{Mode, OFlags, open};
            // Without the handle every file is read by its full path, as `modified` does.
            open(
                root,
                OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )
            .ok()
        };
        Self {
            root: root.to_path_buf(),
            #[cfg(target_os = "linux")]
            dir,
        }
    }

    /// The file's modification time, or the epoch when it cannot be read.
    fn of(&self, path: &Path) -> SystemTime {
        #[cfg(target_os = "linux")]
        if let Some(time) = self.by_statx(path) {
            return time;
        }
        modified(path)
    }

    /// `None` when this way does not apply (no root handle, a path outside the root, a kernel
    /// without statx, an error): the caller falls back to a plain `stat`.
    #[cfg(target_os = "linux")]
    fn by_statx(&self, path: &Path) -> Option<SystemTime> {
        use rustix::fs::{AtFlags, StatxFlags, statx};
        use std::time::Duration;

        let dir = self.dir.as_ref()?;
        let relative = below(path, &self.root);
        if relative.as_os_str().is_empty() || relative.is_absolute() {
            return None;
        }
        // Only regular files get here (symlinks are not followed by the walk), so not
        // following a final symlink changes nothing; DONT_SYNC spares network filesystems a
        // round trip for a time that only orders the list.
        let stat = statx(
            dir,
            relative,
            AtFlags::SYMLINK_NOFOLLOW | AtFlags::STATX_DONT_SYNC,
            StatxFlags::MTIME,
        )
        .ok()?;
        if !StatxFlags::from_bits_retain(stat.stx_mask).contains(StatxFlags::MTIME) {
            return None;
        }
        let (secs, nanos) = (stat.stx_mtime.tv_sec, stat.stx_mtime.tv_nsec);
        let whole = Duration::from_secs(secs.unsigned_abs());
        let at = if secs >= 0 {
            SystemTime::UNIX_EPOCH.checked_add(whole)
        } else {
            SystemTime::UNIX_EPOCH.checked_sub(whole)
        };
        at?.checked_add(Duration::from_nanos(u64::from(nanos)))
    }
}

/// The newest MAX_FILES files seen, and how many were seen in all.
#[derive(Default)]
struct Newest {
    /// Ordered so that the greatest is the one to drop first: the oldest, and of equal
    /// times the last by path (the reverse of the order shown).
    kept: BinaryHeap<(Reverse<SystemTime>, PathBuf)>,
    total: usize,
}

impl Newest {
    /// Counts the file, and keeps it if it is among the newest so far. The path is only
    /// copied when it is kept.
    fn offer(&mut self, time: SystemTime, path: &Path) {
        self.total += 1;
        self.keep(time, path, Path::to_path_buf);
    }

    fn keep<P>(&mut self, time: SystemTime, path: P, own: impl FnOnce(P) -> PathBuf)
    where
        P: AsRef<Path>,
    {
        if self.kept.len() < MAX_FILES {
            self.kept.push((Reverse(time), own(path)));
            return;
        }
        if let Some(mut last) = self.kept.peek_mut() {
            let newer = Reverse(time)
                .cmp(&last.0)
                .then_with(|| path.as_ref().cmp(&last.1))
                .is_lt();
            if newer {
                *last = (Reverse(time), own(path));
            }
        }
    }

    fn merge(&mut self, other: Newest) {
        self.total += other.total;
        for (Reverse(time), path) in other.kept {
            self.keep(time, path, |path| path);
        }
    }

    /// The kept files, newest first; equal times by path.
    fn into_sorted(self) -> Vec<(Reverse<SystemTime>, PathBuf)> {
        self.kept.into_sorted_vec()
    }
}

/// One walker thread's files, handed to the shared total when the thread is done.
struct Collector<'a> {
    newest: Newest,
    into: &'a Mutex<Newest>,
}

impl Drop for Collector<'_> {
    fn drop(&mut self) {
        let mine = std::mem::take(&mut self.newest);
        self.into
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .merge(mine);
    }
}

/// `path` relative to `root`, or `path` itself when it is not beneath it.
///
/// The walker builds every path as the root joined with plain names, so on Unix comparing
/// bytes is enough, and much cheaper than `Path::strip_prefix`'s component by component (it
/// runs for every entry of the walk).
fn below<'a>(path: &'a Path, root: &Path) -> &'a Path {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let root = root.as_os_str().as_bytes();
        if let Some(rest) = path.as_os_str().as_bytes().strip_prefix(root) {
            let rest = match rest {
                [] => Some(rest),
                [b'/', rest @ ..] => Some(rest),
                _ if root.ends_with(b"/") => Some(rest),
                // `/a/bc` is not beneath `/a/b`.
                _ => None,
            };
            if let Some(rest) = rest {
                return Path::new(std::ffi::OsStr::from_bytes(rest));
            }
        }
    }
    path.strip_prefix(root).unwrap_or(path)
}

/// Whether `path` is `dir` or lies beneath it, for relative paths made of plain names (as
/// `below` and `literal_prefix` give): on Unix by bytes, for the same reason as `below`.
fn within(path: &Path, dir: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let (path, dir) = (path.as_os_str().as_bytes(), dir.as_os_str().as_bytes());
        path.strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/' || dir.is_empty())
    }
    #[cfg(not(unix))]
    path.starts_with(dir)
}

/// The pattern as matched against paths relative to the root (`None` for absolute ones).
fn relative_pattern(pattern: &str, absolute: bool) -> Option<&str> {
    (!absolute).then(|| pattern.strip_prefix("./").unwrap_or(pattern))
}

/// The leading directories of a relative pattern before its first wildcard: `src/**/*.rs`
/// gives `src`, `a/b/*.rs` gives `a/b`, `*.rs` and `**/x` give nothing. Only plain names
/// count (no `.`, `..`, escapes or glob syntax), so every match lies under the prefix.
fn literal_prefix(pattern: Option<&str>) -> Option<&Path> {
    let pattern = pattern?;
    let (dirs, _file) = pattern.rsplit_once('/')?;
    let mut end = 0;
    for component in dirs.split('/') {
        let plain = !component.is_empty()
            && component != "."
            && component != ".."
            && !component.contains(['*', '?', '[', ']', '{', '}', '\\']);
        if !plain {
            break;
        }
        end += component.len() + 1;
    }
    (end > 0).then(|| Path::new(&dirs[..end - 1]))
}

/// Where a search starts: `path` resolved against the working directory, which must exist.
pub(crate) fn search_root(ctx: &ToolContext, path: Option<&str>) -> Result<PathBuf, ToolError> {
    let root = match path.map(str::trim) {
        None | Some("") => ctx.working_dir().to_path_buf(),
        Some(path) => ctx.resolve(path),
    };
    if !root.exists() {
        return Err(ToolError::not_found(format!(
            "{} does not exist",
            root.display()
        )));
    }
    if let Some(sandbox) = ctx.sandbox() {
        sandbox
            .check_read(&root)
            .map_err(|error| ToolError::permission_denied(error.to_string()))?;
    }
    Ok(root)
}

/// A walker that skips what ripgrep skips by default: hidden files and whatever .gitignore,
/// .ignore, .rgignore, .git/info/exclude and the global git excludes say. Unlike ripgrep,
/// .gitignore files count outside git repositories too.
pub(crate) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .standard_filters(true)
        .require_git(false)
        .follow_links(false)
        .add_custom_ignore_filename(".rgignore");
    builder
}

/// The file's modification time, or the epoch when it cannot be read.
pub(crate) fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Newest first; equal times by path.
pub(crate) fn sort_newest_first(files: &mut [(SystemTime, PathBuf)]) {
    files.sort_by(|(a_time, a_path), (b_time, b_path)| {
        (Reverse(a_time), a_path).cmp(&(Reverse(b_time), b_path))
    });
}

/// Runs blocking filesystem work off the async threads. The work gets a token that fires
/// when the call is cancelled or its future is dropped (a timeout), so it can stop early.
/// What both parallel walks (Glob's and Grep's) do first with each entry: quit once
/// cancelled, skip unreadable entries and anything but files, and report progress every
/// 1000 files as "<verb> N files". `Err` is what the walk's visitor should return.
pub(crate) fn next_file(
    entry: Result<ignore::DirEntry, ignore::Error>,
    cancel: &CancellationToken,
    counter: &AtomicUsize,
    progress: &ToolContext,
    verb: &str,
) -> Result<ignore::DirEntry, WalkState> {
    if cancel.is_cancelled() {
        return Err(WalkState::Quit);
    }
    let entry = entry.map_err(|_| WalkState::Continue)?;
    if !entry.file_type().is_some_and(|t| t.is_file()) {
        return Err(WalkState::Continue);
    }
    let count = counter.fetch_add(1, Ordering::Relaxed) + 1;
    if count.is_multiple_of(1000) {
        progress.progress(format!("{verb} {count} files"));
    }
    Ok(entry)
}

pub(crate) async fn run_blocking<T: Send + 'static>(
    ctx: &ToolContext,
    work: impl FnOnce(&CancellationToken) -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    let token = ctx.cancellation().child_token();
    let _stop_when_dropped = token.clone().drop_guard();
    let result = tokio::task::spawn_blocking(move || work(&token))
        .await
        .map_err(|e| ToolError::failed(format!("the search stopped unexpectedly: {e}")))?;
    if ctx.is_cancelled() {
        return Err(ToolError::Cancelled);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_prefixes() {
        let prefix = |p: &str| literal_prefix(Some(p)).map(|p| p.to_str().unwrap().to_owned());
        assert_eq!(prefix("src/**/*.rs").as_deref(), Some("src"));
        assert_eq!(prefix("a/b/*.rs").as_deref(), Some("a/b"));
        assert_eq!(prefix("a/b/c.rs").as_deref(), Some("a/b"));
        assert_eq!(prefix("a/*/c/*.rs").as_deref(), Some("a"));
        assert_eq!(prefix("*.rs"), None);
        assert_eq!(prefix("**/x.rs"), None);
        assert_eq!(prefix("{a,b}/x.rs"), None);
        assert_eq!(prefix("../x/*.rs"), None);
        assert_eq!(prefix("a\\*/x"), None);
        assert_eq!(literal_prefix(relative_pattern("/abs/x/*.rs", true)), None);
        assert_eq!(
            literal_prefix(relative_pattern("./src/*.rs", false)),
            Some(Path::new("src"))
        );
    }

    #[test]
    fn newest_keeps_the_same_files_as_sorting_them_all() {
        use std::time::Duration;
        let files: Vec<(SystemTime, PathBuf)> = (0..450)
            .map(|i| {
                // Many equal times, so ties by path decide too.
                let time = SystemTime::UNIX_EPOCH + Duration::from_secs((i * 7 % 13) as u64);
                (time, PathBuf::from(format!("d{}/f{i}", i % 5)))
            })
            .collect();
        let mut all = files.clone();
        sort_newest_first(&mut all);
        // As the walker threads do: each keeps its own, then they are merged.
        let mut merged = Newest::default();
        for chunk in files.chunks(170) {
            let mut mine = Newest::default();
            for (time, path) in chunk {
                mine.offer(*time, path);
            }
            merged.merge(mine);
        }
        assert_eq!(merged.total, 450);
        let kept: Vec<_> = merged
            .into_sorted()
            .into_iter()
            .map(|(Reverse(time), path)| (time, path))
            .collect();
        assert_eq!(kept, all[..MAX_FILES]);
    }

    #[test]
    fn paths_below_the_root_and_within_a_directory() {
        let p = Path::new;
        assert_eq!(below(p("/a/b/c/d.rs"), p("/a/b")), p("c/d.rs"));
        assert_eq!(below(p("/a/b/c/d.rs"), p("/a/b/")), p("c/d.rs"));
        assert_eq!(below(p("/a/b"), p("/a/b")), p(""));
        assert_eq!(below(p("/a/bc/d.rs"), p("/a/b")), p("/a/bc/d.rs"));
        assert!(within(p("drivers/net/x.h"), p("drivers")));
        assert!(within(p("drivers"), p("drivers")));
        assert!(within(p("drivers"), p("")));
        assert!(!within(p("driversx/y.h"), p("drivers")));
        assert!(!within(p("drivers"), p("drivers/net")));
        assert!(within(p("drivers/net"), p("drivers/net")));
    }

    #[test]
    fn name_only_matching_where_the_pattern_allows_it() {
        let name = |p: &str| match Target::new(p, false).unwrap() {
            Target::Name { under, .. } => Some(under),
            _ => None,
        };
        assert_eq!(name("**/*.c"), Some(None));
        assert_eq!(name("**/Kconfig"), Some(None));
        assert_eq!(name("drivers/**/*.h"), Some(Some(PathBuf::from("drivers"))));
        assert_eq!(name("a/b/**/*.h"), Some(Some(PathBuf::from("a/b"))));
        assert_eq!(name("*.c"), None);
        assert_eq!(name("**/src/*.c"), None);
        assert_eq!(name("a/**/b/**/c"), None);
        assert_eq!(name("{a,b}/**/c"), None);
        assert_eq!(name("a*/**/c"), None);
        assert_eq!(name("**/**"), None);
        assert!(Target::new("**/{a,", false).is_err());
    }
}
