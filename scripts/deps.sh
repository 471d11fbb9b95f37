#!/usr/bin/env bash
# Installs what debugtop needs to build, run and test, and only what is missing. Idempotent:
# a second run installs nothing. Says what it installs.
#   scripts/deps.sh run    — what `make run` needs (build + window)
#   scripts/deps.sh test   — also what the tests need (Xvfb, browsers, the real mcp-debugger)
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-test}"

# Debian packages. libwebkit2gtk-4.1-dev is what Tauri 2 builds against on Linux.
pkgs=(libwebkit2gtk-4.1-dev build-essential pkg-config file libssl-dev libxdo-dev
      libayatana-appindicator3-dev librsvg2-dev xvfb xauth)
if [ "$what" = test ]; then
  pkgs+=(webkit2gtk-driver chromium imagemagick strace openssh-server docker.io)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get -o DPkg::Lock::Timeout=600 update -q
  $SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends "${missing[@]}"
else
  echo "deps: Debian packages present"
fi

for tool in node npm cargo; do
  command -v "$tool" >/dev/null || { echo "deps: '$tool' is not on PATH; install it first" >&2; exit 1; }
done

# npm packages, from the lock files. Reinstalled only when the lock changed.
npm_ci() {
  local dir="$1"
  local stamp="$dir/node_modules/.debugtop-lock"
  if [ -f "$stamp" ] && cmp -s "$dir/package-lock.json" "$stamp"; then
    echo "deps: npm packages in $dir present"
    return
  fi
  echo "deps: installing npm packages in $dir (npm ci)"
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$dir/package-lock.json" "$stamp"
}
npm_ci ui
if [ "$what" = test ]; then
  # The real debug server the end-to-end tests drive: @debugmcp/mcp-debugger@0.24.2.
  npm_ci tests
fi

if [ "$what" = test ]; then
  # debugpy from PyPI, for the python debug sessions the end-to-end tests start.
  if [ -x tests/.venv/bin/python ] && cmp -s tests/requirements.txt tests/.venv/.debugtop-req; then
    echo "deps: python venv in tests/.venv present"
  else
    echo "deps: creating tests/.venv with $(tr '\n' ' ' < tests/requirements.txt)"
    python3 -m venv tests/.venv
    tests/.venv/bin/pip install -q --disable-pip-version-check -r tests/requirements.txt
    cp tests/requirements.txt tests/.venv/.debugtop-req
  fi
fi
