//! `--temporal ADDRESS`: where the coder's set-up hands over to `temporal.rs` (built with the
//! `temporal` feature), or says how to build it.

use std::process::ExitCode;

use tool_sdk::agent::AgentConfig;
use tool_sdk::model::Model;
use tool_sdk::session::SqliteStore;

use crate::Args;
#[cfg(feature = "temporal")]
use crate::{LineReader, cancel_on_ctrl_c, resume_id, temporal};

/// What `--temporal` starts from: the coder's set-up, before any agent is made.
// Without the `temporal` feature only its refusal is built, which reads none of it.
#[cfg_attr(not(feature = "temporal"), allow(dead_code))]
pub struct TemporalStart<'a> {
    pub args: &'a Args,
    pub address: &'a str,
    pub config: AgentConfig,
    pub store: Option<SqliteStore>,
    pub cwd: &'a std::path::Path,
    pub demo: bool,
    pub scratch_note: Option<String>,
    pub model: &'a dyn Model,
}

/// `--temporal`: the prompts as runs on a Temporal server.
#[cfg(feature = "temporal")]
pub async fn on_temporal(start: TemporalStart<'_>) -> Result<ExitCode, String> {
    let TemporalStart {
        args,
        address,
        config,
        store,
        cwd,
        demo,
        scratch_note,
        model,
    } = start;
    let store = store.ok_or(
        "--temporal keeps the conversation in the session file, which could not be opened (see \
         above)",
    )?;
    let on = temporal::Temporal {
        address,
        task_queue: &args.task_queue,
        worker: !args.no_worker,
    };
    if args.worker {
        return temporal::worker_only(&on, config, store).await;
    }
    let input = match &args.print {
        None => Some(LineReader::new().map_err(|e| format!("cannot read the terminal: {e}"))?),
        Some(_) => None,
    };
    let resume = resume_id(args, Some(&store), input.as_ref(), cwd).await?;
    let current_turn = cancel_on_ctrl_c();
    let session = temporal::Session {
        cwd,
        input: input.as_ref(),
        current_turn: &current_turn,
        resume,
        print: args.print.as_deref(),
        demo,
        scratch_note: scratch_note.as_deref(),
        model_id: model.model_id(),
    };
    temporal::talk(&on, config, store, session).await
}

/// `--temporal` in a coder built without the `temporal` feature.
#[cfg(not(feature = "temporal"))]
pub async fn on_temporal(_: TemporalStart<'_>) -> Result<ExitCode, String> {
    Err(format!(
        "this coder was built without Temporal: run `cargo run --example coder --features \
         temporal -- {}`",
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    ))
}
