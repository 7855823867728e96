//! Commands run in the background (`run_in_background`), and the tools that read and stop
//! them: `BashOutput` and `KillShell`.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use super::{Capture, ShellState, auto_allowed_git, describe_status, lock, pump, spawn_shell};
use tool_sdk_core::process::kill_group;
use tool_sdk_core::{ToolContext, ToolError, tool};

#[derive(Debug)]
pub(super) struct BackgroundShell {
    command: String,
    pgid: Option<u32>,
    /// Output not read yet by BashOutput.
    unread: Mutex<Capture>,
    status: Mutex<ShellStatus>,
}

#[derive(Clone, Debug)]
enum ShellStatus {
    Running,
    Exited(String),
    Killed,
}

impl BackgroundShell {
    /// Kills it if it still runs; says whether it did.
    pub(super) fn kill(&self) -> bool {
        let mut status = lock(&self.status);
        if matches!(*status, ShellStatus::Running) {
            kill_group(self.pgid);
            *status = ShellStatus::Killed;
            true
        } else {
            false
        }
    }
}

pub(super) async fn start_background(
    command: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let state = ctx.session::<ShellState>();
    let (dir, note) = state.start_dir(ctx);
    let script = format!("exec 2>&1\n{command}");
    let git = auto_allowed_git(&command, &dir, ctx).await;
    let (mut child, contained_note) = spawn_shell(&script, &dir, &git, ctx, &state)?;
    let id = format!("bash_{}", state.next_id.fetch_add(1, Ordering::Relaxed) + 1);
    let shell = Arc::new(BackgroundShell {
        command,
        pgid: child.id(),
        unread: Mutex::new(Capture::default()),
        status: Mutex::new(ShellStatus::Running),
    });
    lock(&state.shells).insert(id.clone(), shell.clone());
    let stdout = child.stdout.take();
    tokio::spawn(async move {
        let reading = async {
            if let Some(stdout) = stdout {
                pump(stdout, &shell.unread).await;
            }
        };
        let (status, ()) = tokio::join!(child.wait(), reading);
        let mut current = lock(&shell.status);
        if matches!(*current, ShellStatus::Running) {
            *current = match status {
                Ok(status) => ShellStatus::Exited(describe_status(&status)),
                Err(error) => ShellStatus::Exited(format!("unknown ({error})")),
            };
        }
    });
    let mut text = format!(
        "Started in the background with shell id {id}. Read its output with BashOutput \
         (bash_id: \"{id}\") and stop it with KillShell."
    );
    for note in [note, contained_note].into_iter().flatten() {
        text.push('\n');
        text.push_str(&note);
    }
    Ok(text)
}

/// Reads what a background command printed since the last read, and whether it still runs.
///
/// Takes the shell id that Bash returned for a command started with `run_in_background`.
/// Each call returns only new output (stdout and stderr together) and the status: running,
/// or exited with its exit code, or killed. With `filter`, a regular expression, only
/// matching lines are returned; the other lines of this read are discarded.
#[tool(
    name = "BashOutput",
    category = "builtin",
    read_only,
    title = "Output of {bash_id}"
)]
pub async fn bash_output(
    /// The id of the background shell, as returned by Bash.
    bash_id: String,
    /// A regular expression: only output lines matching it are returned.
    filter: Option<String>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let filter = filter
        .map(|pattern| {
            regex::Regex::new(&pattern)
                .map_err(|e| ToolError::invalid_input(format!("`filter` is not a regex: {e}")))
        })
        .transpose()?;
    let shell = ctx.session::<ShellState>().shell(&bash_id)?;
    // The status first: output read after seeing "exited" is then complete.
    let status = lock(&shell.status).clone();
    let unread = std::mem::take(&mut *lock(&shell.unread));
    let mut output = if unread.is_empty() {
        String::new()
    } else {
        unread.render()
    };
    if let Some(filter) = filter {
        output = output
            .lines()
            .filter(|line| filter.is_match(line))
            .collect::<Vec<_>>()
            .join("\n");
    }
    let status = match status {
        ShellStatus::Running => "running".to_owned(),
        ShellStatus::Exited(how) => format!("exited ({how})"),
        ShellStatus::Killed => "killed".to_owned(),
    };
    let output = if output.trim().is_empty() {
        "(no new output)".to_owned()
    } else {
        output.trim_end_matches('\n').to_owned()
    };
    Ok(format!("Shell {bash_id}: {status}\n\n{output}"))
}

/// Stops a command started with `run_in_background`, with every process it started.
///
/// Takes the shell id Bash returned. Killing a shell that already finished does nothing and
/// says so.
#[tool(
    name = "KillShell",
    category = "builtin",
    destructive,
    idempotent,
    title = "Kill {shell_id}"
)]
pub async fn kill_shell(
    /// The id of the background shell to stop.
    shell_id: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let shell = ctx.session::<ShellState>().shell(&shell_id)?;
    if shell.kill() {
        Ok(format!("Killed shell {shell_id} ({}).", shell.command))
    } else {
        let status = match lock(&shell.status).clone() {
            ShellStatus::Exited(how) => format!("it had already exited ({how})"),
            _ => "it had already been killed".to_owned(),
        };
        Ok(format!("Shell {shell_id} was not running: {status}."))
    }
}
