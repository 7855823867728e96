//! WebFetch through a registry with JSON input, against a local wiremock server only.

use std::sync::Arc;

use serde_json::json;
use tool_sdk::builtin::WebFetchTool;
use tool_sdk::{Tool, ToolContext, ToolError, ToolErrorKind, ToolRegistry};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    registry.register(Arc::new(WebFetchTool)).unwrap();
    registry
}

async fn fetch(url: &str) -> Result<String, ToolError> {
    let output = registry()
        .execute(
            "WebFetch",
            json!({"url": url, "prompt": "What does it say?"}),
            &ToolContext::default(),
        )
        .await?;
    assert!(!output.is_error);
    Ok(output.to_text().into_owned())
}

async fn serve(route: &str, response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(route))
        .respond_with(response)
        .mount(&server)
        .await;
    server
}

const PAGE: &str = r#"<!doctype html>
<html><head><title>Ignored title</title><style>body { color: red }</style></head>
<body>
<script>alert("never shown")</script>
<h1>Release notes</h1>
<p>Version <strong>2.0</strong> adds <a href="https://example.com/docs">docs</a>.</p>
<ul><li>fast</li><li>small</li></ul>
</body></html>"#;

#[tokio::test]
async fn html_becomes_markdown_with_the_prompt_attached() {
    let server = serve(
        "/page",
        ResponseTemplate::new(200).set_body_raw(PAGE, "text/html; charset=utf-8"),
    )
    .await;
    let url = format!("{}/page", server.uri());
    let text = fetch(&url).await.unwrap();
    assert!(
        text.starts_with(&format!("URL: {url}\n")),
        "local http is not upgraded: {text}"
    );
    assert!(text.contains("Prompt: What does it say?"), "{text}");
    assert!(text.contains("# Release notes"), "{text}");
    assert!(
        text.contains("Version **2.0** adds [docs](https://example.com/docs)."),
        "{text}"
    );
    assert!(
        text.contains("*   fast") || text.contains("- fast") || text.contains("* fast"),
        "{text}"
    );
    assert!(!text.contains("alert"), "scripts are dropped: {text}");
    assert!(!text.contains("color: red"), "styles are dropped: {text}");
    assert!(!text.contains("<p>"), "{text}");
}

#[tokio::test]
async fn json_and_plain_text_come_back_as_they_are() {
    let server = MockServer::start().await;
    Mock::given(path("/data.json"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_raw(r#"{"name":"<b>tool</b>"}"#, "application/json"),
        )
        .mount(&server)
        .await;
    Mock::given(path("/notes.txt"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("# not a heading\n<p>", "text/plain"))
        .mount(&server)
        .await;
    let json = fetch(&format!("{}/data.json", server.uri())).await.unwrap();
    assert!(json.contains("Content-Type: application/json"), "{json}");
    assert!(
        json.ends_with(r#"{"name":"<b>tool</b>"}"#),
        "untouched: {json}"
    );
    let text = fetch(&format!("{}/notes.txt", server.uri())).await.unwrap();
    assert!(text.ends_with("# not a heading\n<p>"), "untouched: {text}");
}

#[tokio::test]
async fn same_host_redirects_are_followed_and_cross_host_ones_reported() {
    let server = MockServer::start().await;
    Mock::given(path("/old"))
        .respond_with(ResponseTemplate::new(301).insert_header("location", "/new"))
        .mount(&server)
        .await;
    Mock::given(path("/new"))
        .respond_with(ResponseTemplate::new(200).set_body_raw("moved here", "text/plain"))
        .mount(&server)
        .await;
    let port = server.address().port();
    let elsewhere = format!("http://localhost:{port}/new");
    Mock::given(path("/away"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", elsewhere.as_str()))
        .mount(&server)
        .await;

    let followed = fetch(&format!("{}/old", server.uri())).await.unwrap();
    assert!(
        followed.starts_with(&format!("URL: {}/new\n", server.uri())),
        "{followed}"
    );
    assert!(
        followed.contains(&format!("(requested: {}/old)", server.uri())),
        "{followed}"
    );
    assert!(followed.ends_with("moved here"), "{followed}");

    let reported = fetch(&format!("{}/away", server.uri())).await.unwrap();
    assert!(reported.starts_with("REDIRECT:"), "{reported}");
    assert!(
        reported.contains(&format!("to a different host: {elsewhere}")),
        "{reported}"
    );
    assert!(reported.contains("Prompt: What does it say?"), "{reported}");
    assert!(!reported.contains("moved here"), "not followed: {reported}");
}

#[tokio::test]
async fn http_errors_are_tool_errors_of_the_right_kind() {
    let server = MockServer::start().await;
    Mock::given(path("/missing"))
        .respond_with(ResponseTemplate::new(404))
        .mount(&server)
        .await;
    Mock::given(path("/broken"))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let missing = fetch(&format!("{}/missing", server.uri()))
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ToolErrorKind::NotFound, "{missing}");
    assert!(missing.to_string().contains("404"), "{missing}");
    let broken = fetch(&format!("{}/broken", server.uri()))
        .await
        .unwrap_err();
    assert_eq!(broken.kind(), ToolErrorKind::Retry, "{broken}");
    assert!(broken.to_string().contains("503"), "{broken}");
}

#[tokio::test]
async fn big_responses_are_capped() {
    let server = MockServer::start().await;
    Mock::given(path("/huge"))
        .respond_with(
            ResponseTemplate::new(200).set_body_raw(vec![b'a'; 11 * 1024 * 1024], "text/plain"),
        )
        .mount(&server)
        .await;
    let mut long = "b".repeat(150_000);
    long.push_str("THE END");
    Mock::given(path("/long"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(long, "text/plain"))
        .mount(&server)
        .await;
    let huge = fetch(&format!("{}/huge", server.uri())).await.unwrap_err();
    assert!(huge.to_string().contains("larger than 10 MB"), "{huge}");
    let long = fetch(&format!("{}/long", server.uri())).await.unwrap();
    assert!(
        long.contains("content truncated: 50007 of 150007 characters omitted"),
        "{long:.200}"
    );
    assert!(!long.contains("THE END"));
    assert!(long.chars().count() < 100_500);
}

#[tokio::test]
async fn binary_content_is_refused() {
    let png = [
        0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d,
    ];
    let server = serve(
        "/logo.png",
        ResponseTemplate::new(200).set_body_raw(png, "image/png"),
    )
    .await;
    let error = fetch(&format!("{}/logo.png", server.uri()))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("binary content (image/png"),
        "{error}"
    );
}

#[tokio::test]
async fn only_http_urls_are_fetched_and_remote_http_is_upgraded() {
    let ftp = fetch("ftp://example.com/file").await.unwrap_err();
    assert_eq!(ftp.kind(), ToolErrorKind::InvalidInput, "{ftp}");
    let nonsense = fetch("not a url").await.unwrap_err();
    assert_eq!(nonsense.kind(), ToolErrorKind::InvalidInput, "{nonsense}");
    // `.invalid` never resolves: the error shows the URL was upgraded before trying.
    let upgraded = fetch("http://tool-sdk.invalid/page").await.unwrap_err();
    assert!(
        upgraded
            .to_string()
            .contains("https://tool-sdk.invalid/page"),
        "{upgraded}"
    );
    assert!(
        upgraded.to_string().contains("upgraded to https"),
        "{upgraded}"
    );
}

#[test]
fn web_fetch_is_a_read_only_open_world_builtin() {
    assert_eq!(WebFetchTool.name(), "WebFetch");
    assert_eq!(WebFetchTool.category(), Some("builtin"));
    assert!(WebFetchTool.is_read_only());
    assert_eq!(WebFetchTool.annotations().open_world, Some(true));
    assert_eq!(
        WebFetchTool.input_schema()["required"],
        json!(["url", "prompt"])
    );
    assert!(WebFetchTool.description().contains("prompt"));
}
