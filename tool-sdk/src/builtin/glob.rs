use std::cmp::Reverse;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::{WalkBuilder, WalkState};

use crate::{CancellationToken, ToolContext, ToolError, tool};

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
    let matcher = GlobBuilder::new(relative)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|e| ToolError::invalid_input(format!("invalid glob pattern: {e}")))?
        .compile_matcher();

    let progress = ctx.clone();
    let mut files = run_blocking(ctx, move |cancel| {
        // Walked on every core, as fd does; each match's mtime is read by the thread that
        // found it. The order is fixed afterwards by sorting.
        let found = Mutex::new(Vec::new());
        let seen = AtomicUsize::new(0);
        let mut walk = walker(&root);
        if let Some(prefix) = literal_prefix(relative_pattern(&pattern, absolute)) {
            // `src/**/*.rs` can only match under `src`: skip every other subtree. The walk
            // still starts at the root, so hidden and ignored directories stay skipped.
            let (root, prefix) = (root.clone(), prefix.to_path_buf());
            walk.filter_entry(move |entry| {
                let path = entry.path().strip_prefix(&root).unwrap_or(entry.path());
                prefix.starts_with(path) || path.starts_with(&prefix)
            });
        }
        walk.build_parallel().run(|| {
            let (found, seen, progress, matcher, root) =
                (&found, &seen, &progress, &matcher, &root);
            Box::new(move |entry| {
                let entry = match next_file(entry, cancel, seen, progress, "Looked at") {
                    Ok(entry) => entry,
                    Err(state) => return state,
                };
                let full = entry.path();
                let candidate = if absolute {
                    full
                } else {
                    full.strip_prefix(root).unwrap_or(full)
                };
                if matcher.is_match(candidate) {
                    let file = (modified(full), full.to_path_buf());
                    found.lock().unwrap_or_else(|p| p.into_inner()).push(file);
                }
                WalkState::Continue
            })
        });
        if cancel.is_cancelled() {
            return Err(ToolError::Cancelled);
        }
        Ok(found.into_inner().unwrap_or_else(|p| p.into_inner()))
    })
    .await?;

    if files.is_empty() {
        return Ok("No files found".to_owned());
    }
    sort_newest_first(&mut files);
    let total = files.len();
    let mut text = files
        .iter()
        .take(MAX_FILES)
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
}
