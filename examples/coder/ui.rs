//! How a run looks in the terminal: streamed text, a spinner per running tool, results with
//! their display titles, Edit diffs in colour, permission questions and tools' questions, a
//! summary per turn.

use std::collections::{HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use console::{Style, style};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde_json::Value;
use tool_sdk::agent::{AgentError, AgentEvent, ElicitationRequest, PermissionRequest, RunResult};
use tool_sdk::permission::{PermissionAnswer, PermissionQuestion};
use tool_sdk::{ElicitationAnswer, ToolUpdateKind};

use crate::input::{Line, LineReader};

/// How many lines of an error, after its first, are shown under the failed call.
const MAX_ERROR_LINES: usize = 20;

/// The terminal side of one run.
pub struct RunView {
    spinners: MultiProgress,
    running: HashMap<String, ProgressBar>,
    titles: HashMap<String, String>,
    /// Calls whose permission question the user answered with Ctrl-C: they never ran.
    cancelled_at_question: HashSet<String>,
    mid_line: bool,
    /// Everything but the model's text goes to stderr (--print: stdout is the answer).
    progress_to_stderr: bool,
    /// Where relative paths in calls are.
    working_dir: PathBuf,
    /// The one dim line the model's thinking is folded into while it streams.
    thinking: Option<ProgressBar>,
    /// The thinking of the model turn streaming now.
    thought: String,
}

impl RunView {
    pub fn new(progress_to_stderr: bool, working_dir: &Path) -> Self {
        RunView {
            spinners: MultiProgress::new(),
            running: HashMap::new(),
            titles: HashMap::new(),
            cancelled_at_question: HashSet::new(),
            mid_line: false,
            progress_to_stderr,
            working_dir: working_dir.to_owned(),
            thinking: None,
            thought: String::new(),
        }
    }

    /// Shows one event. Permission questions come back to the caller, which asks the user.
    pub fn show(&mut self, event: AgentEvent) -> Option<Question> {
        if let AgentEvent::ThinkingDelta(text) = &event {
            self.think(text);
            return None;
        }
        self.fold_thinking();
        match event {
            AgentEvent::TextDelta(text) => {
                self.spinners.suspend(|| {
                    print!("{text}");
                    let _ = std::io::stdout().flush();
                });
                self.mid_line = !text.ends_with('\n');
            }
            AgentEvent::ToolRequested { id, title, .. } => {
                self.end_line();
                let spinner = self.spinners.add(ProgressBar::new_spinner());
                spinner.set_style(
                    ProgressStyle::with_template("{spinner:.cyan} {msg} {elapsed:.dim}")
                        .expect("a valid template"),
                );
                spinner.set_message(title.clone());
                spinner.enable_steady_tick(Duration::from_millis(100));
                self.running.insert(id.clone(), spinner);
                self.titles.insert(id, title);
            }
            AgentEvent::ToolProgress {
                id,
                update: ToolUpdateKind::Progress(line),
            } => {
                if let (Some(spinner), Some(title)) = (self.running.get(&id), self.titles.get(&id))
                {
                    spinner.set_message(format!("{title} {}", style(line).dim()));
                }
            }
            AgentEvent::ToolCompleted {
                id,
                output,
                display,
                ..
            } => {
                self.stop_spinner(&id);
                self.println(format!(
                    "{} {} {}",
                    style("●").green(),
                    style(&display.title).bold(),
                    style(format!("· {}", display.summary)).dim()
                ));
                if let Some(diff) = output.structured.as_ref().and_then(|s| s["diff"].as_str()) {
                    self.println(coloured_diff(diff));
                }
            }
            AgentEvent::ToolFailed {
                id, name, output, ..
            } => self.tool_failed(&id, name, &output),
            AgentEvent::PermissionRequested(request) => {
                self.end_line();
                return Some(Question::Permission(request));
            }
            AgentEvent::ElicitationRequested(request) => {
                self.end_line();
                return Some(Question::Elicitation(request));
            }
            AgentEvent::ModelFallback { from, to, reason } => {
                self.end_line();
                let line = format!("{from} failed ({reason}); this turn goes to {to}");
                self.println(style(line).yellow().to_string());
            }
            AgentEvent::Error(AgentError::Cancelled) => {
                self.end_line();
                self.println(style("Cancelled.").yellow().to_string());
            }
            AgentEvent::Error(error) => {
                self.end_line();
                let line = format!("{} {error}", style("error:").red().bold());
                self.spinners.suspend(|| eprintln!("{line}"));
            }
            _ => {}
        }
        None
    }

    /// A call that failed: its first line in red, and what follows (up to
    /// [`MAX_ERROR_LINES`]).
    fn tool_failed(&mut self, id: &str, name: String, output: &tool_sdk::ToolOutput) {
        self.stop_spinner(id);
        let title = self.titles.get(id).cloned().unwrap_or(name);
        if self.cancelled_at_question.contains(id) {
            // Whichever of the refusal and the cancellation reached the call first,
            // it stopped at its question.
            self.println(format!(
                "{} {} {}",
                style("●").yellow(),
                style(title).bold(),
                style("cancelled at its permission question; it did not run").yellow()
            ));
            return;
        }
        let text = output.to_text();
        let mut lines = text.lines();
        self.println(format!(
            "{} {} {}",
            style("●").red(),
            style(title).bold(),
            style(lines.next().unwrap_or("failed")).red()
        ));
        // The rest is what the model is told too, such as every schema problem of an
        // invalid input.
        let rest: Vec<&str> = lines.collect();
        for line in rest.iter().take(MAX_ERROR_LINES) {
            self.println(format!("  {}", style(line).red()));
        }
        if rest.len() > MAX_ERROR_LINES {
            let more = rest.len() - MAX_ERROR_LINES;
            self.println(format!("  {}", style(format!("… {more} more lines")).dim()));
        }
    }

    /// More thinking: the folded line shows its latest words.
    fn think(&mut self, text: &str) {
        self.thought.push_str(text);
        let bar = self.thinking.get_or_insert_with(|| {
            let bar = self.spinners.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner:.dim} {msg:.dim}")
                    .expect("a valid template"),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        let words: Vec<&str> = self.thought.split_whitespace().collect();
        let tail = words[words.len().saturating_sub(12)..].join(" ");
        bar.set_message(format!("thinking… {tail}"));
    }

    /// The thinking is over (the model answers or calls a tool): its line becomes a note.
    fn fold_thinking(&mut self) {
        let Some(bar) = self.thinking.take() else {
            return;
        };
        bar.finish_and_clear();
        self.spinners.remove(&bar);
        let words = self.thought.split_whitespace().count();
        self.thought.clear();
        self.end_line();
        self.println(
            style(format!("✻ thought for {words} words (/thinking shows it)"))
                .dim()
                .to_string(),
        );
    }

    /// The user cancelled the turn at this call's permission question.
    pub fn cancelled_at_question(&mut self, id: &str) {
        self.cancelled_at_question.insert(id.to_owned());
    }

    /// The run is over: its summary line.
    pub fn finish(&mut self, result: &RunResult) {
        self.fold_thinking();
        self.end_line();
        for (_, spinner) in self.running.drain() {
            spinner.finish_and_clear();
        }
        self.out(
            style(format!(
                "── {} turn{} · {} tool call{} · {} in / {} out tokens · {:.1}s",
                result.turns,
                plural(result.turns as usize),
                result.tool_calls,
                plural(result.tool_calls),
                result.usage.input_tokens,
                result.usage.output_tokens,
                result.duration.as_secs_f64()
            ))
            .dim()
            .to_string(),
        );
    }

    /// A line that is not the model's text: on stdout, or stderr in --print mode.
    pub fn out(&self, line: String) {
        if self.progress_to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }

    fn stop_spinner(&mut self, id: &str) {
        if let Some(spinner) = self.running.remove(id) {
            spinner.finish_and_clear();
            self.spinners.remove(&spinner);
        }
    }

    fn println(&self, line: String) {
        if self.running.is_empty() {
            self.out(line);
        } else {
            self.spinners.suspend(|| self.out(line));
        }
    }

    fn end_line(&mut self) {
        if self.mid_line {
            println!();
            self.mid_line = false;
        }
    }

    /// Asks the user about a call: y (once), n (refuse), a (always, for the session).
    pub async fn ask(&mut self, question: &PermissionQuestion, input: &LineReader) -> Answer {
        self.without_spinners(self.ask_hidden(question, input))
            .await
    }

    /// Asks the user a tool's question: a form field by field, or a page to open.
    pub async fn ask_form(
        &mut self,
        request: &ElicitationRequest,
        input: &LineReader,
    ) -> ElicitationAnswer {
        let asking = crate::form::ask(&request.tool, &request.question, input);
        self.without_spinners(asking).await
    }

    /// Runs `asking` with the spinners hidden: they would draw over the question; they come
    /// back with the answer.
    async fn without_spinners<T>(&self, asking: impl std::future::Future<Output = T>) -> T {
        self.spinners.clear().ok();
        self.spinners.set_draw_target(ProgressDrawTarget::hidden());
        let answer = asking.await;
        self.spinners.set_draw_target(ProgressDrawTarget::stderr());
        answer
    }

    async fn ask_hidden(&self, question: &PermissionQuestion, input: &LineReader) -> Answer {
        // The preview shows a Bash call's command; the SDK's title (`Bash: <command>`) would
        // repeat it.
        let title = match question.tool.as_str() {
            "Bash" => "Bash command",
            _ => &question.prompt.title,
        };
        println!("{} {}", style("?").yellow().bold(), style(title).bold());
        if let Some(summary) = &question.prompt.summary {
            println!("  {summary}");
        }
        println!(
            "{}",
            preview(&question.tool, &question.input, &self.working_dir)
        );
        loop {
            let prompt = "  Allow? [y]es / [n]o / [a]lways: ".to_owned();
            match input.read(prompt).await {
                Line::Text(answer) => match answer.trim().to_lowercase().as_str() {
                    "y" | "yes" => return Answer::Given(PermissionAnswer::Allow),
                    "a" | "always" => {
                        println!(
                            "  {}",
                            style(format!(
                                "allowed for this session: {}",
                                question.suggested_rule
                            ))
                            .dim()
                        );
                        return Answer::Given(PermissionAnswer::AllowAlways);
                    }
                    "n" | "no" => {
                        return Answer::Given(PermissionAnswer::Deny(
                            "The user refused this call.".into(),
                        ));
                    }
                    _ => println!("  Please answer y, n or a."),
                },
                Line::Interrupted => return Answer::CancelTurn,
                Line::Eof => {
                    return Answer::Given(PermissionAnswer::Deny(
                        "No one could be asked (end of input), so the call was refused.".into(),
                    ));
                }
            }
        }
    }
}

/// A question of the run for the user: a call's permission, or a tool's own question.
pub enum Question {
    /// May the call run?
    Permission(PermissionRequest),
    /// A tool asks the user (a form, or a page to open).
    Elicitation(ElicitationRequest),
}

/// What the user said to a permission question.
pub enum Answer {
    /// An answer for the call.
    Given(PermissionAnswer),
    /// Ctrl-C: refuse it and stop the turn.
    CancelTurn,
}

/// The call as the user should judge it: an Edit as the diff it would make, a Bash command
/// as the command, anything else as its input.
pub fn preview(tool: &str, input: &Value, working_dir: &Path) -> String {
    let field = |name: &str| input[name].as_str().unwrap_or_default();
    match tool {
        "Edit" => coloured_diff(&edit_diff(
            &working_dir.join(field("file_path")),
            field("file_path"),
            field("old_string"),
            field("new_string"),
            input["replace_all"].as_bool().unwrap_or(false),
        )),
        "Bash" => format!("  {}", style(format!("$ {}", field("command"))).cyan()),
        "Write" => {
            let content = field("content");
            let mut lines: Vec<String> = content
                .lines()
                .take(8)
                .map(|l| format!("  {}", style(format!("+{l}")).green()))
                .collect();
            if content.lines().count() > 8 {
                lines.push(format!("  … {} lines in all", content.lines().count()));
            }
            lines.join("\n")
        }
        _ => serde_json::to_string_pretty(input)
            .unwrap_or_default()
            .lines()
            .take(12)
            .map(|l| format!("  {}", style(l).dim()))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The diff an Edit would make to the file at `path`, with the file's real line numbers, as
/// the Edit tool's own diff shows them once applied. When the file cannot be read, or the
/// text is not found in it, only the lines replaced, under a header without line numbers.
fn edit_diff(path: &Path, name: &str, old: &str, new: &str, replace_all: bool) -> String {
    let unified = |before: &str, after: &str| {
        similar::TextDiff::from_lines(before, after)
            .unified_diff()
            .context_radius(3)
            .header(name, name)
            .to_string()
    };
    if let Ok(content) = std::fs::read_to_string(path)
        && !old.is_empty()
        && content.contains(old)
    {
        let after = if replace_all {
            content.replace(old, new)
        } else {
            content.replacen(old, new, 1)
        };
        return unified(&content, &after);
    }
    // Whole lines, so the preview has no "no newline at end of file" markers; the `@@` line
    // would give made-up line numbers.
    unified(&format!("{old}\n"), &format!("{new}\n"))
        .lines()
        .map(|line| if line.starts_with("@@") { "@@" } else { line })
        .collect::<Vec<_>>()
        .join("\n")
}

/// A unified diff with removed lines red, added lines green and hunk headers cyan.
pub fn coloured_diff(diff: &str) -> String {
    let (removed, added, hunk, header) = (
        Style::new().red(),
        Style::new().green(),
        Style::new().cyan(),
        Style::new().bold(),
    );
    diff.lines()
        .map(|line| {
            let style = if line.starts_with("+++") || line.starts_with("---") {
                &header
            } else if line.starts_with('+') {
                &added
            } else if line.starts_with('-') {
                &removed
            } else if line.starts_with("@@") {
                &hunk
            } else {
                return format!("  {line}");
            };
            format!("  {}", style.apply_to(line))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
