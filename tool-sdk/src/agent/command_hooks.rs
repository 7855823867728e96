//! Claude Code's command hooks (`hooks` in `.claude/settings.json`), as a [`Hook`].
//!
//! Each event's matcher groups are read in file order; a group whose matcher fits runs its
//! commands one after another with `sh -c`, in the project directory (also in
//! `$CLAUDE_PROJECT_DIR`), the event as JSON on stdin. Exit code 0: stdout may hold a JSON
//! decision; 2: the event is blocked where it can be, with stderr as the reason; anything
//! else (or a timeout, 60 s unless the hook says `timeout`) is logged and ignored.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::io::AsyncWriteExt;

use super::context::{CompactDecision, CompactRequest};
use super::hooks::{
    Hook, Notification, PromptCheck, SessionEnd, SessionEndReason, SessionSource, SessionStart,
    StopCheck, StopContext, SubagentStart, ToolCall, ToolFailure, ToolResult,
};
use crate::permission::{HookDecision, PermissionAnswer, PermissionQuestion};
use crate::{AgentId, BoxFuture, ToolContext};

/// The events whose hooks are read; others in the file are left out with a warning.
const EVENTS: [&str; 12] = [
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PermissionRequest",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
];

/// A command hook's timeout when it names none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The command hooks of Claude Code's settings files, run through the [`Hook`] trait: what
/// [`ClaudeSettings`](super::ClaudeSettings) reads from `hooks` and
/// [`AgentConfig::with_claude_settings`](super::AgentConfig::with_claude_settings) adds after
/// the hooks set in code. Every event of [`Hook`] is read, with Claude Code's names,
/// matchers, input and decisions:
///
/// | event | matched against | a hook can |
/// |---|---|---|
/// | `PreToolUse` | tool name | allow, deny, rewrite the input (`hookSpecificOutput.permissionDecision`, `updatedInput`; exit 2 denies) |
/// | `PermissionRequest` | tool name | answer (`hookSpecificOutput.decision.behavior` `allow` or `deny`; exit 2 denies) |
/// | `UserPromptSubmit` | | block (`decision: "block"`, exit 2), add context (`additionalContext`, plain stdout) |
/// | `Stop`, `SubagentStop` | | send the run on (`decision: "block"` with a `reason`, exit 2) |
/// | `PreCompact` | `manual` or `auto` | veto (`decision: "block"`, exit 2) |
/// | `PostToolUse`, `PostToolUseFailure` | tool name | observe |
/// | `Notification`, `SubagentStart`, `SessionStart`, `SessionEnd` | type, kind, source, reason | observe |
///
/// A matcher is a regular expression over the whole name (`Edit|Write`, `mcp__github__.*`);
/// empty or `*` matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandHooks {
    groups: Vec<Group>,
    dir: PathBuf,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Group {
    event: String,
    matcher: Option<String>,
    commands: Vec<(String, Duration)>,
}

impl CommandHooks {
    /// Whether no hook was read.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Reads a settings file's `hooks` object; warnings for what is left out.
    pub(crate) fn read(&mut self, hooks: &Value, warnings: &mut Vec<String>) -> Result<(), String> {
        let hooks = hooks.as_object().ok_or("`hooks` must be an object")?;
        for (event, groups) in hooks {
            if !EVENTS.contains(&event.as_str()) {
                warnings.push(format!("`hooks.{event}` is not supported; ignored"));
                continue;
            }
            let groups = groups
                .as_array()
                .ok_or_else(|| format!("`hooks.{event}` must be a list"))?;
            for group in groups {
                self.groups.push(read_group(event, group, warnings)?);
            }
        }
        Ok(())
    }

    /// The directory the commands run in.
    pub(crate) fn in_dir(mut self, dir: &Path) -> Self {
        self.dir = dir.to_owned();
        self
    }

    /// Runs the commands of `event` whose matcher fits `subject`, in order, until one
    /// decides: `decide` reads its outcome.
    async fn run<T>(
        &self,
        event: &str,
        subject: Option<&str>,
        mut input: Map<String, Value>,
        mut decide: impl FnMut(Outcome) -> Option<T>,
    ) -> Option<T> {
        input.insert("hook_event_name".into(), event.into());
        input.insert("cwd".into(), self.dir.display().to_string().into());
        let input = Value::Object(input).to_string();
        for group in self.groups.iter().filter(|g| g.event == event) {
            if !matches(group.matcher.as_deref(), subject) {
                continue;
            }
            for (command, timeout) in &group.commands {
                let Some(outcome) = self.run_one(command, *timeout, &input).await else {
                    continue;
                };
                if let Some(decision) = decide(outcome) {
                    return Some(decision);
                }
            }
        }
        None
    }

    /// One command: `None` when it failed to run, timed out or exited with another code
    /// than 0 or 2 (logged: a broken hook does not stop the agent, as in Claude Code).
    async fn run_one(&self, command: &str, timeout: Duration, input: &str) -> Option<Outcome> {
        // A command of its own process group, killed whole if it outlives its timeout.
        let mut cmd = ToolContext::new(self.dir.clone()).command("/bin/sh");
        cmd.args(["-c", command])
            .env("CLAUDE_PROJECT_DIR", &self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let run = async {
            let mut child = cmd.spawn()?;
            let stdin = child.stdin.take();
            // Written while the output is read: a hook that answers before reading all of a
            // large input must not wait on a full pipe while this waits on its input.
            let write = async move {
                if let Some(mut stdin) = stdin {
                    // A hook that does not read its input closes the pipe: not an error.
                    let _ = stdin.write_all(input.as_bytes()).await;
                }
            };
            tokio::join!(write, child.wait_with_output()).1
        };
        let output = match tokio::time::timeout(timeout, run).await {
            Ok(Ok(output)) => output,
            Ok(Err(error)) => {
                tracing::warn!(%command, %error, "a command hook could not run");
                return None;
            }
            Err(_) => {
                tracing::warn!(%command, ?timeout, "a command hook timed out");
                return None;
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout).trim().to_owned();
        let stderr = String::from_utf8_lossy(&output.stderr).trim().to_owned();
        match output.status.code() {
            Some(0) => Some(Outcome::Done {
                json: stdout
                    .starts_with('{')
                    .then(|| serde_json::from_str(&stdout).ok())
                    .flatten(),
                stdout,
            }),
            Some(2) => Some(Outcome::Block(stderr)),
            status => {
                tracing::warn!(%command, ?status, %stderr, "a command hook failed; ignored");
                None
            }
        }
    }

    /// Runs an event nobody decides on.
    async fn observe(&self, event: &str, subject: Option<&str>, input: Map<String, Value>) {
        self.run(event, subject, input, |_| None::<()>).await;
    }
}

/// What a command said: exit 0 with its stdout (and that as JSON, when it is), or exit 2
/// with its stderr.
enum Outcome {
    Done { stdout: String, json: Option<Value> },
    Block(String),
}

impl Outcome {
    /// `decision: "block"` (and its `reason`), or exit 2 (and stderr).
    fn blocked(&self) -> Option<String> {
        match self {
            Outcome::Block(reason) => Some(reason.clone()),
            Outcome::Done {
                json: Some(json), ..
            } if json["decision"] == "block" => {
                Some(json["reason"].as_str().unwrap_or_default().to_owned())
            }
            Outcome::Done { .. } => None,
        }
    }

    /// `hookSpecificOutput`'s field `key`.
    fn specific(&self, key: &str) -> Option<&Value> {
        match self {
            Outcome::Done {
                json: Some(json), ..
            } => json.get("hookSpecificOutput")?.get(key),
            _ => None,
        }
    }
}

fn read_group(event: &str, group: &Value, warnings: &mut Vec<String>) -> Result<Group, String> {
    let at = format!("`hooks.{event}`");
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(m)) if m.is_empty() || m == "*" => None,
        Some(Value::String(m)) => {
            regex::Regex::new(&format!("^(?:{m})$"))
                .map_err(|e| format!("{at}: matcher `{m}` is not a regular expression: {e}"))?;
            Some(m.clone())
        }
        Some(_) => return Err(format!("{at}: `matcher` must be a string")),
    };
    let hooks = group
        .get("hooks")
        .and_then(Value::as_array)
        .ok_or_else(|| format!("{at}: each entry needs a `hooks` list"))?;
    let mut commands = Vec::new();
    for hook in hooks {
        match hook.get("type").and_then(Value::as_str) {
            Some("command") => {}
            other => {
                warnings.push(format!(
                    "{at}: hooks of type {} are not supported (only `command`); ignored",
                    other.unwrap_or("(none)")
                ));
                continue;
            }
        }
        let command = hook
            .get("command")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{at}: a command hook needs a `command` string"))?;
        let timeout = match hook.get("timeout") {
            None => DEFAULT_TIMEOUT,
            Some(secs) => secs
                .as_f64()
                .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
                .ok_or_else(|| format!("{at}: `timeout` must be a number of seconds"))?,
        };
        commands.push((command.to_owned(), timeout));
    }
    Ok(Group {
        event: event.to_owned(),
        matcher,
        commands,
    })
}

fn matches(matcher: Option<&str>, subject: Option<&str>) -> bool {
    match (matcher, subject) {
        (None, _) => true,
        (Some(matcher), Some(subject)) => regex::Regex::new(&format!("^(?:{matcher})$"))
            .is_ok_and(|regex| regex.is_match(subject)),
        (Some(_), None) => false,
    }
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

fn agent_id(agent: &AgentId) -> &str {
    match agent {
        AgentId::Main => "main",
        AgentId::Sub(id) => id,
    }
}

impl Hook for CommandHooks {
    fn pre_tool_use<'a>(&'a self, call: &'a ToolCall<'a>) -> BoxFuture<'a, HookDecision> {
        Box::pin(async move {
            let name = call.tool.name();
            let input = fields(json!({
                "tool_name": name,
                "tool_input": call.input,
                "tool_use_id": call.ctx.tool_call_id(),
                "session_id": call.ctx.session_id(),
            }));
            let decide = |outcome: Outcome| {
                if let Outcome::Block(reason) = outcome {
                    return Some(HookDecision::Deny(reason));
                }
                let reason = outcome
                    .specific("permissionDecisionReason")
                    .and_then(Value::as_str)
                    .unwrap_or("a PreToolUse hook refused the call")
                    .to_owned();
                match outcome
                    .specific("permissionDecision")
                    .and_then(Value::as_str)
                {
                    Some("deny") => Some(HookDecision::Deny(reason)),
                    Some("allow") => Some(match outcome.specific("updatedInput") {
                        Some(input) => HookDecision::Rewrite(input.clone()),
                        None => HookDecision::Allow,
                    }),
                    _ => outcome
                        .specific("updatedInput")
                        .cloned()
                        .map(HookDecision::Rewrite),
                }
            };
            let decision = self.run("PreToolUse", Some(name), input, decide).await;
            decision.unwrap_or(HookDecision::Continue)
        })
    }

    fn post_tool_use<'a>(&'a self, result: &'a ToolResult<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let input = fields(json!({
                "tool_name": result.tool,
                "tool_input": result.input,
                "tool_response": result.output.to_text(),
                "tool_use_id": result.ctx.tool_call_id(),
                "session_id": result.ctx.session_id(),
            }));
            self.observe("PostToolUse", Some(result.tool), input).await
        })
    }

    fn post_tool_use_failure<'a>(&'a self, failure: &'a ToolFailure<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let input = fields(json!({
                "tool_name": failure.tool,
                "tool_input": failure.input,
                "tool_use_id": failure.call_id,
                "error": failure.error,
            }));
            self.observe("PostToolUseFailure", Some(failure.tool), input)
                .await
        })
    }

    fn permission_request<'a>(
        &'a self,
        question: &'a PermissionQuestion,
    ) -> BoxFuture<'a, Option<PermissionAnswer>> {
        Box::pin(async move {
            let input = fields(json!({
                "tool_name": question.tool,
                "tool_input": question.input,
                "permission_suggestions": [question.suggested_rule.to_string()],
            }));
            let decide = |outcome: Outcome| {
                if let Outcome::Block(reason) = outcome {
                    return Some(PermissionAnswer::Deny(reason));
                }
                let decision = outcome.specific("decision")?;
                match decision["behavior"].as_str() {
                    Some("allow") => Some(PermissionAnswer::Allow),
                    Some("deny") => Some(PermissionAnswer::Deny(
                        decision["message"]
                            .as_str()
                            .unwrap_or("a PermissionRequest hook refused the call")
                            .to_owned(),
                    )),
                    _ => None,
                }
            };
            let tool = question.tool.as_str();
            self.run("PermissionRequest", Some(tool), input, decide)
                .await
        })
    }

    fn user_prompt_submit<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, PromptCheck> {
        Box::pin(async move {
            let input = fields(json!({ "prompt": prompt }));
            let mut contexts = Vec::new();
            let decide = |outcome: Outcome| {
                if let Some(reason) = outcome.blocked() {
                    return Some(reason);
                }
                match (&outcome, outcome.specific("additionalContext")) {
                    (_, Some(Value::String(context))) => contexts.push(context.clone()),
                    (Outcome::Done { stdout, json: None }, _) if !stdout.is_empty() => {
                        contexts.push(stdout.clone())
                    }
                    _ => {}
                }
                None
            };
            match self.run("UserPromptSubmit", None, input, decide).await {
                Some(reason) => PromptCheck::Block(reason),
                None if contexts.is_empty() => PromptCheck::Continue,
                None => PromptCheck::AddContext(contexts.join("\n")),
            }
        })
    }

    fn notification<'a>(&'a self, notification: &'a Notification) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let kind = notification.kind.as_str();
            let input = fields(json!({
                "message": notification.message,
                "notification_type": kind,
            }));
            self.observe("Notification", Some(kind), input).await
        })
    }

    fn stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        Box::pin(self.stop_event("Stop", stop))
    }

    fn subagent_start<'a>(&'a self, start: &'a SubagentStart<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let input = fields(json!({
                "agent_id": agent_id(start.agent),
                "agent_type": start.kind,
                "prompt": start.prompt,
            }));
            self.observe("SubagentStart", Some(start.kind), input).await
        })
    }

    fn subagent_stop<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        Box::pin(self.stop_event("SubagentStop", stop))
    }

    fn pre_compact<'a>(&'a self, request: &'a CompactRequest) -> BoxFuture<'a, CompactDecision> {
        Box::pin(async move {
            // The agent compacts on its own only: there is no `/compact` to make it "manual".
            let trigger = "auto";
            let input = fields(json!({
                "trigger": trigger,
                "custom_instructions": "",
                "tokens": request.tokens,
                "window": request.window,
            }));
            let decide = |outcome: Outcome| outcome.blocked().map(|_| CompactDecision::Veto);
            let decision = self.run("PreCompact", Some(trigger), input, decide).await;
            decision.unwrap_or(CompactDecision::Proceed)
        })
    }

    fn session_start<'a>(&'a self, start: &'a SessionStart<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let source = match start.source {
                SessionSource::Startup => "startup",
                SessionSource::Resume => "resume",
            };
            let input = fields(json!({ "session_id": start.session_id, "source": source }));
            self.observe("SessionStart", Some(source), input).await
        })
    }

    fn session_end<'a>(&'a self, end: &'a SessionEnd<'a>) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // Claude Code's reasons are about its own UI (`clear`, `logout`, ...).
            let reason = match end.reason {
                SessionEndReason::Closed | SessionEndReason::Dropped => "other",
            };
            let input = fields(json!({ "session_id": end.session_id, "reason": reason }));
            self.observe("SessionEnd", Some(reason), input).await
        })
    }
}

impl CommandHooks {
    async fn stop_event(&self, event: &str, stop: &StopContext<'_>) -> StopCheck {
        let input = fields(json!({
            "stop_hook_active": stop.continued > 0,
            "agent_id": agent_id(stop.agent),
            "last_message": stop.text,
        }));
        let decide = |outcome: Outcome| outcome.blocked();
        match self.run(event, None, input, decide).await {
            Some(reason) => StopCheck::Continue(reason),
            None => StopCheck::Stop,
        }
    }
}
