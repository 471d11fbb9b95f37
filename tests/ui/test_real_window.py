"""The real app window (WebKitGTK under Xvfb), driven by WebKitWebDriver, against real processes:
a leaked adapter chain appears with its finding; kill -> confirm takes every process of the
plan down and the row becomes a tomb; a screenshot is saved for the record. Only processes this
test started are signalled, by pid and start time.

Stand-ins: the adapter chain is tests/fixtures/js-debug (a vsDebugServer-shaped script that
starts a debuggee and a watchdog carrying js-debug's markers), because the real js-debug starts
its debuggee only when a DAP client launches one; the real chain is covered against the real
server in tests/tests/reconcile.rs and verdicts.rs. The gone server is a zombie this test holds,
so its pid cannot be reused while the test runs."""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.common.options import ArgOptions

from procfs import alive, children_of, comm, cpu_ticks, family, pss_kib, rss_kib, start_ticks, state_of

ROOT = Path(__file__).resolve().parents[2]
# `make bench-window` points this at the release app to measure what users run.
APP = Path(os.environ.get("DEBUGTOP_APP") or ROOT / "target" / "debug" / "debugtop")
BUILD = "release build" if APP.parent.name == "release" else "debug build"
FIXTURES = ROOT / "tests" / "fixtures"
SHOT = ROOT / "target" / "ui-real-window.png"


def kill_if_same(pid, ticks):
    if ticks is not None and start_ticks(pid) == ticks:
        os.kill(pid, signal.SIGKILL)


def wait(what, timeout, fn):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_zombie(pid):
    wait("pid %d to become a zombie" % pid, 10, lambda: state_of(pid) == "Z")


@pytest.fixture
def leaked_chain():
    """A js-debug-shaped chain (adapter, debuggee, watchdog) tagged for a server pid that is gone
    (our unreaped zombie: no one else can take the pid), reparented away from us: a leaked
    adapter."""
    gone = subprocess.Popen(["true"])
    wait_zombie(gone.pid)
    env = {**os.environ, "MCP_DEBUGGER_MAIN_PID": str(gone.pid)}
    out = subprocess.run(
        ["sh", "-c", f"node {FIXTURES}/js-debug/vsDebugServer.cjs 0 127.0.0.1 >/dev/null 2>&1 & echo $!"],
        env=env, capture_output=True, text=True, check=True,
    )
    adapter = int(out.stdout.strip())
    wait("adapter children", 10, lambda: len(children(adapter)) >= 2)
    owned = [(p, start_ticks(p)) for p in dict.fromkeys([adapter, *children(adapter)])]
    yield adapter, [p for p, _ in owned]
    for pid, ticks in owned:
        kill_if_same(pid, ticks)
    gone.wait()


def children(pid):
    out = children_of(pid)
    # The watchdog is detached: find it by the pid it names.
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                env = (d / "environ").read_bytes()
            except OSError:
                continue
            if b"NODE_INSPECTOR_INFO" in env and any(f'"pid":"{c}"'.encode() in env for c in out):
                out.append(int(d.name))
    return out


@pytest.fixture
def window():
    assert APP.exists(), f"build the app first: {APP}"
    config = tempfile.mkdtemp()
    Path(config, "settings.json").write_text(json.dumps({"interval_ms": 500, "grace_secs": 1.0, "notify_critical": False}))
    env = {**os.environ, "TAURI_WEBVIEW_AUTOMATION": "true", "DEBUGTOP_CONFIG_DIR": config}
    port = free_port()
    driver_proc = subprocess.Popen(["WebKitWebDriver", f"--port={port}"], env=env, start_new_session=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    driver_ticks = start_ticks(driver_proc.pid)
    try:
        wait("WebKitWebDriver to answer", 20, lambda: driver_ready(port))
        opts = ArgOptions()
        opts.set_capability("webkitgtk:browserOptions", {"binary": str(APP), "args": []})
        d = webdriver.Remote(f"http://127.0.0.1:{port}", options=opts)
        try:
            yield d
        finally:
            d.quit()
    finally:
        # The driver and the app it started live in the driver's own process group (we created
        # it with start_new_session): end that group only, and only while its leader is still the
        # process we started, so CI's pipes close and nothing else is hit.
        if driver_ticks is not None and start_ticks(driver_proc.pid) == driver_ticks:
            try:
                os.killpg(driver_proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        driver_proc.wait(timeout=10)


def driver_ready(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=1) as r:
            return json.load(r).get("value", {}).get("ready", False)
    except OSError:
        return False


def test_leaked_chain_is_killed_from_the_window(window, leaked_chain):
    d = window
    adapter, chain = leaked_chain
    sentinel = subprocess.Popen(["sleep", "600"])
    try:
        row = f"//div[@role='treeitem'][.//span[contains(@class,'pid') and normalize-space()='{adapter}']]"
        el = wait("the leaked adapter row with its finding", 30,
                  lambda: next(iter(e for e in d.find_elements(By.XPATH, row) if "leaked-adapter" in e.text), None))
        assert "adapter" in el.text
        el.click()
        wait("the row selected", 5, lambda: el.get_attribute("aria-selected") == "true")
        d.find_element(By.CSS_SELECTOR, "[data-testid=tree]").send_keys(Keys.SHIFT, Keys.DELETE)
        dialog = wait("kill dialog", 10, lambda: d.find_elements(By.CSS_SELECTOR, "[data-testid=kill-dialog]"))[0]
        assert str(adapter) in dialog.text
        assert "watchdog" in dialog.text and "debuggee" in dialog.text
        planned = [int(td.text) for td in dialog.find_elements(By.CSS_SELECTOR, "tbody tr td.mono:first-child")]
        assert sorted(planned) == sorted(chain), f"the plan {planned} is the whole chain {chain}"
        d.find_element(By.CSS_SELECTOR, "[data-testid=kill-confirm]").click()
        outcomes = wait("outcomes", 20, lambda: d.find_elements(By.CSS_SELECTOR, "[data-testid=kill-outcomes]"))[0]
        assert "refused" not in outcomes.text and "failed" not in outcomes.text, outcomes.text
        d.find_element(By.CSS_SELECTOR, "[data-testid=kill-close]").click()
        # Every process the plan targeted is gone: the adapter, its debuggee and the watchdog.
        for pid in chain:
            wait(f"pid {pid} of the plan exited", 10, lambda pid=pid: not alive(pid))
        tomb = f"//div[@role='treeitem'][contains(@class,'tomb')][.//span[contains(@class,'pid') and normalize-space()='{adapter}']]"
        wait("the row became a tomb", 15, lambda: d.find_elements(By.XPATH, tomb))
        SHOT.parent.mkdir(parents=True, exist_ok=True)
        d.save_screenshot(str(SHOT))
        assert alive(sentinel.pid), "the sentinel outside the tree was hit"
    finally:
        sentinel.kill()
        sentinel.wait()


REPORT = ROOT / "target" / "ui-real-window-cost.txt"

# Runs in the window: the time from a sort switch (the whole 5,000-row list redrawn) to the next
# frame, five times each way, and the longest frame over a few seconds of live ticks.
FRAME_JS = """
const done = arguments[arguments.length - 1];
const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
const press = (key) => window.dispatchEvent(new KeyboardEvent('keydown', { key, bubbles: true }));
(async () => {
  const sorts = [];
  for (let i = 0; i < 10; i++) {
    await frame();
    const t0 = performance.now();
    press(i % 2 ? 't' : 'P');
    await frame();
    sorts.push(performance.now() - t0);
  }
  press('t');
  // Live ticks: every frame's length, and apart those in which an update arrived (the status
  // bar's tick number moved): an update's way to the screen.
  const gaps = [];
  const updates = [];
  window.__debugtopUpdateMs = [];
  const tick = () => document.querySelector('[data-testid=status]')?.textContent ?? '';
  let seen = tick();
  let last = performance.now();
  const end = last + 6000;
  while (performance.now() < end) {
    await frame();
    const now = performance.now();
    gaps.push(now - last);
    const t = tick();
    if (t !== seen) updates.push(now - last);
    seen = t;
    last = now;
  }
  const work = window.__debugtopUpdateMs;
  delete window.__debugtopUpdateMs;
  done({ sorts, gaps, updates, work, rows: document.querySelector('[data-testid=row-count]').textContent });
})();
"""


def test_the_window_at_5000_rows_and_idle(window):
    """The real window (WebKitGTK): idle CPU and memory of the app and every WebKit process over
    30 s; then 5,000 real orphans (cheap stand-ins) and the frame after a 5,000-row redraw.
    Reported in target/ui-real-window-cost.txt (BENCHMARKS.md has the figures); asserted only
    against gross regressions."""
    d = window
    wait("the first tick", 30, lambda: d.find_elements(By.CSS_SELECTOR, "[data-testid=status]"))
    procs = [p for p in family(os.getpid()) if comm(p) == "debugtop" or comm(p).startswith("WebKit")]
    assert any(comm(p) == "debugtop" for p in procs), [comm(p) for p in procs]
    # Without a GPU render node the app turns WebKit's DMABuf renderer off (software GL made
    # every repaint cost ~35 ms of the web process); a user's own setting would be kept.
    if not any(n.startswith("renderD") for n in (os.listdir("/dev/dri") if os.path.isdir("/dev/dri") else [])) \
            and "WEBKIT_DISABLE_DMABUF_RENDERER" not in os.environ:
        # The web process is started with the app's environment as the app set it.
        web = next(p for p in procs if comm(p).startswith("WebKitWebProc"))
        env = Path(f"/proc/{web}/environ").read_bytes().split(b"\0")
        assert b"WEBKIT_DISABLE_DMABUF_RENDERER=1" in env, "the app left the DMABuf renderer on without a GPU"
    hz = os.sysconf("SC_CLK_TCK")
    time.sleep(3)
    before = {p: cpu_ticks(p) for p in procs}
    t0 = time.time()
    time.sleep(30)
    secs = time.time() - t0
    idle = {f"{comm(p)} {p}": (cpu_ticks(p) - before[p]) / hz / secs * 100 for p in procs}
    rss = {f"{comm(p)} {p}": rss_kib(p) // 1024 for p in procs}
    total = sum(idle.values())
    lines = [f"idle, 30 s at 500 ms ({BUILD}): {total:.1f} % of a core in total; "
             + ", ".join(f"{k}: {v:.1f} %" for k, v in idle.items()),
             "resident: " + ", ".join(f"{k}: {v} MB" for k, v in rss.items())
             + f" (total {sum(rss.values())} MB; sum of PSS, shared pages once: "
             + f"{sum(pss_kib(p) for p in procs) // 1024} MB)"]

    # 5,000 orphans of one gone owner (our zombie): 5,001 rows.
    gone = subprocess.Popen(["true"])
    wait_zombie(gone.pid)
    fifo_dir = tempfile.mkdtemp()
    fifo = os.path.join(fifo_dir, "hold")
    os.mkfifo(fifo)
    holder = os.open(fifo, os.O_RDWR)
    script = f"read x < '{fifo}'"
    orphans = []
    try:
        for i in range(5000):
            p = subprocess.Popen(["sh", "-c", script, "sh", "/stand-in/dist/proxy/proxy-bootstrap.js",
                                  f"--mcp-owner-pid={gone.pid}", f"--mcp-session-id=5a1d0000-0000-4000-8000-{i:012d}"],
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            orphans.append((p, start_ticks(p.pid)))
        wait("5,000 rows in the window", 120,
             lambda: any(int(e.text.split()[0]) > 5000 for e in d.find_elements(By.CSS_SELECTOR, "[data-testid=row-count]")
                         if e.text.split() and e.text.split()[0].isdigit()))
        time.sleep(2)
        d.set_script_timeout(60)
        r = d.execute_async_script(FRAME_JS)
        sorts = sorted(r["sorts"])
        gaps = sorted(r["gaps"])
        ups = sorted(r["updates"]) or [float("nan")]
        work = sorted(r["work"]) or [float("nan")]
        med = sorts[len(sorts) // 2]
        lines.append(f"5,000-row redraw (sort switch) → next frame in WebKitGTK: median {med:.1f} ms "
                     f"(min {sorts[0]:.1f}, max {sorts[-1]:.1f}); {r['rows']}; live ticks over 6 s: longest frame "
                     f"{gaps[-1]:.1f} ms, median {gaps[len(gaps) // 2]:.1f} ms; the {len(r['updates'])} frames an update "
                     f"arrived in: median {ups[len(ups) // 2]:.1f} ms, longest {ups[-1]:.1f} ms (at 60 Hz a frame is 16.7 ms "
                     f"apart: no dropped frame reads ~17); each update's own work, message to DOM updated and laid "
                     f"out ({len(r['work'])} updates): median {work[len(work) // 2]:.1f} ms, longest {work[-1]:.1f} ms "
                     f"(target ≤ 16 ms)")
        busy = {p: cpu_ticks(p) for p in procs}
        t0 = time.time()
        time.sleep(10)
        secs = time.time() - t0
        each = {f"{comm(p)} {p}": (cpu_ticks(p) - busy[p]) / hz / secs * 100 for p in procs}
        lines.append(f"with 5,001 rows and 5,000 findings, 10 s at 500 ms ({BUILD}): {sum(each.values()):.1f} % of a core in total ("
                     + ", ".join(f"{k}: {v:.1f} %" for k, v in each.items())
                     + f"); resident {sum(rss_kib(p) for p in procs) // 1024} MB")
    finally:
        for p, ticks in orphans:
            kill_if_same(p.pid, ticks)
        for p, _ in orphans:
            p.wait()
        os.close(holder)
        gone.wait()
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    # Something was measured: the web process's CPU, live updates reaching the screen, and
    # each update's own work (a window that drew nothing would pass every bound below).
    assert any(comm(p).startswith("WebKitWebProc") for p in procs), [comm(p) for p in procs]
    assert r["updates"], f"no update reached the window in 6 s of live ticks: {lines[-2]}"
    assert r["work"], f"no update's work was measured: {lines[-2]}"
    # Gross regressions only: the figures live in BENCHMARKS.md.
    assert total < 80, lines[0]
    assert med < 2000, lines[-2]
    assert sorted(r["work"])[len(r["work"]) // 2] < 2000, lines[-2]
