//! The first registration of 100 tools in a fresh process, schema generation included (the
//! schemas are cached after it). Prints one line: `cold_ns <n> warm_ns <n>`, the second being
//! a second registration in the same process. `bench/run` runs it in several processes.

use std::time::Instant;

use tool_sdk::ToolRegistry;
use tool_sdk_benches::hundred;

fn register() -> u128 {
    let started = Instant::now();
    let registry = ToolRegistry::new();
    for tool in hundred::all() {
        registry.register(tool).expect("registers");
    }
    let elapsed = started.elapsed().as_nanos();
    assert_eq!(registry.len(), 100);
    elapsed
}

fn main() {
    let cold = register();
    let warm = register();
    println!("cold_ns {cold} warm_ns {warm}");
}
