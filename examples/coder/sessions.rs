//! Where the coder keeps its conversations: one SQLite file in the user's data directory
//! (`$XDG_DATA_HOME/tool-sdk-coder/sessions.db` on Linux, `~/Library/Application
//! Support/tool-sdk-coder/` on macOS), never in the project checkout. `--continue` and
//! `--resume` read it, `/sessions` lists it, `/rewind` puts files back from its checkpoints.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use console::style;
use tool_sdk::ContentBlock;
use tool_sdk::agent::{Agent, AgentConfig, AgentError};
use tool_sdk::model::{Message, MessageContent, Role};
use tool_sdk::session::{
    NEVER_STARTED_MESSAGE, Record, STOPPED_MESSAGE, SessionError, SessionInfo, SessionLease,
    SessionStore, SqliteStore, stored_conversation,
};

use crate::input::{Line, LineReader};

/// How many sessions `/sessions` and the picker show.
const SHOWN: usize = 20;

/// The coder's directory in the user's data directory (not created here).
pub fn data_dir() -> Result<PathBuf, String> {
    dirs::data_dir()
        .map(|dir| dir.join("tool-sdk-coder"))
        .ok_or_else(|| {
            "no data directory is known for this user (set XDG_DATA_HOME or HOME)".into()
        })
}

/// The coder's session file, its directory created if need be.
pub fn open_store() -> Result<SqliteStore, String> {
    let dir = data_dir()?;
    private_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    SqliteStore::open(dir.join("sessions.db")).map_err(|e| e.to_string())
}

/// Creates `dir` (and its missing parents) readable by this user only, whatever the umask,
/// or makes it so if it exists: the conversations in it hold prompts, file contents and
/// command output.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        // The umask may have taken bits off a new one; an old one may be open to others.
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

/// How the user starts this program again: `cargo run --example coder --` when it runs from
/// cargo's target directory (the README's way), else the name it was started by.
pub fn command_name() -> String {
    let exe = std::env::current_exe().ok();
    let from_cargo = exe.as_deref().is_some_and(|exe| {
        exe.parent()
            .is_some_and(|dir| dir.ends_with("examples") && dir.parent().is_some())
            && exe.ancestors().any(|dir| dir.ends_with("target"))
    });
    if from_cargo {
        return "cargo run --example coder --".into();
    }
    std::env::args()
        .next()
        .map(|arg0| {
            Path::new(&arg0)
                .file_name()
                .map_or(arg0.clone(), |name| name.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "coder".into())
}

/// Resumes the session `id`. When another coder has it, says who, and offers (at a terminal)
/// to fork it: a new session with the same history, going on on its own.
pub async fn open(
    config: AgentConfig,
    id: &str,
    store: Option<&SqliteStore>,
    input: Option<&LineReader>,
) -> Result<Agent, String> {
    let holder = match Agent::resume(config.clone(), id).await {
        Ok(agent) => return Ok(agent),
        Err(AgentError::Session(SessionError::UnknownSession { id })) => {
            return Err(format!(
                "no session `{id}` is saved here: `/sessions` lists them, and `{} --resume` \
                 without an id picks one",
                command_name()
            ));
        }
        Err(AgentError::Session(SessionError::Busy { holder, .. })) => holder,
        Err(error) => return Err(error.to_string()),
    };
    let busy = format!(
        "session {id} is in use by {holder} (another coder, or one that stopped less than {} s \
         ago)",
        crate::LEASE.as_secs()
    );
    let (Some(input), Some(store)) = (input, store) else {
        return Err(busy);
    };
    println!("{} {busy}", style("busy:").yellow().bold());
    loop {
        let answer = match input
            .read("  Fork it into a new session with the same history? [y/n] ".into())
            .await
        {
            Line::Text(text) => text.trim().to_lowercase(),
            Line::Interrupted | Line::Eof => String::new(),
        };
        match answer.as_str() {
            "y" | "yes" => break,
            "n" | "no" | "" => return Err(format!("{busy}; not forked")),
            _ => println!("  Please answer y or n."),
        }
    }
    let at = stored_conversation(store, id)
        .await
        .map_err(|e| e.to_string())?
        .len();
    let fork = Agent::fork(config, id, at)
        .await
        .map_err(|e| format!("cannot fork session {id}: {e}"))?;
    println!(
        "  {} {} {}",
        style("forked into").green(),
        style(fork.session_id()).cyan(),
        style(format!("(from {id}; each goes on on its own)")).dim()
    );
    Ok(fork)
}

/// Drops the agent and waits (briefly) for its lease to be released, so that a `--continue`
/// right after this program ends finds the session free; then deletes `created`, the session
/// this run started, if nothing was answered in it (its first request never reached the
/// provider, or nothing was asked).
pub async fn finish(agent: Agent, store: Option<&SqliteStore>, created: Option<&str>) {
    let id = agent.session_id().to_owned();
    drop(agent);
    let Some(store) = store else {
        return;
    };
    // The lease is released by a task of the agent's; taking it proves that happened.
    let deadline = Instant::now() + Duration::from_secs(2);
    let holder = SessionLease::this_process();
    loop {
        match store.acquire(&id, &holder, Duration::from_secs(5)).await {
            Ok(lease) => {
                let _ = store.release(&lease).await;
                break;
            }
            Err(SessionError::Busy { .. }) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(_) => break,
        }
    }
    let Some(created) = created else {
        return;
    };
    let answered = store.load(created).await.map_or(true, |records| {
        records
            .iter()
            .any(|record| matches!(record, Record::ModelTurn { .. }))
    });
    if !answered && let Err(error) = store.delete(created).await {
        eprintln!(
            "{} could not delete the empty session {created}: {error}",
            style("warning:").yellow().bold()
        );
    }
}

/// For a resumed conversation whose last message, `last`, answers calls the process was
/// stopped in: one line per call, saying which was interrupted (and may have partly happened)
/// or did not run. `calls` is the model's message that made them.
pub fn interrupted_calls(last: &Message, calls: Option<&Message>) -> Vec<String> {
    let call = |id: &str| {
        calls?.content.iter().find_map(|block| match block {
            MessageContent::ToolUse(call) if call.id == id => Some(call),
            _ => None,
        })
    };
    last.content
        .iter()
        .filter_map(|block| {
            let MessageContent::ToolResult {
                tool_use_id,
                content,
                ..
            } = block
            else {
                return None;
            };
            let text: String = content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect();
            let what = if text.contains(STOPPED_MESSAGE) {
                "was interrupted and may have partly happened"
            } else if text.contains(NEVER_STARTED_MESSAGE) {
                "did not run: the program stopped before it started"
            } else {
                return None;
            };
            let label = match call(tool_use_id) {
                Some(call) => {
                    let input = call.input.json_or_empty();
                    let subject = ["command", "file_path", "path", "pattern", "url"]
                        .iter()
                        .find_map(|field| input[*field].as_str());
                    match subject {
                        Some(subject) => format!("`{subject}` ({})", call.name),
                        None => call.name.clone(),
                    }
                }
                None => "a tool call".to_owned(),
            };
            Some(format!("{label} {what}."))
        })
        .collect()
}

/// The session `--continue` picks: the most recently updated one in `cwd`.
pub async fn latest_in(store: &SqliteStore, cwd: &Path) -> Result<SessionInfo, String> {
    let sessions = store.list().await.map_err(|e| e.to_string())?;
    sessions
        .into_iter()
        .find(|s| s.working_dir == cwd && !s.title.is_empty())
        .ok_or_else(|| {
            format!(
                "no earlier session in {}: start one without --continue",
                cwd.display()
            )
        })
}

/// `--resume` without an id: the sessions newest first, one picked by its number.
pub async fn pick(store: &SqliteStore, input: &LineReader) -> Result<String, String> {
    let sessions = store.list().await.map_err(|e| e.to_string())?;
    let sessions: Vec<SessionInfo> = sessions
        .into_iter()
        .filter(|s| !s.title.is_empty())
        .take(SHOWN)
        .collect();
    if sessions.is_empty() {
        return Err("there are no sessions to resume yet".into());
    }
    print_list(&sessions, None);
    loop {
        let answer = match input
            .read("resume which? (number, Enter to quit) ".into())
            .await
        {
            Line::Text(text) => text,
            Line::Interrupted | Line::Eof => return Err("no session chosen".into()),
        };
        let answer = answer.trim();
        if answer.is_empty() {
            return Err("no session chosen".into());
        }
        match answer.parse::<usize>() {
            Ok(n) if (1..=sessions.len()).contains(&n) => return Ok(sessions[n - 1].id.clone()),
            _ => println!("  type a number from 1 to {}", sessions.len()),
        }
    }
}

/// `/sessions`: the most recent sessions, the current one marked.
pub async fn show(store: &SqliteStore, current: &str) {
    match store.list().await {
        Ok(sessions) => {
            let sessions: Vec<SessionInfo> = sessions
                .into_iter()
                .filter(|s| !s.title.is_empty() || s.id == current)
                .take(SHOWN)
                .collect();
            print_list(&sessions, Some(current));
            println!(
                "  {}",
                style(format!(
                    "resume one with: {} --resume <id>  (or --continue for the latest here)",
                    command_name()
                ))
                .dim()
            );
        }
        Err(error) => println!("  cannot read the sessions: {error}"),
    }
}

fn print_list(sessions: &[SessionInfo], current: Option<&str>) {
    for (n, session) in sessions.iter().enumerate() {
        let marker = if current == Some(session.id.as_str()) {
            "*"
        } else {
            " "
        };
        let title = if session.title.is_empty() {
            "(no prompt yet)"
        } else {
            &session.title
        };
        println!(
            " {marker}{:>2}. {}  {}  {}  {}",
            n + 1,
            style(&session.id).cyan(),
            style(ago(session.updated_at)).dim(),
            title,
            style(short_dir(&session.working_dir)).dim(),
        );
    }
}

/// "3 min ago", "2 h ago", "5 d ago".
fn ago(at: SystemTime) -> String {
    let secs = SystemTime::now()
        .duration_since(at)
        .map_or(0, |elapsed| elapsed.as_secs());
    match secs {
        0..60 => "just now".into(),
        60..3600 => format!("{} min ago", secs / 60),
        3600..86_400 => format!("{} h ago", secs / 3600),
        _ => format!("{} d ago", secs / 86_400),
    }
}

/// The directory with the home directory as `~`.
fn short_dir(dir: &Path) -> String {
    match dirs::home_dir().and_then(|home| dir.strip_prefix(home).ok().map(PathBuf::from)) {
        Some(rest) => format!("~/{}", rest.display()),
        None => dir.display().to_string(),
    }
}

/// `/rewind [N [force]]`: without N, the prompts of this conversation; with N, the files the
/// agent changed since prompt N put back as they were before it.
pub async fn rewind(agent: &Agent, args: &[&str]) {
    let messages = agent.messages().await;
    // A prompt is a user message with text (tool results alone are not).
    let prompts: Vec<(usize, String)> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User && !m.text().trim().is_empty())
        .map(|(index, m)| {
            (
                index,
                m.text().lines().next().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let Some(n) = args.first() else {
        if prompts.is_empty() {
            println!("  no prompts yet");
        }
        for (n, (_, text)) in prompts.iter().enumerate() {
            println!("  {:>2}. {text}", n + 1);
        }
        println!(
            "  {}",
            style("/rewind N puts the files back as they were before prompt N (the conversation stays)").dim()
        );
        return;
    };
    let Some((index, _)) = n
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|n| prompts.get(n))
    else {
        println!("  there is no prompt {n}: /rewind lists them");
        return;
    };
    let force = args.get(1) == Some(&"force");
    let report = if force {
        agent.rewind_files_forced(*index).await
    } else {
        agent.rewind_files(*index).await
    };
    match report {
        Ok(report) => {
            let show = |label: &str, paths: &[PathBuf]| {
                for path in paths {
                    println!("  {label} {}", path.display());
                }
            };
            show("restored", &report.restored);
            show("removed ", &report.removed);
            show("changed since, kept:", &report.changed_outside);
            for (path, why) in &report.failed {
                println!("  {} {}: {why}", style("failed").red(), path.display());
            }
            if report.restored.is_empty() && report.removed.is_empty() {
                println!("  no file to put back");
            }
            if !report.changed_outside.is_empty() {
                println!(
                    "  {}",
                    style(format!(
                        "/rewind {n} force overwrites the files changed since"
                    ))
                    .dim()
                );
            }
        }
        Err(error) => println!("  {} {error}", style("cannot rewind:").red()),
    }
}
