use std::fs;
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::fs_util::{self, blocking};
use tool_sdk_core::{ToolContext, ToolError, tool};

/// The kind of a notebook cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    /// A code cell.
    Code,
    /// A markdown cell.
    Markdown,
}

impl CellType {
    fn as_str(self) -> &'static str {
        match self {
            CellType::Code => "code",
            CellType::Markdown => "markdown",
        }
    }
}

/// What NotebookEdit does with the cell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EditMode {
    /// Replace the cell's source.
    #[default]
    Replace,
    /// Insert a new cell after the given one (or at the start).
    Insert,
    /// Delete the cell.
    Delete,
}

/// Changes one cell of a Jupyter notebook (`.ipynb`): replaces its source, inserts a new cell,
/// or deletes it.
///
/// - Read the notebook with the Read tool first: it shows each cell's id and index. An edit of
///   a notebook that was not read, or that changed on disk since, is refused.
/// - `cell_id` names the cell by its id; a 0-based index (`3` or `cell-3`) also works for
///   notebooks without ids.
/// - `edit_mode` is `replace` (the default), `insert` or `delete`. `insert` adds a new cell
///   after `cell_id`, or at the start when `cell_id` is left out, and needs `cell_type`.
///   `delete` ignores `new_source`.
/// - Replacing the source of a code cell clears its outputs and execution count.
/// - Use this tool, not Edit or Write, for `.ipynb` files: it keeps the notebook valid.
#[tool(
    name = "NotebookEdit",
    acts_on(writes = "notebook_path"),
    category = "builtin",
    destructive,
    title = "Edit notebook {notebook_path}"
)]
pub async fn notebook_edit(
    /// The absolute path of the notebook (`.ipynb`) to change.
    notebook_path: String,
    /// The id of the cell to change (or, for insert, the cell to insert after). A 0-based
    /// index also works.
    cell_id: Option<String>,
    /// The new source of the cell.
    new_source: String,
    /// The type of the cell: `code` or `markdown`. Required for insert; for replace, changes
    /// the cell's type (default: keep it).
    cell_type: Option<CellType>,
    /// `replace` (default), `insert` or `delete`.
    edit_mode: Option<EditMode>,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let path = fs_util::resolve_for_write(ctx, &notebook_path)?;
    let ctx = ctx.clone();
    let edit = CellEdit {
        cell_id,
        new_source,
        cell_type,
        mode: edit_mode.unwrap_or_default(),
    };
    blocking(move || edit_notebook(&path, edit, &ctx)).await
}

struct CellEdit {
    cell_id: Option<String>,
    new_source: String,
    cell_type: Option<CellType>,
    mode: EditMode,
}

fn edit_notebook(path: &Path, edit: CellEdit, ctx: &ToolContext) -> Result<String, ToolError> {
    let Some(metadata) = fs_util::metadata_if_exists(path)? else {
        return Err(fs_util::not_found(path));
    };
    fs_util::ensure_regular_file(path, &metadata)?;
    if !path
        .extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("ipynb"))
    {
        return Err(ToolError::invalid_input(format!(
            "{} is not a Jupyter notebook (.ipynb); use Edit for other files",
            path.display()
        )));
    }
    fs_util::ensure_read_and_unchanged(ctx, path, &metadata)?;
    let text = fs::read_to_string(path).map_err(|e| fs_util::io_error(path, "read", &e))?;
    let mut notebook: Value = serde_json::from_str(&text).map_err(|e| {
        ToolError::failed(format!(
            "{} is not valid notebook JSON: {e}",
            path.display()
        ))
    })?;
    let with_ids = has_cell_ids(&notebook);
    let Some(cells) = notebook.get_mut("cells").and_then(Value::as_array_mut) else {
        return Err(ToolError::failed(format!(
            "{} has no `cells` list, so it is not a valid notebook",
            path.display()
        )));
    };

    let summary = match edit.mode {
        EditMode::Replace => {
            let index = required_cell(cells, edit.cell_id.as_deref(), "replace")?;
            let cell = cells[index]
                .as_object_mut()
                .ok_or_else(|| ToolError::failed(format!("cell {index} is not an object")))?;
            let form = cell.get("source").cloned().unwrap_or(Value::Null);
            cell.insert("source".into(), source_value(&edit.new_source, &form));
            let old_type = cell
                .get("cell_type")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let new_type = edit
                .cell_type
                .map(CellType::as_str)
                .or(old_type.as_deref())
                .unwrap_or("code")
                .to_owned();
            if old_type.as_deref() != Some(&new_type) {
                cell.insert("cell_type".into(), Value::String(new_type.clone()));
            }
            if new_type == "code" {
                // The old outputs came from the old source: drop them.
                cell.insert("execution_count".into(), Value::Null);
                cell.insert("outputs".into(), json!([]));
            } else {
                cell.remove("execution_count");
                cell.remove("outputs");
            }
            format!("Replaced the source of cell {}", describe(cells, index))
        }
        EditMode::Insert => {
            let cell_type = edit.cell_type.ok_or_else(|| {
                ToolError::invalid_input(
                    "cell_type (code or markdown) is required to insert a cell",
                )
            })?;
            let at = match edit.cell_id.as_deref() {
                Some(id) => find_cell(cells, id).ok_or_else(|| unknown_cell(cells, id))? + 1,
                None => 0,
            };
            let form = cells
                .iter()
                .find_map(|cell| cell.get("source"))
                .cloned()
                .unwrap_or(json!([]));
            let id = with_ids.then(|| new_cell_id(cells));
            cells.insert(
                at,
                new_cell(cell_type, id, source_value(&edit.new_source, &form)),
            );
            format!(
                "Inserted a new {} cell {} at index {at}",
                cell_type.as_str(),
                describe(cells, at)
            )
        }
        EditMode::Delete => {
            let index = required_cell(cells, edit.cell_id.as_deref(), "delete")?;
            let described = describe(cells, index);
            cells.remove(index);
            format!("Deleted cell {described} ({} cells left)", cells.len())
        }
    };

    let serialized = serialize_like(&notebook, &text)?;
    fs_util::write_atomic(ctx, path, serialized.as_bytes())?;
    fs_util::record_written(ctx, path);
    Ok(format!("{summary} in {}.", path.display()))
}

/// Whether the notebook's format has cell ids (nbformat 4.5 and later).
fn has_cell_ids(notebook: &Value) -> bool {
    let major = notebook["nbformat"].as_u64().unwrap_or(4);
    let minor = notebook["nbformat_minor"].as_u64().unwrap_or(0);
    major > 4 || (major == 4 && minor >= 5)
}

fn required_cell(cells: &[Value], cell_id: Option<&str>, action: &str) -> Result<usize, ToolError> {
    let id = cell_id.ok_or_else(|| {
        ToolError::invalid_input(format!("cell_id is required to {action} a cell"))
    })?;
    find_cell(cells, id).ok_or_else(|| unknown_cell(cells, id))
}

/// The cell with this id, else the cell at this 0-based index (`3` or `cell-3`).
fn find_cell(cells: &[Value], id: &str) -> Option<usize> {
    if let Some(index) = cells
        .iter()
        .position(|cell| cell["id"].as_str() == Some(id))
    {
        return Some(index);
    }
    let number = id.strip_prefix("cell-").unwrap_or(id);
    number
        .parse::<usize>()
        .ok()
        .filter(|&index| index < cells.len())
}

fn unknown_cell(cells: &[Value], id: &str) -> ToolError {
    let ids: Vec<&str> = cells
        .iter()
        .filter_map(|cell| cell["id"].as_str())
        .collect();
    let known = if ids.is_empty() {
        format!(
            "its cells have no ids; use an index from 0 to {}",
            cells.len().saturating_sub(1)
        )
    } else {
        format!("its cell ids are: {}", ids.join(", "))
    };
    ToolError::not_found(format!(
        "no cell `{id}` in the notebook, which has {} cells; {known}",
        cells.len()
    ))
}

fn describe(cells: &[Value], index: usize) -> String {
    match cells[index]["id"].as_str() {
        Some(id) => format!("`{id}`"),
        None => format!("at index {index}"),
    }
}

/// The new source in the form the notebook already uses: one string, or a list of lines
/// each keeping its line break.
fn source_value(source: &str, form: &Value) -> Value {
    match form {
        Value::String(_) => Value::String(source.to_owned()),
        _ => Value::Array(
            source
                .split_inclusive('\n')
                .map(|line| Value::String(line.to_owned()))
                .collect(),
        ),
    }
}

fn new_cell(cell_type: CellType, id: Option<String>, source: Value) -> Value {
    // Keys in the order Jupyter writes them.
    let mut cell = Map::new();
    cell.insert("cell_type".into(), json!(cell_type.as_str()));
    if cell_type == CellType::Code {
        cell.insert("execution_count".into(), Value::Null);
    }
    if let Some(id) = id {
        cell.insert("id".into(), Value::String(id));
    }
    cell.insert("metadata".into(), json!({}));
    if cell_type == CellType::Code {
        cell.insert("outputs".into(), json!([]));
    }
    cell.insert("source".into(), source);
    Value::Object(cell)
}

fn new_cell_id(cells: &[Value]) -> String {
    loop {
        let id: String = (0..8)
            .map(|_| char::from_digit(fastrand::u32(0..16), 16).unwrap_or('0'))
            .collect();
        if !cells.iter().any(|cell| cell["id"].as_str() == Some(&id)) {
            return id;
        }
    }
}

/// Serialises the notebook with the indentation and final newline of the original, so the
/// only differences are the edit.
fn serialize_like(notebook: &Value, original: &str) -> Result<String, ToolError> {
    let indent = original
        .lines()
        .nth(1)
        .map(|line| &line[..line.len() - line.trim_start().len()])
        .filter(|indent| !indent.is_empty())
        .unwrap_or(" ");
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    notebook
        .serialize(&mut serializer)
        .map_err(|e| ToolError::failed(format!("cannot serialise the notebook: {e}")))?;
    let mut text = String::from_utf8(out)
        .map_err(|e| ToolError::failed(format!("cannot serialise the notebook: {e}")))?;
    if original.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}
