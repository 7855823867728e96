//! The embedded default: with no API key, a scripted model plays the turns of a small real
//! task, so that the whole loop (real tools on the user's files, concurrent read-only calls,
//! a permission prompt, an edit shown as a diff) works offline.
//!
//! The script reacts to what the tools return, as a model would: it looks for TODO comments
//! with Grep (and for Rust files with Glob, at the same time), reads the first file that has
//! one, and proposes an Edit marking the TODO as reviewed. `run <command>` makes it call Bash,
//! and `call <tool> <json>` any tool (MCP tools included).
//!
//! Run without `--cwd`, the demo works on a [scratch copy](scratch_copy) of the directory, so
//! that trying it in a checkout (this repository's, as the README says) leaves the checkout as
//! it was and the next demo finds the same TODO.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tool_sdk::ContentBlock;
use tool_sdk::model::{Message, MessageContent, ModelRequest, Role, ScriptedModel, ScriptedTurn};

/// What a newcomer's first prompt is in the demo.
pub const FIRST_PROMPT: &str = "Find a TODO comment in this project and resolve it.";

/// A TODO right after `//`, `#` or `/*`, not yet marked as reviewed (or signed, as in
/// `TODO(name)`).
const TODO_COMMENT: &str = r"(//|#|/\*)\s*TODO([^(]|$)";

/// At most this many files, and bytes, go into a scratch copy: the demo needs a project's
/// sources, not its build outputs or data.
const SCRATCH_MAX_FILES: usize = 5_000;
const SCRATCH_MAX_BYTES: u64 = 100 << 20;

/// A scratch copy of `project`'s files, made in `under` (the coder's data directory): the
/// files git would see (hidden ones, `target/` and what `.gitignore` names are left out).
/// `fresh` replaces an earlier copy; otherwise one that exists is kept as it is (a resumed
/// demo goes on with its own edits). Returns the copy and how many files it has.
pub fn scratch_copy(project: &Path, under: &Path, fresh: bool) -> Result<(PathBuf, usize), String> {
    use std::hash::{Hash, Hasher};
    // One copy per project directory, named so a person can tell whose it is.
    let mut hasher = std::hash::DefaultHasher::new();
    project.hash(&mut hasher);
    let name = project.file_name().map_or_else(
        || "root".to_owned(),
        |name| name.to_string_lossy().into_owned(),
    );
    let copy = under.join(format!("{name}-{:08x}", hasher.finish() as u32));
    let failed = |what: &str, path: &Path, e: std::io::Error| {
        format!(
            "cannot {what} {} for the demo's scratch copy: {e}",
            path.display()
        )
    };
    if !fresh && copy.is_dir() {
        let files = ignore::WalkBuilder::new(&copy)
            .build()
            .flatten()
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .count();
        return Ok((copy, files));
    }
    if copy.exists() {
        std::fs::remove_dir_all(&copy).map_err(|e| failed("remove", &copy, e))?;
    }
    std::fs::create_dir_all(&copy).map_err(|e| failed("create", &copy, e))?;
    let (mut files, mut bytes) = (0, 0);
    let walk = ignore::WalkBuilder::new(project)
        // A project that is not (yet) a git repository has its .gitignore respected too.
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != "target")
        .build();
    for entry in walk.flatten() {
        let Ok(relative) = entry.path().strip_prefix(project) else {
            continue;
        };
        let to = copy.join(relative);
        match entry.file_type() {
            Some(kind) if kind.is_dir() => {
                std::fs::create_dir_all(&to).map_err(|e| failed("create", &to, e))?;
            }
            Some(kind) if kind.is_file() => {
                let size = entry.metadata().map_or(0, |m| m.len());
                if files == SCRATCH_MAX_FILES || bytes + size > SCRATCH_MAX_BYTES {
                    break;
                }
                std::fs::copy(entry.path(), &to).map_err(|e| failed("copy", entry.path(), e))?;
                files += 1;
                bytes += size;
            }
            // Links are left out: one could lead the demo's edit back into the checkout.
            _ => {}
        }
    }
    Ok((copy, files))
}

/// A scripted model that works on the project at `root`.
pub fn model(root: &Path) -> ScriptedModel {
    let root = root.to_owned();
    ScriptedModel::new([]).with_responder(move |request| next_turn(&root, request))
}

fn next_turn(root: &Path, request: &ModelRequest) -> ScriptedTurn {
    let Some(last) = request.messages.last() else {
        return ScriptedTurn::text("(scripted demo) Nothing to do.");
    };
    let results = tool_results(last);
    // A prompt typed after a cancelled turn joins the results of that turn's calls, as
    // providers want: the prompt is what to answer then.
    let prompt = text_of(last);
    if results.is_empty() || !prompt.trim().is_empty() {
        return answer_prompt(&prompt);
    }
    // The calls these results answer are in the model's previous message.
    let calls = request
        .messages
        .iter()
        .rev()
        .find(|m| m.role == Role::Assistant)
        .map(tool_calls)
        .unwrap_or_default();
    let result_of = |tool: &str| {
        let (id, _) = calls.iter().find(|(_, call)| call.0 == tool)?;
        results.iter().find(|(rid, _, _)| rid == id)
    };
    if let Some((_, text, _)) = result_of("Grep") {
        let rust_files = result_of("Glob").map_or(0, |(_, text, _)| {
            paths_in(root, text).len() + more_than_listed(text)
        });
        return read_first_todo(root, text, rust_files);
    }
    if let Some((_, _, is_error)) = result_of("Read") {
        let path = calls
            .iter()
            .find(|(_, call)| call.0 == "Read")
            .and_then(|(_, call)| call.1["file_path"].as_str())
            .map(PathBuf::from);
        return match (path, is_error) {
            (Some(path), false) => propose_edit(&path),
            _ => ScriptedTurn::text("I could not read the file, so I'll leave it alone."),
        };
    }
    if let Some((_, text, is_error)) = result_of("Edit") {
        return ScriptedTurn::text(if *is_error {
            format!(
                "The edit was not applied ({}); the file is unchanged.",
                first_line(text)
            )
        } else {
            "Done: the TODO is marked as reviewed. Type `run <command>` to see Bash, or \
             /help."
                .to_owned()
        });
    }
    // Bash, or any tool called with `call`: report how it went.
    let Some((_, text, is_error)) = results.first() else {
        return ScriptedTurn::text("(scripted demo) I have nothing more to do with that.");
    };
    let verdict = if *is_error { "failed" } else { "finished" };
    ScriptedTurn::text(format!(
        "The call {verdict}. Its output starts with: {}",
        first_line(text)
    ))
}

// TODO: teach the scripted demo a fourth prompt (this is the TODO it finds in this repo).
fn answer_prompt(prompt: &str) -> ScriptedTurn {
    if let Some(command) = prompt.trim().strip_prefix("run ") {
        return ScriptedTurn::text(format!("I'll run `{command}`.")).with_tool_call(
            "Bash",
            json!({ "command": command, "description": format!("Run {command}") }),
        );
    }
    if let Some(call) = prompt.trim().strip_prefix("call ") {
        let (tool, input) = call.split_once(' ').unwrap_or((call, "{}"));
        return match serde_json::from_str::<Value>(input) {
            Ok(input) => {
                ScriptedTurn::text(format!("I'll call {tool}.")).with_tool_call(tool.trim(), input)
            }
            Err(error) => ScriptedTurn::text(format!(
                "`call` wants a tool name and a JSON object: {error}"
            )),
        };
    }
    if prompt.to_lowercase().contains("todo") {
        return ScriptedTurn::text(
            "I'll look for TODO comments, and at the Rust files, at the same time.",
        )
        .with_tool_call("Glob", json!({ "pattern": "**/*.rs" }))
        .with_tool_call(
            "Grep",
            json!({ "pattern": TODO_COMMENT, "output_mode": "files_with_matches" }),
        );
    }
    ScriptedTurn::text(
        "This is the scripted demo: I only know three prompts. Ask me to find a TODO, type \
         `run <command>` (for example `run sleep 30`, then Ctrl-C), or `call <tool> <json>` \
         (for example `call Glob {\"pattern\": \"*.md\"}`). Set ANTHROPIC_API_KEY, \
         OPENAI_API_KEY or GEMINI_API_KEY for a real model.",
    )
}

fn read_first_todo(root: &Path, grep_output: &str, rust_files: usize) -> ScriptedTurn {
    let files = paths_in(root, grep_output);
    let Some(first) = files.first() else {
        return ScriptedTurn::text(format!(
            "I found {rust_files} Rust files and no TODO comments: nothing to resolve."
        ));
    };
    ScriptedTurn::text(format!(
        "{rust_files} Rust files; {} with TODO comments. Reading the first one.",
        files.len()
    ))
    .with_tool_call("Read", json!({ "file_path": first.display().to_string() }))
}

fn propose_edit(path: &Path) -> ScriptedTurn {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    // A line that is unique in the file, so the edit's old_string matches exactly once.
    let found = text.lines().find_map(|line| {
        let at = todo_comment_at(line)?;
        (text.matches(line).count() == 1).then_some((line, at))
    });
    let Some((line, at)) = found else {
        return ScriptedTurn::text("Every TODO line there appears twice; I'll leave it.");
    };
    let new_line = format!("{}TODO(reviewed){}", &line[..at], &line[at + 4..]);
    ScriptedTurn::text("I'll mark it as reviewed.").with_tool_call(
        "Edit",
        json!({
            "file_path": path.display().to_string(),
            "old_string": line,
            "new_string": new_line,
        }),
    )
}

/// Where the TODO of a [`TODO_COMMENT`] starts in `line`, without a regex engine here.
fn todo_comment_at(line: &str) -> Option<usize> {
    ["//", "#", "/*"].iter().find_map(|marker| {
        line.match_indices(marker).find_map(|(at, _)| {
            let rest = &line[at + marker.len()..];
            let todo = at + marker.len() + (rest.len() - rest.trim_start().len());
            let after = &line[todo..];
            (after.starts_with("TODO") && !after[4..].starts_with('(')).then_some(todo)
        })
    })
}

type Call = (String, (String, Value));

fn tool_calls(message: &Message) -> Vec<Call> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::ToolUse(call) => Some((
                call.id.clone(),
                (call.name.clone(), call.input.json_or_empty().into_owned()),
            )),
            _ => None,
        })
        .collect()
}

fn tool_results(message: &Message) -> Vec<(String, String, bool)> {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                is_error,
                ..
            } => Some((tool_use_id.clone(), blocks_text(content), *is_error)),
            _ => None,
        })
        .collect()
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn text_of(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// The files a Glob or Grep listing names (it may have a header or a footer line).
fn paths_in(root: &Path, listing: &str) -> Vec<PathBuf> {
    listing
        .lines()
        .map(|line| root.join(line.trim()))
        .filter(|path| path.is_file())
        .collect()
}

/// How many more files matched than a truncated listing shows ("(Results are truncated: 3
/// more files matched. ...)"), so the demo counts them all.
fn more_than_listed(listing: &str) -> usize {
    listing
        .split_once("truncated: ")
        .and_then(|(_, rest)| rest.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}
