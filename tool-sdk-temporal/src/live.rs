//! What a running activity shows before it ends: the model's text and thinking as they
//! stream, a tool's progress.
//!
//! Temporal records what an activity returns, not what it does meanwhile, and a signal or an
//! update would add events to the workflow's history for every few tokens. An activity's
//! heartbeat, though, carries details that the server keeps outside the history (the last
//! ones of each pending activity) and returns in `DescribeWorkflowExecution`, which the
//! client already asks to know whether a run has ended. So a model turn's activity heartbeats
//! the text (and thinking) streamed so far, a call's activity the progress lines its tool
//! reported, and [`RunHandle::events`](crate::RunHandle::events) turns what is new in them
//! into events.
//!
//! The worker paces them: a change is sent at once when the last heartbeat is
//! [`LIVE_EVERY`] old, else when it is, and the worker's own throttle
//! ([`HEARTBEAT_THROTTLE`]) is shorter, so that it never holds one back. Each carries a
//! window of the text's end ([`TEXT_WINDOW`]) and the last progress lines, so that a
//! heartbeat stays far below the server's size limit (an oversized one fails the activity).

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use temporalio_sdk::activities::{ActivityContext, ActivityError};
use tokio::sync::Notify;
use tokio::time::Instant;
use tool_sdk::CancellationToken;
use tool_sdk::model::{Message, MessageContent};

use crate::events::RunEvent;

/// The least time between two heartbeats that carry news.
pub(crate) const LIVE_EVERY: Duration = Duration::from_millis(150);

/// The worker's heartbeat throttle (`max_heartbeat_throttle_interval`), shorter than
/// [`LIVE_EVERY`]: by default the worker holds heartbeats for 80 % of the heartbeat timeout
/// (8 s of the default 10 s), which would hold the text back as long.
pub(crate) const HEARTBEAT_THROTTLE: Duration = Duration::from_millis(100);

/// How many bytes of the text's end a heartbeat carries (16 KiB: a model writes that in tens
/// of seconds, a client looks far more often).
const TEXT_WINDOW: usize = 16 * 1024;

/// How many of the last progress lines a heartbeat carries.
const PROGRESS_WINDOW: usize = 16;

/// How many bytes of a progress line are kept.
const LINE_LIMIT: usize = 1024;

/// A heartbeat's details: what its activity has shown so far.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Live {
    /// A model turn's text.
    Text {
        /// Which model turn of the session (from 0).
        turn: u32,
        /// Which attempt of which activity (`<activity id>/<attempt>`): another one streams
        /// the turn from its start again.
        run: String,
        /// Where `text` begins in the turn's text, in bytes.
        from: usize,
        /// The text's end.
        text: String,
        /// Where `thinking` begins in the turn's thinking, in bytes.
        #[serde(default)]
        thinking_from: usize,
        /// The thinking's end (its blocks one after another).
        #[serde(default)]
        thinking: String,
    },
    /// A call's progress lines.
    Progress {
        /// The tool_use id.
        call_id: String,
        /// As for the text.
        run: String,
        /// How many lines came before `lines`.
        from: usize,
        /// The last lines.
        lines: Vec<String>,
    },
}

/// What a running activity has shown, whole, shared by the work and its heartbeats.
#[derive(Clone)]
pub(crate) struct Shown {
    state: Arc<(Mutex<Showing>, Notify)>,
}

enum Showing {
    Text {
        turn: u32,
        run: String,
        text: String,
        thinking: String,
    },
    Progress {
        call_id: String,
        run: String,
        lines: VecDeque<String>,
        count: usize,
    },
}

/// `<activity id>/<attempt>` of the running activity.
fn run_of(ctx: &ActivityContext) -> String {
    format!("{}/{}", ctx.info().activity_id, ctx.info().attempt)
}

impl Shown {
    fn of(showing: Showing) -> Shown {
        Shown {
            state: Arc::new((Mutex::new(showing), Notify::new())),
        }
    }

    /// What the model turn `turn` streams.
    pub(crate) fn text(ctx: &ActivityContext, turn: u32) -> Shown {
        let run = run_of(ctx);
        Shown::of(Showing::Text {
            turn,
            run,
            text: String::new(),
            thinking: String::new(),
        })
    }

    /// What the call `call_id` reports.
    pub(crate) fn progress(ctx: &ActivityContext, call_id: &str) -> Shown {
        Shown::of(Showing::Progress {
            call_id: call_id.to_owned(),
            run: run_of(ctx),
            lines: VecDeque::new(),
            count: 0,
        })
    }

    fn edit(&self, change: impl FnOnce(&mut Showing)) {
        let (state, changed) = &*self.state;
        change(&mut state.lock().unwrap_or_else(|p| p.into_inner()));
        changed.notify_one();
    }

    /// More of the turn's text.
    pub(crate) fn push_text(&self, delta: &str) {
        self.edit(|showing| {
            if let Showing::Text { text, .. } = showing {
                text.push_str(delta);
            }
        });
    }

    /// More of the turn's thinking.
    pub(crate) fn push_thinking(&self, delta: &str) {
        self.edit(|showing| {
            if let Showing::Text { thinking, .. } = showing {
                thinking.push_str(delta);
            }
        });
    }

    /// A progress line of the call's tool.
    pub(crate) fn push_line(&self, line: &str) {
        let line = line.get(..floor_boundary(line, LINE_LIMIT)).unwrap_or(line);
        self.edit(|showing| {
            if let Showing::Progress { lines, count, .. } = showing {
                if lines.len() == PROGRESS_WINDOW {
                    lines.pop_front();
                }
                lines.push_back(line.to_owned());
                *count += 1;
            }
        });
    }

    /// The heartbeat's details now.
    fn details(&self) -> Live {
        let state = self.state.0.lock().unwrap_or_else(|p| p.into_inner());
        match &*state {
            Showing::Text {
                turn,
                run,
                text,
                thinking,
            } => {
                let (from, text) = window(text);
                let (thinking_from, thinking) = window(thinking);
                Live::Text {
                    turn: *turn,
                    run: run.clone(),
                    from,
                    text,
                    thinking_from,
                    thinking,
                }
            }
            Showing::Progress {
                call_id,
                run,
                lines,
                count,
            } => Live::Progress {
                call_id: call_id.clone(),
                run: run.clone(),
                from: count - lines.len(),
                lines: lines.iter().cloned().collect(),
            },
        }
    }
}

/// The last [`TEXT_WINDOW`] bytes of `text` (cut on a char boundary), and where they begin.
fn window(text: &str) -> (usize, String) {
    let from = ceil_boundary(text, text.len().saturating_sub(TEXT_WINDOW));
    (from, text[from..].to_owned())
}

/// What of `window` (which begins at `from` in the whole) is past `shown`, added to `shown`;
/// nothing past a gap (a heartbeat missed), whose rest comes with the turn.
fn news(shown: &mut String, from: usize, window: &str) -> Option<String> {
    let new = shown
        .len()
        .checked_sub(from)
        .and_then(|seen| window.get(seen..))
        .filter(|new| !new.is_empty())?;
    shown.push_str(new);
    Some(new.to_owned())
}

/// The thinking of a stored turn, its blocks one after another (as they streamed).
fn thinking_of(turn: &Message) -> String {
    turn.content
        .iter()
        .filter_map(|block| match block {
            MessageContent::Thinking { thinking, .. } => Some(thinking.as_str()),
            _ => None,
        })
        .collect()
}

/// The last char boundary of `text` at or before `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    (0..=at.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

/// The first char boundary of `text` at or after `at`.
fn ceil_boundary(text: &str, at: usize) -> usize {
    (at..=text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len())
}

/// Runs `work` while heartbeating what `shown` shows, if anything: each change at most
/// [`LIVE_EVERY`] after the last heartbeat, and at least every third of the activity's
/// heartbeat timeout (so that the server knows the worker lives). The activity's
/// cancellation (which heartbeats bring) cancels `cancel`.
pub(crate) async fn heartbeating<T>(
    ctx: &ActivityContext,
    cancel: &CancellationToken,
    shown: Option<&Shown>,
    work: impl Future<Output = Result<T, ActivityError>>,
) -> Result<T, ActivityError> {
    let alive = ctx
        .info()
        .heartbeat_timeout
        .filter(|timeout| !timeout.is_zero())
        .map_or(Duration::from_secs(10), |timeout| timeout / 3);
    let nothing = Notify::new();
    let changed = shown.map_or(&nothing, |shown| &shown.state.1);
    let mut work = std::pin::pin!(work);
    // As if the last heartbeat were just old enough: the first news (the first token) goes
    // at once.
    let now = Instant::now();
    let mut last = now.checked_sub(LIVE_EVERY).unwrap_or(now);
    let mut news = false;
    let beat = async |last: &mut Instant| {
        *last = Instant::now();
        // A heartbeat that cannot be encoded only delays noticing a cancellation.
        let _ = match shown {
            Some(shown) => ctx.record_heartbeat(shown.details()).await,
            None => ctx.record_heartbeat(()).await,
        };
    };
    loop {
        let next = match news {
            true => last + LIVE_EVERY,
            false => last + alive,
        };
        tokio::select! {
            done = &mut work => return done,
            () = changed.notified(), if !news => news = true,
            () = tokio::time::sleep_until(next) => {
                news = false;
                beat(&mut last).await;
            }
            () = ctx.cancelled(), if !cancel.is_cancelled() => cancel.cancel(),
        }
    }
}

/// What a client has shown of a run's live text and progress, to show only what is new.
#[derive(Debug, Default)]
pub(crate) struct Follow {
    /// How many model turns of the session are stored: their text is shown.
    turns: u32,
    /// The turn streaming now.
    text: Option<Streaming>,
    /// Each running call's progress: which activity's attempt, and how many lines shown.
    calls: HashMap<String, (String, usize)>,
}

/// A turn streaming: which, which activity's attempt streams it, and what was shown of it.
#[derive(Debug)]
struct Streaming {
    turn: u32,
    run: String,
    text: String,
    thinking: String,
}

impl Follow {
    /// Counts the model turns stored before the run's first event.
    pub(crate) fn turns_before(&mut self, turns: usize) {
        self.turns = turns as u32;
    }

    /// The events of what a pending activity's last heartbeat shows that was not shown yet.
    pub(crate) fn heartbeat(&mut self, live: Live) -> Vec<RunEvent> {
        match live {
            Live::Text {
                turn,
                run,
                from,
                text,
                thinking_from,
                thinking,
            } => {
                if turn < self.turns {
                    return Vec::new(); // stored, so shown
                }
                let mut events = Vec::new();
                let streaming = match &mut self.text {
                    Some(streaming) if streaming.turn == turn && streaming.run == run => streaming,
                    current => {
                        let restarted = current.as_ref().is_some_and(|streaming| {
                            streaming.turn == turn
                                && !(streaming.text.is_empty() && streaming.thinking.is_empty())
                        });
                        if restarted {
                            events.push(RunEvent::TextRestarted);
                        }
                        current.insert(Streaming {
                            turn,
                            run,
                            text: String::new(),
                            thinking: String::new(),
                        })
                    }
                };
                // A turn thinks before it writes.
                if let Some(new) = news(&mut streaming.thinking, thinking_from, &thinking) {
                    events.push(RunEvent::ThinkingDelta(new));
                }
                if let Some(new) = news(&mut streaming.text, from, &text) {
                    events.push(RunEvent::TextDelta(new));
                }
                events
            }
            Live::Progress {
                call_id,
                run,
                from,
                lines,
            } => {
                let (streams, shown) = self.calls.entry(call_id.clone()).or_default();
                if *streams != run {
                    // Another attempt (or a run again after a question): its lines are new.
                    (*streams, *shown) = (run, 0);
                }
                let skip = shown.saturating_sub(from);
                *shown = from + lines.len();
                lines
                    .into_iter()
                    .skip(skip)
                    .map(|message| RunEvent::ToolProgress {
                        id: call_id.clone(),
                        message,
                    })
                    .collect()
            }
        }
    }

    /// The text and thinking events that come before a stored turn's own: what was not
    /// streamed of it.
    pub(crate) fn turn_stored(&mut self, turn: &Message) -> Vec<RunEvent> {
        let index = self.turns;
        self.turns += 1;
        let (text, thinking) = (turn.text(), thinking_of(turn));
        let (mut shown_text, mut shown_thinking) = match self.text.take() {
            Some(streaming) if streaming.turn == index => (streaming.text, streaming.thinking),
            _ => Default::default(),
        };
        let mut events = Vec::new();
        if !text.starts_with(&shown_text) {
            // The turn stored is not the one streamed (another attempt's).
            events.push(RunEvent::TextRestarted);
            (shown_text, shown_thinking) = Default::default();
        }
        // A provider may stream separators its stored thinking lacks: the thinking's rest
        // comes only when what streamed is the start of it (the turn carries it whole).
        if let Some(rest) = thinking.strip_prefix(&shown_thinking)
            && !rest.is_empty()
        {
            events.push(RunEvent::ThinkingDelta(rest.to_owned()));
        }
        let rest = &text[shown_text.len()..];
        if !rest.is_empty() {
            events.push(RunEvent::TextDelta(rest.to_owned()));
        }
        events
    }

    /// A call ended: its progress is over.
    pub(crate) fn call_ended(&mut self, call_id: &str) {
        self.calls.remove(call_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(turn: u32, run: &str, from: usize, text: &str) -> Live {
        Live::Text {
            turn,
            run: run.into(),
            from,
            text: text.into(),
            thinking_from: 0,
            thinking: String::new(),
        }
    }

    fn delta(text: &str) -> RunEvent {
        RunEvent::TextDelta(text.into())
    }

    #[test]
    fn text_shows_what_is_new_then_the_rest_with_its_turn() {
        let mut follow = Follow::default();
        follow.turns_before(2);
        assert!(follow.heartbeat(text(1, "a/1", 0, "old")).is_empty());
        assert_eq!(follow.heartbeat(text(2, "a/1", 0, "Hel")), [delta("Hel")]);
        assert!(follow.heartbeat(text(2, "a/1", 0, "Hel")).is_empty());
        // A window that starts past the text's start.
        assert_eq!(
            follow.heartbeat(text(2, "a/1", 2, "llo wo")),
            [delta("lo wo")]
        );
        let turn = Message::assistant("Hello world");
        assert_eq!(follow.turn_stored(&turn), [delta("rld")]);
        // The stored turn's late heartbeat shows nothing.
        assert!(
            follow
                .heartbeat(text(2, "a/1", 0, "Hello world"))
                .is_empty()
        );
    }

    #[test]
    fn another_attempt_restarts_the_text_and_a_gap_waits_for_the_turn() {
        let mut follow = Follow::default();
        assert_eq!(follow.heartbeat(text(0, "a/1", 0, "Bon")), [delta("Bon")]);
        assert_eq!(
            follow.heartbeat(text(0, "a/2", 0, "Hi")),
            [RunEvent::TextRestarted, delta("Hi")]
        );
        // Bytes 2..5 were never seen: nothing until the turn.
        assert!(follow.heartbeat(text(0, "a/2", 5, "there")).is_empty());
        assert_eq!(
            follow.turn_stored(&Message::assistant("Hi, there")),
            [delta(", there")]
        );
        // A turn streamed by an attempt whose text was not the one stored.
        assert_eq!(follow.heartbeat(text(1, "b/1", 0, "Nope")), [delta("Nope")]);
        assert_eq!(
            follow.turn_stored(&Message::assistant("Yes")),
            [RunEvent::TextRestarted, delta("Yes")]
        );
    }

    #[test]
    fn thinking_streams_before_the_text_and_its_rest_comes_with_the_turn() {
        let thought = |from: usize, thinking: &str, text: &str| Live::Text {
            turn: 0,
            run: "a/1".into(),
            from: 0,
            text: text.into(),
            thinking_from: from,
            thinking: thinking.into(),
        };
        let thinking = |text: &str| RunEvent::ThinkingDelta(text.into());
        let mut follow = Follow::default();
        assert_eq!(
            follow.heartbeat(thought(0, "Let me", "")),
            [thinking("Let me")]
        );
        assert_eq!(
            follow.heartbeat(thought(0, "Let me see.", "Hi")),
            [thinking(" see."), delta("Hi")]
        );
        // The turn stored: the thinking's rest, then the text's.
        let turn = Message {
            role: tool_sdk::model::Role::Assistant,
            content: vec![
                MessageContent::Thinking {
                    thinking: "Let me see. Yes.".into(),
                    signature: "sig".into(),
                },
                MessageContent::Text {
                    text: "Hi there".into(),
                },
            ],
        };
        assert_eq!(
            follow.turn_stored(&turn),
            [thinking(" Yes."), delta(" there")]
        );
        // Another attempt's thinking starts over.
        let mut follow = Follow::default();
        follow.heartbeat(thought(0, "Hmm", ""));
        let again = Live::Text {
            turn: 0,
            run: "a/2".into(),
            from: 0,
            text: String::new(),
            thinking_from: 0,
            thinking: "Well".into(),
        };
        assert_eq!(
            follow.heartbeat(again),
            [RunEvent::TextRestarted, thinking("Well")]
        );
        // A heartbeat from a worker that did not send thinking still reads.
        let old: Live = serde_json::from_value(serde_json::json!({
            "kind": "text", "turn": 1, "run": "b/1", "from": 0, "text": "x"
        }))
        .unwrap();
        assert_eq!(follow.heartbeat(old), [delta("x")]);
    }

    #[test]
    fn progress_shows_each_line_once_and_a_new_run_from_its_first() {
        let progress = |run: &str, from: usize, lines: &[&str]| Live::Progress {
            call_id: "c".into(),
            run: run.into(),
            from,
            lines: lines.iter().map(|l| l.to_string()).collect(),
        };
        let line = |message: &str| RunEvent::ToolProgress {
            id: "c".into(),
            message: message.into(),
        };
        let mut follow = Follow::default();
        assert_eq!(follow.heartbeat(progress("a/1", 0, &["1"])), [line("1")]);
        assert_eq!(
            follow.heartbeat(progress("a/1", 1, &["2", "3"])),
            [line("2"), line("3")]
        );
        assert_eq!(
            follow.heartbeat(progress("a/1", 2, &["3", "4"])),
            [line("4")]
        );
        assert_eq!(follow.heartbeat(progress("b/1", 0, &["1"])), [line("1")]);
        follow.call_ended("c");
    }

    #[test]
    fn windows_keep_the_end_and_cut_on_char_boundaries() {
        let long = "é".repeat(TEXT_WINDOW); // two bytes each
        let shown = Shown::of(Showing::Text {
            turn: 0,
            run: "a/1".into(),
            text: String::new(),
            thinking: String::new(),
        });
        shown.push_text(&long);
        shown.push_text("!");
        let Live::Text { from, text, .. } = shown.details() else {
            panic!("text shows text");
        };
        assert_eq!(from + text.len(), long.len() + 1);
        assert!(text.len() <= TEXT_WINDOW && text.ends_with("é!"));
        assert_eq!(floor_boundary("aé", 2), 1);
    }
}
