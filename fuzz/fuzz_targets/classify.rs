//! Fuzzes the Bash command classifier: it must never panic, must be deterministic, and a
//! command with a Deny-worthy part must never be allowed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tool_sdk::permission::bash::{Decision, classify, simple_commands};

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let first = classify(input);
    assert_eq!(first, classify(input), "not deterministic");
    let _ = simple_commands(input);
    for guarded in [
        format!("sudo ls;{input}"),
        format!("rm -rf ~\n{input}"),
    ] {
        assert_ne!(classify(&guarded).decision, Decision::Allow, "{guarded:?}");
    }
});
