//! The "browser" of the OAuth tests: an [`McpAuthorizer`] that follows the authorization URL
//! with an HTTP GET, as a user's browser would after the user approved. The authorization
//! servers the tests run approve at once, so the GET ends with the redirect to the MCP
//! client's loopback listener.

use std::sync::Mutex;

use tool_sdk::BoxFuture;
use tool_sdk::mcp::{AuthorizationPrompt, McpAuthorizer};

/// A GET of `url`, following redirects, as a browser would.
pub async fn open(url: &str) -> Result<reqwest::Response, String> {
    // reqwest is built without a TLS provider of its own (see tool-sdk-core/src/tls.rs).
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    reqwest::get(url)
        .await
        .map_err(|e| format!("GET {url}: {e}"))
}

/// Follows each authorization URL; remembers the prompts.
#[derive(Debug, Default)]
pub struct Browser {
    /// The prompts shown, in order.
    pub prompts: Mutex<Vec<AuthorizationPrompt>>,
}

impl Browser {
    /// How many authorization URLs were opened.
    pub fn opened(&self) -> usize {
        self.prompts.lock().unwrap().len()
    }
}

impl McpAuthorizer for Browser {
    fn authorize<'a>(
        &'a self,
        prompt: &'a AuthorizationPrompt,
    ) -> BoxFuture<'a, Result<(), String>> {
        self.prompts.lock().unwrap().push(prompt.clone());
        Box::pin(async move {
            let response = open(&prompt.url).await?;
            eprintln!(
                "the browser opened {} and ended at {} ({})",
                prompt.url,
                response.url(),
                response.status()
            );
            Ok(())
        })
    }
}
