//! The stuck-session rule (`rules/stuck.rs`), and the adapter a worker's log claims.

use crate::model::{
    Finding, FindingKind, LogEventKind as K, LogOrigin, ProcState, Role, Severity, Stage,
};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{run, starting_with};

fn go(o: impl IntoIterator<Item = Obs>) -> Vec<Finding> {
    run(o.into_iter().map(Obs::build))
}

/// A session of server 100 whose worker (200) and adapter (300) run, in `state` since `since`,
/// whose worker logged `stages` (seconds from the start).
fn starting(t: i64, state: &str, since: i64, stages: &[(i64, Stage)]) -> Obs {
    starting_with(t, state, since, stages)
        .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
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
