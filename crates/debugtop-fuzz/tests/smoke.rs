//! The fuzzer still runs and finds nothing in two seconds a target, as part of the test suite
//! (`make fuzz` runs it for minutes). A test rather than a `cargo run` after it: the suite's
//! build already makes this binary with the workspace's features, where `cargo run -p
//! debugtop-fuzz` built the engine a second time with this crate's alone.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Command;

#[test]
fn every_target_takes_two_seconds_of_mutations_and_finds_nothing() {
    let out = Command::new(env!("CARGO_BIN_EXE_debugtop-fuzz"))
        .args(["--seconds", "2"])
        .output()
        .expect("debugtop-fuzz");
    let said = String::from_utf8_lossy(&out.stdout);
    println!("{said}");
    assert!(
        out.status.success(),
        "debugtop-fuzz found something (inputs in target/fuzz-found/):\n{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for target in [
        "stat",
        "cmdline",
        "environ",
        "log-line",
        "health",
        "import",
        "redaction",
    ] {
        assert!(
            said.lines()
                .any(|l| l.starts_with(target) && l.ends_with("nothing found")),
            "{target} did not run:\n{said}"
        );
    }
}
