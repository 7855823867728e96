//! A `tools/call` round trip (issue #28): rmcp's client calls `add` on tool-sdk's MCP server
//! and on rmcp's own, side by side, over stdio (each server a child process: `mcp_add ours|rmcp
//! stdio`) and over Streamable HTTP on loopback (the same binary serving HTTP). The client is
//! rmcp's in every case, so only the server differs. Target: ours at most 1.1× rmcp's.

use std::hint::black_box;
use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use tokio::io::AsyncBufReadExt;
use tool_sdk_benches::runtime;

const SERVER: &str = env!("CARGO_BIN_EXE_mcp_add");

type Client = RunningService<RoleClient, ()>;

/// One call of `add(2, 3)`, checked.
async fn call(client: &Client) {
    let mut params = CallToolRequestParams::new("add");
    params.arguments = json!({"a": 2, "b": 3}).as_object().cloned();
    let result = client.call_tool(params).await.expect("the call succeeds");
    debug_assert_eq!(
        result.content[0].as_text().map(|t| t.text.as_str()),
        Some("5")
    );
    black_box(result);
}

async fn stdio_client(which: &str) -> Client {
    let mut command = tokio::process::Command::new(SERVER);
    command.args([which, "stdio"]);
    let transport = TokioChildProcess::new(command).expect("the server starts");
    ().serve(transport).await.expect("the handshake succeeds")
}

/// Starts the HTTP server as a child (kept alive by its open stdin) and connects to it.
async fn http_client(which: &str) -> (Client, tokio::process::Child) {
    let mut child = tokio::process::Command::new(SERVER)
        .args([which, "http"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the server starts");
    let stdout = child.stdout.take().expect("piped");
    let url = tokio::io::BufReader::new(stdout)
        .lines()
        .next_line()
        .await
        .expect("the server prints its URL")
        .expect("a URL line");
    // Fails only when one is installed already, which does as well.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = ().serve(transport).await.expect("the handshake succeeds");
    (client, child)
}

fn bench_client(c: &mut Criterion, rt: &tokio::runtime::Runtime, name: &str, client: &Client) {
    // Warm both sides (connections, allocations) before criterion's own warm-up.
    rt.block_on(call(client));
    c.bench_function(name, |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    call(client).await;
                }
                started.elapsed()
            })
        })
    });
}

fn mcp_call(c: &mut Criterion) {
    let rt = runtime();
    for which in ["ours", "rmcp"] {
        let client = rt.block_on(stdio_client(which));
        bench_client(c, &rt, &format!("mcp_call/stdio/{which}"), &client);
        rt.block_on(async { drop(client.cancel().await) });
    }
    for which in ["ours", "rmcp"] {
        let (client, child) = rt.block_on(http_client(which));
        bench_client(c, &rt, &format!("mcp_call/http/{which}"), &client);
        rt.block_on(async { drop(client.cancel().await) });
        drop(child);
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    targets = mcp_call
}
criterion_main!(benches);
