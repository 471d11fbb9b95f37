#!/usr/bin/env python3
"""What the window costs (`make bench-window`; `make soak-app [DURATION]` for the soak): the
release app under Xvfb, at a 1 s interval,
with the demo (a real mcp-debugger, two sessions, a leaked adapter, an orphan; 15–45 s after
start, and again 75–105 s after, past the web process's JIT warm-up), then with 5,000
orphans of one gone owner (cheap stand-ins carrying the worker markers): CPU of the app and of
every WebKit process over 30 s each, and their resident memory. Figures only, printed and
written to target/window-cost.txt; BENCHMARKS.md holds them. `--demo [INTERVAL_MS [WINDOWS]]`
measures the demo alone at another interval (printed only). Only processes this script started
are signalled, by pid and start time."""

import contextlib
import json
import os
import subprocess
import tempfile
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "ui"))
from procfs import comm, cpu_ticks, family, pss_kib, rss_kib, start_ticks  # noqa: E402
# DEBUGTOP_APP: another build of the app to measure (an A/B against the tree's own).
APP = Path(os.environ.get("DEBUGTOP_APP", ROOT / "target" / "release" / "debugtop"))
HZ = os.sysconf("SC_CLK_TCK")


def measure(app, secs, what):
    procs = [app] + [p for p in family(app) if comm(p).startswith("WebKit")]
    before = {p: cpu_ticks(p) for p in procs}
    t0 = time.time()
    time.sleep(secs)
    dt = time.time() - t0
    pct = {p: (cpu_ticks(p) - before[p]) / HZ / dt * 100 for p in procs}
    mem = {p: rss_kib(p) // 1024 for p in procs}
    pss = {p: pss_kib(p) // 1024 for p in procs}
    parts = ", ".join(f"{comm(p)} {pct[p]:.2f} % / {mem[p]} MB rss / {pss[p]} MB pss" for p in procs)
    return (f"{what}: {sum(pct.values()):.2f} % of a core in total, {sum(mem.values())} MB resident (sum of RSS), "
            f"{sum(pss.values())} MB proportional (sum of PSS: shared pages once) ({parts})")


@contextlib.contextmanager
def demo_with_app(interval_ms=1000):
    """The demo, and the app watching it at `interval_ms` with its own settings; the app's pid.
    Both stopped after: the app by pid and start time, the demo by `demo.sh --stop`."""
    assert APP.exists(), f"build it first: cargo build --release -p debugtop ({APP})"
    config = tempfile.mkdtemp()
    Path(config, "settings.json").write_text(json.dumps({"interval_ms": interval_ms, "notify_critical": False}))
    env = {**os.environ, "DEBUGTOP_CONFIG_DIR": config}
    subprocess.run([str(ROOT / "scripts" / "demo.sh"), "--no-app"], check=True, stdout=subprocess.DEVNULL)
    app = subprocess.Popen([str(APP)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    ticks = start_ticks(app.pid)
    try:
        yield app.pid
    finally:
        if start_ticks(app.pid) == ticks:
            app.terminate()
        app.wait(timeout=10)
        subprocess.run([str(ROOT / "scripts" / "demo.sh"), "--stop"], stdout=subprocess.DEVNULL)


def soak(secs):
    """The demo for `secs`: resident memory and descriptors of the app and every WebKit process
    every 30 s; growth is the last third's median against the first third's."""
    samples = []
    with demo_with_app() as app:
        time.sleep(15)
        procs = [app] + [p for p in family(app) if comm(p).startswith("WebKit")]
        c0, t0 = sum(cpu_ticks(p) for p in procs), time.time()
        end = t0 + secs
        while time.time() < end:
            fds = sum(len(os.listdir(f"/proc/{p}/fd")) for p in procs if os.path.exists(f"/proc/{p}"))
            live = [p for p in procs if os.path.exists(f"/proc/{p}")]
            each = " ".join(f"{comm(p)}={pss_kib(p) // 1024}" for p in live)
            samples.append((time.time() - t0, sum(rss_kib(p) // 1024 for p in live), fds,
                            sum(pss_kib(p) // 1024 for p in live), each))
            time.sleep(30)
        pct = (sum(cpu_ticks(p) for p in procs) - c0) / HZ / (time.time() - t0) * 100
    third = max(1, len(samples) // 3)
    med = lambda xs: sorted(xs)[len(xs) // 2]
    first, last = med([s[1] for s in samples[:third]]), med([s[1] for s in samples[-third:]])
    pfirst, plast = med([s[3] for s in samples[:third]]), med([s[3] for s in samples[-third:]])
    # The window fills its timeline and history for the first minutes: growth after that is
    # the middle third against the last.
    pmid = med([s[3] for s in samples[third:-third]] or [pfirst])
    line = (f"soak, demo, {secs // 60} min at 1 s: resident {first} MB → {last} MB "
            f"({(last - first) / max(first, 1) * 100:+.1f} %; sum of PSS {pfirst} → {plast} MB, "
            f"{(plast - pfirst) / max(pfirst, 1) * 100:+.1f} %; middle third → last {pmid} → {plast} MB, "
            f"{(plast - pmid) / max(pmid, 1) * 100:+.1f} %), descriptors {samples[0][2]} → {samples[-1][2]}, "
            f"CPU {pct:.2f} % of a core (app and every WebKit process, {len(samples)} samples)")
    (ROOT / "target" / "window-soak.txt").write_text(
        line + "\n" + "\n".join(f"{t:.0f}s {r} MB rss {p} MB pss {f} fds (pss MB: {e})" for t, r, f, p, e in samples) + "\n")
    print(line)


def demo_only(interval_ms, windows):
    """The demo alone at `interval_ms`, `windows` windows of 30 s from 40 s after start (the
    web process's JIT warm-up past): at 30,000 ms the window has next to nothing to draw, so
    the difference with 1,000 is what a tick costs (docs/benchmarks/2026-12-05.md, "What a
    drawn frame costs")."""
    with demo_with_app(interval_ms) as app:
        time.sleep(40)
        for i in range(windows):
            print(measure(app, 30, f"demo, {interval_ms} ms interval, window {i + 1}"), flush=True)


def with_orphans(app, n):
    """`n` orphans of one gone owner (cheap stand-ins carrying the worker markers) while the app
    at `app` watches: its cost with them; each signalled after by pid and start time."""
    orphans = []
    gone = subprocess.Popen(["true"])
    try:
        time.sleep(0.5)
        fifo = Path(tempfile.mkdtemp()) / "hold"
        os.mkfifo(fifo)
        os.open(fifo, os.O_RDWR)  # a writer held open: every `read` blocks, none sees EOF
        for i in range(n):
            p = subprocess.Popen(["sh", "-c", f"read x < '{fifo}'", "sh", "/stand-in/dist/proxy/proxy-bootstrap.js",
                                  f"--mcp-owner-pid={gone.pid}", f"--mcp-session-id=5a1d0000-0000-4000-8000-{i:012d}"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            orphans.append((p, start_ticks(p.pid)))
        time.sleep(20)
        return measure(app, 30, f"demo + {n:,} orphans (about {2 * n:,} rows, {n:,} findings), 1 s interval, 30 s")
    finally:
        for p, t in orphans:
            if start_ticks(p.pid) == t:
                p.kill()
        for p, _ in orphans:
            p.wait()
        gone.wait()


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--soak":
        soak(int(sys.argv[2]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--demo":
        demo_only(int(sys.argv[2]) if len(sys.argv) > 2 else 1000, int(sys.argv[3]) if len(sys.argv) > 3 else 3)
        return
    lines = []
    with demo_with_app() as app:
        time.sleep(15)
        lines.append(measure(app, 30, "demo, 1 s interval, 30 s"))
        # The same window again once the web process's JIT has warmed up (it compiles the
        # page's code through the first minute): the idle cost a long session pays.
        time.sleep(30)
        lines.append(measure(app, 30, "demo, 1 s interval, 30 s, from 75 s after start"))
        lines.append(with_orphans(app, 5000))
    out = ROOT / "target" / "window-cost.txt"
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))

if __name__ == "__main__":
    main()
