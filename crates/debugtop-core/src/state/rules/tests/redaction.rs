//! Every rule's published text: what the state step publishes of the rules' inputs (timeline,
//! log events, a plan's command lines) is redacted, and raw only with `--no-redact`.

use crate::model::{Finding, LogEventKind as K, LogOrigin, Role};
use crate::state::{State, StateConfig};
use crate::testing::{at, ObservationBuilder as Obs, ProcBuilder as P};

use super::{created, worker};

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
