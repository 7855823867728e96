//! Unit tests of the Chat Completions wire format.
use super::chunks::TurnState;
use super::*;
use crate::http::TurnReader;
use crate::{ModelEvent, ModelResponse, ToolUse};

fn run(lines: &[&str]) -> (Vec<ModelEvent>, Result<ModelResponse, ModelError>) {
    let mut turn = TurnState::default();
    let mut events = Vec::new();
    for line in lines {
        match turn.on_event("message", line) {
            Ok(more) => events.extend(more),
            Err(error) => return (events, Err(error)),
        }
    }
    (events, turn.finish())
}

#[test]
fn from_env_needs_a_key_only_for_openai() {
    let missing = OpenAiModel::from_vars("gpt-4.1".into(), None, None).unwrap_err();
    assert!(
        matches!(&missing, ModelError::MissingApiKey(message) if message.contains("OPENAI_API_KEY")),
        "{missing:?}"
    );
    let missing = OpenAiModel::from_vars(
        "gpt-4.1".into(),
        Some(" ".into()),
        Some("https://api.openai.com/v1/".into()),
    )
    .unwrap_err();
    assert!(matches!(missing, ModelError::MissingApiKey(_)));

    let local = OpenAiModel::from_vars(
        "qwen3".into(),
        None,
        Some("http://localhost:11434/v1/".into()),
    )
    .unwrap();
    assert_eq!(local.base_url(), "http://localhost:11434/v1");
    assert_eq!(local.http.api_key, None);
    assert_eq!(local.max_tokens_field(), MaxTokensField::MaxTokens);

    let openai = OpenAiModel::from_vars("gpt-4.1".into(), Some("sk-test".into()), None).unwrap();
    assert_eq!(openai.base_url(), DEFAULT_BASE_URL);
    assert_eq!(openai.http.api_key.as_deref(), Some("sk-test"));
    assert_eq!(
        openai.max_tokens_field(),
        MaxTokensField::MaxCompletionTokens
    );
    assert!(!format!("{openai:?}").contains("sk-test"), "key redacted");
}

#[test]
fn openai_urls_are_recognised_by_host() {
    assert!(is_openai_url("https://api.openai.com/v1"));
    assert!(is_openai_url("HTTPS://API.OPENAI.COM:443/v1"));
    assert!(!is_openai_url("https://api.openai.com.example.org/v1"));
    assert!(!is_openai_url("http://localhost:8000/v1"));
}

#[test]
fn messages_keep_tool_results_right_after_the_calls() {
    let messages = vec![
        Message::user("weather?"),
        Message {
            role: Role::Assistant,
            content: vec![
                MessageContent::Thinking {
                    thinking: "hmm".into(),
                    signature: "sig".into(),
                },
                MessageContent::ToolUse(ToolUse::from_raw("a", "get", r#"{"x":1}"#)),
                MessageContent::ToolUse(ToolUse::from_raw("b", "get", "{oops")),
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                MessageContent::ToolResult {
                    tool_use_id: "a".into(),
                    content: vec![
                        ContentBlock::text("sunny"),
                        ContentBlock::Image {
                            media_type: "image/png".into(),
                            data: "AAAA".into(),
                        },
                    ],
                    is_error: false,
                },
                MessageContent::ToolResult {
                    tool_use_id: "b".into(),
                    content: vec![ContentBlock::text("bad arguments")],
                    is_error: true,
                },
                MessageContent::Text {
                    text: "and tomorrow?".into(),
                },
            ],
        },
    ];
    let out = chat_messages(Some("be brief"), &messages);
    assert_eq!(
        Value::Array(out),
        json!([
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "weather?"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "get", "arguments": "{\"x\":1}"}},
                {"id": "b", "type": "function", "function": {"name": "get", "arguments": "{}"}},
            ]},
            {"role": "tool", "tool_call_id": "a", "content": "sunny\n[image omitted]"},
            {"role": "tool", "tool_call_id": "b", "content": "Error: bad arguments"},
            {"role": "user", "content": "and tomorrow?"},
        ])
    );
}

#[test]
fn user_images_become_data_urls() {
    let out = chat_messages(
        None,
        &[Message {
            role: Role::User,
            content: vec![
                MessageContent::Text {
                    text: "what is this?".into(),
                },
                MessageContent::Image {
                    media_type: "image/png".into(),
                    data: "iVBOR".into(),
                },
            ],
        }],
    );
    assert_eq!(
        out,
        vec![json!({"role": "user", "content": [
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBOR"}},
        ]})]
    );
}

#[test]
fn one_index_with_a_new_id_is_a_new_call() {
    let (events, response) = run(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{\"k\":1}"}}]},"finish_reason":"tool_calls"}]}"#,
    ]);
    // a is whole once b starts.
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(
        events[1],
        ModelEvent::ToolUseCompleted(ToolUse::new("a", "x", json!({})))
    );
    let response = response.unwrap();
    let calls: Vec<_> = response
        .content
        .iter()
        .filter_map(|block| match block {
            MessageContent::ToolUse(call) => {
                Some((call.id.as_str(), call.input.json_or_empty().into_owned()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(calls, vec![("a", json!({})), ("b", json!({"k": 1}))]);
}

#[test]
fn odd_input_never_panics() {
    let odd = [
        "null",
        "[]",
        "42",
        r#"{"choices":null}"#,
        r#"{"choices":[null,1,"x"]}"#,
        r#"{"choices":[{"delta":null,"finish_reason":7}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[null,{"index":-1},{"function":null}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":18446744073709551615,"function":{"arguments":{"a":1}}}]}}]}"#,
        r#"{"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":99}}}"#,
        r#"{"choices":[{"delta":{"content":"ü"},"finish_reason":"stop"}]}"#,
    ];
    let (_, response) = run(&odd);
    let response = response.unwrap();
    assert_eq!(response.usage.input_tokens, 0);
    assert_eq!(response.usage.cache_read_input_tokens, 1);

    assert!(matches!(
        run(&["{not json"]).1,
        Err(ModelError::Stream { .. })
    ));
    assert!(matches!(
        run(&[r#"{"error":{"message":"boom","type":"server_error"}}"#]).1,
        Err(ModelError::Server { status: 500, ref message }) if message == "boom"
    ));
    assert!(matches!(
        run(&[r#"{"error":{"message":"bad","type":"BadRequestError","code":400}}"#]).1,
        Err(ModelError::Api { status: 400, ref message }) if message == "bad"
    ));
}

#[test]
fn a_call_is_whole_once_the_next_starts_with_its_arguments_a_json_object() {
    let (events, response) = run(&[
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"look","arguments":"{\"key\":"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"a\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"c2","function":{"name":"look","arguments":"{\"key\":\"b\"}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"id":"c3","function":{"name":"look","arguments":""}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"c4","function":{"name":"look","arguments":"{}"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":2,"function":{"arguments":"{\"key\":\"c\"}"}}]},"finish_reason":"tool_calls"}]}"#,
    ]);
    let whole: Vec<&ToolUse> = events
        .iter()
        .filter_map(|event| match event {
            ModelEvent::ToolUseCompleted(call) => Some(call),
            _ => None,
        })
        .collect();
    let a = ToolUse::new("c1", "look", serde_json::json!({"key": "a"}));
    let b = ToolUse::new("c2", "look", serde_json::json!({"key": "b"}));
    // c3 had no arguments yet when c4 started (they came later): not whole then.
    assert_eq!(whole, [&a, &b]);
    let calls: Vec<ToolUse> = response
        .unwrap()
        .content
        .iter()
        .filter_map(|c| match c {
            MessageContent::ToolUse(call) => Some(call.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(calls[..2], [a, b]);
    assert_eq!(
        calls[2].input.parsed(),
        Some(&serde_json::json!({"key": "c"}))
    );
}

#[test]
fn effort_is_reasoning_effort_and_thinking_is_ignored() {
    let model = OpenAiModel::new("o4-mini", None);
    let body = |effort| {
        model.request_body(&ModelRequest {
            messages: vec![Message::user("hi")].into(),
            thinking: crate::Thinking::budget(4096),
            effort,
            ..ModelRequest::default()
        })
    };
    assert_eq!(body(Some(Effort::Medium))["reasoning_effort"], "medium");
    // OpenAI's highest level is xhigh.
    assert_eq!(body(Some(Effort::Max))["reasoning_effort"], "xhigh");
    let none = body(None);
    assert!(none.get("reasoning_effort").is_none());
    assert!(none.get("thinking").is_none(), "{none}");
}
