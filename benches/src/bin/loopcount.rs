//! Runs the agent-loop workload a given number of times, for instruction counts under
//! callgrind (`bench/run` subtracts a run with half the repetitions, so process start-up
//! cancels out): `loopcount ours|rig TURNS CALLS REPS`.

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, peer, turns, calls, reps] = args.as_slice() else {
        eprintln!("usage: loopcount ours|rig TURNS CALLS REPS");
        std::process::exit(2);
    };
    let (turns, calls, reps): (usize, usize, u64) = (
        turns.parse().expect("TURNS"),
        calls.parse().expect("CALLS"),
        reps.parse().expect("REPS"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let elapsed = match peer.as_str() {
        "ours" => runtime.block_on(tool_sdk_benches::ours_runs(reps, turns, calls)),
        #[cfg(feature = "rig")]
        "rig" => runtime.block_on(tool_sdk_benches::rig::runs(reps, turns, calls)),
        other => panic!("unknown peer {other} (rig needs the `rig` feature)"),
    };
    println!("{} ns", elapsed.as_nanos());
}
