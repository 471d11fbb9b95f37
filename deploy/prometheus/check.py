#!/usr/bin/env python3
"""Checks every Prometheus and Alertmanager file under deploy/, and exits non-zero on any failure.

    python3 deploy/prometheus/check.py        (needs promtool, amtool and PyYAML)

1. `promtool check rules` on the rules, `promtool test rules` on every *.test.yml beside them.
2. That the tests cover the rules: every alert is expected to fire in some test, and every
   (kind, severity) pair the exporter can publish raises an alert in some test.
3. `promtool check config` on prometheus.example.yml. Debian's Prometheus is built without
   Kubernetes discovery, so where this promtool rejects `kubernetes_sd_configs` the Kubernetes
   job is checked with its discovery replaced by static targets that carry the labels the
   Kubernetes API would give; either way its relabelling is run on three made-up pods
   (`promtool check service-discovery`) to show that only debugtop's pod is scraped, on the
   annotated port, as job "debugtop" with the node as instance.
4. `amtool check-config` on the Alertmanager example, and `amtool config routes test` to show
   that critical alerts reach the pager and warnings the chat.

PROMTOOL and AMTOOL name other binaries than the ones on PATH.
"""

import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
DEPLOY = os.path.dirname(HERE)
PROMTOOL = os.environ.get("PROMTOOL", "promtool")
AMTOOL = os.environ.get("AMTOOL", "amtool")
RULES = os.path.join(HERE, "debugtop.rules.yml")
PROM_CONFIG = os.path.join(HERE, "prometheus.example.yml")
AM_CONFIG = os.path.join(DEPLOY, "alertmanager", "alertmanager.example.yml")
K8S_JOB = "debugtop-kubernetes"

# Every (kind, severity) pair the exporter publishes (debugtop_findings).
PAIRS = [
    ("leaked-worker", "critical"), ("orphaned-worker", "critical"),
    ("leaked-adapter", "critical"), ("leaked-debuggee", "critical"),
    ("orphaned-server", "critical"), ("orphaned-stdio", "warning"),
    ("orphaned-container", "critical"), ("duplicate-server", "warning"),
    ("spinning", "warning"), ("zombie", "warning"),
    ("stopped", "warning"), ("stopped", "critical"),
    ("session-without-worker", "warning"),
    ("stuck-session", "warning"), ("stuck-session", "critical"),
    ("server-unresponsive", "critical"),
]

failures = []


def fail(msg):
    failures.append(msg)
    print(f"FAIL: {msg}")


def run(cmd, cwd=None, expect_ok=True, quiet=False, silent=False):
    """Runs a command, prints what it said (not when quiet and it succeeded, never when
    silent), and returns (exit code, output)."""
    print(f"$ {' '.join(cmd)}")
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = p.stdout.strip()
    if out and not silent and not (quiet and p.returncode == 0):
        print("  " + out.replace("\n", "\n  "))
    if expect_ok and p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}")
    return p.returncode, p.stdout


def check_rules():
    run([PROMTOOL, "check", "rules", RULES])
    tests = sorted(glob.glob(os.path.join(HERE, "*.test.yml")))
    if not tests:
        fail("no *.test.yml beside the rules")
        return
    run([PROMTOOL, "test", "rules", *tests], cwd=HERE)

    # What the rules say, and what the tests expect to fire.
    rules = [r for g in yaml.safe_load(open(RULES))["groups"] for r in g["rules"]]
    alerts = {r["alert"]: r for r in rules}
    firing = []  # (alertname, labels) of every alert some test expects to fire
    for t in tests:
        for case in yaml.safe_load(open(t))["tests"]:
            for a in case.get("alert_rule_test", []):
                for e in a.get("exp_alerts") or []:
                    firing.append((a["alertname"], e.get("exp_labels", {})))
                    if a["alertname"] not in alerts:
                        fail(f"{t}: tests an alert the rules do not have: {a['alertname']}")
    for name, rule in alerts.items():
        if not any(n == name for n, _ in firing):
            fail(f"no test expects {name} to fire")
        ann = rule.get("annotations", {})
        if not ann.get("summary") or not ann.get("description"):
            fail(f"{name} lacks a summary or a description")
        if "debugtop_findings" in rule["expr"]:
            if not rule["expr"].rstrip().endswith("> 0"):
                fail(f"{name}: an expression on debugtop_findings must end in `> 0`")
            if "severity" in rule.get("labels", {}):
                fail(f"{name}: severity must come from the series, not the rule")
        elif rule.get("labels", {}).get("severity") not in ("critical", "warning"):
            fail(f"{name}: needs a severity label (critical or warning)")
    for kind, sev in PAIRS:
        if not any(l.get("kind") == kind and l.get("severity") == sev for _, l in firing):
            fail(f"no test fires an alert for kind={kind} severity={sev}")
    print(f"coverage: {len(alerts)} alerts and {len(PAIRS)} (kind, severity) pairs each fire in a test")


# Three pods as the Kubernetes API would describe them: debugtop's, debugtop's with scraping
# turned off, and another app's that asks to be scraped.
FAKE_PODS = [
    {"targets": ["10.1.0.7:9847"], "labels": {
        "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
        "__meta_kubernetes_pod_annotation_prometheus_io_port": "9847",
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "debugtop-exporter",
        "__meta_kubernetes_pod_node_name": "node-a",
        "__meta_kubernetes_pod_name": "debugtop-exporter-x7k2p"}},
    {"targets": ["10.1.0.8:9847"], "labels": {
        "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "false",
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "debugtop-exporter",
        "__meta_kubernetes_pod_node_name": "node-b"}},
    {"targets": ["10.1.0.9:8080"], "labels": {
        "__meta_kubernetes_pod_annotation_prometheus_io_scrape": "true",
        "__meta_kubernetes_pod_annotation_prometheus_io_port": "8080",
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "something-else",
        "__meta_kubernetes_pod_node_name": "node-a"}},
]


def check_prometheus_config(tmp):
    code, out = run([PROMTOOL, "check", "config", PROM_CONFIG], expect_ok=False, silent=True)
    config = yaml.safe_load(open(PROM_CONFIG))
    no_k8s = code != 0 and "field kubernetes_sd_configs not found" in out
    if code != 0 and not no_k8s:
        print("  " + out.strip().replace("\n", "\n  "))
        fail(f"promtool check config {PROM_CONFIG} failed")
        return
    if code == 0:
        print("  " + out.strip().replace("\n", "\n  "))
    if no_k8s:
        print("  this promtool is built without Kubernetes discovery (as Debian's is) and rejects\n"
              "  kubernetes_sd_configs; the rest of the file is checked with static targets in its place")
    # The same config with the Kubernetes job's discovery replaced by the fake pods, beside a
    # copy of the rules (the config names them relatively).
    jobs = {j["job_name"]: j for j in config["scrape_configs"]}
    if K8S_JOB not in jobs:
        fail(f"prometheus.example.yml has no job {K8S_JOB}")
        return
    k8s = jobs[K8S_JOB]
    sd = k8s.get("kubernetes_sd_configs", [])
    if not (len(sd) == 1 and sd[0].get("role") == "pod"
            and sd[0].get("namespaces", {}).get("names") == ["debugtop"]):
        fail(f"{K8S_JOB} must discover pods (role: pod) in the debugtop namespace only")
    k8s.pop("kubernetes_sd_configs", None)
    k8s["static_configs"] = FAKE_PODS
    for rf in config.get("rule_files", []):
        shutil.copy(os.path.join(HERE, rf), os.path.join(tmp, rf))
    sim = os.path.join(tmp, "prometheus.simulated.yml")
    with open(sim, "w") as f:
        yaml.safe_dump(config, f, sort_keys=False)
    if no_k8s:
        run([PROMTOOL, "check", "config", sim])
    code, out = run([PROMTOOL, "check", "service-discovery", "--timeout=5s", sim, K8S_JOB],
                    quiet=True)
    if code != 0:
        return
    targets = [t["labels"] for t in json.loads(out) if t["labels"]]
    want = {"__address__": "10.1.0.7:9847", "instance": "node-a", "node": "node-a",
            "job": "debugtop", "__metrics_path__": "/metrics"}
    if len(targets) != 1 or any(targets[0].get(k) != v for k, v in want.items()):
        fail(f"the Kubernetes job should keep only debugtop's annotated pod as {want}, got {targets}")
    else:
        print("  the Kubernetes job keeps only debugtop's annotated pod: "
              + ", ".join(f"{k}={targets[0][k]}" for k in want))


def check_alertmanager():
    run([AMTOOL, "check-config", AM_CONFIG])
    for labels, receiver in [
        (["alertname=DebugtopLeakedWorker", "severity=critical", "kind=leaked-worker"], "debugtop-pager"),
        (["alertname=DebugtopFindingWarning", "severity=warning", "kind=zombie"], "debugtop-chat"),
        (["alertname=DebugtopExporterDown", "severity=warning"], "debugtop-chat"),
        (["alertname=SomethingElse", "severity=critical"], "default"),
    ]:
        run([AMTOOL, "config", "routes", "test", f"--config.file={AM_CONFIG}",
             f"--verify.receivers={receiver}", *labels])


def main():
    for tool in (PROMTOOL, AMTOOL):
        if shutil.which(tool) is None:
            print(f"FAIL: {tool} not found (Debian: apt-get install prometheus prometheus-alertmanager)")
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        check_rules()
        check_prometheus_config(tmp)
        check_alertmanager()
    if failures:
        print(f"\n{len(failures)} check(s) failed")
        return 1
    print("\nall Prometheus and Alertmanager checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
