"""The OpenAI Agents SDK peer of the agent-loop bench: Runner.run over a fake Model (the SDK's
Model interface, answering from a script), the same `add` tool, T turns of N parallel calls,
then a text turn. Tracing is off. Prints one JSON line per shape, like bench/peers/vercel.mjs.
"""
import asyncio
import json
import os
import sys
import time

from agents import Agent, Runner, function_tool, set_tracing_disabled
from agents.items import ModelResponse
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

set_tracing_disabled(True)


@function_tool
def add(a: int, b: int) -> int:
    """Adds two numbers."""
    return a + b


class ScriptedModel(Model):
    def __init__(self, turns, calls):
        self.turns, self.calls, self.step = turns, calls, 0

    async def get_response(self, *args, **kwargs):
        step = self.step
        self.step += 1
        if step < self.turns:
            output = [
                ResponseFunctionToolCall(
                    id=f"fc_{step}_{c}",
                    call_id=f"call_{step}_{c}",
                    type="function_call",
                    name="add",
                    arguments='{"a": 2, "b": 3}',
                    status="completed",
                )
                for c in range(self.calls)
            ]
        else:
            output = [
                ResponseOutputMessage(
                    id="msg",
                    type="message",
                    role="assistant",
                    status="completed",
                    content=[ResponseOutputText(type="output_text", text="done", annotations=[])],
                )
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args, **kwargs):
        raise NotImplementedError


async def once(turns, calls):
    agent = Agent(name="bench", instructions="", tools=[add], model=ScriptedModel(turns, calls))
    result = await Runner.run(agent, "go", max_turns=turns + 1)
    assert result.final_output == "done", result.final_output
    made = sum(1 for item in result.new_items if item.type == "tool_call_item")
    assert made == turns * calls, made


async def main():
    shapes = (sys.argv[1] if len(sys.argv) > 1 else "T1_N1,T1_N8,T10_N1,T10_N8,T50_N1,T100_N1").split(",")
    budget = float(os.environ.get("PEER_BUDGET_MS", "2000")) / 1000
    # Warm every shape first, so that the first one measured does not pay for the warm-up.
    for shape in shapes:
        turns, calls = (int(x) for x in shape[1:].split("_N"))
        await once(turns, calls)
    for shape in shapes:
        turns, calls = (int(x) for x in shape[1:].split("_N"))
        end = time.perf_counter() + budget / 4
        while time.perf_counter() < end:
            await once(turns, calls)
        batches, runs = [], 0
        end = time.perf_counter() + budget
        while len(batches) < 5 or time.perf_counter() < end:
            per = max(1, round(50 / (turns * calls)))
            started = time.perf_counter_ns()
            for _ in range(per):
                await once(turns, calls)
            batches.append((time.perf_counter_ns() - started) / per)
            runs += per
            if len(batches) >= 200:
                break
        batches.sort()
        print(json.dumps({"peer": "openai-agents", "shape": shape,
                          "ns_per_run": batches[len(batches) // 2], "runs": runs}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
