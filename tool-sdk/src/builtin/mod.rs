//! Built-in tools, written with `#[tool]` like any other and registered under the names
//! Claude Code uses.

mod bash;
mod task;

pub use bash::{BashOutputTool, BashTool, KillShellTool, ShellState};
pub use task::TaskTool;
