//! Where a request's `cache_control` breakpoints go.
//!
//! Anthropic caches the prompt's prefix up to each block marked
//! `"cache_control": {"type": "ephemeral"}` (tools first, then the system prompt, then the
//! messages), at most four marks a request, and a later request reads a prefix an earlier one
//! wrote when the bytes match. So the marks go where the next request will find the same bytes:
//!
//! 1. the last tool definition: the tools change least;
//! 2. the system prompt (sent as a one-block array, since only blocks carry marks);
//! 3. the last block of the final message: the moving end, written for the next turn;
//! 4. the last block of the message that was final one turn ago (the last user message before
//!    the final assistant turn): what the previous request wrote, read back whole even when
//!    the turn added more than the 20 blocks Anthropic looks back from a mark.
//!
//! A mark whose prefix is shorter than [`PromptCache::min_prefix_tokens`] is left out: the API
//! would ignore it. Empty text blocks (which the API refuses anyway) and thinking blocks never
//! carry one.

use serde_json::{Map, Value, json};

use crate::PromptCache;

/// The estimate of how many characters of request JSON make one token.
pub(crate) const CHARS_PER_TOKEN: u64 = 4;

/// Marks `body` (a built request: `tools`, `system` as a string, `messages`) for caching.
pub(super) fn place_breakpoints(body: &mut Map<String, Value>, cache: PromptCache) {
    let min_chars = cache.min_prefix_tokens.saturating_mul(CHARS_PER_TOKEN);
    let mut chars: u64 = 0;

    if let Some(Value::Array(tools)) = body.get_mut("tools") {
        chars += tools.iter().map(json_len).sum::<u64>();
        if chars >= min_chars
            && let Some(last) = tools.last_mut()
        {
            mark(last);
        }
    }

    if let Some(Value::String(system)) = body.get("system") {
        let mut block = json!({ "type": "text", "text": system });
        chars += json_len(&block);
        if chars >= min_chars {
            mark(&mut block);
        }
        body.insert("system".into(), Value::Array(vec![block]));
    }

    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let Some(last) = messages.len().checked_sub(1) else {
        return;
    };
    // The message that was final one request ago: the one before the last assistant turn.
    let previous_end = messages[..last]
        .iter()
        .rposition(|message| message["role"] == "assistant")
        .and_then(|assistant| assistant.checked_sub(1));
    for (index, message) in messages.iter_mut().enumerate() {
        let Some(Value::Array(blocks)) = message.get_mut("content") else {
            continue;
        };
        let target = match index == last || Some(index) == previous_end {
            true => blocks.iter().rposition(can_carry_mark),
            false => None,
        };
        for (position, block) in blocks.iter_mut().enumerate() {
            chars += json_len(block);
            if Some(position) == target && chars >= min_chars {
                mark(block);
            }
        }
    }
}

/// Whether the API accepts a mark on this block.
fn can_carry_mark(block: &Value) -> bool {
    match block["type"].as_str() {
        Some("thinking" | "redacted_thinking") | None => false,
        Some("text") => block["text"].as_str().is_some_and(|text| !text.is_empty()),
        Some(_) => true,
    }
}

fn mark(block: &mut Value) {
    if let Value::Object(block) = block {
        block.insert("cache_control".into(), json!({ "type": "ephemeral" }));
    }
}

/// The length of `value` as compact JSON.
fn json_len(value: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marked(value: &Value) -> bool {
        value.get("cache_control").is_some()
    }

    fn body(tool_text: &str, system: &str, messages: Value) -> Map<String, Value> {
        let Value::Object(body) = json!({
            "tools": [{"name": "a", "description": tool_text}, {"name": "b", "description": ""}],
            "system": system,
            "messages": messages,
        }) else {
            unreachable!("a literal object")
        };
        body
    }

    #[test]
    fn four_marks_at_tools_system_end_and_previous_end() {
        let long = "x".repeat(400);
        let mut body = body(
            &long,
            "sys",
            json!([
                {"role": "user", "content": [{"type": "text", "text": long}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "1", "name": "a", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "1"}, {"type": "text", "text": "more"}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "tool_use", "id": "2", "name": "a", "input": {}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "2"}]},
            ]),
        );
        place_breakpoints(&mut body, PromptCache::new(10));
        assert!(marked(&body["tools"][1]) && !marked(&body["tools"][0]));
        assert!(marked(&body["system"][0]));
        let messages = body["messages"].as_array().unwrap();
        assert!(marked(&messages[4]["content"][0]));
        assert!(marked(&messages[2]["content"][1]));
        assert!(!marked(&messages[2]["content"][0]));
        let count = serde_json::to_string(&body)
            .unwrap()
            .matches("cache_control")
            .count();
        assert_eq!(count, 4);
    }

    #[test]
    fn short_prefixes_get_no_mark_and_thinking_never_does() {
        let mut body = body(
            "short",
            "sys",
            json!([
                {"role": "user", "content": [{"type": "text", "text": "y".repeat(4000)}]},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
            ]),
        );
        place_breakpoints(&mut body, PromptCache::new(500));
        assert!(!marked(&body["tools"][1]));
        assert!(!marked(&body["system"][0]));
        assert_eq!(body["system"][0]["text"], "sys");
        // The final message is all thinking: no mark; no assistant turn came before it, so
        // there is no previous end either.
        assert!(
            !serde_json::to_string(&body["messages"])
                .unwrap()
                .contains("cache_control")
        );
    }
}
