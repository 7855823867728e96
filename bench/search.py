#!/usr/bin/env python3
"""Grep and Glob against rg, GNU grep and fd on the same trees, warm cache, timed with
hyperfine; results compared for equality. Usage: search.py RESULTS_DIR SEARCHBENCH RG FD TREE...
where each TREE is name=path. Writes RESULTS_DIR/search.json.
"""
import json
import os
import re
import shlex
import subprocess
import sys

out_dir, searchbench, rg, fd = sys.argv[1:5]
trees = dict(arg.split("=", 1) for arg in sys.argv[5:])
runs = int(os.environ.get("SEARCH_RUNS", "5"))

# (name, Grep tool input, rg args, GNU grep args); every Grep input gets head_limit 0 (no cap),
# so the whole result is produced, as rg produces it.
GREPS = [
    ("literal, files", {"pattern": "EXPORT_SYMBOL_GPL"},
     ["-l", "EXPORT_SYMBOL_GPL"], ["-r", "-l", "-I", "-F", "EXPORT_SYMBOL_GPL"]),
    ("regex, files", {"pattern": r"spin_lock_irqsave\(&\w+->lock"},
     ["-l", r"spin_lock_irqsave\(&\w+->lock"], ["-r", "-l", "-I", "-E", r"spin_lock_irqsave\(&\w+->lock"]),
    ("case-insensitive, files", {"pattern": "linus torvalds", "-i": True},
     ["-l", "-i", "linus torvalds"], ["-r", "-l", "-I", "-i", "linus torvalds"]),
    ("glob *.h, content", {"pattern": r"#define\s+\w+_MAX\s", "glob": "*.h", "output_mode": "content"},
     ["-n", "--no-heading", "-g", "*.h", r"#define\s+\w+_MAX\s"],
     ["-r", "-n", "-I", "-E", "--include=*.h", r"#define\s+\w+_MAX\s"]),
    ("literal, content", {"pattern": r"EXPORT_SYMBOL_GPL\(", "output_mode": "content"},
     ["-n", "--no-heading", r"EXPORT_SYMBOL_GPL\("], ["-r", "-n", "-I", "-E", r"EXPORT_SYMBOL_GPL\("]),
]
SMALL_GREPS = [
    ("literal, files", {"pattern": "ToolError"}, ["-l", "ToolError"], ["-r", "-l", "-I", "-F", "ToolError"]),
    ("regex, content", {"pattern": r"fn \w+_tool\b", "output_mode": "content"},
     ["-n", "--no-heading", r"fn \w+_tool\b"], ["-r", "-n", "-I", "-E", r"fn \w+_tool\b"]),
    ("case-insensitive, files", {"pattern": "sandbox", "-i": True},
     ["-l", "-i", "sandbox"], ["-r", "-l", "-I", "-i", "sandbox"]),
    ("glob *.rs, files", {"pattern": "async fn", "glob": "*.rs"},
     ["-l", "-g", "*.rs", "async fn"], ["-r", "-l", "-I", "--include=*.rs", "async fn"]),
]
# (name, Glob pattern, fd args relative to the root)
GLOBS = [("**/*.c", "**/*.c", ["-t", "f", "-g", "*.c"], ""),
         ("**/Kconfig", "**/Kconfig", ["-t", "f", "-g", "Kconfig"], ""),
         ("drivers/**/*.h", "drivers/**/*.h", ["-t", "f", "-g", "*.h"], "drivers")]
SMALL_GLOBS = [("**/*.rs", "**/*.rs", ["-t", "f", "-g", "*.rs"], ""),
               ("tests/**/*.stderr", "tests/**/*.stderr", ["-t", "f", "-g", "*.stderr"], "tests")]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, check=False).stdout.decode("utf-8", "replace")


def hyperfine(name, commands):
    path = os.path.join(out_dir, "hf-" + re.sub(r"[^a-zA-Z0-9]+", "_", name) + ".json")
    args = ["hyperfine", "--warmup", "2", "--runs", str(runs), "--ignore-failure",
            "--export-json", path]
    for label, cmd in commands:
        args += ["-n", label, shlex.join(cmd)]
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL)
    data = json.load(open(path))
    return {r["command"]: {"mean": r["mean"], "stddev": r["stddev"], "median": r["median"],
                           "min": r["min"]} for r in data["results"]}


LONG = re.compile(r" \[\.\.\. \d+ more characters\]$")


def norm_content(text, ours):
    lines = []
    for line in text.splitlines():
        if ours:
            line = LONG.sub("", line)
        else:
            # ours cuts a line's text at 500 characters: cut rg's the same way.
            m = re.match(r"^(.*?:\d+:)(.*)$", line)
            if m:
                line = m.group(1) + m.group(2)[:500]
        lines.append(line.rstrip("\r"))
    return sorted(lines)


def compare_grep(ours, peer, content):
    if content:
        a, b = norm_content(ours, True), norm_content(peer, False)
    else:
        a = sorted(l for l in ours.splitlines()[1:] if l)  # first line: "Found N files"
        b = sorted(l for l in peer.splitlines() if l)
    if ours.startswith("No files found") or ours.startswith("No matches found"):
        a = []
    sa, sb = set(a), set(b)
    return {"equal": a == b, "ours": len(a), "peer": len(b),
            "only_ours": len(sa - sb), "only_peer": len(sb - sa)}


results = []
for tree, root in trees.items():
    root = os.path.abspath(root)
    greps = GREPS if tree == "linux" else SMALL_GREPS
    globs = GLOBS if tree == "linux" else SMALL_GLOBS
    for name, tool_input, rg_args, grep_args in greps:
        tool_input = dict(tool_input, head_limit=0)
        content = tool_input.get("output_mode") == "content"
        ours_cmd = [searchbench, "grep", root, json.dumps(tool_input)]
        rg_cmd = [rg, "--no-config"] + rg_args + [root]
        grep_cmd = ["grep"] + grep_args + [root]
        ours_out = run(ours_cmd)
        comparison = compare_grep(ours_out, run(rg_cmd), content)
        grep_comparison = compare_grep(ours_out, run(grep_cmd), content)
        times = hyperfine(f"{tree} grep {name}", [("ours", ours_cmd), ("rg", rg_cmd), ("grep", grep_cmd)])
        results.append({"tree": tree, "tool": "Grep", "case": name, "times": times,
                        "vs_rg": comparison, "vs_grep": grep_comparison})
        print(f"{tree} Grep {name}: ours {times['ours']['median']:.3f}s rg {times['rg']['median']:.3f}s "
              f"equal={comparison['equal']}", flush=True)
    for name, pattern, fd_args, sub in globs:
        ours_cmd = [searchbench, "glob", root, json.dumps({"pattern": pattern})]
        fd_cmd = [fd, "-a"] + fd_args + [os.path.join(root, sub) if sub else root]
        ours_out, fd_out = run(ours_cmd), run(fd_cmd)
        shown = [l for l in ours_out.splitlines() if l.startswith("/")]
        more = re.search(r"(\d+) more files matched", ours_out)
        total = len(shown) + (int(more.group(1)) if more else 0)
        fd_set = set(l.rstrip("/") for l in fd_out.splitlines() if l)
        comparison = {"ours_total": total, "peer": len(fd_set),
                      "shown_subset": set(shown) <= fd_set, "equal": total == len(fd_set) and set(shown) <= fd_set}
        # fd made to read every file's mtime, as Glob must to sort newest first (a date no
        # file can be past keeps them all).
        fd_mtime_cmd = fd_cmd[:2] + ["--changed-before", "2200-01-01"] + fd_cmd[2:]
        times = hyperfine(f"{tree} glob {name}",
                          [("ours", ours_cmd), ("fd", fd_cmd), ("fd_mtime", fd_mtime_cmd)])
        results.append({"tree": tree, "tool": "Glob", "case": name, "times": times, "vs_fd": comparison})
        print(f"{tree} Glob {name}: ours {times['ours']['median']:.3f}s fd {times['fd']['median']:.3f}s "
              f"equal={comparison['equal']}", flush=True)

json.dump(results, open(os.path.join(out_dir, "search.json"), "w"), indent=1)
