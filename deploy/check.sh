#!/usr/bin/env bash
# Every offline check of the deployment files, in one go; exits non-zero if any fails.
#   deploy/check.sh
# Needs promtool and amtool (Debian: prometheus, prometheus-alertmanager), systemd-analyze,
# the test virtualenv (tests/.venv, for kubernetes-validate and PyYAML) and musl-gcc
# (musl-tools: a tiny static stand-in for debugtop-cli, so the image can be packed and checked
# without a release build).
set -uo pipefail
cd "$(dirname "$0")/.."
py=tests/.venv/bin/python
[ -x "$py" ] || py=python3
failed=()

step() { local title=$1; shift; echo; echo "== $title"; "$@" || failed+=("$title"); }

step "Prometheus rules, their tests, the example configs" "$py" deploy/prometheus/check.py
step "systemd units" deploy/systemd/verify.sh
step "Kubernetes manifests" "$py" deploy/kubernetes/validate.py

image_check() {
  local tmp rc=0
  tmp=$(mktemp -d)
  printf 'int main(void) { return 0; }\n' > "$tmp/stand-in.c"
  musl-gcc -static -O2 -o "$tmp/debugtop-cli" "$tmp/stand-in.c" || { rm -rf "$tmp"; return 1; }
  # Twice: the same binary must give the same bytes.
  DEBUGTOP_IMAGE_BINARY="$tmp/debugtop-cli" DEBUGTOP_IMAGE_OUT="$tmp/a" scripts/image.sh >/dev/null || rc=1
  DEBUGTOP_IMAGE_BINARY="$tmp/debugtop-cli" DEBUGTOP_IMAGE_OUT="$tmp/b" scripts/image.sh >/dev/null || rc=1
  if [ "$rc" = 0 ]; then
    python3 scripts/image.py --check "$tmp"/a/*.tar --binary "$tmp/debugtop-cli" || rc=1
    cmp -s "$tmp"/a/*.tar "$tmp"/b/*.tar && echo "ok: two packings of one binary are identical" \
      || { echo "FAIL: two packings of one binary differ"; rc=1; }
  fi
  rm -rf "$tmp"
  return "$rc"
}
step "container image (a static stand-in binary)" image_check

echo
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'deploy/check.sh: failed: %s\n' "${failed[@]}"
  exit 1
fi
echo "deploy/check.sh: every deployment check passed"
