#!/usr/bin/env python3
"""Writes debugtop's exporter image as a tarball `docker load` reads, with nothing pulled:
one layer holding a static debugtop-cli at /debugtop-cli and an empty /tmp, on no base at all.

    scripts/image.py --binary target/x86_64-unknown-linux-musl/release/debugtop-cli [--out dist]
        -> dist/debugtop-exporter-<version>.tar, tagged debugtop-exporter:<version>
    scripts/image.py --check dist/debugtop-exporter-<version>.tar [--binary B]
        -> checks a tarball's structure and digests (and that it holds B, if given)

The version is the workspace's (`[workspace.package] version` in Cargo.toml). Only the
standard library is used. The same binary gives the same tarball, byte for byte: entries are
sorted, owned by 0:0 with no user names, and dated SOURCE_DATE_EPOCH (default 0, 1970).

The layout is what `docker save` writes since Docker 25, which is also an OCI image layout:
    oci-layout, index.json                   OCI: `ctr images import`, skopeo, podman
    manifest.json                            Docker: `docker load` (every version since 1.10)
    blobs/sha256/<hex>                       the layer (an uncompressed tar), the config, the
                                             OCI manifest; each named by its content's sha256
The config's rootfs.diff_ids is the sha256 of the uncompressed layer, as Docker requires.
"""

import argparse
import datetime
import hashlib
import io
import json
import os
import struct
import sys
import tarfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "debugtop-exporter"
PORT = 9847
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"


def workspace():
    with open(os.path.join(ROOT, "Cargo.toml"), "rb") as f:
        return tomllib.load(f)["workspace"]["package"]


def epoch():
    return int(os.environ.get("SOURCE_DATE_EPOCH", "0"))


def rfc3339(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def canonical(obj):
    """JSON with sorted keys and no spaces: the same object always gives the same bytes."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def elf_is_static(data):
    """(ok, why): an x86-64 ELF executable with no program interpreter (PT_INTERP), i.e. one
    that runs on an empty image with no dynamic loader and no libc."""
    if data[:4] != b"\x7fELF":
        return False, "not an ELF file"
    if data[4] != 2 or data[5] != 1:
        return False, "not a 64-bit little-endian ELF file"
    e_type, e_machine = struct.unpack_from("<HH", data, 16)
    if e_machine != 62:
        return False, f"not x86-64 (e_machine {e_machine})"
    if e_type not in (2, 3):  # ET_EXEC, or ET_DYN for a static-pie
        return False, f"not an executable (e_type {e_type})"
    e_phoff = struct.unpack_from("<Q", data, 32)[0]
    e_phentsize, e_phnum = struct.unpack_from("<HH", data, 54)
    for i in range(e_phnum):
        p_type = struct.unpack_from("<I", data, e_phoff + i * e_phentsize)[0]
        if p_type == 3:  # PT_INTERP: needs a dynamic loader the empty image does not have
            return False, "dynamically linked (it names a program interpreter)"
    return True, "static x86-64 executable"


def tarinfo(name, kind, mode, size=0):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = mode
    ti.size = size
    ti.mtime = epoch()
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def layer_tar(binary):
    """The one layer: /debugtop-cli (0755) and an empty /tmp (1777, as every /tmp), sorted."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        t.addfile(tarinfo("debugtop-cli", tarfile.REGTYPE, 0o755, len(binary)), io.BytesIO(binary))
        t.addfile(tarinfo("tmp/", tarfile.DIRTYPE, 0o1777))
    return buf.getvalue()


def build(binary_path, out_dir, revision):
    pkg = workspace()
    version = pkg["version"]
    with open(binary_path, "rb") as f:
        binary = f.read()
    ok, why = elf_is_static(binary)
    if not ok:
        sys.exit(f"image.py: {binary_path}: {why}; the image has no libc: build with "
                 "--target x86_64-unknown-linux-musl")

    layer = layer_tar(binary)
    layer_hex = sha256(layer)
    created = rfc3339(epoch())
    labels = {
        "org.opencontainers.image.title": NAME,
        "org.opencontainers.image.description":
            "debugtop's Prometheus exporter: leaked MCP debug workers, adapters and servers",
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.licenses": pkg.get("license", ""),
        "org.opencontainers.image.source": pkg.get("repository", ""),
        "org.opencontainers.image.created": created,
    }
    if revision:
        labels["org.opencontainers.image.revision"] = revision
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "Entrypoint": ["/debugtop-cli"],
            "Cmd": ["serve", "--listen", f"0.0.0.0:{PORT}"],
            "ExposedPorts": {f"{PORT}/tcp": {}},
            "Labels": labels,
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_hex}"]},
        "history": [{"created": created,
                     "created_by": f"scripts/image.py: /debugtop-cli {version} and an empty /tmp"}],
    }
    config_b = canonical(config)
    config_hex = sha256(config_b)
    manifest = {
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": {"mediaType": OCI_CONFIG, "digest": f"sha256:{config_hex}", "size": len(config_b)},
        "layers": [{"mediaType": OCI_LAYER, "digest": f"sha256:{layer_hex}", "size": len(layer)}],
    }
    manifest_b = canonical(manifest)
    manifest_hex = sha256(manifest_b)
    tag = f"{NAME}:{version}"
    index = {
        "schemaVersion": 2,
        "mediaType": OCI_INDEX,
        "manifests": [{
            "mediaType": OCI_MANIFEST,
            "digest": f"sha256:{manifest_hex}",
            "size": len(manifest_b),
            "annotations": {
                # containerd (`ctr images import`) names the image by this; Kubernetes looks
                # "debugtop-exporter:0.1.0" up as docker.io/library/debugtop-exporter:0.1.0.
                "io.containerd.image.name": f"docker.io/library/{tag}",
                "org.opencontainers.image.ref.name": version,
            },
        }],
    }
    docker_manifest = [{
        "Config": f"blobs/sha256/{config_hex}",
        "RepoTags": [tag],
        "Layers": [f"blobs/sha256/{layer_hex}"],
    }]
    files = {
        f"blobs/sha256/{config_hex}": config_b,
        f"blobs/sha256/{layer_hex}": layer,
        f"blobs/sha256/{manifest_hex}": manifest_b,
        "index.json": canonical(index),
        "manifest.json": canonical(docker_manifest),
        "oci-layout": canonical({"imageLayoutVersion": "1.0.0"}),
    }

    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, f"{NAME}-{version}.tar")
    tmp = out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.USTAR_FORMAT) as t:
        for d in ("blobs/", "blobs/sha256/"):
            t.addfile(tarinfo(d, tarfile.DIRTYPE, 0o755))
        for name in sorted(files):
            t.addfile(tarinfo(name, tarfile.REGTYPE, 0o644, len(files[name])), io.BytesIO(files[name]))
    os.replace(tmp, out)
    print(f"{out}: {tag}, {len(binary):,}-byte /debugtop-cli, image id sha256:{config_hex}")
    return out


class Check:
    def __init__(self):
        self.errors = []

    def __call__(self, cond, msg):
        if not cond:
            self.errors.append(msg)
            print(f"FAIL: {msg}")
        return cond


def check(path, binary_path=None):
    """Checks a tarball written by build(): structure, digests, config, the layer's contents."""
    ok = Check()
    version = workspace()["version"]
    tag = f"{NAME}:{version}"
    with tarfile.open(path) as t:
        members = t.getmembers()
        blobs = {m.name: t.extractfile(m).read() for m in members if m.isfile()}
    names = [m.name for m in members]
    ok(names == sorted(names), "entries are not sorted")
    ok(all(m.mtime == epoch() and m.uid == 0 and m.gid == 0 and not m.uname and not m.gname
           for m in members), "every entry must be dated SOURCE_DATE_EPOCH and owned by 0:0")
    for name in ("manifest.json", "index.json", "oci-layout"):
        if not ok(name in blobs, f"{name} missing"):
            return ok.errors
    for name, data in blobs.items():
        if name.startswith("blobs/sha256/"):
            ok(sha256(data) == name.rsplit("/", 1)[1], f"{name}: content does not match its name")

    # Docker's manifest.json.
    dm = json.loads(blobs["manifest.json"])
    if not ok(len(dm) == 1, "manifest.json must list one image"):
        return ok.errors
    dm = dm[0]
    ok(dm.get("RepoTags") == [tag], f"manifest.json RepoTags must be [{tag}], not {dm.get('RepoTags')}")
    cfg_b = blobs.get(dm.get("Config"))
    if not ok(cfg_b is not None, f"manifest.json Config {dm.get('Config')} is not in the tarball"):
        return ok.errors
    cfg = json.loads(cfg_b)
    layers = dm.get("Layers", [])
    if not ok(len(layers) == 1 and layers[0] in blobs, f"manifest.json Layers {layers} must name one layer in the tarball"):
        return ok.errors
    layer = blobs[layers[0]]
    ok(cfg.get("rootfs", {}).get("diff_ids") == [f"sha256:{sha256(layer)}"],
       "config rootfs.diff_ids must be the sha256 of the uncompressed layer")

    # The OCI index and manifest describe the same config and layer.
    idx = json.loads(blobs["index.json"])
    ms = idx.get("manifests", [])
    if ok(len(ms) == 1, "index.json must list one manifest"):
        m_b = blobs.get("blobs/sha256/" + ms[0]["digest"].split(":", 1)[1])
        if ok(m_b is not None and len(m_b) == ms[0]["size"], "index.json's manifest is missing or of another size"):
            om = json.loads(m_b)
            ok(om["config"]["digest"] == "sha256:" + dm["Config"].rsplit("/", 1)[1]
               and om["config"]["size"] == len(cfg_b), "the OCI manifest's config differs from manifest.json's")
            ok([l["digest"] for l in om["layers"]] == [f"sha256:{sha256(layer)}"]
               and [l["size"] for l in om["layers"]] == [len(layer)], "the OCI manifest's layer differs from manifest.json's")
            ok(om["layers"][0]["mediaType"] == OCI_LAYER, "the layer must be an uncompressed tar")
        ok(ms[0].get("annotations", {}).get("io.containerd.image.name") == f"docker.io/library/{tag}",
           "index.json must name the image for containerd")

    # The config.
    c = cfg.get("config", {})
    ok(cfg.get("architecture") == "amd64" and cfg.get("os") == "linux", "config must be linux/amd64")
    ok(c.get("Entrypoint") == ["/debugtop-cli"], "Entrypoint must be [/debugtop-cli]")
    ok(c.get("Cmd") == ["serve", "--listen", f"0.0.0.0:{PORT}"], f"Cmd must be serve --listen 0.0.0.0:{PORT}")
    ok(c.get("ExposedPorts") == {f"{PORT}/tcp": {}}, f"ExposedPorts must be {PORT}/tcp")
    lbl = c.get("Labels", {})
    for k in ("title", "version", "source", "licenses", "created"):
        ok(lbl.get(f"org.opencontainers.image.{k}"), f"label org.opencontainers.image.{k} missing")
    ok(lbl.get("org.opencontainers.image.version") == version, f"the version label must be {version}")

    # The layer: /debugtop-cli and an empty /tmp, nothing else (no /etc/passwd, no shell).
    with tarfile.open(fileobj=io.BytesIO(layer)) as lt:
        entries = {m.name: m for m in lt.getmembers()}
        ok(sorted(entries) == ["debugtop-cli", "tmp"] or sorted(entries) == ["debugtop-cli", "tmp/"],
           f"the layer must hold exactly debugtop-cli and tmp/, not {sorted(entries)}")
        cli = entries.get("debugtop-cli")
        if ok(cli is not None and cli.isreg(), "the layer's debugtop-cli must be a regular file"):
            ok(cli.mode == 0o755 and cli.uid == 0 and cli.gid == 0, "debugtop-cli must be mode 0755, owned by 0:0")
            data = lt.extractfile(cli).read()
            static, why = elf_is_static(data)
            ok(static, f"debugtop-cli: {why}")
            if binary_path:
                with open(binary_path, "rb") as f:
                    ok(f.read() == data, f"debugtop-cli in the layer is not {binary_path}")
        tmpd = entries.get("tmp") or entries.get("tmp/")
        ok(tmpd is not None and tmpd.isdir(), "the layer's tmp must be a directory")
    if not ok.errors:
        print(f"ok: {path}: {tag}, layer sha256:{sha256(layer)[:12]}…, config and digests consistent")
    return ok.errors


def main():
    ap = argparse.ArgumentParser(description="debugtop's exporter image, offline")
    ap.add_argument("--binary", help="a static debugtop-cli")
    ap.add_argument("--out", default=os.path.join(ROOT, "dist"), help="folder for the tarball (default dist/)")
    ap.add_argument("--revision", default="", help="the source revision, for org.opencontainers.image.revision")
    ap.add_argument("--check", metavar="TARBALL", help="check a tarball instead of writing one")
    ap.add_argument("--print-version", action="store_true", help="print the workspace's version and exit")
    args = ap.parse_args()
    if args.print_version:
        print(workspace()["version"])
        return 0
    if args.check:
        return 1 if check(args.check, args.binary) else 0
    if not args.binary:
        ap.error("--binary is needed to write an image")
    out = build(args.binary, args.out, args.revision)
    return 1 if check(out, args.binary) else 0


if __name__ == "__main__":
    sys.exit(main())
