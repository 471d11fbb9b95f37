//! A one-shot look (`snapshot`) starts no thread. One test in its own binary: it counts this
//! process's threads (`/proc/self/task`), which any other test of the same binary, running
//! beside it, would change (the exit watcher of another test's engine is a thread too).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use debugtop_core::model::Role;
use debugtop_core::sampler::{Config, Engine};
use debugtop_e2e::{fixture, render, HeldZombie, Spawned, TreeGuard};

/// This process's threads now: each one's name (`comm`) by thread id.
fn threads() -> BTreeMap<u32, String> {
    std::fs::read_dir("/proc/self/task")
        .expect("/proc/self/task")
        .flatten()
        .filter_map(|e| {
            let tid = e.file_name().to_str()?.parse().ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            Some((tid, comm.trim().to_owned()))
        })
        .collect()
}

/// A one-shot look (`snapshot`) starts no thread: no exit watcher (there is no next look to
/// tell exits to) and no blocking reader (nothing else runs meanwhile); it still sees a real
/// adapter of a gone server, with its CPU from one read.
///
/// Could not fail for a thread of std's: it counted the threads the tokio runtime started, and
/// the exit watcher (`debugtop-exits`) is a `std::thread`. It now compares this process's
/// threads while the engine lives with those before it; a one-look engine that starts the exit
/// watcher anyway (not handing it out as its exit signal) fails it (tried).
#[test]
fn a_one_look_engine_starts_no_thread_and_still_sees_the_chain() {
    let dead = HeldZombie::new();
    let adapter = Spawned::spawn(
        Command::new("node")
            .arg(fixture("js-debug/vsDebugServer.cjs"))
            .args(["0", "127.0.0.1"])
            .env("MCP_DEBUGGER_MAIN_PID", dead.pid.to_string()),
    );
    let _g = TreeGuard::new(adapter.pid);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let before = threads();
    let look = || {
        let mut config = Config::default();
        config.sources.one_look = true;
        rt.block_on(async {
            let mut engine = Engine::new(config).unwrap();
            assert!(engine.exit_signal().is_none(), "one look watches no exits");
            let update = engine.tick().await.unwrap();
            // While the engine lives: a thread it started runs as long as it does.
            (update, threads())
        })
    };
    // Each try is a new one-shot look, until node has started.
    let mut last = String::new();
    for _ in 0..50 {
        let (u, during) = look();
        let started: Vec<_> = during
            .iter()
            .filter(|(tid, _)| !before.contains_key(tid))
            .collect();
        assert!(
            started.is_empty(),
            "a one-shot look started threads {started:?} (before it: {before:?})"
        );
        if let Some(seen) = u.snapshot.processes.iter().find(|p| p.pid == adapter.pid) {
            if seen.role == Role::Adapter {
                assert!(seen.sample.cpu_percent.is_some(), "{seen:?}");
                return;
            }
        }
        last = render(&u.snapshot.tree);
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the adapter was never seen by a one-shot look; last tree:\n{last}");
}
