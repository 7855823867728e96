//! File checkpoints: the content each file had before the agent's tools changed it, so that
//! [`Agent::rewind_files`](crate::agent::Agent::rewind_files) can put the files back.
//!
//! Write, Edit and NotebookEdit call the [`FileCheckpointer`] of their
//! [`ToolContext`](crate::ToolContext) before they change a file. The agent's
//! ([`FileCheckpoints`]) keeps, per change, the message whose tool call made it, the hash of the
//! content before (`None`: the file did not exist) and of the content written. Contents are
//! kept once per hash (SHA-256), however many times they come back.
//!
//! With a session store they are records of the session, appended before the file changes
//! ([`Record::FileBlob`], [`Record::FileCheckpoint`], and [`Record::FilesRewound`] after a
//! rewind), so a resumed agent can rewind what an earlier process did. Without one they live
//! in memory, for the life of the agent. Either way the contents are also held in memory once
//! loaded.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::{Record, SessionError, SessionStore};
pub use crate::tool::FileCheckpointer;

/// What [`Agent::rewind_files`](crate::agent::Agent::rewind_files) did, file by file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RewindReport {
    /// Files given back the content they had before the message.
    pub restored: Vec<PathBuf>,
    /// Files the agent created at or after the message, removed.
    pub removed: Vec<PathBuf>,
    /// Files that already had the content they had before the message.
    pub unchanged: Vec<PathBuf>,
    /// Files changed by someone else since the agent last wrote them, left as they are (a
    /// forced rewind overwrites them).
    pub changed_outside: Vec<PathBuf>,
    /// Files that could not be put back, and why.
    pub failed: Vec<(PathBuf, String)>,
}

/// One change of one file.
#[derive(Clone, Debug)]
struct Checkpoint {
    message: usize,
    path: PathBuf,
    before: Option<String>,
}

#[derive(Default)]
struct State {
    checkpoints: Vec<Checkpoint>,
    /// What the agent last put in each file (its hash; `None`: removed by a rewind).
    last_written: HashMap<PathBuf, Option<String>>,
    /// Contents by hash.
    blobs: HashMap<String, Vec<u8>>,
}

impl State {
    fn apply(&mut self, record: &Record) {
        match record {
            Record::FileBlob { hash, data } => {
                match base64::engine::general_purpose::STANDARD.decode(data) {
                    Ok(bytes) => {
                        self.blobs.insert(hash.clone(), bytes);
                    }
                    // Rewinding the file reports the missing content by name.
                    Err(error) => tracing::warn!(%hash, %error, "a stored file content is damaged"),
                }
            }
            Record::FileCheckpoint {
                message,
                path,
                before,
                after,
            } => {
                self.checkpoints.push(Checkpoint {
                    message: *message,
                    path: path.clone(),
                    before: before.clone(),
                });
                self.last_written.insert(path.clone(), Some(after.clone()));
            }
            Record::FilesRewound { to, files } => {
                self.checkpoints
                    .retain(|c| c.message < *to || !files.contains_key(&c.path));
                for (path, hash) in files {
                    self.last_written.insert(path.clone(), hash.clone());
                }
            }
            _ => {}
        }
    }
}

/// An agent's file checkpoints: in memory, and in its session when it has a store. See the
/// module docs.
pub struct FileCheckpoints {
    state: Mutex<State>,
    store: Option<(Arc<dyn SessionStore>, Arc<str>)>,
}

impl std::fmt::Debug for FileCheckpoints {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileCheckpoints")
            .field("stored", &self.store.is_some())
            .finish_non_exhaustive()
    }
}

impl FileCheckpoints {
    /// Checkpoints kept in memory only.
    pub fn in_memory() -> Self {
        FileCheckpoints {
            state: Mutex::default(),
            store: None,
        }
    }

    /// Checkpoints of the session `id`, stored there, starting from those in `records` (the
    /// session's records as loaded).
    pub fn stored(store: Arc<dyn SessionStore>, id: Arc<str>, records: &[Record]) -> Self {
        let mut state = State::default();
        for record in records {
            state.apply(record);
        }
        FileCheckpoints {
            state: Mutex::new(state),
            store: Some((store, id)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Notes that the tool call of `message` is about to change `path` from `previous` to
    /// `new`; stored before it returns. It blocks on the store, which is only allowed on a
    /// blocking thread of a Tokio runtime (where the file tools run): hence not public.
    pub(crate) fn record_change(
        &self,
        message: usize,
        path: &Path,
        previous: Option<&[u8]>,
        new: &[u8],
    ) -> Result<(), SessionError> {
        let before = previous.map(hash);
        let mut records = Vec::with_capacity(2);
        // Held while storing: two changes at once could both store the same content.
        let mut state = self.lock();
        if let (Some(hash), Some(bytes)) = (&before, previous)
            && !state.blobs.contains_key(hash)
        {
            records.push(Record::FileBlob {
                hash: hash.clone(),
                data: base64::engine::general_purpose::STANDARD.encode(bytes),
            });
        }
        records.push(Record::FileCheckpoint {
            message,
            path: path.to_path_buf(),
            before,
            after: hash(new),
        });
        if let Some((store, id)) = &self.store {
            let runtime = tokio::runtime::Handle::try_current().map_err(|error| {
                SessionError::storage_from(
                    "a file checkpoint needs a Tokio runtime to reach the session store",
                    error,
                )
            })?;
            for record in &records {
                runtime.block_on(store.append(id, record))?;
            }
        }
        if let Some(bytes) = previous
            && let Some(Record::FileBlob { hash, .. }) = records.first()
        {
            state.blobs.insert(hash.clone(), bytes.to_vec());
        }
        for record in records
            .iter()
            .filter(|r| !matches!(r, Record::FileBlob { .. }))
        {
            state.apply(record);
        }
        Ok(())
    }

    /// Puts every file changed at or after message `to` back as it was before that message;
    /// with `force`, also files changed outside the agent since it last wrote them. What
    /// [`Agent::rewind_files`](crate::agent::Agent::rewind_files) does; usable without an
    /// agent on [`stored`](Self::stored) checkpoints.
    pub async fn rewind(&self, to: usize, force: bool) -> Result<RewindReport, SessionError> {
        let mut report = RewindReport::default();
        let plan: Vec<Step> = {
            let state = self.lock();
            let mut seen = Vec::<&Path>::new();
            let mut plan = Vec::new();
            for checkpoint in state.checkpoints.iter().filter(|c| c.message >= to) {
                if seen.contains(&checkpoint.path.as_path()) {
                    continue;
                }
                seen.push(&checkpoint.path);
                let content = checkpoint
                    .before
                    .as_ref()
                    .and_then(|h| state.blobs.get(h).cloned());
                plan.push(Step {
                    path: checkpoint.path.clone(),
                    target: checkpoint.before.clone(),
                    last_written: state.last_written.get(&checkpoint.path).cloned().flatten(),
                    content,
                });
            }
            plan
        };
        let mut rewound = BTreeMap::new();
        for Step {
            path,
            target,
            last_written,
            content,
        } in plan
        {
            let current = match std::fs::read(&path) {
                Ok(bytes) => Some(hash(&bytes)),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
                Err(error) => {
                    report
                        .failed
                        .push((path, format!("cannot read it: {error}")));
                    continue;
                }
            };
            if current == target {
                rewound.insert(path.clone(), target);
                report.unchanged.push(path);
                continue;
            }
            if current != last_written && !force {
                report.changed_outside.push(path);
                continue;
            }
            let done = match (&target, content) {
                (None, _) => std::fs::remove_file(&path)
                    .or_else(|e| match e.kind() {
                        std::io::ErrorKind::NotFound => Ok(()),
                        _ => Err(e),
                    })
                    .map_err(|e| format!("cannot remove it: {e}")),
                (Some(_), Some(bytes)) => {
                    std::fs::write(&path, bytes).map_err(|e| format!("cannot write it: {e}"))
                }
                (Some(hash), None) => Err(format!(
                    "its earlier content ({hash}) is missing from the session"
                )),
            };
            match done {
                Ok(()) => {
                    match target {
                        None => report.removed.push(path.clone()),
                        Some(_) => report.restored.push(path.clone()),
                    }
                    rewound.insert(path, target);
                }
                Err(why) => report.failed.push((path, why)),
            }
        }
        if !rewound.is_empty() {
            let record = Record::FilesRewound { to, files: rewound };
            if let Some((store, id)) = &self.store {
                store.append(id, &record).await?;
            }
            self.lock().apply(&record);
        }
        Ok(report)
    }
}

/// What rewinding one file takes.
struct Step {
    path: PathBuf,
    /// The hash of its content before its first change at or after the message (`None`: it
    /// did not exist).
    target: Option<String>,
    /// The hash of what the agent last wrote there.
    last_written: Option<String>,
    /// The content `target` names, if known.
    content: Option<Vec<u8>>,
}

/// The SHA-256 of `bytes`, in hex.
fn hash(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The checkpointer of an agent's tool calls: its checkpoints, and where the message of the
/// calls now running is (the agent moves it before each batch, and no batch runs while it
/// moves), so one checkpointer serves every call.
pub(crate) struct CallCheckpointer {
    pub(crate) checkpoints: Arc<FileCheckpoints>,
    pub(crate) message: Arc<std::sync::atomic::AtomicUsize>,
}

impl FileCheckpointer for CallCheckpointer {
    fn before_change(
        &self,
        path: &Path,
        previous: Option<&[u8]>,
        new: &[u8],
    ) -> Result<(), String> {
        self.checkpoints
            .record_change(
                self.message.load(std::sync::atomic::Ordering::Relaxed),
                path,
                previous,
                new,
            )
            .map_err(|error| error.to_string())
    }
}
