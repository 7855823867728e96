//! One authorization: discovery, registration, the user's approval and the loopback redirect,
//! the token exchange; and the errors that name the step that failed.

use std::time::Duration;

use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, AuthorizationSession,
    CredentialRefreshGuard, CredentialStore, OAuthClientConfig, StoredCredentials,
    WWWAuthenticateParams,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{AuthorizationPrompt, McpOAuth, McpTokenStore, OAuthStep};
use crate::mcp::McpError;
use crate::mcp::config::McpOAuthConfig;

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
        let manager = self.discover(challenge).await?;
        // The listener first: its port is in the redirect URI the client registers.
        let (listener, redirect_uri) = self.listen().await?;
        // Registration (or the pre-registered client), and the authorization URL.
        let request = self.request(&redirect_uri, challenge).await;
        let session = AuthorizationSession::new(manager, request)
            .await
            .map_err(|(_, e)| {
                self.failed(OAuthStep::Registration, "cannot register this app", e)
            })?;

        // The user's approval, and the redirect back.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        let _stop = AbortOnDrop(tokio::spawn(take_redirect(listener, sender)));
        let prompt = AuthorizationPrompt {
            server: self.server.to_owned(),
            url: session.get_authorization_url().to_owned(),
            redirect_uri: redirect_uri.clone(),
        };
        tracing::info!(server = self.server, url = %prompt.url, "MCP server needs authorization");
        authorizer.authorize(&prompt).await.map_err(|reason| {
            let what = format!("the authorization URL could not be shown: {reason}");
            self.fail(OAuthStep::Authorization, &what, None)
        })?;
        let callback = self.redirect(receiver, &redirect_uri).await?;
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

    /// A manager that knows the server's authorization server, found from its challenge.
    async fn discover(&self, challenge: Option<&str>) -> Result<AuthorizationManager, McpError> {
        let mut manager = AuthorizationManager::new(self.url)
            .await
            .map_err(|e| self.failed(OAuthStep::Discovery, "bad server URL", e))?;
        manager.set_credential_store(self.adapter());
        let metadata = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|e| {
                let what = "cannot find the server's authorization server";
                self.failed(OAuthStep::Discovery, what, e)
            })?;
        manager.set_metadata(metadata.metadata);
        Ok(manager)
    }

    /// The loopback listener of the redirect, and its URI.
    async fn listen(&self) -> Result<(tokio::net::TcpListener, String), McpError> {
        let port = self.config.callback_port.unwrap_or(0);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .map_err(|e| {
                let what = format!("cannot listen on 127.0.0.1:{port} for the redirect: {e}");
                self.fail(OAuthStep::Authorization, &what, None)
            })?;
        let port = listener
            .local_addr()
            .map_err(|e| self.fail(OAuthStep::Authorization, &e.to_string(), None))?
            .port();
        Ok((listener, format!("http://127.0.0.1:{port}/callback")))
    }

    /// What to ask the authorization server for: the config's client, scopes and metadata
    /// document, and the server's challenge.
    async fn request(&self, redirect_uri: &str, challenge: Option<&str>) -> AuthorizationRequest {
        let expand = crate::mcp::client::expand;
        let mut request = AuthorizationRequest::new(redirect_uri)
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
        request
    }

    /// The redirect's URL, once the browser comes back with a code; an error if it comes back
    /// with an error, or not in time.
    async fn redirect(
        &self,
        receiver: tokio::sync::oneshot::Receiver<String>,
        redirect_uri: &str,
    ) -> Result<String, McpError> {
        let timeout = self.oauth.timeout;
        let callback = match tokio::time::timeout(timeout, receiver).await {
            Ok(Ok(url)) => url,
            Ok(Err(_)) => {
                let what = "the loopback listener stopped";
                return Err(self.fail(OAuthStep::Authorization, what, None));
            }
            Err(_) => {
                let what = format!(
                    "no redirect to {redirect_uri} within {timeout:?} (was the authorization \
                     URL opened and access approved?)"
                );
                return Err(self.fail(OAuthStep::Authorization, &what, None));
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
            let what = format!("the authorization server refused: {error}{description}");
            return Err(self.fail(OAuthStep::Authorization, &what, None));
        }
        Ok(callback)
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

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let held = self
            .store
            .lock(&self.url)
            .await
            .map_err(AuthError::CredentialStoreError)?;
        Ok(held.map(CredentialRefreshGuard::new))
    }
}
