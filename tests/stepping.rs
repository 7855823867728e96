//! A model that works through numbered steps, each a read-only call and a mutating one that
//! leaves a visible mark, for the fault tests of sessions (`session_faults.rs`,
//! `postgres.rs`): a call run twice shows as a step noted twice, one never run as a gap.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tool_sdk::model::{Message, MessageContent, ModelRequest, Role, ScriptedModel, ScriptedTurn};
use tool_sdk::session::STOPPED_MESSAGE;
use tool_sdk::{ContentBlock, ToolRegistry, tool};

/// Appends `step` as a line to `side_effect` in `dir`: a mutating call whose every run shows.
#[tool(register = false)]
pub async fn note_step(dir: String, step: usize) -> String {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PathBuf::from(dir).join("side_effect"))
        .expect("the side-effect file opens");
    writeln!(file, "{step}").expect("the side effect is written");
    format!("noted {step}")
}

/// Reads nothing, quickly.
#[tool(register = false, read_only)]
pub async fn look() -> String {
    "looked".to_owned()
}

/// The stepping tools: `look` and `note_step`.
pub fn registry() -> Arc<ToolRegistry> {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(NoteStepTool)).unwrap();
    registry.register(Arc::new(LookTool)).unwrap();
    Arc::new(registry)
}

/// A model that acts on the conversation it is sent, as a real one would: its next step is
/// the number of steps noted so far (a note whose result says it ran, or may have partly
/// happened); it reads, then notes that step; after `steps` steps it answers. A call that
/// did not run is asked for again; a turn the store lost is asked for again with the same
/// step. So a call run twice shows as a step noted twice, and one never run as a gap.
pub fn stepping_model(dir: &Path, steps: usize) -> ScriptedModel {
    let dir = dir.to_path_buf();
    ScriptedModel::new([]).with_responder(move |request| step_turn(&dir, steps, request))
}

/// The stepping model's answer to `request`.
pub fn step_turn(dir: &Path, steps: usize, request: &ModelRequest) -> ScriptedTurn {
    let step = steps_done(request.messages.iter());
    if step >= steps {
        return ScriptedTurn::text("All noted.");
    }
    // Ids stay unique when a step is asked for again after a call that did not run.
    let turn = request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count();
    ScriptedTurn::tool_call_with_id(format!("look_{turn}"), "look", json!({})).with_tool_call_id(
        format!("note_{turn}"),
        "note_step",
        json!({"dir": dir, "step": step}),
    )
}

/// How many note calls ran (by their results) in `messages`.
pub fn steps_done<'a>(messages: impl IntoIterator<Item = &'a Message>) -> usize {
    messages
        .into_iter()
        .flat_map(|m| &m.content)
        .filter(|block| match block {
            MessageContent::ToolResult {
                tool_use_id,
                content,
                ..
            } if tool_use_id.starts_with("note_") => content.iter().any(|c| {
                matches!(c, ContentBlock::Text { text }
                    if text.starts_with("noted ") || text.contains(STOPPED_MESSAGE))
            }),
            _ => false,
        })
        .count()
}

/// The steps noted, in the order they ran.
pub fn noted(dir: &Path) -> Vec<usize> {
    std::fs::read_to_string(dir.join("side_effect"))
        .unwrap_or_default()
        .lines()
        .map(|line| line.parse().unwrap())
        .collect()
}

/// Fails unless `noted` holds each of the `steps` steps exactly once.
pub fn assert_each_ran_once(noted: &[usize], steps: usize, what: &str) {
    let mut sorted = noted.to_vec();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..steps).collect::<Vec<_>>(),
        "{what}: every step's mutating call ran exactly once (ran: {noted:?})"
    );
}
