//! OAuth 2.1 for remote (Streamable HTTP) MCP servers, on rmcp's `auth` module: discovery of
//! the protected resource's and the authorization server's metadata, dynamic client
//! registration or a client ID metadata document, PKCE, token refresh, and a token store.
//!
//! A server that answers 401 is authorized once: the client shows the user the authorization
//! URL through the app's [`McpAuthorizer`], takes the redirect on a loopback listener
//! (`http://127.0.0.1:PORT/callback`), exchanges the code for tokens and keeps them in the
//! app's [`McpTokenStore`] (in memory unless the app gives one, such as [`McpTokenFile`]).
//! Later connections use the stored token, refreshed when it expires.
//!
//! The flow needs the `mcp-oauth` feature (part of the default `mcp`). Without it these types
//! still exist, so an app's settings compile either way, and a server that asks for
//! authorization fails to connect with an error that says how to turn the feature on.

use std::sync::Arc;
use std::time::Duration;

use crate::BoxFuture;

#[cfg(feature = "mcp-oauth")]
mod flow;
mod store;

#[cfg(feature = "mcp-oauth")]
pub(crate) use flow::{ServerOAuth, auth_error_in, step_error, step_of};
pub use store::{McpTokenFile, McpTokenMemory, McpTokenStore, TokenLock};

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

    #[cfg_attr(
        not(feature = "mcp-oauth"),
        expect(dead_code, reason = "the flow's errors")
    )]
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

/// The error of a server that asks for OAuth in a build without the `mcp-oauth` feature.
#[cfg(not(feature = "mcp-oauth"))]
pub(crate) fn unavailable(server: &str, url: &str, error: &str) -> crate::mcp::McpError {
    crate::mcp::McpError::new(
        server,
        format!(
            "{url} asks for OAuth authorization ({error}), which this build leaves out\nfix: \
             turn on tool-sdk's `mcp-oauth` feature (part of its default `mcp`; the coder \
             example: `cargo run --example coder --features mcp-oauth`), or give the server an \
             `Authorization` header in its config"
        ),
        None,
    )
}

/// Run by `.ci/run` as `cargo test -p tool-sdk --no-default-features --features mcp-client`:
/// the workspace's own test run unifies features, and so always has OAuth.
#[cfg(all(test, not(feature = "mcp-oauth")))]
mod without_oauth {
    use wiremock::matchers::any;
    use wiremock::{Mock, MockServer, ResponseTemplate};

    use crate::mcp::{McpClient, McpServerConfig};

    #[tokio::test]
    async fn a_server_that_asks_for_oauth_says_how_to_turn_it_on() {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(ResponseTemplate::new(401).insert_header(
                "WWW-Authenticate",
                "Bearer resource_metadata=\"http://127.0.0.1:1/.well-known/oauth-protected-resource\"",
            ))
            .mount(&server)
            .await;
        let config = McpServerConfig::http(format!("{}/mcp", server.uri()));
        let Err(error) = McpClient::connect("linear", config).await else {
            panic!("a server answering 401 cannot be connected without OAuth");
        };
        let message = error.to_string();
        assert!(message.contains("linear"), "{message}");
        assert!(
            message.contains("asks for OAuth authorization"),
            "{message}"
        );
        assert!(message.contains("`mcp-oauth` feature"), "{message}");
    }
}
