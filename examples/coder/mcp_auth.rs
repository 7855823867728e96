//! OAuth for the coder's remote MCP servers: tokens kept in the user's data directory
//! (`tool-sdk-coder/mcp-tokens/`, one file per server, readable by the user only), and a
//! server that asks for authorization gets the user's browser opened on its authorization
//! URL (the URL is printed too, for a machine without a browser); the redirect comes back to
//! a listener on 127.0.0.1, and the coder goes on.

use tool_sdk::BoxFuture;
use tool_sdk::mcp::{AuthorizationPrompt, McpAuthorizer, McpOAuth, McpTokenFile};

use crate::sessions;

/// The coder's OAuth settings for its MCP servers.
pub fn settings() -> McpOAuth {
    let oauth = McpOAuth::new()
        .with_client_name("tool-sdk coder")
        .with_authorizer(Terminal);
    match sessions::data_dir() {
        Ok(dir) => oauth.with_token_store(McpTokenFile::new(dir.join("mcp-tokens"))),
        // Tokens in memory then: asked again next time.
        Err(_) => oauth,
    }
}

/// Prints the authorization URL and opens it in the user's browser when there is one.
struct Terminal;

impl McpAuthorizer for Terminal {
    fn authorize<'a>(
        &'a self,
        prompt: &'a AuthorizationPrompt,
    ) -> BoxFuture<'a, Result<(), String>> {
        eprintln!(
            "MCP server `{}` needs your authorization. Open this URL to approve access (the \
             coder waits for the browser to come back to {}):\n  {}",
            prompt.server, prompt.redirect_uri, prompt.url
        );
        open_browser(&prompt.url);
        Box::pin(std::future::ready(Ok(())))
    }
}

/// `$BROWSER URL`, else the desktop's opener where there is a desktop; nothing otherwise.
fn open_browser(url: &str) {
    let opener = match std::env::var("BROWSER") {
        Ok(browser) if !browser.is_empty() => browser,
        _ if cfg!(target_os = "macos") => "open".to_owned(),
        _ if std::env::var_os("DISPLAY").is_some()
            || std::env::var_os("WAYLAND_DISPLAY").is_some() =>
        {
            "xdg-open".to_owned()
        }
        _ => return,
    };
    let opened = std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = opened {
        eprintln!("(could not start `{opener}`: {error}; open the URL yourself)");
    }
}
