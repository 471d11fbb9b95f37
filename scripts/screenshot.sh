#!/usr/bin/env bash
# Takes the README's screenshot: the demo (a real mcp-debugger with a leaked adapter chain and
# an orphan) in the real app window under Xvfb, saved as docs/screenshot.png, and the same in
# the dark theme (GTK's dark preference, which WebKitGTK reports as prefers-color-scheme: dark)
# as docs/screenshot-dark.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/demo.sh --no-app
trap 'scripts/demo.sh --stop' EXIT
cargo build -q -p debugtop
shoot() { # file, then environment for the app
  local file="$1"; shift
  timeout -s INT 60 env "$@" xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
    ./target/debug/debugtop & app=$!
    sleep 16
    import -window root "$0"
    kill $app' "$file"
}
shoot docs/screenshot.png GTK_THEME=Adwaita
shoot docs/screenshot-dark.png GTK_THEME=Adwaita:dark
echo "saved docs/screenshot.png and docs/screenshot-dark.png"
