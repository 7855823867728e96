use std::path::Path;

use super::fs_util::{self, blocking};
use tool_sdk_core::{ToolContext, ToolError, tool};

/// Writes a file to the local filesystem, replacing it if it exists.
///
/// - `file_path` should be an absolute path; a relative one is taken from the working
///   directory. Missing parent directories are created.
/// - An existing file must have been read with the Read tool in this session, and must not
///   have changed on disk since; otherwise the write is refused. Read it (again) first.
/// - To change part of an existing file, prefer Edit: it sends only the change. Use Write for
///   new files or complete rewrites.
/// - Do not create files the task does not need, such as documentation or README files
///   nobody asked for.
/// - The file is replaced atomically and keeps its permissions.
#[tool(
    name = "Write",
    acts_on(writes = "file_path"),
    category = "builtin",
    destructive,
    title = "Write {file_path}"
)]
pub async fn write(
    /// The absolute path of the file to write.
    file_path: String,
    /// The full contents to write to the file.
    content: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let path = fs_util::resolve_for_write(ctx, &file_path)?;
    let ctx = ctx.clone();
    blocking(move || write_file(&path, &content, &ctx)).await
}

fn write_file(path: &Path, content: &str, ctx: &ToolContext) -> Result<String, ToolError> {
    let existing = fs_util::metadata_if_exists(path)?;
    if let Some(metadata) = &existing {
        fs_util::ensure_regular_file(path, metadata)?;
        fs_util::ensure_read_and_unchanged(ctx, path, metadata)?;
    }
    fs_util::write_atomic(ctx, path, content.as_bytes())?;
    fs_util::record_written(ctx, path);
    let verb = if existing.is_some() {
        "Updated"
    } else {
        "Created"
    };
    Ok(format!(
        "{verb} {} ({}).",
        path.display(),
        fs_util::lines_label(fs_util::line_count(content))
    ))
}
