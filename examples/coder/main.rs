//! `coder`: an interactive terminal coding agent in about 2,000 lines, on top of tool-sdk.
//!
//! ```text
//! cargo run --example coder                      # offline: a scripted demo on a copy of this dir
//! ANTHROPIC_API_KEY=... cargo run --example coder -- --cwd ~/my-project
//! OPENAI_BASE_URL=http://localhost:11434/v1 cargo run --example coder -- --model qwen3
//! GEMINI_API_KEY=... cargo run --example coder -- --provider gemini --model gemini-2.5-pro
//! cargo run --example coder -- --print "How many Rust files are there?" --allow Bash
//! cargo run --example coder -- --continue          # the latest conversation in this directory
//! cargo run --example coder -- --thinking 8000 --effort medium   # think first, shown folded
//! cargo run --example coder --features temporal -- --temporal 127.0.0.1:7233  # durable runs
//! ```
//!
//! The SDK does the work: the built-in tools, schemas and validation, the permission chain,
//! concurrency, timeouts, cancellation. This file only wires them to a terminal.

mod commands;
mod demo;
mod durable;
mod form;
mod input;
mod mcp_auth;
mod models;
mod sessions;
#[cfg(feature = "temporal")]
mod temporal;
mod ui;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clap::{Parser, ValueEnum};
use console::style;
use futures::StreamExt;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tool_sdk::RegistryError;
use tool_sdk::agent::{Agent, AgentConfig, ClaudeSettings, ProjectMemory, RunResult};
use tool_sdk::model::{Effort, Model, Thinking};
use tool_sdk::permission::{CallFacts, PermissionAnswer, Rule};
use tool_sdk::session::SqliteStore;

use input::{LineReader, QuietTerminal};
use ui::{Answer, Question, RunView};

/// A terminal coding agent built on tool-sdk. With no API key it runs a scripted demo.
#[derive(Parser, Debug)]
#[command(name = "coder", version)]
struct Args {
    /// The model id (default: claude-sonnet-4-5 for Anthropic, gpt-4.1 for OpenAI-compatible,
    /// gemini-2.5-flash for Gemini, gpt-5 for openai-responses).
    #[arg(long)]
    model: Option<String>,
    /// Which provider (default: anthropic if ANTHROPIC_API_KEY is set, openai if OPENAI_API_KEY
    /// or OPENAI_BASE_URL is, gemini if GEMINI_API_KEY or GOOGLE_API_KEY is, else the scripted
    /// demo). `openai` speaks Chat Completions (and any compatible server); `openai-responses`
    /// OpenAI's Responses API, with OPENAI_API_KEY.
    #[arg(long, value_enum)]
    provider: Option<ProviderChoice>,
    /// A model a turn goes to when the model is overloaded or down, as `provider:id` (e.g.
    /// `openai:gpt-4.1`) or an id that says its provider (`claude-haiku-4-5`); repeatable,
    /// tried in order.
    #[arg(long = "fallback-model", value_name = "MODEL")]
    fallback_models: Vec<tool_sdk::agent::ModelSpec>,
    /// The project directory the agent works in (default: the current directory).
    #[arg(long, value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// A permission rule that runs without asking, e.g. "Bash(cargo test:*)" (repeatable).
    #[arg(long, value_name = "RULE")]
    allow: Vec<String>,
    /// A permission rule that is always refused, e.g. "Bash(rm:*)" (repeatable).
    #[arg(long, value_name = "RULE")]
    deny: Vec<String>,
    /// MCP servers to use, in the `mcpServers` JSON shape of Claude Desktop and Claude Code;
    /// their tools join as `mcp__<server>__<tool>`. Built with `--features mcp-oauth`, an HTTP
    /// server that asks for OAuth gets the browser opened on its authorization URL; its tokens
    /// are kept in the data directory.
    #[arg(long, value_name = "FILE")]
    mcp_config: Option<PathBuf>,
    /// Answers one prompt without asking anything, prints the answer and exits: status 0 when
    /// the run succeeded. Calls that would ask are refused (use --allow).
    #[arg(long, short, value_name = "PROMPT")]
    print: Option<String>,
    /// Continues the most recent conversation in this directory.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    continue_latest: bool,
    /// Resumes a conversation by its id (`/sessions` shows them), or picks one from a list
    /// when no id is given.
    #[arg(long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    resume: Option<String>,
    /// Lets the model think before it answers: a budget of tokens (Claude 4.5 and earlier;
    /// 4096 when none is given) or `adaptive` (Claude 4.6 and later). Shown folded into one
    /// dim line; `/thinking` shows the last turn's in full. On Gemini, its thinking budget
    /// (adaptive: the model decides) with the thought summaries. OpenAI models ignore it.
    #[arg(long, value_name = "BUDGET|adaptive", num_args = 0..=1, default_missing_value = "4096")]
    thinking: Option<Thinking>,
    /// How eagerly the model spends tokens: low, medium, high, xhigh or max (Anthropic's
    /// effort, on Claude Opus 4.5 and 4.6 and later; OpenAI's reasoning_effort; not Gemini).
    #[arg(long, value_name = "LEVEL")]
    effort: Option<Effort>,
    /// Runs each prompt as a durable workflow on the Temporal server at ADDRESS (host:port):
    /// a run outlives the process that runs it, and a question waits in the server. Needs the
    /// `temporal` feature (`cargo run --example coder --features temporal -- --temporal ...`).
    #[arg(long, value_name = "ADDRESS")]
    temporal: Option<String>,
    /// The task queue of --temporal's runs and workers.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "coder",
        requires = "temporal"
    )]
    task_queue: String,
    /// With --temporal: run no worker here; workers elsewhere (`--worker`) take the runs.
    #[arg(long, requires = "temporal", conflicts_with = "worker")]
    no_worker: bool,
    /// With --temporal: only run a worker (in --cwd, with this coder's tools and model), until
    /// Ctrl-C.
    #[arg(long, requires = "temporal")]
    worker: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ProviderChoice {
    Anthropic,
    Openai,
    Gemini,
    OpenaiResponses,
    Demo,
}

/// How long a session stays taken by a coder that stopped renewing it (it renews every third
/// of this while it runs): a second coder on the same session is refused until then.
const LEASE: Duration = Duration::from_secs(10);

/// The tools a coding agent needs; the model sees these and nothing else.
const TOOLS: &[&str] = &[
    "Read",
    "Write",
    "Edit",
    "Glob",
    "Grep",
    "Bash",
    "BashOutput",
    "KillShell",
    "TodoWrite",
    "WebFetch",
];

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(code) => code,
        Err(message) => {
            eprintln!("{} {message}", style("error:").red().bold());
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<ExitCode, String> {
    if args
        .print
        .as_deref()
        .is_some_and(|prompt| prompt.trim().is_empty())
    {
        return Err(
            "--print needs a prompt, e.g. --print \"How many Rust files are there?\"".into(),
        );
    }
    let provider = models::provider_choice(&args);
    let demo = provider == ProviderChoice::Demo;
    if provider == ProviderChoice::Openai && args.thinking.is_some() {
        warn(
            "--thinking is ignored: Chat Completions has no thinking budget (--effort is its reasoning_effort)",
        );
    }
    if provider == ProviderChoice::Gemini && args.effort.is_some() {
        warn("--effort is ignored on Gemini: --thinking sets its thinking budget");
    }
    let (cwd, scratch_note) = working_dir(&args, demo)?;
    let model = models::choose_model(&args, provider, &cwd).map_err(|e| e.to_string())?;

    let (config, store) = agent_config(&args, model.clone(), &cwd)?;
    if let Some(address) = &args.temporal {
        let start = durable::TemporalStart {
            args: &args,
            address,
            config,
            store,
            cwd: &cwd,
            demo,
            scratch_note,
            model: &*model,
        };
        return durable::on_temporal(start).await;
    }
    let input = match &args.print {
        None => Some(LineReader::new().map_err(|e| format!("cannot read the terminal: {e}"))?),
        Some(_) => None,
    };
    let resume_id = resume_id(&args, store.as_ref(), input.as_ref(), &cwd).await?;
    let agent = match &resume_id {
        Some(id) => sessions::open(config, id, store.as_ref(), input.as_ref()).await?,
        None => Agent::create(config).await.map_err(|e| e.to_string())?,
    };
    // Made by this run: a session with nothing answered in it is not kept.
    let created = resume_id.is_none().then(|| agent.session_id().to_owned());
    if let Some(id) = &resume_id {
        for note in agent.resume_notes() {
            warn(&format!("session {id}: {note}"));
        }
    }
    for (flag, rules) in [("--allow", &args.allow), ("--deny", &args.deny)] {
        for rule in rules {
            if let Some(problem) = rule_problem(&agent, rule, &cwd) {
                warn(&format!("{flag} {rule}: {problem}"));
            }
        }
    }

    let current_turn = cancel_on_ctrl_c();

    if let Some(prompt) = &args.print {
        if let Some(note) = &scratch_note {
            eprintln!("{}", style(note).yellow());
        }
        let result = one_turn(&agent, &cwd, prompt, None, &current_turn).await;
        sessions::finish(agent, store.as_ref(), created.as_deref()).await;
        return Ok(if result.error.is_none() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }

    let Some(input) = input else {
        return Err("no terminal to read from".into());
    };
    let opening = Opening {
        model_id: model.model_id(),
        scratch_note: scratch_note.as_deref(),
        resumed: resume_id.is_some(),
        demo,
    };
    talk(&agent, store.as_ref(), &cwd, &input, &current_turn, opening).await;
    sessions::finish(agent, store.as_ref(), created.as_deref()).await;
    Ok(ExitCode::SUCCESS)
}

/// Where the running turn's token goes, if any: Ctrl-C cancels it (at the prompt rustyline
/// sees Ctrl-C as a key).
fn cancel_on_ctrl_c() -> Arc<Mutex<Option<CancellationToken>>> {
    let current_turn: Arc<Mutex<Option<CancellationToken>>> = Arc::default();
    let on_interrupt = current_turn.clone();
    tokio::spawn(async move {
        while tokio::signal::ctrl_c().await.is_ok() {
            if let Some(token) = on_interrupt.lock().unwrap().as_ref() {
                token.cancel();
            }
        }
    });
    current_turn
}

/// The directory the agent works in (`--cwd` or the current one), or for the demo in this
/// repository's checkout a scratch copy of it, with the note that says so.
fn working_dir(args: &Args, demo: bool) -> Result<(PathBuf, Option<String>), String> {
    let cwd = match &args.cwd {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("cannot read the current dir: {e}"))?,
    };
    let cwd = cwd
        .canonicalize()
        .map_err(|e| format!("--cwd {}: {e}", cwd.display()))?;
    // The README's first command runs the demo in this repository's checkout: it edits a copy,
    // so the checkout (and the next demo) finds its TODO as it was.
    if demo && args.cwd.is_none() {
        let resuming = args.continue_latest || args.resume.is_some();
        let under = sessions::data_dir()?.join("demo");
        let (copy, files) = demo::scratch_copy(&cwd, &under, !resuming)
            .map_err(|e| format!("{e} (pass --cwd DIR to run the demo on DIR itself)"))?;
        let note = format!(
            "The demo works on a scratch copy of {} ({files} files) at {}, so your checkout \
             stays as it is.",
            cwd.display(),
            copy.display()
        );
        Ok((copy, Some(note)))
    } else {
        Ok((cwd, None))
    }
}

/// The agent's configuration from the flags, with the session store when it opens.
fn agent_config(
    args: &Args,
    model: Arc<dyn Model>,
    cwd: &std::path::Path,
) -> Result<(AgentConfig, Option<SqliteStore>), String> {
    let mut config = AgentConfig::new()
        .with_model(model)
        .with_tools(TOOLS.iter().copied().chain(["mcp__*"]))
        .with_working_dir(cwd)
        .model(|mut m| {
            m = m
                .with_system_prompt(system_prompt(cwd))
                .with_fallback_models(args.fallback_models.iter().cloned());
            if let Some(thinking) = args.thinking {
                m = m.with_thinking(thinking);
            }
            if let Some(effort) = args.effort {
                m = m.with_effort(effort);
            }
            m
        })
        // The team's own files, as Claude Code reads them: AGENTS.md and CLAUDE.md up to the
        // repository root, and .claude/settings(.local).json permission rules and hooks.
        .with_project_memory()
        .with_claude_settings();
    show_project_files(cwd);
    config = config.permissions(|mut permissions| {
        for rule in &args.allow {
            permissions = permissions.allow(rule);
        }
        for rule in &args.deny {
            permissions = permissions.deny(rule);
        }
        permissions
    });
    if let Some(file) = &args.mcp_config {
        let servers = tool_sdk::mcp::McpServers::from_file(file).map_err(|e| e.to_string())?;
        // A remote server that asks for OAuth opens the browser; tokens are kept.
        config = config.mcp(|mcp| mcp.with_servers(servers).with_oauth(mcp_auth::settings()));
    }
    // Conversations are saved as they happen; without a store the coder still works.
    let store = sessions::open_store();
    match &store {
        // One coder at a time on a session: a second one is told who has it.
        Ok(store) => {
            config = config.session(|s| {
                s.with_store(store.clone())
                    .with_lease(tool_sdk::agent::SessionLeasing::Ttl(LEASE))
            });
        }
        Err(problem) => warn(&format!("this conversation will not be saved: {problem}")),
    }
    Ok((config, store.ok()))
}

/// The session to resume (`--resume [ID]`, `--continue`), if any.
async fn resume_id(
    args: &Args,
    store: Option<&SqliteStore>,
    input: Option<&LineReader>,
    cwd: &std::path::Path,
) -> Result<Option<String>, String> {
    Ok(match (&args.resume, args.continue_latest) {
        (None, false) => None,
        (resume, _) => {
            let store =
                store.ok_or("cannot resume: the session file could not be opened (see above)")?;
            Some(match (resume.as_deref(), input) {
                (Some(""), Some(input)) => sessions::pick(store, input).await?,
                (Some(""), None) => {
                    return Err(format!(
                        "--resume without an id asks which session to resume; with --print, \
                         pass the id (`{} --resume ID`)",
                        sessions::command_name()
                    ));
                }
                (Some(id), _) => id.to_owned(),
                (None, _) => sessions::latest_in(store, cwd).await?.id,
            })
        }
    })
}

/// How the interactive session opens.
struct Opening<'a> {
    model_id: &'a str,
    scratch_note: Option<&'a str>,
    resumed: bool,
    demo: bool,
}

/// The interactive session: prompts and slash commands until `/exit` or Ctrl-D.
async fn talk(
    agent: &Agent,
    store: Option<&SqliteStore>,
    cwd: &std::path::Path,
    input: &LineReader,
    current_turn: &Arc<Mutex<Option<CancellationToken>>>,
    opening: Opening<'_>,
) {
    println!(
        "{} {} · {} · {}",
        style("coder").bold(),
        style(opening.model_id).cyan(),
        cwd.display(),
        style("/help for commands, Ctrl-C cancels a turn, Ctrl-D quits").dim()
    );
    let mut next = None;
    if let Some(note) = opening.scratch_note {
        println!("{}", style(note).yellow());
    }
    if opening.resumed {
        commands::recap(agent).await;
    } else if opening.demo {
        println!(
            "{}",
            style(
                "No ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY: this is a SCRIPTED DEMO. A scripted model \
                 plays the turns; the tools are real and work on the directory above."
            )
            .yellow()
        );
        println!("> {}", demo::FIRST_PROMPT);
        next = Some(demo::FIRST_PROMPT.to_owned());
    }
    while let Some(line) = input.next_prompt(&mut next).await {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(command) = line.strip_prefix('/') {
            if !commands::slash_command(agent, store, command).await {
                break;
            }
            continue;
        }
        one_turn(agent, cwd, line, Some(input), current_turn).await;
    }
}

/// Runs one user turn to the end, showing it; `input` is where permission answers come from
/// (none in --print mode: calls that ask are refused).
async fn one_turn(
    agent: &Agent,
    cwd: &std::path::Path,
    prompt: &str,
    input: Option<&LineReader>,
    current_turn: &Mutex<Option<CancellationToken>>,
) -> RunResult {
    let _quiet = QuietTerminal::new();
    let mut run = agent.run(prompt);
    *current_turn.lock().unwrap() = Some(run.cancellation_token());
    // In --print mode stdout gets the answer and nothing else.
    let mut view = RunView::new(input.is_none(), cwd);
    let mut result = RunResult::default();
    while let Some(event) = run.next().await {
        if let tool_sdk::agent::AgentEvent::Finished(finished) = event {
            result = *finished;
            break;
        }
        let request = match view.show(event) {
            Some(Question::Permission(request)) => request,
            Some(Question::Elicitation(request)) => {
                // A tool asks the user: answered at the prompt, cancelled in --print mode.
                match input {
                    Some(input) => {
                        let answer = view.ask_form(&request, input).await;
                        request.answer(answer);
                    }
                    None => request.cancel(),
                }
                continue;
            }
            None => continue,
        };
        match input {
            None => {
                let rule = shell_quote(&request.question.suggested_rule.to_string());
                request.deny(format!(
                    "Not allowed in --print mode; the user can rerun with --allow {rule}."
                ));
            }
            Some(input) => match view.ask(&request.question, input).await {
                Answer::Given(answer) => request.answer(answer),
                Answer::CancelTurn => {
                    view.cancelled_at_question(&request.id);
                    // Cancelled before the refusal is sent: the run cannot take the refusal
                    // and go on to another model turn before it sees the cancellation.
                    run.cancel();
                    request.answer(PermissionAnswer::Deny(
                        "The user cancelled the turn at this call's permission question; the \
                         call did not run."
                            .into(),
                    ));
                }
            },
        }
    }
    *current_turn.lock().unwrap() = None;
    view.finish(&result);
    view.out(style(commands::session_cost_line(agent)).dim().to_string());
    result
}

/// Why a `--allow`/`--deny` rule can never apply: it names no tool the model has.
fn rule_problem(agent: &Agent, rule: &str, cwd: &std::path::Path) -> Option<String> {
    let name = rule.split('(').next().unwrap_or_default().trim();
    // The tool part alone: `Read` also covers Glob and Grep, `mcp__*` any MCP tool.
    let tools_rule = Rule::parse(name).ok()?;
    let registry = agent.registry();
    let covers_one = agent.tool_names().iter().any(|tool_name| {
        registry.get(tool_name).is_some_and(|tool| {
            let facts = CallFacts::for_tool(tool.as_ref(), &json!({}), cwd);
            tools_rule.matches(&facts, &json!({}), cwd)
        })
    });
    if covers_one {
        return None;
    }
    let suggestions = match registry.get_tools(Some(&[name])) {
        Err(RegistryError::UnknownTool { suggestions, .. }) => suggestions,
        _ => Vec::new(),
    };
    Some(match suggestions.first() {
        Some(near) => format!("no tool the model has is called `{name}`; did you mean `{near}`?"),
        None => format!(
            "it matches none of the model's tools ({})",
            agent.tool_names().join(", ")
        ),
    })
}

/// Says which project files the agent reads (on stderr, so --print output stays clean);
/// a file that cannot be read is reported by `Agent::create`.
fn show_project_files(cwd: &std::path::Path) {
    let shown = |path: &std::path::Path| {
        let base = cwd.canonicalize().unwrap_or_else(|_| cwd.to_owned());
        match path.strip_prefix(&base) {
            Ok(relative) => relative.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    };
    if let Ok(memory) = ProjectMemory::load(cwd)
        && !memory.files.is_empty()
    {
        let files: Vec<String> = memory.files.iter().map(|f| shown(&f.path)).collect();
        eprintln!("{} {}", style("instructions:").dim(), files.join(", "));
    }
    if let Ok(settings) = ClaudeSettings::load(cwd) {
        if !settings.files.is_empty() {
            let files: Vec<String> = settings.files.iter().map(|f| shown(f)).collect();
            let rules = &settings.permissions;
            eprintln!(
                "{} {} ({} allow, {} ask, {} deny)",
                style("rules:").dim(),
                files.join(", "),
                rules.allow.len(),
                rules.ask.len(),
                rules.deny.len()
            );
        }
        for warning in &settings.warnings {
            warn(warning);
        }
    }
}

fn warn(message: &str) {
    eprintln!("{} {message}", style("warning:").yellow().bold());
}

/// `text` as one shell word, for a command line the user can paste.
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@,+".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

fn system_prompt(cwd: &std::path::Path) -> String {
    format!(
        "You are a coding agent working in {}. Use the tools to read, search and change the \
         project; read a file before editing it; keep changes small and explain them briefly. \
         Prefer Grep and Glob over shell commands for searching.",
        cwd.display()
    )
}
