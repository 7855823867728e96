//! Built-in tools, written with `#[tool]` like any other and registered under the names
//! Claude Code uses.

mod task;

pub use task::TaskTool;
