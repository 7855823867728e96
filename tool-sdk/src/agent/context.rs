//! Staying inside the model's context window.
//!
//! The conversation (`AgentInner::messages`, [`RunResult::messages`](super::RunResult::messages), the session) is always
//! kept whole; what changes is the *view* each request is sent, built here from it before every
//! model turn:
//! - the size of the request is estimated as characters / 4 (system prompt, tool schemas and
//!   messages; an image counts as [`IMAGE_TOKENS`]): simple, the same on every resume, and
//!   close enough to leave the thresholds room;
//! - the thresholds are shares of the *room* the prompt has: the window less the request's
//!   `max_tokens`, which providers reserve for the answer (Anthropic refuses a request whose
//!   input and `max_tokens` together exceed the window);
//! - above [`ContextSettings::clear_at`] of the room, the results of older tool calls are
//!   *cleared* in the view: the `tool_use`/`tool_result` pair stays and the result's content
//!   becomes a one-line note. Results are cleared oldest first, in one batch, until the
//!   request is under [`ContextSettings::clear_to`], well below `clear_at`: each batch breaks
//!   the prompt cache once, so it makes room for many turns, not just the next one. The
//!   [`keep_tool_results`](ContextSettings) most recent results are never cleared, nor those
//!   the model has not read yet (the last turn's);
//! - above [`ContextSettings::compact_at`] (or when the provider answers that the prompt is
//!   too long), the conversation is *compacted*: the model is asked, in one extra request, to
//!   summarise the older part, and from then on the view is the summary (a user message) then
//!   the recent messages verbatim. The cut is made before an assistant message or before a
//!   user message that holds no tool results, so no call is separated from its result and
//!   roles still alternate. A [`pre_compact`](super::Hook::pre_compact) hook may add instructions or veto it. The
//!   summary request is billed like a turn: it counts in the run's and the agent's usage and
//!   cost, the budgets, the [`AgentEvent::Compacted`](super::AgentEvent::Compacted) event and a stored [`Record::Usage`](crate::session::Record::Usage).
//!
//! The view is a stable prefix between two changes (the summary stays until the next
//! compaction, cleared results stay cleared), so prompt caching keeps hitting. Each change is
//! stored ([`Record::Compacted`](crate::session::Record::Compacted), [`Record::ToolResultsCleared`](crate::session::Record::ToolResultsCleared)) so a resumed agent rebuilds
//! the same view.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use crate::model::{History, Message, MessageContent, Role, ToolSpec};
use crate::session::{Compaction, Restored, push_user_message_to};

/// What one image is counted as, in tokens (about what a 1,000 × 1,000 pixel image costs).
pub const IMAGE_TOKENS: u64 = 1_600;

/// Results shorter than this many characters are never cleared: the note would save nothing.
pub(crate) const MIN_CLEARED_CHARS: usize = 400;

/// Opens the user message that holds a compaction's summary.
const SUMMARY_HEADER: &str = "[Summary of the earlier conversation, written when it was \
                              compacted to fit the context window. The most recent messages \
                              follow verbatim.]";

/// What the model is asked when the conversation is compacted.
pub(crate) const SUMMARY_INSTRUCTIONS: &str = "The conversation above is about to be compacted to fit \
    the context window: from now on only your summary and the most recent messages will be \
    kept. Write that summary now. Include: the user's goals and requests; the decisions made \
    and why; the files read, created or changed (with their paths) and what matters in them; \
    commands run and their outcomes; errors met and how they were solved; the work still open \
    and the next step. Be specific (names, paths, values) and complete, yet brief. Do not call \
    any tool: answer with the summary text only.";

/// What a [`pre_compact`](super::Hook::pre_compact) hook is told about the compaction about
/// to happen.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompactRequest {
    /// The estimated size of the next request, in tokens.
    pub tokens: u64,
    /// The model's context window, in tokens.
    pub window: u64,
    /// How many messages of the conversation the summary will stand in for.
    pub messages: usize,
    /// Whether the provider already refused the request as too long (vetoing then fails
    /// the run with [`ModelError::PromptTooLong`](crate::model::ModelError::PromptTooLong)).
    pub forced: bool,
}

/// A [`pre_compact`](super::Hook::pre_compact) hook's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompactDecision {
    /// Compact as planned.
    Proceed,
    /// Compact, adding these instructions to the summary request (say what must survive).
    Instruct(String),
    /// Do not compact: the request goes out as it is (tool results may still be cleared).
    Veto,
}

/// The context manager: what stands in for what in the view (a compaction's summary, cleared
/// results), and the measured size of the tool list. One an agent; the driver (`compact.rs`)
/// changes it once each change is stored.
#[derive(Default)]
pub(crate) struct ContextManager {
    view: std::sync::Mutex<ViewState>,
    /// The serialised size of a tool list, for the estimate; the list is kept so that a new
    /// one is told from it.
    tool_chars: std::sync::Mutex<Option<(Arc<[ToolSpec]>, usize)>>,
}

#[derive(Clone, Default)]
pub(crate) struct ViewState {
    pub(crate) compaction: Option<Compaction>,
    pub(crate) cleared: HashSet<String>,
}

impl ContextManager {
    /// Puts a resumed session's compaction and cleared results back, so the resumed agent
    /// sends what the one before it would have.
    pub(crate) fn restore(&self, restored: &Restored) {
        self.update(|state| {
            state.compaction = restored.compaction.clone();
            state.cleared = restored.cleared.iter().cloned().collect();
        });
    }

    /// The view as it stands.
    pub(crate) fn view(&self) -> ViewState {
        self.view.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn update(&self, change: impl FnOnce(&mut ViewState)) {
        change(&mut self.view.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// The estimated size, in tokens, of a request sending `messages` as the view stands,
    /// with a system prompt of `system_chars` and the tools `specs`.
    pub(crate) fn estimate(
        &self,
        messages: &History,
        system_chars: usize,
        specs: Arc<[ToolSpec]>,
    ) -> u64 {
        let view = build_view(messages, &self.view());
        (system_chars + self.tool_chars(specs)) as u64 / 4 + estimate_messages(view.iter())
    }

    /// The size of the tool list as sent, measured once per list (MCP servers change it)
    /// rather than serialised again before every request.
    fn tool_chars(&self, specs: Arc<[ToolSpec]>) -> usize {
        let mut known = self.tool_chars.lock().unwrap_or_else(|p| p.into_inner());
        match &*known {
            Some((measured, chars)) if Arc::ptr_eq(measured, &specs) => *chars,
            _ => {
                let chars = specs
                    .iter()
                    .map(|spec| serde_json::to_string(spec).map_or(0, |json| json.len()))
                    .sum();
                *known = Some((specs, chars));
                chars
            }
        }
    }
}

/// The first message the view sends verbatim: the compaction's cut, when it is still a valid
/// one for these messages.
pub(crate) fn kept_from(messages: &History, view: &ViewState) -> usize {
    match &view.compaction {
        Some(compaction) if is_cut(messages, compaction.first_kept) => compaction.first_kept,
        _ => 0,
    }
}

/// Whether the view may start at message `index`: an assistant message (the results of its
/// calls follow it) or a user message without tool results (a prompt).
fn is_cut(messages: &History, index: usize) -> bool {
    match messages.get(index) {
        Some(message) if message.role == Role::Assistant => true,
        Some(message) => !message
            .content
            .iter()
            .any(|block| matches!(block, MessageContent::ToolResult { .. })),
        None => false,
    }
}

/// Where to cut, after `from` and before the last message: the earliest cut that keeps at
/// most `keep_tokens` verbatim, else the latest cut there is.
pub(crate) fn choose_cut(messages: &History, from: usize, keep_tokens: u64) -> Option<usize> {
    let mut kept = 0;
    let mut best = None;
    for index in (from + 1..messages.len()).rev() {
        kept += estimate_messages(messages.get(index));
        if !is_cut(messages, index) {
            continue;
        }
        if kept > keep_tokens && best.is_some() {
            break;
        }
        best = Some(index);
    }
    best
}

/// The view of `messages`: the summary, then the messages after the cut, cleared results as
/// notes. The messages themselves when nothing stands in for any of them.
pub(crate) fn build_view(messages: &History, view: &ViewState) -> History {
    if view.compaction.is_none() && view.cleared.is_empty() {
        return messages.clone();
    }
    let start = kept_from(messages, view);
    let names: HashMap<&str, &str> = messages
        .iter()
        .flat_map(|message| message.tool_uses())
        .map(|call| (call.id.as_str(), call.name.as_str()))
        .collect();
    let mut out = History::new();
    if let Some(compaction) = view.compaction.as_ref().filter(|_| start > 0) {
        out.push(Message::user(format!(
            "{SUMMARY_HEADER}\n\n{}",
            compaction.summary
        )));
    }
    for message in messages.iter().skip(start) {
        let mut message = message.clone();
        for block in &mut message.content {
            if let MessageContent::ToolResult {
                tool_use_id,
                content,
                ..
            } = block
                && view.cleared.contains(tool_use_id)
            {
                let tool = names.get(tool_use_id.as_str()).copied().unwrap_or("a tool");
                *content = vec![crate::ContentBlock::text(cleared_note(
                    content_chars(content),
                    tool,
                ))];
            }
        }
        match message.role {
            // A prompt after the summary joins it: roles must alternate.
            Role::User => push_user_message_to(&mut out, message),
            Role::Assistant => out.push(message),
        }
    }
    out
}

/// What a cleared result says instead of its content.
fn cleared_note(chars: usize, tool: &str) -> String {
    format!(
        "[cleared to save context: {} chars of output from {tool}; call the tool again if you \
         need it]",
        thousands(chars)
    )
}

/// `12345` as `12,345`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// The characters of a result's content; an image as [`IMAGE_TOKENS`] × 4.
pub(crate) fn content_chars(content: &[crate::ContentBlock]) -> usize {
    content
        .iter()
        .map(|block| match block {
            crate::ContentBlock::Text { text } => text.len(),
            crate::ContentBlock::Image { .. } => IMAGE_TOKENS as usize * 4,
            other => other.readable().map_or(0, |text| text.len()),
        })
        .sum()
}

/// Characters / 4 of `messages` (a few characters of framing per block).
pub(crate) fn estimate_messages<'a>(messages: impl IntoIterator<Item = &'a Message>) -> u64 {
    let chars: usize = messages
        .into_iter()
        .flat_map(|message| &message.content)
        .map(|block| {
            8 + match block {
                MessageContent::Text { text } => text.len(),
                MessageContent::Image { .. } => IMAGE_TOKENS as usize * 4,
                MessageContent::ToolUse(call) => {
                    call.id.len()
                        + call.name.len()
                        + serde_json::to_string(&*call.input.json_or_empty()).map_or(0, |j| j.len())
                }
                MessageContent::ToolResult {
                    tool_use_id,
                    content,
                    ..
                } => tool_use_id.len() + content_chars(content),
                MessageContent::Thinking {
                    thinking,
                    signature,
                } => thinking.len() + signature.len(),
                MessageContent::RedactedThinking { data } => data.len(),
                MessageContent::ThoughtSignature { signature, .. } => signature.len(),
                MessageContent::ProviderItem { item, .. } => item.to_string().len(),
            }
        })
        .sum();
    chars as u64 / 4
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::{ConfigError, ContextSettings};
    use crate::model::ToolUse;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![MessageContent::ToolUse(ToolUse::new(id, "Read", json!({})))],
        }
    }

    fn result(id: &str, chars: usize) -> Message {
        Message {
            role: Role::User,
            content: vec![MessageContent::ToolResult {
                tool_use_id: id.into(),
                content: vec![crate::ContentBlock::text("x".repeat(chars))],
                is_error: false,
            }],
        }
    }

    fn conversation() -> History {
        History::from(vec![
            Message::user("read them"),
            call("a"),
            result("a", 1000),
            call("b"),
            result("b", 1000),
            Message::assistant("done"),
            Message::user("next"),
        ])
    }

    #[test]
    fn cuts_never_land_on_tool_results() {
        let messages = conversation();
        let cuts: Vec<usize> = (0..messages.len())
            .filter(|&i| is_cut(&messages, i))
            .collect();
        assert_eq!(cuts, [0, 1, 3, 5, 6]);
        assert_eq!(choose_cut(&messages, 0, 0), Some(6));
        assert_eq!(choose_cut(&messages, 0, 10_000), Some(1));
        assert_eq!(choose_cut(&messages, 5, 10_000), Some(6));
        assert_eq!(choose_cut(&messages, 6, 10_000), None);
    }

    #[test]
    fn the_view_starts_with_the_summary_and_alternates() {
        let messages = conversation();
        let view = ViewState {
            compaction: Some(Compaction {
                summary: "they were read".into(),
                first_kept: 6,
            }),
            cleared: HashSet::new(),
        };
        let built = build_view(&messages, &view);
        assert_eq!(built.len(), 1, "the prompt after the cut joins the summary");
        assert!(built[0].text().starts_with(SUMMARY_HEADER));
        assert!(built[0].text().ends_with("next"));

        let view = ViewState {
            compaction: Some(Compaction {
                summary: "a was read".into(),
                first_kept: 3,
            }),
            cleared: ["b".to_owned()].into(),
        };
        let built = build_view(&messages, &view);
        let roles: Vec<Role> = built.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [
                Role::User,
                Role::Assistant,
                Role::User,
                Role::Assistant,
                Role::User
            ]
        );
        let MessageContent::ToolResult { content, .. } = &built[2].content[0] else {
            panic!("{:?}", built[2]);
        };
        assert_eq!(
            content,
            &[crate::ContentBlock::text(
                "[cleared to save context: 1,000 chars of output from Read; call the tool \
                 again if you need it]"
            )]
        );
        assert_eq!(messages.len(), 7, "the conversation itself is untouched");
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(12_345), "12,345");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn bad_thresholds_are_explained() {
        let settings = ContextSettings {
            clear_at: 0.9,
            compact_at: 0.8,
            ..ContextSettings::default()
        };
        let problem = settings.problem().unwrap();
        assert!(matches!(
            problem,
            ConfigError::ContextOrder {
                lower: "clear_at",
                upper: "compact_at",
                ..
            }
        ));
        assert!(
            problem
                .to_string()
                .starts_with("[context] clear_at (0.9) must not be above compact_at (0.8)")
        );
        let settings = ContextSettings {
            clear_to: 0.8,
            ..ContextSettings::default()
        };
        assert_eq!(
            settings.problem().unwrap().to_string(),
            "[context] clear_to (0.8) must not be above clear_at (0.7): clearing starts above \
             clear_at and brings the request down to clear_to"
        );
        for (share, value) in [("keep_recent", 0.0), ("clear_to", f64::NAN)] {
            let mut settings = ContextSettings::default();
            match share {
                "keep_recent" => settings.keep_recent = value,
                _ => settings.clear_to = value,
            }
            let problem = settings.problem().unwrap();
            assert!(
                matches!(problem, ConfigError::ContextShare { name, .. } if name == share),
                "{problem}"
            );
            assert!(
                problem
                    .to_string()
                    .contains("must be above 0 and at most 1")
            );
        }
        assert!(ContextSettings::default().problem().is_none());
        // Unmanaged, the shares are not used, so they are not refused.
        let off = ContextSettings {
            clear_at: 2.0,
            ..ContextSettings::default()
        };
        assert!(off.with_compaction(false).problem().is_none());
    }
}
