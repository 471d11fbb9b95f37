#!/usr/bin/env bash
# Installs the .deb `make dist` built (apt install ./….deb), opens the *installed* app under
# Xvfb with a throwaway config directory, waits for its window, and saves a screenshot to
# dist/installed.png. Fails if the package does not install, the binary is not where the
# package says, no window appears, or the screenshot is blank.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
deb="$(ls -t dist/*.deb 2>/dev/null | head -1 || true)"
[ -n "$deb" ] || { echo "dist-check: no dist/*.deb: run make dist first" >&2; exit 1; }
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "dist-check: installing $deb"
DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q "./$deb"
bin="$(dpkg -L debugtop | grep -E '^/usr/bin/[^/]+$' | head -1)"
[ -x "$bin" ] || { echo "dist-check: the package installed no binary in /usr/bin" >&2; exit 1; }
echo "dist-check: installed $bin ($(dpkg-query -W -f='${Version}' debugtop))"
config="$(mktemp -d)"
trap 'rm -rf "$config"' EXIT
DEBUGTOP_CONFIG_DIR="$config" BIN="$bin" timeout -s INT 120 xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  "$BIN" & app=$!
  for _ in $(seq 1 100); do
    xwininfo -root -tree 2>/dev/null | grep -q "\"debugtop\"" && break
    sleep 0.3
  done
  xwininfo -root -tree | grep -q "\"debugtop\"" || { echo "dist-check: no debugtop window" >&2; kill $app; exit 1; }
  sleep 4   # the first update is drawn
  import -window root dist/installed.png
  kill $app; wait $app 2>/dev/null || true'
colors="$(convert dist/installed.png -format %k info:)"
[ "$colors" -gt 16 ] || { echo "dist-check: the screenshot is blank ($colors colours)" >&2; exit 1; }
echo "dist-check: the installed app opened; screenshot dist/installed.png ($colors colours)"
