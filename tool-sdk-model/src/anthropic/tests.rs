//! Unit tests of the Anthropic wire format.
use futures::StreamExt as _;

use super::events::{Turn, stream_error};
use super::*;
use crate::http::TurnReader;
use crate::http::read_turn;
use crate::{Effort, ModelEvent, StopReason, ToolUse};

fn events(turn: &mut Turn, lines: &[(&str, &str)]) -> Result<Vec<ModelEvent>, ModelError> {
    let mut out = Vec::new();
    for (name, data) in lines {
        out.extend(turn.on_event(name, data)?);
    }
    Ok(out)
}

#[test]
fn messages_merge_roles_and_put_tool_results_first() {
    let messages = vec![
        Message::user("hi"),
        Message::user(""),
        Message {
            role: Role::Assistant,
            content: vec![MessageContent::ToolUse(ToolUse::from_raw("t1", "read", ""))],
        },
        Message::user("note"),
        Message {
            role: Role::User,
            content: vec![MessageContent::ToolResult {
                tool_use_id: "t1".into(),
                content: vec![ContentBlock::text("ok")],
                is_error: false,
            }],
        },
    ];
    let json = messages_json(&messages);
    assert_eq!(
        Value::Array(json),
        json!([
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "read", "input": {}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1",
                 "content": [{"type": "text", "text": "ok"}]},
                {"type": "text", "text": "note"}
            ]}
        ])
    );
}

#[test]
fn stream_error_types_map_to_errors() {
    assert!(matches!(
        stream_error("overloaded_error", "Overloaded".into()),
        ModelError::Overloaded { message, .. } if message == "Overloaded"
    ));
    assert!(matches!(
        stream_error("api_error", "boom".into()),
        ModelError::Server { status: 500, .. }
    ));
    assert!(matches!(
        stream_error("invalid_request_error", "bad".into()),
        ModelError::Api { status: 400, .. }
    ));
}

#[test]
fn turn_assembles_blocks_by_index() {
    let mut turn = Turn::default();
    let out = events(
        &mut turn,
        &[
            ("message_start", r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"b","name":"y","input":{}}}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"x","input":{}}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"k\":"}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"1}"}}"#),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            ("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
            ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":9}}"#),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ],
    )
    .unwrap();
    let calls = [
        ToolUse::from_raw("a", "x", r#"{"k":1}"#),
        ToolUse::from_raw("b", "y", ""),
    ];
    // Started in stream order; whole in content order, each once every block before it
    // stopped.
    assert_eq!(
        out,
        [
            ModelEvent::ToolUseStarted {
                id: "b".into(),
                name: "y".into()
            },
            ModelEvent::ToolUseStarted {
                id: "a".into(),
                name: "x".into()
            },
            ModelEvent::ToolUseCompleted(calls[0].clone()),
            ModelEvent::ToolUseCompleted(calls[1].clone()),
        ]
    );
    let response = turn.finish().unwrap();
    assert_eq!(response.content, calls.map(MessageContent::ToolUse));
    assert_eq!(response.stop_reason, StopReason::Other("pause_turn".into()));
    assert_eq!(
        (response.usage.input_tokens, response.usage.output_tokens),
        (5, 9)
    );
}

#[test]
fn odd_server_input_is_an_error_never_a_panic() {
    let cases: &[(&str, &str)] = &[
        (
            "content_block_delta",
            r#"{"type":"content_block_delta","index":7,"delta":{"type":"text_delta","text":"x"}}"#,
        ),
        (
            "content_block_stop",
            r#"{"type":"content_block_stop","index":7}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":-1,"content_block":{}}"#,
        ),
        (
            "content_block_start",
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use"}}"#,
        ),
        ("message_start", "{not json"),
        (
            "message_delta",
            r#"{"type":"message_delta","delta":{"stop_reason":5}}"#,
        ),
        ("error", r#"{"type":"error"}"#),
    ];
    for (name, data) in cases {
        let mut turn = Turn::default();
        assert!(
            matches!(turn.on_event(name, data), Err(ModelError::Stream { .. })),
            "{name}: {data}"
        );
    }
    // A text delta on a tool_use block is refused too.
    let mut turn = Turn::default();
    let result = events(
        &mut turn,
        &[
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"a","name":"x"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#,
            ),
        ],
    );
    assert!(
        matches!(result, Err(ModelError::Stream { message: m, .. }) if m.contains("tool_use block"))
    );
    // Unknown events and blocks are ignored.
    let mut turn = Turn::default();
    let out = events(
        &mut turn,
        &[
            ("future", r#"{"type":"future","x":1}"#),
            ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s"}}"#),
            ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#),
            ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ],
    )
    .unwrap();
    assert!(out.is_empty());
    assert!(turn.finish().unwrap().content.is_empty());
}

#[test]
fn a_turn_without_message_stop_fails() {
    let turn = Turn {
        started: true,
        ..Turn::default()
    };
    assert!(matches!(
        turn.finish(),
        Err(ModelError::Stream { message: m, .. }) if m.contains("before message_stop")
    ));
}

#[tokio::test]
async fn chunk_boundaries_do_not_matter() {
    let body = concat!(
        "event: message_start\r\n",
        "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\r\n\r\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"68\u{b0}F \u{2600}\"}}  \n\n",
        "event: content_block_stop\n",
        "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}",
    );
    for size in [1, 2, 3, 7, 64, body.len()] {
        let chunks: Vec<Result<Vec<u8>, std::io::Error>> = body
            .as_bytes()
            .chunks(size)
            .map(|chunk| Ok(chunk.to_vec()))
            .collect();
        let events: Vec<_> = read_turn(Turn::default(), futures::stream::iter(chunks))
            .collect()
            .await;
        let texts: String = events
            .iter()
            .filter_map(|event| match event {
                Ok(ModelEvent::TextDelta(text)) => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(texts, "68\u{b0}F \u{2600}", "chunks of {size}");
        let Some(Ok(ModelEvent::Completed(response))) = events.last() else {
            panic!("chunks of {size}: {events:?}");
        };
        assert_eq!(
            response.content,
            [MessageContent::Text {
                text: "68\u{b0}F \u{2600}".into()
            }]
        );
        assert_eq!(response.usage.input_tokens, 3);
    }
}

#[tokio::test]
async fn a_broken_connection_mid_stream_is_a_transport_error() {
    let chunks: Vec<Result<&[u8], std::io::Error>> = vec![
        Ok(b"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "reset by peer",
        )),
    ];
    let events: Vec<_> = read_turn(Turn::default(), futures::stream::iter(chunks))
        .collect()
        .await;
    assert!(
        matches!(
            events.as_slice(),
            [Err(ModelError::Transport { message: m, .. })] if m.contains("reset by peer")
        ),
        "{events:?}"
    );
}

#[test]
fn thinking_and_effort_reach_the_body_and_unforce_the_output_tool() {
    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key");
    let output = OutputFormat::new("Answer", json!({"type": "object"}));
    let request = |thinking, effort| ModelRequest {
        messages: vec![Message::user("hi")].into(),
        max_tokens: 8000,
        output: Some(output.clone()),
        thinking,
        effort,
        ..ModelRequest::default()
    };
    let plain = model.request_body(&request(Thinking::Off, None));
    assert!(plain.get("thinking").is_none() && plain.get("output_config").is_none());
    assert_eq!(plain["tool_choice"]["name"], OutputFormat::TOOL_NAME);

    let budget = model.request_body(&request(Thinking::budget(2048), Some(Effort::Low)));
    assert_eq!(
        budget["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(budget["output_config"], json!({"effort": "low"}));
    // Forced tool use is refused with thinking: the output tool is only offered.
    assert!(budget.get("tool_choice").is_none(), "{budget}");
    assert_eq!(budget["tools"][0]["name"], OutputFormat::TOOL_NAME);

    let adaptive = model.request_body(&request(Thinking::Adaptive, Some(Effort::XHigh)));
    assert_eq!(adaptive["thinking"], json!({"type": "adaptive"}));
    assert_eq!(adaptive["output_config"]["effort"], "xhigh");
}

#[test]
fn the_interleaved_beta_goes_with_budget_thinking_and_tools_to_claude_4() {
    for (id, expected) in [
        ("claude-sonnet-4-5", true),
        ("claude-opus-4-1-20250805", true),
        ("claude-haiku-4-5-20251001", true),
        ("claude-sonnet-4-20250514", true),
        ("claude-3-7-sonnet-20250219", false),
        ("claude-opus-5", false),
        ("gpt-4.1", false),
    ] {
        assert_eq!(interleaved_thinking(id), expected, "{id}");
    }
    let model = AnthropicModel::new("claude-sonnet-4-5", "test-key");
    let tools: std::sync::Arc<[crate::ToolSpec]> = vec![crate::ToolSpec {
        name: "get_weather".into(),
        description: "Weather.".into(),
        input_schema: json!({"type": "object"}),
    }]
    .into();
    let with = |thinking, tools: &std::sync::Arc<[crate::ToolSpec]>| {
        let request = ModelRequest {
            messages: vec![Message::user("hi")].into(),
            tools: tools.clone(),
            thinking,
            ..ModelRequest::default()
        };
        let body = model.request_body(&request);
        model.needs_interleaved_beta(&request, &body)
    };
    assert!(with(Thinking::budget(2048), &tools));
    assert!(
        !with(Thinking::Adaptive, &tools),
        "adaptive interleaves on its own"
    );
    assert!(
        !with(Thinking::budget(2048), &Vec::new().into()),
        "no tools"
    );
    assert!(!with(Thinking::Off, &tools));
}
