//! The model clients side by side (#27): reading one streamed turn of 10,000 text deltas, per
//! event, and the whole agent loop over each client's wire format, per step. `bench/run`
//! divides: `events/<client>` by 10,000, `loop/<client>/T10` by its 11 requests.

use criterion::{Criterion, criterion_group, criterion_main};
use tool_sdk_benches::runtime;
use tool_sdk_benches::streams::{CLIENTS, loop_runs, loop_server, read_streams, text_stream};

/// Calling turns in the loop workload (then a text turn).
const TURNS: usize = 10;

fn streams(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("streams");
    group.sample_size(20);
    for client in CLIENTS {
        let (_server, model) = rt.block_on(text_stream(client));
        group.bench_function(format!("events/{}", client.name), |b| {
            b.iter_custom(|iters| rt.block_on(read_streams(model.as_ref(), iters)))
        });
        let server = rt.block_on(loop_server(client, TURNS));
        group.bench_function(format!("loop/{}/T{TURNS}", client.name), |b| {
            b.iter_custom(|iters| rt.block_on(loop_runs(client, &server, TURNS, iters)))
        });
    }
    group.finish();
}

criterion_group!(benches, streams);
criterion_main!(benches);
