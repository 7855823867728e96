//! OAuth 2.1 for remote (Streamable HTTP) MCP servers, on rmcp's `auth` module: discovery of
//! the protected resource's and the authorization server's metadata, dynamic client
//! registration or a client ID metadata document, PKCE, token refresh, and a token store.
//!
//! A server that answers 401 is authorized once: the client shows the user the authorization
//! URL through the app's [`McpAuthorizer`], takes the redirect on a loopback listener
//! (`http://127.0.0.1:PORT/callback`), exchanges the code for tokens and keeps them in the
//! app's [`McpTokenStore`] (in memory unless the app gives one, such as [`McpTokenFile`]).
//! Later connections use the stored token, refreshed when it expires.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession, CredentialStore,
    OAuthClientConfig, StoredCredentials, WWWAuthenticateParams,
};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::BoxFuture;
use crate::mcp::McpError;
use crate::mcp::config::McpOAuthConfig;

/// How long the user has to approve access in the browser, by default.
const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);

/// The steps of an OAuth authorization, named in the errors of a failed one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthStep {
    /// Finding the authorization server: the server's protected-resource metadata, then the
    /// authorization server's own metadata.
    Discovery,
    /// Registering this app as a client (dynamic registration, or its metadata document).
    Registration,
    /// The user's approval in the browser, and the redirect back to the loopback listener.
    Authorization,
    /// Exchanging the authorization code for tokens.
    TokenExchange,
    /// Renewing an expired access token with the refresh token.
    Refresh,
    /// Reading or writing the stored tokens.
    TokenStore,
}

impl OAuthStep {
    /// The step's name in messages.
    pub fn name(self) -> &'static str {
        match self {
            OAuthStep::Discovery => "discovery",
            OAuthStep::Registration => "client registration",
            OAuthStep::Authorization => "authorization",
            OAuthStep::TokenExchange => "token exchange",
            OAuthStep::Refresh => "token refresh",
            OAuthStep::TokenStore => "the token store",
        }
    }

    fn fix(self) -> &'static str {
        match self {
            OAuthStep::Discovery => {
                "check the server's `url`; an OAuth server publishes its protected-resource \
                 metadata (/.well-known/oauth-protected-resource) naming an authorization \
                 server with OAuth metadata (/.well-known/oauth-authorization-server); a server \
                 that takes a fixed token instead gets it in `headers` \
                 (\"Authorization\": \"Bearer ${TOKEN}\")"
            }
            OAuthStep::Registration => {
                "the authorization server did not register this app: register a client with \
                 it (redirect URI http://127.0.0.1:PORT/callback) and set `oauth.clientId` \
                 (and `oauth.clientSecret`, `oauth.callbackPort`) in the server's entry, or \
                 `oauth.clientMetadataUrl` if it takes client ID metadata documents"
            }
            OAuthStep::Authorization => {
                "open the authorization URL and approve access before the time runs out; if \
                 the authorization server refuses the redirect URI, register \
                 http://127.0.0.1:PORT/callback with it and set `oauth.callbackPort`"
            }
            OAuthStep::TokenExchange => {
                "the authorization server refused the code: check `oauth.clientId` and \
                 `oauth.clientSecret`, then connect again to authorize anew"
            }
            OAuthStep::Refresh => {
                "check that the authorization server is reachable and connect again; if it \
                 keeps failing, clear the server's stored token (`McpTokenStore::clear`, or \
                 delete its file) to authorize anew"
            }
            OAuthStep::TokenStore => {
                "check that the token store's directory exists and that this user may read \
                 and write it"
            }
        }
    }
}

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
}

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
/// file of mode 0600, written whole (a temporary file renamed over the old one).
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
}

/// What the user is asked to do: open `url` and approve access to `server`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct AuthorizationPrompt {
    /// The MCP server's name in the config.
    pub server: String,
    /// The authorization URL to open in a browser.
    pub url: String,
    /// Where the browser comes back to: the loopback listener waiting for it.
    pub redirect_uri: String,
}

/// Shows the user the authorization URL of a server that needs OAuth: opens a browser,
/// prints it, or (in tests) follows it. Returns once shown; the client then waits for the
/// redirect on its loopback listener.
pub trait McpAuthorizer: Send + Sync + 'static {
    /// Shows `prompt.url`; `Err` gives up (the message says why).
    fn authorize<'a>(
        &'a self,
        prompt: &'a AuthorizationPrompt,
    ) -> BoxFuture<'a, Result<(), String>>;
}

impl<F> McpAuthorizer for F
where
    F: Fn(&AuthorizationPrompt) -> Result<(), String> + Send + Sync + 'static,
{
    fn authorize<'a>(
        &'a self,
        prompt: &'a AuthorizationPrompt,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(std::future::ready(self(prompt)))
    }
}

/// The app's side of OAuth for its MCP servers: where tokens are kept, how the user is shown
/// the authorization URL, the client name it registers under.
///
/// Without an authorizer, a server that asks for authorization fails to connect with an error
/// saying so; tokens already in the store are still used (and refreshed).
///
/// ```no_run
/// use tool_sdk::agent::AgentConfig;
/// use tool_sdk::mcp::{McpOAuth, McpServerConfig, McpTokenFile};
///
/// let oauth = McpOAuth::new()
///     .with_token_store(McpTokenFile::new("/home/ada/.local/share/my-app/mcp-tokens"))
///     .with_authorizer(|prompt: &tool_sdk::mcp::AuthorizationPrompt| {
///         eprintln!("To use `{}`, open {}", prompt.server, prompt.url);
///         Ok(())
///     });
/// let config = AgentConfig::new().mcp(|mcp| {
///     mcp.with_server("linear", McpServerConfig::http("https://mcp.linear.app/mcp"))
///         .with_oauth(oauth)
/// });
/// ```
#[derive(Clone)]
pub struct McpOAuth {
    store: Arc<dyn McpTokenStore>,
    authorizer: Option<Arc<dyn McpAuthorizer>>,
    client_name: String,
    timeout: Duration,
}

impl Default for McpOAuth {
    fn default() -> Self {
        McpOAuth {
            store: Arc::new(McpTokenMemory::new()),
            authorizer: None,
            client_name: "tool-sdk".into(),
            timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
        }
    }
}

impl std::fmt::Debug for McpOAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpOAuth")
            .field("client_name", &self.client_name)
            .field("authorizer", &self.authorizer.is_some())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// Two settings are equal when they share their store and authorizer.
impl PartialEq for McpOAuth {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.store, &other.store)
            && match (&self.authorizer, &other.authorizer) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && self.client_name == other.client_name
            && self.timeout == other.timeout
    }
}

impl McpOAuth {
    /// Tokens in memory, no authorizer, the client name `tool-sdk`, five minutes to approve.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps tokens in `store`.
    pub fn with_token_store(mut self, store: impl McpTokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// Shows authorization URLs with `authorizer`.
    pub fn with_authorizer(mut self, authorizer: impl McpAuthorizer) -> Self {
        self.authorizer = Some(Arc::new(authorizer));
        self
    }

    /// Shows authorization URLs with an authorizer the app keeps a handle on too.
    pub fn with_shared_authorizer(mut self, authorizer: Arc<dyn McpAuthorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// The name this app registers under (shown by the authorization server).
    pub fn with_client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// How long the user has to approve access (default five minutes).
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The token store.
    pub fn token_store(&self) -> &Arc<dyn McpTokenStore> {
        &self.store
    }
}

/// rmcp's credential store over the app's, for one server.
struct StoreAdapter {
    store: Arc<dyn McpTokenStore>,
    url: String,
}

#[async_trait::async_trait]
impl CredentialStore for StoreAdapter {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(value) = self
            .store
            .load(&self.url)
            .await
            .map_err(AuthError::CredentialStoreError)?
        else {
            return Ok(None);
        };
        // Credentials of another shape (an older rmcp's) are as good as none.
        Ok(serde_json::from_value(value).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let value = serde_json::to_value(&credentials)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        self.store
            .save(&self.url, value)
            .await
            .map_err(AuthError::CredentialStoreError)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.store
            .clear(&self.url)
            .await
            .map_err(AuthError::CredentialStoreError)
    }
}

/// OAuth for one server's connection.
pub(crate) struct ServerOAuth<'a> {
    pub(crate) server: &'a str,
    pub(crate) url: &'a str,
    pub(crate) config: McpOAuthConfig,
    pub(crate) oauth: &'a McpOAuth,
}

/// The `AuthError` somewhere in `error`'s chain of sources, if any.
pub(crate) fn auth_error_in<'e>(
    error: &'e (dyn std::error::Error + 'static),
) -> Option<&'e AuthError> {
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(found) = error.downcast_ref::<AuthError>() {
            return Some(found);
        }
        current = error.source();
    }
    None
}

/// The step an error of rmcp's belongs to, where the call that failed does not say.
pub(crate) fn step_of(error: &AuthError, otherwise: OAuthStep) -> OAuthStep {
    match error {
        AuthError::TokenRefreshFailed(_) | AuthError::TokenRefreshRejected(_) => OAuthStep::Refresh,
        AuthError::CredentialStoreError(_) => OAuthStep::TokenStore,
        AuthError::RegistrationFailed(_) => OAuthStep::Registration,
        AuthError::TokenExchangeFailed(_) => OAuthStep::TokenExchange,
        AuthError::DiscoveryRequestFailed { .. }
        | AuthError::ProtectedResourceMetadataInvalid { .. }
        | AuthError::AuthorizationServersUnavailable { .. }
        | AuthError::MetadataError(_)
        | AuthError::NoAuthorizationSupport
        | AuthError::PkceUnsupported => OAuthStep::Discovery,
        _ => otherwise,
    }
}

/// `error` and its sources, joined: rmcp's messages name the URL in the source.
fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut current = error.source();
    while let Some(source) = current {
        let more = source.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        current = source.source();
    }
    text
}

/// The error of a failed step: names the server (McpError does), the step, what went wrong and
/// the fix.
pub(crate) fn step_error(
    server: &str,
    url: &str,
    step: OAuthStep,
    what: &str,
    source: Option<AuthError>,
) -> McpError {
    let detail = match &source {
        Some(error) => format!("{what}: {}", chain(error)),
        None => what.to_owned(),
    };
    McpError::new(
        server,
        format!(
            "OAuth authorization of {url} failed at {}: {detail}\nfix: {}",
            step.name(),
            step.fix()
        ),
        source.map(crate::error::source),
    )
}

impl ServerOAuth<'_> {
    fn fail(&self, step: OAuthStep, what: &str, source: Option<AuthError>) -> McpError {
        step_error(self.server, self.url, step, what, source)
    }

    fn failed(&self, otherwise: OAuthStep, what: &str, error: AuthError) -> McpError {
        let step = step_of(&error, otherwise);
        self.fail(step, what, Some(error))
    }

    fn adapter(&self) -> StoreAdapter {
        StoreAdapter {
            store: self.oauth.store.clone(),
            url: self.url.to_owned(),
        }
    }

    /// The manager of a connection: with the stored credentials, if there are any.
    pub(crate) async fn manager(&self) -> Result<AuthorizationManager, McpError> {
        let mut manager = AuthorizationManager::new(self.url)
            .await
            .map_err(|e| self.failed(OAuthStep::Discovery, "bad server URL", e))?;
        manager.set_credential_store(self.adapter());
        let stored = manager.initialize_from_store().await.map_err(|e| {
            self.failed(
                OAuthStep::Discovery,
                "cannot find the authorization server of the stored token",
                e,
            )
        })?;
        if stored
            && let (Some(id), Some(secret)) = (&self.config.client_id, &self.config.client_secret)
        {
            // A confidential client refreshes with its secret, which the store does not keep.
            let config =
                OAuthClientConfig::new(crate::mcp::client::expand(id), "http://127.0.0.1/callback")
                    .with_client_secret(crate::mcp::client::expand(secret));
            manager
                .configure_client(config)
                .map_err(|e| self.failed(OAuthStep::Registration, "bad client", e))?;
        }
        Ok(manager)
    }

    /// The scopes to ask for: the config's; else, when the server challenges a token it had
    /// granted for the scopes a request needs, those scopes and the ones granted before (so
    /// that stepping up for one tool loses none); else none, for rmcp to pick from the
    /// challenge and the metadata.
    async fn scopes(&self, challenge: Option<&str>) -> Vec<String> {
        if !self.config.scopes.is_empty() {
            return self.config.scopes.clone();
        }
        let (Some(challenge), Ok(base)) = (challenge, url::Url::parse(self.url)) else {
            return Vec::new();
        };
        let Some(wanted) = WWWAuthenticateParams::parse(challenge, &base).scope else {
            return Vec::new();
        };
        let granted = match self.adapter().load().await {
            Ok(Some(stored)) => stored.granted_scopes,
            _ => return Vec::new(),
        };
        let mut scopes = granted;
        for scope in wanted.split_whitespace() {
            if !scopes.iter().any(|s| s == scope) {
                scopes.push(scope.to_owned());
            }
        }
        scopes
    }

    /// Authorizes the server anew: discovery, registration, the user's approval through the
    /// app's authorizer and the redirect to a loopback listener, the token exchange. The
    /// tokens end up in the store.
    pub(crate) async fn authorize(&self, challenge: Option<&str>) -> Result<(), McpError> {
        let Some(authorizer) = &self.oauth.authorizer else {
            return Err(self
                .fail(
                    OAuthStep::Authorization,
                    "the server asks for OAuth authorization (HTTP 401) and this app gave the MCP \
                 client no way to show the user the authorization URL",
                    None,
                )
                .with_fix(
                    "give the client an authorizer (`McpOAuth::with_authorizer`, passed with \
                 `AgentConfig::mcp(|m| m.with_oauth(..))` or `McpClient::connect_with`), \
                 or put a token in the server's `headers` (\"Authorization\": \"Bearer ${TOKEN}\")",
                ));
        };
        // Discovery.
        let mut manager = AuthorizationManager::new(self.url)
            .await
            .map_err(|e| self.failed(OAuthStep::Discovery, "bad server URL", e))?;
        manager.set_credential_store(self.adapter());
        let metadata = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|e| {
                self.failed(
                    OAuthStep::Discovery,
                    "cannot find the server's authorization server",
                    e,
                )
            })?;
        manager.set_metadata(metadata.metadata);

        // The listener first: its port is in the redirect URI the client registers.
        let listener =
            tokio::net::TcpListener::bind(("127.0.0.1", self.config.callback_port.unwrap_or(0)))
                .await
                .map_err(|e| {
                    self.fail(
                        OAuthStep::Authorization,
                        &format!(
                            "cannot listen on 127.0.0.1:{} for the redirect: {e}",
                            self.config.callback_port.unwrap_or(0)
                        ),
                        None,
                    )
                })?;
        let port = listener
            .local_addr()
            .map_err(|e| self.fail(OAuthStep::Authorization, &e.to_string(), None))?
            .port();
        let redirect_uri = format!("http://127.0.0.1:{port}/callback");

        // Registration (or the pre-registered client), and the authorization URL.
        let expand = crate::mcp::client::expand;
        let mut request = AuthorizationRequest::new(&redirect_uri)
            .with_client_name(&self.oauth.client_name)
            .with_initial_scope_selection();
        let scopes = self.scopes(challenge).await;
        if !scopes.is_empty() {
            request = request.with_scopes(scopes);
        }
        if let Some(id) = &self.config.client_id {
            request = request.with_preregistered_client(expand(id));
        }
        if let Some(secret) = &self.config.client_secret {
            request = request.with_client_secret(expand(secret));
        }
        if let Some(url) = &self.config.client_metadata_url {
            request = request.with_client_metadata_url(expand(url));
        }
        if let Some(challenge) = challenge {
            request = request.with_challenge(challenge);
        }
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| {
                self.failed(OAuthStep::Registration, "cannot register this app", e)
            })?;

        // The user's approval, and the redirect back.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let waiting = tokio::spawn(take_redirect(listener, sender));
        let _stop = AbortOnDrop(waiting);
        let prompt = AuthorizationPrompt {
            server: self.server.to_owned(),
            url: session.get_authorization_url().to_owned(),
            redirect_uri: redirect_uri.clone(),
        };
        tracing::info!(server = self.server, url = %prompt.url, "MCP server needs authorization");
        authorizer.authorize(&prompt).await.map_err(|reason| {
            self.fail(
                OAuthStep::Authorization,
                &format!("the authorization URL could not be shown: {reason}"),
                None,
            )
        })?;
        let callback = match tokio::time::timeout(self.oauth.timeout, receiver).await {
            Ok(Ok(url)) => url,
            Ok(Err(_)) => {
                return Err(self.fail(
                    OAuthStep::Authorization,
                    "the loopback listener stopped",
                    None,
                ));
            }
            Err(_) => {
                return Err(self.fail(
                    OAuthStep::Authorization,
                    &format!(
                        "no redirect to {redirect_uri} within {:?} (was the authorization URL \
                         opened and access approved?)",
                        self.oauth.timeout
                    ),
                    None,
                ));
            }
        };
        let parsed = url::Url::parse(&callback).map_err(|e| {
            self.fail(
                OAuthStep::Authorization,
                &format!("bad redirect: {e}"),
                None,
            )
        })?;
        let param = |name: &str| {
            parsed
                .query_pairs()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.into_owned())
        };
        if let Some(error) = param("error") {
            let description = param("error_description")
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            return Err(self.fail(
                OAuthStep::Authorization,
                &format!("the authorization server refused: {error}{description}"),
                None,
            ));
        }
        // The token exchange (checks the state and the issuer first).
        session.handle_callback_url(&callback).await.map_err(|e| {
            self.failed(
                OAuthStep::TokenExchange,
                "cannot exchange the code for tokens",
                e,
            )
        })?;
        Ok(())
    }
}

impl McpError {
    /// Replaces the `fix:` line of an OAuth error.
    fn with_fix(mut self, fix: &str) -> Self {
        if let Some(at) = self.message.find("\nfix: ") {
            self.message.truncate(at);
        }
        self.message.push_str("\nfix: ");
        self.message.push_str(fix);
        self
    }
}

struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Answers requests on the loopback listener until one comes to `/callback` with a `code` or
/// an `error`; sends its full URL.
async fn take_redirect(
    listener: tokio::net::TcpListener,
    sender: tokio::sync::oneshot::Sender<String>,
) {
    let local = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    loop {
        let Ok((mut stream, _)) = listener.accept().await else {
            return;
        };
        let mut head = Vec::new();
        let mut buf = [0u8; 2048];
        let read = tokio::time::timeout(Duration::from_secs(10), async {
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        if read.is_err() {
            continue;
        }
        let head = String::from_utf8_lossy(&head);
        let target = head
            .lines()
            .next()
            .and_then(|line| line.strip_prefix("GET "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or("");
        let url = format!("http://{local}{target}");
        let is_callback = url::Url::parse(&url).is_ok_and(|u| {
            u.path() == "/callback"
                && u.query_pairs()
                    .any(|(key, _)| key == "code" || key == "error")
        });
        let (status, body) = if is_callback {
            (
                "200 OK",
                "<!doctype html><title>Authorized</title><p>Authorization received; you can \
                 close this window and go back to the app.</p>",
            )
        } else {
            ("404 Not Found", "not the OAuth redirect")
        };
        let response = format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        );
        let _ = stream.write_all(response.as_bytes()).await;
        let _ = stream.shutdown().await;
        if is_callback {
            let _ = sender.send(url);
            return;
        }
    }
}
