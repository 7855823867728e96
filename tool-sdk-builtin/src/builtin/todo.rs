use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use tool_sdk_core::{ToolContext, ToolError, tool};

/// Where a todo item stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on now.
    InProgress,
    /// Done.
    Completed,
}

/// One item of the todo list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Todo {
    /// What to do, in the imperative ("Run the tests").
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
    /// The same in the present continuous, shown while it is in progress ("Running the tests").
    #[serde(rename = "activeForm")]
    pub active_form: String,
}

/// The todo list of one agent, kept between calls.
#[derive(Debug, Default)]
pub struct TodoList(Mutex<Vec<Todo>>);

impl TodoList {
    /// The current items.
    pub fn items(&self) -> Vec<Todo> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn replace(&self, todos: Vec<Todo>) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = todos;
    }
}

/// Creates and updates the structured task list for the current session. Use it to plan and
/// track work with three or more steps, or when the user gives several tasks: it shows the
/// user your progress and keeps you on track.
///
/// Send the whole list each time. Keep exactly one item `in_progress` while working, mark an
/// item `completed` as soon as it is done (not in batches), and only when it is fully done
/// (tests pass, nothing left half-finished). Skip it for single, trivial tasks.
#[tool(
    name = "TodoWrite",
    acts_on(agent_state),
    category = "builtin",
    idempotent,
    title = "Update todos"
)]
pub async fn todo_write(
    /// The updated todo list.
    todos: Vec<Todo>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    if let Some(empty) = todos.iter().position(|todo| todo.content.trim().is_empty()) {
        return Err(ToolError::invalid_input(format!(
            "todo {} has empty content",
            empty + 1
        )));
    }
    let count = |status| todos.iter().filter(|todo| todo.status == status).count();
    let (pending, in_progress, completed) = (
        count(TodoStatus::Pending),
        count(TodoStatus::InProgress),
        count(TodoStatus::Completed),
    );
    // The UI shows the list; the model already knows it.
    ctx.metadata(serde_json::json!({ "todos": todos }));
    ctx.session::<TodoList>().replace(todos);
    Ok(format!(
        "Todo list updated: {completed} completed, {in_progress} in progress, {pending} pending. \
         Keep working through it and keep it current."
    ))
}
