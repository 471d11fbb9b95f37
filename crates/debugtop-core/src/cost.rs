//! Where a tick's time goes, for the benchmark: the engine marks the end of each phase of a tick
//! (the scan, reconciliation, the rules, redaction, …) on a [`Laps`] clock, which records only
//! when [`enable`] was called — otherwise a lap is one relaxed atomic load and nothing is read
//! from the clock. `debugtop-bench` enables it and reports each phase's median beside the tick
//! (BENCHMARKS.md), so a claim about which part is slow is measured, not guessed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ON: AtomicBool = AtomicBool::new(false);
static LAPS: Mutex<Vec<(&'static str, Duration)>> = Mutex::new(Vec::new());

/// Starts recording phases (for the rest of the process's life).
pub fn enable() {
    ON.store(true, Ordering::Relaxed);
}

/// The phases recorded since the last call, in the order they ended.
pub fn take() -> Vec<(&'static str, Duration)> {
    LAPS.lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default()
}

/// A clock for consecutive phases of one piece of work.
#[derive(Debug)]
pub struct Laps(Option<Instant>);

impl Laps {
    /// Starts timing (nothing, unless recording is enabled).
    pub fn start() -> Self {
        Self(ON.load(Ordering::Relaxed).then(Instant::now))
    }

    /// Ends the phase `name` (the time since the start or the previous lap) and starts the next.
    pub fn lap(&mut self, name: &'static str) {
        if let Some(t) = self.0.as_mut() {
            let now = Instant::now();
            if let Ok(mut l) = LAPS.lock() {
                l.push((name, now - *t));
            }
            *t = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn laps_are_recorded_in_order_once_enabled() {
        let mut off = Laps::start();
        off.lap("before");
        enable();
        let mut on = Laps::start();
        on.lap("first");
        on.lap("second");
        let names: Vec<&str> = take().into_iter().map(|(n, _)| n).collect();
        // Other tests may record laps meanwhile (recording is process-wide): only order is
        // checked, and that the disabled clock recorded nothing.
        assert!(!names.contains(&"before"), "{names:?}");
        let first = names.iter().position(|n| *n == "first");
        let second = names.iter().position(|n| *n == "second");
        assert!(first.is_some() && first < second, "{names:?}");
    }
}
