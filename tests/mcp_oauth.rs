//! OAuth 2.1 in the MCP client, against a real authorization server: the TypeScript SDK's
//! (`tests/mcp-peers/oauth-server.mjs`: metadata, dynamic registration, PKCE, refresh), in
//! front of an MCP server that checks the bearer token. The user's browser is an HTTP GET that
//! follows the authorization URL to the client's loopback listener. And the errors of an
//! authorization that fails: each names the server, the step and the fix.
//!
//! The conformance suite's auth scenarios (tests/mcp_conformance.rs) test the same client
//! against the suite's authorization servers.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tests::browser::Browser;
use tests::mcp_peers::OAuthServer;
use tool_sdk::ToolContext;
use tool_sdk::mcp::{
    AuthorizationPrompt, McpClient, McpOAuth, McpOAuthConfig, McpServerConfig, McpTokenFile,
    McpTokenStore,
};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn oauth_server(args: &[&str]) -> OAuthServer {
    OAuthServer::start(args)
}

/// What the authorization server saw, from its `stats` tool.
async fn stats(client: &McpClient) -> Value {
    let tool = client
        .tools()
        .into_iter()
        .find(|t| t.name().ends_with("__stats"))
        .expect("the server's stats tool");
    let out = tool.call(json!({}), &ToolContext::default()).await.unwrap();
    assert!(!out.is_error, "{out:?}");
    serde_json::from_str(&out.to_text()).unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn authorizes_refreshes_and_reuses_the_stored_token() {
    // Access tokens live 2 s: the client refreshes one once less than half of it is left.
    let server = oauth_server(&["--token-seconds", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("mcp-tokens");
    let browser = Arc::new(Browser::default());
    let oauth = McpOAuth::new()
        .with_token_store(McpTokenFile::new(&store_dir))
        .with_shared_authorizer(browser.clone());

    // First connection: 401, discovery, dynamic registration, the user's approval, the code.
    let client =
        McpClient::connect_with("guarded", McpServerConfig::http(&server.url), oauth.clone())
            .await
            .unwrap();
    assert_eq!(browser.opened(), 1);
    let prompt = browser.prompts.lock().unwrap()[0].clone();
    assert_eq!(prompt.server, "guarded");
    assert!(
        prompt.redirect_uri.starts_with("http://127.0.0.1:")
            && prompt.redirect_uri.ends_with("/callback"),
        "{prompt:?}"
    );
    // PKCE: the authorization URL carries an S256 challenge, and the server checked the
    // verifier when it exchanged the code.
    assert!(
        prompt.url.contains("code_challenge=") && prompt.url.contains("code_challenge_method=S256"),
        "{}",
        prompt.url
    );
    let seen = stats(&client).await;
    assert_eq!(seen["registrations"], 1, "{seen}");
    assert_eq!(seen["authorizations"], 1, "{seen}");
    assert_eq!(seen["codeExchanges"], 1, "{seen}");
    assert_eq!(seen["refreshes"], 0, "{seen}");

    // The token file: the user's only, and holding the server's tokens.
    let file = McpTokenFile::new(&store_dir).file(&server.url);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
        let mode = std::fs::metadata(&store_dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
    }
    let stored: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(stored["server"], server.url.as_str());
    assert!(
        stored["credentials"]["token_response"]["refresh_token"].is_string(),
        "{stored}"
    );

    // The token expires: the next call refreshes it, with no new authorization.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let seen = stats(&client).await;
    assert!(seen["refreshes"].as_u64().unwrap() >= 1, "{seen}");
    assert_eq!(seen["authorizations"], 1, "{seen}");
    assert_eq!(browser.opened(), 1);
    client.close().await;

    // A new process, as it were: the stored (and by now expired) token is refreshed, and the
    // user is not asked again: this client could not even ask.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let again = McpClient::connect_with(
        "guarded",
        McpServerConfig::http(&server.url),
        McpOAuth::new().with_token_store(McpTokenFile::new(&store_dir)),
    )
    .await
    .unwrap();
    let seen = stats(&again).await;
    assert_eq!(seen["authorizations"], 1, "{seen}");
    assert_eq!(seen["registrations"], 1, "{seen}");
    assert!(seen["refreshes"].as_u64().unwrap() >= 2, "{seen}");
    again.close().await;

    // The tokens cleared, the user is asked again.
    McpTokenFile::new(&store_dir)
        .clear(&server.url)
        .await
        .unwrap();
    assert!(!file.exists());
    let third = McpClient::connect_with("guarded", McpServerConfig::http(&server.url), oauth)
        .await
        .unwrap();
    assert_eq!(browser.opened(), 2);
    assert_eq!(stats(&third).await["authorizations"], 2);
    third.close().await;
}

/// Two clients (two processes of an app, say) share the token file; the server's refresh
/// tokens work once. When the access token expires both refresh at the same moment: under the
/// file's lock one refreshes, the other then reads (or refreshes) the new token, and neither
/// spends a refresh token twice; the second, which cannot ask the user, still gets through.
#[tokio::test(flavor = "multi_thread")]
async fn two_clients_sharing_a_token_file_refresh_in_turn() {
    let server = oauth_server(&["--token-seconds", "2"]);
    let dir = tempfile::tempdir().unwrap();
    let store = || McpTokenFile::new(dir.path().join("mcp-tokens"));
    let first = McpClient::connect_with(
        "guarded",
        McpServerConfig::http(&server.url),
        McpOAuth::new()
            .with_token_store(store())
            .with_authorizer(Browser::default()),
    )
    .await
    .unwrap();
    let second = McpClient::connect_with(
        "guarded",
        McpServerConfig::http(&server.url),
        McpOAuth::new().with_token_store(store()),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    for _ in 0..3 {
        let (a, b) = tokio::join!(stats(&first), stats(&second));
        assert_eq!(a["authorizations"], 1, "{a}");
        assert_eq!(b["authorizations"], 1, "{b}");
    }
    let seen = stats(&second).await;
    assert!(seen["refreshes"].as_u64().unwrap() >= 1, "{seen}");
    first.close().await;
    second.close().await;
}

/// An agent gets the tools of an OAuth server from its config: the settings' authorizer and
/// token store are used.
#[tokio::test(flavor = "multi_thread")]
async fn an_agent_connects_to_an_oauth_server_of_its_config() {
    use tool_sdk::agent::{Agent, AgentConfig};
    use tool_sdk::model::ScriptedModel;
    let server = oauth_server(&[]);
    let browser = Arc::new(Browser::default());
    let config = AgentConfig::new()
        .with_model(ScriptedModel::new([]))
        .mcp(|mcp| {
            mcp.with_server("guarded", McpServerConfig::http(&server.url))
                .with_oauth(McpOAuth::new().with_shared_authorizer(browser.clone()))
        });
    let agent = Agent::create(config).await.unwrap();
    assert!(
        agent
            .tool_names()
            .contains(&"mcp__guarded__stats".to_owned()),
        "{:?}",
        agent.tool_names()
    );
    assert_eq!(browser.opened(), 1);
}

fn message(error: impl std::fmt::Display) -> String {
    error.to_string()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refused_authorization_names_the_server_the_step_and_the_fix() {
    let server = oauth_server(&["--deny"]);
    let error = McpClient::connect_with(
        "denied",
        McpServerConfig::http(&server.url),
        McpOAuth::new().with_authorizer(Browser::default()),
    )
    .await
    .unwrap_err();
    let text = message(&error);
    assert!(text.starts_with("MCP server `denied`:"), "{text}");
    assert!(text.contains("failed at authorization"), "{text}");
    assert!(
        text.contains("access_denied") && text.contains("the user said no"),
        "{text}"
    );
    assert!(text.contains("\nfix: "), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_refresh_names_the_step_and_the_fix() {
    let server = oauth_server(&["--token-seconds", "2", "--refresh-down"]);
    let client = McpClient::connect_with(
        "guarded",
        McpServerConfig::http(&server.url),
        McpOAuth::new().with_authorizer(Browser::default()),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let tool = client
        .tools()
        .into_iter()
        .find(|t| t.name().ends_with("__stats"))
        .unwrap();
    let text = message(
        tool.call(json!({}), &ToolContext::default())
            .await
            .unwrap_err(),
    );
    assert!(text.contains("MCP server `guarded`:"), "{text}");
    assert!(text.contains("failed at token refresh"), "{text}");
    assert!(text.contains("down for maintenance"), "{text}");
    assert!(
        text.contains("fix: check that the authorization server is reachable"),
        "{text}"
    );
    client.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn without_an_authorizer_the_error_says_how_to_give_one() {
    let server = oauth_server(&[]);
    let text = message(
        McpClient::connect("guarded", McpServerConfig::http(&server.url))
            .await
            .unwrap_err(),
    );
    assert!(text.starts_with("MCP server `guarded`:"), "{text}");
    assert!(text.contains("failed at authorization"), "{text}");
    assert!(text.contains("HTTP 401"), "{text}");
    assert!(
        text.contains("fix: give the client an authorizer"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pinned_protocol_version_that_does_not_exist_is_refused() {
    let error = serde_json::from_value::<McpServerConfig>(json!({
        "type": "http", "url": "http://127.0.0.1:1/mcp", "protocolVersion": "2025-13-01"
    }))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("unknown MCP protocol version `2025-13-01`")
            && error.to_string().contains("2026-07-28"),
        "{error}"
    );
}

/// A server that answers 401 and names protected-resource metadata that `metadata` answers.
async fn challenging_server(metadata: impl Fn(&str) -> Value) -> (MockServer, String) {
    let mock = MockServer::start().await;
    let origin = mock.uri();
    let url = format!("{origin}/mcp");
    Mock::given(method("POST"))
        .and(path("/mcp"))
        .respond_with(
            ResponseTemplate::new(401).insert_header(
                "WWW-Authenticate",
                format!(
                    "Bearer resource_metadata=\"{origin}/.well-known/oauth-protected-resource/mcp\""
                )
                .as_str(),
            ),
        )
        .mount(&mock)
        .await;
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-protected-resource/mcp"))
        .respond_with(ResponseTemplate::new(200).set_body_json(metadata(&origin)))
        .mount(&mock)
        .await;
    (mock, url)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_discovery_failure_names_the_step_and_the_fix() {
    // The metadata describes another resource: the client must not send its tokens there.
    let (_mock, url) = challenging_server(|origin| {
        json!({"resource": "https://elsewhere.example/mcp", "authorization_servers": [origin]})
    })
    .await;
    let text = message(
        McpClient::connect_with(
            "odd",
            McpServerConfig::http(&url),
            McpOAuth::new().with_authorizer(Browser::default()),
        )
        .await
        .unwrap_err(),
    );
    assert!(text.starts_with("MCP server `odd`:"), "{text}");
    assert!(text.contains("failed at discovery"), "{text}");
    assert!(text.contains("elsewhere.example"), "{text}");
    assert!(text.contains("fix: check the server's `url`"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_registration_failure_says_to_register_a_client() {
    // An authorization server with no registration endpoint (and no client in the config).
    let (mock, url) = challenging_server(
        |origin| json!({"resource": format!("{origin}/mcp"), "authorization_servers": [origin]}),
    )
    .await;
    let origin = mock.uri();
    Mock::given(method("GET"))
        .and(path("/.well-known/oauth-authorization-server"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "issuer": origin,
            "authorization_endpoint": format!("{origin}/authorize"),
            "token_endpoint": format!("{origin}/token"),
            "response_types_supported": ["code"],
            "code_challenge_methods_supported": ["S256"],
        })))
        .mount(&mock)
        .await;
    let text = message(
        McpClient::connect_with(
            "closed",
            McpServerConfig::http(&url),
            McpOAuth::new().with_authorizer(Browser::default()),
        )
        .await
        .unwrap_err(),
    );
    assert!(text.starts_with("MCP server `closed`:"), "{text}");
    assert!(text.contains("failed at client registration"), "{text}");
    assert!(text.contains("`oauth.clientId`"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_token_store_that_cannot_be_written_names_it() {
    let server = oauth_server(&[]);
    let dir = tempfile::tempdir().unwrap();
    // A file where the store's directory should be.
    let blocked = dir.path().join("not-a-dir");
    std::fs::write(&blocked, "").unwrap();
    let text = message(
        McpClient::connect_with(
            "guarded",
            McpServerConfig::http(&server.url),
            McpOAuth::new()
                .with_token_store(McpTokenFile::new(&blocked))
                .with_authorizer(Browser::default()),
        )
        .await
        .unwrap_err(),
    );
    assert!(text.starts_with("MCP server `guarded`:"), "{text}");
    assert!(text.contains("failed at the token store"), "{text}");
    assert!(text.contains("not-a-dir"), "{text}");
}

/// A pre-registered client from the config (`oauth.clientId` and a fixed `callbackPort`),
/// read from the JSON shape Claude Code writes.
#[tokio::test(flavor = "multi_thread")]
async fn the_oauth_object_of_a_config_file_is_used() {
    let server = oauth_server(&[]);
    let port = tests::mcp_peers::free_port();
    let config: McpServerConfig = serde_json::from_value(json!({
        "type": "http", "url": server.url,
        "oauth": {"callbackPort": port, "scopes": ["mcp:tools"]}
    }))
    .unwrap();
    assert_eq!(
        serde_json::to_value(&config).unwrap()["oauth"],
        json!({"callbackPort": port, "scopes": ["mcp:tools"]})
    );
    let browser = Arc::new(Browser::default());
    let client = McpClient::connect_with(
        "guarded",
        config,
        McpOAuth::new().with_shared_authorizer(browser.clone()),
    )
    .await
    .unwrap();
    let prompt: AuthorizationPrompt = browser.prompts.lock().unwrap()[0].clone();
    assert_eq!(
        prompt.redirect_uri,
        format!("http://127.0.0.1:{port}/callback")
    );
    assert!(prompt.url.contains("scope=mcp%3Atools"), "{}", prompt.url);
    client.close().await;
    // The same from code.
    let built = McpServerConfig::http(&server.url).with_oauth(
        McpOAuthConfig::new()
            .with_callback_port(port)
            .with_scopes(["mcp:tools"]),
    );
    assert_eq!(
        serde_json::to_value(&built).unwrap(),
        serde_json::to_value(
            serde_json::from_value::<McpServerConfig>(json!({
                "type": "http", "url": server.url,
                "oauth": {"callbackPort": port, "scopes": ["mcp:tools"]}
            }))
            .unwrap()
        )
        .unwrap()
    );
}
