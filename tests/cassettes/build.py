#!/usr/bin/env python3
"""Writes the committed cassettes of tests/cassettes.rs (run it from anywhere).

No API key is available where these were made, so each conversation is built from the shapes
of the providers' documented example streams: Anthropic's "Streaming Messages" page (the
message_start / content_block_* / message_delta / message_stop events, its tool_use and
thinking examples, its error shapes) and OpenAI's Chat Completions streaming reference (chat
completion chunks, tool_calls deltas, `refusal` deltas, finish_reason, the usage chunk and
[DONE]), OpenAI's Responses API streaming events reference (response.created,
response.output_item.added/.done, reasoning summary, output_text, refusal and
function_call_arguments deltas, response.completed/.incomplete with usage, the error object)
and Google's Gemini API reference (streamGenerateContent chunks: candidates, functionCall
parts, thoughtSignature, thought parts, finishReason, usageMetadata; the error JSON). Each file
says so in its first line. A cassette recorded from a real API
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


# ---------------------------------------------------------------- OpenAI Responses

R_MODEL = "gpt-5-2025-08-07"


def r_usage(input_tokens=812, cached=0, output=146, reasoning=0):
    return {"input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input_tokens + output}


def r_response(resp_id, status, output, usage=None, incomplete=None, error=None):
    return {"id": resp_id, "object": "response", "created_at": 1756315696, "status": status,
            "background": False, "error": error, "incomplete_details": incomplete,
            "instructions": None, "max_output_tokens": 8192, "model": R_MODEL,
            "output": output, "parallel_tool_calls": True, "previous_response_id": None,
            "reasoning": {"effort": "medium", "summary": "auto"}, "store": False,
            "temperature": 1.0, "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": "auto", "top_p": 1.0, "truncation": "disabled", "usage": usage,
            "user": None, "metadata": {}}


def r_sse(events):
    out = []
    for number, event in enumerate(events):
        event = dict(event, sequence_number=number)
        out.append(f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n")
    return "".join(out)


def r_words(text):
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


def r_reasoning(index, rs_id, summary, encrypted):
    item = {"id": rs_id, "type": "reasoning", "encrypted_content": encrypted,
            "summary": [{"type": "summary_text", "text": summary}]}
    at = {"item_id": rs_id, "output_index": index, "summary_index": 0}
    events = [{"type": "response.output_item.added", "output_index": index,
               "item": {"id": rs_id, "type": "reasoning", "summary": []}},
              dict(at, type="response.reasoning_summary_part.added",
                   part={"type": "summary_text", "text": ""})]
    events += [dict(at, type="response.reasoning_summary_text.delta", delta=w)
               for w in r_words(summary)]
    events += [dict(at, type="response.reasoning_summary_text.done", text=summary),
               dict(at, type="response.reasoning_summary_part.done",
                    part={"type": "summary_text", "text": summary}),
               {"type": "response.output_item.done", "output_index": index, "item": item}]
    return events, item


def r_message(index, msg_id, text, refusal=False):
    kind, field = ("refusal", "refusal") if refusal else ("output_text", "text")
    part = {"type": kind, field: text} if refusal else \
        {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
    empty = dict(part, **{field: ""})
    at = {"item_id": msg_id, "output_index": index, "content_index": 0}
    events = [{"type": "response.output_item.added", "output_index": index,
               "item": {"id": msg_id, "type": "message", "status": "in_progress",
                        "content": [], "role": "assistant"}},
              dict(at, type="response.content_part.added", part=empty)]
    events += [dict(at, type=f"response.{kind}.delta", delta=w) for w in r_words(text)]
    item = {"id": msg_id, "type": "message", "status": "completed", "content": [part],
            "role": "assistant"}
    events += [dict(at, type=f"response.{kind}.done", **{field: text}),
               dict(at, type="response.content_part.done", part=part),
               {"type": "response.output_item.done", "output_index": index, "item": item}]
    return events, item


def r_call(index, fc_id, call_id, name, args):
    raw = json.dumps(args)
    head = {"id": fc_id, "type": "function_call", "status": "in_progress", "arguments": "",
            "call_id": call_id, "name": name}
    item = dict(head, status="completed", arguments=raw)
    at = {"item_id": fc_id, "output_index": index}
    events = [{"type": "response.output_item.added", "output_index": index, "item": head},
              dict(at, type="response.function_call_arguments.delta", delta=raw[:9]),
              dict(at, type="response.function_call_arguments.delta", delta=raw[9:]),
              dict(at, type="response.function_call_arguments.done", arguments=raw),
              {"type": "response.output_item.done", "output_index": index, "item": item}]
    return events, item


def r_turn(resp_id, parts, usage, incomplete=None):
    events, output = [], []
    for part_events, item in parts:
        events += part_events
        output.append(item)
    start = r_response(resp_id, "in_progress", [])
    status = "incomplete" if incomplete else "completed"
    end = r_response(resp_id, status, output, usage,
                     {"reason": incomplete} if incomplete else None)
    return r_sse([{"type": "response.created", "response": start},
                  {"type": "response.in_progress", "response": start}]
                 + events + [{"type": f"response.{status}", "response": end}])


def r_req(body=None):
    request = {"method": "POST", "path": "/v1/responses"}
    if body is not None:
        request["body"] = body
    return request


R_USER = {"type": "message", "role": "user"}
ENCRYPTED_1 = "gAAAAABoq-encrypted-reasoning-one-opaque-to-us"
ENCRYPTED_2 = "gAAAAABoq-encrypted-reasoning-two-opaque-to-us"
R_REASONING_1 = r_reasoning(0, "rs_68af1c1", "**Checking two cities**\n\nThe user wants the "
                            "weather in both; I'll call get_weather for each.", ENCRYPTED_1)
R_REASONING_2 = r_reasoning(0, "rs_68af1c2", "**Answering**\n\nBoth results are in.",
                            ENCRYPTED_2)
R_ANSWER = "Sunny in San Francisco, rain in New York."
R_FORECAST = {"city": "Paris", "temperature_c": 21}

responses = {
    # Reasoning, then two calls in parallel; the answer after the results; then, after a
    # resume, one more prompt: each reasoning item goes back whole, before what it preceded.
    "reasoning_parallel_tools": [
        (r_req({"model": "gpt-5", "stream": True, "store": False,
                "include": ["reasoning.encrypted_content"],
                "reasoning": {"effort": "medium", "summary": "auto"},
                "tools": [{"type": "function", "name": "get_weather"}],
                "input": [R_USER]}),
         o_ok(r_turn("resp_68af1c1", [
             R_REASONING_1,
             r_call(1, "fc_68af1c1a", "call_abc", "get_weather", WEATHER_SF),
             r_call(2, "fc_68af1c1b", "call_def", "get_weather", WEATHER_NY)],
             r_usage(812, 512, 146, 64)))),
        (r_req({"input": [R_USER, R_REASONING_1[1],
                          {"type": "function_call", "call_id": "call_abc"},
                          {"type": "function_call", "call_id": "call_def"},
                          {"type": "function_call_output", "call_id": "call_abc"},
                          {"type": "function_call_output", "call_id": "call_def"}]}),
         o_ok(r_turn("resp_68af1c2", [R_REASONING_2, r_message(1, "msg_68af1c2", R_ANSWER)],
                     r_usage(1024, 768, 40, 16)))),
        (r_req({"input": [R_USER, R_REASONING_1[1],
                          {"type": "function_call"}, {"type": "function_call"},
                          {"type": "function_call_output"}, {"type": "function_call_output"},
                          R_REASONING_2[1],
                          {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": R_ANSWER}]},
                          R_USER]}),
         o_ok(r_turn("resp_68af1c3", [r_message(0, "msg_68af1c3", "Tomorrow: the same.")],
                     r_usage(1100, 1024, 8)))),
    ],
    "refusal": [
        (r_req({"stream": True}),
         o_ok(r_turn("resp_68af2", [r_message(0, "msg_68af2", "I'm sorry, I can't help with "
                                              "that.", refusal=True)], r_usage(40, 0, 9)))),
    ],
    "max_output_tokens": [
        (r_req({"stream": True, "max_output_tokens": 8192}),
         o_ok(r_turn("resp_68af3", [r_message(0, "msg_68af3",
                                              "Here is the first part of a very long")],
                     r_usage(40, 0, 8192, 8000), incomplete="max_output_tokens"))),
    ],
    "typed_output": [
        (r_req({"text": {"format": {"type": "json_schema", "name": "Forecast",
                                    "strict": True}}}),
         o_ok(r_turn("resp_68af4", [r_message(0, "msg_68af4", json.dumps(R_FORECAST))],
                     r_usage(90, 0, 12)))),
    ],
    "overloaded": [
        (r_req(), o_error(503, "server_error", None,
                          "The server is overloaded or not ready yet.")),
        (r_req(), o_error(503, "server_error", None,
                          "The server is overloaded or not ready yet.")),
    ],
    "prompt_too_long": [
        (r_req({"input": [R_USER]}),
         o_ok(r_turn("resp_68af5", [r_call(0, "fc_68af5", "call_41", "get_weather",
                                           WEATHER_SF)], r_usage()))),
        (r_req({"input": [R_USER, {"type": "function_call"}, {"type": "function_call_output"}]}),
         o_error(400, "invalid_request_error", "context_length_exceeded",
                 "Your input exceeds the context window of this model. Please adjust your "
                 "input and try again.")),
        (r_req({"input": [R_USER]}),
         o_ok(r_turn("resp_68af6", [r_message(0, "msg_68af6", "SUMMARY: the user asked for "
                                              "the weather in San Francisco; get_weather was "
                                              "called.")], r_usage()))),
        (r_req({"input": [R_USER, {"type": "function_call"}, {"type": "function_call_output"}]}),
         o_ok(r_turn("resp_68af7", [r_message(0, "msg_68af7", "It is sunny in San Francisco.")],
                     r_usage()))),
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
write("openai-responses", "OpenAI Responses API", responses)
