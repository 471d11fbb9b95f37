//! Every rule through the [`Evaluator`](crate::state::rules::Evaluator) (`rules/mod.rs`):
//! confirmation (the grace, audit mode) and findings memoised across steps, on orphaned workers.

use std::time::Duration;

use crate::model::{Finding, FindingKind, Role};
use crate::state::rules::{Mode, VerdictConfig};
use crate::state::{State, StateConfig};
use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

use super::{kinds, run_with, worker};

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

/// A finding says when its condition was first seen and when it was confirmed, and keeps both
/// while it holds: an incident report reads "since 0 s, confirmed 6 s" at every later step.
#[test]
fn a_finding_is_dated_when_first_seen_and_when_confirmed() {
    let steps = orphan_over_steps(|t| {
        Obs::at(t)
            .proc(worker(300, "s-0").owner(999).ppid(1).build())
            .proc(worker(301, "s-1").owner(999).ppid(1).build())
    });
    for (f, _) in &steps {
        assert_eq!(f.since, crate::testing::at(0), "first seen at 0");
        assert_eq!(
            f.confirmed_at,
            Some(crate::testing::at(6)),
            "confirmed once the 6 s grace had passed, and then no later"
        );
    }
    // Near miss: what waits for its grace is not confirmed.
    let mut s = State::new(StateConfig {
        publish_unconfirmed: true,
        ..StateConfig::default()
    });
    let o = |t| {
        Obs::at(t)
            .proc(worker(300, "s-0").owner(999).ppid(1).build())
            .build()
    };
    let _ = s.step(o(0));
    let snap = s.step(o(3)).snapshot;
    assert!(snap.findings.is_empty());
    assert!(
        snap.unconfirmed
            .iter()
            .all(|f| f.confirmed_at.is_none() && f.since == crate::testing::at(0)),
        "{:?}",
        snap.unconfirmed
    );
    assert!(!snap.unconfirmed.is_empty());
}
