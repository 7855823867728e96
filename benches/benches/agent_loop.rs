//! Tool dispatch through the whole agent loop (DESIGN.md §9: <= 5 us/call, <= 20 us/step,
//! linear in history), side by side with rig's agent loop (feature `rig`), and one call
//! through the tool registry side by side with rmcp's tool router.
//!
//! `loop/<peer>/T<t>_N<n>` is one run of `t` turns of `n` parallel `add` calls each plus a
//! final text turn, scripted model. `bench/run` derives per-step, per-call and history-growth
//! figures from these.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, NumberOrString};
use rmcp::schemars::JsonSchema;
use rmcp::service::{RequestContext, serve_directly};
use rmcp::{RoleServer, ServerHandler, tool, tool_router};
use serde::Deserialize;
use serde_json::json;
use tool_sdk::ToolContext;
use tool_sdk_benches::{add_registry, ours_runs, runtime};

/// The (turns, calls per turn) shapes measured.
const SHAPES: &[(usize, usize)] = &[(1, 1), (1, 8), (10, 1), (10, 8), (50, 1), (100, 1)];

fn agent_loop(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("loop");
    for &(turns, calls) in SHAPES {
        let id = format!("T{turns}_N{calls}");
        group.bench_function(format!("ours/{id}"), |b| {
            b.iter_custom(|iters| rt.block_on(ours_runs(iters, turns, calls)))
        });
        #[cfg(feature = "rig")]
        group.bench_function(format!("rig/{id}"), |b| {
            b.iter_custom(|iters| rt.block_on(tool_sdk_benches::rig::runs(iters, turns, calls)))
        });
    }
    group.finish();
}

/// The arguments of `add`, for rmcp.
#[derive(Deserialize, JsonSchema)]
struct AddArgs {
    a: i64,
    b: i64,
}

/// `add` as an rmcp server tool.
#[derive(Clone)]
struct McpAdd;

#[tool_router]
impl McpAdd {
    /// Adds two numbers.
    #[tool(description = "Adds two numbers.")]
    async fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }
}

impl ServerHandler for McpAdd {}

fn registry_call(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("dispatch");

    let registry = add_registry();
    let ctx = ToolContext::new(std::env::temp_dir());
    group.bench_function("ours", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                for _ in 0..iters {
                    let output = registry.call("add", json!({"a": 2, "b": 3}), &ctx).await;
                    debug_assert!(!output.is_error);
                    black_box(output);
                }
                started.elapsed()
            })
        })
    });

    // rmcp's router needs a request context, which holds a peer: serve the tool on an
    // in-memory pipe (never written to here) to get one.
    let server = McpAdd;
    let router = McpAdd::tool_router();
    let peer = rt.block_on(async {
        let (server_io, _client_io) = tokio::io::duplex(4096);
        let running = serve_directly::<RoleServer, _, _, _, _>(McpAdd, server_io, None);
        let peer = running.peer().clone();
        std::mem::forget(_client_io);
        std::mem::forget(running);
        peer
    });
    group.bench_function("rmcp", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let started = Instant::now();
                for i in 0..iters {
                    let mut params = CallToolRequestParams::new("add");
                    params.arguments = json!({"a": 2, "b": 3}).as_object().cloned();
                    let id = NumberOrString::Number(i as i64);
                    let context = RequestContext::new(id, peer.clone());
                    let output = router
                        .call(ToolCallContext::new(&server, params, context))
                        .await
                        .expect("rmcp calls the tool");
                    black_box(output);
                }
                started.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = agent_loop, registry_call
}
criterion_main!(benches);
