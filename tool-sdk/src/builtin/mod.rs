//! Built-in tools, written with `#[tool]` like any other and registered under the names
//! Claude Code uses.

mod bash;
mod task;
mod web;

pub mod utils;

pub use bash::{BashOutputTool, BashTool, KillShellTool, ShellState};
pub use task::TaskTool;
pub use web::WebFetchTool;
