#!/usr/bin/env python3
"""Validates the Kubernetes manifests of this folder offline, and exits non-zero on any error.

    tests/.venv/bin/python deploy/kubernetes/validate.py [--version 1.30] [--version 1.37]

1. namespace.yaml, daemonset.yaml and service.yaml against Kubernetes' own API schemas, in
   strict mode (an unknown or misspelled field is an error), with `kubernetes-validate` (PyPI;
   it ships the schemas, nothing is fetched). By default against 1.30, the oldest version
   with the `appArmorProfile` field the DaemonSet uses, and the newest the package ships.
2. What the exporter needs of them, which no schema says: hostPID, a read-only root file
   system, no privilege escalation, exactly the capabilities SYS_PTRACE and DAC_READ_SEARCH,
   root, resources, the Prometheus annotations, probes on /healthz, the node's /tmp read-only,
   tolerating every taint, the image of this workspace's version; a Service and a PodMonitor
   that select the DaemonSet's pods and name its port; a namespace that allows hostPID.
3. podmonitor.yaml is the Prometheus Operator's custom resource, which has no schema here: it
   is parsed and checked by hand (item 2).
"""

import argparse
import os
import sys
import tomllib

import yaml
import kubernetes_validate
from kubernetes_validate import utils as kv_utils

HERE = os.path.dirname(os.path.abspath(__file__))
WORKSPACE = os.path.dirname(os.path.dirname(HERE))
CORE = ["namespace.yaml", "daemonset.yaml", "service.yaml"]
NAMESPACE = "debugtop"
PORT = 9847

errors = []


def error(msg):
    errors.append(msg)
    print(f"ERROR {msg}")


def check(cond, msg):
    if not cond:
        error(msg)
    return cond


def load(name):
    path = os.path.join(HERE, name)
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    if len(docs) != 1:
        error(f"{name}: expected one object, found {len(docs)}")
        return {}
    return docs[0]


def schema_check(name, obj, versions):
    for v in versions:
        try:
            got = kubernetes_validate.validate(obj, v, strict=True)
            print(f"ok   {name}: {obj['kind']}/{obj['metadata']['name']} is valid for Kubernetes {got} (strict)")
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path)
            error(f"{name}: not valid for Kubernetes {e.version}: {path}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError as e:
            error(f"{name}: {e.message}")
        except kv_utils.VersionNotSupportedError:
            error(f"kubernetes-validate {kubernetes_validate.__version__} has no schemas for {v}")


def workspace_version():
    with open(os.path.join(WORKSPACE, "Cargo.toml"), "rb") as f:
        return tomllib.load(f)["workspace"]["package"]["version"]


def check_namespace(ns):
    labels = ns.get("metadata", {}).get("labels", {})
    check(ns.get("metadata", {}).get("name") == NAMESPACE, f"namespace.yaml: the namespace must be {NAMESPACE}")
    check(labels.get("pod-security.kubernetes.io/enforce") == "privileged",
          "namespace.yaml: needs pod-security.kubernetes.io/enforce: privileged (Baseline forbids hostPID)")


def check_daemonset(ds):
    meta = ds.get("metadata", {})
    check(meta.get("namespace") == NAMESPACE, f"daemonset.yaml: namespace must be {NAMESPACE}")
    tmpl = ds["spec"]["template"]
    pod = tmpl["spec"]
    pod_labels = tmpl["metadata"].get("labels", {})
    sel = ds["spec"]["selector"]["matchLabels"]
    check(all(pod_labels.get(k) == v for k, v in sel.items()),
          "daemonset.yaml: the selector must match the pod template's labels")

    check(pod.get("hostPID") is True, "daemonset.yaml: hostPID must be true (it reads the node's processes)")
    check(pod.get("hostNetwork") in (None, False),
          "daemonset.yaml: hostNetwork is off by default (see the file's comment to turn it on)")
    check(pod.get("automountServiceAccountToken") is False,
          "daemonset.yaml: no service-account token (it never talks to the API)")
    psc = pod.get("securityContext", {})
    check(psc.get("runAsUser") == 0, "daemonset.yaml: runAsUser must be 0 (capabilities work only for root in a pod)")
    check(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
          "daemonset.yaml: seccompProfile must be RuntimeDefault")
    check({"operator": "Exists"} in pod.get("tolerations", []),
          "daemonset.yaml: must tolerate every taint (operator: Exists with no key)")

    ann = tmpl["metadata"].get("annotations", {})
    check(ann.get("prometheus.io/scrape") == "true", 'daemonset.yaml: pod annotation prometheus.io/scrape: "true" missing')
    check(ann.get("prometheus.io/port") == str(PORT), f'daemonset.yaml: pod annotation prometheus.io/port: "{PORT}" missing')

    containers = pod.get("containers", [])
    if not check(len(containers) == 1, "daemonset.yaml: expected one container"):
        return
    c = containers[0]
    version = workspace_version()
    check(c.get("image") == f"debugtop-exporter:{version}",
          f"daemonset.yaml: image must be debugtop-exporter:{version} (the workspace's version, as `make image` tags it)")
    check(meta.get("labels", {}).get("app.kubernetes.io/version") == version,
          f"daemonset.yaml: label app.kubernetes.io/version must be {version}")
    check(c.get("imagePullPolicy") == "IfNotPresent", "daemonset.yaml: imagePullPolicy must be IfNotPresent (loaded, not pulled)")
    check(c.get("args") == ["serve", "--listen", f"0.0.0.0:{PORT}"],
          f"daemonset.yaml: args must be serve --listen 0.0.0.0:{PORT}")
    ports = {p.get("name"): p for p in c.get("ports", [])}
    check(ports.get("metrics", {}).get("containerPort") == PORT,
          f"daemonset.yaml: container port {PORT} named metrics missing")

    sc = c.get("securityContext", {})
    check(sc.get("readOnlyRootFilesystem") is True, "daemonset.yaml: readOnlyRootFilesystem must be true")
    check(sc.get("allowPrivilegeEscalation") is False, "daemonset.yaml: allowPrivilegeEscalation must be false")
    check(sc.get("privileged") in (None, False), "daemonset.yaml: the container must not be privileged")
    caps = sc.get("capabilities", {})
    check(caps.get("drop") == ["ALL"], "daemonset.yaml: capabilities must drop ALL")
    check(sorted(caps.get("add", [])) == ["DAC_READ_SEARCH", "SYS_PTRACE"],
          f"daemonset.yaml: capabilities must add exactly SYS_PTRACE and DAC_READ_SEARCH, not {caps.get('add')}")

    res = c.get("resources", {})
    for kind in ("requests", "limits"):
        for r in ("cpu", "memory"):
            check(r in res.get(kind, {}), f"daemonset.yaml: resources.{kind}.{r} must be set")

    for probe in ("livenessProbe", "readinessProbe"):
        get = c.get(probe, {}).get("httpGet", {})
        check(get.get("path") == "/healthz" and get.get("port") in ("metrics", PORT),
              f"daemonset.yaml: {probe} must GET /healthz on the metrics port")

    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "spec.nodeName",
          "daemonset.yaml: NODE_NAME must come from spec.nodeName")

    vols = {v["name"]: v for v in pod.get("volumes", [])}
    mounts = [m for m in c.get("volumeMounts", []) if m.get("mountPath") == "/tmp"]
    if check(len(mounts) == 1, "daemonset.yaml: the node's /tmp must be mounted at /tmp"):
        m = mounts[0]
        check(m.get("readOnly") is True, "daemonset.yaml: /tmp must be mounted read-only")
        check(vols.get(m["name"], {}).get("hostPath", {}).get("path") == "/tmp",
              "daemonset.yaml: the /tmp mount must be the node's /tmp (hostPath)")
    for v in vols.values():
        if "hostPath" in v:
            check(any(m["name"] == v["name"] and m.get("readOnly") is True for m in c.get("volumeMounts", [])),
                  f"daemonset.yaml: hostPath volume {v['name']} must be mounted read-only")
    return pod_labels


def check_service(svc, pod_labels):
    check(svc.get("metadata", {}).get("namespace") == NAMESPACE, f"service.yaml: namespace must be {NAMESPACE}")
    spec = svc.get("spec", {})
    check(spec.get("clusterIP") == "None", "service.yaml: must be headless (clusterIP: None)")
    sel = spec.get("selector", {})
    check(sel and all(pod_labels.get(k) == v for k, v in sel.items()),
          "service.yaml: the selector must match the DaemonSet's pods")
    check(any(p.get("port") == PORT and p.get("targetPort") in ("metrics", PORT) for p in spec.get("ports", [])),
          f"service.yaml: must expose port {PORT} to the pods' metrics port")


def check_podmonitor(pm, pod_labels):
    check(pm.get("apiVersion") == "monitoring.coreos.com/v1" and pm.get("kind") == "PodMonitor",
          "podmonitor.yaml: must be a monitoring.coreos.com/v1 PodMonitor")
    check(pm.get("metadata", {}).get("namespace") == NAMESPACE, f"podmonitor.yaml: namespace must be {NAMESPACE}")
    spec = pm.get("spec", {})
    sel = spec.get("selector", {}).get("matchLabels", {})
    check(sel and all(pod_labels.get(k) == v for k, v in sel.items()),
          "podmonitor.yaml: the selector must match the DaemonSet's pods")
    check(spec.get("namespaceSelector", {}).get("matchNames") == [NAMESPACE],
          f"podmonitor.yaml: namespaceSelector must name {NAMESPACE}")
    eps = spec.get("podMetricsEndpoints", [])
    if check(len(eps) == 1, "podmonitor.yaml: expected one podMetricsEndpoint"):
        ep = eps[0]
        check(ep.get("port") == "metrics", "podmonitor.yaml: the endpoint must use the port named metrics")
        check(ep.get("path", "/metrics") == "/metrics", "podmonitor.yaml: the path must be /metrics")
        relabel = ep.get("relabelings", [])
        check({"targetLabel": "job", "replacement": "debugtop"} in relabel,
              'podmonitor.yaml: must set job="debugtop", as the rules expect')
        check(any(r.get("targetLabel") == "instance" and r.get("sourceLabels") == ["__meta_kubernetes_pod_node_name"]
                  for r in relabel),
              "podmonitor.yaml: must make the node's name the instance")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", action="append",
                    help="Kubernetes version to validate against (repeatable; default 1.30 and the newest shipped)")
    args = ap.parse_args()
    versions = args.version or ["1.30", kubernetes_validate.latest_version()]
    print(f"kubernetes-validate {kubernetes_validate.__version__}, Kubernetes {', '.join(versions)}")

    objs = {name: load(name) for name in CORE + ["podmonitor.yaml"]}
    for name in CORE:
        if objs[name]:
            schema_check(name, objs[name], versions)
    if objs["namespace.yaml"]:
        check_namespace(objs["namespace.yaml"])
    pod_labels = {}
    if objs["daemonset.yaml"]:
        pod_labels = check_daemonset(objs["daemonset.yaml"]) or {}
    if objs["service.yaml"]:
        check_service(objs["service.yaml"], pod_labels)
    if objs["podmonitor.yaml"]:
        check_podmonitor(objs["podmonitor.yaml"], pod_labels)

    if errors:
        print(f"\n{len(errors)} error(s)")
        return 1
    print("ok   the DaemonSet, Service, Namespace and PodMonitor say what the exporter needs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
