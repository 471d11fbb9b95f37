#!/usr/bin/env bash
# Takes the README's screenshot: the demo (a real mcp-debugger with a leaked adapter chain and
# an orphan) in the real app window under Xvfb, saved as docs/screenshot.png.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
scripts/demo.sh --no-app
trap 'scripts/demo.sh --stop' EXIT
cargo build -q -p debugtop
timeout -s INT 60 xvfb-run -a -s "-screen 0 1280x800x24" bash -c '
  ./target/debug/debugtop & app=$!
  sleep 14
  import -window root docs/screenshot.png
  kill $app'
echo "saved docs/screenshot.png"
