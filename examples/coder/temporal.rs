//! `--temporal ADDRESS`: each prompt is a run of the agent workflow on a Temporal server
//! (crate `tool-sdk-temporal`), taken by a worker in this process, or by workers elsewhere
//! (`--no-worker`, with `coder --worker --temporal ADDRESS` on any host that shares the session
//! file). A run whose worker dies goes on in another; a permission question waits in the
//! server, holding no process, until it is answered here.

use std::collections::HashMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use console::style;
use futures::StreamExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tool_sdk::agent::AgentConfig;
use tool_sdk::permission::PermissionAnswer;
use tool_sdk::session::SqliteStore;
use tool_sdk_temporal::{
    AgentClient, AgentParts, AgentWorker, RunEvent, RunHandle, RunOptions, RunStatus,
};

use crate::demo;
use crate::input::{Line, LineReader};

/// How often the client looks for a run's new events in the session file.
const EVENTS_EVERY: Duration = Duration::from_millis(100);

/// Where the coder's Temporal runs go, from the flags.
pub struct Temporal<'a> {
    /// The server's address.
    pub address: &'a str,
    /// The task queue the coder's workers poll.
    pub task_queue: &'a str,
    /// Whether this process runs a worker.
    pub worker: bool,
}

/// `coder --worker`: only a worker, until Ctrl-C.
pub async fn worker_only(
    temporal: &Temporal<'_>,
    config: AgentConfig,
    store: SqliteStore,
) -> Result<ExitCode, String> {
    let parts = AgentParts::from_config(config, Arc::new(store));
    let worker = AgentWorker::connect(temporal.address, temporal.task_queue, parts)
        .await
        .map_err(|e| e.to_string())?;
    println!(
        "worker ready: task queue {} on {} (Ctrl-C stops it)",
        temporal.task_queue, temporal.address
    );
    let stop = worker.shutdown_handle();
    tokio::select! {
        ran = worker.run() => ran.map_err(|e| e.to_string())?,
        _ = tokio::signal::ctrl_c() => stop(),
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts a worker on a thread of its own (its future is not `Send`): returns once it is
/// connected, or with why it could not.
fn start_worker(
    temporal: &Temporal<'_>,
    config: AgentConfig,
    store: SqliteStore,
) -> Result<(), String> {
    let (address, queue) = (temporal.address.to_owned(), temporal.task_queue.to_owned());
    let (ready, connected) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(error) => return ready.send(Err(error.to_string())).unwrap_or(()),
        };
        runtime.block_on(async move {
            let parts = AgentParts::from_config(config, Arc::new(store));
            match AgentWorker::connect(&address, &queue, parts).await {
                Ok(worker) => {
                    let _ = ready.send(Ok(()));
                    if let Err(error) = worker.run().await {
                        eprintln!("{} the worker stopped: {error}", style("error:").red());
                    }
                }
                Err(error) => {
                    let _ = ready.send(Err(error.to_string()));
                }
            }
        });
    });
    connected
        .recv()
        .map_err(|_| "the worker's thread ended before it connected".to_owned())?
}

/// What the interactive or `--print` session needs.
pub struct Session<'a> {
    pub cwd: &'a Path,
    pub input: Option<&'a LineReader>,
    pub current_turn: &'a Arc<Mutex<Option<CancellationToken>>>,
    /// The session to go on with (`--resume`, `--continue`).
    pub resume: Option<String>,
    pub print: Option<&'a str>,
    pub demo: bool,
    pub scratch_note: Option<&'a str>,
    pub model_id: &'a str,
}

/// The coder on Temporal: a worker here unless `--no-worker`, then the prompts as runs.
pub async fn talk(
    temporal: &Temporal<'_>,
    config: AgentConfig,
    store: SqliteStore,
    session: Session<'_>,
) -> Result<ExitCode, String> {
    if temporal.worker {
        start_worker(temporal, config, store.clone())?;
    }
    let client = AgentClient::connect(temporal.address, temporal.task_queue, Arc::new(store))
        .await
        .map_err(|e| e.to_string())?
        .with_working_dir(session.cwd);
    let mut session_id = session.resume.clone();
    if let Some(prompt) = session.print {
        let ok = one_run(&client, &mut session_id, prompt, &session).await?;
        if let Some(id) = &session_id {
            eprintln!("session {id}");
        }
        return Ok(if ok {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let Some(input) = session.input else {
        return Err("no terminal to read from".into());
    };
    let workers = match temporal.worker {
        true => "a worker in this process",
        false => "workers elsewhere",
    };
    println!(
        "{} {} · {} · {} · {}",
        style("coder").bold(),
        style(session.model_id).cyan(),
        session.cwd.display(),
        style(format!("on Temporal at {}, {workers}", temporal.address)).magenta(),
        style("/runs lists the runs, Ctrl-C cancels one, Ctrl-D quits").dim()
    );
    if let Some(note) = session.scratch_note {
        println!("{}", style(note).yellow());
    }
    let mut next = None;
    if session.demo && session_id.is_none() {
        println!(
            "{}",
            style("No API key: a SCRIPTED DEMO plays the model; the tools are real.").yellow()
        );
        println!("> {}", demo::FIRST_PROMPT);
        next = Some(demo::FIRST_PROMPT.to_owned());
    }
    while let Some(line) = input.next_prompt(&mut next).await {
        match line.trim() {
            "" => continue,
            "/exit" | "/quit" => break,
            "/runs" => list_runs(&client).await,
            command if command.starts_with('/') => println!(
                "{}",
                style("with --temporal the coder knows /runs and /exit").dim()
            ),
            prompt => {
                one_run(&client, &mut session_id, prompt, &session).await?;
            }
        }
    }
    if let Some(id) = session_id {
        println!("{}", style(format!("session {id}")).dim());
    }
    Ok(ExitCode::SUCCESS)
}

async fn list_runs(client: &AgentClient) {
    match client.list_runs(Some(20)).await {
        Ok(runs) if runs.is_empty() => println!("no runs on this task queue yet"),
        Ok(runs) => {
            for run in runs {
                let status = match run.status {
                    RunStatus::Running => style("running".to_owned()).green(),
                    other => style(format!("{other:?}").to_lowercase()).dim(),
                };
                println!("  {} {status}", run.workflow_id);
            }
        }
        Err(error) => println!("{} {error}", style("error:").red()),
    }
}

/// Runs one prompt to its end, showing its events; `Ok(succeeded)`.
async fn one_run(
    client: &AgentClient,
    session_id: &mut Option<String>,
    prompt: &str,
    session: &Session<'_>,
) -> Result<bool, String> {
    let options = RunOptions::default();
    let started = match session_id.as_deref() {
        Some(id) => client.continue_session(id, prompt, options).await,
        None => client.start(prompt, options).await,
    };
    let run = started.map_err(|e| e.to_string())?;
    *session_id = Some(run.session_id().to_owned());
    let cancel = CancellationToken::new();
    *session.current_turn.lock().unwrap() = Some(cancel.clone());
    let mut seen = Seen::default();
    let mut events = std::pin::pin!(run.events(EVENTS_EVERY));
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            () = cancel.cancelled() => {
                if let Err(error) = run.cancel().await {
                    eprintln!("{} {error}", style("error:").red());
                }
                println!("{}", style("Cancelled.").yellow());
                break;
            }
        };
        let event = match event {
            None => break,
            Some(Ok(event)) => event,
            Some(Err(error)) => {
                eprintln!("{} {error}", style("error:").red());
                break;
            }
        };
        show(event, &run, session, &mut seen).await;
    }
    *session.current_turn.lock().unwrap() = None;
    match run.result().await {
        Ok(outcome) => {
            if session.print.is_some() {
                println!("{}", outcome.text.trim_end());
            }
            if let Some(stopped) = &outcome.stopped {
                eprintln!("{} {stopped}", style("stopped:").yellow());
            }
            Ok(outcome.stopped.is_none())
        }
        // Cancelled: said so above.
        Err(_) if cancel.is_cancelled() => Ok(false),
        Err(error) => {
            eprintln!("{} {error}", style("error:").red());
            Ok(false)
        }
    }
}

/// What a run's events showed, for the lines that follow.
#[derive(Default)]
struct Seen {
    /// Each call's tool and input, from its turn.
    calls: HashMap<String, (String, Value)>,
    /// The model's thinking since it last wrote or called.
    thought: String,
}

/// Shows one event of `run`, and asks what it asks.
async fn show(event: RunEvent, run: &RunHandle, session: &Session<'_>, seen: &mut Seen) {
    // The thinking shows as the in-process coder folds it: one note once the model writes or
    // calls.
    if let RunEvent::ThinkingDelta(text) = &event {
        seen.thought.push_str(text);
        return;
    }
    if !seen.thought.is_empty() {
        let words = seen.thought.split_whitespace().count();
        seen.thought.clear();
        if session.print.is_none() {
            let note = format!("✻ thought for {words} words");
            println!("{}", style(note).dim());
        }
    }
    let calls = &mut seen.calls;
    match event {
        // The text as it streams, as the in-process coder prints it; the deltas of a turn
        // add up to its text, which its `Turn` event then ends with a new line.
        RunEvent::TextDelta(text) if session.print.is_none() => {
            use std::io::Write;
            print!("{text}");
            let _ = std::io::stdout().flush();
        }
        RunEvent::TextRestarted if session.print.is_none() => {
            println!("{}", style(" [the model's turn started again]").dim());
        }
        RunEvent::ToolProgress { message, .. } => {
            eprintln!("  {}", style(message).dim());
        }
        RunEvent::Turn(turn) => {
            if session.print.is_none() && !turn.text().is_empty() {
                println!();
            }
            for call in turn.tool_uses() {
                let input = call.input.json_or_empty().into_owned();
                calls.insert(call.id.clone(), (call.name.clone(), input));
            }
        }
        RunEvent::ToolStarted { id, name } => {
            let shown = calls.get(&id).map(|(_, input)| summary(input));
            let line = format!("{} {name} {}", style("●").cyan(), shown.unwrap_or_default());
            eprintln!("{}", line.trim_end());
        }
        RunEvent::ToolResult {
            content, is_error, ..
        } => {
            let text = content.iter().find_map(|block| block.readable());
            let first = text.as_deref().and_then(|text| text.lines().next());
            let first = first.unwrap_or_default();
            let first = match is_error {
                true => style(first.to_owned()).red(),
                false => style(first.to_owned()).dim(),
            };
            eprintln!("  ⎿ {first}");
        }
        RunEvent::ElicitationAsked { id, question } => {
            let tool = calls.get(&id).map_or("a tool", |(name, _)| name.as_str());
            let answer = match session.input.filter(|_| session.print.is_none()) {
                Some(reader) => crate::form::ask(tool, &question, reader).await,
                // Nobody to ask in --print mode.
                None => tool_sdk::ElicitationAnswer::Cancel,
            };
            if let Err(error) = run.answer_elicitation(&id, answer).await {
                eprintln!("{} {error}", style("error:").red());
            }
        }
        RunEvent::ApprovalAsked { id, tool, title } => {
            let input = calls.get(&id).map(|(_, input)| input.clone());
            let answer = ask(session, &tool, &title, input.as_ref()).await;
            if let Err(error) = run.answer_approval(&id, answer).await {
                eprintln!("{} {error}", style("error:").red());
            }
        }
        _ => {}
    }
}

/// A call's input in one short line.
fn summary(input: &Value) -> String {
    let line = match input {
        Value::Object(fields) => fields
            .iter()
            .filter_map(|(key, value)| value.as_str().map(|text| format!("{key}={text}")))
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    };
    let mut shown: String = line.chars().take(100).collect();
    if shown.len() < line.len() {
        shown.push('…');
    }
    shown
}

/// Asks the user about a call waiting for approval; in `--print` mode it is refused.
async fn ask(
    session: &Session<'_>,
    tool: &str,
    title: &str,
    input: Option<&Value>,
) -> PermissionAnswer {
    let Some(reader) = session.input.filter(|_| session.print.is_none()) else {
        return PermissionAnswer::Deny(format!(
            "Not allowed in --print mode; the user can rerun with --allow {tool}."
        ));
    };
    println!("{} {}", style("?").yellow().bold(), style(title).bold());
    if let Some(input) = input {
        println!("{}", crate::ui::preview(tool, input, session.cwd));
    }
    loop {
        match reader
            .read("  Allow? [y]es / [n]o / [a]lways: ".to_owned())
            .await
        {
            Line::Text(answer) => match answer.trim().to_lowercase().as_str() {
                "y" | "yes" => return PermissionAnswer::Allow,
                "a" | "always" => return PermissionAnswer::AllowAlways,
                "n" | "no" => return PermissionAnswer::Deny("The user refused this call.".into()),
                _ => println!("  Please answer y, n or a."),
            },
            Line::Interrupted | Line::Eof => {
                return PermissionAnswer::Deny(
                    "No one answered the question, so the call was refused.".into(),
                );
            }
        }
    }
}
