//! The benchmark still runs: `debugtop-bench --smoke`, every phase at a tiny size, as part of
//! the test suite. A test rather than a `cargo run` after it: the suite's build already makes
//! this binary with the workspace's features, where `cargo run -p debugtop-bench` built the
//! engine a second time with this crate's alone (47 s of `make test` on a fresh machine). Its
//! figures are printed, not judged (BENCHMARKS.md's come from `make bench`); it runs alone
//! (`.config/nextest.toml`): its stand-in orphans name a gone owner, which a real server's
//! reaper, started by a test beside it, would end.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Command;

#[test]
fn the_benchmark_runs_every_phase_at_smoke_size() {
    let out = Command::new(env!("CARGO_BIN_EXE_debugtop-bench"))
        .arg("--smoke")
        .output()
        .expect("debugtop-bench");
    let said = String::from_utf8_lossy(&out.stdout);
    println!("{said}");
    assert!(
        out.status.success(),
        "debugtop-bench --smoke failed:\n{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for phase in [
        "== N = 50 spawned",
        "incident tick, 50 orphans",
        "== exporter:",
        "serve scraped every second",
    ] {
        assert!(said.contains(phase), "no {phase:?} in:\n{said}");
    }
}
