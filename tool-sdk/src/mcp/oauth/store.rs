//! Where tokens are kept: the app's [`McpTokenStore`], in memory or in files.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use crate::BoxFuture;

/// Where the tokens of OAuth servers are kept, by server URL: the JSON rmcp stores (client
/// ID, tokens, granted scopes, when they were received).
///
/// [`McpTokenMemory`] (the default) forgets them when the process ends; [`McpTokenFile`]
/// keeps them in files only the user can read. An app may keep them anywhere else (a
/// keychain, a database) by implementing this.
pub trait McpTokenStore: Send + Sync + 'static {
    /// The credentials stored for `server_url`, if any.
    fn load<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<Option<Value>, String>>;
    /// Stores `credentials` for `server_url`, replacing what was there.
    fn save<'a>(
        &'a self,
        server_url: &'a str,
        credentials: Value,
    ) -> BoxFuture<'a, Result<(), String>>;
    /// Forgets the credentials of `server_url`.
    fn clear<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<(), String>>;
    /// Holds others (other processes, for a store they share) off `server_url`'s credentials
    /// until the returned guard is dropped: a refresh is done under it, from loading the
    /// refresh token to saving the new one, so that a refresh token that works only once is
    /// not spent twice. `None`, the default, coordinates nothing.
    fn lock<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<Option<TokenLock>, String>> {
        let _ = server_url;
        Box::pin(std::future::ready(Ok(None)))
    }
}

/// What [`McpTokenStore::lock`] holds: the lock is released when this is dropped.
pub type TokenLock = Box<dyn Send>;

/// Tokens in memory, forgotten when the process ends (the default store).
#[derive(Debug, Default)]
pub struct McpTokenMemory {
    entries: Mutex<HashMap<String, Value>>,
}

impl McpTokenMemory {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, Value>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl McpTokenStore for McpTokenMemory {
    fn load<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<Option<Value>, String>> {
        let found = self.entries().get(server_url).cloned();
        Box::pin(std::future::ready(Ok(found)))
    }

    fn save<'a>(
        &'a self,
        server_url: &'a str,
        credentials: Value,
    ) -> BoxFuture<'a, Result<(), String>> {
        self.entries().insert(server_url.to_owned(), credentials);
        Box::pin(std::future::ready(Ok(())))
    }

    fn clear<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        self.entries().remove(server_url);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// Tokens in files: one per server in a directory (created readable by this user only), each
/// file of mode 0600, written whole (a temporary file renamed over the old one). Processes
/// that share the directory refresh a server's token in turn, under a lock on its `.lock` file.
///
/// ```no_run
/// use tool_sdk::mcp::{McpOAuth, McpTokenFile};
///
/// // Under the user's data directory, as the coder example keeps them.
/// let store = McpTokenFile::new("/home/ada/.local/share/my-app/mcp-tokens");
/// let oauth = McpOAuth::new().with_token_store(store);
/// ```
#[derive(Clone, Debug)]
pub struct McpTokenFile {
    dir: PathBuf,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct TokenFile {
    server: String,
    credentials: Value,
}

impl McpTokenFile {
    /// A store in `dir` (created on the first save).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        McpTokenFile { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of `server_url`'s tokens.
    pub fn file(&self, server_url: &str) -> PathBuf {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(server_url.as_bytes());
        let name: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
        self.dir.join(format!("{name}.json"))
    }

    fn read(&self, server_url: &str) -> Result<Option<Value>, String> {
        let path = self.file(server_url);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
        };
        match serde_json::from_str::<TokenFile>(&text) {
            // Two URLs with one digest prefix: not this server's.
            Ok(file) if file.server != server_url => Ok(None),
            Ok(file) => Ok(Some(file.credentials)),
            // A damaged file is as good as none: the server is authorized anew.
            Err(e) => {
                tracing::warn!(path = %path.display(), %e, "unreadable MCP token file; ignored");
                Ok(None)
            }
        }
    }

    fn write(&self, server_url: &str, credentials: Value) -> Result<(), String> {
        private_dir(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        let path = self.file(server_url);
        let text = serde_json::to_string_pretty(&TokenFile {
            server: server_url.to_owned(),
            credentials,
        })
        .map_err(|e| e.to_string())?;
        // tempfile creates the file with mode 0600.
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| format!("cannot write in {}: {e}", self.dir.display()))?;
        std::io::Write::write_all(&mut file, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        file.persist(&path)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
        }
        Ok(())
    }

    fn remove(&self, server_url: &str) -> Result<(), String> {
        let path = self.file(server_url);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
        }
    }
}

/// Creates `dir` readable by this user only, or makes it so.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
    }
    #[cfg(not(unix))]
    std::fs::create_dir_all(dir)
}

impl McpTokenStore for McpTokenFile {
    fn load<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<Option<Value>, String>> {
        Box::pin(std::future::ready(self.read(server_url)))
    }

    fn save<'a>(
        &'a self,
        server_url: &'a str,
        credentials: Value,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(std::future::ready(self.write(server_url, credentials)))
    }

    fn clear<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(std::future::ready(self.remove(server_url)))
    }

    fn lock<'a>(&'a self, server_url: &'a str) -> BoxFuture<'a, Result<Option<TokenLock>, String>> {
        let dir = self.dir.clone();
        let path = self.file(server_url).with_extension("lock");
        Box::pin(async move {
            // Blocks until the other holder is done: off the async threads.
            let locked = tokio::task::spawn_blocking(move || {
                private_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
                let mut options = std::fs::OpenOptions::new();
                options.create(true).truncate(false).write(true);
                #[cfg(unix)]
                std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
                let file = options
                    .open(&path)
                    .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
                file.lock()
                    .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
                Ok::<TokenLock, String>(Box::new(file))
            })
            .await
            .map_err(|e| format!("the token lock's thread failed: {e}"))??;
            Ok(Some(locked))
        })
    }
}
