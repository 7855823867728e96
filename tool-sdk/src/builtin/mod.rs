//! Built-in tools, written with `#[tool]` like any other and registered under the names
//! Claude Code uses.

mod glob;
mod grep;
mod task;

pub use glob::GlobTool;
pub use grep::{GrepOutputMode, GrepTool};
pub use task::TaskTool;
