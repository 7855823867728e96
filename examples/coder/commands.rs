//! The coder's slash commands (`/tools`, `/mode`, `/cost`...) and what a resumed
//! conversation shows first.

use console::style;
use serde_json::json;
use tool_sdk::agent::Agent;
use tool_sdk::model::{MessageContent, Role};
use tool_sdk::permission::{PermissionMode, PermissionPreview};
use tool_sdk::session::SqliteStore;

use crate::sessions;

/// The conversation's running cost, in one short line.
pub fn session_cost_line(agent: &Agent) -> String {
    let tokens = agent.total_usage().total_tokens();
    match agent.total_cost_usd() {
        Some(usd) => format!("   session so far: ${usd:.4} ({tokens} tokens)"),
        None => format!(
            "   session so far: {tokens} tokens (cost unknown for model {})",
            agent.model_id()
        ),
    }
}

/// `/cost`: the conversation's tokens by kind, and what they cost.
fn show_cost(agent: &Agent) {
    let usage = agent.total_usage();
    let price = agent.model_info().map(|info| info.price);
    let line = |name: &str, tokens: u64, per_million: Option<f64>| {
        let usd = per_million
            .map(|p| format!("${:.4}", tokens as f64 * p / 1e6))
            .unwrap_or_default();
        println!("  {name:<12} {tokens:>10} tokens  {usd}");
    };
    line("input", usage.input_tokens, price.map(|p| p.input));
    line("output", usage.output_tokens, price.map(|p| p.output));
    line(
        "cache read",
        usage.cache_read_input_tokens,
        price.map(|p| p.cache_read),
    );
    line(
        "cache write",
        usage.cache_creation_input_tokens,
        price.map(|p| p.cache_write),
    );
    match agent.total_cost_usd() {
        Some(usd) => println!(
            "  {:<12} {:>10} tokens  ${usd:.4}",
            "total",
            usage.total_tokens()
        ),
        None => println!(
            "  {:<12} {:>10} tokens  cost unknown for model {}",
            "total",
            usage.total_tokens(),
            agent.model_id()
        ),
    }
}

/// `/thinking`: the thinking of every model turn since the last prompt, in full.
async fn show_thinking(agent: &Agent) {
    let messages = agent.messages().await;
    // The last prompt is the last user message that is not tool results.
    let prompt = messages.iter().rposition(|message| {
        message.role == Role::User
            && !message
                .content
                .iter()
                .any(|block| matches!(block, MessageContent::ToolResult { .. }))
    });
    let mut shown = false;
    let since = prompt.map_or(0, |at| at + 1);
    for message in messages.iter().skip(since) {
        for block in &message.content {
            match block {
                MessageContent::Thinking { thinking, .. } => println!("{}\n", thinking.trim()),
                MessageContent::RedactedThinking { .. } => {
                    println!("{}\n", style("[thinking the provider redacted]").dim());
                }
                _ => continue,
            }
            shown = true;
        }
    }
    if !shown {
        println!("  no thinking in the last turn (ask for it with --thinking)");
    }
}

/// What a resumed conversation was about: its id, its first prompt and its last answer.
pub async fn recap(agent: &Agent) {
    let messages = agent.messages().await;
    let first = messages.first().map(|m| m.text()).unwrap_or_default();
    println!(
        "{} {} · {} messages · {}",
        style("resumed").green(),
        style(agent.session_id()).cyan(),
        messages.len(),
        first.lines().next().unwrap_or_default()
    );
    let last_answer = messages
        .iter()
        .rev()
        .find(|m| m.role == tool_sdk::model::Role::Assistant && !m.text().trim().is_empty());
    if let Some(answer) = last_answer {
        println!("{}", style(answer.text().trim()).dim());
    }
    if let Some(last) = messages
        .last()
        .filter(|m| m.role == tool_sdk::model::Role::User)
    {
        println!(
            "{}",
            style("The last turn was cut off before the model answered; your next message goes on from there.")
                .yellow()
        );
        let calls = messages
            .iter()
            .rev()
            .find(|m| m.role == tool_sdk::model::Role::Assistant);
        for line in sessions::interrupted_calls(last, calls) {
            println!("{}", style(line).yellow());
        }
    }
}

/// `/tools`, `/mcp`, `/mode`, `/cost`, `/thinking`, `/sessions`, `/rewind`, `/help`; false
/// for `/exit`.
pub async fn slash_command(agent: &Agent, store: Option<&SqliteStore>, command: &str) -> bool {
    let mut words = command.split_whitespace();
    match words.next().unwrap_or_default() {
        "exit" | "quit" => return false,
        "tools" => {
            for name in agent.tool_names() {
                println!(
                    "  {name:<12} {}",
                    style(tool_permission(agent, &name)).dim()
                );
            }
        }
        "mcp" => {
            let servers = agent.mcp_servers().await;
            if servers.is_empty() {
                println!("  no MCP servers (add some with --mcp-config FILE)");
            }
            for server in servers {
                let prefix = format!("mcp__{}__", tool_sdk::mcp::sanitize(&server));
                let tools = agent.tool_names();
                let count = tools.iter().filter(|t| t.starts_with(&prefix)).count();
                println!("  {server:<12} {}", style(format!("{count} tools")).dim());
            }
        }
        "cost" => show_cost(agent),
        "thinking" => show_thinking(agent).await,
        "rewind" => sessions::rewind(agent, &words.collect::<Vec<_>>()).await,
        "sessions" => match store {
            Some(store) => sessions::show(store, agent.session_id()).await,
            None => println!("  conversations are not being saved (see the warning at start)"),
        },
        "mode" => {
            let mode = match words.next() {
                Some("bypass") => Some(PermissionMode::BypassPermissions),
                None => None,
                Some(name) => match name.parse() {
                    Ok(mode) => Some(mode),
                    Err(error) => {
                        println!("  {error} (or bypass, for short)");
                        return true;
                    }
                },
            };
            if let Some(mode) = mode {
                agent.set_permission_mode(mode);
            }
            println!("  mode: {:?}", agent.permission_mode());
        }
        "help" => println!("{HELP}"),
        other => println!(
            "  unknown command /{other}; the commands are:\n{HELP}",
            other = other.trim()
        ),
    }
    true
}

/// What the permission chain does with a call of the tool now (rules, mode and all): for
/// Bash, what it does with a read-only command and with one that changes things.
fn tool_permission(agent: &Agent, name: &str) -> String {
    let says = |preview| match preview {
        Some(PermissionPreview::Runs) => "runs without asking",
        Some(PermissionPreview::Asks) => "asks",
        Some(PermissionPreview::Refused) | None => "refused",
    };
    if name == "Bash" {
        let read_only = agent.permission_preview(name, &json!({ "command": "ls" }));
        let changes = agent.permission_preview(name, &json!({ "command": "touch file" }));
        if read_only != changes {
            return format!(
                "{} (read-only commands: {})",
                says(changes),
                says(read_only)
            );
        }
        return says(changes).to_owned();
    }
    says(agent.permission_preview(name, &json!({}))).to_owned()
}

const HELP: &str = "  /tools            the tools the model can use, and which ask first\n  \
             /mcp              the MCP servers and how many tools each gives\n  \
             /mode plan|default|acceptEdits|bypass\n  \
             /cost             tokens and USD of this conversation\n  \
             /thinking         the model's thinking in the last turn, in full\n  \
             /sessions         saved conversations (resume with --resume ID)\n  \
             /rewind [N]       put the files back as they were before prompt N\n  \
             /help             this list\n  \
             /exit             quit (or Ctrl-D)";
