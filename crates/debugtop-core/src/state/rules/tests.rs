//! Every finding kind: a positive case and a near-miss negative, from fixtures, through the
//! whole state step (reconcile → rules → confirmation). No process is spawned.

use std::time::Duration;

use crate::model::{
    Finding, FindingKind, HealthError, Language, LogEventKind as K, LogOrigin, Observation,
    ProcState, Role, Severity,
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
    last
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
        f[0].evidence[0].contains("still alive 14 s after its session ended: marked as STOPPED/TERMINATED (server.log:212)"),
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
    assert!(
        f[0].evidence[0].contains("never created session s-9"),
        "{:?}",
        f[0].evidence
    );
    assert!(
        f[0].evidence[1].contains("not the server 100"),
        "{:?}",
        f[0].evidence
    );
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
    let f = run([obs(0, 55.0), obs(1, 55.0)]);
    assert_eq!(kinds(&f), [FindingKind::Spinning]);
    assert_eq!(f[0].pids, [200], "the busy debuggee is the user's program");
    assert!(
        run([obs(0, 55.0), obs(1, 1.0)]).is_empty(),
        "one hot sample is not spinning"
    );
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
        o.table.procs[0].state = ProcState::Stopped;
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
