//! Serves the built-in file tools over MCP, confined to one directory.
//!
//! ```text
//! cargo run --example mcp_server --features mcp-server -- DIR                # stdio (for Claude Desktop, Claude Code, ...)
//! cargo run --example mcp_server --features mcp-server -- DIR --http [ADDR]  # Streamable HTTP, default 127.0.0.1:8931
//! ```
//!
//! For Claude Code: `claude mcp add files -- /path/to/mcp_server DIR`. Read, Glob and Grep are
//! listed as read-only; Write and Edit can change files under DIR, and nothing outside it.

use std::sync::Arc;

use tool_sdk::builtin::{EditTool, GlobTool, GrepTool, ReadTool, WriteTool};
use tool_sdk::mcp::McpToolServer;
use tool_sdk::{Tool, ToolRegistry};

const USAGE: &str = "usage: mcp_server DIR [--http [ADDR]]   (ADDR defaults to 127.0.0.1:8931)";

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (root, http) = match args.as_slice() {
        [root] => (root, None),
        [root, flag] if flag == "--http" => (root, Some("127.0.0.1:8931")),
        [root, flag, addr] if flag == "--http" => (root, Some(addr.as_str())),
        _ => return Err(USAGE.into()),
    };

    let registry = Arc::new(ToolRegistry::new());
    let tools: [Arc<dyn Tool>; 5] = [
        Arc::new(ReadTool),
        Arc::new(GlobTool),
        Arc::new(GrepTool),
        Arc::new(WriteTool),
        Arc::new(EditTool),
    ];
    for tool in tools {
        registry.register(tool)?;
    }
    let server = McpToolServer::new(registry)
        .with_name("tool-sdk-files")
        .with_root(root)?;

    match http {
        None => server.serve_stdio().await?,
        Some(addr) => {
            let running = server.serve_http(addr.parse()?).await?;
            // stdout is free here (stdio mode needs it for the protocol).
            println!("serving {root} at {}", running.url());
            tokio::signal::ctrl_c().await?;
        }
    }
    Ok(())
}
