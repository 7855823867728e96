//! The executor running 8 read-only tools of 100 ms each in one turn (DESIGN.md §9:
//! <= 120 ms, against 800 ms serial). `one_turn/read_only_x8` is the whole run (both model
//! steps included); `one_turn/mutating_x8` is the same calls of a tool that is not read-only,
//! which the executor must run one at a time: the serial baseline, measured, not assumed.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tool_sdk_benches::{nap_registry, ours_one_turn};

fn executor(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let registry = nap_registry();
    let mut group = c.benchmark_group("one_turn");
    group.sample_size(10);
    group.bench_function("read_only_x8", |b| {
        b.iter_custom(|iters| rt.block_on(ours_one_turn(iters, &registry, "nap", 8)))
    });
    group.bench_function("mutating_x8", |b| {
        b.iter_custom(|iters| rt.block_on(ours_one_turn(iters, &registry, "nap_mut", 8)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    targets = executor
}
criterion_main!(benches);
