#!/usr/bin/env bash
# `make image`: debugtop's exporter as a container image, built offline with nothing pulled: a
# static debugtop-cli (musl) on an empty base, written as a tarball that `docker load` and
# `ctr images import` read:
#
#   dist/debugtop-exporter-<version>.tar     tagged debugtop-exporter:<version>
#
# Load it where it runs:
#   docker load -i dist/debugtop-exporter-0.1.0.tar
#   sudo ctr -n k8s.io images import dist/debugtop-exporter-0.1.0.tar     (a containerd node)
#
# Why static: the image holds /debugtop-cli and an empty /tmp, nothing else (no libc, no shell,
# no /etc/passwd), so the binary must need nothing from it.
#
# DEBUGTOP_IMAGE_BINARY=PATH skips the build and packs PATH instead (any static x86-64
# executable: tests use a tiny one); DEBUGTOP_IMAGE_OUT=DIR writes the tarball there instead of
# dist/. SOURCE_DATE_EPOCH dates every entry (default 0): the same binary gives the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
out=${DEBUGTOP_IMAGE_OUT:-dist}
version=$(python3 scripts/image.py --print-version)

if [ -n "${DEBUGTOP_IMAGE_BINARY:-}" ]; then
  binary=$DEBUGTOP_IMAGE_BINARY
  echo "image: packing $binary (DEBUGTOP_IMAGE_BINARY), not building"
else
  binary=target/$target/release/debugtop-cli
  # The musl standard library is a rustup component: the one download this needs, once.
  if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
    echo "image: the Rust target $target is not installed; run once (it downloads the musl" >&2
    echo "       standard library): rustup target add $target" >&2
    exit 2
  fi
  # mimalloc is C: compile it against musl too (Debian: apt-get install musl-tools).
  if ! command -v musl-gcc >/dev/null; then
    echo "image: musl-gcc not found (Debian: apt-get install musl-tools)" >&2
    exit 2
  fi
  export CC_x86_64_unknown_linux_musl=musl-gcc
  echo "image: cargo build --release --target $target -p debugtop-cli (a release build: minutes)"
  ${CARGO:-cargo} build --release --target "$target" -p debugtop-cli
fi

revision=$(git rev-parse HEAD 2>/dev/null || true)
python3 scripts/image.py --binary "$binary" --out "$out" --revision "$revision"
echo "image: load it with: docker load -i $out/debugtop-exporter-$version.tar"
