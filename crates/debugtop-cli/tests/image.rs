//! The exporter's container image, for real: the static `debugtop-cli` (musl) `make test` builds,
//! packed by `scripts/image.py` exactly as `make image` packs the release one (an empty base,
//! nothing pulled), loaded into the tests' own dockerd and run as the DaemonSet runs it — the
//! host's pid namespace, a read-only root, every capability dropped but the two reading every
//! process needs — while a real mcp-debugger server is SIGKILLed on the host: its `/metrics`
//! counts the orphaned workers and its `/api/findings` names this test's own. Needs root (its
//! own dockerd). Only the test's own processes are signalled.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use debugtop_e2e::dockerd::Dockerd;
use debugtop_e2e::mcp::{descendants_of, free_port, Client, Server};
use debugtop_e2e::prometheus::get;
use debugtop_e2e::Owned;

/// The static build `make test` makes (`cargo build --target x86_64-unknown-linux-musl -p
/// debugtop-cli`), refused when any source it is built from is newer (a stale image would test
/// yesterday's code).
fn static_cli() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let bin = root.join("target/x86_64-unknown-linux-musl/debug/debugtop-cli");
    if !bin.exists() {
        panic!(
            "{} is missing: run `make test` (it builds the static CLI: rustup target add \
             x86_64-unknown-linux-musl, Debian's musl-tools), or `cargo test -- --skip \
             the_image`",
            bin.display()
        );
    }
    debugtop_e2e::builds::assert_fresh(
        &bin,
        "run `make test` (or CC_x86_64_unknown_linux_musl=musl-gcc cargo build --target \
         x86_64-unknown-linux-musl -p debugtop-cli)",
    );
    bin
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_on_the_hosts_pids_names_a_leak_held_on_the_host() {
    let bin = static_cli();
    let packed = tempfile::tempdir().unwrap();
    let out = Command::new("python3")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/image.py"
        ))
        .arg("--binary")
        .arg(&bin)
        .arg("--out")
        .arg(packed.path())
        .output()
        .expect("python3");
    assert!(out.status.success(), "image.py: {out:?}");
    let tar = std::fs::read_dir(packed.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "tar"))
        .expect("the image tarball");
    let mut dockerd = Dockerd::start();
    let loaded = dockerd.docker(&["load", "-i", tar.to_str().unwrap()]);
    assert!(loaded.status.success(), "docker load: {loaded:?}");
    let tag = String::from_utf8_lossy(&loaded.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("Loaded image: ").map(str::to_owned))
        .expect("docker load names the image");

    // A real server with sessions running, then SIGKILLed: its workers are orphans.
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    // Three sessions, not one: the newest session's worker often ends by itself about 1.3 s
    // after its server's SIGKILL (docs/server-behaviour.md, Containers), so one session can
    // leave nothing to name (regression: CI saw every series at 0); the older ones spin on.
    // Regression: on a loaded machine a session was not started yet when the server was
    // killed, its worker went with it. The crash comes once every start succeeded and every
    // worker has its adapter.
    client.start_mock_sessions("image-orphan", 3).await;
    debugtop_e2e::wait_for(Duration::from_secs(60), || {
        (descendants_of(server.pid()).len() >= 6).then_some(())
    })
    .expect("the workers and their adapters");
    let chain: Vec<Owned> = descendants_of(server.pid())
        .into_iter()
        .map(|(pid, _)| Owned::adopt(pid))
        .collect();
    server.proc.signal(nix::sys::signal::Signal::SIGKILL);

    let port = free_port();
    dockerd.owns("exporter");
    let run = dockerd.docker(&[
        "run",
        "-d",
        "--name",
        "exporter",
        "--pid=host",
        "--network",
        "host",
        "--read-only",
        "--cap-drop",
        "ALL",
        "--cap-add",
        "SYS_PTRACE",
        "--cap-add",
        "DAC_READ_SEARCH",
        &tag,
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--interval",
        "500",
        "--grace",
        "2",
    ]);
    assert!(run.status.success(), "docker run: {run:?}");
    let url = format!("http://127.0.0.1:{port}/metrics");
    let series = r#"debugtop_findings{kind="orphaned-worker",severity="critical"} "#;
    let end = Instant::now() + Duration::from_secs(60);
    let mut last = String::new();
    let found = loop {
        if let Some(m) = get(&url) {
            let n: f64 = m
                .lines()
                .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
                .unwrap_or(0.0);
            if n >= 1.0 {
                break Some(n);
            }
            last = m;
        }
        if Instant::now() > end {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let logs = dockerd.docker(&["logs", "exporter"]);
    assert!(
        found.is_some(),
        "the image's /metrics never named the orphaned worker:\n{last}\nits log: {}",
        String::from_utf8_lossy(&logs.stderr)
    );
    // The series counts any orphan of the host: the finding must name this test's own.
    let ours: Vec<u32> = chain.iter().map(|o| o.pid).collect();
    let api = format!("http://127.0.0.1:{port}/api/findings");
    let named = debugtop_e2e::wait_for(Duration::from_secs(30), || {
        let body: serde_json::Value = serde_json::from_str(&get(&api)?).ok()?;
        body["findings"].as_array()?.iter().find_map(|f| {
            let pids = f["pids"].as_array()?;
            (f["kind"] == "orphaned-worker"
                && pids.iter().any(|p| {
                    p.as_u64()
                        .is_some_and(|p| ours.iter().any(|o| u64::from(*o) == p))
                }))
            .then(|| f.clone())
        })
    });
    assert!(
        named.is_some(),
        "no orphaned-worker finding of the image names this test's workers {ours:?}: {}",
        get(&api).unwrap_or_default()
    );
    drop(chain);
    drop(client);
}
