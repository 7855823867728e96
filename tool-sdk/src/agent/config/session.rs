//! `config.session`: where the conversation is kept, and who may run it.

use std::sync::Arc;
use std::time::Duration;

use crate::agent::{AgentError, ConfigError};
use crate::session::{SessionStore, open_store};

/// Where the conversation is kept durably: the `[session]` table of a config file.
///
/// ```
/// use std::time::Duration;
/// use tool_sdk::agent::{AgentConfig, SessionLeasing};
///
/// let config = AgentConfig::new().session(|session| {
///     session
///         .with_store("sqlite::memory:")
///         .with_lease(SessionLeasing::Ttl(Duration::from_secs(10)))
/// });
/// assert!(config.session.store.is_some());
/// ```
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct SessionSettings {
    /// The store (`store = "sqlite:PATH"` in a file); `None` keeps the conversation in memory
    /// only. See [`with_store`](Self::with_store).
    pub store: Option<StoreSource>,
    /// Whether the agent takes the session's lease (`lease_secs` in a file: absent for the
    /// default, seconds for a ttl of one's own, `0` for none). See [`SessionLeasing`].
    pub lease: SessionLeasing,
    /// Permission questions wait in the store for an answer instead of being asked
    /// (`defer_approvals` in a file): see [`with_deferred_approvals`](Self::with_deferred_approvals).
    pub defer_approvals: bool,
}

/// A session store, or where to open one: what [`SessionSettings::with_store`] takes (a
/// store, an `Arc` of one such as an `Arc<dyn SessionStore>` shared by many agents, or a
/// spec such as `"sqlite:sessions.db"`).
#[derive(Clone)]
pub enum StoreSource {
    /// Opened when the agent is created: `sqlite:PATH` (a relative path is taken from the
    /// current directory) or, with the `postgres` feature, `postgres://...`.
    Spec(String),
    /// A store.
    Store(Arc<dyn SessionStore>),
}

impl std::fmt::Debug for StoreSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreSource::Spec(spec) => write!(f, "Spec({spec:?})"),
            StoreSource::Store(_) => f.write_str("Store(..)"),
        }
    }
}

impl From<&str> for StoreSource {
    fn from(spec: &str) -> Self {
        StoreSource::Spec(spec.to_owned())
    }
}

impl From<String> for StoreSource {
    fn from(spec: String) -> Self {
        StoreSource::Spec(spec)
    }
}

impl<S: SessionStore + 'static> From<S> for StoreSource {
    fn from(store: S) -> Self {
        StoreSource::Store(Arc::new(store))
    }
}

/// Whether an agent with a session store takes its session's lease
/// ([`SessionLease`](crate::session::SessionLease)), so that two processes never run one
/// session at once: the second is refused with
/// [`SessionError::Busy`](crate::session::SessionError::Busy), which names the holder.
///
/// The lease is renewed every third of its ttl while the agent lives and released when it is
/// dropped. A holder that died on this host (its process is gone) is taken over at once; one
/// on another host, `ttl` after its last renewal. A holder that stalled past its ttl and
/// found its session taken over cannot store another record (every append checks the lease
/// in its own transaction), so its run stops before its next tool call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SessionLeasing {
    /// A lease of [`SessionLeasing::DEFAULT_TTL`] when the store has leases (both of this
    /// crate's do); with a store that has none, the agent runs without one.
    #[default]
    Auto,
    /// A lease of this ttl (a few seconds or more); a store without leases is an error.
    Ttl(Duration),
    /// No lease: two processes may then run one session at once and interleave their
    /// records, so only for apps that keep them apart themselves.
    Off,
}

impl SessionLeasing {
    /// The ttl of [`SessionLeasing::Auto`]'s lease: long enough for a stalled database or a
    /// busy machine, short enough that a crash on another host holds the session up briefly.
    pub const DEFAULT_TTL: Duration = Duration::from_secs(30);

    pub(crate) fn is_auto(&self) -> bool {
        *self == SessionLeasing::Auto
    }
}

impl SessionSettings {
    /// Keeps the conversation in `store` as it happens, so that it can be resumed after a
    /// crash ([`Agent::resume`](crate::agent::Agent::resume)) or forked
    /// ([`Agent::fork`](crate::agent::Agent::fork)).
    pub fn with_store(mut self, store: impl Into<StoreSource>) -> Self {
        self.store = Some(store.into());
        self
    }

    /// Sets whether and how the session's lease is taken. Creating, resuming or forking the
    /// agent takes it (see [`SessionLease`](crate::session::SessionLease)); another agent, in
    /// this process or another (on another machine, with a shared PostgreSQL store), is
    /// refused with [`SessionError::Busy`](crate::session::SessionError::Busy) until it is
    /// released; if this process dies, the session can be taken at once from this host, and
    /// `ttl` after the last renewal from another. A lease that is lost (the process stalled
    /// past `ttl` and another took over) stops the run before it stores anything more.
    pub fn with_lease(mut self, lease: SessionLeasing) -> Self {
        self.lease = lease;
        self
    }

    /// Makes a run that needs a permission answer stop instead of waiting for one, so the
    /// answer can come later, from another process or machine: the human-in-the-loop of a
    /// web app. The question is stored, the run's calls after it wait too, and the run ends
    /// with [`AgentError::ApprovalsPending`] listing the questions. Then, with the same
    /// store, maybe after [`Agent::resume`](crate::agent::Agent::resume):
    /// [`Agent::pending_approvals`](crate::agent::Agent::pending_approvals) (or
    /// [`session::pending_approvals`](crate::session::pending_approvals)),
    /// [`Agent::answer_approval`](crate::agent::Agent::answer_approval) for each, and
    /// [`Agent::continue_run`](crate::agent::Agent::continue_run): allowed calls run, refused
    /// ones get the refusal as an error result, and the model is asked again.
    ///
    /// Needs a session store. A [permission handler](super::PermissionSettings::with_handler),
    /// when set, is asked instead and nothing is deferred. Sub-agents (the Task tool) do not
    /// defer: their questions go to the handler or the event stream as without this option.
    pub fn with_deferred_approvals(mut self) -> Self {
        self.defer_approvals = true;
        self
    }

    /// A mistake in the settings, said so that it can be fixed.
    pub(crate) fn problem(&self) -> Option<ConfigError> {
        match self.lease {
            SessionLeasing::Ttl(ttl) if ttl.is_zero() => Some(ConfigError::ZeroLease),
            _ => None,
        }
    }

    /// The store, opened if need be; `None` without one.
    pub(crate) fn resolve_store(&self) -> Result<Option<Arc<dyn SessionStore>>, AgentError> {
        match &self.store {
            Some(StoreSource::Store(store)) => Ok(Some(store.clone())),
            Some(StoreSource::Spec(spec)) => Ok(Some(open_store(spec)?)),
            None => Ok(None),
        }
    }
}
