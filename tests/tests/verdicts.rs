//! Every failure shape of docs/server-behaviour.md ("Failure shapes"), produced for real
//! against the real server from npm, recognised by the verdict rules and removed by the kill — and a healthy server that
//! raises nothing. Each test judges only its own server's processes; the one that holds a dead
//! server's orphans runs alone (a server start runs upstream's orphan reaper, which would race
//! them: `ORPHANS_HELD` here, `.config/nextest.toml` across suites). After every kill a
//! sentinel of the same user, outside the tree, must still be alive.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeSet;
use std::process::Command;
use std::time::{Duration, Instant};

use debugtop_core::actions::kill;
use debugtop_core::model::{Finding, FindingKind, Outcome, ProcId, Role, Update};
use debugtop_core::sampler::Engine;
use debugtop_core::state::plan::{self, PlanOptions};
use debugtop_e2e::mcp::{Abandoned, Client, Server};
use debugtop_e2e::procs::{assert_only_ours, my_pid, remember_tree, signal_if_same, state_of};
use debugtop_e2e::{finding_of, fixture, render, start_ticks, tick_until, wait_for, Spawned};
use nix::sys::signal::Signal;

/// Written by the test whose server is SIGKILLed while its orphans are judged; read by every
/// test that starts a server.
static ORPHANS_HELD: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

fn engine() -> Engine {
    debugtop_e2e::engine(700)
}

/// Ticks every 400 ms until `done` gives a value, or panics with the last tree and findings.
async fn until<T>(
    engine: &mut Engine,
    secs: u64,
    what: &str,
    done: impl FnMut(&Update) -> Option<T>,
) -> T {
    tick_until(engine, secs, Duration::from_millis(400), what, done).await
}

fn find(u: &Update, kind: FindingKind, pid: u32) -> Option<Finding> {
    finding_of(u, kind, pid)
}

struct Sentinel(Spawned);

impl Sentinel {
    fn new() -> Self {
        Self(Spawned::spawn(Command::new("sleep").arg("600")))
    }
    fn assert_alive(&self) {
        assert_eq!(
            state_of(self.0.pid),
            Some('S'),
            "the sentinel {} outside the tree was hit",
            self.0.pid
        );
    }
}

fn session_procs(u: &Update, session: &str) -> Vec<(u32, Role)> {
    u.snapshot
        .processes
        .iter()
        .filter(|p| p.session_id.as_deref() == Some(session))
        .map(|p| (p.pid, p.role))
        .collect()
}

/// A javascript worker frozen before its HTTP session is reaped: once the server has
/// force-killed it, what survives of its chain is found — the adapter with its chain as a
/// leaked adapter, or, when js-debug's adapter exited with its worker, the debuggee as a
/// leaked debuggee — and the finding's plan removes everything of the session, nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_js_worker_leaves_its_surviving_chain_found_and_the_kill_removes_it() {
    let _one = ORPHANS_HELD.read().await;
    let sentinel = Sentinel::new();
    let server = Server::start(5000);
    let mut client = Abandoned::connect(server.port);
    let session = client.call(
        "create_debug_session",
        serde_json::json!({"language":"javascript","name":"frozen"}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = client.call(
        "start_debugging",
        serde_json::json!({"sessionId": session, "scriptPath": fixture("js-app/loop.js"), "dapLaunchArgs": {"stopOnEntry": true}}),
    );
    assert_eq!(r["success"], true, "{r}");
    let mut e = engine();
    let worker = until(&mut e, 30, "js chain up", |u| {
        let ps = session_procs(u, &session);
        let has = |r: Role| ps.iter().any(|(_, x)| *x == r);
        if has(Role::Worker) && has(Role::Adapter) && has(Role::Debuggee) && has(Role::Watchdog) {
            ps.iter().find(|(_, r)| *r == Role::Worker).map(|(p, _)| *p)
        } else {
            None
        }
    })
    .await;
    // What this test started, while it is still one tree under the server.
    let mut ours = Vec::new();
    remember_tree(server.pid(), &mut ours);
    // Freeze the worker (a descendant of our server) before the stale sweep reaps its session.
    let wt = start_ticks(worker).unwrap();
    assert!(signal_if_same(worker, wt, Signal::SIGSTOP));
    // The sweep (≤ 60 s) asks it to terminate; 5 s later the server SIGKILLs it. What the
    // js-debug chain does then varies from run to run (both seen in CI): usually
    // `vsDebugServer`, its debuggee and the watchdog survive, reparented — a leaked adapter
    // with its chain; sometimes the adapter exits too and leaves its debuggee — a leaked
    // debuggee. The test takes the shape as it comes and holds each to its own finding.
    let finding = until(&mut e, 100, "the surviving chain found", |u| {
        let gone_worker = !u
            .snapshot
            .processes
            .iter()
            .any(|p| p.pid == worker && p.sample.state.is_alive());
        if !gone_worker {
            return None;
        }
        let alive = |role: Role| {
            u.snapshot.processes.iter().find(|p| {
                p.session_id.as_deref() == Some(&session)
                    && p.role == role
                    && p.sample.state.is_alive()
            })
        };
        match (alive(Role::Adapter), alive(Role::Debuggee)) {
            (Some(adapter), _) => find(u, FindingKind::LeakedAdapter, adapter.pid),
            (None, Some(debuggee)) => find(u, FindingKind::LeakedDebuggee, debuggee.pid),
            (None, None) => panic!(
                "nothing of the js chain survived its worker:\n{}",
                render(&u.snapshot.tree)
            ),
        }
    })
    .await;
    eprintln!("{finding:#?}");
    let whole_chain = finding.kind == FindingKind::LeakedAdapter;
    let says = |what: &str| finding.evidence.iter().any(|e| e.contains(what));
    assert!(
        says(if whole_chain {
            "not a live worker"
        } else {
            "runs on without its adapter"
        }),
        "{:?}",
        finding.evidence
    );
    assert!(
        says(&format!("MCP_DEBUGGER_MAIN_PID={}", server.pid())),
        "{:?}",
        finding.evidence
    );
    let plan = finding.plan.clone().unwrap();
    let planned: Vec<u32> = plan.targets.iter().map(|t| t.pid).collect();
    // Everything of the chain that is still alive is in the plan: vsDebugServer, its debuggee,
    // and the watchdog (its own session, tied through NODE_INSPECTOR_INFO).
    let u = e.tick().await.unwrap();
    let chain: Vec<(u32, Role)> = u
        .snapshot
        .processes
        .iter()
        .filter(|p| p.session_id.as_deref() == Some(&session) && p.sample.state.is_alive())
        .map(|p| (p.pid, p.role))
        .collect();
    eprintln!("chain {chain:?} plan {:?}", plan.describe());
    let expected: &[Role] = if whole_chain {
        &[Role::Adapter, Role::Debuggee]
    } else {
        &[Role::Debuggee]
    };
    for r in expected {
        assert!(
            chain.iter().any(|(_, x)| x == r),
            "{r:?} missing from {chain:?}"
        );
    }
    for (pid, role) in &chain {
        assert!(
            planned.contains(pid),
            "{role:?} {pid} not in the plan {planned:?}"
        );
    }
    assert!(!plan
        .targets
        .iter()
        .any(|t| t.pid == server.pid() || t.pid == sentinel.0.pid));
    remember_tree(server.pid(), &mut ours);
    assert_only_ours(&plan, &ours);

    let report = tokio::task::spawn_blocking(move || kill::execute(&plan, |_| {}))
        .await
        .unwrap();
    eprintln!("{report:#?}");
    assert!(report.all_gone(), "{report:#?}");
    for o in &report.outcomes {
        assert!(
            wait_for(Duration::from_secs(2), || (state_of(o.pid)
                .is_none_or(|s| s == 'Z'))
            .then_some(()))
            .is_some(),
            "{} survived",
            o.pid
        );
    }
    let u = e.tick().await.unwrap();
    let left: Vec<_> = u
        .snapshot
        .processes
        .iter()
        .filter(|p| p.session_id.as_deref() == Some(&session) && p.sample.state.is_alive())
        .map(|p| (p.pid, p.role, p.sample.state))
        .collect();
    assert!(left.is_empty(), "still alive in the session: {left:?}");
    sentinel.assert_alive();
    assert!(
        state_of(server.pid()).is_some(),
        "the server itself is untouched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_kill_9_leaves_orphaned_spinning_workers_that_need_sigkill() {
    let _one = ORPHANS_HELD.write().await;
    let sentinel = Sentinel::new();
    let mut server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let sessions = client.start_mock_sessions("orphan", 3).await;
    let mut e = engine();
    let workers: Vec<u32> = until(&mut e, 20, "workers up", |u| {
        let w: Vec<u32> = sessions
            .iter()
            .filter_map(|s| {
                u.snapshot
                    .processes
                    .iter()
                    .find(|p| p.session_id.as_deref() == Some(s) && p.role == Role::Worker)
                    .map(|p| p.pid)
            })
            .collect();
        (w.len() == sessions.len()).then_some(w)
    })
    .await;
    // What this test started, taken before the kill orphans it.
    let mut ours = Vec::new();
    remember_tree(server.pid(), &mut ours);
    server.proc.signal(Signal::SIGKILL);
    server.proc.reap();
    drop(client);
    // Orphaned (owner dead) after the grace, and spinning on EPIPE (seen: 7 of 8 workers).
    // A worker may also exit by itself (1 of 8 did when this was observed); every one left is
    // an orphan.
    let (orphans, spinning) = until(&mut e, 40, "orphaned and spinning workers", |u| {
        let alive: Vec<u32> = workers
            .iter()
            .copied()
            .filter(|w| {
                u.snapshot
                    .processes
                    .iter()
                    .any(|p| p.pid == *w && p.sample.state.is_alive())
            })
            .collect();
        let o: Vec<Finding> = alive
            .iter()
            .filter_map(|w| find(u, FindingKind::OrphanedWorker, *w))
            .collect();
        let s: Vec<Finding> = alive
            .iter()
            .filter_map(|w| find(u, FindingKind::Spinning, *w))
            .collect();
        (!alive.is_empty() && o.len() == alive.len() && !s.is_empty()).then_some((o, s))
    })
    .await;
    let spinner = spinning[0].pids[0];
    assert!(
        orphans[0]
            .evidence
            .iter()
            .any(|e| e.contains("no mcp-debugger server with pid")),
        "{:?}",
        orphans[0].evidence
    );
    for o in &orphans {
        let plan = o.plan.clone().unwrap();
        assert_only_ours(&plan, &ours);
        let pid = o.pids[0];
        let report = tokio::task::spawn_blocking(move || kill::execute(&plan, |_| {}))
            .await
            .unwrap();
        assert!(report.all_gone(), "{report:#?}");
        let mine = report.outcomes.iter().find(|x| x.pid == pid).unwrap();
        if pid == spinner {
            assert_eq!(
                mine.outcome,
                Outcome::Killed,
                "a spinning orphan ignores SIGTERM: {report:#?}"
            );
        }
    }
    sentinel.assert_alive();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_server_with_a_killed_worker_gives_zombie_stopped_unresponsive_then_session_without_worker(
) {
    let _one = ORPHANS_HELD.read().await;
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("mock", "zombie").await;
    client.start(&session, &fixture("mock/script.js")).await;
    let mut e = engine();
    let worker = until(&mut e, 20, "worker up", |u| {
        u.snapshot
            .processes
            .iter()
            .find(|p| p.session_id.as_deref() == Some(&session) && p.role == Role::Worker)
            .map(|p| p.pid)
    })
    .await;
    server.proc.signal(Signal::SIGSTOP);
    server.proc.wait_state('T', Duration::from_secs(5));
    let wt = start_ticks(worker).unwrap();
    assert!(signal_if_same(worker, wt, Signal::SIGKILL));
    let spid = server.pid();
    until(&mut e, 30, "zombie, stopped, server-unresponsive", |u| {
        let z = find(u, FindingKind::Zombie, worker)?;
        let s = find(u, FindingKind::Stopped, spid)?;
        let h = find(u, FindingKind::ServerUnresponsive, spid)?;
        assert!(
            z.evidence.iter().any(|e| e.contains("not reaped")),
            "{:?}",
            z.evidence
        );
        assert!(
            h.evidence
                .iter()
                .any(|e| e.contains("no answer within 700 ms")),
            "{:?}",
            h.evidence
        );
        assert!(
            z.plan.is_none(),
            "a zombie is not killed: its parent reaps it"
        );
        Some(s)
    })
    .await;
    server.proc.signal(Signal::SIGCONT);
    let f = until(&mut e, 30, "session-without-worker", |u| {
        u.snapshot
            .findings
            .iter()
            .find(|f| {
                f.kind == FindingKind::SessionWithoutWorker
                    && f.session_id.as_deref() == Some(&session)
            })
            .cloned()
    })
    .await;
    eprintln!("{f:#?}");
    // And the zombie/stopped/unresponsive findings cleared.
    let u = e.tick().await.unwrap();
    assert!(find(&u, FindingKind::Zombie, worker).is_none());
    assert!(find(&u, FindingKind::Stopped, spid).is_none());
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_server_paused_sessions_close_and_reap_raise_nothing() {
    let _one = ORPHANS_HELD.read().await;
    let server = Server::start(5000);
    // A live monitor runs from the server's first second to the end: every tick of a healthy
    // run, start-up included, and every finding about the server or anything it ever started
    // counts — with or without a server pid (a reparented adapter has none). Other tests'
    // servers run beside this one: theirs are not this test's to judge.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let monitor = {
        let stop = std::sync::Arc::clone(&stop);
        let server_pid = server.pid();
        tokio::spawn(async move {
            let mut e = engine();
            let mut ticks = 0u32;
            let mut raised: Vec<String> = Vec::new();
            let mut session_seen = BTreeSet::new();
            // By identity (pid and start ticks), not pid: pids are reused here.
            let mut started: BTreeSet<ProcId> = BTreeSet::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                started.extend(
                    debugtop_e2e::mcp::descendants_of(server_pid)
                        .into_iter()
                        .map(|(p, t)| ProcId::new(p, t)),
                );
                let u = e.tick().await.unwrap();
                ticks += 1;
                for f in &u.snapshot.findings {
                    let ours = f.server_pid == Some(server_pid)
                        || f.pids.contains(&server_pid)
                        || f.id.proc().is_some_and(|id| started.contains(&id));
                    if ours {
                        raised.push(format!(
                            "tick {ticks}: {}: {:?}\n{}",
                            f.id,
                            f.evidence,
                            render(&u.snapshot.tree)
                        ));
                    }
                }
                session_seen.extend(u.snapshot.debug_sessions.iter().map(|d| d.id.clone()));
                tokio::time::sleep(Duration::from_millis(400)).await;
            }
            (ticks, raised, session_seen)
        })
    };
    let client = Client::connect(&server.url()).await;
    let sessions = client.start_mock_sessions("healthy", 2).await;
    let mut gone = Abandoned::connect(server.port);
    let abandoned = gone.call(
        "create_debug_session",
        serde_json::json!({"language":"mock","name":"to-reap"}),
    )["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    gone.call(
        "start_debugging",
        serde_json::json!({"sessionId": abandoned, "scriptPath": fixture("mock/script.js"), "dapLaunchArgs": {"stopOnEntry": true}}),
    );
    // A normal close while the monitor watches.
    tokio::time::sleep(Duration::from_secs(2)).await;
    client
        .call(
            "close_debug_session",
            serde_json::json!({"sessionId": sessions[0]}),
        )
        .await;
    // The abandoned client's session is reaped at the next 60 s sweep; watch 10 s past its
    // worker's exit (longer than the 6 s grace).
    let reaped = wait_for_async(Duration::from_secs(100), || {
        debugtop_e2e::mcp::descendants_of(server.pid())
            .iter()
            .all(|(pid, _)| !cmdline_has(*pid, &abandoned))
    })
    .await;
    assert!(reaped, "the abandoned session's worker was never reaped");
    tokio::time::sleep(Duration::from_secs(10)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ticks, raised, seen) = monitor.await.unwrap();
    assert!(
        raised.is_empty(),
        "a healthy server raised findings:\n{}",
        raised.join("\n")
    );
    for s in sessions.iter().chain([&abandoned]) {
        assert!(seen.contains(s), "the monitor never saw session {s}");
    }
    eprintln!("{ticks} ticks, no finding");
    client.close().await;
}

/// Polls `f` every 200 ms until it holds, or `timeout`; false on timeout.
async fn wait_for_async(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    f()
}

fn cmdline_has(pid: u32, needle: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_change_between_plan_and_execution_is_refused() {
    let _one = ORPHANS_HELD.read().await;
    let sentinel = Sentinel::new();
    let session = uuid::Uuid::new_v4().to_string();
    let mut w = Spawned::spawn(
        Command::new("node")
            .arg(fixture("worker/dist/proxy/proxy-bootstrap.js"))
            .arg(format!("--mcp-owner-pid={}", my_pid()))
            .arg(format!("--mcp-session-id={session}")),
    );
    let target = w.pid;
    let mut e = engine();
    until(&mut e, 10, "worker seen", |u| {
        u.snapshot
            .processes
            .iter()
            .any(|p| p.pid == target)
            .then_some(())
    })
    .await;
    let plan = plan::plan(e.live(), &[target], PlanOptions::default());
    assert_eq!(plan.targets.len(), 1);
    let ticks = plan.targets[0].start_ticks;
    // The planned process goes away and another takes its pid (root: ns_last_pid; a missing
    // precondition fails the test with instructions, it never passes silently).
    w.signal(Signal::SIGKILL);
    w.reap();
    let newcomer = debugtop_e2e::respawn_at(
        target,
        ticks,
        "identity_change_between_plan_and_execution_is_refused",
        || {
            let mut c = Command::new("sleep");
            c.arg("600");
            c
        },
    );
    assert_ne!(start_ticks(target), Some(ticks));
    let report = tokio::task::spawn_blocking(move || kill::execute(&plan, |_| {}))
        .await
        .unwrap();
    assert_eq!(report.outcomes.len(), 1);
    assert!(
        matches!(&report.outcomes[0].outcome, Outcome::Refused { why } if why.contains("identity changed")),
        "{report:#?}"
    );
    assert!(!report.all_gone());
    // Nothing was sent: the newcomer is still the same process, alive, nothing pending.
    let newcomer_ticks = start_ticks(newcomer.pid).unwrap();
    assert!(
        debugtop_e2e::procs::untouched(newcomer.pid, newcomer_ticks),
        "the newcomer was signalled"
    );
    sentinel.assert_alive();
}

/// One debug session's processes while healthy, by identity (pid, start ticks), and its worker.
#[derive(Debug, Clone)]
struct Chain {
    session: String,
    worker: (u32, u64),
    procs: Vec<(u32, u64, Role)>,
}

impl Chain {
    /// What of the chain (the worker aside) is still alive, by identity, read from `/proc`
    /// itself rather than from debugtop.
    fn survivors(&self) -> Vec<(u32, u64, Role)> {
        self.procs
            .iter()
            .filter(|(pid, ticks, _)| {
                debugtop_e2e::procs::start_ticks(*pid) == Some(*ticks)
                    && state_of(*pid).is_some_and(|s| s != 'Z')
            })
            .copied()
            .collect()
    }
}

/// Starts `n` sessions of `language` on `script` (stopped on entry) over one HTTP session that
/// is then abandoned; waits until every chain has `roles` and returns them.
async fn abandoned_chains(
    server: &Server,
    e: &mut Engine,
    (language, script, stop_on_entry): (&str, &str, bool),
    roles: &[Role],
    n: usize,
) -> Vec<Chain> {
    let mut client = Abandoned::connect(server.port);
    let mut ids = Vec::new();
    for i in 0..n {
        let s = client.call(
            "create_debug_session",
            serde_json::json!({"language": language, "name": format!("frozen-{i}")}),
        )["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        let r = client.call(
            "start_debugging",
            serde_json::json!({"sessionId": s, "scriptPath": script, "dapLaunchArgs": {"stopOnEntry": stop_on_entry}}),
        );
        assert_eq!(r["success"], true, "{r}");
        ids.push(s);
    }
    until(e, 60, "every chain up", |u| {
        ids.iter()
            .map(|s| {
                let ps: Vec<_> = u
                    .snapshot
                    .processes
                    .iter()
                    .filter(|p| p.session_id.as_deref() == Some(s) && p.sample.state.is_alive())
                    .collect();
                // Each role as many times as `roles` names it.
                let count = |r: &Role, among: &mut dyn Iterator<Item = Role>| {
                    among.filter(|x| x == r).count()
                };
                if !roles.iter().all(|r| {
                    count(r, &mut ps.iter().map(|p| p.role)) >= count(r, &mut roles.iter().copied())
                }) {
                    return None;
                }
                let w = ps.iter().find(|p| p.role == Role::Worker)?;
                Some(Chain {
                    session: s.clone(),
                    worker: (w.pid, w.start_ticks),
                    procs: ps
                        .iter()
                        .filter(|p| p.role != Role::Worker)
                        .map(|p| (p.pid, p.start_ticks, p.role))
                        .collect(),
                })
            })
            .collect::<Option<Vec<_>>>()
    })
    .await
}

/// Freezes every chain's worker; the server's stale sweep asks them to stop and then
/// force-kills them. Waits until every worker is gone.
async fn freeze_until_force_killed(e: &mut Engine, chains: &[Chain]) {
    for c in chains {
        assert!(signal_if_same(c.worker.0, c.worker.1, Signal::SIGSTOP));
    }
    until(e, 120, "every frozen worker force-killed", |_| {
        chains
            .iter()
            .all(|c| {
                debugtop_e2e::procs::start_ticks(c.worker.0) != Some(c.worker.1)
                    || state_of(c.worker.0) == Some('Z')
            })
            .then_some(())
    })
    .await;
}

/// What of the chains is still alive once more than the grace (6 s) has passed since their
/// workers died — a chain that is merely slow to exit is not a survivor. Ticks through it so
/// the state sees every step.
async fn settled_survivors(e: &mut Engine, chains: &[Chain]) -> Vec<(u32, u64, Role)> {
    let end = Instant::now() + Duration::from_secs(8);
    while Instant::now() < end {
        e.tick().await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    chains.iter().flat_map(Chain::survivors).collect()
}

/// Every process of `chains`, the workers included, by identity.
fn chain_identities(chains: &[Chain]) -> Vec<(u32, u64)> {
    chains
        .iter()
        .flat_map(|c| {
            c.procs
                .iter()
                .map(|(pid, ticks, _)| (*pid, *ticks))
                .chain([c.worker])
        })
        .collect()
}

/// Whether `f` is about one of `chains`: its subject or a planned target is one of their
/// processes (by identity), or it names one of their sessions.
fn about_chains(f: &Finding, chains: &[Chain], ours: &[(u32, u64)]) -> bool {
    let subject =
        f.id.proc()
            .is_some_and(|id| ours.contains(&(id.pid, id.start_ticks)));
    let planned = f.plan.as_ref().is_some_and(|p| {
        p.targets
            .iter()
            .any(|t| ours.contains(&(t.pid, t.start_ticks)))
    });
    let session = f
        .session_id
        .as_deref()
        .is_some_and(|s| chains.iter().any(|c| c.session == s));
    subject || planned || session
}

/// Every settled survivor of every chain is in a finding of its kind; executing each
/// finding's plan removes all of them and nothing else. Empty when nothing survived.
async fn every_survivor_found_and_killed(
    e: &mut Engine,
    chains: &[Chain],
    sentinel: &Sentinel,
    server: &Server,
) -> Vec<std::sync::Arc<Finding>> {
    let settled = settled_survivors(e, chains).await;
    eprintln!("survivors: {settled:?}");
    if settled.is_empty() {
        return Vec::new();
    }
    let (findings, survivors) = until(e, 30, "every survivor in a finding", |u| {
        let covered = |pid: u32| {
            u.snapshot.findings.iter().any(|f| {
                f.pids.contains(&pid)
                    || f.plan
                        .as_ref()
                        .is_some_and(|p| p.targets.iter().any(|t| t.pid == pid))
            })
        };
        let alive: Vec<_> = chains.iter().flat_map(Chain::survivors).collect();
        alive
            .iter()
            .all(|(pid, _, _)| covered(*pid))
            .then(|| (u.snapshot.findings.clone(), alive.clone()))
    })
    .await;
    // The findings about this test's chains: other tests' servers run beside this one.
    let ours = chain_identities(chains);
    let findings: Vec<_> = findings
        .into_iter()
        .filter(|f| about_chains(f, chains, &ours))
        .collect();
    for f in &findings {
        eprintln!("{} {:?}\n  {:?}", f.id, f.pids, f.evidence);
    }
    // Each survivor is found as what it is: an adapter by a leaked-adapter finding; the rest
    // of a chain by its adapter's finding (whole chain) or a leaked-debuggee of its own.
    for (pid, _, role) in &survivors {
        let by = |kind: FindingKind| {
            findings.iter().any(|f| {
                f.kind == kind
                    && (f.pids.contains(pid)
                        || f.plan
                            .as_ref()
                            .is_some_and(|p| p.targets.iter().any(|t| t.pid == *pid)))
            })
        };
        let right = match role {
            Role::Adapter => by(FindingKind::LeakedAdapter),
            _ => by(FindingKind::LeakedAdapter) || by(FindingKind::LeakedDebuggee),
        };
        assert!(right, "{role:?} {pid} is not in a finding of its kind");
    }
    // Only plans whose every target this test started are executed: as root, a plan that
    // reached anything else would end someone else's processes.
    for f in findings.iter().filter(|f| f.plan.is_some()) {
        let plan = f.plan.clone().unwrap();
        assert!(!plan
            .targets
            .iter()
            .any(|t| t.pid == server.pid() || t.pid == sentinel.0.pid));
        if !plan
            .targets
            .iter()
            .all(|t| ours.contains(&(t.pid, t.start_ticks)))
        {
            eprintln!("not executed (not all ours): {} {:?}", f.id, f.pids);
            continue;
        }
        if plan.targets.iter().all(|t| state_of(t.pid).is_none()) {
            continue; // an earlier plan took these
        }
        let report = tokio::task::spawn_blocking(move || kill::execute(&plan, |_| {}))
            .await
            .unwrap();
        assert!(report.all_gone(), "{} : {report:#?}", f.id);
    }
    let left: Vec<_> = chains.iter().flat_map(Chain::survivors).collect();
    assert!(left.is_empty(), "still alive after every plan: {left:?}");
    sentinel.assert_alive();
    assert!(state_of(server.pid()).is_some(), "the server is untouched");
    findings
}

/// Two javascript sessions frozen before their HTTP session is reaped: after the force-kill,
/// what survives of each chain is found as what it is — a surviving adapter (with its chain)
/// as a leaked adapter, a debuggee whose adapter is gone as a leaked debuggee. The second
/// chain always ends lone: when its adapter outlived the kill, this test kills it, as a
/// crashing adapter would. Every survivor is in a finding; every plan removes what it names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_frozen_js_sessions_every_survivor_is_found_as_what_it_is() {
    let _one = ORPHANS_HELD.read().await;
    let sentinel = Sentinel::new();
    let server = Server::start(5000);
    let mut e = engine();
    let roles = [Role::Worker, Role::Adapter, Role::Debuggee, Role::Watchdog];
    let chains = abandoned_chains(
        &server,
        &mut e,
        ("javascript", &fixture("js-app/loop.js"), true),
        &roles,
        2,
    )
    .await;
    freeze_until_force_killed(&mut e, &chains).await;
    // Whether js-debug's adapter outlives its killed worker varies from run to run (seen: the
    // whole chain survives; both adapters exit and leave their debuggees). The first chain is
    // taken as it comes; the second is made to lose its adapter.
    let whole = chains[0]
        .survivors()
        .iter()
        .any(|(_, _, r)| *r == Role::Adapter);
    eprintln!("first chain survived whole: {whole}");
    let b = &chains[1];
    for (pid, ticks, role) in b.survivors() {
        if role == Role::Adapter {
            assert!(signal_if_same(pid, ticks, Signal::SIGKILL));
            wait_for(Duration::from_secs(5), || {
                (debugtop_e2e::procs::start_ticks(pid) != Some(ticks)).then_some(())
            });
        }
    }
    let lone: Vec<_> = b.survivors();
    assert!(
        lone.iter().any(|(_, _, r)| *r == Role::Debuggee),
        "the second chain's debuggee died with its adapter: {lone:?}"
    );
    let findings = every_survivor_found_and_killed(&mut e, &chains, &sentinel, &server).await;
    let kinds: BTreeSet<FindingKind> = findings.iter().map(|f| f.kind).collect();
    assert!(
        kinds.contains(&FindingKind::LeakedAdapter) == whole,
        "a surviving adapter is a leaked adapter: {kinds:?}"
    );
    let lone_finding = findings
        .iter()
        .find(|f| {
            f.kind == FindingKind::LeakedDebuggee
                && f.session_id.as_deref() == Some(b.session.as_str())
        })
        .unwrap_or_else(|| panic!("no leaked-debuggee for the second chain: {findings:#?}"));
    let ev = lone_finding.evidence.join("\n");
    assert!(
        ev.contains(&format!("MCP_DEBUGGER_MAIN_PID={}", server.pid())),
        "{ev}"
    );
}

/// The same for python: debugpy's adapter, launcher and debuggee, frozen worker force-killed.
/// debugpy often ends the whole chain once its worker is gone (about half the runs), so the
/// debuggee here starts a helper in a session of its own, which debugpy's kill of the
/// debuggee's group does not reach: something certainly survives, and whatever does is in a
/// finding of its kind and removed by its plan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_python_session_every_survivor_is_found_and_killed() {
    let _one = ORPHANS_HELD.read().await;
    let sentinel = Sentinel::new();
    let server = Server::start(5000);
    let mut e = engine();
    let roles = [Role::Worker, Role::Adapter, Role::Debuggee, Role::Debuggee];
    let chains = abandoned_chains(
        &server,
        &mut e,
        ("python", &fixture("py-app/daemon.py"), false),
        &roles,
        1,
    )
    .await;
    freeze_until_force_killed(&mut e, &chains).await;
    let findings = every_survivor_found_and_killed(&mut e, &chains, &sentinel, &server).await;
    assert!(
        !findings.is_empty(),
        "the helper survives: it must be found"
    );
    assert!(
        findings.iter().all(|f| matches!(
            f.kind,
            FindingKind::LeakedAdapter | FindingKind::LeakedDebuggee | FindingKind::Spinning
        )),
        "{findings:#?}"
    );
}

/// debugpy with a hung adapter (frozen with its worker, as a wedged adapter would be): after
/// the force-kill of the worker the adapter, its launcher and the debuggee survive; the adapter
/// is a leaked adapter whose plan takes the whole chain, and executing it removes everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_python_worker_with_a_hung_adapter_leaves_a_leaked_adapter_chain() {
    let _one = ORPHANS_HELD.read().await;
    let sentinel = Sentinel::new();
    let server = Server::start(5000);
    let mut e = engine();
    let roles = [Role::Worker, Role::Adapter, Role::Launcher, Role::Debuggee];
    let chains = abandoned_chains(
        &server,
        &mut e,
        ("python", &fixture("py-app/loop.py"), false),
        &roles,
        1,
    )
    .await;
    for (pid, ticks, role) in &chains[0].procs {
        if *role == Role::Adapter {
            assert!(signal_if_same(*pid, *ticks, Signal::SIGSTOP));
        }
    }
    freeze_until_force_killed(&mut e, &chains).await;
    let findings = every_survivor_found_and_killed(&mut e, &chains, &sentinel, &server).await;
    let adapter = findings
        .iter()
        .find(|f| f.kind == FindingKind::LeakedAdapter)
        .unwrap_or_else(|| panic!("no leaked-adapter: {findings:#?}"));
    let planned: Vec<Role> = adapter
        .plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.role).collect())
        .unwrap_or_default();
    for r in [Role::Adapter, Role::Launcher, Role::Debuggee] {
        assert!(planned.contains(&r), "{r:?} not in the plan {planned:?}");
    }
}
