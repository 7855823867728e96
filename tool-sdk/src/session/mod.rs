//! Durable sessions: a conversation written down as it happens, so that a run killed at any
//! point can be resumed with nothing lost, and forked.
//!
//! A [`SessionStore`] keeps sessions ([`SessionInfo`]) and, for each, the [`Record`]s of what
//! happened, in order: user messages, complete model turns, each tool call's start and its
//! result, permission questions and answers, token usage. The agent appends them as they
//! happen ([`crate::agent::SessionSettings::with_store`]); [`crate::agent::Agent::resume`]
//! turns them back into a conversation ([`stored_conversation`] reads one) and answers the calls a crash left open.
//! Approvals can wait in the store for an answer from another process ([`pending_approvals`],
//! [`answer_approval`]), and file contents are kept for a rewind ([`FileCheckpoints`]).
//!
//! [`SqliteStore`] is the store in the default build: one file, SQLite compiled in.
//! `PostgresStore` (feature `postgres`) keeps sessions in a PostgreSQL database that many
//! processes and machines share; a [`SessionLease`] makes sure only one of them runs a session
//! at a time.
//!
//! ```
//! use tool_sdk::session::{NewSession, Record, SessionStore, SqliteStore};
//! use tool_sdk::model::Message;
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open(dir.path().join("sessions.db")).unwrap();
//! let session = store.create(NewSession::new("/work")).await.unwrap();
//! store.append(&session.id, &Record::user(Message::user("Hello"))).await.unwrap();
//! assert_eq!(store.load(&session.id).await.unwrap().len(), 1);
//! assert_eq!(store.get(&session.id).await.unwrap().title, "Hello");
//! # });
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::BoxFuture;
use crate::model::{Message, MessageContent, Usage};

mod approval;
mod checkpoint;
mod error;
mod files;
mod lease;
#[cfg(feature = "postgres")]
mod postgres;
mod recover;
mod redact;
mod sqlite;

pub use approval::{PendingApproval, answer_approval, answer_elicitation, pending_approvals};
pub(crate) use checkpoint::CallCheckpointer;
pub use checkpoint::{FileCheckpointer, FileCheckpoints, RewindReport};
pub use error::SessionError;
pub(crate) use recover::{Compaction, Restored, push_user_message_to, records_for, restore};
pub use recover::{
    NEVER_STARTED_MESSAGE, STOPPED_MESSAGE, UNREADABLE_PROMPT, conversation, stored_conversation,
};
pub use sqlite::SqliteStore;

pub use lease::SessionLease;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;

/// Where a session stores what happens in it. Object safe: agents hold an
/// `Arc<dyn SessionStore>`, so one store can serve many agents.
///
/// Every method either succeeds or says why in a [`SessionError`]; a store never drops a
/// record silently, and the agent turns a failed append into a run error.
pub trait SessionStore: Send + Sync {
    /// Starts a session and returns it with its new id.
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>>;

    /// Appends one record to the session `id`, after all earlier ones. When it returns `Ok`,
    /// the record is stored as durably as the store documents. The first
    /// [`Record::UserMessage`] of a session with no title gives it its title.
    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>>;

    /// Appends `records` to the session `id`, in order, after all earlier ones: all of them
    /// or, on an error, none (where the store can promise that). The agent hands a step's
    /// records over together (a model turn, its usage and the start of the calls it makes),
    /// so that a store pays one commit for them rather than one each.
    ///
    /// The default appends them one by one: a store that overrides it should commit them in
    /// one transaction.
    fn append_all<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move {
            for record in records {
                self.append(id, record).await?;
            }
            Ok(())
        })
    }

    /// Every record of the session `id`, in the order appended.
    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>>;

    /// What is known about the session `id`.
    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>>;

    /// Every session, the most recently updated first.
    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>>;

    /// Takes the lease of session `id` for `holder` (words that tell a person which process
    /// holds it, e.g. `pid 4242 on build-7`) for `ttl`: only one lease on a session is live at
    /// a time, see [`SessionLease`]. Fails with [`SessionError::Busy`] while another lease is
    /// live, even one of the same holder; an expired lease is taken over.
    ///
    /// The default refuses: a store without leases cannot keep two processes apart.
    fn acquire<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        let _ = (holder, ttl);
        Box::pin(async move { Err(no_leases(id)) })
    }

    /// Extends `lease` by its ttl from now. Fails with [`SessionError::Busy`] or
    /// [`SessionError::LeaseLost`] when it expired and another process took the session since:
    /// its holder must then stop running the session. A lease that expired but was not taken
    /// is renewed (nobody else ran the session meanwhile).
    fn renew<'a>(
        &'a self,
        lease: &'a SessionLease,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        Box::pin(async move { Err(no_leases(lease.session())) })
    }

    /// Gives `lease` up, so that another process may take the session at once. Releasing a
    /// lease that was lost or already released does nothing.
    fn release<'a>(&'a self, lease: &'a SessionLease) -> BoxFuture<'a, Result<(), SessionError>> {
        Box::pin(async move { Err(no_leases(lease.session())) })
    }

    /// [`append_all`](Self::append_all), fenced by `lease`: the records are stored only if
    /// `lease` is still the session's lease, checked in the same transaction as the insert, so
    /// that a holder that stalled past its ttl (and whose session another process took over
    /// since) cannot add a word. Fails with [`SessionError::LeaseLost`] then, storing nothing.
    ///
    /// The default appends without the check: a store that implements leases should override
    /// it (both of this crate's do), or its leases stay advisory.
    fn append_leased<'a>(
        &'a self,
        lease: &'a SessionLease,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        self.append_all(lease.session(), records)
    }

    /// [`acquire`](Self::acquire), also taking the lease over from `dead`, the holder of a
    /// live lease that the caller knows has died (a process of this host that no longer
    /// exists): a lease held by anyone else is [`SessionError::Busy`] as usual. The check and
    /// the taking are one transaction, so a lease renewed or taken meanwhile is left alone.
    ///
    /// The default only acquires: the dead holder's lease is then taken when it expires.
    fn take_over<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
        dead: &'a str,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        let _ = dead;
        self.acquire(id, holder, ttl)
    }
}

fn no_leases(id: &str) -> SessionError {
    SessionError::NoLeases { id: id.to_owned() }
}

impl<T: SessionStore + ?Sized> SessionStore for Arc<T> {
    fn create(&self, new: NewSession) -> BoxFuture<'_, Result<SessionInfo, SessionError>> {
        (**self).create(new)
    }

    fn append<'a>(
        &'a self,
        id: &'a str,
        record: &'a Record,
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        (**self).append(id, record)
    }

    fn append_all<'a>(
        &'a self,
        id: &'a str,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        (**self).append_all(id, records)
    }

    fn load<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<Record>, SessionError>> {
        (**self).load(id)
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<SessionInfo, SessionError>> {
        (**self).get(id)
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<SessionInfo>, SessionError>> {
        (**self).list()
    }

    fn acquire<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        (**self).acquire(id, holder, ttl)
    }

    fn renew<'a>(
        &'a self,
        lease: &'a SessionLease,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        (**self).renew(lease)
    }

    fn release<'a>(&'a self, lease: &'a SessionLease) -> BoxFuture<'a, Result<(), SessionError>> {
        (**self).release(lease)
    }

    fn append_leased<'a>(
        &'a self,
        lease: &'a SessionLease,
        records: &'a [Record],
    ) -> BoxFuture<'a, Result<(), SessionError>> {
        (**self).append_leased(lease, records)
    }

    fn take_over<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        ttl: Duration,
        dead: &'a str,
    ) -> BoxFuture<'a, Result<SessionLease, SessionError>> {
        (**self).take_over(id, holder, ttl, dead)
    }
}

/// What a new session starts with.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NewSession {
    /// Its title; empty means "the first prompt, when it comes".
    pub title: String,
    /// The directory its tools work in.
    pub working_dir: PathBuf,
    /// The session and point it was forked from, if it was.
    pub parent: Option<ForkPoint>,
}

impl NewSession {
    /// A session working in `working_dir`, titled by its first prompt.
    pub fn new(working_dir: impl Into<PathBuf>) -> Self {
        NewSession {
            title: String::new(),
            working_dir: working_dir.into(),
            parent: None,
        }
    }

    /// Sets the title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = title.into();
        self
    }

    /// Marks it as a fork of another session, which must be in the store the session is
    /// created in ([`SessionError::UnknownParent`] otherwise).
    pub fn with_parent(mut self, parent: ForkPoint) -> Self {
        self.parent = Some(parent);
        self
    }
}

/// A stored session.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionInfo {
    /// Its id, chosen by the store.
    pub id: String,
    /// Its first prompt (cut to [`TITLE_CHARS`] characters), or the title it was created with.
    pub title: String,
    /// The directory its tools work in.
    pub working_dir: PathBuf,
    /// When it was created.
    pub created_at: SystemTime,
    /// When a record was last appended (or when it was created).
    pub updated_at: SystemTime,
    /// The session and point it was forked from, if it was.
    pub parent: Option<ForkPoint>,
}

/// Where a fork branched off: the first `at` messages of `session`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkPoint {
    /// The session forked.
    pub session: String,
    /// How many of its messages the fork kept.
    pub at: usize,
}

/// The longest title taken from a first prompt, in characters.
pub const TITLE_CHARS: usize = 120;

/// One thing that happened in a session, appended when it happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Record {
    /// A user message: a prompt (text, images). Appended before the model is asked. When the
    /// conversation already ends with a user message (tool results, or a prompt whose answer
    /// never came), its blocks join that message instead: providers refuse two user messages
    /// in a row.
    UserMessage {
        /// The message.
        message: Message,
    },
    /// A whole assistant turn, appended once it has fully arrived: a turn cut mid-stream is
    /// never stored, so a resumed session asks for it again.
    ModelTurn {
        /// The assistant message, tool calls included.
        message: Message,
    },
    /// A tool call is about to run (its permission granted). Appended before the tool starts,
    /// so that after a crash a call that may have partly happened is told from one that never
    /// ran; except for a read-only call the agent started while its turn was still streaming,
    /// whose records are appended right after that turn's (a read-only call has no effects
    /// to tell apart).
    ToolStarted {
        /// The tool_use id.
        id: String,
        /// The tool.
        name: String,
    },
    /// A tool call's result, appended as soon as the call ends and before the next model
    /// request.
    ToolResult {
        /// The `tool_result` block, whole.
        block: MessageContent,
    },
    /// The user was asked for permission to run a call.
    PermissionAsked {
        /// The tool_use id.
        id: String,
        /// The tool.
        tool: String,
        /// The question's title, as shown to the user.
        title: String,
    },
    /// The user's answer to a permission question.
    PermissionAnswered {
        /// The tool_use id.
        id: String,
        /// Whether the call may run.
        allowed: bool,
        /// Whether similar calls may run for the rest of the session.
        always: bool,
        /// The message sent to the model when the call was refused.
        message: Option<String>,
    },
    /// A running tool asked the user a question ([`ToolContext::elicit`](crate::ToolContext::elicit)).
    ElicitationAsked {
        /// The tool_use id.
        id: String,
        /// The question.
        question: crate::Elicitation,
    },
    /// The user's answer to the call's last [`Record::ElicitationAsked`]. A call that runs again
    /// (after a deferred question) is given its stored answers, in order, instead of asking.
    ElicitationAnswered {
        /// The tool_use id.
        id: String,
        /// The answer.
        answer: crate::ElicitationAnswer,
    },
    /// Tokens used by one model request: a turn, or the summary of a compaction.
    Usage {
        /// The request's usage.
        usage: Usage,
    },
    /// The question just asked about a call (its [`Record::PermissionAsked`], or its tool's
    /// [`Record::ElicitationAsked`]) was not answered by anyone in the process: the agent runs
    /// with [`with_deferred_approvals`](crate::agent::SessionSettings::with_deferred_approvals),
    /// so the run stopped and the question waits for [`answer_approval`] (or
    /// [`answer_elicitation`]). Recovery leaves such a call open instead of sealing it.
    ApprovalDeferred {
        /// The tool_use id.
        id: String,
    },
    /// A file's content, kept once per hash for [`Record::FileCheckpoint`]s to point at.
    FileBlob {
        /// Its SHA-256, in hex.
        hash: String,
        /// The content, in base64 (a file need not be UTF-8).
        data: String,
    },
    /// A tool call is about to change a file (appended before the change): what it held
    /// before, so [`Agent::rewind_files`](crate::agent::Agent::rewind_files) can put it back.
    FileCheckpoint {
        /// The index of the message whose tool call changes it.
        message: usize,
        /// The file.
        path: PathBuf,
        /// The hash of its content before (a [`Record::FileBlob`]); `None`: it did not exist.
        before: Option<String>,
        /// The hash of the content the tool writes, to tell a later change made outside the
        /// agent.
        after: String,
    },
    /// Files were rewound to how they were before message `to`: their checkpoints at or
    /// after it no longer count.
    FilesRewound {
        /// The message rewound to.
        to: usize,
        /// Each file rewound, and the hash of what it now holds (`None`: removed).
        files: std::collections::BTreeMap<PathBuf, Option<String>>,
    },
    /// The conversation was compacted to fit the model's context window: from now on the
    /// model is sent the summary in place of the messages before `first_kept`. The messages
    /// themselves stay in the session (and in [`stored_conversation`]); this only marks what
    /// the model sees, so a resumed agent sends the same requests.
    Compacted {
        /// The model's summary of the messages before `first_kept`.
        summary: String,
        /// The index of the first message still sent verbatim.
        first_kept: usize,
    },
    /// The content of these calls' results was replaced by a short note in what the model is
    /// sent (to save context); the results themselves stay stored whole.
    ToolResultsCleared {
        /// The tool_use ids of the cleared results.
        ids: Vec<String>,
    },
    /// A model request went to a fallback model: `from` failed before it streamed anything,
    /// its retries spent (see
    /// [`ModelSettings::with_fallback_models`](crate::agent::ModelSettings::with_fallback_models)).
    /// The turn `to` served follows, priced at `to`'s price.
    ModelFallback {
        /// The id of the model that failed.
        from: String,
        /// The id of the model that answered instead.
        to: String,
        /// Why `from` failed.
        reason: String,
    },
    /// Never stored: what [`SessionStore::load`] gives in place of a stored record it cannot
    /// read (a damaged body, or a kind written by a newer tool-sdk), so that one bad record
    /// does not make the rest of the session unreadable. A resume leaves it out and says so
    /// in [`Agent::resume_notes`](crate::agent::Agent::resume_notes). The stores of this
    /// crate refuse to append it.
    #[serde(skip)]
    Unreadable {
        /// The record's position in the session.
        seq: i64,
        /// Its kind as stored (`user_message`, `model_turn`...).
        stored_kind: String,
        /// Why it cannot be read.
        detail: String,
    },
}

impl Record {
    /// A user message record.
    pub fn user(message: Message) -> Self {
        Record::UserMessage { message }
    }

    /// A model turn record.
    pub fn model_turn(message: Message) -> Self {
        Record::ModelTurn { message }
    }

    /// The record's kind, as stored: `user_message`, `model_turn`, `tool_started`...
    pub fn kind(&self) -> &'static str {
        match self {
            Record::UserMessage { .. } => "user_message",
            Record::ModelTurn { .. } => "model_turn",
            Record::ToolStarted { .. } => "tool_started",
            Record::ToolResult { .. } => "tool_result",
            Record::PermissionAsked { .. } => "permission_asked",
            Record::PermissionAnswered { .. } => "permission_answered",
            Record::ElicitationAsked { .. } => "elicitation_asked",
            Record::ElicitationAnswered { .. } => "elicitation_answered",
            Record::Usage { .. } => "usage",
            Record::ApprovalDeferred { .. } => "approval_deferred",
            Record::FileBlob { .. } => "file_blob",
            Record::FileCheckpoint { .. } => "file_checkpoint",
            Record::FilesRewound { .. } => "files_rewound",
            Record::Compacted { .. } => "compacted",
            Record::ToolResultsCleared { .. } => "tool_results_cleared",
            Record::ModelFallback { .. } => "model_fallback",
            Record::Unreadable { .. } => "unreadable",
        }
    }
}

/// A record read back from its stored `body`, or, when it cannot be read, a
/// [`Record::Unreadable`] standing in for it: the rest of the session stays readable.
pub(crate) fn read_record(id: &str, seq: i64, kind: &str, body: &str) -> Record {
    serde_json::from_str(body).unwrap_or_else(|error| unreadable(id, seq, kind, error.to_string()))
}

/// The [`Record::Unreadable`] for record `seq` of session `id`, with a warning.
pub(crate) fn unreadable(id: &str, seq: i64, kind: &str, detail: String) -> Record {
    tracing::warn!(session = id, seq, kind, %detail, "a stored record cannot be read; it is skipped");
    Record::Unreadable {
        seq,
        stored_kind: kind.to_owned(),
        detail,
    }
}

/// The title a first prompt gives a session: its first line, cut to [`TITLE_CHARS`].
pub(crate) fn title_of(message: &Message) -> String {
    let text = message.text();
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    line.trim().chars().take(TITLE_CHARS).collect()
}

/// Opens the store a config file names: `sqlite:PATH` (a relative path is taken from the
/// current directory), or with the `postgres` feature a `postgres://` or `postgresql://` URL.
/// A PostgreSQL store connects on first use (this function is not async), so a server that
/// cannot be reached is reported by the first call on the store.
pub fn open_store(spec: &str) -> Result<Arc<dyn SessionStore>, SessionError> {
    match spec.split_once(':') {
        Some(("sqlite", path)) if !path.is_empty() => Ok(Arc::new(SqliteStore::open(path)?)),
        #[cfg(feature = "postgres")]
        Some(("postgres" | "postgresql", _)) => Ok(Arc::new(PostgresStore::lazy(spec)?)),
        _ => Err(SessionError::UnknownStore(redact::redact_password(spec))),
    }
}
