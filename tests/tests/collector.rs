//! The collector against real process shapes: links, groups, sessions, T, Z, orphans, exits,
//! churn and pid reuse. /proc is never mocked; every process is ours and is killed by pid.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::Duration;

use debugtop_core::collect::linux::ProcfsCollector;
use debugtop_core::model::{ProcState, Role};
use debugtop_e2e::procs::{cpu_ticks, my_pid, stand_in_worker};
use debugtop_e2e::{fixture, respawn_at, start_ticks, wait_for, Owned, Spawned};
use nix::sys::signal::Signal;

const T: Duration = Duration::from_secs(10);

fn collector() -> ProcfsCollector {
    ProcfsCollector::new().expect("collector")
}

fn sleeper() -> Spawned {
    Spawned::spawn(Command::new("sleep").arg("300"))
}

fn fake_worker(session: &str) -> Spawned {
    let mut cmd = Command::new("node");
    cmd.arg(fixture("worker/dist/proxy/proxy-bootstrap.js"))
        .arg(format!("--mcp-owner-pid={}", my_pid()))
        .arg(format!("--mcp-session-id={session}"));
    Spawned::spawn(&mut cmd)
}

#[test]
fn parent_and_child_links_are_seen_exactly() {
    let mut sh = Spawned::spawn(Command::new("sh").args(["-c", "sleep 300 & echo $!; wait"]));
    let child: u32 = sh.read_line(T).parse().expect("pid");
    let _g = Owned::adopt(child);
    let mut c = collector();
    // The first read may catch the child between fork and exec (still `sh`'s argv): a young
    // process's argv is re-read on every scan until it settles.
    let h = wait_for(T, || {
        let h = c.harvest().ok()?;
        (h.get(child)?.ident.argv[..] == ["sleep", "300"]).then_some(h)
    })
    .expect("child seen after exec");
    let parent = h.get(sh.pid).expect("sh seen");
    let kid = h.get(child).expect("sleep seen");
    assert_eq!(kid.ppid, sh.pid);
    assert_eq!(parent.ppid, my_pid());
    assert_eq!(kid.ident.argv[..], ["sleep", "300"]);
    assert_eq!(kid.start_ticks, start_ticks(child).unwrap());
    // Same group and session as its parent (no job control in `sh -c`).
    assert_eq!((kid.pgid, kid.sid), (parent.pgid, parent.sid));
}

#[test]
fn setsid_child_leads_its_own_session_and_group() {
    // Spawned from a non-leader, setsid(1) calls setsid(2) and execs in place: same pid.
    let s = Spawned::spawn(Command::new("setsid").args(["sleep", "300"]));
    let mut c = collector();
    let got = wait_for(T, || {
        let h = c.harvest().ok()?;
        let p = h.get(s.pid)?;
        (p.ident.argv.first().map(String::as_str) == Some("sleep")).then_some((p.pgid, p.sid))
    });
    assert_eq!(got, Some((s.pid, s.pid)));
    let mine = c.harvest().unwrap();
    let me = mine.get(my_pid()).expect("self");
    assert_ne!(me.sid, s.pid);
}

#[test]
fn process_group_leader_keeps_the_parents_session() {
    use std::os::unix::process::CommandExt;
    let s = Spawned::spawn(Command::new("sleep").arg("300").process_group(0));
    let mut c = collector();
    let h = c.harvest().unwrap();
    let p = h.get(s.pid).unwrap();
    let me = h.get(my_pid()).unwrap();
    assert_eq!(p.pgid, s.pid);
    assert_eq!(p.sid, me.sid);
}

#[test]
fn stopped_child_is_t_then_back_to_s() {
    let s = sleeper();
    s.signal(Signal::SIGSTOP);
    s.wait_state('T', T);
    let mut c = collector();
    assert_eq!(
        c.harvest().unwrap().get(s.pid).unwrap().state,
        ProcState::Stopped
    );
    s.signal(Signal::SIGCONT);
    s.wait_state('S', T);
    assert_eq!(
        c.harvest().unwrap().get(s.pid).unwrap().state,
        ProcState::Sleeping
    );
}

#[test]
fn zombie_keeps_its_role_and_session_from_the_identity_cache() {
    let session = uuid::Uuid::new_v4().to_string();
    let mut w = fake_worker(&session);
    let mut c = collector();
    let seen = wait_for(T, || {
        let t = c.scan().ok()?;
        let p = t.get(w.pid)?;
        (p.role == Role::Worker).then(|| p.clone())
    })
    .expect("worker classified while alive");
    assert_eq!(seen.session_id.as_deref(), Some(session.as_str()));

    w.signal(Signal::SIGKILL);
    w.wait_state('Z', T); // exited, not reaped: we have not called wait()
    assert!(
        std::fs::read(format!("/proc/{}/cmdline", w.pid))
            .unwrap()
            .is_empty(),
        "a zombie's cmdline is empty"
    );
    let t = c.scan().unwrap();
    let z = t.get(w.pid).expect("zombie still listed");
    assert_eq!(z.sample.state, ProcState::Zombie);
    assert!(!z.sample.state.is_alive());
    assert_eq!(z.role, Role::Worker);
    assert_eq!(z.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(z.owner_pid, Some(my_pid()));
    assert!(
        z.argv.iter().any(|a| a.contains("proxy-bootstrap")),
        "argv kept: {:?}",
        z.argv
    );
    w.reap();
    assert!(c.scan().unwrap().get(w.pid).is_none());
}

#[test]
fn orphan_is_reparented_away_from_its_creator() {
    let mut sh = Spawned::spawn(Command::new("sh").args(["-c", "sleep 300 & echo $!"]));
    let orphan: u32 = sh.read_line(T).parse().expect("pid");
    let _g = Owned::adopt(orphan);
    sh.reap(); // the creator is gone
    let mut c = collector();
    // The first read may catch the child between fork and exec (still `sh`'s argv): a young
    // process's argv is re-read on every scan until it settles.
    let h = wait_for(T, || {
        let h = c.harvest().ok()?;
        (h.get(orphan)?.ident.argv[..] == ["sleep", "300"]).then_some(h)
    })
    .expect("orphan seen with its own argv");
    let p = h.get(orphan).unwrap();
    assert_ne!(p.ppid, sh.pid);
    assert!(h.get(sh.pid).is_none());
}

#[test]
fn a_pid_that_exits_between_scans_is_dropped_and_counted() {
    let mut s = sleeper();
    let mut c = collector();
    assert!(c.harvest().unwrap().get(s.pid).is_some());
    s.signal(Signal::SIGKILL);
    s.reap();
    let h = c.harvest().unwrap();
    assert!(h.get(s.pid).is_none());
    assert!(h.stats.exited >= 1);
}

#[test]
fn a_process_started_since_the_last_scan_is_in_the_next_scans_listing() {
    // A scan lists `/proc` again only when the kernel gave out a pid or reaped a task since
    // the last listing: one started right after a scan is in the very next one's.
    let mut c = collector();
    c.scan().unwrap();
    for round in 0..20 {
        c.scan().unwrap();
        let mut s = sleeper();
        c.scan().unwrap();
        assert!(
            c.listed().contains(&s.pid),
            "round {round}: {} not listed",
            s.pid
        );
        s.signal(Signal::SIGKILL);
        s.reap();
        let t = c.scan().unwrap();
        assert!(
            !c.listed().contains(&s.pid),
            "round {round}: {} still listed",
            s.pid
        );
        assert!(t.get(s.pid).is_none());
    }
}

#[test]
fn churn_while_scanning_never_fails_a_scan() {
    // Hundreds of short-lived processes appear and vanish while we scan: some vanish mid-read.
    let churn = Spawned::spawn(Command::new("sh").args(["-c", "while :; do /bin/true; done"]));
    let _g = debugtop_e2e::TreeGuard::new(churn.pid);
    let mut c = collector();
    // The first scan reads everything (every process is a new identity): it proves nothing
    // about churn, so only what later, incremental scans see is counted.
    c.scan().expect("first scan");
    let mut churned = 0u32;
    let mut scans = 0u32;
    let seen = wait_for(T, || {
        let t = c.scan().expect("scan under churn");
        scans += 1;
        churned += t.stats.new_identities;
        (churned >= 50 && scans >= 20).then_some(())
    });
    assert!(
        seen.is_some(),
        "churn produced only {churned} new identities in {scans} incremental scans"
    );
}

#[test]
fn a_reused_pid_is_a_new_identity() {
    let session = uuid::Uuid::new_v4().to_string();
    let mut w = fake_worker(&session);
    let target = w.pid;
    let worker_ticks = start_ticks(target).unwrap();
    let mut c = collector();
    wait_for(T, || {
        (c.scan().ok()?.get(target)?.role == Role::Worker).then_some(())
    })
    .expect("worker");
    w.signal(Signal::SIGKILL);
    w.reap();
    // Identity is (pid, start ticks); ticks are 10 ms: respawn_at steps past the worker's tick.
    let s = respawn_at(
        target,
        worker_ticks,
        "a_reused_pid_is_a_new_identity",
        || {
            let mut cmd = Command::new("sleep");
            cmd.arg("300");
            cmd
        },
    );
    // Between exec and the new image's first instruction the kernel already shows the new
    // command name but an empty cmdline (seen here right after spawn returned): wait until the
    // collector reads the settled argv, as the sampler does for every young process.
    let h = wait_for(T, || {
        let h = c.harvest().ok()?;
        (h.get(target)?.ident.argv[..] == ["sleep", "300"]).then_some(h)
    })
    .unwrap_or_else(|| panic!("the new process at pid {target} never showed its own argv"));
    let p = h.get(target).unwrap();
    assert_eq!(p.start_ticks, start_ticks(s.pid).unwrap());
    assert_ne!(p.start_ticks, worker_ticks, "a new identity");
    let t = c.scan().unwrap();
    assert!(
        t.get(target).is_none(),
        "the new process must not inherit the worker role: {:?}",
        t.get(target)
    );
    assert!(c
        .cache()
        .memory(target, p.start_ticks)
        .is_none_or(|m| m.role.is_none()));
}

#[test]
fn cpu_percent_of_a_spinning_process_is_measured() {
    let spin = Spawned::spawn(Command::new("sh").args(["-c", "while :; do :; done"]));
    let mut c = collector();
    c.harvest().unwrap();
    // CPU % needs two samples of the same identity; wait for a measurement, not for a time.
    let pct = wait_for(T, || {
        let h = c.harvest().ok()?;
        h.get(spin.pid)?.cpu_percent.filter(|p| *p > 20.0)
    });
    assert!(
        pct.is_some(),
        "a spinning shell was never measured above 20 % of a core"
    );
}

#[test]
fn portable_collector_sees_the_same_links() {
    let mut sh = Spawned::spawn(Command::new("sh").args(["-c", "sleep 300 & echo $!; wait"]));
    let child: u32 = sh.read_line(T).parse().unwrap();
    let _g = Owned::adopt(child);
    let session = uuid::Uuid::new_v4().to_string();
    let w = fake_worker(&session);
    let mut c = debugtop_core::collect::portable::SysinfoCollector::new().unwrap();
    let t = wait_for(T, || {
        let t = c.scan().ok()?;
        t.get(w.pid)
            .is_some_and(|p| p.role == Role::Worker)
            .then_some(t)
    })
    .expect("worker seen through sysinfo");
    let p = t.get(w.pid).unwrap();
    assert_eq!(p.session_id.as_deref(), Some(session.as_str()));
    assert_eq!(p.ppid, my_pid());
}

/// Seen once in CI: the portable collector's first look at a fake worker caught it between
/// fork and exec, and sysinfo (command lines read only once) and the identity cache kept that
/// argv for good: the worker was never a worker. A shell that execs into a worker two seconds
/// after it starts is first seen as the shell, then as the worker.
#[test]
fn regression_the_portable_collector_kept_a_childs_argv_from_before_its_exec() {
    let session = uuid::Uuid::new_v4().to_string();
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "sleep 2; exec node \"$W\" --mcp-owner-pid=\"$O\" --mcp-session-id=\"$S\"",
    ])
    .env("W", fixture("worker/dist/proxy/proxy-bootstrap.js"))
    .env("O", my_pid().to_string())
    .env("S", &session);
    let mut c = debugtop_core::collect::portable::SysinfoCollector::new().unwrap();
    c.scan().unwrap();
    let w = Spawned::spawn(&mut cmd);
    // A scan while it is still the shell: its command line says so after the scan.
    wait_for(T, || {
        c.scan().ok()?;
        let argv = std::fs::read(format!("/proc/{}/cmdline", w.pid)).ok()?;
        argv.starts_with(b"sh\0").then_some(())
    })
    .expect("the shell scanned before its exec");
    let t = wait_for(T, || {
        let t = c.scan().ok()?;
        t.get(w.pid)
            .is_some_and(|p| p.role == Role::Worker)
            .then_some(t)
    })
    .expect("the worker it exec'd into was never seen as one");
    let p = t.get(w.pid).unwrap();
    assert_eq!(p.session_id.as_deref(), Some(session.as_str()));
}

#[test]
fn an_old_unrelated_process_that_execs_into_a_worker_is_caught_by_the_incremental_scans() {
    use debugtop_core::collect::linux::FULL_EVERY;
    // An unrelated process that, once old, execs into a worker (a shell running `exec node …`).
    let session = uuid::Uuid::new_v4().to_string();
    let script = format!(
        "sleep 3; exec node {} --mcp-owner-pid={} --mcp-session-id={session}",
        fixture("worker/dist/proxy/proxy-bootstrap.js"),
        my_pid()
    );
    let sh = Spawned::spawn(Command::new("sh").args(["-c", &script]));
    let mut c = collector();
    let t = c.scan().unwrap();
    assert!(t.get(sh.pid).is_none(), "a plain shell is not related");
    // Scan until it is found: at the latest by the periodic full scan, which sees the changed
    // command name even though the identity (pid, start time) did not change.
    let mut found_at = None;
    for i in 0..(FULL_EVERY * 3) {
        let t = c.scan().unwrap();
        if t.get(sh.pid).is_some_and(|p| p.role == Role::Worker) {
            found_at = Some(i);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(found_at.is_some(), "the exec into a worker was never seen");
    let p = c.scan().unwrap().get(sh.pid).cloned().unwrap();
    assert_eq!(p.session_id.as_deref(), Some(session.as_str()));
}

/// A debuggee under a debugger's ptrace (here `strace`, which traces from the exec on, as
/// lldb-server does for what it launches): its tracer is in the table, as `TracerPid` says.
#[test]
fn a_traced_process_names_its_tracer() {
    let strace = Spawned::spawn(
        Command::new("strace")
            .args([
                "-f",
                "-o",
                "/dev/null",
                "--",
                "node",
                "-e",
                "setInterval(() => {}, 1 << 30)",
            ])
            .env("MCP_DEBUGGER_MAIN_PID", my_pid().to_string()),
    );
    let _guard = debugtop_e2e::TreeGuard::new(strace.pid);
    let mut c = collector();
    let traced = wait_for(T, || {
        let t = c.scan().ok()?;
        t.procs
            .iter()
            .find(|p| p.ppid == strace.pid && p.argv.first().is_some_and(|a| a == "node"))
            .cloned()
    })
    .expect("strace's child in the table (it carries the marker)");
    assert_eq!(traced.tracer_pid, Some(strace.pid), "{traced:?}");
    // An untraced process of the same shape says nothing.
    let plain = Spawned::spawn(
        Command::new("node")
            .args(["-e", "setInterval(() => {}, 1 << 30)"])
            .env("MCP_DEBUGGER_MAIN_PID", my_pid().to_string()),
    );
    let t = wait_for(T, || c.scan().ok().filter(|t| t.get(plain.pid).is_some())).unwrap();
    assert_eq!(t.get(plain.pid).unwrap().tracer_pid, None);
    // The guard (dropped first) kills the traced child while strace still is its parent.
}

/// With no exit watcher to tell it of exits (none started, or its descriptors ran out), the
/// collector serves nothing from a last read: a quiet process killed is a zombie at the very
/// next scan, not when it would have been due again.
#[test]
fn regression_without_an_exit_watcher_a_quiet_process_that_exits_is_a_zombie_at_the_next_scan() {
    let mut quiet = stand_in_worker("sleep 300", "9a1e0000-0000-4000-8000-000000000004");
    std::thread::sleep(debugtop_core::collect::YOUNG + Duration::from_millis(300));
    let mut c = collector();
    for i in 0..2 * debugtop_core::collect::QUIET_EVERY {
        let t = c.scan().expect("scan");
        assert_eq!(
            t.stats.quiet, 0,
            "scan {i}: a read was reused with no exit watcher"
        );
    }
    quiet.signal(Signal::SIGKILL);
    quiet.wait_state('Z', T);
    let t = c.scan().expect("scan");
    let z = t
        .procs
        .iter()
        .find(|p| p.pid == quiet.pid)
        .map(|p| p.sample.state);
    assert_eq!(z, Some(ProcState::Zombie));
    quiet.reap();
}

/// A watched process's stat file is kept open and read again scan after scan; through it its
/// death shows (a zombie), and once it is reaped the descriptor is dropped and the pid is gone
/// from the table — a kept descriptor never reads a later owner of the pid.
#[test]
fn a_watched_process_is_read_through_its_kept_stat_file_until_it_is_reaped() {
    let mut w = stand_in_worker("sleep 300", "9a1e0000-0000-4000-8000-000000000005");
    let mut c = collector();
    scans_until(&mut c, "the worker listed", |t| {
        t.procs.iter().any(|p| p.pid == w.pid)
    });
    c.scan().expect("scan");
    assert!(
        c.keeps_stat_file(w.pid),
        "a watched process's stat file is kept"
    );
    let unwatched = sleeper();
    std::thread::sleep(debugtop_core::collect::YOUNG + Duration::from_millis(300));
    for _ in 0..3 {
        c.scan().expect("scan");
    }
    assert!(
        !c.keeps_stat_file(unwatched.pid),
        "an unwatched process's is not"
    );
    w.signal(Signal::SIGKILL);
    w.wait_state('Z', T);
    let t = c.scan().expect("scan");
    let state = t
        .procs
        .iter()
        .find(|p| p.pid == w.pid)
        .map(|p| p.sample.state);
    assert_eq!(
        state,
        Some(ProcState::Zombie),
        "its death read through the kept file"
    );
    w.reap();
    scans_until(&mut c, "the reaped worker gone", |t| {
        t.procs.iter().all(|p| p.pid != w.pid)
    });
    assert!(
        !c.keeps_stat_file(w.pid),
        "the reaped process's descriptor dropped"
    );
}

fn scans_until(
    c: &mut ProcfsCollector,
    what: &str,
    mut f: impl FnMut(&debugtop_core::model::ProcessTable) -> bool,
) {
    for _ in 0..40 {
        let t = c.scan().expect("scan");
        if f(&t) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{what}: not seen in 40 scans");
}

#[test]
fn a_quiet_watched_process_is_read_one_scan_in_four_and_always_listed_a_spinning_one_every_scan() {
    let quiet = stand_in_worker("sleep 300", "9a1e0000-0000-4000-8000-000000000001");
    let spin = stand_in_worker(
        "while :; do :; done",
        "9a1e0000-0000-4000-8000-000000000002",
    );
    std::thread::sleep(debugtop_core::collect::YOUNG + Duration::from_millis(300));
    let mut c = collector();
    c.set_exits_watched(true);
    let mut spin_reads = 0;
    for i in 0..16 {
        let t = c.scan().expect("scan");
        let spun = cpu_ticks(spin.pid).expect("the spinner's stat");
        let q = t.procs.iter().find(|p| p.pid == quiet.pid);
        let s = t.procs.iter().find(|p| p.pid == spin.pid);
        assert!(
            q.is_some() && s.is_some(),
            "scan {i}: both listed every scan"
        );
        assert_eq!(q.map(|p| p.sample.state), Some(ProcState::Sleeping));
        // The spinning one is read every scan: its CPU is measured anew each time.
        if s.and_then(|p| p.sample.cpu_percent)
            .is_some_and(|c| c > 1.0)
        {
            spin_reads += 1;
        }
        // At least 60 ms, and until the spinner has had CPU time since this scan (on two busy
        // cores a fixed gap could pass without it running).
        std::thread::sleep(Duration::from_millis(60));
        wait_for(Duration::from_secs(5), || {
            (cpu_ticks(spin.pid)? > spun).then_some(())
        })
        .expect("the spinner runs");
    }
    // Quiet after 4 reads (the first, then 3 alike), then read one scan in four: 4 + 3 of 16.
    let reads = |pid| c.cache().reads(pid).unwrap_or(0);
    assert!(
        (5..=9).contains(&reads(quiet.pid)),
        "quiet: {} reads of 16",
        reads(quiet.pid)
    );
    assert_eq!(reads(spin.pid), 16, "the spinning one is read every scan");
    // Every scan but the first (which has no previous sample) measures its CPU.
    assert_eq!(
        spin_reads, 15,
        "the spinning one measured {spin_reads} times of 16"
    );
}

#[test]
fn a_quiet_process_that_stops_is_seen_within_four_scans_and_one_that_exits_at_once_when_told() {
    let mut quiet = stand_in_worker("sleep 300", "9a1e0000-0000-4000-8000-000000000003");
    std::thread::sleep(debugtop_core::collect::YOUNG + Duration::from_millis(300));
    let mut c = collector();
    c.set_exits_watched(true);
    scans_until(&mut c, "its reads reused", |t| t.stats.quiet > 0);
    quiet.signal(Signal::SIGSTOP);
    quiet.wait_state('T', T);
    let mut late = 0;
    scans_until(&mut c, "stopped", |t| {
        late += 1;
        t.procs
            .iter()
            .any(|p| p.pid == quiet.pid && p.sample.state == ProcState::Stopped)
    });
    assert!(
        late <= debugtop_core::collect::QUIET_EVERY as usize,
        "seen {late} scans late"
    );
    quiet.signal(Signal::SIGCONT);
    scans_until(&mut c, "running again and quiet", |t| {
        t.stats.quiet > 0 && t.procs.iter().any(|p| p.pid == quiet.pid)
    });
    // Killed and not reaped: a zombie. The exit watcher tells the collector; the next scan
    // reads it whatever it was.
    quiet.signal(Signal::SIGKILL);
    quiet.wait_state('Z', T);
    c.read_next([quiet.pid]);
    let t = c.scan().expect("scan");
    let z = t
        .procs
        .iter()
        .find(|p| p.pid == quiet.pid)
        .map(|p| p.sample.state);
    assert_eq!(z, Some(ProcState::Zombie));
    quiet.reap();
}
