//! The process-state rules (`rules/processes.rs`): spinning, zombie and stopped.

use crate::model::{FindingKind, ProcState, Role, Severity};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{created, held, kinds, run, stdio_server, worker};

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
    assert!(
        run([obs(0, 55.0)]).is_empty(),
        "one hot sample is not spinning"
    );
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
