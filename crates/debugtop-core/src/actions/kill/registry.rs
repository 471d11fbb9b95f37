//! Plans held by the backend between being shown and being carried out: each named by an id,
//! executed at most once, where it was made (here, or on a target).

use super::KillRequest;
use crate::error::{Error, Result};
pub use crate::model::HeldPlan;
use crate::model::KillPlan;

/// Where a held plan is carried out.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedOn {
    /// This machine: executed here against the latest live table.
    Here,
    /// A target: made there, executed there (`fleet::execute_remote`), what was asked kept so
    /// the far side can plan it again.
    Target {
        /// Where.
        target: crate::model::Target,
        /// What was asked.
        request: KillRequest,
    },
}

/// Plans waiting to be executed, each at most once, local and remote alike; the oldest are
/// forgotten past a cap.
#[derive(Debug, Default)]
pub struct PlanRegistry {
    next: u64,
    plans: std::collections::BTreeMap<u64, (KillPlan, PlannedOn)>,
}

impl PlanRegistry {
    /// The most plans held at once.
    pub const CAP: usize = 64;

    /// Holds a plan to be carried out `on`; returns it with its id.
    pub fn hold(&mut self, plan: KillPlan, on: PlannedOn) -> HeldPlan {
        self.next += 1;
        self.plans.insert(self.next, (plan.clone(), on));
        while self.plans.len() > Self::CAP {
            self.plans.pop_first();
        }
        HeldPlan {
            id: self.next,
            plan,
        }
    }

    /// Takes the plan with this id and where it is carried out (it cannot be executed twice).
    pub fn take(&mut self, id: u64) -> Result<(KillPlan, PlannedOn)> {
        self.plans.remove(&id).ok_or(Error::NoSuchPlan(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(grace_ms: u64) -> KillPlan {
        KillPlan {
            targets: Vec::new(),
            refused: Vec::new(),
            grace_ms,
            method: crate::model::KillMethod::Signals,
            container: None,
        }
    }

    #[test]
    fn a_plan_is_executed_at_most_once_and_the_oldest_are_forgotten() {
        let mut r = PlanRegistry::default();
        let held = r.hold(plan(1), PlannedOn::Here);
        assert_eq!(held.plan.grace_ms, 1);
        let (p, on) = r.take(held.id).unwrap();
        assert_eq!((p.grace_ms, on), (1, PlannedOn::Here));
        assert!(
            matches!(r.take(held.id), Err(Error::NoSuchPlan(_))),
            "not twice"
        );
        let first = r.hold(plan(2), PlannedOn::Here).id;
        for i in 0..PlanRegistry::CAP {
            r.hold(plan(i as u64), PlannedOn::Here);
        }
        assert!(r.take(first).is_err(), "past the cap, the oldest is gone");
    }
}
