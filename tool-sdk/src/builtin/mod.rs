//! Built-in tools, written with `#[tool]` like any other and registered under the names
//! Claude Code uses.

mod edit;
mod fs_util;
mod notebook_edit;
mod read;
mod task;
mod write;

pub use edit::EditTool;
pub use notebook_edit::{CellType, EditMode, NotebookEditTool};
pub use read::ReadTool;
pub use task::TaskTool;
pub use write::WriteTool;
