//! Every rule's kill plans (`Ctx::plan` → `state/plan.rs`): findings grouped by kind and cause,
//! planned in bulk (`actions::kill`), and never past their subject whatever the logs say.

use crate::model::{Finding, FindingKind, LogEventKind as K, LogOrigin, Role, Severity};
use crate::state::{State, StateConfig};
use crate::testing::{at, ObservationBuilder as Obs, ProcBuilder as P};

use super::{run, starting_with, worker};

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
    /// finding's subject, of the subject's user, and no server but the subject — and it is no
    /// empty plan: it takes or refuses (saying why) what it was asked to end, and a finding
    /// that names its subject plans it whenever debugtop may signal it. A planner that plans
    /// nothing fails here.
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
            // Nor short of it: nothing asked for is dropped without a word.
            proptest::prop_assert!(
                !plan.targets.is_empty() || !plan.refused.is_empty(),
                "a plan that takes nothing and refuses nothing: {f:#?}"
            );
            proptest::prop_assert!(
                plan.refused.iter().all(|r| !r.why.is_empty()),
                "a refusal without a reason: {f:#?}"
            );
            // This observation's debugtop (`Obs::at`) is pid 50 of uid 1000, under 40 and 1.
            let signallable = |p: &crate::model::Proc| {
                p.pid > 1 && p.pid != 50 && p.pid != 40 && p.uid == Some(1000)
            };
            if f.pids.contains(&subject.pid) && signallable(subject) {
                proptest::prop_assert!(
                    plan.targets.iter().any(|t| t.pid == subject.pid),
                    "{} {} is not in its own plan: {f:#?}", subject.role, subject.pid
                );
            }
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
