//! `WebFetch`: reads a web page for the model, HTML turned into Markdown.
//!
//! - Only `http` and `https`. Plain `http` is upgraded to `https`, except for local hosts
//!   (`localhost`, `*.localhost`, `*.local`, loopback and private addresses), which commonly
//!   serve no TLS.
//! - Redirects within the same host (ignoring a leading `www.`) are followed, up to 10; a
//!   redirect to another host is reported instead, so the model decides whether to go there.
//! - At most 10 MB is downloaded and 100,000 characters returned.
//! - HTML becomes Markdown through `htmd` (a maintained turndown.js-style converter built on
//!   html5ever, so it copes with real-world markup); other text types come back as they are;
//!   binary content is refused.
//! - There is no second model here: the `prompt` is returned alongside the content for the
//!   calling model to apply.

use std::net::IpAddr;
use std::sync::OnceLock;
use std::time::Duration;

use futures::StreamExt;
use reqwest::{StatusCode, Url};

use tool_sdk_core::{ToolContext, ToolError, tool};

/// The most bytes downloaded.
pub(crate) const MAX_DOWNLOAD_BYTES: usize = 10 * 1024 * 1024;
/// The most characters of content returned.
pub(crate) const MAX_CONTENT_CHARS: usize = 100_000;
const MAX_REDIRECTS: usize = 10;

/// A shared client that follows no redirects on its own.
pub(crate) fn client() -> Result<&'static reqwest::Client, ToolError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            tool_sdk_core::tls::ensure_provider();
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .connect_timeout(Duration::from_secs(15))
                .timeout(Duration::from_secs(60))
                .user_agent(concat!("tool-sdk/", env!("CARGO_PKG_VERSION")))
                .build()
                .map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| ToolError::failed(format!("could not build the HTTP client: {e}")))
}

/// Parses `url`, accepting only http and https.
pub(crate) fn parse_http_url(url: &str) -> Result<Url, ToolError> {
    let parsed = Url::parse(url.trim())
        .map_err(|e| ToolError::invalid_input(format!("`{url}` is not a valid URL: {e}")))?;
    match parsed.scheme() {
        "http" | "https" if parsed.host_str().is_some() => Ok(parsed),
        "http" | "https" => Err(ToolError::invalid_input(format!("`{url}` has no host"))),
        other => Err(ToolError::invalid_input(format!(
            "only http and https URLs can be fetched, not `{other}:`"
        ))),
    }
}

/// Whether `url` points at this machine or a private network.
fn is_local(url: &Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    // IPv6 hosts come bracketed: `[::1]`.
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return is_private(ip);
    }
    let host = host.to_ascii_lowercase();
    host == "localhost" || host.ends_with(".localhost") || host.ends_with(".local")
}

fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        IpAddr::V6(ip) => ip.is_loopback() || ip.is_unique_local() || ip.is_unicast_link_local(),
    }
}

fn same_host(a: &Url, b: &Url) -> bool {
    let host = |url: &Url| {
        let host = url.host_str().unwrap_or_default().to_ascii_lowercase();
        host.strip_prefix("www.").map(str::to_owned).unwrap_or(host)
    };
    host(a) == host(b)
}

fn status_error(status: StatusCode, url: &Url) -> ToolError {
    let message = format!("HTTP {status} for {url}");
    match status.as_u16() {
        404 | 410 => ToolError::not_found(message),
        408 | 429 | 500..=599 => ToolError::retry(message),
        _ => ToolError::failed(message),
    }
}

/// Reads the body, refusing more than `max` bytes.
pub(crate) async fn read_capped(
    response: reqwest::Response,
    max: usize,
) -> Result<Vec<u8>, ToolError> {
    let too_big = || {
        ToolError::failed(format!(
            "the response is larger than {} MB, the most that is downloaded",
            max / (1024 * 1024)
        ))
    };
    if response
        .content_length()
        .is_some_and(|len| len > max as u64)
    {
        return Err(too_big());
    }
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ToolError::retry(format!("reading the response: {e}")))?;
        if body.len() + chunk.len() > max {
            return Err(too_big());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// What kind of content a response holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Html,
    Text,
    Binary,
}

/// Classifies a body by its media type, or by sniffing when there is none.
pub(crate) fn classify(content_type: Option<&str>, body: &[u8]) -> Kind {
    let media = content_type
        .and_then(|value| value.split(';').next())
        .map(|media| media.trim().to_ascii_lowercase())
        .filter(|media| !media.is_empty());
    let Some(media) = media else {
        let head = &body[..body.len().min(1024)];
        if head.contains(&0) || std::str::from_utf8(body).is_err() {
            return Kind::Binary;
        }
        let start = String::from_utf8_lossy(head)
            .trim_start()
            .to_ascii_lowercase();
        return if start.starts_with("<!doctype html") || start.starts_with("<html") {
            Kind::Html
        } else {
            Kind::Text
        };
    };
    if media == "text/html" || media == "application/xhtml+xml" {
        return Kind::Html;
    }
    let textual = media.starts_with("text/")
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || matches!(
            media.as_str(),
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
                | "application/x-www-form-urlencoded"
                | "application/ld+json"
        );
    if textual { Kind::Text } else { Kind::Binary }
}

/// HTML as Markdown, without scripts, styles and other invisible parts.
pub(crate) fn html_to_markdown(html: &str) -> Result<String, ToolError> {
    let converter = htmd::HtmlToMarkdown::builder()
        .skip_tags(vec![
            "script", "style", "noscript", "template", "iframe", "svg", "canvas", "head",
        ])
        .build();
    converter
        .convert(html)
        .map_err(|e| ToolError::failed(format!("could not convert the HTML: {e}")))
}

/// Keeps the first `max` characters of `text`, noting how many were cut.
pub(crate) fn cap_head(text: String, max: usize) -> String {
    let total = text.chars().count();
    if total <= max {
        return text;
    }
    let mut kept: String = text.chars().take(max).collect();
    kept.push_str(&format!(
        "\n\n[... content truncated: {} of {total} characters omitted ...]",
        total - max
    ));
    kept
}

/// Fetches a web page and returns its content as Markdown, together with the prompt to apply
/// to it.
///
/// - `url` must be a fully formed http or https URL; http is upgraded to https except for
///   local addresses.
/// - No model reads the page on your behalf: the content comes back as is (HTML converted to
///   Markdown, other text unchanged, at most 100,000 characters), with your `prompt` attached.
///   Apply the prompt to it yourself: extract what it asks for and ignore the rest.
/// - Redirects on the same host are followed. A redirect to a different host is not: the
///   result names the new URL, and you can fetch that with another call.
/// - Binary content (images, PDFs, archives) and pages over 10 MB are refused.
/// - Read-only: it never changes anything. Pages behind a login usually cannot be read.
#[tool(
    name = "WebFetch",
    acts_on(url = "url"),
    category = "builtin",
    read_only,
    open_world,
    timeout = "2m",
    title = "Fetch {url}"
)]
pub async fn web_fetch(
    /// The URL to fetch.
    url: String,
    /// What to find out from the page, e.g. "the supported Rust versions".
    prompt: String,
    ctx: &ToolContext,
) -> Result<String, ToolError> {
    let requested = parse_http_url(&url)?;
    let mut current = requested.clone();
    let mut upgraded = false;
    if current.scheme() == "http" && !is_local(&current) {
        // Cannot fail: both schemes are "special" ones.
        let _ = current.set_scheme("https");
        upgraded = true;
    }
    let client = client()?;
    let mut redirects = 0;
    let response = loop {
        ctx.progress(format!("fetching {current}"));
        let send = client.get(current.clone()).send();
        let response = tokio::select! {
            response = send => response.map_err(|e| {
                let hint = if upgraded { " (the URL was upgraded to https)" } else { "" };
                ToolError::retry(format!("could not fetch {current}{hint}: {e}"))
            })?,
            () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
        };
        if !response.status().is_redirection() {
            break response;
        }
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| {
                ToolError::failed(format!(
                    "HTTP {} from {current} without a usable Location header",
                    response.status()
                ))
            })?;
        let next = current.join(location).map_err(|e| {
            ToolError::failed(format!(
                "{current} redirects to a bad URL `{location}`: {e}"
            ))
        })?;
        if !same_host(&current, &next) {
            return Ok(format!(
                "REDIRECT: {current} redirects (HTTP {}) to a different host: {next}\n\
                 It was not followed. To read it, call WebFetch again with url \"{next}\" and \
                 the same prompt.\n\nPrompt: {prompt}",
                response.status().as_u16()
            ));
        }
        redirects += 1;
        if redirects > MAX_REDIRECTS {
            return Err(ToolError::failed(format!(
                "more than {MAX_REDIRECTS} redirects, starting at {requested}"
            )));
        }
        current = next;
    };
    let status = response.status();
    if !status.is_success() {
        return Err(status_error(status, &current));
    }
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let body = tokio::select! {
        body = read_capped(response, MAX_DOWNLOAD_BYTES) => body?,
        () = ctx.cancellation().cancelled() => return Err(ToolError::Cancelled),
    };
    let content = match classify(content_type.as_deref(), &body) {
        Kind::Binary => {
            return Err(ToolError::failed(format!(
                "{current} is binary content ({}, {} bytes), which WebFetch cannot read",
                content_type.as_deref().unwrap_or("no content type"),
                body.len()
            )));
        }
        Kind::Html => html_to_markdown(&String::from_utf8_lossy(&body))?,
        Kind::Text => String::from_utf8_lossy(&body).into_owned(),
    };
    let content = cap_head(content, MAX_CONTENT_CHARS);
    let mut header = format!("URL: {current}\n");
    if current != requested {
        header.push_str(&format!("(requested: {requested})\n"));
    }
    if let Some(content_type) = &content_type {
        header.push_str(&format!("Content-Type: {content_type}\n"));
    }
    Ok(format!(
        "{header}Prompt: {prompt}\n\nApply the prompt above to this content:\n\n{content}"
    ))
}
