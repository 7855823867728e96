//! Hooks around a run, beside the tool hooks of the permission gate
//! ([`PreToolUse`](crate::PreToolUse), [`PostToolUse`](crate::PostToolUse)): a prompt as it is
//! submitted, the model stopping (the agent's and a sub-agent's), the session starting and
//! ending, and a compaction about to happen ([`PreCompact`](super::PreCompact), beside the
//! compaction it sees). Each is a small trait with one async method; a plain closure
//! implements it.
//!
//! ```
//! use tool_sdk::agent::{AgentConfig, PromptCheck, StopCheck, StopContext};
//!
//! let config = AgentConfig::new()
//!     .with_user_prompt_submit(|prompt: &str| match prompt.contains("password") {
//!         true => PromptCheck::Block("prompts must not carry secrets".into()),
//!         false => PromptCheck::AddContext("Today is Monday.".into()),
//!     })
//!     .with_stop_hook(|stop: &StopContext<'_>| match stop.text.contains("TODO") {
//!         true => StopCheck::Continue("Finish the TODOs first.".into()),
//!         false => StopCheck::Stop,
//!     });
//! # let _ = config;
//! ```

use std::sync::Arc;

use crate::{AgentId, BoxFuture};

/// What a [`UserPromptSubmit`] hook says about a prompt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PromptCheck {
    /// Send it as it is.
    Continue,
    /// Send it with this text after it, in the same user message (and in the session).
    AddContext(String),
    /// Do not send it: the run fails with [`AgentError::PromptBlocked`](super::AgentError)
    /// carrying this reason, and nothing of the prompt is stored.
    Block(String),
}

/// Sees each prompt before the model or the session does.
pub trait UserPromptSubmit: Send + Sync {
    /// Decides about one prompt.
    fn check<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, PromptCheck>;
}

impl<F> UserPromptSubmit for F
where
    F: Fn(&str) -> PromptCheck + Send + Sync,
{
    fn check<'a>(&'a self, prompt: &'a str) -> BoxFuture<'a, PromptCheck> {
        Box::pin(std::future::ready(self(prompt)))
    }
}

/// The model has stopped: what a [`StopHook`] is shown.
#[derive(Debug)]
#[non_exhaustive]
pub struct StopContext<'a> {
    /// Which agent stopped: [`AgentId::Main`], or the sub-agent a Task call ran.
    pub agent: &'a AgentId,
    /// The model's last text.
    pub text: &'a str,
    /// How many times hooks already sent this run on; the agent stops asking at
    /// [`AgentConfig::with_max_stop_continuations`](super::AgentConfig::with_max_stop_continuations).
    pub continued: u32,
}

/// What a [`StopHook`] says when the model stops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopCheck {
    /// Let the run end.
    Stop,
    /// Send this to the model as a user message and go on.
    Continue(String),
}

/// Sees the model stop (no tool calls in its turn) and may send the run on, a bounded number
/// of times. Added with [`with_stop_hook`](super::AgentConfig::with_stop_hook) for the agent,
/// or [`with_subagent_stop`](super::AgentConfig::with_subagent_stop) for the sub-agents its
/// Task calls run.
pub trait StopHook: Send + Sync {
    /// Decides whether the run ends.
    fn check<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck>;
}

impl<F> StopHook for F
where
    F: Fn(&StopContext<'_>) -> StopCheck + Send + Sync,
{
    fn check<'a>(&'a self, stop: &'a StopContext<'a>) -> BoxFuture<'a, StopCheck> {
        Box::pin(std::future::ready(self(stop)))
    }
}

/// Why a session started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionSource {
    /// A new conversation's first run.
    Startup,
    /// The first run after [`Agent::resume`](super::Agent::resume).
    Resume,
}

/// A session's start or end, as a [`SessionHook`] sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionEvent<'a> {
    /// Before the first run of an agent does anything.
    Start {
        /// The session's id, when the agent has a store.
        session_id: Option<&'a str>,
        /// New or resumed.
        source: SessionSource,
    },
    /// [`Agent::close`](super::Agent::close) was called.
    End {
        /// The session's id, when the agent has a store.
        session_id: Option<&'a str>,
    },
}

/// Sees sessions start and end (for setup, logging, cleanup).
pub trait SessionHook: Send + Sync {
    /// Called once per event; the run waits for it.
    fn on_event<'a>(&'a self, event: SessionEvent<'a>) -> BoxFuture<'a, ()>;
}

impl<F> SessionHook for F
where
    F: Fn(SessionEvent<'_>) + Send + Sync,
{
    fn on_event<'a>(&'a self, event: SessionEvent<'a>) -> BoxFuture<'a, ()> {
        self(event);
        Box::pin(std::future::ready(()))
    }
}

/// The run hooks of one config.
#[derive(Clone)]
pub(crate) struct RunHooks {
    pub(crate) prompt: Vec<Arc<dyn UserPromptSubmit>>,
    pub(crate) stop: Vec<Arc<dyn StopHook>>,
    pub(crate) subagent_stop: Vec<Arc<dyn StopHook>>,
    pub(crate) session: Vec<Arc<dyn SessionHook>>,
    /// Before a compaction (`context.rs`, where the trait lives beside what it sees).
    pub(crate) pre_compact: Vec<Arc<dyn super::context::PreCompact>>,
    pub(crate) max_stop_continuations: u32,
}

impl Default for RunHooks {
    fn default() -> Self {
        RunHooks {
            prompt: Vec::new(),
            stop: Vec::new(),
            subagent_stop: Vec::new(),
            session: Vec::new(),
            pre_compact: Vec::new(),
            max_stop_continuations: 3,
        }
    }
}

impl RunHooks {
    /// Runs the prompt hooks in order: the first block wins; contexts add up.
    pub(crate) async fn check_prompt(&self, prompt: &str) -> Result<Vec<String>, String> {
        let mut contexts = Vec::new();
        for hook in &self.prompt {
            match hook.check(prompt).await {
                PromptCheck::Continue => {}
                PromptCheck::AddContext(context) => contexts.push(context),
                PromptCheck::Block(reason) => return Err(reason),
            }
        }
        Ok(contexts)
    }

    /// Runs the stop hooks in order, unless the bound is reached: the first that sends the
    /// run on wins.
    pub(crate) async fn check_stop(&self, stop: &StopContext<'_>) -> Option<String> {
        if stop.continued >= self.max_stop_continuations {
            return None;
        }
        for hook in &self.stop {
            if let StopCheck::Continue(message) = hook.check(stop).await {
                return Some(message);
            }
        }
        None
    }

    pub(crate) async fn session_event(&self, event: SessionEvent<'_>) {
        for hook in &self.session {
            hook.on_event(event).await;
        }
    }
}
