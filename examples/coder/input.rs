//! Line input on a thread of its own: rustyline blocks, the agent's run must not.

use std::sync::mpsc;
use std::thread;

use rustyline::DefaultEditor;
use rustyline::error::ReadlineError;
use tokio::sync::oneshot;

/// What the user typed.
pub enum Line {
    /// A line (without its newline).
    Text(String),
    /// Ctrl-C at the prompt.
    Interrupted,
    /// Ctrl-D, or the end of piped input.
    Eof,
}

type Request = (String, oneshot::Sender<Line>);

/// Reads lines with history and editing; each [`read`](LineReader::read) shows its prompt.
pub struct LineReader {
    requests: mpsc::Sender<Request>,
}

impl LineReader {
    pub fn new() -> Result<Self, ReadlineError> {
        let mut editor = DefaultEditor::new()?;
        let (requests, incoming) = mpsc::channel::<Request>();
        thread::spawn(move || {
            for (prompt, reply) in incoming {
                let line = match editor.readline(&prompt) {
                    Ok(line) => {
                        if !line.trim().is_empty() {
                            let _ = editor.add_history_entry(line.as_str());
                        }
                        Line::Text(line)
                    }
                    Err(ReadlineError::Interrupted) => Line::Interrupted,
                    Err(_) => Line::Eof,
                };
                let _ = reply.send(line);
            }
        });
        Ok(LineReader { requests })
    }

    /// The next prompt: `queued` if there is one (the demo's first), else a line read at
    /// `> `, asked again after Ctrl-C; `None` at the end of input.
    pub async fn next_prompt(&self, queued: &mut Option<String>) -> Option<String> {
        if let Some(line) = queued.take() {
            return Some(line);
        }
        loop {
            match self.read("> ".to_owned()).await {
                Line::Text(line) => return Some(line),
                Line::Interrupted => continue,
                Line::Eof => return None,
            }
        }
    }

    /// Shows `prompt` and waits for a line.
    pub async fn read(&self, prompt: String) -> Line {
        let (reply, answer) = oneshot::channel();
        if self.requests.send((prompt, reply)).is_err() {
            return Line::Eof;
        }
        answer.await.unwrap_or(Line::Eof)
    }
}

/// While a turn runs, the terminal does not echo what is typed. The spinners fill their lines
/// to the last column, so an echoed `^C` (or any key) would wrap onto the next line and the
/// spinner would be redrawn, and cleared, one line too low, leaving a frozen copy behind.
/// Typed-ahead text is kept for the next prompt; Ctrl-C still interrupts.
pub struct QuietTerminal {
    #[cfg(unix)]
    saved: Option<rustix::termios::Termios>,
}

impl QuietTerminal {
    /// Turns echo off on standard input, if it is a terminal, until dropped.
    pub fn new() -> Self {
        #[cfg(unix)]
        {
            use rustix::termios::{LocalModes, OptionalActions, isatty, tcgetattr, tcsetattr};
            let stdin = std::io::stdin();
            let saved = isatty(&stdin)
                .then(|| tcgetattr(&stdin).ok())
                .flatten()
                .filter(|modes| {
                    let mut quiet = modes.clone();
                    quiet.local_modes.remove(LocalModes::ECHO);
                    tcsetattr(&stdin, OptionalActions::Now, &quiet).is_ok()
                });
            QuietTerminal { saved }
        }
        #[cfg(not(unix))]
        QuietTerminal {}
    }
}

impl Drop for QuietTerminal {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(modes) = &self.saved {
            let _ = rustix::termios::tcsetattr(
                std::io::stdin(),
                rustix::termios::OptionalActions::Now,
                modes,
            );
        }
    }
}
