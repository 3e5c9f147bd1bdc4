#!/usr/bin/env bash
# Where a command's --output/--html may point (cli/files.cpp): a regular file is replaced atomically;
# a symbolic link stays a link and the file it names gets the text; a pipe, a FIFO and a descriptor
# alias (/dev/fd/1, /dev/stdout) are written in place, never renamed over (a rename onto /dev/stdout
# run as root replaced the machine's /dev/stdout link with a file).
#   tests/cli/output_targets.sh BIN
set -euo pipefail
bin="$1"
root="$(cd "$(dirname "$0")/../.." && pwd)"
ledger="$root/tests/fixtures/llamacpp/llamacpp_b10309_small-random_np2_c1-4.jsonl"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export SOURCE_DATE_EPOCH=1767225600  # the documents carry this date, so two runs are byte-identical
fail() { echo "output_targets: $*" >&2; exit 1; }

"$bin" report "$ledger" --format json --output "$work/plain.json"
expected="$(cat "$work/plain.json")"
[ -n "$expected" ] || fail "the plain file is empty"

# A symbolic link: still a link afterwards, the file it names holds the report.
echo old >"$work/real.json"
ln -s real.json "$work/link.json"
"$bin" report "$ledger" --format json --output "$work/link.json"
[ -L "$work/link.json" ] || fail "the link was replaced by a file"
[ "$(cat "$work/real.json")" = "$expected" ] || fail "the linked file does not hold the report"

# A link to a file not there yet: the file is created, the link stays.
ln -s new.json "$work/dangling.json"
"$bin" report "$ledger" --format json --output "$work/dangling.json"
[ -L "$work/dangling.json" ] || fail "the dangling link was replaced by a file"
[ "$(cat "$work/new.json")" = "$expected" ] || fail "the file a dangling link names was not created with the report"

# A descriptor alias: what goes to /dev/fd/1 comes out of the pipe.
got="$("$bin" report "$ledger" --format json --output /dev/fd/1 | cat)"
[ "$got" = "$expected" ] || fail "--output /dev/fd/1 did not write to the pipe"

# A FIFO: its reader gets the whole report, and the FIFO is still a FIFO.
mkfifo "$work/fifo"
cat "$work/fifo" >"$work/from_fifo" &
reader=$!
"$bin" report "$ledger" --format json --output "$work/fifo"
wait "$reader"
[ -p "$work/fifo" ] || fail "the FIFO was replaced"
[ "$(cat "$work/from_fifo")" = "$expected" ] || fail "the FIFO's reader did not get the report"

# /dev/stdout into a file the shell opened: the report lands in that file, /dev/stdout stays a link.
"$bin" report "$ledger" --format json --output /dev/stdout >"$work/redirected.json"
[ -L /dev/stdout ] || fail "/dev/stdout is no longer a symbolic link"
[ "$(cat "$work/redirected.json")" = "$expected" ] || fail "--output /dev/stdout did not reach the redirected file"
echo "output_targets: ok"
