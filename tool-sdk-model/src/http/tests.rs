//! Unit tests of what both HTTP clients share.
use serde_json::json;

use super::*;

#[test]
fn temperature_is_written_as_given() {
    assert_eq!(f32_json(0.7), Some(json!(0.7)));
    assert_eq!(f32_json(1.0), Some(json!(1.0)));
    assert_eq!(f32_json(f32::NAN), None);
}

#[test]
fn http_errors_map_by_status_and_keep_the_provider_message() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#;
    assert!(matches!(
        http_error(429, Some(std::time::Duration::from_secs(3)), body),
        ModelError::RateLimited { message, retry_after: Some(after) }
            if message == "slow down" && after == std::time::Duration::from_secs(3)
    ));
    assert!(matches!(
        http_error(529, None, body),
        ModelError::Overloaded { .. }
    ));
    assert!(matches!(
        http_error(502, None, "<html>bad gateway</html>"),
        ModelError::Server { status: 502, message } if message == "<html>bad gateway</html>"
    ));
    assert!(matches!(
        http_error(401, None, ""),
        ModelError::Api { status: 401, message } if message.contains("401")
    ));
    assert_eq!(truncate(&"é".repeat(600), 500).chars().count(), 503);
}

#[test]
fn temperature_is_sent_as_written() {
    assert_eq!(f32_json(0.2), Some(json!(0.2)));
    assert_eq!(f32_json(1.0), Some(json!(1.0)));
    assert_eq!(f32_json(f32::NAN), None);
}

#[test]
fn http_error_messages_are_found_in_any_common_shape() {
    assert_eq!(
        error_message(r#"{"error":{"message":"Incorrect API key","code":"invalid_api_key"}}"#)
            .as_deref(),
        Some("Incorrect API key")
    );
    assert_eq!(
        error_message(r#"{"error":"model not found"}"#).as_deref(),
        Some("model not found")
    );
    assert_eq!(
        error_message(r#"{"detail":"Not Found"}"#).as_deref(),
        Some("Not Found")
    );
    assert_eq!(
        error_message("upstream timed out").as_deref(),
        Some("upstream timed out")
    );
    assert_eq!(error_message("  "), None);
    assert_eq!(truncate("éééé", 2), "éé...");
}

#[test]
fn a_prompt_too_long_is_told_from_other_bad_requests() {
    let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}"#;
    let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    // Newer Claude models refuse a prompt that fits only without `max_tokens`.
    let with_answer = r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 197626 + 8192 > 200000, decrease input length or `max_tokens` and try again"}}"#;
    let responses = r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":null}}"#;
    for body in [anthropic, openai, with_answer, responses] {
        assert!(
            matches!(
                http_error(400, None, body),
                ModelError::PromptTooLong { status: 400, .. }
            ),
            "{body}"
        );
    }
    let other = r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: must be positive"}}"#;
    assert!(matches!(
        http_error(400, None, other),
        ModelError::Api { .. }
    ));
    assert!(matches!(
        http_error(500, None, anthropic),
        ModelError::Server { .. }
    ));
}

/// A provider's error names who said it: the provider, or a compatible server by its address.
#[test]
fn errors_name_the_provider_or_the_server() {
    let overloaded = || ModelError::from_status(529, "Overloaded".into(), None);
    let client = |provider, base_url| HttpClient::new(provider, base_url, Auth::Bearer);
    let cases = [
        (
            "anthropic",
            "https://api.anthropic.com",
            "Anthropic: Overloaded",
        ),
        (
            "anthropic",
            "http://proxy.internal:8080",
            "Anthropic: Overloaded",
        ),
        ("openai", "https://api.openai.com/v1", "OpenAI: Overloaded"),
        (
            "openai-responses",
            "http://127.0.0.1:9/v1",
            "OpenAI: Overloaded",
        ),
        (
            "openai",
            "http://localhost:11434/v1",
            "the OpenAI-compatible server at localhost:11434: Overloaded",
        ),
    ];
    for (provider, base_url, said) in cases {
        let who = client(provider, base_url).who().unwrap();
        let ModelError::Overloaded { message, .. } = overloaded().said_by(&who) else {
            unreachable!()
        };
        assert_eq!(message, said, "{provider} at {base_url}");
    }
    // Gemini's errors name it already.
    assert_eq!(client("gemini", "https://example.com").who(), None);
}
