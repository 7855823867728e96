//! `Bash`, and its companions for commands run in the background: `BashOutput` and
//! `KillShell`.
//!
//! Each command runs as `/bin/bash --noprofile --norc -c <script>` in a process group of its
//! own, with stderr merged into stdout (`exec 2>&1`, so the two keep their real order).
//!
//! **Working directory.** A `cd` persists between the calls of one agent: the script sets an
//! `EXIT` trap that writes `pwd -P` to a private temporary file, and the next call starts
//! there (kept in [`ShellState`], the agent's session value). A trap rather than a marker in
//! the output because it also runs after `exit 3`, `set -e` failures and syntax errors, keeps
//! the command's exit status, and cannot be confused with, or cut off from, what the command
//! prints. A command killed by its timeout leaves the directory as it was.
//!
//! **Git.** Every command runs with git configuration overrides that keep a hostile
//! repository's `.git/config` (`core.fsmonitor`, `diff.external`, hooks, pagers, signature
//! programs...) from running programs; a command the classifier would run without asking
//! also has the filter and diff drivers the repository defines disarmed by name: see
//! `shell_env`.
//!
//! **OS containment.** With a sandbox in the context, on Linux, the shell may write only
//! inside the sandbox, the temporary directory and [`ShellPolicy::writable`], and opens no
//! IPv4/IPv6 sockets unless [`ShellPolicy::network`]: see `containment`. Where the kernel
//! cannot enforce that, the command runs anyway and the result says so.
//!
//! **Stopping.** A timeout, a cancellation, or the call's future being dropped sends SIGKILL
//! to the whole process group (`kill(-pgid)` through `rustix`'s safe wrapper: no `unsafe`, no
//! extra process to spawn), so `sleep 60 & sleep 60` leaves nothing behind. Processes a
//! command that finished normally left running in the background are not touched. This is
//! [`ToolContext::command`]'s [`ToolChild`], which every tool's commands get; it also kills
//! the group when the agent's process dies, even by SIGKILL (a watchdog, see `process`).

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::containment::{self, Outcome, Plan, ShellPolicy};
use super::shell_env;
use crate::permission::ShellDir;
use crate::permission::bash::{Decision, classify, simple_commands};
mod background;

use background::{BackgroundShell, start_background};
pub use background::{BashOutputTool, KillShellTool};

use tool_sdk_core::{
    ActsOn, BoxFuture, PermissionPrompt, ResultDisplay, StateRequirement, Tool, ToolAnnotations,
    ToolChild, ToolCommand, ToolContext, ToolError, ToolOutput, ToolResult, tool,
};

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// The most characters of output one result carries; the head and tail are kept.
pub(crate) const MAX_OUTPUT_CHARS: usize = 30_000;
/// Bytes kept at each end while a command runs: enough for `MAX_OUTPUT_CHARS / 2` characters
/// of any UTF-8.
const KEEP_BYTES: usize = MAX_OUTPUT_CHARS / 2 * 4;
/// How long output is still read after bash exited, for what its last writes left in the pipe.
const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(100);

/// What the Bash tools keep for one agent: the shell's working directory and the commands
/// started in the background. Dropping it (the agent's session ends) kills the background
/// commands still running.
#[derive(Debug, Default)]
pub struct ShellState {
    cwd: Mutex<Option<PathBuf>>,
    shells: Mutex<HashMap<String, Arc<BackgroundShell>>>,
    next_id: AtomicU64,
    /// Whether the session was already warned that containment is not in force.
    warned: AtomicBool,
}

impl ShellState {
    /// The directory the next command starts in, once a command has run.
    pub fn cwd(&self) -> Option<PathBuf> {
        lock(&self.cwd).clone()
    }

    fn start_dir(&self, ctx: &ToolContext) -> (PathBuf, Option<String>) {
        match self.cwd() {
            Some(dir) if dir.is_dir() => (dir, None),
            Some(gone) => {
                *lock(&self.cwd) = None;
                let note = format!(
                    "[the shell's directory {} no longer exists; ran in {} instead]",
                    gone.display(),
                    ctx.working_dir().display()
                );
                (ctx.working_dir().to_owned(), Some(note))
            }
            None => (ctx.working_dir().to_owned(), None),
        }
    }

    fn shell(&self, id: &str) -> Result<Arc<BackgroundShell>, ToolError> {
        let shells = lock(&self.shells);
        shells.get(id).cloned().ok_or_else(|| {
            let mut known: Vec<String> = shells.keys().cloned().collect();
            known.sort();
            ToolError::not_found(format!(
                "no background shell `{id}` (known: {})",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ))
        })
    }
}

impl Drop for ShellState {
    fn drop(&mut self) {
        for shell in lock(&self.shells).values() {
            shell.kill();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

// ---- output ----

/// Output kept within bounds while it streams in: the first and the last `KEEP_BYTES`, and a
/// count of what was dropped between them.
#[derive(Debug, Default)]
struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: usize,
}

impl Capture {
    fn push(&mut self, mut data: &[u8]) {
        let room = KEEP_BYTES.saturating_sub(self.head.len()).min(data.len());
        self.head.extend_from_slice(&data[..room]);
        data = &data[room..];
        self.tail.extend(data);
        if self.tail.len() > KEEP_BYTES {
            let excess = self.tail.len() - KEEP_BYTES;
            self.tail.drain(..excess);
            self.dropped += excess;
        }
    }

    fn is_empty(&self) -> bool {
        self.head.is_empty()
    }

    /// The text, at most [`MAX_OUTPUT_CHARS`] characters of it plus a note of what was cut.
    fn render(&self) -> String {
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        if self.dropped == 0 {
            let mut all = self.head.clone();
            all.extend_from_slice(&tail);
            return cap_middle(&String::from_utf8_lossy(&all), MAX_OUTPUT_CHARS);
        }
        let half = MAX_OUTPUT_CHARS / 2;
        let head = String::from_utf8_lossy(&self.head);
        let tail = String::from_utf8_lossy(&tail);
        let head_chars = head.chars().count();
        let tail_chars = tail.chars().count();
        let omitted =
            head_chars.saturating_sub(half) + self.dropped + tail_chars.saturating_sub(half);
        let kept_head: String = head.chars().take(half).collect();
        let kept_tail: String = tail.chars().skip(tail_chars.saturating_sub(half)).collect();
        format!("{kept_head}{}{kept_tail}", truncation_note(omitted))
    }
}

fn truncation_note(omitted: usize) -> String {
    format!("\n\n[... output truncated: about {omitted} characters omitted ...]\n\n")
}

/// Keeps the first and last `max / 2` characters of `text`, noting how many were cut.
fn cap_middle(text: &str, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text.to_owned();
    }
    let half = max / 2;
    let head: String = text.chars().take(half).collect();
    let tail: String = text.chars().skip(total - half).collect();
    format!("{head}{}{tail}", truncation_note(total - 2 * half))
}

/// Reads `reader` to its end (or first error) into `into`.
async fn pump(mut reader: impl AsyncRead + Unpin, into: &Mutex<Capture>) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => lock(into).push(&buf[..n]),
        }
    }
}

// ---- processes ----

/// A file path that is removed when dropped.
struct TempPath(PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// `text` as one single-quoted bash word.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

fn bash(script: &str, dir: &Path, git: &[(String, String)], ctx: &ToolContext) -> ToolCommand {
    let mut command = ctx.command("/bin/bash");
    command
        .args(["--noprofile", "--norc", "-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        // The script's first line sends stderr to stdout.
        .stderr(Stdio::null());
    shell_env::apply(&mut command, git);
    command
}

/// For a command the classifier would run without asking, the git configuration overrides
/// that disarm the drivers the repository at `dir` defines (see `shell_env`); none for other
/// commands, which the user approved as they are.
async fn auto_allowed_git(command: &str, dir: &Path, ctx: &ToolContext) -> Vec<(String, String)> {
    let runs_git = simple_commands(command).is_ok_and(|commands| {
        commands
            .iter()
            .any(|c| c.argv.first().is_some_and(|name| name == "git"))
    });
    if !runs_git || classify(command).decision != Decision::Allow {
        return Vec::new();
    }
    let mut list = ctx.command("git");
    list.args([
        "config",
        "--null",
        "--name-only",
        "--get-regexp",
        shell_env::DRIVER_KEYS,
    ])
    .current_dir(dir)
    .stdin(Stdio::null());
    shell_env::apply(&mut list, &[]);
    // Without a git that runs, the command's own git does not run either.
    let listing = list
        .output()
        .await
        .map(|out| out.stdout)
        .unwrap_or_default();
    shell_env::auto_allowed_overrides(&listing)
}

/// Spawns the shell for `script`, OS-contained when the context has a sandbox; the one-line
/// note for the result when containment is not (fully) in force, after warning the UI once
/// per session.
fn spawn_shell(
    script: &str,
    dir: &Path,
    git: &[(String, String)],
    ctx: &ToolContext,
    state: &ShellState,
) -> Result<(ToolChild, Option<String>), ToolError> {
    let plan = ctx
        .sandbox()
        .map(|sandbox| Plan::new(sandbox, ctx.state::<ShellPolicy>()));
    let (child, outcome): (_, Outcome) =
        containment::spawn(&mut bash(script, dir, git, ctx), plan.as_ref())
            .map_err(start_failed)?;
    let note = outcome.note();
    if let Some(note) = &note
        && !state.warned.swap(true, Ordering::Relaxed)
    {
        ctx.progress(format!("warning: {note}"));
        ctx.metadata(serde_json::json!({
            "containment": {
                "filesystem": outcome.fs_missing.is_none(),
                "network": outcome.net_missing.is_none(),
                "note": note,
            }
        }));
    }
    Ok((child, note))
}

fn describe_status(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("Exit code: {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return format!("Killed by signal {signal}");
        }
    }
    format!("Exited: {status}")
}

fn start_failed(error: std::io::Error) -> ToolError {
    ToolError::failed(format!("could not start /bin/bash: {error}"))
}

// ---- Bash ----

/// Runs a bash command in a persistent shell session and returns its output and exit code.
#[tool(
    name = "Bash",
    acts_on(shell = "command"),
    register = false,
    category = "builtin",
    destructive,
    open_world,
    timeout = "11m",
    description = "Runs a bash command and returns its combined stdout and stderr followed by \
its exit code.\n\n\
- The working directory carries over between calls: after `cd some/dir`, later commands run \
there. Other shell state (variables, functions, aliases) does not; prefer absolute paths and \
avoid needless `cd`.\n\
- Quote paths that contain spaces, e.g. `cd \"my dir\"`.\n\
- `timeout` is in milliseconds: 120000 (2 minutes) unless given, at most 600000 (10 minutes). \
A command that runs out of time is killed together with every process it started.\n\
- A non-zero exit code is reported, not treated as a failure of the tool: read the output \
to see what went wrong.\n\
- Output longer than 30000 characters is cut in the middle; the start and the end are kept. \
Pipe long output through `head`, `tail` or `grep`, or write it to a file.\n\
- The command gets no input: avoid interactive programs and pagers (use `git --no-pager`, \
`-y` flags and the like).\n\
- For servers, watchers and other long-running commands set `run_in_background: true`: you \
get a shell id at once, read new output with BashOutput and stop it with KillShell. Do not \
append `&` for that.\n\
- Chain dependent commands with `&&`; use `;` when later ones should run even if earlier \
ones fail.\n\
- Prefer the dedicated tools for reading, searching and editing files where they exist.\n\
- `description` is a short (5-10 word) summary of what the command does, shown to the user."
)]
async fn bash_command(
    /// The command to run.
    command: String,
    /// Optional timeout in milliseconds (default 120000, max 600000).
    timeout: Option<u64>,
    /// What the command does, in 5-10 words, e.g. "List files in the current directory".
    description: Option<String>,
    /// Start the command in the background and return a shell id at once; read its output
    /// with BashOutput.
    run_in_background: Option<bool>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let _ = description;
    if command.trim().is_empty() {
        return Err(ToolError::invalid_input("`command` is empty"));
    }
    let timeout_ms = timeout.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
        return Err(ToolError::invalid_input(format!(
            "`timeout` must be between 1 and {MAX_TIMEOUT_MS} milliseconds, not {timeout_ms}"
        )));
    }
    if run_in_background == Some(true) {
        return start_background(command, ctx).await;
    }
    run_foreground(&command, Duration::from_millis(timeout_ms), ctx).await
}

async fn run_foreground(
    command: &str,
    timeout: Duration,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let state = ctx.session::<ShellState>();
    let (dir, note) = state.start_dir(ctx);
    let cwd_file = TempPath(std::env::temp_dir().join(format!(
        "tool-sdk-bash-cwd-{}-{:016x}",
        std::process::id(),
        fastrand::u64(..)
    )));
    // A newline, not `;`, before the command: a syntax error in it then still runs the trap.
    let script = format!(
        "exec 2>&1\ntrap 'pwd -P > {} 2>/dev/null' EXIT\n{command}",
        sh_quote(&cwd_file.0.to_string_lossy())
    );
    // Dropping `child` before it was waited for (a timeout, a cancellation, the call's future
    // dropped) kills its whole process group.
    let git = auto_allowed_git(command, &dir, ctx).await;
    let (mut child, contained_note) = spawn_shell(&script, &dir, &git, ctx, &state)?;
    let stdout = child.stdout.take();
    let capture = Mutex::new(Capture::default());

    let run = async {
        let reading = async {
            if let Some(stdout) = stdout {
                pump(stdout, &capture).await;
            }
        };
        tokio::pin!(reading);
        let mut read_all = false;
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                () = &mut reading, if !read_all => read_all = true,
            }
        };
        // Something the command left running may hold the pipe open: do not wait for it.
        if !read_all {
            let _ = tokio::time::timeout(DRAIN_AFTER_EXIT, &mut reading).await;
        }
        status
    };
    let status = tokio::select! {
        status = run => status.map_err(|e| ToolError::failed(format!("waiting for bash: {e}")))?,
        () = tokio::time::sleep(timeout) => return Err(ToolError::Timeout(timeout)),
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };

    if let Ok(text) = std::fs::read_to_string(&cwd_file.0) {
        let new_dir = PathBuf::from(text.trim_end_matches('\n'));
        if new_dir.is_absolute() && new_dir.is_dir() {
            // The permission gate resolves the next command's relative paths from there.
            ctx.session::<ShellDir>().set(Some(new_dir.clone()));
            *lock(&state.cwd) = Some(new_dir);
        }
    }

    let capture = capture.into_inner().unwrap_or_else(|p| p.into_inner());
    let mut text = if capture.is_empty() {
        "(no output)".to_owned()
    } else {
        capture.render()
    };
    if !text.ends_with('\n') {
        text.push('\n');
    }
    for note in [note, contained_note].into_iter().flatten() {
        text.push_str(&note);
        text.push('\n');
    }
    text.push_str(&describe_status(&status));
    Ok(text)
}

// ---- the registered Bash tool ----

/// The `#[tool]`-generated Bash, wrapped so its title can be "the description, or else the
/// command" (a title template has no fallback).
static INNER: BashCommandTool = BashCommandTool;

/// The `Bash` tool: runs a command in bash, in a working directory that persists between the
/// calls of one agent (kept in [`ShellState`], learnt from an `EXIT` trap that records
/// `pwd -P`). A timeout, a cancellation or a dropped call kills the command's whole process
/// group.
#[derive(Clone, Copy, Debug, Default)]
pub struct BashTool;

impl Tool for BashTool {
    fn name(&self) -> &str {
        INNER.name()
    }

    fn description(&self) -> &str {
        INNER.description()
    }

    fn input_schema(&self) -> &Value {
        INNER.input_schema()
    }

    fn output_schema(&self) -> Option<&Value> {
        INNER.output_schema()
    }

    fn annotations(&self) -> ToolAnnotations {
        INNER.annotations()
    }

    fn timeout(&self) -> Option<Duration> {
        INNER.timeout()
    }

    fn category(&self) -> Option<&str> {
        INNER.category()
    }

    fn acts_on(&self) -> ActsOn {
        INNER.acts_on()
    }

    fn required_state(&self) -> Vec<StateRequirement> {
        INNER.required_state()
    }

    fn validate_input<'a>(
        &'a self,
        input: &'a Value,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<(), ToolError>> {
        INNER.validate_input(input, ctx)
    }

    fn call<'a>(&'a self, input: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolResult> {
        INNER.call(input, ctx)
    }

    fn display_title(&self, input: &Value) -> String {
        let description = input["description"]
            .as_str()
            .filter(|d| !d.trim().is_empty());
        match description {
            Some(description) => description.to_owned(),
            None => input["command"].as_str().unwrap_or("Bash").to_owned(),
        }
    }

    fn permission_prompt(&self, input: &Value) -> PermissionPrompt {
        let command = input["command"].as_str().unwrap_or_default();
        PermissionPrompt {
            title: format!("Bash: {command}"),
            summary: input["description"].as_str().map(str::to_owned),
            content: input.clone(),
        }
    }

    fn result_display(&self, input: &Value, output: &ToolOutput) -> ResultDisplay {
        let mut display = INNER.result_display(input, output);
        display.title = self.display_title(input);
        display
    }
}

tool_sdk_core::__private::inventory::submit! {
    tool_sdk_core::__private::ToolRegistration::new(
        "Bash",
        module_path!(),
        file!(),
        line!(),
        || Arc::new(BashTool),
    )
}
