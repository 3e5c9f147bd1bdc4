#!/usr/bin/env bash
# Instructions (valgrind callgrind) the proxy and the load generator spend on one fixed point:
# 200 streamed requests of 50 tokens at concurrency 20 against `simulate`; with `one-token`, 1,000
# requests of one token at concurrency 64 (the per-request path); with `long-prompt`, 300 such
# requests with prompts of 8,000 tokens (bodies of about 40 KB, as an agent's). Repeatable whatever else the
# machine does, so two builds compare on a noisy machine.
#   bench/instructions.sh BINARY [SIMULATOR_BINARY [one-token|long-prompt]]
# Prints "proxy: N instructions" and "sweep: N instructions". The simulator defaults to BINARY;
# pass one simulator for both builds when comparing proxies. KEEP_CG=DIR keeps the callgrind files
# there (callgrind_annotate them); CG_OPTS adds options to the proxy's valgrind (e.g.
# CG_OPTS=--dump-instr=yes for a line-by-line annotation of a -g build).
set -euo pipefail
bin=$(realpath "$1")
sim=$(realpath "${2:-$1}")
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; [[ -n "${KEEP_CG:-}" ]] && cp "$dir"/*.cg "$KEEP_CG"/ ; rm -rf "$dir"' EXIT
. "$(dirname "$0")/common.sh"
point=(--model sim-model --concurrencies 20 --requests 200 --warmup 0 --input-tokens 32 --approximate-input-tokens
  --output-tokens 50 --ignore-eos --quiet)
if [[ "${3:-}" == one-token ]]; then
  point=(--model sim-model --concurrencies 64 --requests 1000 --warmup 0 --input-tokens 32 --approximate-input-tokens
    --output-tokens 1 --ignore-eos --quiet)
elif [[ "${3:-}" == long-prompt ]]; then
  point=(--model sim-model --concurrencies 64 --requests 300 --warmup 0 --input-tokens 8000 --approximate-input-tokens
    --output-tokens 1 --ignore-eos --quiet)
fi

"$sim" simulate --listen 127.0.0.1:0 >"$dir/sim.out" 2>/dev/null &
sim_port=$(wait_line "$dir/sim.out" listening | port_of)

valgrind --tool=callgrind ${CG_OPTS:-} --callgrind-out-file="$dir/proxy.cg" "$bin" proxy --backend "http://127.0.0.1:$sim_port" \
  --listen 127.0.0.1:0 --admin-listen off --ledger "$dir/ledger.jsonl" >"$dir/proxy.out" 2>"$dir/proxy.err" &
proxy_pid=$!
proxy_port=$(wait_line "$dir/proxy.out" listening | port_of)
"$sim" sweep --url "http://127.0.0.1:$proxy_port/v1" "${point[@]}" --output "$dir/through-proxy.json" >/dev/null 2>&1
kill -TERM "$proxy_pid"
wait "$proxy_pid" || true
echo "proxy: $(grep -m1 '^summary:' "$dir/proxy.cg" | cut -d' ' -f2) instructions ($(wc -l <"$dir/ledger.jsonl") ledger lines)"

valgrind --tool=callgrind --callgrind-out-file="$dir/sweep.cg" "$bin" sweep --url "http://127.0.0.1:$sim_port/v1" \
  "${point[@]}" --output "$dir/direct.json" >/dev/null 2>"$dir/sweep.err"
echo "sweep: $(grep -m1 '^summary:' "$dir/sweep.cg" | cut -d' ' -f2) instructions"
