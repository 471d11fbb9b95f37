#!/usr/bin/env bash
# The Windows build, cross-made here: the app (tauri build --no-bundle) and debugtop-cli for
# x86_64-pc-windows-gnu, release, and two ways to ship them in dist/:
# - debugtop-<version>-setup-x86_64.exe, the installer: our own NSIS script
#   (scripts/windows/debugtop.nsi) built offline by Debian's makensis (3.08). Not Tauri's NSIS
#   bundling: its bundler fetches its NSIS plugin (nsis_tauri_utils.dll) from GitHub at bundle
#   time, which this machine cannot reach (measured: "failed to lookup address information").
#   crates/debugtop-cli/tests/installer.rs builds the same script and runs it under Wine.
# - debugtop-<version>-windows-x86_64.zip, the same three files for those who unpack by hand.
# WebView2Loader.dll goes beside the app (a GNU-toolchain Tauri app loads it from there). The
# app cannot be opened here (Wine has no WebView2 runtime): it is built, not run; its CLI is
# run by make test.
set -euo pipefail
cd "$(dirname "$0")/.."
target=x86_64-pc-windows-gnu
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
(cd src-tauri && ../ui/node_modules/.bin/tauri build --target "$target" --no-bundle)
cargo build --release -p debugtop-cli --target "$target"
out="dist/debugtop-$version-windows-x86_64"
rm -rf "$out" "$out.zip"
mkdir -p "$out"
cp "target/$target/release/debugtop.exe" "target/$target/release/debugtop-cli.exe" \
   "target/$target/release/WebView2Loader.dll" "$out/"
cat > "$out/README.txt" <<TXT
debugtop $version for Windows 10 and 11 (x86_64)

debugtop.exe      the app (needs the WebView2 runtime, part of Windows 10 21H2+ and 11)
debugtop-cli.exe  the same engine without a window: snapshot, audit, watch --json, kill
WebView2Loader.dll  loaded by debugtop.exe from this folder

From another machine, debugtop reaches this one with a target: ssh:user@host --cli
C:\\path\\to\\debugtop-cli.exe (Windows' OpenSSH server).
TXT
(cd dist && zip -qr "$(basename "$out").zip" "$(basename "$out")")
setup="dist/debugtop-$version-setup-x86_64.exe"
makensis -V2 -WX -DVERSION="$version" -DSOURCE="$PWD/$out" -DOUTFILE="$PWD/$setup" \
  scripts/windows/debugtop.nsi
ls -l "$out.zip" "$setup"
