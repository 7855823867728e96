//! The client the official MCP conformance suite drives (`conformance client --command ...`):
//! our `McpClient`, with OAuth, against the scenario's server.
//!
//! `mcp-conformance-client URL`: the suite appends the URL of its scenario server and sets
//! `MCP_CONFORMANCE_SCENARIO` (the scenario) and `MCP_CONFORMANCE_CONTEXT` (JSON: the
//! pre-registered client of `auth/pre-registration`, ...), and `MCP_CONFORMANCE_PROTOCOL_VERSION`
//! (the revision to speak) with `--spec-version`. The client connects (authorizing
//! with OAuth when the server answers 401: the "browser" is an HTTP GET of the authorization
//! URL, whose redirect lands on the client's loopback listener), lists the tools, calls each
//! once with arguments made from its schema (accepting the servers' questions with their
//! defaults), and closes. It exits 1 with the error if any of
//! that fails.

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tests::browser::Browser;
use tool_sdk::mcp::{McpClient, McpOAuth, McpOAuthConfig, McpServerConfig};
use tool_sdk::{BoxFuture, Elicitation, ElicitationAnswer, Elicitor, Tool, ToolContext, ToolError};

/// The client ID metadata document the suite's `auth/basic-cimd` expects (the suite only
/// checks the URL; it fetches nothing there).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The user, for servers' questions: accepts every form with the defaults its schema gives
/// (`elicitation-sep1034-client-defaults`), and every page.
struct Defaults;

impl Elicitor for Defaults {
    fn elicit<'a>(
        &'a self,
        question: &'a Elicitation,
        _ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<ElicitationAnswer, ToolError>> {
        let content = match question {
            Elicitation::Form { schema, .. } => {
                let mut answer = Map::new();
                if let Some(properties) = schema["properties"].as_object() {
                    for (name, property) in properties {
                        if let Some(default) = property.get("default") {
                            answer.insert(name.clone(), default.clone());
                        }
                    }
                }
                Value::Object(answer)
            }
            _ => json!({}),
        };
        Box::pin(std::future::ready(Ok(ElicitationAnswer::Accept {
            content,
        })))
    }
}

/// Arguments for `tool`: each required property a value of its type, and (for
/// `http-custom-headers`, whose optional `*_val` strings become `Mcp-Param-*` headers) a
/// string that must be base64-encoded in a header for each optional `*_val` string.
fn arguments(tool: &dyn Tool) -> Value {
    let schema = tool.input_schema();
    let mut args = Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            if name.ends_with("_val") && property["type"] == "string" {
                args.insert(name.clone(), json!("héllo wörld"));
            }
        }
    }
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let property = &schema["properties"][name];
        let value = match property["type"].as_str() {
            Some("number" | "integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("test"),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

async fn run(url: &str) -> Result<(), String> {
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    eprintln!("scenario {scenario}, context {context}");
    let mut oauth = McpOAuthConfig::new().with_client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = context["client_id"].as_str() {
        oauth = oauth.with_client(id, context["client_secret"].as_str().map(str::to_owned));
    }
    let mut config = McpServerConfig::http(url).with_oauth(oauth);
    // The revision the suite runs the scenario at (`--spec-version`), if it says.
    if let Ok(version) = std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION") {
        config = config.with_protocol_version(version);
    }
    let settings = McpOAuth::new()
        .with_client_name("tool-sdk conformance client")
        .with_authorizer(Browser::default());
    let client = McpClient::connect_with("conformance", config, settings)
        .await
        .map_err(|e| e.to_string())?;
    eprintln!(
        "connected at protocol {:?}",
        client.protocol_version().await
    );
    let tools: Vec<Arc<dyn Tool>> = client.tools();
    for tool in &tools {
        let args = arguments(tool.as_ref());
        let output = tool
            .call(
                args.clone(),
                &ToolContext::default().with_elicitor(Arc::new(Defaults)),
            )
            .await
            .map_err(|e| format!("{} {args}: {e}", tool.name()))?;
        eprintln!("{} {args} -> {}", tool.name(), output.to_text());
    }
    client.close().await;
    Ok(())
}

#[tokio::main]
async fn main() {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp-conformance-client URL");
        std::process::exit(2);
    };
    if let Err(error) = run(&url).await {
        eprintln!("error: {error}");
        std::process::exit(1);
    }
}
