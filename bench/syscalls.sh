#!/usr/bin/env bash
# System calls, context switches and CPU per request of the proxy, or of nginx, on one-token
# requests with a new client connection each (the per-connection path: accept, the request's first
# read, the client watch, close): ROUNDS rounds of CONNS connections at once against `simulate`
# paced at 20 ms a step (bench/one_request_per_connection.mjs is the client). Counted by
# `perf stat` with the kernel's syscall tracepoints (root, or perf_event_paranoid <= -1; Debian's
# linux-perf), over the whole life of the process measured.
#   bench/syscalls.sh BINARY proxy|nginx|nginx-deferred [CONNS [ROUNDS]]   (defaults 1000 3)
# PROXY_ARGS="--defer-accept 1" adds arguments to the proxy's command line.
# KEPT=1: the connections are kept instead (as SDK clients keep theirs): `modelperfobs sweep` at
# concurrency CONNS sends CONNS x ROUNDS one-token requests, each connection ROUNDS of them one
# after another, so that no accept and no close come with a request (e.g. `KEPT=1 ... 64 100`).
# Prints per request: every system call, the common ones by name, failed reads and accepts (EAGAIN),
# context switches, the process's CPU (task-clock) in µs over its whole life, and its CPU over the
# load alone (schedstat, read before and after the client runs): the whole life's figure carries the
# start-up (nginx's for 20,000 connections is tens of ms), which weighs on a short run. Both CPU
# figures are taken under perf's syscall tracepoints, on fresh processes: kept alive, they put the
# proxy at 0.68-0.92x nginx's CPU where bench/proxy_overhead puts it at about 1.1x: nginx's CPU a
# kept-alive request falls by a fifth to a third once it has served a burst of 1,000 connections, as
# the bench's targets have: a fresh nginx's glibc trims its heap and faults it back, 1.2-1.5 page
# faults a request, costly on a virtual machine (BENCHMARKS.md, forty-eighth and forty-ninth
# sessions). Compare CPU between targets with proxy_overhead; read counts here.
set -euo pipefail
bin=$(realpath "$1")
target=$2
conns=${3:-1000}
rounds=${4:-3}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
. "$here/common.sh"
ulimit -n 20000
paced_profile >"$dir/profile.json"
"$bin" simulate --profile "$dir/profile.json" --listen 127.0.0.1:0 >"$dir/sim.out" 2>/dev/null &
sim_port=$(wait_line "$dir/sim.out" listening | port_of)

calls=(futex epoll_wait epoll_ctl accept accept4 recvmsg recvfrom sendmsg writev write ioctl
  setsockopt getsockopt close shutdown connect)
events="raw_syscalls:sys_enter"
for c in "${calls[@]}"; do events+=",syscalls:sys_enter_$c"; done
stat=(perf stat -o "$dir/stat.txt" -e "$events,context-switches,task-clock"
  -e syscalls:sys_exit_recvmsg --filter 'ret==-11' -e syscalls:sys_exit_recvfrom --filter 'ret==-11'
  -e syscalls:sys_exit_accept --filter 'ret==-11' -e syscalls:sys_exit_accept4 --filter 'ret==-11')
case "$target" in
  proxy)
    "${stat[@]}" "$bin" proxy --backend "http://127.0.0.1:$sim_port" --listen 127.0.0.1:0 --threads 1 \
      --admin-listen off --ledger "$dir/ledger.jsonl" ${PROXY_ARGS:-} >"$dir/proxy.out" 2>"$dir/proxy.err" &
    pid=$!
    port=$(wait_line "$dir/proxy.out" listening | port_of)
    ;;
  nginx | nginx-deferred)
    # The settings of bench/proxy_overhead's nginx (fair ones: its backlog, keep-alive without limits).
    port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => {
      console.log(s.address().port); s.close(); })')
    deferred=""
    [ "$target" = nginx-deferred ] && deferred=deferred
    nginx_proxy_conf "$dir" "$sim_port" "$port" "$deferred" >"$dir/nginx.conf"
    "${stat[@]}" /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -g "daemon off;" 2>/dev/null &
    pid=$!
    for _ in $(seq 200); do [ -s "$dir/nginx.pid" ] && break; sleep 0.1; done  # a benchmark may wait
    ;;
  *) echo "usage: bench/syscalls.sh BINARY proxy|nginx|nginx-deferred [CONNS [ROUNDS]]" >&2; exit 2 ;;
esac
n=$((conns * rounds))
# The measured processes' on-CPU nanoseconds (schedstat), every thread of every process below perf.
load_cpu_ns() {
  local total=0 p t
  for p in $(pgrep -P "$pid") $(pgrep -P "$(pgrep -d, -P "$pid")" 2>/dev/null); do
    for t in /proc/"$p"/task/*/schedstat; do total=$((total + $(cut -d' ' -f1 "$t" 2>/dev/null || echo 0))); done
  done
  echo "$total"
}
cpu_before=$(load_cpu_ns)
if [ -n "${KEPT:-}" ]; then
  "$bin" sweep --url "http://127.0.0.1:$port/v1" --model sim-model --concurrencies "$conns" --requests "$n" \
    --warmup 0 --input-tokens 32 --approximate-input-tokens --output-tokens 1 --ignore-eos --quiet \
    --output "$dir/sweep.json" >/dev/null 2>"$dir/sweep.err"
  how="on $conns kept-alive connections, $rounds a connection"
else
  node "$here/one_request_per_connection.mjs" "$port" "$conns" "$rounds"
  how="a connection each, $conns at once"
fi
cpu_after=$(load_cpu_ns)
if [ "$target" = proxy ]; then pkill -TERM -P "$pid"; else kill -QUIT "$(cat "$dir/nginx.pid")"; fi
wait "$pid" || true
echo "$target: $n one-token requests, $how; per request:"
awk -v n="$n" '
  $2 ~ /^raw_syscalls/ { printf "  %-26s %7.2f\n", "system calls", $1 / n }
  $2 ~ /^syscalls:sys_enter_/ { name = substr($2, 20); if ($1 / n >= 0.01) printf "  %-26s %7.2f\n", name, $1 / n }
  $2 ~ /^syscalls:sys_exit_/ { name = substr($2, 19) " EAGAIN"; if ($1 / n >= 0.01) printf "  %-26s %7.2f\n", name, $1 / n }
  $2 == "context-switches" { printf "  %-26s %7.2f\n", "context switches", $1 / n }
  $3 == "task-clock" || $2 == "msec" { printf "  %-26s %7.1f\n", "CPU (task-clock) us", $1 * 1000 / n }
' <(sed 's/,//g' "$dir/stat.txt")
awk -v ns=$((cpu_after - cpu_before)) -v n="$n" 'BEGIN { printf "  %-26s %7.1f\n", "CPU over the load us", ns / 1000 / n }'
