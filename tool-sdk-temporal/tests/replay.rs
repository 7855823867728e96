//! Every workflow history in `tests/histories/` replays with the current code, with no
//! nondeterminism: a worker that runs this code can take over any of those runs half way.
//!
//! The histories are real runs on a dev server, kept by the tests that make them when run
//! with `RECORD_HISTORIES=1`, one each: mixed reads and writes, a worker killed mid-call,
//! another killed while asking, reads run as local activities (one killed), approvals across restarts, a tool's question answered, a tool
//! retried, continue-as-new, a managed window compacted, typed answers refused then taken or
//! failed, rules and hooks, a budget spent, a cancelled run. Record them again only for a
//! change that may break runs already under way; any other change to the workflow must replay
//! them as they are (Temporal's patching, `WorkflowContext::patched`, keeps old runs on their
//! old road).

#[allow(dead_code)]
#[path = "support/server.rs"]
mod server;

use std::path::Path;

/// The histories kept: one missing, or one more, fails the test.
const KEPT: [&str; 14] = [
    "approval_after_restarts",
    "budget_stopped",
    "cancelled",
    "compacted_window",
    "config_rules_hooks",
    "continued_as_new",
    "killed_mid_call",
    "killed_while_asking",
    "local_reads",
    "question_answered",
    "retried_tool",
    "ten_steps",
    "typed",
    "typed_fail",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_histories_replay_with_the_current_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/histories");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, KEPT, "the kept histories");
    for name in &found {
        let json = std::fs::read(dir.join(format!("{name}.json"))).unwrap();
        let events = String::from_utf8_lossy(&json)
            .matches("\"event_id\"")
            .count();
        assert!(events > 10, "{name}: a whole run, not {events} events");
        server::replay(&json)
            .await
            .unwrap_or_else(|e| panic!("{name}.json does not replay with this code: {e}"));
    }
}
