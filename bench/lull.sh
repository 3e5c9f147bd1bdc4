#!/usr/bin/env bash
# Requests after lulls as long as the backend's keep-alive time: the backend (`simulate
# --keep-alive-timeout`, as vLLM's uvicorn closes idle connections after 5 s without a word) closes
# each idle connection while the next request may be on its way, through the proxy or nginx,
# whose pooled upstream connection it was. Counts what the clients got: a 502 is a request lost to
# the race. LOOPS kept-alive client connections, TRIALS requests each, each after a lull within
# 2 ms of the keep-alive time (KEEP_ALIVE_MS, default 50: the race of 5 s, 100 times as often).
#   bench/lull.sh BINARY [LOOPS [TRIALS [KEEP_ALIVE_MS]]]   (defaults 8 400 50)
# Targets, one after another: direct (the client's own race), the proxy (--pool-idle 60, as nginx's
# upstream keep-alive), nginx (`keepalive` in its upstream block, proxy_next_upstream's default).
set -euo pipefail
bin=$(realpath "$1")
loops=${2:-8}
trials=${3:-400}
ka_ms=${4:-50}
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
. "$here/common.sh"
ka_s=$(awk -v m="$ka_ms" 'BEGIN { printf "%.3f", m / 1000 }')
"$bin" simulate --listen 127.0.0.1:0 --keep-alive-timeout "$ka_s" >"$dir/sim.out" 2>/dev/null &
sim_port=$(wait_line "$dir/sim.out" listening | port_of)
echo "lull: $loops client connections x $trials one-token requests, each after a lull of ${ka_ms} ms +- 2 ms;"
echo "      the backend closes idle connections ${ka_ms} ms after their last response"

echo "direct:       $(node "$here/lull.mjs" "$sim_port" "$loops" "$trials" "$ka_ms")"

"$bin" proxy --backend "http://127.0.0.1:$sim_port" --listen 127.0.0.1:0 --threads 1 --admin-listen off \
  --pool-idle 60 --ledger "$dir/ledger.jsonl" >"$dir/proxy.out" 2>"$dir/proxy.err" &
proxy_pid=$!
proxy_port=$(wait_line "$dir/proxy.out" listening | port_of)
result=$(node "$here/lull.mjs" "$proxy_port" "$loops" "$trials" "$ka_ms")
kill -TERM "$proxy_pid"
wait "$proxy_pid" || true
retries=$(grep -o '"upstream_retries":[0-9]*' "$dir/ledger.jsonl" | awk -F: '{ s += $2 } END { print s + 0 }')
echo "proxy:        $result (requests sent again on a fresh backend connection: $retries)"

nginx_port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => {
  console.log(s.address().port); s.close(); })')
{
  nginx_preamble "$dir" 4096
  cat <<CONF
  upstream sim { server 127.0.0.1:$sim_port; keepalive 64; keepalive_timeout 60s; }
  server {
    listen 127.0.0.1:$nginx_port;
    location / {
      proxy_pass http://sim; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_request_buffering off;
    }
  }
}
CONF
} >"$dir/nginx.conf"
/usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -g "daemon off;" 2>/dev/null &
for _ in $(seq 200); do [ -s "$dir/nginx.pid" ] && break; sleep 0.1; done  # a benchmark may wait
echo "nginx:        $(node "$here/lull.mjs" "$nginx_port" "$loops" "$trials" "$ka_ms")"
kill -QUIT "$(cat "$dir/nginx.pid")"
echo "nginx's error log: $(grep -c 'upstream prematurely closed\|reset by peer\|Broken pipe' "$dir/nginx-error.log" || true) upstream failures"
