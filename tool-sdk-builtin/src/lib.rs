//! The built-in tools of [tool-sdk](https://docs.rs/tool-sdk), written with `#[tool]` like any
//! other and registered under the names and parameters Claude Code uses, and the permission
//! gate that judges every call. Apps use them as `tool_sdk::builtin` and
//! `tool_sdk::permission`, which re-export these modules.
//!
//! The gate lives with the tools because the Bash tool and the gate share the Bash classifier
//! (`permission::bash`). The crate needs neither rmcp, jsonschema nor SQLite, so a clean build
//! compiles it beside them.

pub mod builtin;
pub mod permission;
