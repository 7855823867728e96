//! One MCP server with one tool, `add(a, b)`, in two builds chosen by the first argument, so
//! the `mcp` bench starts both as child processes of the same shape:
//!
//! - `ours`: tool-sdk's server (`McpToolServer`) of a registry holding `add`;
//! - `rmcp`: rmcp's own server, the same tool written with its `#[tool]` macros.
//!
//! The second argument picks the transport: `stdio` serves one client on stdin and stdout;
//! `http` serves Streamable HTTP on a free loopback port, prints its URL as the first line of
//! stdout, and stops when stdin closes (the bench holds it open).

use std::convert::Infallible;
use std::sync::Arc;

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::schemars::JsonSchema;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tool_sdk::mcp::McpToolServer;
use tool_sdk_benches::add_registry;

/// The arguments of `add`, for rmcp.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// `add` as an rmcp server.
#[derive(Clone)]
struct RmcpAdd;

#[tool_router]
impl RmcpAdd {
    /// Adds two numbers.
    #[tool(description = "Adds two numbers.", annotations(read_only_hint = true))]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler]
impl ServerHandler for RmcpAdd {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (which, transport) = match args.as_slice() {
        [w, t] if (w == "ours" || w == "rmcp") && (t == "stdio" || t == "http") => (w, t),
        _ => {
            eprintln!("usage: mcp_add ours|rmcp stdio|http");
            std::process::exit(2);
        }
    };
    // Two worker threads, like the machine and the client's runtime.
    let runtime = tool_sdk_benches::runtime();
    runtime.block_on(async {
        match (which.as_str(), transport.as_str()) {
            ("ours", "stdio") => McpToolServer::new(add_registry())
                .serve_stdio()
                .await
                .expect("our server serves"),
            ("rmcp", "stdio") => {
                let running = RmcpAdd
                    .serve(rmcp::transport::stdio())
                    .await
                    .expect("rmcp's server starts");
                let _ = running.waiting().await;
            }
            ("ours", _) => {
                let addr = "127.0.0.1:0".parse().expect("an address");
                let server = McpToolServer::new(add_registry())
                    .serve_http(addr)
                    .await
                    .expect("our server listens");
                println!("{}", server.url());
                until_stdin_closes().await;
            }
            _ => {
                let url = rmcp_http().await;
                println!("{url}");
                until_stdin_closes().await;
            }
        }
    });
}

async fn until_stdin_closes() {
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
}

/// rmcp's Streamable HTTP service with its default config, on the same hyper loop as ours, so
/// only the handler differs.
async fn rmcp_http() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let addr = listener.local_addr().expect("bound");
    let service = StreamableHttpService::new(
        || Ok(RmcpAdd),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let service = service.clone();
            tokio::spawn(async move {
                let handler = hyper::service::service_fn(move |request| {
                    let service = service.clone();
                    async move { Ok::<_, Infallible>(service.handle(request).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), handler)
                    .await;
            });
        }
    });
    format!("http://{addr}/mcp")
}
