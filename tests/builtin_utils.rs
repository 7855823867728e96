//! The optional utility tools (feature `utils`) through a registry with JSON input.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};
use tool_sdk::builtin::utils::{
    Base64DecodeTool, Base64EncodeTool, CurrentTimeTool, DeleteFileTool, GetEnvTool,
    GetFileInfoTool, HttpRequestTool, JsonParseTool, ListFilesTool, MoveFileTool, SleepTool,
};
use tool_sdk::{CancellationToken, Tool, ToolContext, ToolError, ToolErrorKind, ToolRegistry};
use wiremock::matchers::{body_string, header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(CurrentTimeTool),
        Arc::new(SleepTool),
        Arc::new(GetEnvTool),
        Arc::new(HttpRequestTool),
        Arc::new(JsonParseTool),
        Arc::new(Base64EncodeTool),
        Arc::new(Base64DecodeTool),
        Arc::new(ListFilesTool),
        Arc::new(GetFileInfoTool),
        Arc::new(MoveFileTool),
        Arc::new(DeleteFileTool),
    ]
}

fn registry() -> ToolRegistry {
    let registry = ToolRegistry::new();
    for tool in tools() {
        registry.register(tool).unwrap();
    }
    registry
}

async fn call(name: &str, input: Value, ctx: &ToolContext) -> Result<String, ToolError> {
    let output = registry().execute(name, input, ctx).await?;
    assert!(!output.is_error, "{output:?}");
    Ok(output.to_text().into_owned())
}

async fn call_json(name: &str, input: Value, ctx: &ToolContext) -> Value {
    let output = registry().execute(name, input, ctx).await.unwrap();
    output.structured.expect("a structured result")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("builtin-utils-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test]
async fn current_time_in_utc_and_in_a_named_zone() {
    let ctx = ToolContext::default();
    let utc = call_json("current_time", json!({}), &ctx).await;
    assert_eq!(utc["timezone"], "UTC");
    assert_eq!(utc["utc_offset"], "+00:00");
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let reported = utc["unix_seconds"].as_i64().unwrap();
    assert!((reported - now).abs() < 5, "{reported} vs {now}");
    assert!(
        utc["datetime"].as_str().unwrap().ends_with("+00:00"),
        "{utc}"
    );

    let india = call_json("current_time", json!({"timezone": "Asia/Kolkata"}), &ctx).await;
    assert_eq!(india["utc_offset"], "+05:30");
    assert!(
        india["datetime"].as_str().unwrap().ends_with("+05:30"),
        "{india}"
    );
    let weekdays = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    assert!(
        weekdays.contains(&india["weekday"].as_str().unwrap()),
        "{india}"
    );

    let error = call(
        "current_time",
        json!({"timezone": "Mars/Olympus_Mons"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::InvalidInput, "{error}");
}

#[tokio::test]
async fn sleep_waits_and_stops_when_cancelled() {
    let started = Instant::now();
    let slept = call("sleep", json!({"seconds": 0.2}), &ToolContext::default())
        .await
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(slept, "Slept 0.2 seconds.");

    let token = CancellationToken::new();
    let ctx = ToolContext::default().with_cancellation(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        token.cancel();
    });
    let started = Instant::now();
    let error = call("sleep", json!({"seconds": 10_000}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Cancelled);
    assert!(started.elapsed() < Duration::from_secs(5));
    canceller.await.unwrap();

    let negative = call("sleep", json!({"seconds": -1}), &ToolContext::default())
        .await
        .unwrap_err();
    assert_eq!(negative.kind(), ToolErrorKind::InvalidInput);
}

#[tokio::test]
async fn get_env_reads_variables_but_not_secrets() {
    let ctx = ToolContext::default();
    let path = call("get_env", json!({"name": "PATH"}), &ctx)
        .await
        .unwrap();
    assert_eq!(path, std::env::var("PATH").unwrap());
    // The shell's directory is no secret, though its name ends like one.
    if let Ok(expected) = std::env::var("PWD") {
        let pwd = call("get_env", json!({"name": "PWD"}), &ctx).await.unwrap();
        assert_eq!(pwd, expected);
    }
    for secret in [
        "OPENAI_API_KEY",
        "github_token",
        "DB_PASSWORD",
        "AWS_SECRET_ACCESS_KEY",
        "Secret",
        // Issue 25, item 11: a URL with credentials, a password by another name.
        "DATABASE_URL",
        "MYSQL_PWD",
    ] {
        let error = call("get_env", json!({"name": secret}), &ctx)
            .await
            .unwrap_err();
        assert_eq!(
            error.kind(),
            ToolErrorKind::PermissionDenied,
            "{secret}: {error}"
        );
    }
    let missing = call(
        "get_env",
        json!({"name": "TOOL_SDK_SURELY_UNSET_VARIABLE"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(missing.kind(), ToolErrorKind::NotFound);
}

#[tokio::test]
async fn http_request_sends_method_headers_and_body_and_returns_any_status() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/items"))
        .and(header("x-api-version", "2"))
        .and(body_string("{\"name\":\"x\"}"))
        .respond_with(
            ResponseTemplate::new(201)
                .insert_header("x-request-id", "abc")
                .set_body_string("created"),
        )
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/items/1"))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .mount(&server)
        .await;
    let ctx = ToolContext::default();
    let created = call_json(
        "http_request",
        json!({
            "method": "post",
            "url": format!("{}/items", server.uri()),
            "headers": {"x-api-version": "2"},
            "body": "{\"name\":\"x\"}",
        }),
        &ctx,
    )
    .await;
    assert_eq!(created["status"], 201, "{created}");
    assert_eq!(created["headers"]["x-request-id"], "abc");
    assert_eq!(created["body"], "created");

    let failed = call_json(
        "http_request",
        json!({"method": "DELETE", "url": format!("{}/items/1", server.uri())}),
        &ctx,
    )
    .await;
    assert_eq!(failed["status"], 500);
    assert_eq!(failed["body"], "boom");

    let bad_method = call(
        "http_request",
        json!({"method": "NOT A METHOD", "url": server.uri()}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(bad_method.kind(), ToolErrorKind::InvalidInput);
    let bad_scheme = call(
        "http_request",
        json!({"method": "GET", "url": "file:///etc/passwd"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(bad_scheme.kind(), ToolErrorKind::InvalidInput);
}

#[tokio::test]
async fn json_parse_returns_the_document_or_the_part_a_pointer_names() {
    let ctx = ToolContext::default();
    let text = r#"{"items": [{"name": "a"}, {"name": "b", "tags": [1, 2]}]}"#;
    let whole = call_json("json_parse", json!({"text": text}), &ctx).await;
    assert_eq!(whole["items"][1]["tags"], json!([1, 2]));
    let part = call_json(
        "json_parse",
        json!({"text": text, "pointer": "/items/1"}),
        &ctx,
    )
    .await;
    assert_eq!(part, json!({"name": "b", "tags": [1, 2]}));
    let name = call(
        "json_parse",
        json!({"text": text, "pointer": "/items/0/name"}),
        &ctx,
    )
    .await
    .unwrap();
    assert_eq!(name, "a");

    let invalid = call("json_parse", json!({"text": "{oops"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(invalid.kind(), ToolErrorKind::InvalidInput);
    let missing = call(
        "json_parse",
        json!({"text": text, "pointer": "/items/5"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(missing.kind(), ToolErrorKind::NotFound);
    let no_slash = call(
        "json_parse",
        json!({"text": text, "pointer": "items"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(no_slash.kind(), ToolErrorKind::InvalidInput);
}

#[tokio::test]
async fn base64_round_trips_and_refuses_what_is_not_text() {
    let ctx = ToolContext::default();
    let encoded = call("base64_encode", json!({"text": "héllo?>"}), &ctx)
        .await
        .unwrap();
    assert_eq!(encoded, "aMOpbGxvPz4=");
    let decoded = call("base64_decode", json!({"data": encoded}), &ctx)
        .await
        .unwrap();
    assert_eq!(decoded, "héllo?>");
    // URL-safe alphabet, no padding, line breaks.
    let url_safe = call("base64_decode", json!({"data": "aMOp\nbGxvPz4"}), &ctx)
        .await
        .unwrap();
    assert_eq!(url_safe, "héllo?>");
    let url_safe = call("base64_decode", json!({"data": "aMOpbGxvPz4_"}), &ctx)
        .await
        .unwrap();
    assert_eq!(url_safe, "héllo?>?");

    let invalid = call("base64_decode", json!({"data": "!!!"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(invalid.kind(), ToolErrorKind::InvalidInput);
    let binary = call("base64_decode", json!({"data": "/w=="}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(binary.kind(), ToolErrorKind::ExecutionFailed);
    assert!(binary.to_string().contains("not UTF-8"), "{binary}");
}

#[tokio::test]
async fn file_tools_list_inspect_move_and_delete() {
    let dir = scratch("files");
    std::fs::write(dir.join("a.txt"), "abc").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let ctx = ToolContext::new(&dir);

    let listed = call_json("list_files", json!({"path": "."}), &ctx).await;
    assert_eq!(
        listed,
        json!([{"name": "a.txt", "type": "file", "size": 3}, {"name": "sub", "type": "dir"}])
    );
    let missing = call("list_files", json!({"path": "nope"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(missing.kind(), ToolErrorKind::NotFound);

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.join("a.txt"), std::fs::Permissions::from_mode(0o640))
            .unwrap();
    }
    let info = call_json("get_file_info", json!({"path": "a.txt"}), &ctx).await;
    assert_eq!(info["type"], "file");
    assert_eq!(info["size"], 3);
    assert_eq!(info["readonly"], false);
    assert_eq!(info["path"], dir.join("a.txt").display().to_string());
    #[cfg(unix)]
    assert_eq!(info["mode"], "640");
    let modified = info["modified"].as_str().unwrap();
    assert!(
        modified.ends_with('Z') && modified.len() >= 20,
        "{modified}"
    );
    let dir_info = call_json("get_file_info", json!({"path": dir.join("sub")}), &ctx).await;
    assert_eq!(dir_info["type"], "dir");

    let moved = call(
        "move_file",
        json!({"source": "a.txt", "destination": "sub/b.txt"}),
        &ctx,
    )
    .await
    .unwrap();
    assert!(moved.starts_with("Moved "), "{moved}");
    assert!(!dir.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/b.txt")).unwrap(),
        "abc"
    );
    assert!(ctx.files().written().contains(&dir.join("sub/b.txt")));

    std::fs::write(dir.join("c.txt"), "keep me").unwrap();
    let clobber = call(
        "move_file",
        json!({"source": "c.txt", "destination": "sub/b.txt"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(clobber.kind(), ToolErrorKind::InvalidInput, "{clobber}");
    assert_eq!(
        std::fs::read_to_string(dir.join("sub/b.txt")).unwrap(),
        "abc"
    );
    let gone = call(
        "move_file",
        json!({"source": "nope", "destination": "x"}),
        &ctx,
    )
    .await
    .unwrap_err();
    assert_eq!(gone.kind(), ToolErrorKind::NotFound);

    let deleted = call("delete_file", json!({"path": "c.txt"}), &ctx)
        .await
        .unwrap();
    assert!(deleted.starts_with("Deleted "), "{deleted}");
    assert!(!dir.join("c.txt").exists());
    let directory = call("delete_file", json!({"path": "sub"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(directory.kind(), ToolErrorKind::InvalidInput);
    assert!(dir.join("sub/b.txt").exists(), "nothing deleted");
    let again = call("delete_file", json!({"path": "c.txt"}), &ctx)
        .await
        .unwrap_err();
    assert_eq!(again.kind(), ToolErrorKind::NotFound);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn utilities_are_registered_with_honest_hints() {
    let global = ToolRegistry::global().unwrap();
    for tool in tools() {
        assert_eq!(tool.category(), Some("utils"), "{}", tool.name());
        assert!(
            global.contains(tool.name()),
            "{} is registered",
            tool.name()
        );
    }
    for read_only in [
        "current_time",
        "sleep",
        "get_env",
        "json_parse",
        "base64_encode",
        "base64_decode",
        "list_files",
        "get_file_info",
    ] {
        assert!(global.get(read_only).unwrap().is_read_only(), "{read_only}");
    }
    for writer in ["http_request", "move_file", "delete_file"] {
        assert!(!global.get(writer).unwrap().is_read_only(), "{writer}");
    }
    assert_eq!(DeleteFileTool.annotations().destructive, Some(true));
    assert_eq!(MoveFileTool.annotations().destructive, Some(false));
    assert_eq!(HttpRequestTool.annotations().open_world, Some(true));
    assert_eq!(GetEnvTool.annotations().open_world, Some(false));
}
