//! Ending what a run left, and only that: one plan over the survivors' pids, every target the
//! plan adds that is not a survivor of this run (a group member, a chain's other end) refused
//! before anything is signalled, the one recheck against the table as it is then, and the
//! project's execution (pidfds, SIGTERM, the grace, SIGKILL, each end verified).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use crate::actions::kill::{execute, recheck, with_forced_targets, with_processes};
use crate::model::{KillPlan, LiveTable, Outcome, ProcId, Refusal};
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
