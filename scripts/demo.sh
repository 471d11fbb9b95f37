#!/usr/bin/env bash
# A live demo for debugtop: a real @debugmcp/mcp-debugger (from tests/node_modules) with two
# healthy paused sessions, one leaked js-debug adapter chain and one orphaned worker.
#   scripts/demo.sh            start the demo, then open the app
#   scripts/demo.sh --no-app   start the demo only (the app's "Start a demo" uses this)
#   scripts/demo.sh --stop     stop every process the demo started (by pid and start time)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
state="${TMPDIR:-/tmp}/debugtop-demo"
pkg="$root/tests/node_modules/@debugmcp/mcp-debugger"
mkdir -p "$state"

ticks() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null | tail -c 64 || true; }
record() { echo "$1 $(cut -d' ' -f22 "/proc/$1/stat" 2>/dev/null || echo 0)" >> "$state/pids"; }

# Every descendant of a pid, by parent links, as "pid start-ticks" lines.
descendants() {
  local frontier="$1" next p pp
  while [ -n "$frontier" ]; do
    next=""
    for p in /proc/[0-9]*; do
      pp=$(awk '{print $4}' "$p/stat" 2>/dev/null) || continue
      for f in $frontier; do
        if [ "$pp" = "$f" ]; then
          echo "${p#/proc/} $(cut -d' ' -f22 "$p/stat" 2>/dev/null)"
          next="$next ${p#/proc/}"
        fi
      done
    done
    frontier="$next"
  done
}

# Stops every process the demo recorded (and what they started), by pid and start time.
stop() {
  [ -f "$state/pids" ] || return 1
  # Descendants first (by parent links, with their start times), all of them gathered
  # before anything is stopped: once a worker is gone its adapter hangs under init, leaked.
  while read -r pid t; do
    now=$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null || echo none)
    [ "$now" = "$t" ] && descendants "$pid"
  done < "$state/pids" > "$state/pids.more"
  cat "$state/pids.more" >> "$state/pids"
  rm -f "$state/pids.more"
  while read -r pid t; do
    # Only what we started: same pid *and* same start time.
    now=$(cut -d' ' -f22 "/proc/$pid/stat" 2>/dev/null || echo none)
    if [ "$now" = "$t" ]; then kill -CONT "$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; fi
  done < "$state/pids"
  rm -f "$state/pids"
}

case "${1:-}" in
  "" | --no-app) ;;
  --stop)
    if stop; then echo "demo: stopped"; else echo "demo: nothing to stop"; fi
    exit 0 ;;
  *) echo "usage: scripts/demo.sh [--no-app | --stop]" >&2; exit 2 ;;
esac

[ -f "$pkg/dist/cli.mjs" ] || { echo "demo: run 'scripts/deps.sh test' first (installs mcp-debugger 0.24.2)"; exit 1; }
port="${DEMO_PORT:-3001}"
# A demo already running is stopped first: a second server could not take its port, and
# the second demo's sessions would join the first's server, which --stop then no longer knew.
if stop; then
  echo "demo: stopped the demo that was running"
  for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null || break; sleep 0.1; done
fi
MCP_HTTP_STALE_SESSION_MS=0 node "$pkg/dist/cli.mjs" http -p "$port" --log-file "$state/server.log" >/dev/null 2>&1 &
server=$!
record "$server"
for _ in $(seq 1 50); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; sleep 0.2; done

mcp() { # session-id json → data line of the answer
  curl -s -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
       ${1:+-H "Mcp-Session-Id: $1"} -X POST "http://127.0.0.1:$port/mcp" -d "$2"
}
sid=$(curl -s -D - -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -X POST "http://127.0.0.1:$port/mcp" \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"debugtop-demo","version":"1"}}}' \
  | tr -d '\r' | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}')
mcp "$sid" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
echo 'setInterval(() => {}, 1000);' > "$state/app.js"
for name in healthy-1 healthy-2; do
  out=$(mcp "$sid" "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"create_debug_session\",\"arguments\":{\"language\":\"mock\",\"name\":\"$name\"}}}")
  session=$(echo "$out" | grep -o 'sessionId[^,]*' | head -1 | grep -oE '[0-9a-f-]{36}')
  mcp "$sid" "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"start_debugging\",\"arguments\":{\"sessionId\":\"$session\",\"scriptPath\":\"$state/app.js\",\"dapLaunchArgs\":{\"stopOnEntry\":true}}}}" >/dev/null
done

# A leaked js-debug chain: the real vendored vsDebugServer, still tagged with the live server,
# whose parent (a stand-in worker) is gone.
(MCP_DEBUGGER_MAIN_PID=$server setsid node "$pkg/dist/vendor/js-debug/vsDebugServer.cjs" 0 127.0.0.1 >/dev/null 2>&1 & echo $! > "$state/adapter.pid")
record "$(cat "$state/adapter.pid")"

# An orphaned worker: the real proxy-bootstrap.js whose owner (a short-lived process) is gone.
sleep 300 & owner=$!
node "$root/tests/fixtures/seed-bug/harness.js" "$pkg" "$owner" "$(cat /proc/sys/kernel/random/uuid)" "$state/sessions/orphan/run-1" "$state/app.js" > "$state/orphan.pid" 2>/dev/null &
record $!
for _ in $(seq 1 50); do [ -s "$state/orphan.pid" ] && break; sleep 0.1; done
record "$(head -1 "$state/orphan.pid")"
kill "$owner"
echo "demo: server $server on :$port, 2 healthy sessions, a leaked js-debug adapter, an orphaned worker"
echo "demo: stop it with: scripts/demo.sh --stop"
if [ "${1:-}" != "--no-app" ]; then
  exec make -C "$root" run
fi
