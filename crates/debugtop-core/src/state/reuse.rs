//! Reuse: what did not change from one step to the next is not built, formatted, planned,
//! copied or redacted again. At 5,000 orphaned workers nearly everything a step makes is last
//! step's, and making it anew was most of a tick (BENCHMARKS.md).
//!
//! **The contract.** Reuse is a cache and nothing else: a step that forgets everything reused
//! builds an equal snapshot. A value is reused only while what it was made from is equal
//! (compared by value, or by allocation where a changed input is always a new allocation), so
//! reuse may change how much a step costs and which allocations it hands on, never what it
//! says. [`StateConfig::reuse`](super::StateConfig::reuse) turns it off: each step then starts
//! from nothing, and the state's tests replay the same observations both ways and compare the
//! snapshots.
//!
//! What the step reuses, all of it forgotten when reuse is off:
//! - [`memo::Memo`]: an output kept with exactly its inputs — each server's debug sessions and
//!   their nodes (`reconcile::SessionMemo`), each rule's finding for a process and its dated
//!   form (`rules`);
//! - [`share`]: last step's allocations handed on where equal — processes, tree rows, debug
//!   sessions and findings ([`share::Interned`], [`share::tree`]);
//! - the redaction of each process, row, finding, session and timeline event
//!   (`redact::LiveRedaction`), reused while its raw form is the same.
//!
//! Below the step, reuse is about reading the machine, not about what is concluded: the
//! collector reads a process's command line once per identity and a quiet watched process
//! one scan in four (every scan when exits are not watched), and discovery keeps a server's
//! listening ports while their sockets stay open (`sources::discovery::PortMemo`). Those are
//! checked against the real process table in their own tests.

pub mod memo;
pub mod share;

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::model::{Observation, Role};
    use crate::state::{State, StateConfig};
    use crate::testing::{host_tick, ObservationBuilder, ProcBuilder};

    /// Each step's update as JSON, the state reusing or not.
    fn replayed(steps: &[Observation], reuse: bool, redact: bool) -> Vec<String> {
        replayed_with(
            steps,
            StateConfig {
                reuse,
                redact,
                home: Some("/home/dev".into()),
                ..StateConfig::default()
            },
        )
    }

    fn replayed_with(steps: &[Observation], config: StateConfig) -> Vec<String> {
        let mut state = State::new(config);
        steps
            .iter()
            .map(|o| {
                let u = state.step(o.clone());
                serde_json::to_string(&u).unwrap_or_else(|e| format!("not JSON: {e}"))
            })
            .collect()
    }

    /// The same observations, both ways, redacted or raw as `redacts` says: equal updates at
    /// every step.
    fn same_both_ways(what: &str, steps: &[Observation], redacts: &[bool]) {
        for &redact in redacts {
            let with = replayed(steps, true, redact);
            let without = replayed(steps, false, redact);
            for (i, (a, b)) in with.iter().zip(&without).enumerate() {
                let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y);
                let around = |s: &str| {
                    let from = at.unwrap_or(0).saturating_sub(200);
                    s.get(from..(from + 500).min(s.len()))
                        .unwrap_or("")
                        .to_owned()
                };
                assert!(
                    a == b,
                    "{what}, step {i} (redact {redact}): reuse changed the update at byte \
                     {at:?}\nwith: …{}…\nwithout: …{}…",
                    around(a),
                    around(b)
                );
            }
        }
    }

    /// `n` orphaned workers of one gone owner at `t`; from `t` 2 on, the first `gone` have
    /// exited and every tenth is busy.
    fn orphans(t: i64, n: u32, gone: u32) -> Observation {
        let mut b = ObservationBuilder::at(t);
        for i in (if t >= 2 { gone } else { 0 })..n {
            let session = format!("5a1d0000-0000-4000-8000-{i:012}");
            let p = ProcBuilder::new(10_000 + i, Role::Worker)
                .owner(7)
                .session(&session)
                .argv(&format!(
                    "node /home/dev/x/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=7 --mcp-session-id={session} --token ZqReuse{i}"
                ));
            let p = if t >= 2 && i % 10 == 0 {
                p.cpu(60.0)
            } else {
                p
            };
            b = b.proc(p.build());
        }
        b.build()
    }

    #[test]
    fn five_thousand_orphans_give_the_same_updates_with_reuse_and_without() {
        // Found with it: the exits of one step came out in a random order (a hash map's), so
        // two runs of the same observations differed; they are now in pid order.
        let steps: Vec<Observation> = (0..4).map(|t| orphans(t, 5_000, 100)).collect();
        same_both_ways("5,000 orphans", &steps, &[true]);
        let steps: Vec<Observation> = (0..4).map(|t| orphans(t, 300, 30)).collect();
        same_both_ways("300 orphans, raw", &steps, &[false]);
    }

    #[test]
    fn a_host_that_dies_under_its_servers_gives_the_same_updates_with_reuse_and_without() {
        let steps: Vec<Observation> = [(-10, true), (0, false), (6, false), (12, false)]
            .into_iter()
            .map(|(t, alive)| host_tick(t, alive))
            .collect();
        same_both_ways("a host that dies", &steps, &[true, false]);
    }

    /// Near miss: the comparison sees a difference where there is one (no grace: the findings
    /// confirmed at once, where the default grace has not yet confirmed them).
    #[test]
    fn the_comparison_tells_different_updates_apart() {
        let steps: Vec<Observation> = (0..3).map(|t| orphans(t, 20, 2)).collect();
        let with = replayed(&steps, true, true);
        let other = replayed_with(
            &steps,
            StateConfig {
                verdicts: crate::state::rules::VerdictConfig {
                    grace: Duration::ZERO,
                    ..Default::default()
                },
                home: Some("/home/dev".into()),
                ..StateConfig::default()
            },
        );
        assert_ne!(with.last(), other.last());
        let findings = |u: Option<&String>| {
            let v: serde_json::Value =
                serde_json::from_str(u.map_or("{}", String::as_str)).unwrap_or_default();
            v["snapshot"]["findings"].as_array().map_or(0, Vec::len)
        };
        assert_eq!(findings(with.last()), 0, "the default grace holds them");
        assert!(findings(other.last()) > 0, "no grace confirms them");
    }
}
