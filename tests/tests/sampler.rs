//! The sampler loop: owns the interval, publishes on a watch channel, never waits for readers;
//! processes of a gone server stay visible under a node for it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use debugtop_core::model::{NodeKind, Observation, Role};
use debugtop_core::sampler::{self, Config, Engine};
use debugtop_core::sources::{Observe, Sources};
use debugtop_core::Result;
use debugtop_e2e::{fixture, render, HeldZombie, Spawned, TreeGuard};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_consumer_never_slows_the_sampler() {
    let mut running = sampler::spawn(Config {
        interval: Duration::from_millis(100),
        ..Config::default()
    })
    .unwrap();
    running.updates.changed().await.unwrap();
    let first = running
        .updates
        .borrow_and_update()
        .clone()
        .unwrap()
        .update
        .seq;
    // Consume nothing (no `changed()`, no `borrow_and_update()`): the loop must not wait for
    // us. Peeking at the latest value does not mark it seen.
    let end = std::time::Instant::now() + Duration::from_secs(20);
    let mut latest = first;
    while latest < first + 5 && std::time::Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(50)).await;
        latest = running
            .updates
            .borrow()
            .as_ref()
            .map_or(first, |p| p.update.seq);
    }
    assert!(
        latest >= first + 5,
        "sampler advanced only from {first} to {latest} in 20 s while unobserved"
    );
    assert!(
        running.updates.has_changed().unwrap_or(false),
        "the updates were published without anyone consuming them"
    );
    assert!(running.errors.borrow().is_none());
    running.task.abort();
}

/// The real sources of this machine, each look's time written down.
struct Counted {
    sources: Sources,
    looks: Arc<Mutex<Vec<DateTime<Utc>>>>,
}

impl Observe for Counted {
    #[allow(clippy::manual_async_fn)] // the trait asks for a Send future
    fn observe(&mut self) -> impl std::future::Future<Output = Result<Observation>> + Send {
        async move {
            let obs = self.sources.observe().await?;
            self.looks.lock().unwrap().push(obs.at);
            Ok(obs)
        }
    }
}

/// A one-shot `snapshot` takes exactly one look: the CLI's `snapshot` is
/// `sampler::one_look_here(&Config::one_look(…))`, which is [`sampler::one_look`] over the real
/// sources of that config — here the same, with the sources wrapped to count their looks. It
/// once took two looks 250 ms apart (for CPU) and nothing failed if it went back to that: a
/// second look fails this (tried). The snapshot is of that look (its time), and from it alone
/// it has a real adapter of a gone server with its CPU (one read, over the process's life) and
/// names what holds but has not held for its grace as not yet confirmed. Not a timing test.
#[tokio::test(flavor = "current_thread")]
async fn a_one_shot_snapshot_takes_exactly_one_look() {
    let dead = HeldZombie::new();
    let adapter = Spawned::spawn(
        Command::new("node")
            .arg(fixture("js-debug/vsDebugServer.cjs"))
            .args(["0", "127.0.0.1"])
            .env("MCP_DEBUGGER_MAIN_PID", dead.pid.to_string()),
    );
    let _g = TreeGuard::new(adapter.pid);
    let config = Config::one_look(Vec::new(), false);
    // Each try is a new one-shot snapshot, until node has started.
    let mut last = String::new();
    for _ in 0..50 {
        let looks = Arc::new(Mutex::new(Vec::new()));
        let snap = sampler::one_look(&config, |c| {
            Ok(Counted {
                sources: Sources::new(c)?,
                looks: Arc::clone(&looks),
            })
        })
        .await
        .unwrap();
        let looks = looks.lock().unwrap().clone();
        assert_eq!(
            looks.len(),
            1,
            "a one-shot snapshot looked {} times: {looks:?}",
            looks.len()
        );
        assert_eq!(looks, [snap.taken_at], "the snapshot is of that look");
        if let Some(seen) = snap.processes.iter().find(|p| p.pid == adapter.pid) {
            if seen.role == Role::Adapter {
                assert!(seen.sample.cpu_percent.is_some(), "{seen:?}");
                assert!(
                    snap.unconfirmed
                        .iter()
                        .any(|f| f.pids.contains(&adapter.pid)),
                    "the leaked adapter is named as not yet confirmed: {:#?}",
                    snap.unconfirmed
                );
                return;
            }
        }
        last = render(&snap.tree);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the adapter was never seen by a one-shot snapshot; last tree:\n{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn processes_of_a_gone_server_stay_under_a_node_for_it() {
    // A pid that was a process and is gone now: held as our zombie, so no other process can
    // take it during the test (a reaped pid could be reused).
    let dead = HeldZombie::new();
    let gone_pid = dead.pid;
    // A js-debug chain still carrying MCP_DEBUGGER_MAIN_PID of that server (failure shape 2/3).
    let adapter = Spawned::spawn(
        Command::new("node")
            .arg(fixture("js-debug/vsDebugServer.cjs"))
            .args(["0", "127.0.0.1"])
            .env("MCP_DEBUGGER_MAIN_PID", gone_pid.to_string()),
    );
    let _g = TreeGuard::new(adapter.pid);
    let mut engine = Engine::new(Config::default()).unwrap();
    let mut last = String::new();
    for _ in 0..40 {
        let u = engine.tick().await.unwrap();
        last = render(&u.snapshot.tree);
        if let Some(g) = u
            .snapshot
            .tree
            .iter()
            .find(|n| n.kind == NodeKind::GoneServer && n.pid == Some(gone_pid))
        {
            let roles: Vec<Role> = g.walk().iter().filter_map(|n| n.role).collect();
            if roles.contains(&Role::Adapter) && roles.contains(&Role::Debuggee) {
                assert!(g.label.contains("gone"));
                let a = g
                    .walk()
                    .into_iter()
                    .find(|n| n.pid == Some(adapter.pid))
                    .unwrap();
                assert_eq!(a.role, Some(Role::Adapter));
                assert!(
                    a.children.iter().any(|c| c.role == Some(Role::Debuggee)),
                    "{last}"
                );
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no gone-server node with the chain; last tree:\n{last}");
}

/// A burst of exits is a few ticks: 150 watched processes exiting one every 5 ms (750 ms in
/// all) wake the sampler through the pidfd watcher, which coalesces them to at most one tick
/// per `EXIT_MIN_GAP` — without it, each exit would be a tick (and a `/health` round).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_exits_is_a_few_ticks() {
    use debugtop_e2e::Spawned;
    let me = debugtop_e2e::procs::my_pid().to_string();
    let kids: Vec<Spawned> = (0..150)
        .map(|_| {
            let kid = Spawned::spawn(
                Command::new("bash")
                    .args(["-c", "exec -a node perl -e 'sleep 300'"])
                    .env("MCP_DEBUGGER_MAIN_PID", &me),
            );
            debugtop_e2e::wait_for(Duration::from_secs(5), || {
                debugtop_e2e::start_ticks(kid.pid)
            })
            .unwrap();
            kid
        })
        .collect();
    let pids: Vec<u32> = kids.iter().map(|k| k.pid).collect();
    let mut running = sampler::spawn(Config {
        interval: Duration::from_secs(30),
        ..Config::default()
    })
    .unwrap();
    // The first tick lists (and arms a pidfd for) every child.
    running.updates.changed().await.unwrap();
    let before = {
        let p = running.updates.borrow_and_update().clone().unwrap();
        let listed = pids
            .iter()
            .filter(|pid| p.update.snapshot.processes.iter().any(|x| x.pid == **pid))
            .count();
        assert_eq!(listed, pids.len(), "every child is listed");
        p.update.seq
    };
    let started = std::time::Instant::now();
    for k in kids {
        drop(k); // SIGKILL by identity, then reaped
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let burst = started.elapsed();
    // Wait until a tick shows every child gone (the interval is 30 s: only exits tick).
    let end = std::time::Instant::now() + Duration::from_secs(10);
    let last = loop {
        let p = running.updates.borrow().clone().unwrap();
        let alive = p
            .update
            .snapshot
            .processes
            .iter()
            .filter(|x| pids.contains(&x.pid) && x.sample.state.is_alive())
            .count();
        if alive == 0 || std::time::Instant::now() > end {
            assert_eq!(alive, 0, "exit ticks saw every exit");
            break p.update.seq;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let ticks = last - before;
    let bound = burst.as_millis() / sampler::EXIT_MIN_GAP.as_millis() + 3;
    eprintln!("150 exits over {burst:?}: {ticks} ticks (bound {bound})");
    assert!(
        u128::from(ticks) <= bound,
        "{ticks} ticks for 150 exits over {burst:?}"
    );
    running.task.abort();
}
