//! The tools of the tests, shared by the test worker process and the in-process agent they are
//! compared with. Each counts its runs in a file of `dir`, so that a test sees how often a
//! side effect happened; `slow_ms` holds the first run (only) in the tool, with a marker file
//! written, so that a test can kill the worker while the call runs.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tool_sdk::{ToolContext, ToolRegistry, tool};

/// A registry of `look` and `write_note`, the tools the tests' runs call.
pub fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(LookTool)).unwrap();
    registry.register(Arc::new(WriteNoteTool)).unwrap();
    Arc::new(registry)
}

/// Appends `line` to `dir/<file>` and returns how many of its lines are `line` now: the
/// runs of one call, whatever other calls ran beside it.
fn count(dir: &Path, file: &str, line: &str) -> usize {
    let path = dir.join(file);
    append_line(&path, line);
    std::fs::read_to_string(&path)
        .expect("the count file is read")
        .lines()
        .filter(|stored| *stored == line)
        .count()
}

/// Appends `line` to the file at `path` in one write: `writeln!` may write the text and its
/// newline apart, and two calls running side by side then made one line of both.
fn append_line(path: &Path, line: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .and_then(|mut out| out.write_all(format!("{line}\n").as_bytes()))
        .expect("the count file is written");
}

/// Holds the first run of a call in the tool for `slow_ms`, with `dir/<marker>` written (the
/// worker's pid in it); if
/// the call's token is cancelled meanwhile, writes `dir/cancelled` and stops holding.
async fn hold(dir: &Path, marker: &str, run: usize, slow_ms: u64, ctx: &ToolContext) {
    if slow_ms > 0 && run == 1 {
        // The process the call runs in: the test kills that one.
        let pid = std::process::id().to_string();
        std::fs::write(dir.join(marker), pid).expect("the marker is written");
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(slow_ms)) => {}
            () = ctx.cancellation().cancelled() => {
                std::fs::write(dir.join("cancelled"), "").expect("the marker is written");
            }
        }
    }
}

/// Looks at a note (read-only): counts its runs in `dir/looks`.
#[tool(register = false, read_only)]
pub async fn look(dir: String, note: String, slow_ms: u64, ctx: &ToolContext) -> String {
    let dir = Path::new(&dir);
    let run = count(dir, "looks", &note);
    hold(dir, "in_look", run, slow_ms, ctx).await;
    format!("looked at {note} (run {run})")
}

/// Writes a note (mutating): counts its runs in `dir/writes`.
#[tool(register = false)]
pub async fn write_note(dir: String, note: String, slow_ms: u64, ctx: &ToolContext) -> String {
    let dir = Path::new(&dir);
    let run = count(dir, "writes", &note);
    hold(dir, "in_write", run, slow_ms, ctx).await;
    format!("wrote {note}")
}

/// Marks its session (mutating): appends `<session> <note> <pid>` to `dir/marks`, then holds
/// every run for `slow_ms`, so that many runs' calls are under way at once.
#[tool(register = false)]
pub async fn mark(dir: String, note: String, slow_ms: u64, ctx: &ToolContext) -> String {
    let line = format!("{} {note} {}", ctx.session_id(), std::process::id());
    let path = Path::new(&dir).join("marks");
    append_line(&path, &line);
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(slow_ms)) => {}
        () = ctx.cancellation().cancelled() => {}
    }
    format!("marked {note}")
}

/// Who to greet, as the user answers it.
#[derive(serde::Deserialize, tool_sdk::JsonSchema)]
#[schemars(crate = "tool_sdk::schemars")]
pub struct Name {
    /// Your name.
    pub name: String,
}

/// Greets the user by the name they give (mutating): asks for it first, then appends
/// `hello <name>` to `dir/greetings`.
#[tool(register = false)]
pub async fn greet(dir: String, ctx: &ToolContext) -> Result<String, tool_sdk::ToolError> {
    let answer = ctx.elicit::<Name>("Who should be greeted?").await?;
    let Some(Name { name }) = answer.accepted() else {
        return Ok("nobody to greet".to_owned());
    };
    count(Path::new(&dir), "greetings", &format!("hello {name}"));
    Ok(format!("greeted {name}"))
}

/// Reports `lines` progress lines, `line <i> at <µs since the epoch>`, and after each waits
/// (20 s at most) until `dir/seen-<i>` exists, which the test writes once the line reached
/// it: so the lines seen are those that showed while the call ran. Says how many were.
#[tool(register = false, read_only)]
pub async fn report(dir: String, lines: u32, ctx: &ToolContext) -> String {
    let mut seen = 0;
    for line in 0..lines {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is past 1970");
        ctx.progress(format!("line {line} at {}", now.as_micros()));
        let file = Path::new(&dir).join(format!("seen-{line}"));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !file.exists() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        seen += u32::from(file.exists());
    }
    format!("{seen} of {lines} lines seen while running")
}
