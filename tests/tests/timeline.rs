//! The timeline from real processes (spawn, stop, continue, zombie, exit — the exit timed by
//! pidfd) and from the real server's session lifecycle; tombs for processes that just left.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::Duration;

use debugtop_core::collect::exits::ExitWatcher;
use debugtop_core::model::{ProcState, TimelineEvent, TimelineKind, Update};
use debugtop_core::sampler::{Config, Engine};
use debugtop_e2e::mcp::{Client, Server};
use debugtop_e2e::procs::{my_pid, stand_in_worker, start_ticks};
use debugtop_e2e::{fixture, tick_until, wait_for, Spawned};
use nix::sys::signal::Signal;

fn events_for(u: &Update, pid: u32) -> Vec<TimelineEvent> {
    u.snapshot
        .timeline
        .iter()
        .filter(|e| e.pid == Some(pid))
        .map(|e| (**e).clone())
        .collect()
}

async fn until(e: &mut Engine, secs: u64, what: &str, f: impl Fn(&Update) -> bool) -> Update {
    tick_until(e, secs, Duration::from_millis(100), what, |u| {
        f(u).then(|| u.clone())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_process_lifecycle_on_the_timeline() {
    let mut config = Config::default();
    config.state.tomb_ttl = Duration::from_secs(3);
    let mut e = Engine::new(config).unwrap();
    e.tick().await.unwrap();
    let session = uuid::Uuid::new_v4().to_string();
    let mut w = Spawned::spawn(
        Command::new("node")
            .arg(fixture("worker/dist/proxy/proxy-bootstrap.js"))
            .arg(format!("--mcp-owner-pid={}", my_pid()))
            .arg(format!("--mcp-session-id={session}")),
    );
    let pid = w.pid;
    let has = |u: &Update, k: TimelineKind, text: &str| {
        events_for(u, pid)
            .iter()
            .any(|e| e.kind == k && e.text.contains(text))
    };
    until(&mut e, 10, "appeared", |u| {
        has(u, TimelineKind::ProcessAppeared, "appeared")
    })
    .await;
    w.signal(Signal::SIGSTOP);
    w.wait_state('T', Duration::from_secs(5));
    until(&mut e, 10, "stopped", |u| {
        has(u, TimelineKind::StateChanged, "→ T")
    })
    .await;
    w.signal(Signal::SIGCONT);
    until(&mut e, 10, "continued", |u| {
        has(u, TimelineKind::StateChanged, "T →")
    })
    .await;
    // Exit without being reaped: a zombie, timed by the pidfd watcher. A tick stamps what it
    // has no better time for with its own `taken_at`; the exit must carry the earlier time the
    // watcher saw, between the kill and that tick.
    let killed_at = chrono::Utc::now();
    w.signal(Signal::SIGKILL);
    w.wait_state('Z', Duration::from_secs(5));
    // The watcher, not the next scan, must have seen it (on a loaded machine its thread may
    // run after the state flips): wait for its record before ticking.
    let watcher = e.exit_signal().expect("pidfds on Linux");
    wait_for(Duration::from_secs(5), || {
        watcher.has_pending_exit(pid).then_some(())
    })
    .expect("the exit watcher records the exit");
    let u = until(&mut e, 10, "zombie", |u| {
        has(u, TimelineKind::ProcessExited, "→ Z")
    })
    .await;
    let exit = events_for(&u, pid)
        .into_iter()
        .find(|e| e.kind == TimelineKind::ProcessExited)
        .unwrap();
    let tick_time = u.snapshot.taken_at;
    assert!(
        exit.at < tick_time,
        "the exit is timed when it happened ({}), not at the tick ({tick_time})",
        exit.at
    );
    assert!(
        exit.at >= killed_at,
        "the exit ({}) is after the kill ({killed_at})",
        exit.at
    );
    // Reaped: gone, kept as a tomb for a while, then dropped.
    w.reap();
    let u = until(&mut e, 10, "tomb", |u| {
        u.snapshot
            .processes
            .iter()
            .any(|p| p.pid == pid && p.sample.state == ProcState::Dead)
    })
    .await;
    let tomb = u.snapshot.processes.iter().find(|p| p.pid == pid).unwrap();
    assert!(tomb.exited_at.is_some());
    assert!(
        u.snapshot.tree.iter().any(|n| n
            .walk()
            .iter()
            .any(|x| x.pid == Some(pid) && x.state == Some(ProcState::Dead))),
        "the tomb is in the tree"
    );
    until(&mut e, 10, "tomb expired", |u| {
        !u.snapshot.processes.iter().any(|p| p.pid == pid)
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_server_session_lifecycle_on_the_timeline() {
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let mut e = Engine::new(Config::default()).unwrap();
    e.tick().await.unwrap();
    let session = client.create_session("mock", "timeline").await;
    client.start(&session, &fixture("mock/script.js")).await;
    let of = |u: &Update, k: TimelineKind| {
        u.snapshot
            .timeline
            .iter()
            .filter(|e| e.session_id.as_deref() == Some(&session) && e.kind == k)
            .count()
    };
    until(
        &mut e,
        15,
        "session and worker appeared, log lines merged",
        |u| {
            of(u, TimelineKind::SessionAppeared) == 1
                && of(u, TimelineKind::ProcessAppeared) >= 2
                && of(u, TimelineKind::Log) >= 3
        },
    )
    .await;
    client
        .call(
            "close_debug_session",
            serde_json::json!({ "sessionId": session }),
        )
        .await;
    let u = until(&mut e, 15, "session ended and its processes exited", |u| {
        of(u, TimelineKind::SessionEnded) == 1 && of(u, TimelineKind::ProcessExited) >= 1
    })
    .await;
    let ended = u
        .snapshot
        .timeline
        .iter()
        .find(|e| e.session_id.as_deref() == Some(&session) && e.kind == TimelineKind::SessionEnded)
        .unwrap();
    assert!(
        ended.source.is_some(),
        "the end cites its log line: {ended:?}"
    );
    // Time order holds across sample events and log lines.
    let times: Vec<_> = u.snapshot.timeline.iter().map(|e| e.at).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "timeline out of order"
    );
    client.close().await;
}

/// The scan's own poll finds an exit the watcher's thread has not seen (here: has no thread),
/// once, and never one of a process still running.
#[test]
fn regression_an_exit_the_watcher_thread_has_not_seen_is_found_by_the_scans_own_poll() {
    let w = ExitWatcher::without_thread().expect("pidfds on Linux");
    let mut dies = stand_in_worker("sleep 300", &uuid::Uuid::new_v4().to_string());
    let lives = stand_in_worker("sleep 300", &uuid::Uuid::new_v4().to_string());
    w.watch([dies.pid, lives.pid].map(|p| (p, start_ticks(p).unwrap())));
    assert_eq!(w.exited_by_now(), Vec::<u32>::new(), "nothing exited yet");
    dies.signal(Signal::SIGKILL);
    dies.wait_state('Z', Duration::from_secs(5));
    assert_eq!(w.exited_by_now(), vec![dies.pid]);
    let taken: Vec<u32> = w.take_exits().iter().map(|((p, _), _)| *p).collect();
    assert_eq!(taken, vec![dies.pid]);
    assert_eq!(
        w.exited_by_now(),
        Vec::<u32>::new(),
        "an exit is reported once"
    );
    dies.reap();
}

/// A burst of exits larger than one wait's batch (1,024) is seen whole by one scan's poll, each
/// exit once; the watched set shrinks by exactly the exits.
#[test]
fn a_burst_of_exits_larger_than_a_batch_is_seen_whole_by_one_poll() {
    let w = ExitWatcher::without_thread().expect("pidfds on Linux");
    let mut burst: Vec<std::process::Child> = (0..1_100)
        .map(|_| {
            Command::new("sleep")
                .arg("300")
                .spawn()
                .expect("spawn sleep")
        })
        .collect();
    let stays = stand_in_worker("sleep 300", &uuid::Uuid::new_v4().to_string());
    let ids: Vec<(u32, u64)> = burst
        .iter()
        .map(|c| c.id())
        .chain([stays.pid])
        .filter_map(|p| Some((p, start_ticks(p)?)))
        .collect();
    w.watch(ids.iter().copied());
    assert_eq!(w.len(), 1_101);
    for c in &mut burst {
        c.kill().expect("kill a sleep this test started");
    }
    let mut pids: Vec<u32> = burst.iter().map(std::process::Child::id).collect();
    let zombies = debugtop_e2e::procs::wait_for(Duration::from_secs(10), || {
        pids.iter()
            .all(|p| {
                std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                })
            })
            .then_some(())
    });
    assert!(zombies.is_some(), "every sleep a zombie within 10 s");
    let mut seen = w.exited_by_now();
    seen.sort_unstable();
    pids.sort_unstable();
    assert_eq!(seen.len(), 1_100, "every exit, once");
    assert_eq!(seen, pids);
    assert_eq!(w.len(), 1, "only the process still running is watched");
    assert_eq!(w.take_exits().len(), 1_100);
    assert!(w.exited_by_now().is_empty());
    for c in &mut burst {
        let _ = c.wait();
    }
}

/// Found in CI: a leaked adapter killed by its finding's plan was shown sleeping at the next
/// tick. Quiet processes are served from their last read on most scans, and an exit reached
/// the scan only once the watcher's thread had run — on two busy cores, after the tick. Every
/// one of these quiet workers, killed right before a tick, is a zombie at that tick. The
/// engine's watcher here has no thread, so only the scan's own poll can see the exits (with
/// that poll undone, every worker is shown sleeping).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_quiet_worker_killed_right_before_a_tick_is_a_zombie_at_that_tick() {
    let mut workers: Vec<Spawned> = (0..8)
        .map(|_| stand_in_worker("sleep 300", &uuid::Uuid::new_v4().to_string()))
        .collect();
    let mut e = Engine::with_exits(Config::default(), ExitWatcher::without_thread()).unwrap();
    // Old enough not to be young, and read alike often enough to be quiet.
    tokio::time::sleep(debugtop_core::collect::YOUNG).await;
    for _ in 0..2 * debugtop_core::collect::QUIET_EVERY {
        e.tick().await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    for w in &mut workers {
        w.signal(Signal::SIGKILL);
        w.wait_state('Z', Duration::from_secs(5));
        let u = e.tick().await.unwrap();
        let state = u
            .snapshot
            .processes
            .iter()
            .find(|p| p.pid == w.pid)
            .map(|p| p.sample.state);
        assert_eq!(state, Some(ProcState::Zombie), "worker {}", w.pid);
        w.reap();
    }
}
