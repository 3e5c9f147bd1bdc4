#!/usr/bin/env bash
# Instructions (valgrind callgrind) `simulate` spends on one fixed point: 300 streamed chat requests
# of 16 tokens at concurrency 16, sent by `sweep`. Repeatable whatever else the machine does, so two
# builds of the simulator compare on a noisy machine.
#   bench/sim_instructions.sh SIMULATOR_BINARY [CLIENT_BINARY]
# Prints "simulator: N instructions". The client defaults to SIMULATOR_BINARY; pass one client for
# both builds when comparing simulators. KEEP_CG=FILE keeps the callgrind file (callgrind_annotate it).
set -euo pipefail
sim=$(realpath "$1")
client=$(realpath "${2:-$1}")
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [[ -n "${KEEP_CG:-}" ]] && cp "$dir/sim.cg" "$KEEP_CG"; rm -rf "$dir"' EXIT
. "$(dirname "$0")/common.sh"
valgrind --tool=callgrind --callgrind-out-file="$dir/sim.cg" "$sim" simulate --listen 127.0.0.1:0 \
  >"$dir/sim.out" 2>"$dir/sim.err" &
sim_pid=$!
port=$(wait_line "$dir/sim.out" listening | port_of)
"$client" sweep --url "http://127.0.0.1:$port/v1" --model sim-model --concurrencies 16 --requests 300 --warmup 0 \
  --input-tokens 32 --approximate-input-tokens --output-tokens 16 --ignore-eos --quiet --output "$dir/r.json" \
  >/dev/null 2>&1
kill -TERM "$sim_pid"
wait "$sim_pid" || true
echo "simulator: $(grep -m1 '^summary:' "$dir/sim.cg" | cut -d' ' -f2) instructions"
