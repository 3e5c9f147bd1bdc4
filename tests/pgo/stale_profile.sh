#!/usr/bin/env bash
# cmake/stable-source-paths with a profile older than the code: GCC 12 fails a -Werror compile with
# "Missing counts for called function" (no option turns that warning off) where a changed function
# is called from one with counts. The launcher must then compile the file again without the
# profile, and only then: any other failure stays a failure, with its message. The compiler here is
# a stand-in that prints GCC's message (captured from a real build of src/proxy/exchange.cpp after
# Proxy::upstream_head changed, fifty-second session) when it is given -fprofile-use; it records
# each command line it was run with.
#   tests/pgo/stale_profile.sh CHECKOUT
set -euo pipefail
launcher="$1/cmake/stable-source-paths"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

cat >"$dir/cc" <<'CC'
#!/usr/bin/env bash
# Stand-in compiler: MODE=stale fails with the profile, MODE=broken fails always.
echo "$*" >>"$LOG"
out=""
prev=""
for a in "$@"; do [ "$prev" = -o ] && out=$a; prev=$a; done
if [ "$MODE" = broken ]; then
  echo "mpo-src/src/x.cpp:3:7: error: unused variable 'y' [-Werror=unused-variable]" >&2
  exit 1
fi
case " $* " in
  *" -fprofile-use "*)
    echo "mpo-src/src/x.cpp:813:1: error: Missing counts for called function void f()/11531 [-Werror]" >&2
    echo "cc1plus: all warnings being treated as errors" >&2
    exit 1 ;;
esac
: >"$out"
CC
chmod +x "$dir/cc"
export LOG="$dir/log"
src=/checkout

# A stale profile: compiled again without it, paths still through the link, a note that says so.
: >"$LOG"
MODE=stale "$launcher" "$src" mpo-src "$dir/cc" -O3 -Werror -fprofile-use -fprofile-partial-training \
  -I"$src/src" -o "$dir/x.o" -c "$src/src/x.cpp" 2>"$dir/err" || fail "a stale profile failed the compile: $(cat "$dir/err")"
[ -f "$dir/x.o" ] || fail "no object after the retry"
[ "$(wc -l <"$LOG")" = 2 ] || fail "expected two compiles (with the profile, then without): $(cat "$LOG")"
second=$(sed -n 2p "$LOG")
case " $second " in *" -fprofile-use "* | *" -fprofile-partial-training "*) fail "the retry kept the profile: $second" ;; esac
case " $second " in *" -Werror "*) ;; *) fail "the retry dropped -Werror: $second" ;; esac
case " $second " in *" -Impo-src/src "*" mpo-src/src/x.cpp "*) ;; *) fail "the retry's paths are not the link's: $second" ;; esac
grep -q "older than src/x.cpp: compiled without it" "$dir/err" || fail "no note: $(cat "$dir/err")"
grep -q "Missing counts" "$dir/err" && fail "GCC's message was passed on after a successful retry"

# Any other failure: not retried, its message passed on, its status kept.
: >"$LOG"
rm -f "$dir/x.o"
if MODE=broken "$launcher" "$src" mpo-src "$dir/cc" -Werror -fprofile-use -o "$dir/x.o" -c "$src/src/x.cpp" \
  2>"$dir/err"; then
  fail "a real error passed"
fi
[ "$(wc -l <"$LOG")" = 1 ] || fail "a real error was retried: $(cat "$LOG")"
grep -q "unused variable" "$dir/err" || fail "the compiler's message was lost: $(cat "$dir/err")"

# Without a profile the command runs as given, paths through the link.
: >"$LOG"
MODE=stale "$launcher" "$src" mpo-src "$dir/cc" -O3 -o "$dir/x.o" -c "$src/src/x.cpp"
[ "$(cat "$LOG")" = "-O3 -o $dir/x.o -c mpo-src/src/x.cpp" ] || fail "unprofiled command changed: $(cat "$LOG")"
echo "stale profile: compiled without it, other failures kept"
