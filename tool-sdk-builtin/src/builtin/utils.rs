//! Optional utility tools (cargo feature `utils`, on by default), category `"utils"`: time,
//! sleeping, environment variables, plain HTTP requests, JSON, base64 and small file
//! operations. Relative paths are resolved against the context's working directory.
#![cfg(feature = "utils")]

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde::Serialize;
use serde_json::Value;

use super::web::{
    MAX_CONTENT_CHARS, MAX_DOWNLOAD_BYTES, cap_head, client, parse_http_url, read_capped,
};
use tool_sdk_core::{ToolContext, ToolError, tool};

/// The longest `sleep`, in seconds.
pub const MAX_SLEEP_SECONDS: f64 = 300.0;

fn io_error(what: &str, path: &Path, error: std::io::Error) -> ToolError {
    let message = format!("{what} {}: {error}", path.display());
    match error.kind() {
        std::io::ErrorKind::NotFound => ToolError::not_found(message),
        std::io::ErrorKind::PermissionDenied => ToolError::permission_denied(message),
        _ => ToolError::failed(message),
    }
}

fn timestamp(time: SystemTime) -> Option<String> {
    jiff::Timestamp::try_from(time).ok().map(|t| t.to_string())
}

/// The current date and time.
#[derive(Debug, Serialize)]
pub struct CurrentTime {
    /// RFC 3339 with the offset, e.g. `2025-03-01T14:05:09+01:00`.
    pub datetime: String,
    /// The IANA time zone name, e.g. `Europe/Lisbon`.
    pub timezone: String,
    /// The offset from UTC, e.g. `+01:00`.
    pub utc_offset: String,
    /// The day of the week, e.g. `Saturday`.
    pub weekday: String,
    /// Seconds since 1970-01-01T00:00:00Z.
    pub unix_seconds: i64,
}

/// Returns the current date and time, in UTC or in a named IANA time zone.
#[tool(
    category = "utils",
    read_only,
    open_world = false,
    title = "Current time"
)]
pub async fn current_time(
    /// An IANA time zone such as "Europe/Lisbon" or "America/New_York" (default: UTC).
    timezone: Option<String>,
) -> Result<CurrentTime, ToolError> {
    let name = timezone.unwrap_or_else(|| "UTC".to_owned());
    let zone = jiff::tz::TimeZone::get(&name).map_err(|e| {
        ToolError::invalid_input(format!(
            "unknown time zone `{name}` (use an IANA name such as \"Europe/Paris\"): {e}"
        ))
    })?;
    let now = jiff::Zoned::now().with_time_zone(zone);
    Ok(CurrentTime {
        datetime: now.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        timezone: name,
        utc_offset: now.strftime("%:z").to_string(),
        weekday: now.strftime("%A").to_string(),
        unix_seconds: now.timestamp().as_second(),
    })
}

/// Waits for the given number of seconds (at most 300), then returns. Stops early when the
/// call is cancelled.
#[tool(
    category = "utils",
    read_only,
    idempotent,
    open_world = false,
    title = "Sleep {seconds}s"
)]
pub async fn sleep(
    /// How long to wait, in seconds (fractions allowed; capped at 300).
    seconds: f64,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(ToolError::invalid_input(format!(
            "`seconds` must be a non-negative number, not {seconds}"
        )));
    }
    let capped = seconds.min(MAX_SLEEP_SECONDS);
    tokio::select! {
        () = tokio::time::sleep(Duration::from_secs_f64(capped)) => {}
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    }
    Ok(if capped < seconds {
        format!("Slept {capped} seconds (capped from {seconds}).")
    } else {
        format!("Slept {seconds} seconds.")
    })
}

/// Returns the value of an environment variable of this process. Names that look like they
/// hold secrets are refused: those containing KEY, TOKEN, SECRET, PASSWORD, PASSWD, PWD or
/// CREDENTIAL (but PWD itself is readable), and those with a part such as URL, DSN, PASS or
/// PROXY, like DATABASE_URL or MYSQL_PWD.
#[tool(
    category = "utils",
    read_only,
    open_world = false,
    title = "Read ${name}"
)]
pub async fn get_env(
    /// The variable's name, e.g. "HOME".
    name: String,
) -> Result<String, ToolError> {
    // The Bash classifier asks before expanding the same names.
    if let Some(marker) = crate::permission::secret_marker(&name) {
        return Err(ToolError::permission_denied(format!(
            "`{name}` looks like it holds a secret (its name contains {marker}); get_env does not \
             reveal such variables"
        )));
    }
    if name.is_empty() || name.contains('=') || name.contains('\0') {
        return Err(ToolError::invalid_input(format!(
            "`{name}` is not a variable name"
        )));
    }
    match std::env::var(&name) {
        Ok(value) => Ok(value),
        Err(std::env::VarError::NotPresent) => Err(ToolError::not_found(format!(
            "the environment variable `{name}` is not set"
        ))),
        Err(std::env::VarError::NotUnicode(_)) => Err(ToolError::failed(format!(
            "the environment variable `{name}` is not valid UTF-8"
        ))),
    }
}

/// The answer to an HTTP request.
#[derive(Debug, Serialize)]
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// The response headers (repeated ones joined with ", ").
    pub headers: BTreeMap<String, String>,
    /// The body as text (at most 100,000 characters).
    pub body: String,
}

/// Sends an HTTP request and returns the status, headers and body, whatever the status.
///
/// For calling APIs: any method, custom headers, a text body. Redirects are not followed (the
/// 3xx response is returned). Bodies over 10 MB are refused; binary bodies come back decoded
/// lossily as UTF-8. To read a web page, prefer WebFetch.
#[tool(
    category = "utils",
    destructive,
    open_world,
    timeout = "2m",
    title = "{method} {url}"
)]
pub async fn http_request(
    /// The method: GET, POST, PUT, PATCH, DELETE, HEAD or OPTIONS.
    method: String,
    /// The http or https URL.
    url: String,
    /// Request headers, name to value.
    headers: Option<BTreeMap<String, String>>,
    /// The request body.
    body: Option<String>,
    ctx: &ToolContext,
) -> Result<HttpResponse, ToolError> {
    let url = parse_http_url(&url)?;
    let method = reqwest::Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| ToolError::invalid_input(format!("`{method}` is not an HTTP method")))?;
    let mut request = client()?.request(method, url.clone());
    for (name, value) in headers.unwrap_or_default() {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| ToolError::invalid_input(format!("header name `{name}`: {e}")))?;
        let value = reqwest::header::HeaderValue::from_str(&value)
            .map_err(|e| ToolError::invalid_input(format!("header `{name}`: {e}")))?;
        request = request.header(name, value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = tokio::select! {
        response = request.send() => response
            .map_err(|e| ToolError::retry(format!("the request to {url} failed: {e}")))?,
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };
    let status = response.status().as_u16();
    let mut headers: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in response.headers() {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        headers
            .entry(name.as_str().to_owned())
            .and_modify(|joined| {
                joined.push_str(", ");
                joined.push_str(&value);
            })
            .or_insert(value);
    }
    let body = tokio::select! {
        body = read_capped(response, MAX_DOWNLOAD_BYTES) => body?,
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };
    let body = cap_head(
        String::from_utf8_lossy(&body).into_owned(),
        MAX_CONTENT_CHARS,
    );
    Ok(HttpResponse {
        status,
        headers,
        body,
    })
}

/// Parses JSON text and returns it, or the part of it a JSON Pointer names.
#[tool(
    category = "utils",
    read_only,
    idempotent,
    open_world = false,
    title = "Parse JSON"
)]
pub async fn json_parse(
    /// The JSON text.
    text: String,
    /// An RFC 6901 JSON Pointer such as "/items/0/name" (default: the whole document).
    pointer: Option<String>,
) -> Result<Value, ToolError> {
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| ToolError::invalid_input(format!("the text is not valid JSON: {e}")))?;
    match pointer.as_deref() {
        None | Some("") => Ok(value),
        Some(pointer) if !pointer.starts_with('/') => Err(ToolError::invalid_input(format!(
            "`{pointer}` is not a JSON Pointer: it must start with `/`"
        ))),
        Some(pointer) => value
            .pointer(pointer)
            .cloned()
            .ok_or_else(|| ToolError::not_found(format!("nothing at `{pointer}` in the JSON"))),
    }
}

/// Encodes text (as UTF-8) in standard base64, with padding.
#[tool(
    category = "utils",
    read_only,
    idempotent,
    open_world = false,
    title = "Base64-encode"
)]
pub async fn base64_encode(
    /// The text to encode.
    text: String,
) -> String {
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

/// Decodes base64 (standard or URL-safe alphabet, padded or not, whitespace ignored) into
/// UTF-8 text. Data that does not decode to text is reported, not returned.
#[tool(
    category = "utils",
    read_only,
    idempotent,
    open_world = false,
    title = "Base64-decode"
)]
pub async fn base64_decode(
    /// The base64 data.
    data: String,
) -> Result<String, ToolError> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    let config =
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
    let compact: String = data.chars().filter(|c| !c.is_whitespace()).collect();
    let bytes = GeneralPurpose::new(&base64::alphabet::STANDARD, config)
        .decode(&compact)
        .or_else(|_| GeneralPurpose::new(&base64::alphabet::URL_SAFE, config).decode(&compact))
        .map_err(|e| ToolError::invalid_input(format!("not valid base64: {e}")))?;
    String::from_utf8(bytes).map_err(|e| {
        ToolError::failed(format!(
            "the data decodes to {} bytes that are not UTF-8 text",
            e.as_bytes().len()
        ))
    })
}

/// One entry of a directory.
#[derive(Debug, Serialize)]
pub struct FileEntry {
    /// Its name.
    pub name: String,
    /// `file`, `dir`, `symlink` or `other`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// Its size in bytes (files only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "dir"
    } else if file_type.is_file() {
        "file"
    } else {
        "other"
    }
}

/// Lists the entries of a directory (not recursive), sorted by name, with their types and
/// sizes.
#[tool(
    category = "utils",
    read_only,
    open_world = false,
    title = "List {path}"
)]
pub async fn list_files(
    /// The directory, absolute or relative to the working directory.
    path: String,
    ctx: &ToolContext,
) -> Result<Vec<FileEntry>, ToolError> {
    let dir = ctx.resolve(&path);
    let read = std::fs::read_dir(&dir).map_err(|e| io_error("cannot list", &dir, e))?;
    let mut entries = Vec::new();
    for entry in read {
        let entry = entry.map_err(|e| io_error("cannot list", &dir, e))?;
        let file_type = entry
            .file_type()
            .map_err(|e| io_error("cannot inspect", &entry.path(), e))?;
        let size = if file_type.is_file() {
            entry.metadata().ok().map(|m| m.len())
        } else {
            None
        };
        entries.push(FileEntry {
            name: entry.file_name().to_string_lossy().into_owned(),
            kind: kind_of(file_type),
            size,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(entries)
}

/// What `get_file_info` reports.
#[derive(Debug, Serialize)]
pub struct FileInfo {
    /// The path, resolved.
    pub path: String,
    /// `file`, `dir`, `symlink` or `other` (a symlink is not followed).
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The size in bytes.
    pub size: u64,
    /// When it was last modified, RFC 3339 in UTC.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// Whether it is read-only.
    pub readonly: bool,
    /// The permission bits in octal, e.g. `644` (Unix only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Where a symlink points.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
}

/// Reports a file's or directory's type, size, modification time and permissions.
#[tool(
    category = "utils",
    read_only,
    open_world = false,
    title = "Info on {path}"
)]
pub async fn get_file_info(
    /// The path, absolute or relative to the working directory.
    path: String,
    ctx: &ToolContext,
) -> Result<FileInfo, ToolError> {
    let resolved = ctx.resolve(&path);
    let meta = std::fs::symlink_metadata(&resolved)
        .map_err(|e| io_error("cannot inspect", &resolved, e))?;
    #[cfg(unix)]
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        Some(format!("{:o}", meta.permissions().mode() & 0o7777))
    };
    #[cfg(not(unix))]
    let mode = None;
    let target = meta
        .file_type()
        .is_symlink()
        .then(|| std::fs::read_link(&resolved).ok())
        .flatten()
        .map(|target| target.display().to_string());
    Ok(FileInfo {
        path: resolved.display().to_string(),
        kind: kind_of(meta.file_type()),
        size: meta.len(),
        modified: meta.modified().ok().and_then(timestamp),
        readonly: meta.permissions().readonly(),
        mode,
        target,
    })
}

/// Moves or renames a file or directory. Refuses to replace anything already at the
/// destination.
#[tool(
    category = "utils",
    destructive = false,
    open_world = false,
    title = "Move {source} to {destination}"
)]
pub async fn move_file(
    /// What to move, absolute or relative to the working directory.
    source: String,
    /// Where to move it; must not exist yet.
    destination: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let from = ctx.resolve(&source);
    let to = ctx.resolve(&destination);
    std::fs::symlink_metadata(&from).map_err(|e| io_error("cannot move", &from, e))?;
    if std::fs::symlink_metadata(&to).is_ok() {
        return Err(ToolError::invalid_input(format!(
            "{} already exists; move_file does not overwrite",
            to.display()
        )));
    }
    std::fs::rename(&from, &to).map_err(|e| io_error("cannot move", &from, e))?;
    ctx.files().forget(&from);
    ctx.files().record_write(&from);
    ctx.files().record_write(&to);
    Ok(format!("Moved {} to {}", from.display(), to.display()))
}

/// Deletes one file (or symlink). Directories are refused.
#[tool(
    category = "utils",
    destructive,
    open_world = false,
    title = "Delete {path}"
)]
pub async fn delete_file(
    /// The file, absolute or relative to the working directory.
    path: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let resolved = ctx.resolve(&path);
    let meta = std::fs::symlink_metadata(&resolved)
        .map_err(|e| io_error("cannot delete", &resolved, e))?;
    if meta.is_dir() {
        return Err(ToolError::invalid_input(format!(
            "{} is a directory; delete_file only deletes files",
            resolved.display()
        )));
    }
    std::fs::remove_file(&resolved).map_err(|e| io_error("cannot delete", &resolved, e))?;
    ctx.files().forget(&resolved);
    ctx.files().record_write(&resolved);
    Ok(format!("Deleted {}", resolved.display()))
}
