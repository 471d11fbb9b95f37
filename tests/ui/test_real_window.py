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

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "target" / "debug" / "debugtop"
FIXTURES = ROOT / "tests" / "fixtures"
SHOT = ROOT / "target" / "ui-real-window.png"


def start_ticks(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rfind(")") + 2 :].split()[19])


def alive(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


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


def state_of(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2]


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
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2 :].split()[1]) == pid:
                out.append(int(d.name))
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
