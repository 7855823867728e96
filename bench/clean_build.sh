#!/usr/bin/env bash
# A clean build of the coder example (`cargo build -p examples --example coder`) at two
# revisions, side by side in one run: each revision is exported (`git archive`) into a temp
# directory and built into a fresh target directory of its own, with CARGO_INCREMENTAL=0 and at
# `nice -n 10`, from the crates already downloaded (`--offline --locked`). Rounds alternate the
# order so that a load change on the machine does not favour one side. Prints a markdown table
# of wall times and the crates that took longest (from `cargo build --timings`).
#
# Usage: bench/clean_build.sh [BEFORE_REV [AFTER_REV]]   (defaults: 06dcc9f and HEAD)
# Env: ROUNDS (default 1), OUT (results directory, default target/bench/clean-build),
# SELECT (the packages, default `-p examples`; `SELECT=` builds what the README's
# `cargo run --example coder` builds: the workspace's default members, features and all).
set -euo pipefail
cd "$(dirname "$0")/.."
before="${1:-06dcc9f}"
after="${2:-HEAD}"
rounds="${ROUNDS:-1}"
select="${SELECT--p examples}"
out="${OUT:-$PWD/target/bench/clean-build}"
mkdir -p "$out"
work="$(mktemp -d "${TMPDIR:-/tmp}/clean-build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

declare -A commit
for side in before after; do
  rev="${!side}"
  commit[$side]="$(git rev-parse --short "$rev")"
  mkdir -p "$work/src-$side"
  git archive "$rev" | tar -x -C "$work/src-$side"
done

results="$out/times.tsv"
: >"$results"
build() { # side round
  local side="$1" round="$2" target="$work/target-$1-$2" clock="$work/time-$1-$2"
  echo "== round $round: $side (${commit[$side]})" >&2
  # Wall time, and the CPU time (user + system), which other load on the machine disturbs less.
  (cd "$work/src-$side" && CARGO_INCREMENTAL=0 CARGO_TARGET_DIR="$target" nice -n 10 \
    /usr/bin/time -f "%e %U %S" -o "$clock" \
    cargo build --quiet --offline --locked --timings $select --example coder)
  read -r wall user sys <"$clock"
  printf '%s\t%s\t%s\t%s\n' "$side" "$round" "$wall" "$(echo "$user + $sys" | bc)" >>"$results"
  cp "$target"/cargo-timings/cargo-timing.html "$out/timing-$side-$round.html"
  rm -rf "$target"
}
for round in $(seq 1 "$rounds"); do
  if [ $((round % 2)) = 1 ]; then order="before after"; else order="after before"; fi
  for side in $order; do build "$side" "$round"; done
done

python3 - "$out" "${commit[before]}" "${commit[after]}" <<'EOF'
import json, re, statistics, sys
out, before, after = sys.argv[1:]
times = {"before": [], "after": []}
cpu = {"before": [], "after": []}
for line in open(f"{out}/times.tsv"):
    side, _, secs, cpu_secs = line.split("\t")
    times[side].append(float(secs))
    cpu[side].append(float(cpu_secs))
med = {side: statistics.median(ts) for side, ts in times.items()}
cpu_med = {side: statistics.median(ts) for side, ts in cpu.items()}
print("| revision | commit | wall (s), each run | median | ratio | CPU (s), median | ratio |")
print("|---|---|---|---|---|---|---|")
for side, rev in (("before", before), ("after", after)):
    runs = ", ".join(f"{t:.0f}" for t in times[side])
    print(f"| {side} | {rev} | {runs} | {med[side]:.0f} | {med[side] / med['before']:.2f}x "
          f"| {cpu_med[side]:.0f} | {cpu_med[side] / cpu_med['before']:.2f}x |")
print()
# The longest units of the first round's builds, from the timing page's UNIT_DATA.
for side in ("before", "after"):
    html = open(f"{out}/timing-{side}-1.html").read()
    units = json.loads(re.search(r"const UNIT_DATA = (\[.*?\n\]);", html, re.S).group(1))
    top = sorted(units, key=lambda u: -u["duration"])[:8]
    shown = ", ".join(f"{u['name']}{u['target'].rstrip()} {u['duration']:.0f} s" for u in top)
    print(f"- longest units, {side}: {shown}")
EOF
