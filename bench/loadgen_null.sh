#!/usr/bin/env bash
# The load generator's capacity against a responder that costs nearly nothing (issue 24): nginx
# pinned to CPU 1 answers every chat request with one fixed three-event SSE body (one token, usage,
# [DONE]); `modelperfobs sweep` pinned to CPU 0 offers Poisson arrivals at each rate. Prints per
# rate: ok/failed, p50/p99 send lateness, the generator's CPU share, achieved and offered rates.
#   bench/loadgen_null.sh BINARY [RATES] [REQUESTS]     e.g. bench/loadgen_null.sh build/ci/modelperfobs
set -euo pipefail
bin=$(realpath "$1")
rates=${2:-2000,4000,8000,12000}
requests=${3:-20000}
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$dir"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
. "$(dirname "$0")/common.sh"
{
  nginx_preamble "$dir" 20000
  cat <<CONF
  keepalive_requests 1000000;
  server {
    listen 127.0.0.1:$port;
    location = /v1/models { default_type application/json; return 200 '{"object":"list","data":[{"id":"m","object":"model","owned_by":"nginx"}]}'; }
    location = /v1/chat/completions {
      default_type text/event-stream;
      return 200 'data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}\n\ndata: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":16,"completion_tokens":1,"total_tokens":17}}\n\ndata: [DONE]\n\n';
    }
  }
}
CONF
} >"$dir/nginx.conf"
taskset -c 1 /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf" -g "daemon off;" &
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null && break; sleep 0.05; done
taskset -c 0 "$bin" sweep --url "http://127.0.0.1:$port/v1" --model m --rates "$rates" --requests "$requests" \
  --input-tokens 16 --output-tokens 1 --quiet --output "$dir/s.json" >/dev/null
python3 - "$dir/s.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("| offered req/s | ok | failed | p50 lateness ms | p99 lateness ms | generator CPU share | achieved req/s |")
print("|---|---|---|---|---|---|---|")
for p in r["points"]:
    t = p["tracks"][0]; g = t["evidence"]["generator"]; l = t["evidence"]["load"]
    print(f"| {p['rate_rps']} | {t['stats']['ok']} | {t['stats']['failed']} | {g.get('send_lateness_p50_ms')} | "
          f"{g.get('send_lateness_p99_ms')} | {100 * g.get('cpu_share', 0):.1f}% | {l.get('achieved_rate_rps', 0):.0f} |")
PY
