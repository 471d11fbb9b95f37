//! Processes that just exited, kept for a while (default 10 s) as they were last seen, so a
//! view can show them leaving (state `X`, their exit time). Bounded: a mass exit of thousands is
//! kept as its newest tombs. Pure: times come from the observation.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};

use crate::model::{Proc, ProcState};

/// Default time a tomb stays.
pub const DEFAULT_TOMB_TTL: std::time::Duration = std::time::Duration::from_secs(10);
/// The most tombs kept at once.
pub const MAX_TOMBS: usize = 2048;

/// The tombs, oldest first.
#[derive(Debug)]
pub struct Tombs {
    ttl: Duration,
    held: VecDeque<(Arc<Proc>, DateTime<Utc>)>,
}

impl Default for Tombs {
    fn default() -> Self {
        Self::new(DEFAULT_TOMB_TTL)
    }
}

impl Tombs {
    /// Tombs that stay for `ttl`.
    pub fn new(ttl: std::time::Duration) -> Self {
        Self {
            ttl: Duration::from_std(ttl).unwrap_or_else(|_| Duration::seconds(10)),
            held: VecDeque::new(),
        }
    }

    /// Keeps these processes, exited at the given times; forgets tombs older than the tomb
    /// time at `now`, and the oldest past [`MAX_TOMBS`].
    pub fn bury(&mut self, exited: Vec<(Arc<Proc>, DateTime<Utc>)>, now: DateTime<Utc>) {
        self.held.extend(exited);
        self.held.retain(|(_, at)| now - *at < self.ttl);
        while self.held.len() > MAX_TOMBS {
            self.held.pop_front();
        }
    }

    /// The processes held, as last seen, with state `X`, their exit time and no CPU.
    pub fn procs(&self) -> Vec<Proc> {
        self.held
            .iter()
            .map(|(p, at)| {
                let mut p = (**p).clone();
                p.sample.state = ProcState::Dead;
                p.exited_at = Some(*at);
                p.sample.cpu_percent = None;
                p
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;
    use crate::testing::{at, ProcBuilder};

    #[test]
    fn a_tomb_stays_for_its_time_and_a_mass_exit_keeps_the_newest() {
        let mut t = Tombs::new(std::time::Duration::from_secs(10));
        let p = |pid| Arc::new(ProcBuilder::new(pid, Role::Worker).build());
        t.bury(vec![(p(200), at(0))], at(0));
        let shown = t.procs();
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0].sample.state, ProcState::Dead);
        assert_eq!(shown[0].exited_at, Some(at(0)));
        assert_eq!(shown[0].sample.cpu_percent, None);
        t.bury(Vec::new(), at(9));
        assert_eq!(t.procs().len(), 1, "still within its time");
        t.bury(Vec::new(), at(10));
        assert!(t.procs().is_empty(), "gone after it");
        let many = (0..MAX_TOMBS as u32 + 10)
            .map(|i| (p(1000 + i), at(20)))
            .collect();
        t.bury(many, at(20));
        let shown = t.procs();
        assert_eq!(shown.len(), MAX_TOMBS);
        assert_eq!(shown[0].pid, 1010, "the oldest ten fell off");
    }
}
