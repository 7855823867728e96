//! Child processes of tools that die with the call: [`ToolCommand`] and [`ToolChild`], what
//! [`ToolContext::command`](crate::ToolContext::command) returns.
//!
//! A command runs in a process group of its own. When its [`ToolChild`] is dropped before the
//! command was waited for (the tool timed out, was cancelled, or its future was dropped), the
//! whole group gets SIGKILL (`kill(-pgid)` through `rustix`'s safe wrapper), so the processes
//! the command started die too, not only the command. The Bash tool uses the same.
//!
//! Once the command has exited and been waited for, its group is left alone: processes it
//! started in the background and left running are not touched, and the group id, which may
//! then belong to nobody, is never signalled.
//!
//! **When this process dies.** Dropping runs no code when the agent's process is killed
//! (SIGKILL, the OOM killer), so on Unix each command also gets a watchdog: a tiny `/bin/sh`
//! in the command's process group, blocked reading a pipe whose only writer is this process
//! (close-on-exec, so no child holds it). However this process ends, the kernel closes the
//! pipe, the watchdog reads end-of-file and kills the group, itself included. When the
//! command is waited for, the watchdog is told to leave (a line on the pipe) and exits
//! without killing anything. `PR_SET_PDEATHSIG` would need `unsafe` between fork and exec,
//! and fires when the spawning *thread* ends, which in a Tokio pool is any time.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::process::{ExitStatus, Output, Stdio};

use tokio::process::{ChildStderr, ChildStdin, ChildStdout};

/// Sends SIGKILL to the process group `pgid` (its leader's pid), ignoring a group already gone.
pub fn kill_group(pgid: Option<u32>) {
    #[cfg(unix)]
    if let Some(pid) = pgid
        .and_then(|pid| i32::try_from(pid).ok())
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    #[cfg(not(unix))]
    let _ = pgid;
}

/// Kills a process group when dropped, unless disarmed: covers a call's future being dropped
/// by a timeout or a cancellation, where no code of the tool runs otherwise.
#[derive(Debug)]
struct GroupGuard {
    pgid: Option<u32>,
    watchdog: Option<Watchdog>,
}

impl GroupGuard {
    fn new(pgid: Option<u32>) -> Self {
        GroupGuard {
            pgid,
            watchdog: pgid.and_then(Watchdog::start),
        }
    }

    fn kill(&mut self) {
        // The watchdog is in the group: it dies with it.
        kill_group(self.pgid.take());
        self.watchdog = None;
    }

    fn disarm(&mut self) {
        self.pgid = None;
        if let Some(watchdog) = self.watchdog.take() {
            watchdog.leave();
        }
    }
}

/// Kills the process group it watches when this process dies: see the module docs.
#[derive(Debug)]
struct Watchdog {
    #[cfg(unix)]
    alive: std::io::PipeWriter,
    #[cfg(unix)]
    _process: tokio::process::Child,
}

impl Watchdog {
    #[cfg(unix)]
    fn start(pgid: u32) -> Option<Watchdog> {
        // `kill -9 -N` is the spelling dash, bash and zsh all read as "the group N".
        const SCRIPT: &str = "read -r line || kill -9 -$1";
        let (read, alive) = std::io::pipe().ok()?;
        let start = |group: u32| {
            tokio::process::Command::new("/bin/sh")
                .args(["-c", SCRIPT, "watchdog", &pgid.to_string()])
                .stdin(read.try_clone()?)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(group as i32)
                .spawn()
        };
        // In the command's group, so that the group id stays taken (never reused) while it
        // watches; in a group of its own should the command's be gone already.
        match start(pgid).or_else(|_| start(0)) {
            Ok(process) => Some(Watchdog {
                alive,
                _process: process,
            }),
            Err(error) => {
                tracing::warn!(%error, "no watchdog for a command: it may outlive this process");
                None
            }
        }
    }

    #[cfg(not(unix))]
    fn start(_pgid: u32) -> Option<Watchdog> {
        None
    }

    /// Lets the watchdog exit without killing the group (which it does on end-of-file).
    fn leave(self) {
        #[cfg(unix)]
        {
            use std::io::Write as _;
            let mut alive = self.alive;
            let _ = alive.write_all(b"\n");
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A command a tool runs, started by [`spawn`](Self::spawn), [`output`](Self::output) or
/// [`status`](Self::status): in the call's working directory, in a process group of its own
/// that is killed, every process in it, if the call stops before the command was waited for.
///
/// Made by [`ToolContext::command`](crate::ToolContext::command). The builder methods are those
/// of [`tokio::process::Command`]; for the others use [`as_std_mut`](Self::as_std_mut), but
/// start the command through `ToolCommand` and leave its process group alone, or nothing
/// kills what it leaves behind.
#[derive(Debug)]
pub struct ToolCommand {
    inner: tokio::process::Command,
}

impl ToolCommand {
    /// `program`, run in `dir`.
    pub(crate) fn new(program: impl AsRef<OsStr>, dir: &Path) -> Self {
        let mut inner = tokio::process::Command::new(program);
        // Also reaps the direct child in the background once it is killed.
        inner.current_dir(dir).kill_on_drop(true);
        #[cfg(unix)]
        inner.process_group(0);
        ToolCommand { inner }
    }

    /// Adds an argument.
    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Self {
        self.inner.arg(arg);
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.inner.args(args);
        self
    }

    /// Sets an environment variable.
    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut Self {
        self.inner.env(key, value);
        self
    }

    /// Sets environment variables.
    pub fn envs<I, K, V>(&mut self, vars: I) -> &mut Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<OsStr>,
        V: AsRef<OsStr>,
    {
        self.inner.envs(vars);
        self
    }

    /// Removes an environment variable.
    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut Self {
        self.inner.env_remove(key);
        self
    }

    /// Starts from an empty environment.
    pub fn env_clear(&mut self) -> &mut Self {
        self.inner.env_clear();
        self
    }

    /// Runs in `dir` instead of the call's working directory.
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut Self {
        self.inner.current_dir(dir);
        self
    }

    /// Sets the child's standard input.
    pub fn stdin(&mut self, cfg: impl Into<Stdio>) -> &mut Self {
        self.inner.stdin(cfg);
        self
    }

    /// Sets the child's standard output.
    pub fn stdout(&mut self, cfg: impl Into<Stdio>) -> &mut Self {
        self.inner.stdout(cfg);
        self
    }

    /// Sets the child's standard error.
    pub fn stderr(&mut self, cfg: impl Into<Stdio>) -> &mut Self {
        self.inner.stderr(cfg);
        self
    }

    /// The command as the standard library holds it, to read what was set.
    pub fn as_std(&self) -> &std::process::Command {
        self.inner.as_std()
    }

    /// The command as the standard library holds it, for options without a method here
    /// (`uid`, `arg0`, ...). Start it through this `ToolCommand`, not through what this
    /// returns, and do not change its process group.
    pub fn as_std_mut(&mut self) -> &mut std::process::Command {
        self.inner.as_std_mut()
    }

    /// Starts the command.
    pub fn spawn(&mut self) -> io::Result<ToolChild> {
        let mut child = self.inner.spawn()?;
        Ok(ToolChild {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            stderr: child.stderr.take(),
            group: GroupGuard::new(child.id()),
            child,
        })
    }

    /// Runs the command to its end and collects its output; stdout and stderr are piped, as
    /// [`tokio::process::Command::output`] pipes them.
    pub async fn output(&mut self) -> io::Result<Output> {
        self.inner.stdout(Stdio::piped()).stderr(Stdio::piped());
        self.spawn()?.wait_with_output().await
    }

    /// Runs the command to its end; its standard streams are those configured (inherited by
    /// default).
    pub async fn status(&mut self) -> io::Result<ExitStatus> {
        let mut child = self.spawn()?;
        // As tokio's `status`: no pipe the child could block on stays open.
        drop((child.stdin.take(), child.stdout.take(), child.stderr.take()));
        child.wait().await
    }
}

/// A running [`ToolCommand`]. Dropping it before the command was waited for kills the
/// command's whole process group.
#[derive(Debug)]
pub struct ToolChild {
    /// The child's standard input, when piped.
    pub stdin: Option<ChildStdin>,
    /// The child's standard output, when piped.
    pub stdout: Option<ChildStdout>,
    /// The child's standard error, when piped.
    pub stderr: Option<ChildStderr>,
    child: tokio::process::Child,
    group: GroupGuard,
}

impl ToolChild {
    /// The child's pid (also its process group id), while it has not been waited for.
    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Waits for the command to exit. Processes it left running are not touched from then on.
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.group.disarm();
        Ok(status)
    }

    /// The exit status, if the command has exited.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        let status = self.child.try_wait()?;
        if status.is_some() {
            self.group.disarm();
        }
        Ok(status)
    }

    /// Waits for the command to exit and collects the piped stdout and stderr; stdin is
    /// closed first.
    pub async fn wait_with_output(self) -> io::Result<Output> {
        let ToolChild {
            stdin,
            stdout,
            stderr,
            mut child,
            mut group,
        } = self;
        drop(stdin);
        child.stdout = stdout;
        child.stderr = stderr;
        let output = child.wait_with_output().await?;
        group.disarm();
        Ok(output)
    }

    /// Sends SIGKILL to the command's whole process group, without waiting.
    pub fn start_kill(&mut self) -> io::Result<()> {
        #[cfg(unix)]
        {
            self.group.kill();
            Ok(())
        }
        #[cfg(not(unix))]
        self.child.start_kill()
    }

    /// Kills the command's whole process group and waits for the command to exit.
    pub async fn kill(&mut self) -> io::Result<()> {
        self.start_kill()?;
        self.wait().await.map(drop)
    }
}
