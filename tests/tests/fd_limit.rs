//! When pidfds run out (the soft limit on open files, exactly when hundreds of leaked workers
//! are the incident): debugtop says so in its source status and keeps every process in the
//! table; exits of the unwatched ones are still seen, at the next tick. One test in its own
//! binary: it lowers this process's file limit.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::{Command, Stdio};
use std::time::Duration;

use debugtop_core::model::{SourceKind, SourceState};
use debugtop_e2e::procs::my_pid;
use debugtop_e2e::{start_ticks, tick_until, Owned};
use nix::sys::resource::{getrlimit, setrlimit, Resource};

fn open_fds() -> u64 {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count() as u64)
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_pidfds_is_said_and_nothing_leaves_the_table() {
    // 120 processes the collector lists (argv `node`, the server marker in their environment).
    let me = my_pid().to_string();
    let mut kids: Vec<Owned> = Vec::new();
    for _ in 0..120 {
        let mut c = Command::new("bash");
        c.args(["-c", "exec -a node perl -e 'sleep 300'"])
            .env("MCP_DEBUGGER_MAIN_PID", &me)
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let child = c.spawn().expect("spawn");
        let pid = child.id();
        drop(child); // no fd is kept for it; reaped by nobody until the test kills it.
        debugtop_e2e::wait_for(Duration::from_secs(5), || start_ticks(pid)).expect("started");
        kids.push(Owned::adopt(pid));
    }
    // Room for debugtop's reserve and about 40 pidfds, no more; the hard limit too, so raising
    // the soft limit cannot help.
    let (_, hard_before) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    let limit = open_fds() + 128 + 60;
    setrlimit(Resource::RLIMIT_NOFILE, limit, limit).unwrap();
    let mut e = debugtop_e2e::engine(700);
    let u = tick_until(
        &mut e,
        20,
        Duration::from_millis(300),
        "every child listed, the shortage said",
        |u| {
            let listed = kids
                .iter()
                .filter(|k| u.snapshot.processes.iter().any(|p| p.pid == k.pid))
                .count();
            let said = u.snapshot.sources.iter().any(|s| {
                s.source == SourceKind::Exits
                    && s.state == SourceState::Degraded
                    && s.detail.contains("out of file descriptors")
            });
            (listed == kids.len() && said).then(|| u.clone())
        },
    )
    .await;
    let status = u
        .snapshot
        .sources
        .iter()
        .find(|s| s.source == SourceKind::Exits)
        .unwrap();
    eprintln!("{}", status.detail);
    // Half of them exit: each is seen (an exit, then gone), the others stay listed.
    let gone: Vec<Owned> = kids.drain(..60).collect();
    let gone_pids: Vec<u32> = gone.iter().map(|o| o.pid).collect();
    drop(gone);
    tick_until(
        &mut e,
        20,
        Duration::from_millis(300),
        "exits seen, the rest listed",
        |u| {
            let alive_listed = |pid: u32| {
                u.snapshot
                    .processes
                    .iter()
                    .any(|p| p.pid == pid && p.sample.state.is_alive())
            };
            (gone_pids.iter().all(|p| !alive_listed(*p))
                && kids.iter().all(|k| alive_listed(k.pid)))
            .then_some(())
        },
    )
    .await;
    // (The binary ends here; restoring is a courtesy that may need CAP_SYS_RESOURCE.)
    let _ = setrlimit(Resource::RLIMIT_NOFILE, hard_before, hard_before);
}
