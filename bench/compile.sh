#!/usr/bin/env bash
# Compile time of a crate of 100 tools: tool-sdk's #[tool] (on tool-sdk, and on tool-sdk-core
# alone) against rmcp's #[tool] for the same tools (bench/gen_compile_crates.py). Dependencies are built first, untimed; then hyperfine
# times a clean build of the crate itself and an incremental rebuild after one tool's body
# changed. The same incremental rebuild of a crate of one tool splits the time into what each
# tool costs and what depending on the SDK costs whatever the tools. Usage: compile.sh RESULTS_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out="$1"
runs="${COMPILE_RUNS:-3}"
for tools in 100 1; do
  B="$PWD/target/bench/compile" suffix=""
  [ "$tools" = 100 ] || { B="$PWD/target/bench/compile-$tools"; suffix="-$tools"; }
  COMPILE_TOOLS="$tools" python3 bench/gen_compile_crates.py "$B" "$PWD"
  for kind in ${COMPILE_KINDS:-ours core rmcp}; do
    dir="$B/$kind"
    manifest="$dir/Cargo.toml"
    if [ "$kind" = ours ] || [ "$kind" = core ]; then
      # The versions the SDK is tested with, and the repo's target dir, where they are built.
      cp Cargo.lock "$dir/Cargo.lock"
      export CARGO_TARGET_DIR="${ROOT_TARGET:-$PWD/target}"
    else
      # Both sizes share the 100-tool crate's dependencies, and its versions of them.
      export CARGO_TARGET_DIR="$PWD/target/bench/compile/target-$kind"
      lock="$PWD/target/bench/compile/$kind/Cargo.lock"
      [ "$tools" = 100 ] || [ ! -e "$lock" ] || cp "$lock" "$dir/Cargo.lock"
    fi
    echo "== compile: $kind, $tools tool(s) (dependencies, untimed)"
    cargo build --quiet --manifest-path "$manifest"
    if [ "$tools" = 100 ]; then
      pkg="$(sed -n 's/^name = "\(.*\)"$/\1/p' "$manifest")"
      hyperfine --runs "$runs" --export-json "$out/compile-$kind-clean.json" \
        --prepare "cargo clean --quiet -p $pkg --manifest-path $manifest" \
        -n "$kind clean" "cargo build --quiet --manifest-path $manifest"
    fi
    hyperfine --runs "$runs" --export-json "$out/compile-$kind-incremental$suffix.json" \
      --prepare "python3 bench/gen_compile_crates.py --touch $dir $((tools / 2))" \
      -n "$kind incremental, $tools tool(s)" "cargo build --quiet --manifest-path $manifest"
  done
done
