#!/usr/bin/env python3
"""Writes the committed cassettes of tests/cassettes.rs (run it from anywhere).

No API key is available where these were made, so each conversation is built from the shapes
of the providers' documented example streams: Anthropic's "Streaming Messages" page (the
message_start / content_block_* / message_delta / message_stop events, its tool_use and
thinking examples, its error shapes) and OpenAI's Chat Completions streaming reference (chat
completion chunks, tool_calls deltas, `refusal` deltas, finish_reason, the usage chunk and
[DONE]). Each file says so in its first line. A cassette recorded from a real API
(TOOL_SDK_RECORD_DIR) has the same format and replaces one of these as it is.

Request bodies hold only what a test must see the client send (a replay checks every key a
recorded body has, and no other).
"""

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTE = ("built by tests/cassettes/build.py from the shapes of {who}'s documented example "
        "streams; not recorded from the live API (no key was available)")

# ---------------------------------------------------------------- Anthropic Messages


def a_sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n"
                   for e in events)


def a_start(msg_id, input_tokens=472):
    return {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [], "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 2}}}


def a_text(index, text):
    words = text.split(" ")
    chunks = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    return ([{"type": "content_block_start", "index": index,
              "content_block": {"type": "text", "text": ""}}]
            + [{"type": "content_block_delta", "index": index,
                "delta": {"type": "text_delta", "text": c}} for c in chunks]
            + [{"type": "content_block_stop", "index": index}])


def a_tool(index, call_id, name, args):
    raw = json.dumps(args)
    half = len(raw) // 2
    return [{"type": "content_block_start", "index": index,
             "content_block": {"type": "tool_use", "id": call_id, "name": name, "input": {}}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": ""}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": raw[:half]}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "input_json_delta", "partial_json": raw[half:]}},
            {"type": "content_block_stop", "index": index}]


def a_thinking(index, thinking, signature):
    return [{"type": "content_block_start", "index": index,
             "content_block": {"type": "thinking", "thinking": "", "signature": ""}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "thinking_delta", "thinking": thinking}},
            {"type": "content_block_delta", "index": index,
             "delta": {"type": "signature_delta", "signature": signature}},
            {"type": "content_block_stop", "index": index}]


def a_end(reason, output_tokens=89):
    return [{"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": None},
             "usage": {"output_tokens": output_tokens}},
            {"type": "message_stop"}]


def a_turn(msg_id, blocks, reason):
    events = [a_start(msg_id), {"type": "ping"}]
    for block in blocks:
        events += block
    return a_sse(events + a_end(reason))


def a_error(status, kind, message):
    return {"status": status, "headers": {"content-type": "application/json"},
            "body": json.dumps({"type": "error", "error": {"type": kind, "message": message}})}


def a_ok(body):
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "body": body}


def a_req(body=None):
    request = {"method": "POST", "path": "/v1/messages",
               "headers": {"anthropic-version": "2023-06-01"}}
    if body is not None:
        request["body"] = body
    return request


WEATHER_SF = {"location": "San Francisco, CA"}
WEATHER_NY = {"location": "New York, NY"}
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"

anthropic = {
    "parallel_tools": [
        (a_req({"stream": True, "messages": [{"role": "user"}]}),
         a_ok(a_turn("msg_01", [a_text(0, "I'll check both cities."),
                                 a_tool(1, "toolu_01A", "get_weather", WEATHER_SF),
                                 a_tool(2, "toolu_01B", "get_weather", WEATHER_NY)],
                     "tool_use"))),
        (a_req({"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01A"},
            {"type": "tool_result", "tool_use_id": "toolu_01B"}]}]}),
         a_ok(a_turn("msg_02", [a_text(0, "Sunny in San Francisco, rain in New York.")],
                     "end_turn"))),
    ],
    "thinking_with_tools": [
        (a_req({"stream": True}),
         a_ok(a_turn("msg_11", [a_thinking(0, "The user wants the weather; I should call the tool.",
                                           SIGNATURE),
                                 a_tool(1, "toolu_11", "get_weather", WEATHER_SF)],
                     "tool_use"))),
        # The thinking block goes back whole, its signature unchanged, before the call.
        (a_req({"messages": [{"role": "user"}, {"role": "assistant", "content": [
            {"type": "thinking",
             "thinking": "The user wants the weather; I should call the tool.",
             "signature": SIGNATURE},
            {"type": "tool_use", "id": "toolu_11"}]}, {"role": "user"}]}),
         a_ok(a_turn("msg_12", [a_text(0, "It is sunny in San Francisco.")], "end_turn"))),
    ],
    "refusal": [
        (a_req({"stream": True}),
         a_ok(a_turn("msg_21", [a_text(0, "I can't help with that.")], "refusal"))),
    ],
    "max_tokens": [
        (a_req({"stream": True}),
         a_ok(a_turn("msg_31", [a_text(0, "Here is the first part of a very long")],
                     "max_tokens"))),
    ],
    # Two attempts (the client's one retry), both overloaded: the fallback model answers.
    "overloaded": [
        (a_req(), a_error(529, "overloaded_error", "Overloaded")),
        (a_req(), a_error(529, "overloaded_error", "Overloaded")),
    ],
    # A call, then the next request refused as too long: one summary request, then the
    # request again on the compacted conversation.
    "prompt_too_long": [
        (a_req({"messages": [{"role": "user"}]}),
         a_ok(a_turn("msg_41", [a_tool(0, "toolu_41", "get_weather", WEATHER_SF)], "tool_use"))),
        (a_req({"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]}),
         a_error(400, "invalid_request_error",
                 "prompt is too long: 210417 tokens > 200000 maximum")),
        (a_req({"messages": [{"role": "user"}]}),
         a_ok(a_turn("msg_42", [a_text(0, "SUMMARY: the user asked for the weather in San "
                                          "Francisco; get_weather was called.")], "end_turn"))),
        (a_req({"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "user"}]}),
         a_ok(a_turn("msg_43", [a_text(0, "It is sunny in San Francisco.")], "end_turn"))),
    ],
}

# ---------------------------------------------------------------- OpenAI Chat Completions


def o_chunk(delta, finish=None, cid="chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"):
    return {"id": cid, "object": "chat.completion.chunk", "created": 1741569952,
            "model": "gpt-4.1-2025-04-14", "service_tier": "default",
            "system_fingerprint": "fp_3b1b8f4f7e",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            "usage": None}


def o_sse(deltas, finish, prompt_tokens=82, completion_tokens=18):
    chunks = [o_chunk({"role": "assistant", "content": None if deltas and "tool_calls" in deltas[0]
                       else "", "refusal": None})]
    chunks += [o_chunk(d) for d in deltas]
    chunks.append(o_chunk({}, finish))
    usage = dict(o_chunk({}), choices=[], usage={
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0}})
    chunks.append(usage)
    return "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks) + \
        "data: [DONE]\n\n"


def o_text(text):
    words = text.split(" ")
    return [{"content": w + (" " if i < len(words) - 1 else "")} for i, w in enumerate(words)]


def o_calls(calls):
    """Parallel calls: each call's head, then its arguments in two fragments."""
    deltas = []
    for index, (call_id, name, args) in enumerate(calls):
        raw = json.dumps(args)
        deltas.append({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                       "function": {"name": name, "arguments": ""}}]})
        deltas.append({"tool_calls": [{"index": index, "function": {"arguments": raw[:5]}}]})
        deltas.append({"tool_calls": [{"index": index, "function": {"arguments": raw[5:]}}]})
    return deltas


def o_ok(body):
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "body": body}


def o_error(status, kind, code, message):
    return {"status": status, "headers": {"content-type": "application/json"},
            "body": json.dumps({"error": {"message": message, "type": kind, "param": None,
                                          "code": code}})}


def o_req(body=None):
    request = {"method": "POST", "path": "/v1/chat/completions"}
    if body is not None:
        request["body"] = body
    return request


openai = {
    "parallel_tools": [
        (o_req({"stream": True, "messages": [{"role": "user"}]}),
         o_ok(o_sse(o_calls([("call_abc", "get_weather", WEATHER_SF),
                             ("call_def", "get_weather", WEATHER_NY)]), "tool_calls"))),
        (o_req({"messages": [{"role": "user"}, {"role": "assistant"},
                             {"role": "tool", "tool_call_id": "call_abc"},
                             {"role": "tool", "tool_call_id": "call_def"}]}),
         o_ok(o_sse(o_text("Sunny in San Francisco, rain in New York."), "stop"))),
    ],
    "refusal": [
        (o_req({"stream": True}),
         o_ok(o_sse([{"refusal": "I'm sorry, "}, {"refusal": "I can't help with that."}],
                    "stop"))),
    ],
    "max_tokens": [
        (o_req({"stream": True}),
         o_ok(o_sse(o_text("Here is the first part of a very long"), "length"))),
    ],
    "overloaded": [
        (o_req(), o_error(503, "server_error", None,
                          "The server is overloaded or not ready yet.")),
        (o_req(), o_error(503, "server_error", None,
                          "The server is overloaded or not ready yet.")),
    ],
    "prompt_too_long": [
        (o_req({"messages": [{"role": "user"}]}),
         o_ok(o_sse(o_calls([("call_41", "get_weather", WEATHER_SF)]), "tool_calls"))),
        (o_req({"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}]}),
         o_error(400, "invalid_request_error", "context_length_exceeded",
                 "This model's maximum context length is 128000 tokens. However, your "
                 "messages resulted in 130412 tokens. Please reduce the length of the "
                 "messages.")),
        (o_req({"messages": [{"role": "user"}]}),
         o_ok(o_sse(o_text("SUMMARY: the user asked for the weather in San Francisco; "
                           "get_weather was called."), "stop"))),
        (o_req({"messages": [{"role": "user"}, {"role": "assistant"}, {"role": "tool"}]}),
         o_ok(o_sse(o_text("It is sunny in San Francisco."), "stop"))),
    ],
}


# ---------------------------------------------------------------- Gemini generateContent

G_MODEL = "gemini-2.5-flash"
G_PATH = f"/v1beta/models/{G_MODEL}:streamGenerateContent?alt=sse"


def g_chunk(parts=None, finish=None, usage=None):
    candidate = {"index": 0}
    if parts is not None:
        candidate["content"] = {"parts": parts, "role": "model"}
    if finish is not None:
        candidate["finishReason"] = finish
    chunk = {"candidates": [candidate], "modelVersion": G_MODEL, "responseId": "resp-cassette"}
    if usage is not None:
        chunk["usageMetadata"] = usage
    return chunk


def g_usage(prompt=120, out=30, thoughts=0):
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": out,
             "totalTokenCount": prompt + out + thoughts}
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def g_sse(chunks):
    return "".join(f"data: {json.dumps(c, separators=(',', ':'))}\n\n" for c in chunks)


def g_text(text, finish="STOP"):
    words = text.split(" ")
    pieces = [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]
    chunks = [g_chunk([{"text": p}]) for p in pieces[:-1]]
    chunks.append(g_chunk([{"text": pieces[-1]}], finish, g_usage()))
    return g_sse(chunks)


def g_ok(body):
    return {"status": 200, "headers": {"content-type": "text/event-stream"}, "body": body}


def g_error(status, code, message):
    return {"status": status, "headers": {"content-type": "application/json"},
            "body": json.dumps({"error": {"code": status, "message": message, "status": code}})}


def g_req(body=None):
    request = {"method": "POST", "path": G_PATH}
    if body is not None:
        request["body"] = body
    return request


G_SIGNATURE = "c2lnLWNhc3NldHRlLWNhbGxz"

gemini = {
    "parallel_tools": [
        (g_req({"contents": [{"role": "user"}]}),
         g_ok(g_sse([
             g_chunk([{"text": "The user wants two cities; I will look both up.", "thought": True}]),
             g_chunk([{"functionCall": {"name": "get_weather", "args": WEATHER_SF},
                       "thoughtSignature": G_SIGNATURE},
                      {"functionCall": {"name": "get_weather", "args": WEATHER_NY}}],
                     "STOP", g_usage(thoughts=50))]))),
        # The calls go back on the same parts, the signature on the first; the results by name.
        (g_req({"contents": [
            {"role": "user"},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": WEATHER_SF},
                 "thoughtSignature": G_SIGNATURE},
                {"functionCall": {"name": "get_weather", "args": WEATHER_NY}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "get_weather"}},
                                       {"functionResponse": {"name": "get_weather"}}]}]}),
         g_ok(g_text("Sunny in San Francisco, rain in New York."))),
    ],
    # Blocked: no content, finishReason SAFETY.
    "refusal": [
        (g_req({"contents": [{"role": "user"}]}),
         g_ok(g_sse([g_chunk(None, "SAFETY", g_usage(out=0))]))),
    ],
    "max_tokens": [
        (g_req(), g_ok(g_text("Here is the first part of a very long", "MAX_TOKENS"))),
    ],
    "overloaded": [
        (g_req(), g_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")),
        (g_req(), g_error(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")),
    ],
    "prompt_too_long": [
        (g_req({"contents": [{"role": "user"}]}),
         g_ok(g_sse([g_chunk([{"functionCall": {"name": "get_weather", "args": WEATHER_SF}}],
                             "STOP", g_usage())]))),
        (g_req({"contents": [{"role": "user"}, {"role": "model"}, {"role": "user"}]}),
         g_error(400, "INVALID_ARGUMENT",
                 "The input token count (1153280) exceeds the maximum number of tokens allowed "
                 "(1048576).")),
        (g_req({"contents": [{"role": "user"}]}),
         g_ok(g_text("SUMMARY: the user asked for the weather in San Francisco; get_weather "
                     "was called."))),
        (g_req({"contents": [{"role": "user"}, {"role": "model"}, {"role": "user"}]}),
         g_ok(g_text("It is sunny in San Francisco."))),
    ],
}


def write(provider, who, cassettes):
    folder = HERE / provider
    folder.mkdir(exist_ok=True)
    for name, interactions in cassettes.items():
        lines = [json.dumps({"note": NOTE.format(who=who)})]
        lines += [json.dumps({"request": request, "response": response})
                  for request, response in interactions]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")


write("anthropic", "Anthropic", anthropic)
write("openai", "OpenAI", openai)
write("gemini", "Google's Gemini API", gemini)
