#!/usr/bin/env bash
# Compile time of a crate of 100 tools: tool-sdk's #[tool] against rmcp's #[tool] for the same
# tools (bench/gen_compile_crates.py). Dependencies are built first, untimed; then hyperfine
# times a clean build of the crate itself and an incremental rebuild after one tool's body
# changed. Usage: compile.sh RESULTS_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
B="$PWD/target/bench/compile"
runs="${COMPILE_RUNS:-3}"
python3 bench/gen_compile_crates.py "$B" "$PWD"
for kind in ${COMPILE_KINDS:-ours rmcp}; do
  dir="$B/$kind"
  manifest="$dir/Cargo.toml"
  if [ "$kind" = ours ]; then
    # The versions the SDK is tested with, and the repo's target dir, where they are built.
    cp Cargo.lock "$dir/Cargo.lock"
    export CARGO_TARGET_DIR="${ROOT_TARGET:-$PWD/target}"
  else
    export CARGO_TARGET_DIR="$B/target-$kind"
  fi
  echo "== compile: $kind (dependencies, untimed)"
  cargo build --quiet --manifest-path "$manifest"
  pkg="hundred-tools-$kind"
  hyperfine --runs "$runs" --export-json "$out/compile-$kind-clean.json" \
    --prepare "cargo clean --quiet -p $pkg --manifest-path $manifest" \
    -n "$kind clean" "cargo build --quiet --manifest-path $manifest"
  hyperfine --runs "$runs" --export-json "$out/compile-$kind-incremental.json" \
    --prepare "python3 bench/gen_compile_crates.py --touch $dir 50" \
    -n "$kind incremental" "cargo build --quiet --manifest-path $manifest"
done
