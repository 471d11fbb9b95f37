#!/usr/bin/env bash
# Verifies the systemd units in this folder offline, without installing anything and without a
# running systemd: `systemd-analyze verify` on each, and `systemd-analyze security --offline`
# on the two services (their exposure must stay at or below SECURITY_THRESHOLD, default 4.0 on
# systemd's 0–10 scale, where 0 is the tightest sandbox; with systemd 252 the exporter scores 2.9).
#
#   deploy/systemd/verify.sh            exit 0: every unit is clean
#
# `verify` insists that ExecStart's binary exists and is executable, so the units are copied to
# a temporary folder with /usr/local/bin/debugtop-cli replaced by a stand-in there (a copy of
# `true`, or DEBUGTOP_CLI=/path/to/debugtop-cli to use a real build). `verify` reports unknown
# keys, bad values and missing units as warnings but still exits 0 for some of them, so any
# output at all counts as a failure here. It also does not notice a timer whose Unit= names a
# unit that does not exist; that is checked separately.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
units=(debugtop-exporter.service debugtop-textfile.service debugtop-textfile.timer)
threshold=${SECURITY_THRESHOLD:-4.0}

command -v systemd-analyze >/dev/null || { echo "verify.sh: systemd-analyze not found" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The stand-in binary at a path of the temporary folder.
if [ -n "${DEBUGTOP_CLI:-}" ]; then
  cp "$DEBUGTOP_CLI" "$tmp/debugtop-cli"
else
  cp "$(type -P true)" "$tmp/debugtop-cli"
fi
chmod 0755 "$tmp/debugtop-cli"

for u in "${units[@]}"; do
  sed "s#/usr/local/bin/debugtop-cli#$tmp/debugtop-cli#g" "$here/$u" > "$tmp/$u"
  if grep -q /usr/local/bin/debugtop-cli "$tmp/$u"; then
    echo "verify.sh: $u still names /usr/local/bin/debugtop-cli after substitution" >&2
    exit 1
  fi
done

failed=0
cd "$tmp"

# `verify` does not notice a timer whose Unit= names a unit that does not exist (it makes a
# stub): check that each timer starts a service of this folder.
for t in *.timer; do
  target=$(sed -n 's/^Unit=//p' "$t")
  target=${target:-${t%.timer}.service}
  if [ ! -f "$target" ]; then
    echo "FAIL: $t starts $target, which is not in $(basename "$here")/"
    failed=1
  fi
done
for u in "${units[@]}"; do
  # --man=no: Documentation= is not looked up in man pages (none are installed for debugtop).
  # A timer is verified together with the service it starts.
  args=("./$u")
  case "$u" in *.timer) args+=("./${u%.timer}.service") ;; esac
  rc=0
  out=$(SYSTEMD_LOG_COLOR=0 systemd-analyze verify --man=no "${args[@]}" 2>&1) || rc=$?
  if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
    echo "FAIL: systemd-analyze verify $u (exit $rc):"
    printf '%s\n' "$out" | sed "s#$tmp/##g; s#^#  #"
    failed=1
  else
    echo "ok: systemd-analyze verify $u"
  fi
done

for u in debugtop-exporter.service debugtop-textfile.service; do
  rc=0
  out=$(SYSTEMD_LOG_COLOR=0 systemd-analyze security --offline=yes --no-pager \
        --threshold="$(awk -v t="$threshold" 'BEGIN { printf "%d", t * 10 + 0.5 }')" "./$u" 2>&1) || rc=$?
  level=$(printf '%s\n' "$out" | sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  if [ "$rc" -ne 0 ] || [ -z "$level" ]; then
    echo "FAIL: systemd-analyze security $u: exposure ${level:-unknown} above $threshold (exit $rc)"
    printf '%s\n' "$out" | grep '✗' | sed 's/^/  /' || true
    failed=1
  else
    echo "ok: systemd-analyze security $u: exposure $level (at most $threshold)"
  fi
done

exit "$failed"
