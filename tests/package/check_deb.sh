#!/usr/bin/env bash
# The Debian package, as a user gets it: cpack builds it from the build tree, lintian finds no
# errors in it, and the binary unpacked from it into a temporary root runs (--version, a short
# demo); the systemd unit and its settings file are where systemd looks and systemd-analyze
# accepts the unit; the man page and the docs are in place.
#   check_deb.sh BUILD_DIR WORK_DIR
set -euo pipefail
build=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
(cd "$build" && cpack -G DEB -B "$work" >/dev/null)
deb=$(ls "$work"/modelperfobs_*.deb)
echo "package: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb --info "$deb" | sed -n '/Package:/,$p'

echo "--- lintian (errors fail)"
# Run as root here (CI's container): lintian refuses to run as root without this flag.
lintian --allow-root --fail-on error --tag-display-limit 0 "$deb" | tee "$work/lintian.txt"

echo "--- contents"
root="$work/root"
dpkg-deb -x "$deb" "$root"
for f in usr/bin/modelperfobs usr/share/man/man1/modelperfobs.1.gz usr/share/doc/modelperfobs/copyright \
  usr/share/doc/modelperfobs/changelog.Debian.gz usr/share/doc/modelperfobs/FORMATS.md \
  usr/lib/systemd/system/modelperfobs-proxy.service etc/default/modelperfobs-proxy \
  usr/share/modelperfobs/deploy/prometheus/modelperfobs-rules.yml \
  usr/share/modelperfobs/deploy/kubernetes/proxy-gateway.yaml; do
  [ -e "$root/$f" ] || { echo "missing from the package: /$f"; exit 1; }
done
# Read whole into files first: under pipefail, `zcat | grep -q` fails when grep leaves at its first
# match while zcat still writes (SIGPIPE), as it did once the man page outgrew the pipe.
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles >"$work/conffiles"
grep -qx /etc/default/modelperfobs-proxy "$work/conffiles" \
  || { echo "/etc/default/modelperfobs-proxy is not a conffile"; exit 1; }
zcat "$root/usr/share/man/man1/modelperfobs.1.gz" >"$work/modelperfobs.1"
grep -q '^\.SS proxy' "$work/modelperfobs.1" || { echo "man page lacks proxy"; exit 1; }

echo "--- the packaged binary"
"$root/usr/bin/modelperfobs" --version
"$root/usr/bin/modelperfobs" demo --out "$work/demo" > "$work/demo.txt"
grep -E "^modelperfobs demo: [0-9]+ requests sent, [0-9]+ ok" "$work/demo.txt"
[ -s "$work/demo/report.html" ] || { echo "the packaged demo wrote no report"; exit 1; }

echo "--- the systemd unit"
# systemd-analyze checks the unit's syntax and that ExecStart's program exists: point it at the
# unpacked binary (the unit itself names /usr/bin/modelperfobs).
sed "s|/usr/bin/modelperfobs|$root/usr/bin/modelperfobs|" "$root/usr/lib/systemd/system/modelperfobs-proxy.service" \
  > "$work/modelperfobs-proxy.service"
if command -v systemd-analyze >/dev/null; then
  # It exits 0 on settings it ignores ("Failed to parse ..., ignoring"): any message is a failure.
  msg=$(systemd-analyze verify --man=no "$work/modelperfobs-proxy.service" 2>&1) || { echo "$msg"; exit 1; }
  [ -z "$msg" ] || { echo "systemd-analyze verify: $msg"; exit 1; }
  echo "systemd-analyze verify: ok"
else
  echo "systemd-analyze not installed: the unit's syntax is not checked"
fi
# The settings the unit passes: every variable ExecStart names is set in the defaults file.
for v in $(grep -o '\${\?MPO_[A-Z_]*' "$root/usr/lib/systemd/system/modelperfobs-proxy.service" | tr -d '${' | sort -u); do
  grep -q "^$v=" "$root/etc/default/modelperfobs-proxy" || { echo "$v is not in /etc/default/modelperfobs-proxy"; exit 1; }
done
echo "check_deb: ok"
