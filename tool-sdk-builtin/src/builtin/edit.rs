use std::fs;
use std::path::Path;

use serde_json::json;

use super::fs_util::{self, blocking};
use tool_sdk_core::{ContentBlock, ToolContext, ToolError, ToolOutput, tool};

/// Replaces exact text in a file.
///
/// - Read the file with the Read tool in this session before editing it; an edit of a file
///   that was not read, or that changed on disk since, is refused.
/// - `old_string` must match the file exactly, indentation and all. When copying from Read's
///   output, leave out the line-number prefix (the number and the tab before each line).
/// - The edit fails when `old_string` occurs more than once: add surrounding lines to make it
///   unique, or set `replace_all` to change every occurrence (handy for renaming).
/// - `new_string` must differ from `old_string`.
/// - An empty `old_string` creates a new file (or fills an empty one) with `new_string`.
/// - Prefer editing existing files to creating new ones.
#[tool(
    name = "Edit",
    acts_on(writes = "file_path"),
    category = "builtin",
    destructive,
    title = "Edit {file_path}"
)]
pub async fn edit(
    /// The absolute path of the file to change.
    file_path: String,
    /// The exact text to replace.
    old_string: String,
    /// The text to put in its place (must differ from `old_string`).
    new_string: String,
    /// Replace every occurrence of `old_string` instead of requiring exactly one (default
    /// false).
    #[arg(default)]
    replace_all: bool,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let path = fs_util::resolve_for_write(ctx, &file_path)?;
    let ctx = ctx.clone();
    blocking(move || edit_file(&path, old_string, new_string, replace_all, &ctx)).await
}

fn edit_file(
    path: &Path,
    old_string: String,
    new_string: String,
    replace_all: bool,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    if old_string == new_string {
        return Err(ToolError::invalid_input(
            "old_string and new_string are the same, so there is nothing to change",
        ));
    }
    let Some(metadata) = fs_util::metadata_if_exists(path)? else {
        if old_string.is_empty() {
            // An empty old_string on a missing file creates it.
            fs_util::write_atomic(ctx, path, new_string.as_bytes())?;
            fs_util::record_written(ctx, path);
            let diff = unified_diff(path, "", &new_string);
            return Ok(output(
                format!(
                    "Created {} ({}).",
                    path.display(),
                    fs_util::lines_label(fs_util::line_count(&new_string))
                ),
                diff,
            ));
        }
        return Err(fs_util::not_found(path));
    };
    fs_util::ensure_regular_file(path, &metadata)?;
    fs_util::ensure_read_and_unchanged(ctx, path, &metadata)?;
    let bytes = fs::read(path).map_err(|e| fs_util::io_error(path, "read", &e))?;
    let content = String::from_utf8(bytes).map_err(|_| {
        ToolError::invalid_input(format!(
            "{} is not valid UTF-8 text and cannot be edited",
            path.display()
        ))
    })?;

    let (updated, summary) = if old_string.is_empty() {
        if !content.is_empty() {
            return Err(ToolError::invalid_input(format!(
                "old_string is empty but {} is not. An empty old_string only creates a file \
                 or fills an empty one: give the exact text to replace, or use Write to \
                 replace the whole file",
                path.display()
            )));
        }
        (new_string.clone(), "filled the empty file".to_owned())
    } else {
        let (old, new) = match_line_endings(&content, old_string, new_string);
        let starts: Vec<usize> = content.match_indices(&old).map(|(at, _)| at).collect();
        let lines: Vec<usize> = starts.iter().map(|&at| line_of(&content, at)).collect();
        match lines.len() {
            0 => return Err(not_found_error(path, &content, &old)),
            1 => (
                content.replacen(&old, &new, 1),
                format!("replaced 1 occurrence at line {}", lines[0]),
            ),
            n if replace_all => (
                content.replace(&old, &new),
                format!("replaced {n} occurrences (lines {})", join(&lines)),
            ),
            n => {
                return Err(ToolError::invalid_input(format!(
                    "old_string occurs {n} times in {} (at lines {}), but must occur exactly \
                     once. Add surrounding lines to old_string to pick one, or set \
                     replace_all to true to change all {n}",
                    path.display(),
                    join(&lines)
                )));
            }
        }
    };
    fs_util::write_atomic(ctx, path, updated.as_bytes())?;
    fs_util::record_written(ctx, path);
    let diff = unified_diff(path, &content, &updated);
    ctx.metadata(json!({ "diff": diff }));
    Ok(output(
        format!("Edited {}: {summary}.", path.display()),
        diff,
    ))
}

/// A concise text for the model; the diff goes to the app as structured output.
fn output(text: String, diff: String) -> ToolOutput {
    ToolOutput {
        content: vec![ContentBlock::text(text)],
        structured: Some(json!({ "diff": diff })),
        is_error: false,
    }
}

fn unified_diff(path: &Path, before: &str, after: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&name, &name)
        .to_string()
}

/// Read shows CRLF files with plain line breaks, so a multi-line old_string copied from it
/// has `\n` where the file has `\r\n`: use the file's line endings then.
fn match_line_endings(content: &str, old: String, new: String) -> (String, String) {
    if content.contains("\r\n")
        && old.contains('\n')
        && !old.contains("\r\n")
        && !content.contains(&old)
    {
        let crlf = |text: &str| text.replace("\r\n", "\n").replace('\n', "\r\n");
        let old_crlf = crlf(&old);
        if content.contains(&old_crlf) {
            return (old_crlf, crlf(&new));
        }
    }
    (old, new)
}

fn line_of(content: &str, at: usize) -> usize {
    content[..at].matches('\n').count() + 1
}

fn join(lines: &[usize]) -> String {
    lines
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// old_string is not in the file: say so, with what probably went wrong.
fn not_found_error(path: &Path, content: &str, old: &str) -> ToolError {
    let mut message = format!("old_string was not found in {}.", path.display());
    if has_line_number_prefixes(old) {
        message.push_str(
            " It seems to include the line-number prefixes of Read's output; leave out the \
             number and tab at the start of each line.",
        );
    } else if let Some(line) = whitespace_insensitive_line(content, old) {
        message.push_str(&format!(
            " It matches at line {line} if whitespace is ignored: copy the exact \
             indentation (tabs or spaces) and line breaks from the file."
        ));
    } else if squash(content).contains(&squash(old)) {
        message.push_str(
            " It matches only if whitespace is ignored: copy the exact indentation and line \
             breaks from the file.",
        );
    }
    message.push_str(" Read the file again to see its current contents.");
    ToolError::invalid_input(message)
}

fn has_line_number_prefixes(text: &str) -> bool {
    text.lines().all(|line| {
        let rest = line.trim_start();
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && rest[digits..].starts_with('\t')
    })
}

/// The first line where `old`'s lines match the file's with runs of whitespace collapsed.
fn whitespace_insensitive_line(content: &str, old: &str) -> Option<usize> {
    let normalise = |line: &str| line.split_whitespace().collect::<Vec<_>>().join(" ");
    let wanted: Vec<String> = old.lines().map(normalise).collect();
    let wanted = trim_blank(&wanted);
    if wanted.is_empty() {
        return None;
    }
    let lines: Vec<String> = content.lines().map(normalise).collect();
    lines
        .windows(wanted.len())
        .position(|window| window == wanted)
        .map(|index| index + 1)
}

fn trim_blank(lines: &[String]) -> &[String] {
    let start = lines
        .iter()
        .position(|l| !l.is_empty())
        .unwrap_or(lines.len());
    let end = lines
        .iter()
        .rposition(|l| !l.is_empty())
        .map_or(start, |i| i + 1);
    &lines[start..end]
}

fn squash(text: &str) -> String {
    text.split_whitespace().collect()
}
