use std::fs;
use std::io::Read as _;
use std::path::Path;

use serde_json::Value;

use super::fs_util::{self, blocking};
use tool_sdk_core::{ContentBlock, ToolContext, ToolError, tool};

/// How many lines are read when no limit is given.
const DEFAULT_LIMIT: usize = 2000;
/// Longer lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 2000;
/// Text files larger than this are refused whole (read them in pieces with other tools).
const MAX_TEXT_BYTES: u64 = 32 * 1024 * 1024;
/// Images larger than this are refused: models do not accept them.
const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;
/// How much of the start of a file is checked for NUL bytes.
const SNIFF_BYTES: usize = 8192;

/// Reads a file from the local filesystem and returns its contents with line numbers.
///
/// - `file_path` should be an absolute path; a relative one is taken from the working
///   directory.
/// - By default up to 2000 lines are returned from the start of the file. For long files, pass
///   `offset` (the 1-based line to start at) and `limit` (how many lines) to read a part;
///   otherwise prefer reading the whole file.
/// - The output is `cat -n` style: the line number, a tab, then the line. The number and tab
///   are not part of the file: leave them out of any text you pass to Edit.
/// - Lines longer than 2000 characters are cut short.
/// - Images (PNG, JPEG, GIF, WebP) are returned as images you can look at.
/// - Jupyter notebooks (`.ipynb`) are shown cell by cell with their outputs.
/// - Only regular files can be read: list directories with a shell command instead. Binary
///   files are refused.
/// - Read a file before changing it with Write or Edit; those tools check that you did.
/// - When several files may be useful, read them all in one turn with parallel calls.
#[tool(
    name = "Read",
    acts_on(reads = "file_path"),
    category = "builtin",
    read_only,
    title = "Read {file_path}"
)]
pub async fn read(
    /// The absolute path of the file to read.
    file_path: String,
    /// The 1-based line number to start reading at. Only for files too long to read at once.
    offset: Option<u64>,
    /// How many lines to read (default 2000). Only for files too long to read at once.
    limit: Option<u64>,
    ctx: &ToolContext,
) -> Result<Vec<ContentBlock>, ToolError> {
    let path = fs_util::resolve_for_read(ctx, &file_path)?;
    let ctx = ctx.clone();
    blocking(move || read_file(&path, offset, limit, &ctx)).await
}

fn read_file(
    path: &Path,
    offset: Option<u64>,
    limit: Option<u64>,
    ctx: &ToolContext,
) -> Result<Vec<ContentBlock>, ToolError> {
    // Checked by type before opening, so a FIFO is refused instead of blocking the call.
    let metadata = fs::metadata(path).map_err(|e| fs_util::io_error(path, "read", &e))?;
    fs_util::ensure_regular_file(path, &metadata)?;
    // Inside an agent the open is confined by the kernel to the sandbox's directories, so a
    // path swapped for a symlink after the check cannot lead outside.
    let mut file = match ctx.sandbox() {
        Some(sandbox) => sandbox
            .open_read(path)
            .map_err(|error| ToolError::permission_denied(error.to_string()))?,
        None => fs::File::open(path).map_err(|e| fs_util::io_error(path, "open", &e))?,
    };
    // The path may have been swapped between the check and the open: check what was opened.
    let metadata = file
        .metadata()
        .map_err(|e| fs_util::io_error(path, "inspect", &e))?;
    fs_util::ensure_regular_file(path, &metadata)?;

    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut head)
        .map_err(|e| fs_util::io_error(path, "read", &e))?;

    if let Some(media_type) = image_type(&head) {
        if metadata.len() > MAX_IMAGE_BYTES {
            return Err(ToolError::invalid_input(format!(
                "{} is a {media_type} image of {} bytes, larger than the {} bytes an image \
                 may have here",
                path.display(),
                metadata.len(),
                MAX_IMAGE_BYTES
            )));
        }
        let bytes = read_rest(path, &mut file, head)?;
        record_read(ctx, path, &metadata);
        return Ok(vec![ContentBlock::image(media_type, &bytes)]);
    }
    if head.contains(&0) {
        return Err(binary(path, "it contains NUL bytes"));
    }
    if metadata.len() > MAX_TEXT_BYTES {
        return Err(ToolError::invalid_input(format!(
            "{} is {} bytes, too large to read with this tool (the limit is {} bytes); \
             search it or read parts of it with shell commands such as grep, head or tail",
            path.display(),
            metadata.len(),
            MAX_TEXT_BYTES
        )));
    }
    let bytes = read_rest(path, &mut file, head)?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(binary(path, "it is not valid UTF-8 text"));
    };
    record_read(ctx, path, &metadata);

    if text.is_empty() {
        return Ok(vec![ContentBlock::text(format!(
            "The file {} exists but is empty.",
            path.display()
        ))]);
    }
    // A notebook that is not valid JSON is shown as the text it is, so the model can see
    // what is wrong with it.
    if is_notebook(path)
        && let Ok(notebook) = serde_json::from_str::<Value>(&text)
    {
        return Ok(render_notebook(&notebook));
    }
    Ok(vec![ContentBlock::text(numbered(&text, offset, limit))])
}

fn read_rest(path: &Path, file: &mut fs::File, mut bytes: Vec<u8>) -> Result<Vec<u8>, ToolError> {
    file.read_to_end(&mut bytes)
        .map_err(|e| fs_util::io_error(path, "read", &e))?;
    Ok(bytes)
}

fn record_read(ctx: &ToolContext, path: &Path, metadata: &fs::Metadata) {
    ctx.files()
        .record_read(fs_util::tracking_key(path), fs_util::modified(metadata));
}

fn binary(path: &Path, why: &str) -> ToolError {
    ToolError::invalid_input(format!(
        "{} looks like a binary file ({why}). Read handles text files, images (PNG, JPEG, \
         GIF, WebP) and Jupyter notebooks; inspect other files with shell tools such as \
         `file` or `xxd`",
        path.display()
    ))
}

/// The MIME type of an image, from its first bytes.
fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

fn is_notebook(path: &Path) -> bool {
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("ipynb"))
}

/// `cat -n` style: the right-aligned line number, a tab, the line.
fn numbered(text: &str, offset: Option<u64>, limit: Option<u64>) -> String {
    let total = text.lines().count();
    let start = offset.unwrap_or(1).max(1) as usize;
    let limit = match limit {
        Some(0) | None => DEFAULT_LIMIT,
        Some(n) => usize::try_from(n).unwrap_or(usize::MAX),
    };
    if start > total {
        return format!(
            "The file has {total} line{}; offset {start} is past its end. Use a smaller offset.",
            if total == 1 { "" } else { "s" }
        );
    }
    let mut out = String::new();
    let mut last = start - 1;
    for (index, line) in text.lines().enumerate().skip(start - 1).take(limit) {
        let number = index + 1;
        last = number;
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!("{number:>6}\t"));
        match line.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                out.push_str(&line[..cut]);
                out.push_str(&format!(
                    "… [line cut: {} characters in all]",
                    line.chars().count()
                ));
            }
            None => out.push_str(line),
        }
    }
    if last < total {
        out.push_str(&format!(
            "\n\n[Showing lines {start}-{last} of {total}. Call Read again with offset={} to \
             see more.]",
            last + 1
        ));
    }
    out
}

/// A notebook cell by cell: type, id, source, then the text of its outputs; images in
/// outputs become image blocks.
fn render_notebook(notebook: &Value) -> Vec<ContentBlock> {
    let cells = notebook["cells"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let language = notebook["metadata"]["language_info"]["name"]
        .as_str()
        .or_else(|| notebook["metadata"]["kernelspec"]["language"].as_str())
        .unwrap_or("python");
    let mut blocks = Vec::new();
    let mut text = format!("Jupyter notebook ({language}), {} cells.\n", cells.len());
    if cells.is_empty() {
        text.push_str("The notebook has no cells.\n");
    }
    for (index, cell) in cells.iter().enumerate() {
        let cell_type = cell["cell_type"].as_str().unwrap_or("unknown");
        text.push_str(&format!("\n<cell index=\"{index}\""));
        if let Some(id) = cell["id"].as_str() {
            text.push_str(&format!(" id=\"{id}\""));
        }
        text.push_str(&format!(" type=\"{cell_type}\""));
        if let Some(count) = cell["execution_count"].as_u64() {
            text.push_str(&format!(" execution_count=\"{count}\""));
        }
        text.push_str(">\n");
        text.push_str(&multiline(&cell["source"]));
        ensure_newline(&mut text);
        let outputs = cell["outputs"].as_array().map(Vec::as_slice).unwrap_or(&[]);
        for output in outputs {
            let output_text = output_text(output);
            if !output_text.is_empty() {
                text.push_str("<output>\n");
                text.push_str(&output_text);
                ensure_newline(&mut text);
                text.push_str("</output>\n");
            }
            for (media_type, data) in output_images(output) {
                text.push_str(&format!("<output image=\"{media_type}\"/>\n"));
                blocks.push(ContentBlock::text(std::mem::take(&mut text)));
                blocks.push(ContentBlock::Image { media_type, data });
            }
        }
        text.push_str("</cell>\n");
    }
    blocks.push(ContentBlock::text(text.trim_end().to_owned()));
    blocks
}

/// nbformat stores multiline text as a string or as a list of lines.
fn multiline(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Array(lines) => lines.iter().filter_map(Value::as_str).collect(),
        _ => String::new(),
    }
}

fn ensure_newline(text: &mut String) {
    if !text.ends_with('\n') {
        text.push('\n');
    }
}

fn output_text(output: &Value) -> String {
    match output["output_type"].as_str() {
        Some("stream") => multiline(&output["text"]),
        Some("execute_result" | "display_data") => multiline(&output["data"]["text/plain"]),
        Some("error") => {
            let name = output["ename"].as_str().unwrap_or("Error");
            let value = output["evalue"].as_str().unwrap_or("");
            format!("{name}: {value}")
        }
        _ => String::new(),
    }
}

fn output_images(output: &Value) -> Vec<(String, String)> {
    ["image/png", "image/jpeg"]
        .into_iter()
        .filter_map(|media_type| {
            let data = multiline(&output["data"][media_type]);
            let data: String = data.chars().filter(|c| !c.is_whitespace()).collect();
            (!data.is_empty()).then(|| (media_type.to_owned(), data))
        })
        .collect()
}
