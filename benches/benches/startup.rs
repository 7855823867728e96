//! Start-up cost of 100 tools: building a registry (each tool's schema, generated once per
//! process and then cached, and its compiled validator) and lowering the tool list for each
//! provider. The first, cold registration in a fresh process (schema generation included) is
//! measured by the `startup_cold` binary, which `bench/run` runs in fresh processes.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use tool_sdk::schema::Provider;
use tool_sdk::{ToolRegistry, build_tools};
use tool_sdk_benches::hundred;

fn startup(c: &mut Criterion) {
    let mut group = c.benchmark_group("startup");
    group.bench_function("register_100", |b| {
        b.iter(|| {
            let registry = ToolRegistry::new();
            for tool in hundred::all() {
                registry.register(tool).expect("registers");
            }
            black_box(registry)
        })
    });
    let tools = hundred::all();
    for (name, provider) in [
        ("anthropic", Provider::Anthropic),
        ("openai_strict", Provider::OpenAiStrict),
        ("gemini", Provider::Gemini),
    ] {
        group.bench_function(format!("build_tools_100/{name}"), |b| {
            b.iter(|| black_box(build_tools(&tools, provider)))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    targets = startup
}
criterion_main!(benches);
