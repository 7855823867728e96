//! Examples of tool-sdk live beside this file; run one with `cargo run --example <name>`.
