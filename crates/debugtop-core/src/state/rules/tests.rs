//! Every finding kind: a positive case and a near-miss negative, from fixtures, through the
//! whole state step (reconcile → rules → confirmation). No process is spawned.

use std::time::Duration;

use crate::model::{
    Finding, FindingKind, HealthError, Language, LogEventKind as K, LogOrigin, Observation,
    ProcState, Role, Severity, Stage,
};
use crate::state::{State, StateConfig};
use crate::testing::{at, ObservationBuilder as Obs, ProcBuilder as P};

use super::{Mode, VerdictConfig};

/// Steps a fresh live-mode state (grace 6 s) over the observations; the last findings.
fn run(obs: impl IntoIterator<Item = Observation>) -> Vec<Finding> {
    run_with(VerdictConfig::default(), obs)
}

fn run_with(config: VerdictConfig, obs: impl IntoIterator<Item = Observation>) -> Vec<Finding> {
    let mut s = State::new(StateConfig {
        verdicts: config,
        redact: false,
        ..StateConfig::default()
    });
    let mut last = Vec::new();
    for o in obs {
        last = s.step(o).snapshot.findings;
    }
    last.into_iter()
        .map(std::sync::Arc::unwrap_or_clone)
        .collect()
}

fn kinds(f: &[Finding]) -> Vec<FindingKind> {
    f.iter().map(|f| f.kind).collect()
}

/// The same observation at t = 0 and t = 6 (the grace).
fn held(build: impl Fn(i64) -> Observation) -> Vec<Finding> {
    run([build(0), build(6)])
}

fn worker(pid: u32, session: &str) -> P {
    P::new(pid, Role::Worker)
        .ppid(100)
        .group(100, 100)
        .owner(100)
        .session(session)
}

fn created(o: Obs, line: u64, t: i64, sid: &str) -> Obs {
    o.log(
        line,
        t,
        LogOrigin::Server,
        K::DebugSessionCreated {
            session_id: sid.into(),
            name: Some("n".into()),
            language: Some("mock".into()),
        },
    )
}

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

#[test]
fn leaked_adapter_under_init_and_near_miss_under_a_live_worker() {
    let adapter = |ppid: u32| {
        P::new(300, Role::Adapter)
            .ppid(ppid)
            .main_pid(100)
            .session("s-1")
            .language(Language::Javascript)
            .build()
    };
    let f = held(|t| created(Obs::at(t), 1, -30, "s-1").proc(adapter(1)).build());
    assert_eq!(kinds(&f), [FindingKind::LeakedAdapter]);
    assert!(
        f[0].evidence[0].contains("its parent is pid 1 (reparented to init), not a live worker")
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("MCP_DEBUGGER_MAIN_PID=100 (a live server)")));
    let f = held(|t| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(adapter(200))
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn spinning_needs_two_hot_samples_and_never_a_debuggee() {
    let obs = |t: i64, cpu: f32| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(
                worker(200, "s-1")
                    .cpu(cpu)
                    .state(ProcState::Running)
                    .build(),
            )
            .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
            .proc(
                P::new(301, Role::Debuggee)
                    .ppid(300)
                    .session("s-1")
                    .cpu(99.0)
                    .state(ProcState::Running)
                    .build(),
            )
            .build()
    };
    let f = run([obs(0, 55.0), obs(3, 55.0), obs(6, 55.0)]);
    assert_eq!(kinds(&f), [FindingKind::Spinning]);
    assert_eq!(f[0].pids, [200], "the busy debuggee is the user's program");
    assert!(
        run([obs(0, 55.0), obs(3, 55.0), obs(6, 1.0)]).is_empty(),
        "a sample that cooled is not spinning"
    );
}

#[test]
fn regression_a_startup_burst_shorter_than_the_grace_is_not_spinning() {
    // A healthy adapter loading its code: hot for two samples 500 ms apart (seen on a loaded
    // machine with a real js-debug), then quiet. It was raised as spinning, with a kill plan.
    let obs = |ms: i64, cpu: f32| {
        created(Obs::at_ms(ms), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(
                P::new(300, Role::Adapter)
                    .ppid(200)
                    .session("s-1")
                    .cpu(cpu)
                    .state(ProcState::Running)
                    .build(),
            )
            .build()
    };
    let burst = [obs(0, 38.0), obs(500, 38.0), obs(1000, 38.0)];
    assert!(run(burst.clone()).is_empty(), "a 1 s burst is not spinning");
    let mut held: Vec<_> = (0..=13).map(|i| obs(i * 500, 38.0)).collect();
    assert_eq!(
        kinds(&run(held.clone())),
        [FindingKind::Spinning],
        "hot for the grace"
    );
    held.push(obs(7000, 0.0));
    assert!(run(held).is_empty(), "cooled: cleared");
}

#[test]
fn zombie_under_a_live_parent_and_near_miss_under_init() {
    let z = |ppid: u32| {
        move |t: i64| {
            created(Obs::at(t), 1, -30, "s-1")
                .proc(
                    worker(200, "s-1")
                        .state(ProcState::Zombie)
                        .ppid(ppid)
                        .build(),
                )
                .build()
        }
    };
    let f = held(z(100));
    assert!(kinds(&f).contains(&FindingKind::Zombie), "{f:#?}");
    assert!(
        !kinds(&f)
            .iter()
            .any(|k| matches!(k, FindingKind::LeakedWorker | FindingKind::OrphanedWorker)),
        "a zombie worker is dead: neither leaked nor orphaned"
    );
    assert!(f
        .iter()
        .all(|f| f.kind != FindingKind::Zombie || f.plan.is_none()));
    let f = held(z(1));
    assert!(
        !kinds(&f).contains(&FindingKind::Zombie),
        "init reaps late: {f:#?}"
    );
}

#[test]
fn stopped_adapter_warns_stopped_server_is_critical_running_is_neither() {
    let f = held(|t| {
        let mut o = created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(
                P::new(300, Role::Adapter)
                    .ppid(200)
                    .session("s-1")
                    .state(ProcState::Stopped)
                    .build(),
            )
            .build();
        o.table.procs[0].sample.state = ProcState::Stopped;
        o
    });
    let stopped: Vec<(u32, Severity)> = f
        .iter()
        .filter(|f| f.kind == FindingKind::Stopped)
        .map(|f| (f.pids[0], f.severity))
        .collect();
    assert_eq!(
        stopped,
        [(100, Severity::Critical), (300, Severity::Warning)]
    );
    let f = held(|t| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
}

#[test]
fn session_without_worker_once_started_not_while_starting() {
    let state = |to: &str| {
        let to = to.to_owned();
        move |t: i64| {
            created(Obs::at(t), 1, -30, "s-1")
                .log(
                    2,
                    -20,
                    LogOrigin::Server,
                    K::StateChanged {
                        session_id: "s-1".into(),
                        from: "created".into(),
                        to: to.clone(),
                    },
                )
                .build()
        }
    };
    let f = held(state("paused"));
    assert_eq!(kinds(&f), [FindingKind::SessionWithoutWorker]);
    assert!(
        f[0].evidence[0].contains("in state paused per server.log:2"),
        "{:?}",
        f[0].evidence
    );
    assert!(held(state("initializing")).is_empty());
    // Regression: a state word this build does not know (any log can say one) was
    // `SessionState::Unknown`, whose Display panicked ("fmt() called on disabled variant") as
    // the finding's evidence was written — in a release build, an abort of the whole monitor.
    let f = held(state("frobnicated"));
    assert_eq!(kinds(&f), [FindingKind::SessionWithoutWorker]);
    assert!(
        f[0].evidence[0].contains("in state unknown"),
        "{:?}",
        f[0].evidence
    );
}

#[test]
fn a_session_the_server_failed_to_start_is_history_not_a_session_without_worker() {
    let changed = |from: &str, to: &str| K::StateChanged {
        session_id: "s-1".into(),
        from: from.into(),
        to: to.into(),
    };
    // The real 0.24.2 order: the server stops the worker itself, then says why it gave up.
    let failed = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .log(
                2,
                -25,
                LogOrigin::Server,
                changed("created", "initializing"),
            )
            .log(
                3,
                -20,
                LogOrigin::Server,
                K::WorkerExited {
                    session_id: "s-1".into(),
                    code: None,
                    signal: Some("SIGTERM".into()),
                    expected: Some(true),
                },
            )
            .log(
                4,
                -20,
                LogOrigin::Server,
                changed("initializing", "stopped"),
            )
            .log(
                5,
                -20,
                LogOrigin::Server,
                K::StartFailed {
                    session_id: "s-1".into(),
                    reason: "Proxy exited during initialization.".into(),
                },
            )
            .log(6, -20, LogOrigin::Server, changed("stopped", "error"))
            .build()
    };
    assert!(held(failed).is_empty());
    // Near miss: a worker that died unexpectedly under a paused session is still one, and an
    // exit the server could not name says nothing about "undefined".
    let died = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .log(2, -25, LogOrigin::Server, changed("created", "paused"))
            .log(
                3,
                -20,
                LogOrigin::Server,
                K::WorkerExited {
                    session_id: "s-1".into(),
                    code: Some(1),
                    signal: None,
                    expected: None,
                },
            )
            .log(4, -20, LogOrigin::Server, changed("paused", "error"))
            .build()
    };
    let f = held(died);
    assert_eq!(kinds(&f), [FindingKind::SessionWithoutWorker]);
    assert!(
        f[0].evidence[1].starts_with("worker exited under a live session with code 1"),
        "{:?}",
        f[0].evidence
    );
    assert!(!f[0].evidence.iter().any(|e| e.contains("undefined")));
}

#[test]
fn server_unresponsive_when_health_fails_not_when_it_answers() {
    let e = HealthError::TimedOut {
        url: "http://127.0.0.1:3001/health".into(),
        ms: 700,
    };
    let f = held(|t| Obs::at(t).health(Err(e.clone())).build());
    assert_eq!(kinds(&f), [FindingKind::ServerUnresponsive]);
    assert!(f[0].evidence[0].contains("no answer within 700 ms"));
    assert!(held(|t| Obs::at(t).build()).is_empty());
}

#[test]
fn audit_mode_confirms_in_two_samples_and_a_cleared_condition_resets() {
    let orphan = |t: i64| {
        Obs::at(t)
            .proc(worker(200, "s-1").owner(999).ppid(1).build())
            .build()
    };
    let audit = VerdictConfig {
        mode: Mode::Audit,
        ..VerdictConfig::default()
    };
    assert!(
        run_with(audit, [orphan(0)]).is_empty(),
        "one sample is not confirmed"
    );
    assert_eq!(
        kinds(&run_with(audit, [orphan(0), orphan(1)])),
        [FindingKind::OrphanedWorker]
    );
    let live = VerdictConfig {
        grace: Duration::from_secs(6),
        ..VerdictConfig::default()
    };
    assert!(
        run_with(live, [orphan(0), orphan(5)]).is_empty(),
        "not yet past the grace"
    );
    assert!(
        run_with(live, [orphan(0), Obs::at(3).build(), orphan(6)]).is_empty(),
        "a condition that clears starts over"
    );
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
fn a_lone_debuggee_whose_adapter_died_is_leaked_with_its_group() {
    let lone = |t: i64| {
        created(Obs::at(t), 1, -30, "s-1")
            .log(
                5,
                -5,
                LogOrigin::Server,
                K::SessionStopped {
                    session_id: "s-1".into(),
                },
            )
            .proc(
                P::new(301, Role::Debuggee)
                    .ppid(1)
                    .group(300, 300)
                    .main_pid(100)
                    .bootloader()
                    .session("s-1")
                    .build(),
            )
            .proc(
                P::new(302, Role::Watchdog)
                    .ppid(1)
                    .inspector(301)
                    .session("s-1")
                    .build(),
            )
            .build()
    };
    let f = held(lone);
    assert_eq!(
        kinds(&f),
        [FindingKind::LeakedDebuggee],
        "the watchdog is in the debuggee's plan, not a finding of its own"
    );
    let e = f[0].evidence.join("\n");
    for says in [
        "runs on without its adapter: its parent is pid 1",
        "the leader of its process group 300 is gone",
        "MCP_DEBUGGER_MAIN_PID=100 (a live server)",
        "js-debug's bootloader",
        "its session ended: marked as STOPPED/TERMINATED",
    ] {
        assert!(e.contains(says), "{says:?} missing from {e}");
    }
    let planned: Vec<u32> = f[0]
        .plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.pid).collect())
        .unwrap_or_default();
    assert!(
        planned.contains(&301) && planned.contains(&302),
        "{planned:?}"
    );
}

#[test]
fn near_misses_of_a_leaked_debuggee() {
    // Under a live adapter: the adapter answers for it.
    let f = held(|t| {
        created(Obs::at(t), 1, -30, "s-1")
            .proc(worker(200, "s-1").build())
            .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
            .proc(
                P::new(301, Role::Debuggee)
                    .ppid(300)
                    .group(300, 300)
                    .main_pid(100)
                    .bootloader()
                    .session("s-1")
                    .build(),
            )
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A node process with js-debug's bootloader but nothing tying it to mcp-debugger (VS
    // Code's auto-attach in a terminal): not ours.
    let f = held(|t| {
        Obs::at(t)
            .proc(
                P::new(400, Role::Debuggee)
                    .ppid(1)
                    .bootloader()
                    .server(None)
                    .build(),
            )
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
}

fn stdio_server(pid: u32) -> P {
    P::new(pid, Role::Server)
        .ppid(1)
        .argv("node /n/@modelcontextprotocol/server-memory/dist/index.js")
        .mcp(crate::model::McpEvidence::Argv {
            arg: "/n/@modelcontextprotocol/server-memory/dist/index.js".into(),
        })
        .piped(77)
}

#[test]
fn orphaned_server_nobody_can_write_to_its_host_gone() {
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).holders(&[]).host(500, 5000).build())
            .proc(P::new(601, Role::Other).ppid(600).server(Some(600)).build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer]);
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("no process holds the writing end of its stdio pipe (pipe:[77])"),
        "{e}"
    );
    assert!(e.contains("its MCP host 500 (host500) is gone"), "{e}");
    assert!(
        e.contains("its command line names /n/@modelcontextprotocol/server-memory"),
        "{e}"
    );
    assert!(e.contains("still running under it: 601"), "{e}");
    let planned: Vec<u32> = f[0]
        .plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.pid).collect())
        .unwrap_or_default();
    assert_eq!(
        planned,
        [601, 600],
        "what it started first, then the server"
    );
}

#[test]
fn orphaned_server_where_pipe_holders_cannot_be_checked_rests_on_its_gone_parent() {
    // Windows: nobody's handles can be enumerated; the process that started it (pid 500, its
    // parent pid as Windows keeps it) is gone.
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).ppid(500).holders_unchecked().build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer]);
    let e = f[0].evidence.join("\n");
    assert!(e.contains("cannot be checked here"), "{e}");
    assert!(e.contains("rests on its host being gone"), "{e}");
    assert!(
        e.contains("the process that started it (pid 500) is gone"),
        "{e}"
    );
    // Near misses: its parent lives (and was there before it); or the pid 500 was reused by a
    // younger process, which is no parent — then it is an orphan again.
    let parent = P::new(500, Role::Other).build();
    let f = held(|t| {
        Obs::at(t)
            .proc(parent.clone())
            .proc(stdio_server(600).ppid(500).holders_unchecked().build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    let mut younger = parent;
    younger.start_time += chrono::Duration::hours(1);
    let f = held(|t| {
        Obs::at(t)
            .proc(younger.clone())
            .proc(stdio_server(600).ppid(500).holders_unchecked().build())
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer], "{f:#?}");
}

fn planned(f: &Finding) -> Vec<u32> {
    f.plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.pid).collect())
        .unwrap_or_default()
}

#[test]
fn a_server_leaked_through_npx_is_one_orphaned_server_planned_from_its_wrapper_down() {
    use crate::model::Adopted;
    // npm exec (re-parented to init) → sh -c → the server → its child; the server says MCP by
    // its package only, its wrappers share its dead stdin pipe.
    let chain = |t: i64| {
        Obs::at(t)
            .proc(
                P::new(700, Role::Wrapper)
                    .argv("npm exec --package=/w/tool -- tool")
                    .adopted(Adopted::Init)
                    .server(Some(702))
                    .piped(77)
                    .holders(&[])
                    .build(),
            )
            .proc(
                P::new(701, Role::Wrapper)
                    .argv("sh -c tool")
                    .ppid(700)
                    .server(Some(702))
                    .piped(77)
                    .build(),
            )
            .proc(
                stdio_server(702)
                    .ppid(701)
                    .argv("node /w/tool/index.mjs")
                    .mcp(crate::model::McpEvidence::Package {
                        file: "/w/tool/package.json".into(),
                        says: "dependencies has @modelcontextprotocol/sdk".into(),
                    })
                    .holders(&[])
                    .build(),
            )
            .proc(P::new(703, Role::Other).ppid(702).server(Some(702)).build())
            .build()
    };
    let f = held(chain);
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer], "{f:#?}");
    assert_eq!(planned(&f[0]), [703, 702, 701, 700], "leaves first");
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("started through npx: pid 700 (npm exec --package=/w/tool -- tool), re-parented to init"),
        "{e}"
    );
    assert!(e.contains("/w/tool/package.json — dependencies has"), "{e}");
}

#[test]
fn an_adopted_process_nobody_can_write_to_is_an_orphaned_stdio_warning_not_critical() {
    use crate::model::Adopted;
    let helper = |holders: &'static [u32], adopted: Option<Adopted>| {
        move |t: i64| {
            let mut p = P::new(800, Role::Other)
                .argv("python3 -c import time")
                .server(Some(800))
                .piped(88)
                .holders(holders);
            p = match adopted.clone() {
                Some(a) => p.adopted(a),
                None => p.ppid(500),
            };
            Obs::at(t)
                .proc(p.build())
                .proc(P::new(801, Role::Other).ppid(800).server(Some(800)).build())
                .build()
        }
    };
    let f = held(helper(
        &[],
        Some(Adopted::Subreaper {
            pid: 40,
            name: "systemd --user".into(),
        }),
    ));
    assert_eq!(kinds(&f), [FindingKind::OrphanedStdio], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(planned(&f[0]), [801, 800]);
    let e = f[0].evidence.join("\n");
    assert!(
        e.contains("no process holds the writing end of its stdin pipe (pipe:[88]), so nothing can write to it"),
        "{e}"
    );
    assert!(
        e.contains("adopted by the subreaper systemd --user (pid 40)"),
        "{e}"
    );
    // Near misses: someone still holds the writing end; its parent is the one that started it.
    assert!(held(helper(&[900], Some(Adopted::Init))).is_empty());
    assert!(held(helper(&[], None)).is_empty());
}

#[test]
fn a_spinning_orphan_on_a_closed_pipe_is_orphaned_and_spinning_with_one_plan() {
    use crate::model::Adopted;
    // claude-code's shape: the orphan itself loops on writes to its closed stdout (state R).
    let obs = |t: i64, cpu: f32| {
        Obs::at(t)
            .proc(
                P::new(800, Role::Other)
                    .argv("python3 -c spin")
                    .adopted(Adopted::Init)
                    .server(Some(800))
                    .piped(88)
                    .holders(&[])
                    .cpu(cpu)
                    .state(ProcState::Running)
                    .build(),
            )
            .proc(P::new(801, Role::Other).ppid(800).server(Some(800)).build())
            .build()
    };
    let f = run([obs(0, 97.0), obs(3, 97.0), obs(6, 97.0)]);
    assert_eq!(
        kinds(&f),
        [FindingKind::OrphanedStdio, FindingKind::Spinning],
        "{f:#?}"
    );
    let (orphan, spin) = (&f[0], &f[1]);
    assert_eq!(orphan.plan, spin.plan, "one plan for both");
    assert_eq!(planned(spin), [801, 800]);
    assert!(
        spin.plan.as_ref().is_some_and(|p| p.grace_ms <= 1_000),
        "SIGKILL follows after a second"
    );
    assert!(
        spin.evidence
            .iter()
            .any(|e| e.contains("part of a leaked stdio chain from pid 800")),
        "{:?}",
        spin.evidence
    );
    // Near miss: the same orphan idle is no spinner (and its plan keeps the normal grace).
    let f = run([obs(0, 0.5), obs(3, 0.5), obs(6, 0.5)]);
    assert_eq!(kinds(&f), [FindingKind::OrphanedStdio]);
}

#[test]
fn near_misses_of_an_orphaned_server() {
    // Its host is alive and writes to it.
    let host = P::new(500, Role::Host).build();
    let f = held(|t| {
        Obs::at(t)
            .proc(host.clone())
            .proc(
                stdio_server(600)
                    .ppid(500)
                    .holders(&[500])
                    .host(500, 5000)
                    .build(),
            )
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A supervisor still holds its pipes (its host is gone, but someone can write to it).
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).holders(&[42]).build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A daemon under init with stdin /dev/null.
    let f = held(|t| {
        Obs::at(t)
            .proc(stdio_server(600).stdin_null().build())
            .build()
    });
    assert!(f.is_empty(), "{f:#?}");
    // A dead pipe but nothing says it is an MCP server.
    let mut plain = P::new(600, Role::Server)
        .ppid(1)
        .piped(77)
        .holders(&[])
        .build();
    plain.server_pid = Some(600);
    let f = held(|t| Obs::at(t).proc(plain.clone()).build());
    assert!(f.is_empty(), "{f:#?}");
}

/// A live host (500) and two stdio servers it started with one command line: 600 started ten
/// minutes ago, silent since `a_quiet`; 601 started at `b_started`, silent since `b_quiet`
/// (offsets from each tick's time, in seconds).
fn twins(a_quiet: i64, b_started: i64, b_quiet: i64) -> impl Fn(i64) -> Observation {
    twins_where(a_quiet, b_started, b_quiet, |o| o)
}

/// [`twins`], each tick's observation changed by `edit`.
fn twins_where(
    a_quiet: i64,
    b_started: i64,
    b_quiet: i64,
    edit: impl Fn(Obs) -> Obs,
) -> impl Fn(i64) -> Observation {
    move |t| {
        let server = |pid: u32, started: i64, quiet: i64| {
            stdio_server(pid)
                .ppid(500)
                .holders(&[500])
                .host(500, 5000)
                .started(crate::testing::at(started))
                .quiet_since(crate::testing::at(t + quiet))
        };
        let o = Obs::at(t)
            .proc(server(600, -600, a_quiet).build())
            .proc(P::new(602, Role::Other).ppid(600).server(Some(600)).build())
            .proc(server(601, b_started, b_quiet).build());
        edit(o).build()
    }
}

fn with_host(o: Obs) -> Obs {
    o.proc(
        P::new(500, Role::Host)
            .started(crate::testing::at(-900))
            .build(),
    )
}

#[test]
fn an_older_twin_silent_while_the_newer_talks_under_a_live_host_is_a_duplicate_server() {
    // Silent since before its twin started (a reconnect after a config edit).
    let f = held(twins_where(-300, -100, -100, with_host));
    assert_eq!(kinds(&f), [FindingKind::DuplicateServer], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Warning);
    assert_eq!(f[0].pids, [600]);
    assert_eq!(
        planned(&f[0]),
        [602, 600],
        "the older one and what it started"
    );
    let e = f[0].evidence.join("\n");
    assert!(e.contains("has read and written nothing for 300 s"), "{e}");
    assert!(
        e.contains("pid 601, started 194 s after it fell silent"),
        "{e}"
    );
    assert!(
        e.contains("host 500 (host500) is alive and still holds its stdin"),
        "{e}"
    );
    // debugtop came later: the older one silent since its first look, the newer one talking.
    let f = held(twins_where(-50, -100, 0, with_host));
    assert_eq!(kinds(&f), [FindingKind::DuplicateServer], "{f:#?}");
    assert!(f[0]
        .evidence
        .join("\n")
        .contains("has talked since it fell silent"));
}

#[test]
fn near_misses_of_a_duplicate_server() {
    let live = |a, b, c| held(twins_where(a, b, c, with_host));
    // Twins that both talk.
    assert!(live(0, -100, 0).is_empty());
    // Neither talked since debugtop first looked: which one the host uses cannot be told.
    assert!(live(-50, -100, -50).is_empty());
    // Silent, but not for long.
    assert!(live(-10, -5, 0).is_empty());
    // The newer one is the silent one: the host still uses the older.
    assert!(live(0, -100, -90).is_empty());
    // Not twins: another command line.
    let f = held(twins_where(-300, -100, -100, |o| {
        with_host(o).proc(
            stdio_server(603)
                .ppid(500)
                .argv("node other.js")
                .holders(&[500])
                .host(500, 5000)
                .started(crate::testing::at(-100))
                .build(),
        )
    }));
    assert_eq!(f.len(), 1, "only the real twin: {f:#?}");
    // Their host is gone: the orphan rules speak, not this one.
    let f = held(twins(-300, -100, -100));
    assert!(!kinds(&f).contains(&FindingKind::DuplicateServer), "{f:#?}");
}

/// A stdio MCP server as the main process of container `e84ebd27c0a2` (pid `inner` there),
/// its shim (pid 650) its parent; `holders` hold the writing end of its stdin.
fn container_server(inner: u32, holders: &'static [u32]) -> impl Fn(i64) -> Observation {
    move |t| {
        Obs::at(t)
            .proc(
                stdio_server(600)
                    .ppid(650)
                    .holders(holders)
                    .in_container(9, inner, Some("e84ebd27c0a2"))
                    .build(),
            )
            .proc(P::new(601, Role::Other).ppid(600).server(Some(600)).build())
            .build()
    }
}

#[test]
fn a_containers_stdio_server_nobody_can_write_to_is_an_orphaned_container_ended_through_docker() {
    let f = held(container_server(1, &[]));
    assert_eq!(kinds(&f), [FindingKind::OrphanedContainer], "{f:#?}");
    assert_eq!(f[0].severity, Severity::Critical);
    let plan = f[0].plan.as_ref().expect("a plan");
    assert_eq!(
        plan.container,
        Some(crate::model::ContainerStop {
            id: "e84ebd27c0a2".into(),
            main_pid: 600,
            main_start_ticks: 6000,
        })
    );
    assert_eq!(
        planned(&f[0]),
        [601, 600],
        "what runs in it, if it outlives docker kill"
    );
    assert!(f[0]
        .suggested_action
        .starts_with("docker kill e84ebd27c0a2"));
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("main process of container e84ebd27c0a2")));
    // Near misses: a live client (the shim holds the writing end); a server that is not the
    // container's main process is an orphaned server, planned by signals.
    assert!(held(container_server(1, &[650])).is_empty());
    let f = held(container_server(7, &[]));
    assert_eq!(kinds(&f), [FindingKind::OrphanedServer], "{f:#?}");
    assert_eq!(f[0].plan.as_ref().and_then(|p| p.container.clone()), None);
}

#[test]
fn a_stopped_stdio_server_is_a_warning_not_critical() {
    let f = held(|t| {
        Obs::at(t)
            .proc(P::new(500, Role::Host).build())
            .proc(
                stdio_server(600)
                    .ppid(500)
                    .holders(&[500])
                    .host(500, 5000)
                    .state(ProcState::Stopped)
                    .build(),
            )
            .build()
    });
    assert_eq!(kinds(&f), [FindingKind::Stopped]);
    assert_eq!(f[0].severity, Severity::Warning);
}

#[test]
fn a_live_state_redacts_its_timeline_and_log_events_as_they_come() {
    let mut s = State::new(StateConfig {
        redact: true,
        ..StateConfig::default()
    });
    let said = "[Worker] Shutdown sequence completed. token=Zq1secretvalue";
    let mut last = None;
    let mut events = Vec::new();
    for t in [0, 1] {
        let o = created(Obs::at(t), 1, -30, "s-1").log(
            2,
            -1,
            LogOrigin::Proxy,
            K::WorkerFinished {
                session_id: Some("s-1".into()),
                said: said.into(),
            },
        );
        let u = s.step(o.build());
        events.extend(u.events.clone());
        last = Some(u);
    }
    let u = last.unwrap();
    assert!(!events.is_empty(), "the log events were published");
    let timeline = serde_json::to_string(&u.snapshot.timeline).unwrap();
    assert!(
        timeline.contains("token=‹redacted›"),
        "the event is there, redacted: {timeline}"
    );
    assert!(!timeline.contains("Zq1secretvalue"), "{timeline}");
    let events = serde_json::to_string(&events).unwrap();
    assert!(!events.contains("Zq1secretvalue"), "{events}");
}

/// Many orphans of one gone server, and one of another: two groups, one bulk plan each.
fn orphans() -> (
    Vec<Finding>,
    crate::model::LiveTable,
    Vec<crate::model::FindingGroup>,
) {
    let build = |t| {
        let mut o = Obs::at(t);
        for i in 0..40 {
            o = o.proc(
                worker(300 + i, &format!("s-{i}"))
                    .owner(999)
                    .ppid(1)
                    .build(),
            );
        }
        o.proc(worker(400, "s-other").owner(998).ppid(1).build())
            .build()
    };
    let mut s = State::new(StateConfig {
        redact: false,
        ..StateConfig::default()
    });
    let _ = s.step(build(0));
    let snap = s.step(build(6)).snapshot;
    let findings = snap
        .findings
        .into_iter()
        .map(std::sync::Arc::unwrap_or_clone)
        .collect();
    (findings, s.live().clone(), snap.groups)
}

#[test]
fn findings_are_grouped_by_kind_and_cause() {
    let (findings, _, groups) = orphans();
    assert_eq!(findings.len(), 41);
    let titles: Vec<&str> = groups.iter().map(|g| g.title.as_str()).collect();
    assert_eq!(
        titles,
        [
            "40 orphaned workers of gone server 999",
            "1 orphaned worker of gone server 998"
        ]
    );
    assert_eq!(groups[0].key, "orphaned-worker@999");
    assert_eq!((groups[0].pids, groups[0].killable), (40, true));
    assert_eq!(groups[0].severity, Severity::Critical);
    // Near miss: a thousand of them still read as one line with a readable count.
    let mut many = Vec::new();
    for i in 0..1000 {
        let mut f = findings[0].clone();
        f.id = format!("orphaned-worker:{}.1", 10_000 + i)
            .parse()
            .unwrap_or(f.id);
        many.push(f);
    }
    let g = crate::model::group_findings(&many);
    assert_eq!(g.len(), 1);
    assert_eq!(g[0].title, "1,000 orphaned workers of gone server 999");
}

#[test]
fn one_bulk_plan_for_a_kind_of_one_server_and_for_several_ids() {
    use crate::actions::kill::{plan_for, KillOptions, KillRequest};
    let (findings, live, _) = orphans();
    let pids = |r: &KillRequest| -> Vec<u32> {
        let mut v: Vec<u32> = plan_for(r, &findings, &live, KillOptions::default())
            .map(|p| p.targets.iter().map(|t| t.pid).collect())
            .unwrap_or_default();
        v.sort_unstable();
        v
    };
    let of_999 = KillRequest::Kind {
        kind: FindingKind::OrphanedWorker,
        server: Some(999),
    };
    assert_eq!(pids(&of_999), (300..340).collect::<Vec<u32>>());
    let all = KillRequest::Kind {
        kind: FindingKind::OrphanedWorker,
        server: None,
    };
    assert_eq!(pids(&all).len(), 41);
    let two = KillRequest::Findings {
        ids: vec![findings[0].id.clone(), findings[40].id.clone()],
    };
    assert_eq!(pids(&two).len(), 2);
    // Near misses: a kind with no finding, and an id that is not current, plan nothing.
    let none = KillRequest::Kind {
        kind: FindingKind::LeakedAdapter,
        server: None,
    };
    let e = plan_for(&none, &findings, &live, KillOptions::default());
    assert!(e.is_err_and(|e| e.to_string().contains("no current leaked-adapter finding")));
    let stale = KillRequest::Findings {
        ids: vec![
            findings[0].id.clone(),
            "orphaned-worker:1.1"
                .parse()
                .unwrap_or(findings[0].id.clone()),
        ],
    };
    assert!(plan_for(&stale, &findings, &live, KillOptions::default()).is_err());
}

fn go(o: impl IntoIterator<Item = Obs>) -> Vec<Finding> {
    run(o.into_iter().map(Obs::build))
}

/// A session of server 100 whose worker (200) and adapter (300) run, in `state` since `since`,
/// whose worker logged `stages` (seconds from the start).
fn starting(t: i64, state: &str, since: i64, stages: &[(i64, Stage)]) -> Obs {
    starting_with(t, state, since, stages)
        .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
}

/// [`starting`] without the adapter's process: the worker logged spawning adapter 300, which
/// is gone.
fn starting_with(t: i64, state: &str, since: i64, stages: &[(i64, Stage)]) -> Obs {
    let mut o = created(Obs::at(t), 1, -3600, "s-1")
        .log(
            2,
            since,
            LogOrigin::Server,
            K::StateChanged {
                session_id: "s-1".into(),
                from: "created".into(),
                to: state.into(),
            },
        )
        .proc(worker(200, "s-1").build());
    if !stages.is_empty() {
        o = o.log(
            3,
            since,
            LogOrigin::Proxy,
            K::AdapterSpawned {
                pid: 300,
                session_id: Some("s-1".into()),
            },
        );
    }
    for (i, (at, stage)) in stages.iter().enumerate() {
        o = o.log(
            10 + i as u64,
            *at,
            LogOrigin::Proxy,
            K::Stage {
                session_id: Some("s-1".into()),
                stage: stage.clone(),
            },
        );
    }
    o
}

fn handshake_to(n: usize, at: i64) -> Vec<(i64, Stage)> {
    use crate::model::StartRequest as R;
    let all = [
        Stage::ConnectAttempt {
            attempt: 1,
            of: 60,
            address: "127.0.0.1:4711".into(),
        },
        Stage::Connected,
        Stage::Sent {
            request: R::Initialize,
        },
        Stage::Answered {
            request: R::Initialize,
        },
        Stage::Sent { request: R::Launch },
        Stage::Sent {
            request: R::ConfigurationDone,
        },
        Stage::Answered {
            request: R::ConfigurationDone,
        },
        Stage::Stopped {
            reason: "entry".into(),
        },
    ];
    all.into_iter().take(n).map(|s| (at, s)).collect()
}

fn stuck_of(f: &[Finding]) -> Option<&Finding> {
    f.iter().find(|f| f.kind == FindingKind::StuckSession)
}

#[test]
fn stuck_session_on_a_pending_initialize_past_ten_seconds_not_before() {
    let f = go([starting(0, "initializing", -12, &handshake_to(3, -11))]);
    let s = stuck_of(&f).unwrap_or_else(|| panic!("{f:#?}"));
    assert_eq!(s.severity, Severity::Warning);
    let ev = s.evidence.join("\n");
    assert!(
        ev.contains("initialize request pending for 11 s; adapter 300 alive, connected at"),
        "{ev}"
    );
    assert!(ev.contains("(proxy-s.log:11)"), "{ev}");
    assert_eq!(
        s.plan.as_ref().map(|p| p.targets[0].pid),
        Some(300),
        "the adapter chain"
    );
    // Past the server's own 30 s: critical.
    let f = go([starting(0, "initializing", -31, &handshake_to(3, -30))]);
    assert_eq!(stuck_of(&f).map(|s| s.severity), Some(Severity::Critical));
    // The logged adapter is gone: not called alive, and no kill of a pid that is not there.
    let f = go([starting_with(0, "initializing", -12, &handshake_to(3, -11))]);
    let s = stuck_of(&f).unwrap_or_else(|| panic!("{f:#?}"));
    let ev = s.evidence.join("\n");
    assert!(
        ev.contains("no live adapter") && !ev.contains("adapter 300 alive"),
        "{ev}"
    );
    assert!(s.plan.is_none() && s.suggested_action.contains("close_debug_session"));
    // Near miss: the same stage at 8 s is a normal (slow) start.
    let f = go([starting(0, "initializing", -8, &handshake_to(3, -8))]);
    assert!(stuck_of(&f).is_none(), "{f:#?}");
}

#[test]
fn stuck_session_on_connect_attempts_and_not_once_connected_through() {
    let mut stages = handshake_to(1, -11);
    stages.push((
        0,
        Stage::ConnectAttempt {
            attempt: 48,
            of: 60,
            address: "127.0.0.1:4711".into(),
        },
    ));
    let f = go([starting(0, "initializing", -11, &stages)]);
    let ev = stuck_of(&f)
        .map(|s| s.evidence.join("\n"))
        .unwrap_or_default();
    assert!(
        ev.contains("connect attempt 48/60 to 127.0.0.1:4711"),
        "{ev}"
    );
    assert!(ev.contains("the first at"), "{ev}");
    // The worker gave up while the adapter lives: still stuck, on the failed connect.
    let mut gave_up = handshake_to(1, -14);
    gave_up.push((-1, Stage::ConnectFailed { attempts: 60 }));
    let f = go([starting(0, "initializing", -14, &gave_up)]);
    let ev = stuck_of(&f)
        .map(|s| s.evidence.join("\n"))
        .unwrap_or_default();
    assert!(
        ev.contains("gave up connecting after 60 attempts") && ev.contains("adapter 300 alive"),
        "{ev}"
    );
    // Near misses: a start through to its first stop, or past configurationDone (running
    // without a stop on entry), however long ago, while the server still says initializing.
    for n in [7, 8] {
        let f = go([starting(0, "initializing", -600, &handshake_to(n, -599))]);
        assert!(stuck_of(&f).is_none(), "{n} stages: {f:#?}");
    }
    // Near miss: no line of the worker's (an older server, a log not read): nothing proves a
    // stall, whatever the server's state says.
    let f = go([starting(0, "initializing", -600, &[])]);
    assert!(stuck_of(&f).is_none(), "{f:#?}");
}

#[test]
fn stuck_session_on_an_unanswered_request_never_on_a_long_pause() {
    let paused = |pending: &[(&str, i64)]| {
        starting(0, "paused", -3600, &handshake_to(8, -3601)).trace("s-1", pending)
    };
    let f = go([paused(&[("evaluate", -15)])]);
    let ev = stuck_of(&f)
        .map(|s| s.evidence.join("\n"))
        .unwrap_or_default();
    assert!(
        ev.contains("DAP request evaluate (seq 1)") && ev.contains("unanswered for 15 s"),
        "{ev}"
    );
    assert!(
        stuck_of(&f).is_some_and(|s| s.plan.is_none()),
        "close, not kill"
    );
    // Near misses: paused for an hour with nothing waiting, or a request 5 s old.
    for pending in [&[][..], &[("evaluate", -5)][..]] {
        let f = go([paused(pending)]);
        assert!(stuck_of(&f).is_none(), "{pending:?}: {f:#?}");
    }
}

#[test]
fn stuck_session_when_a_running_debuggee_is_stopped_by_a_signal_not_by_its_debugger() {
    let running = |t: i64, state: ProcState, tracer: Option<u32>| {
        let mut d = P::new(400, Role::Debuggee)
            .ppid(300)
            .session("s-1")
            .state(state);
        if let Some(tr) = tracer {
            d = d.traced_by(tr);
        }
        starting(t, "running", -100, &handshake_to(7, -100)).proc(d.build())
    };
    let f = go([
        running(0, ProcState::Stopped, None),
        running(11, ProcState::Stopped, None),
    ]);
    let s = stuck_of(&f).unwrap_or_else(|| panic!("{f:#?}"));
    assert!(
        s.evidence[0].contains("debuggee 400 is stopped by a signal"),
        "{:?}",
        s.evidence
    );
    assert!(s.suggested_action.contains("kill -CONT 400") && s.plan.is_none());
    // Near misses: not yet for the threshold; stopped by its debugger (`t`, traced); a
    // session paused by the user whose debuggee is stopped.
    let f = go([
        running(0, ProcState::Stopped, None),
        running(5, ProcState::Stopped, None),
    ]);
    assert!(stuck_of(&f).is_none(), "{f:#?}");
    let f = go([
        running(0, ProcState::TracingStop, Some(300)),
        running(11, ProcState::TracingStop, Some(300)),
    ]);
    assert!(stuck_of(&f).is_none(), "{f:#?}");
}

/// An orphaned worker's finding at t = 6, 7, 8, 9: the three after the first are stepped from
/// `later(t)`; each step's finding about pid 300, and its plan's pids.
fn orphan_over_steps(later: impl Fn(i64) -> Obs) -> Vec<(std::sync::Arc<Finding>, Vec<u32>)> {
    let first = |t| {
        Obs::at(t)
            .proc(worker(300, "s-0").owner(999).ppid(1).build())
            .proc(worker(301, "s-1").owner(999).ppid(1).build())
    };
    let mut s = State::new(StateConfig {
        redact: false,
        ..StateConfig::default()
    });
    let _ = s.step(first(0).build());
    let mut out = Vec::new();
    for (t, o) in [(6, first(6)), (7, later(7)), (8, later(8)), (9, later(9))] {
        let snap = s.step(o.build()).snapshot;
        let f = snap
            .findings
            .iter()
            .find(|f| f.kind == FindingKind::OrphanedWorker && f.pids == [300])
            .cloned()
            .unwrap_or_else(|| panic!("no finding about 300 at t = {t}"));
        let pids = f
            .plan
            .as_ref()
            .map(|p| p.targets.iter().map(|t| t.pid).collect())
            .unwrap_or_default();
        out.push((f, pids));
    }
    out
}

#[test]
fn an_unchanged_orphan_keeps_its_finding_and_plan_across_steps() {
    let steps = orphan_over_steps(|t| {
        Obs::at(t)
            .proc(worker(300, "s-0").owner(999).ppid(1).build())
            // Another orphan changes every step: it must not disturb 300's finding.
            .proc(
                worker(301, "s-1")
                    .owner(999)
                    .ppid(1)
                    .cpu(t as f32 / 10.0)
                    .build(),
            )
    });
    let (first, pids) = &steps[0];
    assert_eq!(pids, &[300]);
    for (f, _) in &steps[1..] {
        assert!(
            std::sync::Arc::ptr_eq(first, f),
            "nothing it reads changed: the very same finding (no formatting, no planning)"
        );
    }
    assert_eq!(
        first.since,
        crate::testing::at(0),
        "held since it was first seen"
    );
}

#[test]
fn a_child_started_under_a_remembered_orphan_joins_its_plan_at_once() {
    // The worker itself does not change; only a new process appears under it. A plan kept
    // from the last step would leave the child running after a kill.
    let steps = orphan_over_steps(|t| {
        let o = Obs::at(t)
            .proc(worker(300, "s-0").owner(999).ppid(1).build())
            .proc(worker(301, "s-1").owner(999).ppid(1).build());
        if t >= 8 {
            o.proc(P::new(310, Role::Adapter).ppid(300).session("s-0").build())
        } else {
            o
        }
    });
    assert_eq!(steps[1].1, [300]);
    assert!(std::sync::Arc::ptr_eq(&steps[0].0, &steps[1].0));
    assert_eq!(
        steps[2].1,
        [310, 300],
        "the adapter is in the plan the step it appears"
    );
    assert_eq!(steps[3].1, [310, 300]);
}

#[test]
fn a_remembered_orphan_follows_its_own_change_and_a_changed_target() {
    // t = 8: the orphan's parent changes (new evidence); t = 9: a child it had since t = 7
    // is re-read with another command line (a new allocation in its plan).
    let steps = orphan_over_steps(|t| {
        let parent = if t >= 8 { 77 } else { 1 };
        let child_argv = if t >= 9 {
            "node adapter.js --v2"
        } else {
            "node adapter.js"
        };
        Obs::at(t)
            .proc(worker(300, "s-0").owner(999).ppid(parent).build())
            .proc(worker(301, "s-1").owner(999).ppid(1).build())
            .proc(
                P::new(310, Role::Adapter)
                    .ppid(300)
                    .argv(child_argv)
                    .build(),
            )
    });
    assert_eq!(steps[1].1, [310, 300]);
    assert!(
        steps[2]
            .0
            .evidence
            .iter()
            .any(|e| e.contains("parent is now pid 77")),
        "{:?}",
        steps[2].0.evidence
    );
    let argv = |i: usize| {
        steps[i]
            .0
            .plan
            .as_ref()
            .map(|p| p.targets[0].argv.join(" "))
            .unwrap_or_default()
    };
    assert_eq!(argv(2), "node adapter.js");
    assert_eq!(argv(3), "node adapter.js --v2");
    assert!(steps.iter().all(|(f, _)| f.since == crate::testing::at(0)));
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

/// [`starting_with`] whose worker's log names `claimed` as its adapter.
fn claiming(t: i64, claimed: u32) -> Obs {
    starting_with(0, "initializing", -40, &[]).log(
        3,
        t,
        LogOrigin::Proxy,
        K::AdapterSpawned {
            pid: claimed,
            session_id: Some("s-1".into()),
        },
    )
}

#[test]
fn regression_a_worker_log_naming_the_server_as_its_adapter_plans_no_kill_of_it() {
    // The attack: a worker's log (its user writes it) names a live server's pid as the
    // adapter. The session is still stuck, and the claim is in the evidence, unplanned.
    let f = go([claiming(-39, 100)]);
    let s = stuck_of(&f).unwrap_or_else(|| panic!("{f:#?}"));
    let ev = s.evidence.join("\n");
    assert!(
        ev.contains("the worker's log names pid 100 as its adapter; 100 (server) is not under this worker 200"),
        "{ev}"
    );
    assert!(ev.contains("no live adapter"), "{ev}");
    assert!(s.plan.is_none() && s.pids.is_empty(), "{s:#?}");
    // Another user's process under the worker is not its adapter either.
    let f = go([claiming(-39, 300).proc(P::new(300, Role::Adapter).ppid(200).uid(0).build())]);
    let s = stuck_of(&f).unwrap_or_else(|| panic!("{f:#?}"));
    assert!(s.plan.is_none(), "{s:#?}");
    // Near miss: the worker's own child is planned.
    let f = go([claiming(-39, 300).proc(P::new(300, Role::Adapter).ppid(200).build())]);
    let s = stuck_of(&f).unwrap_or_else(|| panic!("{f:#?}"));
    assert_eq!(
        s.plan
            .as_ref()
            .map(|p| p.targets.iter().map(|t| t.pid).collect::<Vec<_>>()),
        Some(vec![300])
    );
}

/// Every process the table ties to `subject`, as a plan may follow it: itself, descendants,
/// members of groups and sessions led, watchdogs naming one, group members of a gone leader.
fn tied_closure(procs: &[crate::model::Proc], subject: &crate::model::Proc) -> Vec<u32> {
    let alive = |pid: u32| procs.iter().any(|p| p.pid == pid);
    let mut set = vec![subject.pid];
    if !alive(subject.pgid) {
        set.extend(
            procs
                .iter()
                .filter(|q| q.pgid == subject.pgid)
                .map(|q| q.pid),
        );
    }
    loop {
        let more: Vec<u32> = procs
            .iter()
            .filter(|q| !set.contains(&q.pid))
            .filter(|q| {
                set.iter().any(|&s| {
                    q.ppid == s || q.pgid == s || q.sid == s || q.markers.inspector_pid == Some(s)
                })
            })
            .map(|q| q.pid)
            .collect();
        if more.is_empty() {
            return set;
        }
        set.extend(more);
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Whatever the logs say, a finding's plan holds only processes the table ties to the
    /// finding's subject, of the subject's user, and no server but the subject.
    #[test]
    fn no_plan_reaches_past_its_subject_whatever_the_logs_say(
        procs in proptest::collection::vec(
            (0usize..6, 0usize..8, 0usize..8, 0usize..3, proptest::bool::ANY), 0..8),
        claims in proptest::collection::vec(0usize..12, 0..3),
        state in 0usize..3,
    ) {
        let pids = [1u32, 100, 200, 201, 202, 203, 204, 205, 206, 207, 50, 40];
        let roles = [Role::Worker, Role::Adapter, Role::Debuggee, Role::Watchdog, Role::Server, Role::Launcher];
        let uids = [1000u32, 0, 65534];
        let mut o = starting_with(0, ["initializing", "created", "running"][state], -40, &[]);
        for (i, (role, ppid, pgid, uid, marked)) in procs.iter().enumerate() {
            let pid = 201 + i as u32;
            let mut b = P::new(pid, roles[*role])
                .ppid(pids[*ppid])
                .group(pids[*pgid], pids[*pgid])
                .uid(uids[*uid])
                .session("s-1");
            if *marked {
                b = b.inspector(pids[*ppid]).main_pid(100);
            }
            o = o.proc(b.build());
        }
        for (i, c) in claims.iter().enumerate() {
            o = o.log(3 + i as u64, -39, LogOrigin::Proxy, K::AdapterSpawned {
                pid: pids[*c],
                session_id: Some("s-1".into()),
            });
        }
        let later = |t: i64| {
            let mut x = o.clone().build();
            x.at = at(t);
            x.table.taken_at = at(t);
            x
        };
        let table = later(0).table.procs;
        for f in run([later(0), later(7), later(14)]) {
            let Some(plan) = &f.plan else { continue };
            let subject = match f.id.proc() {
                Some(id) => table.iter().find(|p| p.id() == id),
                None => table.iter().find(|p| p.role == Role::Worker && p.session_id == f.session_id),
            };
            let Some(subject) = subject else {
                proptest::prop_assert!(plan.targets.is_empty(), "{f:#?}");
                continue;
            };
            let tied = tied_closure(&table, subject);
            for t in &plan.targets {
                let q = table.iter().find(|p| p.pid == t.pid);
                proptest::prop_assert!(q.is_some_and(|q| q.uid == subject.uid), "{} of another user: {f:#?}", t.pid);
                proptest::prop_assert!(tied.contains(&t.pid), "{} not tied to {}: {f:#?}", t.pid, subject.pid);
                proptest::prop_assert!(t.role != Role::Server || t.pid == subject.pid, "{f:#?}");
            }
        }
    }
}

/// A change to one input of a memoised finding, by name.
type Change<'a> = (&'a str, &'a dyn Fn(Obs) -> Obs);

/// Checks a memoised rule's invalidation: with nothing changed, its finding about `subject` is
/// last step's very allocation; after each change (applied from t = 2 on), it differs from what
/// it was and is exactly what a state that never saw the earlier steps finds — its memo had
/// nothing to answer from — but for `since`. A rule that reads an input it does not name
/// fails here for the change that touches it.
fn memo_follows(kind: FindingKind, subject: u32, base: impl Fn(i64) -> Obs, changes: &[Change]) {
    let config = || StateConfig {
        verdicts: VerdictConfig {
            grace: Duration::ZERO,
            ..VerdictConfig::default()
        },
        redact: false,
        ..StateConfig::default()
    };
    let about = |s: &mut State, o: Obs| {
        let snap = s.step(o.build()).snapshot;
        snap.findings
            .into_iter()
            .find(|f| f.kind == kind && f.pids.first() == Some(&subject))
    };
    let without_since = |f: &Finding| Finding {
        since: at(0),
        ..f.clone()
    };
    let mut s = State::new(config());
    let _ = about(&mut s, base(0));
    let first = about(&mut s, base(1)).unwrap_or_else(|| panic!("no {kind} about {subject}"));
    let again = about(&mut s, base(2));
    assert!(
        again.is_some_and(|f| std::sync::Arc::ptr_eq(&f, &first)),
        "nothing changed: last step's very finding"
    );
    for (what, change) in changes {
        let mut memo = State::new(config());
        let _ = (about(&mut memo, base(0)), about(&mut memo, base(1)));
        let after = about(&mut memo, change(base(2)));
        let mut fresh = State::new(config());
        let _ = about(&mut fresh, change(base(1)));
        let expected = about(&mut fresh, change(base(2)));
        let (after, expected) = (after.as_deref(), expected.as_deref());
        assert_eq!(
            after.map(without_since),
            expected.map(without_since),
            "{what}: the memo's finding is not what the rule finds"
        );
        assert_ne!(
            after.map(without_since),
            Some(without_since(&first)),
            "{what}: the change does not change the finding (it tests no input)"
        );
    }
}

#[test]
fn a_memoised_leaked_adapter_follows_every_input() {
    let session = |p: P| p.session("s-1");
    let base = |t: i64| {
        Obs::at(t)
            .proc(
                session(P::new(300, Role::Adapter))
                    .main_pid(100)
                    .language(Language::Python)
                    .build(),
            )
            .proc(
                session(P::new(301, Role::Debuggee))
                    .ppid(300)
                    .group(300, 300)
                    .build(),
            )
    };
    memo_follows(
        FindingKind::LeakedAdapter,
        300,
        base,
        &[
            ("its parent is re-read (now a zombie)", &|o| {
                o.proc(P::new(1, Role::Other).state(ProcState::Zombie).build())
            }),
            ("another process joins its group", &|o| {
                o.proc(
                    session(P::new(302, Role::Debuggee))
                        .ppid(301)
                        .group(300, 300)
                        .build(),
                )
            }),
            ("a watchdog of its session appears", &|o| {
                o.proc(session(P::new(303, Role::Watchdog)).inspector(300).build())
            }),
            ("its debuggee's command line changes", &|o| {
                o.replacing(
                    session(P::new(301, Role::Debuggee))
                        .ppid(300)
                        .group(300, 300)
                        .argv("python other.py")
                        .build(),
                )
            }),
            ("the server its marker names is gone", &|o| {
                o.without_server()
            }),
            ("the adapter itself is re-read", &|o| {
                o.replacing(
                    session(P::new(300, Role::Adapter))
                        .main_pid(100)
                        .language(Language::Python)
                        .was_under(200)
                        .build(),
                )
            }),
        ],
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

#[test]
fn a_plan_leaves_the_core_with_its_command_lines_redacted() {
    use crate::actions::kill::{plan_for, KillOptions, KillRequest};
    let p = P::new(300, Role::Worker)
        .argv("node /home/dev/w.js --token Zq1secret1")
        .build();
    let live = crate::model::LiveTable {
        procs: vec![std::sync::Arc::new(p)],
        me: crate::model::SelfInfo {
            pid: 50,
            uid: Some(1000),
            ancestors: vec![],
        },
    };
    let request = KillRequest::Pid {
        pid: 300,
        tree: false,
    };
    let findings: Vec<Finding> = Vec::new();
    let plan = plan_for(&request, &findings, &live, KillOptions::default());
    let argv = plan
        .map(|p| p.targets[0].argv.join(" "))
        .unwrap_or_default();
    assert_eq!(
        argv,
        format!("node /home/dev/w.js --token {}", crate::redact::REDACTED)
    );
}

#[test]
fn the_step_keeps_raw_text_and_redacts_what_it_publishes() {
    // One redaction, where the update leaves: the timeline's event names the home directory
    // raw inside the step and `~` in every update; a log event's secret is hidden too.
    let home = "/home/dev";
    let mut s = State::new(StateConfig {
        home: Some(home.into()),
        ..StateConfig::default()
    });
    // Processes there at the first look did not appear: the worker comes at t = 1.
    let obs = |t: i64| {
        let o = if t == 0 {
            Obs::at(t)
        } else {
            Obs::at(t).proc(
                worker(300, "s-0")
                    .argv("node /home/dev/w.js --password Zq2secret2")
                    .build(),
            )
        };
        o.log(
            1,
            t,
            LogOrigin::Server,
            K::DebugSessionCreated {
                session_id: "s-0".into(),
                name: Some("run --token Zq3secret3".into()),
                language: Some("mock".into()),
            },
        )
        .build()
    };
    let _ = s.step(obs(0));
    for t in [1, 2] {
        let u = s.step(obs(t));
        let json = serde_json::to_string(&u).unwrap_or_default();
        for secret in ["Zq2secret2", "Zq3secret3", "/home/dev/"] {
            assert!(!json.contains(secret), "{secret} published at t = {t}");
        }
        assert!(
            u.snapshot
                .timeline
                .iter()
                .any(|e| e.text.contains("node ~/w.js --password")),
            "{:#?}",
            u.snapshot.timeline
        );
    }
    assert!(s
        .timeline
        .since(at(-100))
        .iter()
        .any(|e| e.text.contains("node /home/dev/w.js")));
}

#[test]
fn no_redact_shows_a_timeline_command_line_raw() {
    // `--no-redact` publishes everything raw: the timeline's line of a new process too (it
    // used to hide `--password X` before joining the words whatever the setting).
    let line = |redact: bool| {
        let mut s = State::new(StateConfig {
            redact,
            ..StateConfig::default()
        });
        let _ = s.step(Obs::at(0).build());
        let argv = "node /home/dev/w.js --password Zq2secret2";
        let u = s.step(
            Obs::at(1)
                .proc(worker(300, "s-0").argv(argv).build())
                .build(),
        );
        u.snapshot
            .timeline
            .iter()
            .find(|e| e.kind == crate::model::TimelineKind::ProcessAppeared)
            .map(|e| e.text.clone())
            .unwrap_or_default()
    };
    assert!(
        line(false).ends_with("--password Zq2secret2"),
        "{}",
        line(false)
    );
    assert!(!line(true).contains("Zq2secret2"), "{}", line(true));
}
