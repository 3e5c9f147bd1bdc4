#!/usr/bin/env bash
# The CPU two proxies spend on a one-token request over kept-alive connections (as SDK clients keep
# theirs), measured in turns: both run in front of one `simulate` paced at 20 ms a step, and each
# round sends 64 clients x N requests through one, then the other (the order alternates), reading
# the process's CPU (every thread, /proc/PID/task/*/schedstat) before and after. Two builds of the
# proxy, or a build and nginx (one worker, bench/proxy_overhead's settings, its heap trimming off as
# it is once it has served a burst: BENCHMARKS.md, forty-ninth session), compare within a round, so
# that what else the machine does weighs on both.
#   bench/kept_alive_cpu.sh BINARY_A BINARY_B|/usr/sbin/nginx [ROUNDS [N]]    (defaults 10 100)
# Prints each turn's CPU in us a request, then the median of the rounds' A/B ratios and their range.
# The load generator and simulator are BINARY_A's (pass the build you trust as A).
set -euo pipefail
a=$(realpath "$1")
b=$(realpath "$2")
rounds=${3:-10}
n=${4:-100}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
. "$here/common.sh"
paced_profile >"$dir/profile.json"
"$a" simulate --profile "$dir/profile.json" --listen 127.0.0.1:0 >"$dir/sim.out" 2>/dev/null &
sim_port=$(wait_line "$dir/sim.out" listening | port_of)

declare -A port pid
start() {  # start X BINARY
  if [ "$(basename "$2")" = nginx ]; then
    port[$1]=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => {
      console.log(s.address().port); s.close(); })')
    mkdir -p "$dir/nginx"
    nginx_proxy_conf "$dir/nginx" "$sim_port" "${port[$1]}" >"$dir/nginx/nginx.conf"
    GLIBC_TUNABLES=glibc.malloc.trim_threshold=67108864 "$2" -p "$dir/nginx" -c "$dir/nginx/nginx.conf" \
      -g "daemon off;" 2>/dev/null &
    for _ in $(seq 200); do [ -s "$dir/nginx/nginx.pid" ] && break; sleep 0.1; done  # a benchmark may wait
    for _ in $(seq 50); do pid[$1]=$(pgrep -P "$(cat "$dir/nginx/nginx.pid")" | head -1) && break; sleep 0.1; done
  else
    "$2" proxy --backend "http://127.0.0.1:$sim_port" --listen 127.0.0.1:0 --threads 1 --admin-listen off \
      --pool-idle 60 --ledger "$dir/$1.jsonl" >"$dir/$1.out" 2>"$dir/$1.err" &
    pid[$1]=$!
    port[$1]=$(wait_line "$dir/$1.out" listening | port_of)
  fi
}
start A "$a"
start B "$b"

load() {  # load X REQUESTS
  "$a" sweep --url "http://127.0.0.1:${port[$1]}/v1" --model sim-model --concurrencies 64 --requests "$2" \
    --warmup 0 --input-tokens 32 --approximate-input-tokens --output-tokens 1 --ignore-eos --quiet \
    --output "$dir/sweep.json" >/dev/null
}
cpu_ns() { awk '{s += $1} END {printf "%.0f\n", s}' /proc/"${pid[$1]}"/task/*/schedstat; }

load A 1000
load B 1000
for r in $(seq "$rounds"); do
  order="A B"
  [ $((r % 2)) = 0 ] && order="B A"
  for x in $order; do
    t0=$(cpu_ns "$x")
    load "$x" $((64 * n))
    t1=$(cpu_ns "$x")
    echo "round $r $x $(awk -v d=$((t1 - t0)) -v k=$((64 * n)) 'BEGIN {printf "%.1f", d / k / 1000}') us/request"
  done
done | tee "$dir/turns.txt"
awk '{v[$2 " " $3] = $4} END {for (r = 1; (r " A") in v; r++) print v[r " A"] / v[r " B"]}' \
  "$dir/turns.txt" | sort -n | awk '{x[NR] = $1} END {m = NR % 2 ? x[(NR + 1) / 2] : (x[NR / 2] + x[NR / 2 + 1]) / 2;
  printf "A/B: median of %d rounds %.3f [%.3f-%.3f]\n", NR, m, x[1], x[NR]}'
