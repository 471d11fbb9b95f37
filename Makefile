# debugtop — the two commands that matter: `make run` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
APP := target/debug/debugtop

ifeq (soak-app,$(firstword $(MAKECMDGOALS)))
# `make soak-app 30m`: the second word is the duration.
SOAK_APP_DURATION := $(or $(word 2,$(MAKECMDGOALS)),30m)
$(eval $(SOAK_APP_DURATION):;@:)
endif
SOAK_APP_DURATION ?= 30m

ifeq (soak,$(firstword $(MAKECMDGOALS)))
# `make soak 5m`: the second word is the duration, not a target.
SOAK_DURATION := $(or $(word 2,$(MAKECMDGOALS)),1h)
$(eval $(SOAK_DURATION):;@:)
endif
SOAK_DURATION ?= 1h
FUZZ_SECONDS ?= 60

.PHONY: run test test-deploy test-ui bench bench-run bench-window soak-app bench-smoke fuzz fuzz-smoke soak dist dist-windows dist-check image demo deps-run deps-test ui app lint fmt test-rust check-bindings clean

## run: install what is missing, build, open the app on the local debug servers.
run: deps-run ui
	$(CARGO) build -p debugtop
	@if [ -z "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  echo "run: no display; starting the app under Xvfb (invisible). Set DISPLAY to see it."; \
	  xvfb-run -a -s "-screen 0 1280x800x24" ./$(APP); \
	else ./$(APP); fi

## test: install what is missing, then lints and every test suite.
test: deps-test ui lint test-deploy test-rust test-ui check-bindings
	@echo "make test: all suites passed"

## test-deploy: the deployment files offline — the alert rules (promtool check and test rules),
## the example Prometheus and Alertmanager configs, the systemd units (systemd-analyze verify),
## the Kubernetes manifests (Kubernetes' own schemas, kubernetes-validate) and the image's
## packing (deploy/check.sh). The whole path with the real Prometheus and Alertmanager, and the
## image under a real dockerd, are Rust tests (crates/debugtop-cli/tests/{fleet_alerts,image}.rs).
test-deploy:
	deploy/check.sh

## demo: a real mcp-debugger with healthy sessions, a leaked adapter chain and an orphan; then the app.
demo: deps-test ui
	$(CARGO) build -p debugtop
	scripts/demo.sh

deps-run:
	@scripts/deps.sh run

deps-test:
	@scripts/deps.sh test

ui:
	cd ui && npm run build

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p debugtop-cli -p debugtop-core --features debugtop-core/windows-test-drivers \
	  --target x86_64-pc-windows-gnu -- -D warnings
	cd ui && npm run check

# The tests that run two at a time with nothing else beside them (.config/nextest.toml,
# profiles `hosts-pairs` and `wine-pairs`): the MCP hosts with each other, then the Windows CLI
# under Wine with itself. The installer's tests stay alone in the first run: paired, its
# machine-wide install and uninstall failed twice in four runs (a Windows program crashed under
# Wine: WineDbg's key appeared; once the Apps-list entry was not found), never alone.
PAIRED_HOSTS := binary_id(debugtop-cli::hosts)
PAIRED_WINE := binary_id(debugtop-cli::windows)

# The Windows CLI and the kill's identity driver `replaced_pid` (debug cross-builds) are what
# crates/debugtop-cli/tests/windows.rs runs under Wine; the static CLI (musl) is what
# crates/debugtop-cli/tests/image.rs packs into the exporter's image.
# Both CLIs in one cargo run: each target's serial tail overlaps the other's.
# Then every test but the paired ones (the default profile), then those two at a time; the
# three runs all run, and any failure fails the target (an interrupt stops them all: nextest
# ends a cancelled run with an exit code, not by the signal, so the shell must be told).
test-rust:
	CC_x86_64_unknown_linux_musl=musl-gcc $(CARGO) build -p debugtop-cli \
	  -p debugtop-core --features debugtop-core/windows-test-drivers \
	  --target x86_64-pc-windows-gnu --target x86_64-unknown-linux-musl
	trap 'exit 130' INT TERM; failed=0; \
	$(CARGO) nextest run --workspace -E 'not ($(PAIRED_HOSTS) | $(PAIRED_WINE))' || failed=1; \
	$(CARGO) nextest run --workspace -P hosts-pairs -E '$(PAIRED_HOSTS)' || failed=1; \
	$(CARGO) nextest run --workspace -P wine-pairs -E '$(PAIRED_WINE)' || failed=1; \
	exit $$failed

# ts-rs regenerates ui/src/lib/bindings during `cargo test`; a diff means someone changed the
# Rust model without committing the generated types.
check-bindings:
	@if git rev-parse --git-dir >/dev/null 2>&1; then \
	  git diff --exit-code --stat -- ui/src/lib/bindings || { echo "check-bindings: generated TypeScript types are stale: commit ui/src/lib/bindings"; exit 1; }; \
	  test -z "$$(git ls-files --others --exclude-standard ui/src/lib/bindings)" || { echo "check-bindings: new generated types are not committed"; exit 1; }; \
	fi

fmt:
	$(CARGO) fmt --all

clean:
	$(CARGO) clean
	rm -rf ui/dist

## test-ui: the frontend in headless Chromium (IPC mocked), then the real window under Xvfb.
# The window tests drive the app binary `cargo test --workspace` builds (src-tauri/tests):
# after test-rust this is a no-op, where `cargo build -p debugtop` would compile the app again
# with other features.
test-ui: ui
	cd ui && timeout -s INT 300 npm test
	$(CARGO) test --workspace --no-run
	timeout -s INT 300 xvfb-run -a -s "-screen 0 1280x800x24" tests/.venv/bin/python -m pytest -q tests/ui

## bench: the full benchmark (release build; a few minutes; see BENCHMARKS.md).
bench: deps-test
	$(CARGO) build --release -p debugtop-bench -p debugtop-cli
	./target/release/debugtop-bench

## bench-run: what `debugtop-cli run` costs (release): 5,000 short processes bare and under
## `run`, side by side; `run`'s own CPU while a quiet command runs (BENCHMARKS.md).
bench-run:
	$(CARGO) build --release -p debugtop-cli
	scripts/bench-run.sh target/release/debugtop-cli

## bench-window: what the window costs (release app under Xvfb): the demo, then 5,000 orphans;
## CPU and memory of the app and every WebKit process; then the real-window test's 5,000-row
## frame against the release app (BENCHMARKS.md). Ten minutes or more to build.
bench-window: deps-test ui
	$(CARGO) build --release -p debugtop
	xvfb-run -a -s "-screen 0 1280x800x24" python3 scripts/window-cost.py
	DEBUGTOP_APP=$(CURDIR)/target/release/debugtop timeout -s INT 300 xvfb-run -a -s "-screen 0 1280x800x24" \
	  tests/.venv/bin/python -m pytest -q tests/ui -k 5000_rows
	@cat target/ui-real-window-cost.txt

## soak-app: the release app with the demo for a while (default 30m; `make soak-app 10m`):
## resident memory, descriptors and CPU of the app and every WebKit process, every 30 s.
soak-app: deps-test ui
	$(CARGO) build --release -p debugtop
	xvfb-run -a -s "-screen 0 1280x800x24" python3 scripts/window-cost.py --soak $$(( $$(echo $(SOAK_APP_DURATION) | sed 's/m$$//') * 60 ))

## fuzz: mutation fuzzing of every parser of outside input and of redaction, FUZZ_SECONDS each
## (default 60; stable Rust, release build). A finding is saved in target/fuzz-found/.
fuzz:
	$(CARGO) run --release -q -p debugtop-fuzz -- --seconds $(FUZZ_SECONDS)

## fuzz-smoke: two seconds of each target (make test runs the same as a test:
## crates/debugtop-fuzz/tests/smoke.rs).
fuzz-smoke:
	$(CARGO) run -q -p debugtop-fuzz -- --seconds 2

## soak [DURATION]: the real watch at 1 Hz for DURATION (default 1h; `make soak 5m`) next to a
## real server, sessions opening and closing, 50 process spawns and exits a second; fails if
## RSS grows over 5 % after the warm-up or file descriptors grow.
soak: deps-test
	$(CARGO) build --release -p debugtop-cli
	DEBUGTOP_SOAK=$(SOAK_DURATION) DEBUGTOP_CLI=$(CURDIR)/target/release/debugtop-cli \
	  $(CARGO) test --release -p debugtop-e2e --test soak -- --ignored --nocapture

## dist: the app as a .deb (tauri build --bundles deb, offline) and a release debugtop-cli to
## copy to a remote box, both in dist/ (a release build: ten minutes or more on two cores).
dist: deps-run ui
	cd src-tauri && ../ui/node_modules/.bin/tauri build --bundles deb
	$(CARGO) build --release -p debugtop-cli
	mkdir -p dist
	cp target/release/bundle/deb/*.deb target/release/debugtop-cli dist/
	@ls -l dist

## dist-windows: the app and debugtop-cli cross-built for Windows (x86_64-pc-windows-gnu,
## release), with WebView2Loader.dll, as an installer built by Debian's makensis
## (dist/debugtop-<version>-setup-x86_64.exe, scripts/windows/debugtop.nsi) and as a zip.
## A release cross-build of the app: ten minutes or more on two cores.
dist-windows: deps-test ui
	scripts/dist-windows.sh

## image: the exporter's container image, offline: a static debugtop-cli (musl, release) on an
## empty base, written as dist/debugtop-exporter-<version>.tar for `docker load` or
## `ctr -n k8s.io images import` (docs/fleet.md). Needs the x86_64-unknown-linux-musl target.
image:
	scripts/image.sh

## dist-check: installs dist/*.deb (apt install), opens the installed app under Xvfb and saves
## a screenshot to dist/installed.png. Not part of make test (the release build alone would
## take a third of CI's budget).
dist-check: dist deps-test
	scripts/dist-check.sh

## bench-smoke: a tiny pass that proves the benchmark still runs (make test runs the same as a
## test: crates/debugtop-bench/tests/smoke.rs).
bench-smoke:
	$(CARGO) run -q -p debugtop-bench -- --smoke
