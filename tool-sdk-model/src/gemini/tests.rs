use std::time::Duration;

use serde_json::json;

use super::*;
use crate::ToolUse;
use crate::http::TurnReader;

fn signature(token: &str) -> MessageContent {
    MessageContent::ThoughtSignature {
        provider: PROVIDER_NAME.into(),
        signature: token.into(),
    }
}

#[test]
fn model_ids_are_escaped_into_the_path_and_models_prefix_dropped() {
    let model = GeminiModel::new("models/gemini-2.5-flash", "test-key");
    assert_eq!(model.model_id(), "gemini-2.5-flash");
    assert_eq!(
        model.path,
        "/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    let odd = GeminiModel::new("a/b?key=x", "test-key");
    assert_eq!(
        odd.path,
        "/models/a%2Fb%3Fkey%3Dx:streamGenerateContent?alt=sse"
    );
}

#[test]
fn signatures_go_back_on_their_own_part_and_only_geminis() {
    let content = vec![
        MessageContent::Text { text: "Hel".into() },
        signature("sig-text"),
        MessageContent::Text { text: "lo".into() },
        MessageContent::ThoughtSignature {
            provider: "someone-else".into(),
            signature: "foreign".into(),
        },
        signature("sig-call"),
        MessageContent::ToolUse(ToolUse::new("c1", "read", json!({"path": "a"}))),
        MessageContent::ToolUse(ToolUse::new("c2", "read", json!({"path": "b"}))),
        signature("sig-end"),
    ];
    assert_eq!(
        model_parts(&content),
        vec![
            json!({"text": "Hel"}),
            json!({"text": "lo", "thoughtSignature": "sig-text"}),
            json!({"functionCall": {"name": "read", "args": {"path": "a"}}, "thoughtSignature": "sig-call"}),
            json!({"functionCall": {"name": "read", "args": {"path": "b"}}}),
            json!({"text": "", "thoughtSignature": "sig-end"}),
        ]
    );
}

#[test]
fn results_are_answered_by_the_calls_name() {
    let history: History = vec![
        Message::user("go"),
        Message {
            role: Role::Assistant,
            content: vec![MessageContent::ToolUse(ToolUse::new(
                "call_0_1_x",
                "weather",
                json!({}),
            ))],
        },
        Message {
            role: Role::User,
            content: vec![
                MessageContent::Text {
                    text: "and?".into(),
                },
                MessageContent::ToolResult {
                    tool_use_id: "call_0_1_x".into(),
                    content: vec![ContentBlock::Text {
                        text: "sunny".into(),
                    }],
                    is_error: false,
                },
                MessageContent::ToolResult {
                    tool_use_id: "lost".into(),
                    content: vec![ContentBlock::Text {
                        text: "boom".into(),
                    }],
                    is_error: true,
                },
            ],
        },
    ]
    .into();
    let contents = contents(&history);
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[2],
        json!({"role": "user", "parts": [
            {"functionResponse": {"name": "weather", "response": {"result": "sunny"}}},
            {"text": "and?"},
            {"text": "Result of tool call lost: boom"},
        ]})
    );
}

#[test]
fn usage_counts_cached_tokens_once_and_thoughts_as_output() {
    let mut turn = Turn::new(0);
    turn.on_event(
        "message",
        r#"{"candidates":[{"content":{"parts":[{"text":"hi"}]},"finishReason":"STOP"}],
            "usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":600,
            "candidatesTokenCount":20,"thoughtsTokenCount":30,"totalTokenCount":1050}}"#,
    )
    .unwrap();
    let response = turn.finish().unwrap();
    assert_eq!(
        response.usage,
        crate::Usage {
            input_tokens: 400,
            output_tokens: 50,
            cache_read_input_tokens: 600,
            cache_creation_input_tokens: 0,
        }
    );
    assert_eq!(response.usage.prompt_tokens(), 1000);
}

#[test]
fn errors_name_gemini_and_read_retry_delay() {
    let body = json!({"error": {"code": 429, "message": "Quota exceeded", "status": "RESOURCE_EXHAUSTED",
        "details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.5s"}]}});
    let error = errors::read_error(429, None, &body.to_string());
    assert!(
        matches!(&error, ModelError::RateLimited { message, retry_after }
            if message == "Gemini RESOURCE_EXHAUSTED: Quota exceeded"
                && *retry_after == Some(Duration::from_millis(1500))),
        "{error:?}"
    );
    let plain = errors::read_error(502, None, "Bad gateway");
    assert!(
        matches!(&plain, ModelError::Server { status: 502, message } if message == "Gemini: Bad gateway"),
        "{plain:?}"
    );
}

#[test]
fn a_stream_without_finish_reason_fails() {
    let mut turn = Turn::new(0);
    turn.on_event(
        "message",
        r#"{"candidates":[{"content":{"parts":[{"text":"cut"}]}}]}"#,
    )
    .unwrap();
    let error = turn.finish().unwrap_err();
    assert!(error.to_string().contains("Gemini"), "{error}");
}

#[test]
fn an_error_in_place_of_a_chunk_ends_the_turn() {
    let mut turn = Turn::new(0);
    let error = turn
        .on_event(
            "message",
            r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#,
        )
        .unwrap_err();
    assert!(
        matches!(&error, ModelError::Overloaded { message, .. }
            if message == "Gemini UNAVAILABLE: The model is overloaded."),
        "{error:?}"
    );
    let error = Turn::new(0).on_event("message", "{not json").unwrap_err();
    assert!(
        error.to_string().contains("unreadable Gemini chunk"),
        "{error}"
    );
}

#[test]
fn a_json_array_answer_is_read_as_its_chunks() {
    let mut turn = Turn::new(3);
    let events = turn
        .on_json_body(
            r#"[{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}]},
               {"candidates":[{"content":{"parts":[{"functionCall":{"name":"read","args":{"path":"a"}}}]},
                 "finishReason":"STOP"}]}]"#,
        )
        .unwrap();
    assert_eq!(events[0], crate::ModelEvent::TextDelta("Hi".into()));
    let response = turn.finish().unwrap();
    assert_eq!(response.stop_reason, crate::StopReason::ToolUse);
    let MessageContent::ToolUse(call) = &response.content[1] else {
        panic!("{:?}", response.content)
    };
    assert!(call.id.starts_with("call_3_1_"), "{}", call.id);
    assert_eq!(call.input.parsed(), Some(&json!({"path": "a"})));
}

#[test]
fn the_key_is_gemini_api_key_else_google_api_key() {
    let vars = |gemini: Option<&str>, google: Option<&str>| {
        let (gemini, google) = (gemini.map(str::to_owned), google.map(str::to_owned));
        move |name: &str| match name {
            "GEMINI_API_KEY" => gemini.clone(),
            "GOOGLE_API_KEY" => google.clone(),
            _ => None,
        }
    };
    assert_eq!(key_from(vars(Some("one"), Some("two"))).unwrap(), "one");
    assert_eq!(key_from(vars(Some("  "), Some(" two "))).unwrap(), "two");
    let error = key_from(vars(None, None)).unwrap_err();
    assert!(
        matches!(&error, ModelError::MissingApiKey(why) if why.contains("GEMINI_API_KEY")),
        "{error:?}"
    );
}
