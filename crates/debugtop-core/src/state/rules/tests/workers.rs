//! The worker rules (`rules/workers.rs`): orphaned-worker and leaked-worker, and the
//! orphaned worker's memoised finding.

use crate::model::{FindingKind, LogEventKind as K, LogOrigin, Role, Severity};
use crate::state::{State, StateConfig};
use crate::testing::{at, ObservationBuilder as Obs, ProcBuilder as P};

use super::{created, held, kinds, memo_follows, run, worker};

#[test]
fn orphaned_worker_of_a_gone_owner_and_near_miss_of_a_live_one() {
    let f = held(|t| {
        Obs::at(t)
            .proc(worker(200, "s-1").owner(999).ppid(1).build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedWorker]);
    assert_eq!(f[0].severity, Severity::Critical);
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("no mcp-debugger server with pid 999")));
    assert_eq!(f[0].id.to_string(), "orphaned-worker:200.2000");
    assert!(
        f[0].plan.as_ref().is_some_and(|p| p.grace_ms == 1000),
        "short grace"
    );
    // An owner that started after the worker is not its owner.
    let f = held(|t| {
        Obs::at(t)
            .proc(worker(200, "s-1").started(crate::testing::at(-900)).build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedWorker]);
    assert!(
        f[0].evidence.iter().any(|e| e.contains("after the worker")),
        "{:?}",
        f[0].evidence
    );
    // Near miss: a live owner that created the session.
    let f = held(|t| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn leaked_worker_after_its_session_ended_and_not_within_the_grace() {
    let ended = |t: i64| {
        let o = created(Obs::at(t), 1, -30, "s-1");
        o.log(
            212,
            10,
            LogOrigin::Server,
            K::SessionStopped {
                session_id: "s-1".into(),
            },
        )
        .proc(worker(200, "s-1").build())
        .build()
    };
    // Ended at 10: still there at 10.9 and 15 is a normal teardown (force-kill at 5 s).
    assert!(run([ended(10), ended(15)]).is_empty());
    let f = run([ended(10), ended(24)]);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    assert_eq!(f[0].since, at(10));
    assert!(
        f[0].evidence[0].contains("still alive 14 s after its session ended"),
        "{:?}",
        f[0].evidence
    );
    assert!(
        f[0].evidence.iter().any(|e| e
            == "witness: the server's log ended the session: marked as STOPPED/TERMINATED (server.log:212)"),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn leaked_worker_the_server_never_created_even_with_its_own_proxy_log() {
    // The worker's own proxy log names the session; the server's log (read from its start)
    // never created it: the worker's log is not the server's word.
    let seed = |t: i64| {
        Obs::at(t)
            .proc(worker(200, "s-9").ppid(4242).build())
            .log(
                1,
                -5,
                LogOrigin::Proxy,
                K::AdapterSpawned {
                    pid: 201,
                    session_id: Some("s-9".into()),
                },
            )
            .build()
    };
    let f = held(seed);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("witness: that server's logs (read from their start) never created session s-9"),
        "{e}"
    );
    assert!(e.contains("not the server 100"), "{e}");
    // Near miss: nothing of the server's own logs was read — its silence proves nothing.
    let f = held(|t| {
        let mut o = Obs::at(t)
            .proc(worker(200, "s-9").build())
            .server_lines(0)
            .build();
        o.servers[0].log_events.clear();
        o
    });
    assert!(f.is_empty(), "{f:#?}");
}

fn healthy_health(
    sessions: &[&str],
    details: Option<Vec<(&str, &[&str])>>,
) -> crate::model::Health {
    crate::model::Health {
        status: "ok".into(),
        mode: Some("http".into()),
        connections: Some(1),
        sessions: sessions.iter().map(|s| (*s).to_owned()).collect(),
        details: details.map(|d| {
            d.into_iter()
                .map(|(h, ds)| crate::model::HttpSessionDetail {
                    http_session: h.into(),
                    open_streams: Some(0),
                    idle_ms: Some(10),
                    stream_lost: None,
                    debug_sessions: ds.iter().map(|x| (*x).to_owned()).collect(),
                })
                .collect()
        }),
        listening: None,
    }
}

#[test]
fn leaked_worker_when_health_lists_no_http_session_not_while_one_is_listed() {
    let obs = |t: i64, sessions: &[&str]| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .health(Ok(healthy_health(sessions, None)))
            .build()
    };
    let f = run([obs(0, &[]), obs(6, &[])]);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("witness: the server's /health lists no HTTP session at all")),
        "{:?}",
        f[0].evidence
    );
    assert!(
        run([obs(0, &["h-1"]), obs(6, &["h-1"])]).is_empty(),
        "a listed HTTP session may hold it"
    );
    assert!(
        run([obs(0, &[]), obs(5, &[])]).is_empty(),
        "within the grace: a close in progress"
    );
}

#[test]
fn leaked_worker_when_health_details_hold_other_sessions_only() {
    let obs = |t: i64, held: &'static [&'static str]| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .health(Ok(healthy_health(&["h-1"], Some(vec![("h-1", held)]))))
            .build()
    };
    let f = run([obs(0, &["s-2"]), obs(6, &["s-2"])]);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("none holding session s-1")),
        "{:?}",
        f[0].evidence
    );
    assert!(
        run([obs(0, &["s-1"]), obs(6, &["s-1"])]).is_empty(),
        "held by a live HTTP session"
    );
}

#[test]
fn leaked_worker_its_own_log_says_done_and_the_reap_line_names_its_session() {
    let done = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .log(
                9,
                10,
                LogOrigin::Proxy,
                K::WorkerFinished {
                    session_id: Some("s-1".into()),
                    said: "[Worker] Shutdown sequence completed.".into(),
                },
            )
            .build()
    };
    assert!(
        run([done(10), done(15)]).is_empty(),
        "it may still be exiting"
    );
    let f = run([done(10), done(17)]);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("the worker's own log says it is done")),
        "{:?}",
        f[0].evidence
    );
    let reaped = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .log(
                7,
                10,
                LogOrigin::Server,
                K::HttpSessionReaped {
                    http_session: "h-1".into(),
                    idle_secs: Some(41),
                    holding: vec!["s-1".into()],
                },
            )
            .build()
    };
    let f = run([reaped(10), reaped(17)]);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("ended with HTTP session h-1 (reaped)")),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn an_orphan_whose_owner_pid_is_taken_by_a_later_server_names_it() {
    // The input beside the worker: a server appears at the owner's pid, started after the
    // worker (so still not its owner). The worker is the same allocation throughout; the
    // evidence must say so the step the server appears.
    let obs = |t: i64| {
        let o = Obs::at(t).proc(
            worker(300, "s-0")
                .started(crate::testing::at(-700))
                .ppid(1)
                .build(),
        );
        if t >= 8 { o } else { o.without_server() }.build()
    };
    let mut s = State::new(StateConfig {
        redact: false,
        ..StateConfig::default()
    });
    let evidence: Vec<Vec<String>> = [0, 6, 7, 8]
        .into_iter()
        .map(|t| {
            s.step(obs(t))
                .snapshot
                .findings
                .iter()
                .find(|f| f.kind == FindingKind::OrphanedWorker)
                .map(|f| f.evidence.clone())
                .unwrap_or_default()
        })
        .collect();
    let says = |i: usize, what: &str| evidence[i].iter().any(|e| e.contains(what));
    assert!(
        says(2, "no mcp-debugger server with pid 100"),
        "{:?}",
        evidence[2]
    );
    assert!(
        says(3, "pid 100 is an mcp-debugger server started at"),
        "{:?}",
        evidence[3]
    );
}

#[test]
fn a_memoised_orphaned_worker_follows_every_input() {
    let base = |t: i64| Obs::at(t).proc(worker(300, "s-0").owner(999).ppid(1).build());
    memo_follows(
        FindingKind::OrphanedWorker,
        300,
        base,
        &[
            ("a child is started under it", &|o| {
                o.proc(P::new(310, Role::Adapter).ppid(300).session("s-0").build())
            }),
            ("it is re-read under another parent", &|o| {
                o.replacing(worker(300, "s-0").owner(999).ppid(77).build())
            }),
        ],
    );
}

/// Upstream's next release: its startup janitor logs each orphan it killed, once the kill is
/// done. A worker it names that still runs is one the janitor failed to end (said in the
/// evidence); a process started after the line only has the pid again (said nothing of).
#[test]
fn a_worker_the_startup_janitor_said_it_killed_but_still_runs_and_a_reused_pid_is_not_it() {
    let killed = |t: i64, started: i64| {
        Obs::at(t)
            .proc(
                worker(200, "s-old")
                    .owner(999)
                    .ppid(1)
                    .started(crate::testing::at(started))
                    .build(),
            )
            .log(
                3,
                2,
                LogOrigin::Server,
                K::ReaperKilledOrphan {
                    pid: 200,
                    owner_pid: Some(999),
                    session_id: Some("s-old".into()),
                    reaper: crate::model::OrphanReaper::Proxy,
                },
            )
            .build()
    };
    let janitor = |f: &crate::model::Finding| {
        f.evidence
            .iter()
            .find(|e| e.contains("startup janitor"))
            .cloned()
    };
    let f = held(|t| killed(t, -100));
    assert_eq!(kinds(&f), [FindingKind::OrphanedWorker]);
    let said = janitor(&f[0]).unwrap_or_else(|| panic!("{:?}", f[0].evidence));
    assert!(
        said.contains("mcp-debugger 100") && said.contains("killed orphan worker 200"),
        "{said}"
    );
    assert!(said.contains("server.log"), "cites the line: {said}");
    // Near miss: pid 200 again, started after the line: another process.
    let f = held(|t| killed(t, 5));
    assert_eq!(kinds(&f), [FindingKind::OrphanedWorker]);
    assert_eq!(janitor(&f[0]), None, "{:?}", f[0].evidence);
}

/// Upstream's next release reaps an HTTP client whose SSE stream dropped and names the debug
/// sessions it held: those sessions are ending (their workers get the teardown's time), and
/// a worker still there after the grace is a leak with that line as its witness.
#[test]
fn a_session_the_stream_lost_reaper_names_is_ending_then_leaking_after_the_grace() {
    let reaped = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .log(
                40,
                10,
                LogOrigin::Server,
                K::HttpSessionStreamLost {
                    http_session: "h-1".into(),
                    secs: Some(120),
                    holding: vec!["s-1".into()],
                },
            )
            .proc(worker(200, "s-1").build())
            .build()
    };
    assert!(
        run([reaped(10), reaped(15)]).is_empty(),
        "ending, not leaking"
    );
    let f = run([reaped(10), reaped(24)]);
    assert_eq!(kinds(&f), [FindingKind::LeakedWorker]);
    assert_eq!(f[0].since, at(10));
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("h-1 (stream-lost)") && e.contains("server.log:40"),
        "{e}"
    );
    // Near miss: the reaper names another session; this one goes on.
    let other = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .log(
                40,
                10,
                LogOrigin::Server,
                K::HttpSessionStreamLost {
                    http_session: "h-2".into(),
                    secs: Some(120),
                    holding: vec!["s-2".into()],
                },
            )
            .proc(worker(200, "s-1").build())
            .build()
    };
    let f = run([other(10), other(24)]);
    assert!(!f.iter().any(|f| f.pids.contains(&200)), "{f:#?}");
}
