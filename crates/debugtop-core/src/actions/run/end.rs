//! Ending what a run left, and only that: one plan over the survivors' pids, every target the
//! plan adds that is not a survivor of this run (a group member, a chain's other end) refused
//! before anything is signalled, the one recheck against the table as it is then, and the
//! project's execution (pidfds, SIGTERM, the grace, SIGKILL, each end verified).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::actions::container;
use crate::actions::kill::{execute, recheck, with_forced_targets, with_processes};
use crate::model::{ContainerStop, KillPlan, LiveTable, Outcome, ProcId, Refusal};
use crate::state::plan::{plan, PlanOptions};

/// The plan that ends exactly `ids`: planned against `live` (the engine's table, if an audit
/// ran) with each survivor read in, then every target not among `ids` refused.
pub fn plan_exactly(live: &LiveTable, ids: &[ProcId], grace: Duration) -> KillPlan {
    let pids: Vec<u32> = ids.iter().map(|i| i.pid).collect();
    let table = with_processes(live, &pids);
    let mut p = plan(&table, &pids, PlanOptions { tree: false, grace });
    only_these(&mut p, ids);
    p
}

/// Moves every target that is not one of `ids` (pid and start) to the refusals.
pub fn only_these(p: &mut KillPlan, ids: &[ProcId]) {
    let ours: HashSet<ProcId> = ids.iter().copied().collect();
    let (keep, other): (Vec<_>, Vec<_>) = std::mem::take(&mut p.targets)
        .into_iter()
        .partition(|t| ours.contains(&ProcId::new(t.pid, t.start_ticks)));
    p.targets = keep;
    p.refused.extend(other.into_iter().map(|t| Refusal {
        pid: t.pid,
        why: "not a process of this run".to_owned(),
    }));
    // A container is ended through its engine only when the plan says so; a run's plan never
    // names one it did not find among its own survivors.
    if p.container
        .as_ref()
        .is_some_and(|c| !ours.contains(&ProcId::new(c.main_pid, c.main_start_ticks)))
    {
        p.container = None;
    }
}

/// Ends each container through its engine (which names the same main process first, see
/// [`crate::actions::container`]) and waits for its main process to be gone; whether each
/// was, by container id. One the engine would not end is left to the plan's signals.
pub fn end_containers(stops: &[(ContainerStop, Vec<String>)]) -> HashMap<String, bool> {
    stops
        .iter()
        .map(|(stop, engine)| {
            let ended = match container::kill_with(stop, engine) {
                Ok(()) => gone_within(stop, CONTAINER_WAIT),
                Err(why) => {
                    tracing::warn!(container = %stop.id, %why, "not ended through docker; signalling");
                    false
                }
            };
            (stop.id.clone(), ended)
        })
        .collect()
}

/// How long a container's main process may take to end after its engine killed it.
const CONTAINER_WAIT: Duration = Duration::from_secs(10);

fn gone_within(stop: &ContainerStop, wait: Duration) -> bool {
    let main = ProcId::new(stop.main_pid, stop.main_start_ticks);
    let until = std::time::Instant::now() + wait;
    while runs(main) {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

/// The leaks whose container its engine ended and that are gone since, as ended with it; and
/// the leaks still to plan for.
pub fn ended_with_containers(
    leaks: &[(ProcId, Option<String>)],
    by_engine: &HashMap<String, bool>,
) -> (HashMap<u32, Outcome>, Vec<ProcId>) {
    let mut ended = HashMap::new();
    let mut rest = Vec::new();
    for (id, container) in leaks {
        let with_engine = container
            .as_ref()
            .is_some_and(|c| by_engine.get(c) == Some(&true));
        if with_engine && !runs(*id) {
            ended.insert(id.pid, Outcome::ContainerKilled);
        } else {
            rest.push(*id);
        }
    }
    (ended, rest)
}

/// Whether `id` still runs as itself (not a zombie).
fn runs(id: ProcId) -> bool {
    crate::collect::scope::read_member(id.pid)
        .is_some_and(|m| m.start_ticks == id.start_ticks && m.state.is_alive())
}

/// Carries the plan out (blocking: call from a blocking context) and says what happened to
/// each pid.
pub fn end(live: &LiveTable, p: &KillPlan) -> HashMap<u32, Outcome> {
    let checked = recheck(p, &with_forced_targets(live, p));
    execute(&checked, |_| {})
        .outcomes
        .into_iter()
        .map(|o| (o.pid, o.outcome))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two of the test's own `sleep`s, planned together: only the identity named stays a
    /// target; the other, and the named pid under another start time, are refused.
    #[test]
    fn a_plan_keeps_only_the_runs_identities() {
        let spawn = || {
            std::process::Command::new("sleep")
                .arg("30")
                .spawn()
                .expect("sleep")
        };
        let (mut a, mut b) = (spawn(), spawn());
        let ticks = |pid| crate::collect::glance(pid).expect("alive").start_ticks;
        let (ia, ib) = (
            ProcId::new(a.id(), ticks(a.id())),
            ProcId::new(b.id(), ticks(b.id())),
        );
        let empty = LiveTable::new(&[], crate::sources::self_info());
        let table = with_processes(&empty, &[ia.pid, ib.pid]);
        let both = plan(
            &table,
            &[ia.pid, ib.pid],
            PlanOptions {
                tree: false,
                grace: Duration::ZERO,
            },
        );
        assert_eq!(both.targets.len(), 2, "{both:?}");
        let mut p = both.clone();
        only_these(&mut p, &[ia]);
        let targets: Vec<u32> = p.targets.iter().map(|t| t.pid).collect();
        assert_eq!(targets, [ia.pid]);
        assert!(p
            .refused
            .iter()
            .any(|r| r.pid == ib.pid && r.why.contains("not a process of this run")));
        let mut p = both;
        only_these(&mut p, &[ProcId::new(ia.pid, ia.start_ticks + 1)]);
        assert!(p.targets.is_empty(), "a reused pid is not the run's: {p:?}");
        for c in [&mut a, &mut b] {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
