//! Unit tests of the Responses wire format: the request body and the stream reader.
use std::sync::Arc;

use serde_json::json;

use super::events::TurnState;
use super::*;
use crate::Effort;
use crate::http::TurnReader;
use crate::{ModelEvent, ModelResponse, OutputFormat, StopReason, ToolSpec, ToolUse};
use tool_sdk_core::ContentBlock;

/// Each `(type, data)` as an SSE event named by its type, then the turn.
fn run(events: &[Value]) -> (Vec<ModelEvent>, Result<ModelResponse, ModelError>) {
    let mut turn = TurnState::default();
    let mut out = Vec::new();
    for event in events {
        let name = event["type"].as_str().unwrap_or("message");
        match turn.on_event(name, &event.to_string()) {
            Ok(more) => out.extend(more),
            Err(error) => return (out, Err(error)),
        }
    }
    (out, turn.finish())
}

fn reasoning_item() -> Value {
    json!({
        "id": "rs_1", "type": "reasoning",
        "summary": [{"type": "summary_text", "text": "Check both cities."}],
        "encrypted_content": "gAAAAB-opaque",
    })
}

fn call_item(index: u64, id: &str, call_id: &str, arguments: &str) -> Vec<Value> {
    let head = json!({"id": id, "type": "function_call", "status": "in_progress",
        "call_id": call_id, "name": "get_weather", "arguments": ""});
    let mut done = head.clone();
    done["arguments"] = arguments.into();
    done["status"] = "completed".into();
    let (first, rest) = arguments.split_at(arguments.len() / 2);
    vec![
        json!({"type": "response.output_item.added", "output_index": index, "item": head}),
        json!({"type": "response.function_call_arguments.delta", "output_index": index,
            "item_id": id, "delta": first}),
        json!({"type": "response.function_call_arguments.delta", "output_index": index,
            "item_id": id, "delta": rest}),
        json!({"type": "response.function_call_arguments.done", "output_index": index,
            "item_id": id, "arguments": arguments}),
        json!({"type": "response.output_item.done", "output_index": index, "item": done}),
    ]
}

fn completed(usage: Value) -> Value {
    json!({"type": "response.completed", "response": {"id": "resp_1", "status": "completed",
        "output": [], "usage": usage}})
}

#[test]
fn reasoning_and_parallel_calls_make_one_turn_in_order() {
    let mut events = vec![
        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}),
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "rs_1", "type": "reasoning", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
            "item_id": "rs_1", "summary_index": 0, "delta": "Check "}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
            "item_id": "rs_1", "summary_index": 0, "delta": "both."}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0,
            "item_id": "rs_1", "summary_index": 1, "delta": "Then answer."}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning_item()}),
    ];
    events.extend(call_item(1, "fc_1", "call_a", r#"{"location":"Paris"}"#));
    events.extend(call_item(2, "fc_2", "call_b", r#"{"location":"Rome"}"#));
    events.push(completed(json!({"input_tokens": 300,
        "input_tokens_details": {"cached_tokens": 120}, "output_tokens": 90,
        "output_tokens_details": {"reasoning_tokens": 64}, "total_tokens": 390})));
    let (events, turn) = run(&events);
    let turn = turn.unwrap();

    let thinking: String = events
        .iter()
        .filter_map(|e| match e {
            ModelEvent::ThinkingDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thinking, "Check both.\n\nThen answer.");
    let paris = ToolUse::new("call_a", "get_weather", json!({"location": "Paris"}));
    let rome = ToolUse::new("call_b", "get_weather", json!({"location": "Rome"}));
    let calls: Vec<&ModelEvent> = events
        .iter()
        .filter(|e| {
            matches!(
                e,
                ModelEvent::ToolUseStarted { .. } | ModelEvent::ToolUseCompleted(_)
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            &ModelEvent::ToolUseStarted {
                id: "call_a".into(),
                name: "get_weather".into()
            },
            &ModelEvent::ToolUseCompleted(paris.clone()),
            &ModelEvent::ToolUseStarted {
                id: "call_b".into(),
                name: "get_weather".into()
            },
            &ModelEvent::ToolUseCompleted(rome.clone()),
        ]
    );
    assert_eq!(
        turn.content,
        [
            MessageContent::ProviderItem {
                provider: "openai".into(),
                item: reasoning_item()
            },
            MessageContent::ToolUse(paris),
            MessageContent::ToolUse(rome),
        ]
    );
    assert_eq!(turn.stop_reason, StopReason::ToolUse);
    assert_eq!(turn.usage.input_tokens, 180, "cached tokens split out");
    assert_eq!(turn.usage.cache_read_input_tokens, 120);
    assert_eq!(turn.usage.prompt_tokens(), 300, "counted once");
    assert_eq!(turn.usage.output_tokens, 90, "reasoning tokens are output");
}

#[test]
fn text_refusal_and_incomplete_say_why_the_turn_stopped() {
    let text = [
        json!({"type": "response.output_item.added", "output_index": 0,
            "item": {"id": "msg_1", "type": "message", "role": "assistant", "content": []}}),
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
            "content_index": 0, "delta": "Hello"}),
        json!({"type": "response.output_text.delta", "output_index": 0, "item_id": "msg_1",
            "content_index": 0, "delta": " there"}),
    ];
    let mut done = text.to_vec();
    done.push(completed(json!({"input_tokens": 5, "output_tokens": 2})));
    let (events, turn) = run(&done);
    let turn = turn.unwrap();
    assert_eq!(events[0], ModelEvent::TextDelta("Hello".into()));
    assert_eq!(
        turn.content,
        [MessageContent::Text {
            text: "Hello there".into()
        }]
    );
    assert_eq!(turn.stop_reason, StopReason::EndTurn);

    let mut cut = text.to_vec();
    cut.push(
        json!({"type": "response.incomplete", "response": {"status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"}, "output": [],
        "usage": {"input_tokens": 5, "output_tokens": 16}}}),
    );
    let (_, turn) = run(&cut);
    let turn = turn.unwrap();
    assert_eq!(turn.stop_reason, StopReason::MaxTokens);
    assert_eq!(turn.usage.output_tokens, 16);

    let refusal = [
        json!({"type": "response.refusal.delta", "output_index": 0, "item_id": "msg_2",
            "content_index": 0, "delta": "I can't help with that."}),
        completed(json!({})),
    ];
    let (events, turn) = run(&refusal);
    assert_eq!(
        events,
        [ModelEvent::TextDelta("I can't help with that.".into())]
    );
    assert_eq!(turn.unwrap().stop_reason, StopReason::Refusal);
}

#[test]
fn a_stream_without_its_end_or_with_an_error_fails_naming_openai() {
    let (_, turn) = run(&[
        json!({"type": "response.output_text.delta", "output_index": 0,
        "delta": "Hi"}),
    ]);
    let error = turn.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { message, .. } if message.contains("OpenAI")),
        "{error:?}"
    );

    let cases = [
        (
            json!({"type": "response.failed", "response": {"status": "failed",
                "error": {"code": "server_error", "message": "The model failed."}}}),
            "server",
        ),
        (
            json!({"type": "error", "code": "context_length_exceeded",
                "message": "Your input exceeds the context window.", "param": "input"}),
            "too long",
        ),
        (
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down."}),
            "rate",
        ),
        (
            json!({"type": "error", "code": "invalid_prompt", "message": "Not allowed."}),
            "api",
        ),
        (
            json!({"error": {"type": "invalid_request_error", "message": "Bad.", "code": 400}}),
            "api",
        ),
    ];
    for (event, kind) in cases {
        let (_, turn) = run(std::slice::from_ref(&event));
        let error = turn.unwrap_err();
        let fits = match kind {
            "server" => matches!(error, ModelError::Server { status: 500, .. }),
            "too long" => matches!(error, ModelError::PromptTooLong { status: 400, .. }),
            "rate" => matches!(error, ModelError::RateLimited { .. }),
            _ => matches!(error, ModelError::Api { status: 400, .. }),
        };
        assert!(fits, "{event}: {error:?}");
        assert!(error.to_string().contains("OpenAI"), "{error}");
    }

    let mut turn = TurnState::default();
    let error = turn.on_event("message", "{not json").unwrap_err();
    assert!(matches!(error, ModelError::Stream { .. }), "{error:?}");
}

#[test]
fn a_call_whose_arguments_are_not_an_object_is_kept_malformed_and_not_started_early() {
    let mut events = call_item(0, "fc_1", "call_a", "{\"location\": ");
    events.push(completed(json!({})));
    let (events, turn) = run(&events);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, ModelEvent::ToolUseCompleted(_))),
        "{events:?}"
    );
    let turn = turn.unwrap();
    let MessageContent::ToolUse(call) = &turn.content[0] else {
        panic!("{:?}", turn.content)
    };
    assert!(call.input.is_malformed());
    assert_eq!(call.id, "call_a");
}

#[test]
fn a_whole_json_response_is_read_as_one_turn() {
    let body = json!({"id": "resp_1", "object": "response", "status": "completed",
        "output": [reasoning_item(),
            {"id": "msg_1", "type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}],
        "usage": {"input_tokens": 10, "output_tokens": 3}});
    let mut turn = TurnState::default();
    let events = turn.on_json_body(&body.to_string()).unwrap();
    assert_eq!(
        events,
        [
            ModelEvent::ThinkingDelta("Check both cities.".into()),
            ModelEvent::TextDelta("Done.".into())
        ]
    );
    let turn = turn.finish().unwrap();
    assert_eq!(turn.content.len(), 2);
    assert_eq!(
        turn.content[1],
        MessageContent::Text {
            text: "Done.".into()
        }
    );
}

fn weather_tool() -> ToolSpec {
    ToolSpec {
        name: "get_weather".into(),
        description: "Weather.".into(),
        input_schema: json!({"type": "object",
            "properties": {"location": {"type": "string"}, "unit": {"type": "string"}},
            "required": ["location"]}),
    }
}

#[test]
fn the_request_carries_reasoning_back_before_its_calls_and_the_results_after() {
    let model = OpenAiResponsesModel::new("gpt-5", "test-key")
        .with_reasoning_effort(ReasoningEffort::High)
        .with_reasoning_summary(ReasoningSummary::Auto);
    let messages = vec![
        Message {
            role: Role::User,
            content: vec![
                MessageContent::Text {
                    text: "Weather?".into(),
                },
                MessageContent::Image {
                    media_type: "image/png".into(),
                    data: "AAAA".into(),
                },
            ],
        },
        Message {
            role: Role::Assistant,
            content: vec![
                // Another provider's reasoning is left out.
                MessageContent::Thinking {
                    thinking: "hmm".into(),
                    signature: "sig".into(),
                },
                MessageContent::ProviderItem {
                    provider: "gcp.gemini".into(),
                    item: json!({"x": 1}),
                },
                MessageContent::ProviderItem {
                    provider: "openai".into(),
                    item: reasoning_item(),
                },
                MessageContent::Text {
                    text: "Checking.".into(),
                },
                MessageContent::ToolUse(ToolUse::from_raw("call_a", "get_weather", "{bad")),
            ],
        },
        Message {
            role: Role::User,
            content: vec![MessageContent::ToolResult {
                tool_use_id: "call_a".into(),
                content: vec![ContentBlock::text("bad arguments")],
                is_error: true,
            }],
        },
    ];
    let request = ModelRequest {
        system: Some("Be brief.".into()),
        messages: messages.into(),
        tools: Arc::from(vec![weather_tool()]),
        max_tokens: 1000,
        temperature: Some(0.2),
        ..ModelRequest::default()
    };
    let body = model.request_body(&request);
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["max_output_tokens"], 1000);
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "Weather?"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]},
            reasoning_item(),
            {"type": "message", "role": "assistant",
             "content": [{"type": "output_text", "text": "Checking."}]},
            {"type": "function_call", "call_id": "call_a", "name": "get_weather",
             "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_a",
             "output": "Error: bad arguments"},
        ])
    );
    let tool = &body["tools"][0];
    assert_eq!(tool["type"], "function");
    assert_eq!(tool["name"], "get_weather");
    assert_eq!(tool["strict"], false);
    assert_eq!(tool["parameters"]["required"], json!(["location"]));

    let strict = OpenAiResponsesModel::new("gpt-5", "test-key").with_strict_tools(true);
    let body = strict.request_body(&request);
    assert_eq!(body["tools"][0]["strict"], true);
    assert_eq!(
        body["tools"][0]["parameters"]["additionalProperties"], false,
        "lowered to the strict subset"
    );
    assert!(body.get("reasoning").is_none(), "only when asked");

    // The agent's effort (`ModelSettings::with_effort`) when the client sets none; its `max`
    // is OpenAI's `xhigh`, and the client's own wins.
    for (agent, sent) in [(Effort::Medium, "medium"), (Effort::Max, "xhigh")] {
        let asked = ModelRequest {
            effort: Some(agent),
            ..request.clone()
        };
        let body = strict.request_body(&asked);
        assert_eq!(body["reasoning"], json!({"effort": sent}));
        let own = model.request_body(&asked);
        assert_eq!(own["reasoning"]["effort"], "high");
    }
}

/// A turn cut off while the model reasoned holds only its reasoning item; sent back alone, the
/// API would refuse it for want of the item it preceded.
#[test]
fn a_reasoning_item_that_nothing_followed_is_not_sent_back() {
    let reasoning = MessageContent::ProviderItem {
        provider: "openai".into(),
        item: reasoning_item(),
    };
    let messages = [
        Message::user("Think."),
        Message {
            role: Role::Assistant,
            content: vec![reasoning.clone()],
        },
        Message::user("Again."),
        Message {
            role: Role::Assistant,
            content: vec![
                reasoning.clone(),
                MessageContent::Text {
                    text: "Done.".into(),
                },
                reasoning,
            ],
        },
    ];
    let kinds: Vec<Value> = input_items(&messages)
        .iter()
        .map(|item| item["type"].clone())
        .collect();
    assert_eq!(
        kinds,
        [
            json!("message"),
            json!("message"),
            json!("reasoning"),
            json!("message")
        ]
    );
}

#[test]
fn typed_output_is_a_strict_json_schema_text_format() {
    let model = OpenAiResponsesModel::new("gpt-5", "test-key");
    let request = ModelRequest {
        messages: vec![Message::user("Forecast?")].into(),
        max_tokens: 100,
        output: Some(OutputFormat::new(
            "Forecast",
            json!({"type": "object", "description": "A forecast.",
                "properties": {"city": {"type": "string"}}}),
        )),
        ..ModelRequest::default()
    };
    let format = &model.request_body(&request)["text"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["name"], "Forecast");
    assert_eq!(format["strict"], true);
    assert_eq!(format["description"], "A forecast.");
    assert_eq!(format["schema"]["required"], json!(["city"]));
    assert_eq!(format["schema"]["additionalProperties"], false);
}

#[test]
fn from_env_needs_a_key_and_models_that_do_not_reason_get_no_encrypted_content() {
    let missing = OpenAiResponsesModel::from_vars("gpt-5".into(), Some(" ".into()), None);
    assert!(
        matches!(&missing, Err(ModelError::MissingApiKey(m)) if m.contains("OPENAI_API_KEY")),
        "{missing:?}"
    );
    let model = OpenAiResponsesModel::from_vars(
        "gpt-5".into(),
        Some("test-key".into()),
        Some("http://localhost:8080/v1/".into()),
    )
    .unwrap();
    assert_eq!(model.base_url(), "http://localhost:8080/v1");
    assert!(!format!("{model:?}").contains("test-key"), "key redacted");
    assert_eq!(model.provider_name(), "openai");

    let request = ModelRequest {
        messages: vec![Message::user("Hi")].into(),
        max_tokens: 10,
        ..ModelRequest::default()
    };
    let plain = OpenAiResponsesModel::new("gpt-4.1", "test-key");
    assert!(plain.request_body(&request).get("include").is_none());
    let forced = plain.with_encrypted_reasoning(true);
    assert!(forced.request_body(&request).get("include").is_some());
}

#[test]
fn a_provider_item_survives_serialisation() {
    let block = MessageContent::ProviderItem {
        provider: "openai".into(),
        item: reasoning_item(),
    };
    let json = serde_json::to_value(&block).unwrap();
    assert_eq!(json["type"], "provider_item");
    assert_eq!(json["item"]["encrypted_content"], "gAAAAB-opaque");
    assert_eq!(
        serde_json::from_value::<MessageContent>(json).unwrap(),
        block
    );
}
