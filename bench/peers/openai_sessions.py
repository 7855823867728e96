"""The OpenAI Agents SDK peer of the sessions bench (benches/benches/sessions.rs): its
`SQLiteSession` (a file in a temp dir, as shipped: WAL, SQLite's default `synchronous = FULL`;
and again with `synchronous = NORMAL`, tool-sdk's SqliteStore's durability) doing

- `append`: `add_items([item])`, one item a call, as tool-sdk appends one record a call;
- `load_1000`: `get_items()` of a session of 1,000 items: the items the SDK itself stored for a
  run of 499 turns of one `add` call and a text turn (the user prompt, 499 function calls and
  their outputs, the answer);
- `run/<store>/T10_N1`: `Runner.run` of 10 turns of one `add` call and a text turn over the
  scripted model of bench/peers/openai_agents.py, without a session and with one (cleared
  between runs, untimed), as the Rust bench's `session_step`.

Prints one JSON line per figure: {"peer", "what", "ns", "runs"} (median of batches after a
warm-up, like openai_agents.py), and one {"peer", "what": "item_bytes", ...} line.
"""
import asyncio
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

# Imported from beside this file, leaving no __pycache__ in the checkout.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openai_agents import ScriptedModel, add  # noqa: E402

from agents import Agent, Runner, SQLiteSession  # noqa: E402

BUDGET = float(os.environ.get("PEER_BUDGET_MS", "2000")) / 1000


class NormalSyncSession(SQLiteSession):
    """SQLiteSession with `synchronous = NORMAL` on its connections: the durability of
    tool-sdk's SqliteStore (WAL, no flush at each commit)."""

    @staticmethod
    def _configure_connection(conn: sqlite3.Connection) -> None:
        SQLiteSession._configure_connection(conn)
        conn.execute("PRAGMA synchronous=NORMAL")


async def timed(job, per=1):
    """Median ns of one `job()` over batches of `per`, after a quarter budget of warm-up."""
    end = time.perf_counter() + BUDGET / 4
    while time.perf_counter() < end:
        await job()
    batches, runs = [], 0
    end = time.perf_counter() + BUDGET
    while len(batches) < 5 or time.perf_counter() < end:
        started = time.perf_counter_ns()
        for _ in range(per):
            await job()
        batches.append((time.perf_counter_ns() - started) / per)
        runs += per
        if len(batches) >= 200:
            break
    batches.sort()
    return batches[len(batches) // 2], runs


def emit(what, ns, runs):
    print(json.dumps({"peer": "openai-agents", "what": what, "ns": ns, "runs": runs}), flush=True)


async def main():
    tmp = tempfile.mkdtemp(prefix="agents-sessions-")
    agent_of = lambda turns: Agent(  # noqa: E731
        name="bench", instructions="", tools=[add], model=ScriptedModel(turns, 1)
    )

    # The 1,000 items of a 499-turn run, as the SDK stores them.
    source = SQLiteSession("source", os.path.join(tmp, "source.db"))
    result = await Runner.run(agent_of(499), "go", max_turns=500, session=source)
    assert result.final_output == "done", result.final_output
    items = await source.get_items()
    assert len(items) == 1000, len(items)
    sizes = [len(json.dumps(item)) for item in items]
    print(json.dumps({"peer": "openai-agents", "what": "item_bytes", "items": len(items),
                      "bytes": sum(sizes)}), flush=True)

    for label, cls in [("sqlite", SQLiteSession), ("sqlite_normal", NormalSyncSession)]:
        db = os.path.join(tmp, f"{label}.db")
        loaded = cls("loaded", db)
        await loaded.add_items(items)
        assert len(await loaded.get_items()) == 1000

        async def load():
            got = await loaded.get_items()
            assert len(got) == 1000

        emit(f"{label}/load_1000", *await timed(load))

        appended = cls("appended", db)
        cycle = iter(())

        async def append():
            nonlocal cycle
            item = next(cycle, None)
            if item is None:
                cycle = iter(items[1:-1])
                item = next(cycle)
            await appended.add_items([item])

        emit(f"{label}/append", *await timed(append, per=20))

        session = cls("run", db)

        async def run_with_session():
            await session.clear_session()
            started = time.perf_counter_ns()
            result = await Runner.run(agent_of(10), "go", max_turns=11, session=session)
            took = time.perf_counter_ns() - started
            assert result.final_output == "done"
            return took

        emit(f"run/{label}/T10_N1", *await timed_inner(run_with_session))

    async def run_without():
        started = time.perf_counter_ns()
        result = await Runner.run(agent_of(10), "go", max_turns=11)
        took = time.perf_counter_ns() - started
        assert result.final_output == "done"
        return took

    emit("run/memory/T10_N1", *await timed_inner(run_without))
    shutil.rmtree(tmp, ignore_errors=True)


async def timed_inner(job):
    """Like `timed`, for a job that times itself (its set-up excluded): median of 5-run
    batches."""
    end = time.perf_counter() + BUDGET / 4
    while time.perf_counter() < end:
        await job()
    batches, runs = [], 0
    end = time.perf_counter() + BUDGET
    while len(batches) < 5 or time.perf_counter() < end:
        batches.append(sum([await job() for _ in range(5)]) / 5)
        runs += 5
        if len(batches) >= 200:
            break
    batches.sort()
    return batches[len(batches) // 2], runs


if __name__ == "__main__":
    asyncio.run(main())
