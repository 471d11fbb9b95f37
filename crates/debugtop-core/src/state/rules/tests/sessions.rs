//! The session-without-worker rule (`rules/sessions.rs`).

use crate::model::{FindingKind, LogEventKind as K, LogOrigin};
use crate::testing::ObservationBuilder as Obs;

use super::{created, held, kinds};

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
