# Helpers the benchmark scripts share (sourced: `. "$(dirname "$0")/common.sh"`).

# wait_line FILE PATTERN: prints the first line of FILE that matches, within 20 s (a process's
# "listening on ..." line; a benchmark may wait, tests may not).
wait_line() {
  for _ in $(seq 200); do
    if grep -q "$2" "$1" 2>/dev/null; then grep -m1 "$2" "$1"; return 0; fi
    sleep 0.1
  done
  echo "$(basename "$0"): no '$2' in $1" >&2
  return 1
}

# port_of: the port of the first 127.0.0.1:PORT on stdin.
port_of() { grep -o '127\.0\.0\.1:[0-9]*' | head -1 | cut -d: -f2; }

# paced_profile: a `simulate --profile` that paces every engine step at 20 ms whatever the batch (no
# cost a prompt token or a sequence), with room for 20,000 requests at once: what a request costs
# the proxy, not the engine, is what the CPU benchmarks measure.
paced_profile() {
  echo '{"engine":{"max_num_seqs":20000,"num_gpu_blocks":200000,"max_num_batched_tokens":1000000,"step_base_s":0.02,"step_per_prefill_token_s":0,"step_per_decode_seq_s":0}}'
}

# nginx_preamble DIR WORKER_CONNECTIONS: the start of the nginx.conf the benchmarks write, into its
# http block: one worker, its pid, error log and temporary files under DIR (DIR/tmp made here), no
# access log. The caller writes the rest of the http block and its closing brace.
nginx_preamble() {
  mkdir -p "$1/tmp"
  cat <<CONF
worker_processes 1;
worker_rlimit_nofile $(($2 + 100));
error_log $1/nginx-error.log;
pid $1/nginx.pid;
events { worker_connections $2; }
http {
  access_log off;
  client_body_temp_path $1/tmp; proxy_temp_path $1/tmp; fastcgi_temp_path $1/tmp;
  uwsgi_temp_path $1/tmp; scgi_temp_path $1/tmp;
CONF
}

# nginx_proxy_conf DIR SIM_PORT PORT [LISTEN_FLAGS]: a whole nginx.conf for nginx as the proxy's
# peer in front of `simulate` on SIM_PORT, listening on PORT (bench/proxy_overhead's fair settings:
# the proxy's backlog, keep-alive without limits on either side, nothing buffered).
nginx_proxy_conf() {
  nginx_preamble "$1" 20000
  cat <<CONF
  keepalive_requests 1000000;
  upstream sim { server 127.0.0.1:$2; keepalive 16384; keepalive_requests 1000000; }
  server {
    listen 127.0.0.1:$3 backlog=4096 ${4:-};
    location / {
      proxy_pass http://sim; proxy_http_version 1.1; proxy_set_header Connection "";
      proxy_buffering off; proxy_request_buffering off;
    }
  }
}
CONF
}
