//! The one gate before execution: every refusal of planning applied again to a plan, against
//! the live table as it is when the plan is carried out, whoever made the plan.

use crate::model::{KillPlan, LiveTable};
use crate::state::plan::{self, MAX_GRACE};

/// Re-applies every refusal of planning to a plan, against the live table at execution time,
/// whoever built the plan: a target that is refused now, that is not in the live table with the
/// same identity, or that is listed twice, is moved to `refused` and never signalled. The one
/// gate before [`execute`].
pub fn recheck(plan: &KillPlan, live: &LiveTable) -> KillPlan {
    let mut out = KillPlan {
        targets: Vec::new(),
        refused: plan.refused.clone(),
        grace_ms: plan
            .grace_ms
            .min(u64::try_from(MAX_GRACE.as_millis()).unwrap_or(u64::MAX)),
        // How processes end is this machine's, whatever the plan said.
        method: crate::model::KillMethod::native(),
        container: None,
    };
    for t in &plan.targets {
        let why = if out
            .targets
            .iter()
            .any(|k: &crate::model::KillTarget| k.pid == t.pid)
            || out.refused.iter().any(|r| r.pid == t.pid)
        {
            Some("listed more than once in the plan".to_owned())
        } else if let Some(why) = plan::refusal(live, t.pid) {
            Some(why)
        } else if live
            .get(t.pid)
            .is_some_and(|p| p.start_ticks != t.start_ticks)
        {
            Some("identity changed since the plan (the pid now belongs to another process)".into())
        } else {
            None
        };
        match why {
            Some(why) if !out.refused.iter().any(|r| r.pid == t.pid) => {
                out.refused.push(crate::model::Refusal { pid: t.pid, why })
            }
            Some(_) => {}
            None => out.targets.push(t.clone()),
        }
    }
    out.container = plan
        .container
        .clone()
        .filter(|c| super::super::container::still_holds(c, live, &out.targets));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{KillMethod, KillTarget, Role, Via};
    use crate::testing::ProcBuilder;

    fn target(pid: u32, start_ticks: u64) -> KillTarget {
        KillTarget {
            pid,
            start_ticks,
            role: Role::Worker,
            pgid: pid,
            sid: pid,
            argv: Vec::new(),
            via: Via::Target,
        }
    }

    #[test]
    fn every_target_is_checked_again_against_the_table_as_it_is_now() {
        let live = LiveTable::new(
            &[
                ProcBuilder::new(300, Role::Worker).build(),
                ProcBuilder::new(400, Role::Worker).build(),
            ],
            crate::sources::self_info(),
        );
        let plan = KillPlan {
            targets: vec![
                target(300, 3000),
                // The pid now belongs to another process.
                target(400, 1),
                target(300, 3000),
                target(1, 0),
            ],
            refused: Vec::new(),
            grace_ms: u64::MAX,
            method: KillMethod::Signals,
            container: None,
        };
        let r = recheck(&plan, &live);
        assert_eq!(r.targets.iter().map(|t| t.pid).collect::<Vec<_>>(), [300]);
        let why: Vec<(u32, &str)> = r.refused.iter().map(|x| (x.pid, x.why.as_str())).collect();
        assert!(
            why.iter()
                .any(|(p, w)| *p == 400 && w.contains("identity changed")),
            "{why:?}"
        );
        assert!(why.iter().any(|(p, _)| *p == 1), "{why:?}");
        assert_eq!(r.grace_ms, u64::try_from(MAX_GRACE.as_millis()).unwrap());
    }
}
