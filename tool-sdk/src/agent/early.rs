//! Read-only calls started while the model is still streaming its turn.
//!
//! A model that sends [`ModelEvent::ToolUseCompleted`](crate::model::ModelEvent) lets a call
//! start as soon as its tool_use block has wholly arrived. [`EarlyCalls`] starts those that
//! would run in the turn's first batch anyway: read-only calls (as the executor judges them)
//! before the first call that is not, at most `max_concurrent_tools` at once. Everything
//! else waits for the whole turn and runs as before, so mutating calls keep their barrier and
//! their order, and results keep tool_use order.
//!
//! The session: an early call's records (its start, permission question and answer, result)
//! are held in a [`Journal`] until the model turn they belong to is staged, then staged in
//! the order they came behind it, and stored at once after that (which takes the staged ones
//! along). A crash mid-stream therefore stores nothing of the turn (resuming asks for it
//! again; a read-only call running twice is harmless). If the stream fails or the run is
//! cancelled, the early calls are cancelled and awaited (each ends with its own
//! `ToolFailed`/`ToolCompleted` event) and the turn is dropped, tool_use blocks and all, as a
//! turn cut off mid-stream always was: no tool_use is left without its result.
//!
//! Not with deferred approvals: a deferred question stops the turn's calls, which must then
//! wait for the stored turn.

use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use tokio_util::sync::CancellationToken;

use super::events::Emit;
use super::executor::{self, Outcome};
use super::inner::AgentInner;
use super::recorder::Journal;
use super::step::{self, FlushPoint};
use crate::AgentId;
use crate::model::{OutputFormat, ToolUse};
use crate::tool::BoxFuture;

/// The calls of one turn started before the turn had wholly arrived.
pub(crate) struct EarlyCalls<'a> {
    agent: &'a Arc<AgentInner>,
    emit: &'a Emit,
    run_cancel: &'a CancellationToken,
    /// The index the turn's assistant message will have: file checkpoints are made at it.
    message_index: usize,
    /// Whether a call may still start early: no call so far had to wait.
    open: bool,
    /// Calls of the turn in the order their blocks started (or completed, when the model does
    /// not say when they start).
    announced: Vec<String>,
    /// Ids of the calls started early, in order.
    started: Vec<String>,
    /// Set up when the first call starts.
    live: Option<Live<'a>>,
}

struct Live<'a> {
    cancel: CancellationToken,
    journal: Arc<Journal>,
    running: FuturesUnordered<BoxFuture<'a, Outcome>>,
    done: Vec<Outcome>,
}

impl<'a> EarlyCalls<'a> {
    /// Ready for a turn whose assistant message will be message `message_index`.
    pub(crate) fn new(
        agent: &'a Arc<AgentInner>,
        emit: &'a Emit,
        run_cancel: &'a CancellationToken,
        message_index: usize,
    ) -> Self {
        EarlyCalls {
            agent,
            emit,
            run_cancel,
            message_index,
            open: !agent.config.session.defer_approvals,
            announced: Vec::new(),
            started: Vec::new(),
            live: None,
        }
    }

    /// A tool_use block has started streaming.
    pub(crate) fn announce(&mut self, id: &str) {
        if !self.announced.iter().any(|known| known == id) {
            self.announced.push(id.to_owned());
        }
    }

    /// A tool_use block has wholly arrived: starts the call when it may start early.
    pub(crate) fn offer(&mut self, call: ToolUse) {
        if !self.open {
            return;
        }
        if call.name == OutputFormat::TOOL_NAME {
            // A typed answer is taken from the whole turn.
            self.open = false;
            return;
        }
        self.announce(&call.id);
        let limit = self.agent.config.limits.max_concurrent_tools.max(1);
        let running = self.live.as_ref().map_or(0, |live| live.running.len());
        let concurrent = executor::runs_concurrently(self.agent, &call);
        let (announced, started) = (&self.announced, self.started.len());
        if !step::starts_early(announced, started, &call.id, running, limit, concurrent) {
            // From here on, calls wait for the whole turn.
            self.open = false;
            return;
        }
        let live = self.live.get_or_insert_with(|| {
            if self.agent.agent_id == AgentId::Main {
                self.agent
                    .call_message
                    .store(self.message_index, std::sync::atomic::Ordering::Relaxed);
            }
            Live {
                cancel: self.run_cancel.child_token(),
                journal: Arc::new(Journal::holding()),
                running: FuturesUnordered::new(),
                done: Vec::new(),
            }
        });
        self.started.push(call.id.clone());
        let (agent, emit) = (self.agent, self.emit);
        let cancel = live.cancel.clone();
        let journal = live.journal.clone();
        live.running.push(Box::pin(async move {
            executor::run_one_held(agent, &call, emit, &cancel, &journal).await
        }));
    }

    /// Whether calls are running.
    pub(crate) fn is_running(&self) -> bool {
        self.live
            .as_ref()
            .is_some_and(|live| !live.running.is_empty())
    }

    /// Waits for one running call to end (pending forever when none runs: check
    /// [`is_running`](Self::is_running) first).
    pub(crate) async fn next_done(&mut self) {
        let Some(live) = &mut self.live else {
            return std::future::pending().await;
        };
        match live.running.next().await {
            Some(outcome) => live.done.push(outcome),
            None => std::future::pending().await,
        }
    }

    /// The ids of the calls started early.
    pub(crate) fn started(&self) -> &[String] {
        &self.started
    }

    /// The turn is staged: stages the held records behind it, then waits for every early
    /// call. They go to the store as a read-only batch's starts do: with the next record, or
    /// after [`READ_ONLY_COMMIT_DELAY`](step::READ_ONLY_COMMIT_DELAY). A record that
    /// cannot be stored is reported on the first outcome (which ends the run once every call
    /// is answered).
    pub(crate) async fn finish(self) -> Vec<Outcome> {
        let Some(live) = self.live else {
            return Vec::new();
        };
        let Live {
            journal,
            mut running,
            mut done,
            ..
        } = live;
        journal.release(&self.agent.recorder).await;
        let rest = async move {
            while let Some(outcome) = running.next().await {
                done.push(outcome);
            }
            done
        };
        executor::stored_while(self.agent, FlushPoint::EarlyCalls, rest).await
    }

    /// The turn will not be kept (the stream failed, the run was cancelled, the turn could
    /// not be stored): cancels the early calls, waits for them to end, and drops their
    /// results and held records.
    pub(crate) async fn abandon(self) {
        let Some(mut live) = self.live else {
            return;
        };
        live.cancel.cancel();
        while live.running.next().await.is_some() {}
    }
}
