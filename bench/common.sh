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
