#!/usr/bin/env python3
"""Writes BENCHMARKS.md (to stdout) from the results bench/run left in RESULTS_DIR. Every figure
comes from that directory; a part that was not measured says so."""
import datetime
import glob
import json
import os
import statistics
import sys

ONLY = None
if sys.argv[1] == "--only":
    # `--only sessions RESULTS_DIR`: just that section (bench/sessions splices it into
    # BENCHMARKS.md when the rest of the file comes from an earlier full run).
    ONLY, R = sys.argv[2], sys.argv[3]
else:
    R = sys.argv[1]


def load(path, default=None):
    try:
        with open(os.path.join(R, path)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def criterion():
    """full_id -> median ns."""
    out = {}
    for path in glob.glob(os.path.join(R, "criterion", "**", "new", "benchmark.json"), recursive=True):
        bench = json.load(open(path))
        est = json.load(open(os.path.join(os.path.dirname(path), "estimates.json")))
        out[bench["full_id"]] = est["median"]["point_estimate"]
    return out


C = criterion()


def jsonl(path):
    path = os.path.join(R, path)
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def read(path, default=None):
    try:
        return open(os.path.join(R, path)).read().strip()
    except OSError:
        return default


def sessions_section():
    """The "Sessions" section (issue #13), from the criterion groups session_* and
    sessions_peer.jsonl, both written by bench/sessions."""
    peer = {r["what"]: r for r in jsonl("sessions_peer.jsonl")}
    pv = {r["peer"]: r["version"] for r in jsonl("sessions_versions.jsonl")}
    p = lambda what: peer.get(what, {}).get("ns")  # noqa: E731
    out = []
    o = out.append
    o("## Sessions")
    o("")
    started, finished = read("sessions_started.txt"), read("sessions_finished.txt")
    pg = read("postgres_version.txt")
    if C.get("session_step/memory/T10_N1") is None:
        o("Not measured in this run.")
        o("")
        return out
    o(f"Durable sessions (issue #13), measured by `bench/sessions` from {started} to {finished}, "
      "all rows side by side in that one run: the criterion bench `benches/benches/sessions.rs` "
      "(no store, `SqliteStore`, `PostgresStore`), then the OpenAI Agents SDK's `SQLiteSession` "
      f"(`openai-agents` {pv.get('openai-agents', 'n/a')}, `bench/peers/openai_sessions.py`). "
      "`SqliteStore`: a file in a temp dir on the same ext4 disk, WAL and `synchronous = NORMAL` "
      "(its documented durability: survives SIGKILL, may lose the last appends on a power cut). "
      f"`PostgresStore`: {pg or 'PostgreSQL'}, a throwaway server on a Unix socket with its "
      "default durability (`fsync` and `synchronous_commit` on: each commit waits for a WAL "
      "flush). `SQLiteSession` as shipped is WAL with SQLite's default `synchronous = FULL` "
      "(a flush at each commit); the `synchronous = NORMAL` rows set our durability on its "
      "connections, the like-for-like comparison.")
    o("")
    if ONLY:
        o("**What was run:** only `bench/sessions` (then `bench/report.py --only sessions`, spliced "
          "into this file), not the whole `bench/run`; the other sections are from the earlier "
          "full run and were left as they were.")
        o("")
    mem = C.get("session_step/memory/T10_N1")
    rows = [("tool-sdk, no store", mem, None),
            ("tool-sdk, `SqliteStore`", C.get("session_step/sqlite/T10_N1"), mem),
            ("tool-sdk, `PostgresStore`", C.get("session_step/postgres/T10_N1"), mem)]
    pmem = p("run/memory/T10_N1")
    prow = [("Agents SDK, no session", pmem, None),
            ("Agents SDK, `SQLiteSession` (as shipped)", p("run/sqlite/T10_N1"), pmem),
            ("Agents SDK, `SQLiteSession`, `synchronous = NORMAL`", p("run/sqlite_normal/T10_N1"), pmem)]
    o("**Added cost per agent step.** One run = 10 model turns of one `add` call and a text turn "
      "(11 steps; the agent-loop bench's T=10, N=1), scripted model, agent creation excluded. "
      "tool-sdk stores four records a step (the model turn, its usage, the call's start, its "
      "result); `add` is read-only, so the four go to the store in one commit once the result is "
      "in (a mutating call's step takes two: its start is stored before it runs), and every "
      "result is stored before the next request. The Agents SDK's `Runner.run` "
      "with a session saves the run's new items to it (a session cleared between runs, untimed). "
      "Added per step = (run with the store − run without) / 11.")
    o("")
    o("| | run (T=10, N=1) | per step | added per step |")
    o("|---|---|---|---|")
    added = {}
    for name, v, base in rows + prow:
        if v is None:
            o(f"| {name} | not measured | | |")
            continue
        a = None if base is None else (v - base) / 11
        added[name] = a
        o(f"| {name} | {us(v)} | {us(v / 11)} | {'—' if a is None else us(a)} |")
    o("")
    resume = {k: C.get(f"session_resume/{k}/1000_messages") for k in ("sqlite", "postgres")}
    create = C.get("session_resume/memory/create")
    o("**Resume of a 1,000-message session.** `Agent::resume` of a session the agent wrote itself "
      "(499 turns of one call and a text turn: 1,000 messages, 1,998 records): reads the session, "
      "loads and decodes every record, rebuilds the conversation, checks for calls left open, "
      "builds the agent. `Agent::create` with no store is the agent-building part alone. The "
      "Agents SDK has no resume of its own beyond reading the items back (`get_items`, below).")
    o("")
    o("| | time | target |")
    o("|---|---|---|")
    o(f"| `Agent::resume`, `SqliteStore` | {us(resume['sqlite'])} | <= 20 ms: {'n/a' if resume['sqlite'] is None else verdict(resume['sqlite'] <= 20e6)} |")
    o(f"| `Agent::resume`, `PostgresStore` | {us(resume['postgres']) if resume['postgres'] else 'not measured'} | {'' if resume['postgres'] is None else '<= 20 ms: ' + verdict(resume['postgres'] <= 20e6)} |")
    o(f"| `Agent::create`, no store (part of both) | {us(create)} | |")
    o("")
    ap = {k: C.get(f"session_store/{k}/append") for k in ("sqlite", "postgres")}
    ld = {k: C.get(f"session_store/{k}/load_1000") for k in ("sqlite", "postgres")}
    o("**The stores alone.** `append`: one record (a tool result) per call, as the agent appends; "
      "the Agents SDK: `add_items([item])`, one item per call, cycling through the items of its "
      "own 1,000-item session. `load`: every record of a 1,000-record session (the first 1,000 "
      "records of the resumed session above); the Agents SDK: `get_items()` of the 1,000 items "
      "its `Runner.run` stored for the same 499-turn conversation (the prompt, 499 function "
      "calls and their outputs, the answer).")
    o("")
    o("| | `append`, one record | ratio peer/ours | `load`, 1,000 records | ratio peer/ours |")
    o("|---|---|---|---|---|")
    o(f"| tool-sdk `SqliteStore` | {us(ap['sqlite'])} | | {us(ld['sqlite'])} | |")
    if ap["postgres"] is not None:
        o(f"| tool-sdk `PostgresStore` | {us(ap['postgres'])} | | {us(ld['postgres'])} | |")
    for label, key in [("`SQLiteSession` (as shipped)", "sqlite"), ("`SQLiteSession`, `synchronous = NORMAL`", "sqlite_normal")]:
        a, l = p(f"{key}/append"), p(f"{key}/load_1000")
        o(f"| Agents SDK {label} | {us(a)} | {ratio(a, ap['sqlite'])} vs `SqliteStore` | {us(l)} | {ratio(l, ld['sqlite'])} vs `SqliteStore` |")
    o("")
    log = read("sessions.log", "") or ""
    ours_bytes = next((line for line in log.splitlines() if line.startswith("session_store: ")), None)
    pb = peer.get("item_bytes")
    if ours_bytes or pb:
        o("What is stored: " + (ours_bytes.split(": ", 1)[1] + " for tool-sdk" if ours_bytes else "n/a")
          + ("; " + f"{pb['items']} items, {pb['bytes']} bytes of JSON ({pb['bytes'] // pb['items']} an item on average) for the Agents SDK" if pb else "") + ".")
        o("")
    sq = added.get("tool-sdk, `SqliteStore`")
    o("Against the issue's targets: " + ", ".join([
        f"added per step with `SqliteStore` {us(sq)} against <= 100 µs ({'n/a' if sq is None else verdict(sq <= 100e3)})",
        f"resume of 1,000 messages {us(resume['sqlite'])} against <= 20 ms ({'n/a' if resume['sqlite'] is None else verdict(resume['sqlite'] <= 20e6)})",
    ]) + ".")
    o("")
    # Notes on this section's figures, kept by hand next to this script.
    notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "NOTES-sessions.md")
    if os.path.exists(notes):
        out.extend(open(notes).read().rstrip().split("\n"))
        o("")
    return out


machine = load("machine.json", {})
peers = {}
for line in open(os.path.join(R, "peers.jsonl")) if os.path.exists(os.path.join(R, "peers.jsonl")) else []:
    rec = json.loads(line)
    peers[(rec["peer"], rec["shape"])] = rec["ns_per_run"]
versions = {}
for line in open(os.path.join(R, "versions.jsonl")) if os.path.exists(os.path.join(R, "versions.jsonl")) else []:
    rec = json.loads(line)
    versions[rec["peer"]] = rec["version"]


def us(ns):
    return "n/a" if ns is None else f"{ns / 1000:.1f} µs" if ns < 1e6 else f"{ns / 1e6:.2f} ms"


def us2(ns):
    return "n/a" if ns is None else f"{ns / 1000:.2f} µs"


def ns_fmt(ns):
    return "n/a" if ns is None else f"{ns:.0f} ns" if ns < 1e4 else us(ns)


def ratio(peer, ours):
    if peer is None or ours is None or ours == 0:
        return "n/a"
    return f"{peer / ours:.2f}×"


def verdict(ok):
    return "**met**" if ok else "**missed**"


if ONLY == "sessions":
    print("\n".join(sessions_section()))
    sys.exit(0)


lines = []
w = lines.append
w("# Benchmarks")
w("")
w("Written by `bench/run` on one machine; every figure in the tables comes from its results "
  "directory (`target/bench/results/`), peers measured side by side in the same session. Ratios "
  "are the point: the absolute numbers belong to this machine. Re-run with `bench/run` (it "
  "installs every peer and data set itself). Notes, the SDK changes with before/after figures, "
  "and what was re-run are at the end.")
w("")
w(f"- Date: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}")
w(f"- Machine: {machine.get('cores', '?')} cores, {machine.get('cpu', '?')}, {machine.get('memory', '?')} RAM, "
  f"kernel {machine.get('kernel', '?')}, {machine.get('os', '?')}")
w(f"- Toolchains: {machine.get('rustc', '?')}; node {machine.get('node', '?')}; {machine.get('python', '?')}")
w(f"- Peers: rig-agent/rig-core 0.44.0, rmcp 3.9.0, jsonschema 0.60, boon 0.6, "
  f"Vercel `ai` {versions.get('vercel-ai', 'n/a')}, `openai-agents` {versions.get('openai-agents', 'n/a')}, "
  f"{machine.get('rg', 'rg ?')}, {machine.get('grep', 'grep ?')}, {machine.get('fd', 'fd ?')}, {machine.get('hyperfine', '')}")
w(f"- Load average when the run started: {' '.join(machine.get('load', []))}. **Noise:** this machine "
  "has 2 cores shared with other builds running at the same time, so wall-clock figures carry "
  "noise of tens of percent; the instruction counts (callgrind) do not, and are given where they "
  "apply. Medians throughout.")
w("")

# ---------------------------------------------------------------- summary (filled below)
summary = []

# ---------------------------------------------------------------- agent loop
w("## Tool dispatch through the agent loop")
w("")
w("One run = `T` model turns of `N` parallel calls of a trivial `add(a, b)` tool, then a final "
  "text turn (`T + 1` model steps), with each framework's own mock model: tool-sdk's "
  "`ScriptedModel`, rig's `MockCompletionModel` (rig-agent's classic loop), the AI SDK's "
  "`MockLanguageModelV4` under `generateText`, and an Agents SDK `Model` subclass under "
  "`Runner.run` (tracing off). Same tool, same arguments, same script. Times are per whole run "
  "(agent construction excluded for the Rust peers, included for the JS/Python ones, where it is "
  "a plain object).")
w("")
shapes = ["T1_N1", "T1_N8", "T10_N1", "T10_N8", "T50_N1", "T100_N1"]
w("| run shape | tool-sdk | rig | ratio rig/ours | Vercel AI SDK | ratio | OpenAI Agents SDK | ratio |")
w("|---|---|---|---|---|---|---|---|")
for s in shapes:
    ours = C.get(f"loop/ours/{s}")
    rig = C.get(f"loop/rig/{s}")
    v = peers.get(("vercel-ai", s))
    o = peers.get(("openai-agents", s))
    w(f"| {s.replace('_', ', ')} | {us(ours)} | {us(rig)} | {ratio(rig, ours)} | {us(v)} | {ratio(v, ours)} | {us(o)} | {ratio(o, ours)} |")
w("")


def per_step(get, s):
    t = int(s[1:].split("_")[0])
    v = get(s)
    return None if v is None else v / (t + 1)


def per_call(get, turns=1):
    a, b = get(f"T{turns}_N8"), get(f"T{turns}_N1")
    if a is None or b is None:
        return None
    # Below the noise (N=8 measured faster than N=1): no figure rather than a negative one.
    return None if a <= b else (a - b) / (7 * turns)


getters = {
    "tool-sdk": lambda s: C.get(f"loop/ours/{s}"),
    "rig": lambda s: C.get(f"loop/rig/{s}"),
    "Vercel AI SDK": lambda s: peers.get(("vercel-ai", s)),
    "OpenAI Agents SDK": lambda s: peers.get(("openai-agents", s)),
}
w("Derived: **per step** = run(T=10, N=1) / 11 steps (a model step plus its one call); **per "
  "call** = (run(T=1, N=8) − run(T=1, N=1)) / 7 extra calls in one turn; **per call, T=10** = "
  "(run(T=10, N=8) − run(T=10, N=1)) / 70, which also pays for the extra calls' blocks being "
  "carried in the history of later steps; **history**: mean step cost at T = 1, 10, 50, 100 "
  "(history grows by two messages a step).")
w("")
w("| | per step | per call | per call, T=10 | step @T=1 | step @T=10 | step @T=50 | step @T=100 |")
w("|---|---|---|---|---|---|---|---|")
for name, get in getters.items():
    w(f"| {name} | {us(per_step(get, 'T10_N1'))} | {us(per_call(get))} | {us(per_call(get, 10))} | "
      + " | ".join(us(per_step(get, s)) for s in ["T1_N1", "T10_N1", "T50_N1", "T100_N1"]) + " |")
w("")

ours_get = getters["tool-sdk"]
step = per_step(ours_get, "T10_N1")
call = per_call(ours_get)
s10, s50, s100 = (per_step(ours_get, s) for s in ["T10_N1", "T50_N1", "T100_N1"])
linear_note = "n/a"
linear_ok = None
if None not in (s10, s50, s100):
    # Per-step cost a + b*h gives a mean step cost linear in T: check T=50 against the line
    # through T=10 and T=100.
    slope = (s100 - s10) / 90
    predicted = s10 + slope * 40
    linear_ok = abs(s50 - predicted) <= 0.25 * s50
    linear_note = (f"mean step cost {us(s10)} at T=10, {us(s50)} at T=50, {us(s100)} at T=100: "
                   f"+{slope:.0f} ns per extra turn of history; T=50 is "
                   f"{'on' if linear_ok else 'off'} the straight line through T=10 and T=100 "
                   f"(predicted {us(predicted)})")
w(f"History: {linear_note}.")
w("")

cg = {}
if os.path.exists(os.path.join(R, "callgrind.txt")):
    for line in open(os.path.join(R, "callgrind.txt")):
        peer, shape, ir = line.split()
        cg[(peer, shape)] = int(ir)
if cg:
    w("Instruction counts (callgrind, 20 runs of each shape in one process; differences between "
      "shapes cancel set-up and process start): ")
    w("")
    w("| | instructions per extra call (T=1, N=1→8) | instructions per extra step (T=10→100) |")
    w("|---|---|---|")
    for peer, label in [("ours", "tool-sdk"), ("rig", "rig")]:
        a, b, c = cg.get((peer, "T1_N8")), cg.get((peer, "T10_N1")), cg.get((peer, "T100_N1"))
        a1 = cg.get((peer, "T1_N1"))
        pc = None if None in (a, a1) else (a - a1) / 20 / 7
        ps = None if None in (b, c) else (c - b) / 20 / 90
        w(f"| {label} | {'n/a' if pc is None else f'{pc:,.0f}'} | {'n/a' if ps is None else f'{ps:,.0f}'} |")
    w("")

d_ours, d_rmcp = C.get("dispatch/ours"), C.get("dispatch/rmcp")
w("One call through the tool registry alone (look-up, schema validation, call, statistics) "
  "against rmcp's `ToolRouter::call` for the same tool (look-up, argument deserialisation, call):")
w("")
w("| | tool-sdk `ToolRegistry::call` | rmcp `ToolRouter::call` | ratio rmcp/ours |")
w("|---|---|---|---|")
w(f"| one `add` call | {ns_fmt(d_ours)} | {ns_fmt(d_rmcp)} | {ratio(d_rmcp, d_ours)} |")
w("")
summary.append(("tool dispatch through the agent loop: per call", "<= 2.5 µs (#15; §9: 5 µs)", us2(call),
                None if call is None else call <= 2500,
                f"rig {ratio(per_call(getters['rig']), call)}, Vercel {ratio(per_call(getters['Vercel AI SDK']), call)}"))
summary.append(("tool dispatch through the agent loop: per step", "<= 10 µs (#15; §9: 20 µs)", us2(step),
                None if step is None else step <= 10000,
                f"rig {ratio(per_step(getters['rig'], 'T10_N1'), step)}, Vercel {ratio(per_step(getters['Vercel AI SDK'], 'T10_N1'), step)}"))
summary.append(("tool dispatch: linear in history", "linear", linear_note.split(':')[0] if linear_ok is None else
                ("linear" if linear_ok else "not linear"), linear_ok, ""))

# ---------------------------------------------------------------- validation
w("## Schema validation, small input")
w("")
w("The built-in Read tool's schema; valid input `{file_path, offset, limit}`, invalid input with "
  "a wrong type and an unknown key. `ours` on a valid input is `InputValidator::is_valid`, the "
  "fast path of `check`; `check` itself also shown. On an invalid input every library builds its "
  "error list (ours: the AJV-style list the model gets).")
w("")
w("| input | tool-sdk | tool-sdk `check` | jsonschema (direct) | ratio | boon | ratio |")
w("|---|---|---|---|---|---|---|")
for kind in ["valid", "invalid"]:
    ours = C.get(f"{kind}/ours")
    check = C.get(f"{kind}/ours_check")
    js = C.get(f"{kind}/jsonschema")
    bo = C.get(f"{kind}/boon")
    w(f"| {kind} | {ns_fmt(ours)} | {ns_fmt(check) if check else '(same)'} | {ns_fmt(js)} | {ratio(js, ours)} | {ns_fmt(bo)} | {ratio(bo, ours)} |")
w("")
vcheck = C.get("valid/ours_check") or C.get("valid/ours")
summary.append(("schema validation, small input (valid, `check`)", "<= 100 ns", ns_fmt(vcheck),
                None if vcheck is None else vcheck <= 100,
                f"jsonschema {ratio(C.get('valid/jsonschema'), vcheck)}, boon {ratio(C.get('valid/boon'), vcheck)}"))

# ---------------------------------------------------------------- search
search = load("search.json")
w("## Grep and Glob on a large tree")
w("")
if not search:
    w("Not measured in this run.")
    summary.append(("Grep on a large tree", "<= 1.05× rg", "not measured", None, ""))
    summary.append(("Glob on the same tree", "<= fd", "not measured", None, ""))
else:
    w("`linux` is Debian's linux-source package, unpacked, `git init`-ed, with the `/*` line "
      "Debian appends to its .gitignore removed; `small` is this repository (`git archive HEAD`). "
      "Our tools run in-process from a small binary (`benches/src/bin/searchbench.rs`) that "
      "calls the built-in `Grep`/`Glob` tools and prints what a model would get, so the "
      "figures include its process start and, for ours, sorting by mtime (one `stat` a result) "
      "that rg does not do. All three honour the same ignore rules (.gitignore, .ignore, hidden "
      "files skipped) except GNU grep, which has none. Warm cache, hyperfine medians. `equal`: "
      "the same set of files (files mode) or lines (content mode) as rg, after cutting lines at "
      "the 500 characters Grep keeps; for Glob, the same number of files as fd and every shown "
      "path among fd's (Glob shows the newest 100 and counts the rest).")
    w("")
    w("| tree | Grep case | tool-sdk | rg | ratio ours/rg | GNU grep | equal to rg |")
    w("|---|---|---|---|---|---|---|")
    grep_ratios = []
    for r in search:
        if r["tool"] != "Grep":
            continue
        t = r["times"]
        o, g, gg = t["ours"]["median"], t["rg"]["median"], t["grep"]["median"]
        cmpr = r["vs_rg"]
        eq = "yes" if cmpr["equal"] else f"no ({cmpr['ours']} vs {cmpr['peer']}, {cmpr['only_ours']} only ours, {cmpr['only_peer']} only rg)"
        w(f"| {r['tree']} | {r['case']} | {o * 1000:.0f} ms | {g * 1000:.0f} ms | {o / g:.2f}× | {gg * 1000:.0f} ms | {eq} |")
        if r["tree"] == "linux":
            grep_ratios.append(o / g)
    w("")
    w("`fd, mtimes`: fd made to read every file's modification time (`--changed-before` a "
      "date no file is past), the one thing Glob must do beyond what plain fd does, to show "
      "the newest first.")
    w("")
    w("| tree | Glob pattern | tool-sdk | fd | ratio ours/fd | fd, mtimes | ratio ours/fd, mtimes | files (ours / fd) | equal |")
    w("|---|---|---|---|---|---|---|---|---|")
    glob_ratios = []
    for r in search:
        if r["tool"] != "Glob":
            continue
        t = r["times"]
        o, f = t["ours"]["median"], t["fd"]["median"]
        c = r["vs_fd"]
        fm = t.get("fd_mtime", {}).get("median")
        fm_cells = "n/a | n/a" if fm is None else f"{fm * 1000:.0f} ms | {o / fm:.2f}×"
        w(f"| {r['tree']} | `{r['case']}` | {o * 1000:.0f} ms | {f * 1000:.0f} ms | {o / f:.2f}× | {fm_cells} | {c['ours_total']} / {c['peer']} | {'yes' if c['equal'] else 'no'} |")
        if r["tree"] == "linux":
            glob_ratios.append(o / f)
    w("")
    if grep_ratios:
        worst = max(grep_ratios)
        summary.append(("Grep on linux-source", "<= 1.05× rg", f"{min(grep_ratios):.2f}×–{worst:.2f}× rg",
                        worst <= 1.05, ""))
    if glob_ratios:
        worst = max(glob_ratios)
        summary.append(("Glob on linux-source", "<= fd", f"{min(glob_ratios):.2f}×–{worst:.2f}× fd",
                        worst <= 1.0, ""))

# ---------------------------------------------------------------- executor
w("## 8 read-only tools of 100 ms in one turn")
w("")
par, ser = C.get("one_turn/read_only_x8"), C.get("one_turn/mutating_x8")
w("One run: a turn of 8 calls of a tool that sleeps 100 ms, then a text turn. Read-only calls "
  "run together; the same tool without `read_only` must run one at a time (the serial "
  "baseline, measured).")
w("")
w("| | 8 read-only calls | 8 mutating calls (serial) | ratio |")
w("|---|---|---|---|")
w(f"| whole run | {us(par)} | {us(ser)} | {ratio(ser, par)} |")
w("")
summary.append(("8 read-only tools of 100 ms in one turn", "<= 120 ms", us(par),
                None if par is None else par <= 120e6, f"serial {us(ser)}"))

# ---------------------------------------------------------------- overlap (#15 item 1)
overlap = {r["layout"]: r for r in jsonl("overlap.jsonl")}
w("## Tools overlapping the stream")
w("")
w("A local server streams one Anthropic turn of four `tool_use` blocks over 2 s; each call runs "
  "a read-only tool of 1 s; the turn is timed by the server from the first request to the second "
  "(the one carrying the four results). `early`: the blocks arrive in the first second (one "
  "every 250 ms), then the model writes text until 2 s. `spread`: the blocks fill the 2 s (one "
  "every 500 ms, the last ending at 2 s), so its call cannot end before 3 s. \"last byte to "
  "start\": from the write of a block's `content_block_stop` to its tool starting, per block "
  "(`benches/src/bin/overlap.rs`, medians of its runs).")
w("")
w("| timeline | turn | last byte to start, blocks 1–4 | runs |")
w("|---|---|---|---|")
for name in ["early", "spread"]:
    r = overlap.get(name)
    if r:
        gaps = ", ".join(f"{g:.1f} ms" for g in r["last_byte_to_start_ms"])
        w(f"| {name} | {r['turn_ms'] / 1000:.3f} s | {gaps} | {r['runs']} |")
    else:
        w(f"| {name} | not measured | | |")
w("")
early = overlap.get("early")
summary.append(("4 tool_use blocks streamed over 2 s, tools of 1 s: the turn", "<= 2.1 s",
                "not measured" if early is None else f"{early['turn_ms'] / 1000:.3f} s",
                None if early is None else early["turn_ms"] <= 2100, ""))

# ---------------------------------------------------------------- long runs (#14 item 3)
def long_run_section():
    """The `Long runs` section: each session's prompt bill, from long_run.json."""
    lr = load("long_run.json")
    w("## Long runs")
    w("")
    if not lr:
        w("Not measured in this run.")
        w("")
        summary.append(("60-turn session: billed input with prompt caching", ">= 75 % lower",
                        "not measured", None, ""))
        return
    w(f"A scripted {lr['turns']}-turn coding session (reads, greps, edits, test runs; tool "
      "results of 3–12 kB) against a local server that prices each request as Anthropic's "
      "prompt cache would: the longest `cache_control` prefix an earlier request wrote is read "
      "(0.1x), the rest up to the last breakpoint is written (1.25x), the tail is plain input; "
      "4 characters a token (`benches/src/bin/long_run.rs`). Billed = input + 0.1 read + "
      "1.25 write, in input-token equivalents. The last three runs have caching on; `window` "
      "runs manage a 100k context window (old tool results cleared at 70 % of what "
      "`max_tokens` leaves of it, down to 10 %; the conversation compacted at 85 %), the "
      "last one with clearing off so that it must compact.")
    w("")
    w("| run | input | cache read | cache write | billed | largest request | compactions |")
    w("|---|---|---|---|---|---|---|")
    runs = [("caching_off", "caching off"), ("caching_on", "caching on"),
            ("compaction_off", "window not managed"), ("compaction_on", "window 100k"),
            ("compaction_without_clearing", "window 100k, no clearing")]
    for key, name in runs:
        r = lr.get(key)
        if r:
            w(f"| {name} | {r['input_tokens']:,} | {r['cache_read_tokens']:,} | "
              f"{r['cache_write_tokens']:,} | {r['billed_input_equivalent']:,.0f} | "
              f"{r['largest_request_tokens']:,} | {r.get('compactions', 0)} |")
    w("")
    w(f"Reduction with caching: **{lr['reduction'] * 100:.1f} %** (target >= 75 %).")
    w("")
    summary.append(("60-turn session: billed input with prompt caching", ">= 75 % lower",
                    f"{lr['reduction'] * 100:.1f} % lower", lr["reduction"] >= 0.75, ""))
    on, off = lr.get("compaction_on"), lr.get("compaction_off")
    if on and off:
        window = lr.get("window", 100_000)
        worst = max(on["largest_request_tokens"],
                    lr.get("compaction_without_clearing", on)["largest_request_tokens"])
        summary.append(("60-turn session: largest request against a 100k window",
                        "never over", f"{worst:,} managed, {off['largest_request_tokens']:,} not",
                        worst <= window, ""))
    small_window_section(lr.get("small_window"))


def small_window_section(sw):
    """The small-window conversation of issue 25: clearing batches and cache breaks."""
    if not sw:
        return
    w("### A long conversation in a small window")
    w("")
    w("40 prompts to one agent, each answered by two reads of an 8,000-character page (2,000 "
      "tokens) then a text, in a 20k window managed with the default settings, priced as "
      "above (`long_run --small-window`). The provider counts the answer's `max_tokens` in "
      "the window with the prompt (recent Claude models refuse a request over it: `over "
      "window`), so the agent clears against what `max_tokens` leaves: 11.8k of the window "
      "at the default 8,192, 18k at 2,048. A cache break is a request whose messages do not "
      "start with the previous one's (a batch of cleared results, a compaction), written to "
      "the cache again from there.")
    w("")
    w("| max_tokens | requests | clearing batches | cache breaks | compactions | over window "
      "| cache read | cache write | billed | largest request |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for key in ["max_tokens_8192", "max_tokens_2048"]:
        r = sw.get(key)
        if r:
            w(f"| {r['max_tokens']:,} | {r['requests']} | {r['clearing_batches']} | "
              f"{r['cache_breaks']} | {r['compactions']} | {r['over_window']} | "
              f"{r['cache_read_tokens']:,} | {r['cache_write_tokens']:,} | "
              f"{r['billed_input_equivalent']:,.0f} | {r['largest_request_tokens']:,} |")
    w("")
    w("Before issue 25 (`a0e5c56`: thresholds against the whole window, every result but the "
      "3 most recent cleared at once), the same conversation: 29 batches and 29 breaks at "
      "either `max_tokens`, 1,131,169 read, 417,933 written, 635,533 billed, and at 8,192, 84 "
      "of the 120 requests over the window, which the provider refuses and the agent did not "
      "then take for a prompt too long: the run failed. At 8,192 the prompt's 11.8k leave "
      "room for two reads between batches whatever the low-water mark, so each batch buys "
      "2.4 requests; at 2,048, 6.")
    w("")


long_run_section()

# ---------------------------------------------------------------- compile
w("## Compile time of a crate with 100 tools")
w("")
comp = {}
for kind in ["ours", "core", "rmcp"]:
    for mode in ["clean", "incremental", "incremental-1"]:
        d = load(f"compile-{kind}-{mode}.json")
        if d:
            comp[(kind, mode)] = d["results"][0]["median"]
if not comp:
    w("Not measured in this run.")
    summary.append(("compile time of a crate with 100 tools", "<= rmcp", "not measured", None, ""))
else:
    w("The same 100 tools (five parameters each, one optional, one defaulted, doc comments) "
      "written with tool-sdk's `#[tool]` on plain functions and with rmcp's `#[tool_router]` + "
      "`#[tool]` (one `Parameters` struct a tool, as rmcp wants); generated by "
      "`bench/gen_compile_crates.py`. `tool-sdk-core` is the same crate as `tool-sdk`'s with "
      "only `tool-sdk-core` in its `Cargo.toml` (what a crate that only defines tools needs). "
      "Dependencies built first and not timed; `clean` rebuilds "
      "the crate itself, `incremental` rebuilds it after one tool's body changed. Debug "
      "profile, hyperfine medians.")
    w("")

    def cell(v, unit="s"):
        return "n/a" if v is None else f"{v:.2f} {unit}"

    def rat(a, b):
        return "n/a" if None in (a, b) else f"{a / b:.2f}×"

    w("| build | tool-sdk | tool-sdk-core | rmcp | ratio tool-sdk/rmcp | ratio tool-sdk-core/rmcp |")
    w("|---|---|---|---|---|---|")
    for mode in ["clean", "incremental"]:
        o, c, m = (comp.get((k, mode)) for k in ["ours", "core", "rmcp"])
        w(f"| {mode} | {cell(o)} | {cell(c)} | {cell(m)} | {rat(o, m)} | {rat(c, m)} |")
    w("")
    kinds = [k for k in ["ours", "core", "rmcp"]
             if comp.get((k, "incremental-1")) and comp.get((k, "incremental"))]
    if "rmcp" in kinds and len(kinds) > 1:
        one = {k: comp[(k, "incremental-1")] for k in kinds}
        hundred = {k: comp[(k, "incremental")] for k in kinds}
        # t(n) = fixed + n * per_tool, from the 1-tool and 100-tool crates.
        per = {k: (hundred[k] - one[k]) / 99 for k in kinds}
        fixed = {k: one[k] - per[k] for k in kinds}
        names = {"ours": "tool-sdk", "core": "tool-sdk-core", "rmcp": "rmcp"}
        w("The incremental rebuild split in two, from the same rebuild of a crate of one tool "
          "(`t(n) = fixed + n × per tool`): what each tool costs, and what depending on the "
          "crate costs whatever the tools (cargo checking the dependency graph, rustc loading "
          "it).")
        w("")
        ours_kinds = [k for k in kinds if k != "rmcp"]
        w("| incremental | " + " | ".join(names[k] for k in kinds) + " | "
          + " | ".join(f"ratio {names[k]}/rmcp" for k in ours_kinds) + " |")
        w("|---" * (len(kinds) + len(ours_kinds) + 1) + "|")
        w("| crate of 1 tool | " + " | ".join(f"{one[k]:.2f} s" for k in kinds) + " | "
          + " | ".join(f"{one[k] / one['rmcp']:.2f}×" for k in ours_kinds) + " |")
        w("| per tool | " + " | ".join(f"{per[k] * 1000:.1f} ms" for k in kinds) + " | "
          + " | ".join(f"{per[k] / per['rmcp']:.2f}×" for k in ours_kinds) + " |")
        w("| fixed | " + " | ".join(f"{fixed[k]:.2f} s" for k in kinds) + " | "
          + " | ".join(f"{fixed[k] / fixed['rmcp']:.2f}×" for k in ours_kinds) + " |")
        w("")
    o, m = comp.get(("ours", "clean")), comp.get(("rmcp", "clean"))
    oi, mi = comp.get(("ours", "incremental")), comp.get(("rmcp", "incremental"))
    if None not in (o, m, oi, mi):
        summary.append(("compile time of a crate with 100 tools", "<= rmcp",
                        f"clean {o / m:.2f}×, incremental {oi / mi:.2f}× rmcp", o <= m and oi <= mi, ""))
    c, ci = comp.get(("core", "clean")), comp.get(("core", "incremental"))
    if None not in (c, m, ci, mi):
        summary.append(("compile time of a crate with 100 tools on tool-sdk-core",
                        "clean <= 0.6×, incremental <= 0.8× rmcp (#26)",
                        f"clean {c / m:.2f}×, incremental {ci / mi:.2f}× rmcp",
                        c <= 0.6 * m and ci <= 0.8 * mi, ""))

# ---------------------------------------------------------------- start-up
w("## Start-up: 100 tools")
w("")
cold = []
if os.path.exists(os.path.join(R, "startup_cold.txt")):
    for line in open(os.path.join(R, "startup_cold.txt")):
        parts = line.split()
        cold.append(int(parts[1]))
w("Registering 100 generated tools (schema generated on first use and cached, validator "
  "compiled) and lowering the tool list per provider. Not a §9 target; no peer.")
w("")
w("| | time |")
w("|---|---|")
w(f"| first registration in a fresh process (schemas generated), median of {len(cold)} processes | {us(statistics.median(cold)) if cold else 'n/a'} |")
w(f"| registration again (schemas cached, validators compiled) | {us(C.get('startup/register_100'))} |")
for p in ["anthropic", "openai_strict", "gemini"]:
    w(f"| `build_tools` for 100 tools, {p} | {us(C.get(f'startup/build_tools_100/{p}'))} |")
w("")

# ---------------------------------------------------------------- summary first
head = ["## Against the targets (DESIGN.md §9)", "",
        "| what | target | measured | met? | peers (their time / ours) |", "|---|---|---|---|---|"]
for what, target, measured, ok, peers_note in summary:
    head.append(f"| {what} | {target} | {measured} | {'not measured' if ok is None else verdict(ok)} | {peers_note} |")
head.append("")
insert_at = lines.index("## Tool dispatch through the agent loop")
lines[insert_at:insert_at] = head

lines.extend(sessions_section())

notes = os.path.join(os.path.dirname(os.path.abspath(__file__)), "NOTES.md")
if os.path.exists(notes):
    lines.append(open(notes).read().rstrip())
    lines.append("")
print("\n".join(lines))
