//! Built-in tools, written with `#[tool]` like any other (Skill by hand, since it is built at
//! start-up) and registered under the names and parameters Claude Code uses.

mod ask;
mod glob;
mod grep;
mod plan;
mod skill;
mod task;
mod todo;

pub use ask::{
    Answer, AskUserQuestionTool, Question, QuestionHandler, QuestionOption, UserQuestions,
};
pub use glob::GlobTool;
pub use grep::{GrepOutputMode, GrepTool};
pub use plan::ExitPlanModeTool;
pub use skill::{Skill, SkillError, SkillTool};
pub use task::TaskTool;
pub use todo::{Todo, TodoList, TodoStatus, TodoWriteTool};
mod edit;
mod fs_util;

#[doc(hidden)]
pub use fs_util::{modified as file_modified, tracking_key as file_key};
mod notebook_edit;
mod read;
mod write;

pub use edit::EditTool;
pub use notebook_edit::{CellType, EditMode, NotebookEditTool};
pub use read::ReadTool;
pub use write::WriteTool;
mod bash;
mod containment;
mod shell_env;
mod web;

pub mod utils;

pub use bash::{BashOutputTool, BashTool, KillShellTool, ShellState};
pub use containment::ShellPolicy;
pub use web::WebFetchTool;
