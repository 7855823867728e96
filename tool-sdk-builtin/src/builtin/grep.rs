use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::time::SystemTime;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use ignore::{WalkBuilder, WalkState};
use serde::{Deserialize, Serialize};

use super::glob::{modified, next_file, run_blocking, search_root, sort_newest_first, walker};
use tool_sdk_core::{ToolContext, ToolError, tool};

/// Lines longer than this (in characters) are cut in `content` output.
const MAX_LINE_CHARS: usize = 500;

/// What Grep returns.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)] // The modes are described on the `output_mode` parameter.
pub enum GrepOutputMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

/// Searches file contents with a regular expression; built on ripgrep's engine.
///
/// - Always use Grep for searching file contents; never run `grep` or `rg` through Bash.
/// - The pattern is a Rust/ripgrep regex (e.g. `fn\s+\w+`, `log.*Error`); literal braces
///   need escaping (`interface\{\}` finds `interface{}`).
/// - Narrow the search with `glob` (e.g. `*.rs`, `**/*.{ts,tsx}`) or `type` (ripgrep file
///   types such as `rust`, `py`, `js`; more efficient than a glob for standard types).
/// - `output_mode`: `files_with_matches` (default) lists matching files, most recently
///   modified first; `content` shows matching lines (`path:line:text`, with `-A`/`-B`/`-C`
///   context lines as `path-line-text` and `--` between groups); `count` shows matches per
///   file.
/// - Patterns match within one line unless `multiline` is true, which lets `.` match newlines
///   and patterns such as `struct \{[\s\S]*?field` span lines.
/// - Files ignored by .gitignore/.ignore, hidden files and binary files (with a NUL byte)
///   are skipped, as ripgrep skips them. A file named as `path` is always searched; if it is
///   binary, the result says so, and `content` shows none of its lines near or after the
///   binary data.
/// - Results are capped by `head_limit` (default 250); page on with `offset`.
/// - For open-ended searches that need several rounds, use the Task tool.
#[tool(
    name = "Grep",
    acts_on(reads = "path"),
    category = "builtin",
    read_only,
    idempotent,
    title = "Grep {pattern}"
)]
#[allow(clippy::too_many_arguments)]
pub async fn grep(
    /// The regular expression to search file contents for.
    pattern: String,
    /// The file or directory to search in (default: the working directory).
    path: Option<String>,
    /// Only search files whose path matches this glob (e.g. `*.js`, `*.{ts,tsx}`, `!*.md` to
    /// exclude); several globs can be separated by spaces. Like `rg --glob`.
    glob: Option<String>,
    /// Only search files of this type (e.g. `js`, `py`, `rust`, `go`, `java`). Like
    /// `rg --type`.
    #[arg(rename = "type")]
    file_type: Option<String>,
    /// `content` shows matching lines (honours -A/-B/-C, -n, head_limit), `files_with_matches`
    /// shows file paths (honours head_limit), `count` shows match counts (honours
    /// head_limit). Default: `files_with_matches`.
    #[arg(default)]
    output_mode: GrepOutputMode,
    /// Lines to show after each match (`rg -A`); `content` mode only.
    #[arg(rename = "-A")]
    after: Option<u64>,
    /// Lines to show before each match (`rg -B`); `content` mode only.
    #[arg(rename = "-B")]
    before: Option<u64>,
    /// Lines to show before and after each match (`rg -C`); `content` mode only.
    #[arg(rename = "-C")]
    context: Option<u64>,
    /// Show line numbers (`rg -n`); `content` mode only. Default: true.
    #[arg(rename = "-n", default = true)]
    line_numbers: bool,
    /// Case-insensitive search (`rg -i`).
    #[arg(rename = "-i", default)]
    case_insensitive: bool,
    /// Let `.` match newlines and patterns span lines (`rg -U --multiline-dotall`).
    #[arg(default)]
    multiline: bool,
    /// Return at most this many entries (lines, files or counts, per mode), like `| head -N`.
    /// 0 means no limit. Default: 250.
    #[arg(default = 250)]
    head_limit: u64,
    /// Skip this many entries first, like `| tail -n +N+1`; with `head_limit`, pages through
    /// results. Default: 0.
    #[arg(default)]
    offset: u64,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let root = search_root(ctx, path.as_deref())?;
    let matcher = build_matcher(&pattern, case_insensitive, multiline)?;

    let mut walk = walker(&root);
    filter_walk(&mut walk, &root, glob.as_deref(), file_type.as_deref())?;

    let mode = output_mode;
    let context = (before.or(context), after.or(context));
    let (options, searcher) = searcher(mode, context, line_numbers, multiline);

    let progress = ctx.clone();
    let found = run_blocking(ctx, move |cancel| {
        let found = Mutex::new(Vec::new());
        let searched = AtomicUsize::new(0);
        walk.build_parallel().run(|| {
            let mut searcher = searcher.build();
            let matcher = matcher.clone();
            let (found, searched, progress) = (&found, &searched, &progress);
            Box::new(move |entry| {
                let entry = match next_file(entry, cancel, searched, progress, "Searched") {
                    Ok(entry) => entry,
                    Err(state) => return state,
                };
                // As rg: a file met in the walk stops at its first NUL byte and is left out; a
                // file named as `path` (the walk's root) is searched whole, NUL bytes read
                // as line ends.
                searcher.set_binary_detection(if entry.depth() == 0 {
                    BinaryDetection::convert(b'\x00')
                } else {
                    BinaryDetection::quit(b'\x00')
                });
                if let Some(mut result) =
                    search_file(&mut searcher, &matcher, entry.path(), options)
                {
                    if mode == GrepOutputMode::FilesWithMatches {
                        // Read here, on the walking threads, for the newest-first sort.
                        result.modified = modified(&result.path);
                    }
                    found.lock().unwrap_or_else(|p| p.into_inner()).push(result);
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

    Ok(listing(found, options, page_of(head_limit, offset)))
}

/// A regex as ripgrep builds it: `^`/`$` match at line ends; outside multiline mode no match
/// may contain a newline.
fn build_matcher(
    pattern: &str,
    case_insensitive: bool,
    multiline: bool,
) -> Result<RegexMatcher, ToolError> {
    let mut builder = RegexMatcherBuilder::new();
    builder.case_insensitive(case_insensitive).multi_line(true);
    if multiline {
        builder.dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(pattern).map_err(|e| {
        let mut message = format!("invalid regex `{pattern}`: {e}");
        if !multiline && pattern.contains("\\n") {
            message.push_str("\nTo match across lines, set `multiline` to true.");
        }
        ToolError::invalid_input(message)
    })
}

/// Globs as the model writes them: separated by spaces or commas, but commas inside braces
/// (`*.{ts,tsx}`) belong to the glob.
fn split_globs(globs: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for part in globs.split_whitespace() {
        if part.contains('{') {
            out.push(part);
        } else {
            out.extend(part.split(',').filter(|p| !p.is_empty()));
        }
    }
    out
}
/// How each file is searched: the lines around a match (`-B`, `-A`), line numbers, and
/// whether matches may span lines.
fn searcher(
    mode: GrepOutputMode,
    context: (Option<u64>, Option<u64>),
    line_numbers: bool,
    multiline: bool,
) -> (SearchOptions, SearcherBuilder) {
    let before = context.0.unwrap_or(0) as usize;
    let after = context.1.unwrap_or(0) as usize;
    let options = SearchOptions {
        mode,
        line_numbers,
        context: mode == GrepOutputMode::Content && (before > 0 || after > 0),
    };
    let mut searcher = SearcherBuilder::new();
    searcher
        .line_number(mode == GrepOutputMode::Content)
        .multi_line(multiline);
    if mode == GrepOutputMode::Content {
        searcher.before_context(before).after_context(after);
    }
    (options, searcher)
}

/// Narrows the walk to the files `glob` and `file_type` name, as `rg --glob` and `rg --type`.
fn filter_walk(
    walk: &mut WalkBuilder,
    root: &Path,
    glob: Option<&str>,
    file_type: Option<&str>,
) -> Result<(), ToolError> {
    if let Some(globs) = glob {
        let base = if root.is_dir() {
            root
        } else {
            root.parent().unwrap_or(root)
        };
        let mut overrides = OverrideBuilder::new(base);
        for glob in split_globs(globs) {
            overrides
                .add(glob)
                .map_err(|e| ToolError::invalid_input(format!("invalid glob `{glob}`: {e}")))?;
        }
        walk.overrides(
            overrides
                .build()
                .map_err(|e| ToolError::invalid_input(format!("invalid glob: {e}")))?,
        );
    }
    if let Some(name) = file_type.map(str::trim).filter(|n| !n.is_empty()) {
        let mut types = TypesBuilder::new();
        types.add_defaults();
        types.select(name);
        let types = types.build().map_err(|_| {
            ToolError::invalid_input(format!(
                "unknown file type `{name}`; use a ripgrep type name such as rust, py, js, ts, \
                 go, java, c, cpp, md, or use `glob` instead"
            ))
        })?;
        walk.types(types);
    }
    Ok(())
}

/// What the model reads: the files, lines or counts found, one page of them, and a note for
/// each binary file searched.
fn listing(mut found: Vec<FileMatches>, options: SearchOptions, page: Page) -> String {
    let mode = options.mode;
    if found.is_empty() {
        return match mode {
            GrepOutputMode::FilesWithMatches => "No files found".to_owned(),
            _ => "No matches found".to_owned(),
        };
    }
    // Content lines carry rg's own message; the other modes get a note at the end.
    let mut binary: Vec<String> = found
        .iter()
        .filter_map(|file| {
            let offset = file.binary?;
            Some(format!(
                "(binary file {}: a NUL byte around offset {offset}; searched with NUL bytes \
                 read as line ends)",
                file.path.display()
            ))
        })
        .collect();
    binary.sort();
    let notes = if binary.is_empty() || mode == GrepOutputMode::Content {
        String::new()
    } else {
        format!("\n\n{}", binary.join("\n"))
    };
    let listing = match mode {
        GrepOutputMode::FilesWithMatches => {
            let mut files: Vec<(SystemTime, PathBuf)> = found
                .into_iter()
                .map(|file| (file.modified, file.path))
                .collect();
            sort_newest_first(&mut files);
            let total = files.len();
            let entries = files.iter().map(|(_, path)| path.display().to_string());
            let noun = if total == 1 { "file" } else { "files" };
            format!("Found {total} {noun}\n{}", page.apply(entries, total))
        }
        GrepOutputMode::Content => {
            found.sort_by(|a, b| a.path.cmp(&b.path));
            let mut lines = Vec::new();
            for (index, file) in found.into_iter().enumerate() {
                if options.context && index > 0 {
                    lines.push("--".to_owned());
                }
                lines.extend(file.lines);
            }
            let total = lines.len();
            page.apply(lines.into_iter(), total)
        }
        GrepOutputMode::Count => {
            found.sort_by(|a, b| a.path.cmp(&b.path));
            let matches: u64 = found.iter().map(|file| file.matches).sum();
            let files = found.len();
            let entries = found
                .iter()
                .map(|file| format!("{}:{}", file.path.display(), file.matches));
            let list = page.apply(entries, files);
            let noun = if files == 1 { "file" } else { "files" };
            format!("{list}\n\nFound {matches} total matches across {files} {noun}.")
        }
    };
    listing + &notes
}

fn page_of(head_limit: u64, offset: u64) -> Page {
    Page {
        limit: head_limit as usize,
        offset: offset as usize,
    }
}

#[derive(Clone, Copy)]
struct SearchOptions {
    mode: GrepOutputMode,
    line_numbers: bool,
    context: bool,
}

/// One file with at least one match.
struct FileMatches {
    path: PathBuf,
    /// Matching lines (or, in multiline mode, matches), as `rg --count` counts them.
    matches: u64,
    /// The `content` lines, context and `--` breaks included.
    lines: Vec<String>,
    /// Its modification time (`files_with_matches` mode only; the epoch otherwise).
    modified: SystemTime,
    /// Where binary data (a NUL byte) was seen, in a file searched whole although binary
    /// (one named as `path`).
    binary: Option<u64>,
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    path: &Path,
    options: SearchOptions,
) -> Option<FileMatches> {
    let mut sink = Collect {
        path: path.display().to_string(),
        options,
        matches: 0,
        lines: Vec::new(),
        binary: None,
    };
    // Unreadable files are skipped, as ripgrep skips them (with a warning).
    searcher.search_path(matcher, path, &mut sink).ok()?;
    let skipping = searcher.binary_detection().quit_byte().is_some();
    if let Some(offset) = sink.binary.filter(|_| sink.matches > 0) {
        match options.mode {
            // What was printed stays printed in rg; it warns that the rest was not searched.
            GrepOutputMode::Content if skipping => sink.lines.push(format!(
                "{}: WARNING: stopped searching binary file after match (found \"\\0\" byte \
                 around offset {offset})",
                sink.path
            )),
            GrepOutputMode::Content => sink.lines.push(format!(
                "{}: binary file matches (found \"\\0\" byte around offset {offset})",
                sink.path
            )),
            // A count or a listing of a file skipped as binary would be partial: rg leaves
            // the file out.
            _ if skipping => return None,
            _ => {}
        }
    }
    (sink.matches > 0).then(|| FileMatches {
        path: path.to_path_buf(),
        matches: sink.matches,
        lines: sink.lines,
        modified: SystemTime::UNIX_EPOCH,
        binary: sink.binary.filter(|_| !skipping),
    })
}

struct Collect {
    path: String,
    options: SearchOptions,
    matches: u64,
    lines: Vec<String>,
    /// The offset of the first binary data (a NUL byte), once seen.
    binary: Option<u64>,
}

impl Collect {
    /// Whether binary data was seen in a file searched whole: its lines are no longer shown,
    /// and in `content` mode the search stops at the next match, as rg's does.
    fn showing_binary(&self, searcher: &Searcher) -> bool {
        self.binary.is_some() && searcher.binary_detection().convert_byte().is_some()
    }

    fn push(&mut self, separator: char, number: Option<u64>, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut text = String::from_utf8_lossy(line).into_owned();
        if let Some((cut, _)) = text.char_indices().nth(MAX_LINE_CHARS) {
            let more = text[cut..].chars().count();
            text.truncate(cut);
            text.push_str(&format!(" [... {more} more characters]"));
        }
        self.lines
            .push(match number.filter(|_| self.options.line_numbers) {
                Some(number) => format!("{}{separator}{number}{separator}{text}", self.path),
                None => format!("{}{separator}{text}", self.path),
            });
    }
}

impl Sink for Collect {
    type Error = io::Error;

    fn matched(&mut self, searcher: &Searcher, found: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.matches += 1;
        match self.options.mode {
            GrepOutputMode::FilesWithMatches => Ok(false),
            GrepOutputMode::Count => Ok(true),
            GrepOutputMode::Content if self.showing_binary(searcher) => Ok(false),
            GrepOutputMode::Content => {
                let mut number = found.line_number();
                for line in found.lines() {
                    self.push(':', number, line);
                    number = number.map(|n| n + 1);
                }
                Ok(true)
            }
        }
    }

    fn context(
        &mut self,
        searcher: &Searcher,
        context: &SinkContext<'_>,
    ) -> Result<bool, io::Error> {
        if self.showing_binary(searcher) {
            return Ok(false);
        }
        if matches!(
            context.kind(),
            SinkContextKind::Before | SinkContextKind::After
        ) {
            self.push('-', context.line_number(), context.bytes());
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, offset: u64) -> Result<bool, io::Error> {
        self.binary = Some(offset);
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.options.context {
            self.lines.push("--".to_owned());
        }
        Ok(true)
    }
}

/// `offset` and `head_limit` over a list of entries, with a note when entries are left out.
struct Page {
    limit: usize,
    offset: usize,
}

impl Page {
    fn apply(&self, entries: impl Iterator<Item = String>, total: usize) -> String {
        let shown: Vec<String> = entries
            .skip(self.offset)
            .take(if self.limit == 0 {
                usize::MAX
            } else {
                self.limit
            })
            .collect();
        let end = self.offset + shown.len();
        let mut text = shown.join("\n");
        if shown.is_empty() {
            text = format!(
                "(No entries at offset {}: there are {total}. Use a smaller offset.)",
                self.offset
            );
        } else if self.offset > 0 || end < total {
            text.push_str(&format!(
                "\n\n(Showing entries {}-{end} of {total}.",
                self.offset + 1
            ));
            if end < total {
                text.push_str(&format!(
                    " {} more not shown: pass offset={end} to see them, or narrow the search.",
                    total - end
                ));
            }
            text.push(')');
        }
        text
    }
}
