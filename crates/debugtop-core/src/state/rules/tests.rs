//! The rules' unit tests: one file per rule module (`tests/<module>.rs`, a positive case and a
//! near-miss negative for each finding kind it raises), a few for what every rule shares, and
//! here the fixtures they all use. Each goes from fixtures through the whole state step
//! (reconcile → rules → confirmation). No process is spawned.

mod adapters;
mod debuggees;
mod duplicate_servers;
mod evaluator;
mod hosts;
mod plans;
mod processes;
mod redaction;
mod servers;
mod sessions;
mod stuck;
mod workers;

use std::time::Duration;

use crate::model::{Finding, FindingKind, LogEventKind as K, LogOrigin, Observation, Role, Stage};
use crate::state::{State, StateConfig};
use crate::testing::{at, ObservationBuilder as Obs, ProcBuilder as P};

use super::VerdictConfig;

/// Steps a fresh live-mode state (grace 6 s) over the observations; the last findings.
fn run(obs: impl IntoIterator<Item = Observation>) -> Vec<Finding> {
    run_with(VerdictConfig::default(), obs)
}

fn run_with(config: VerdictConfig, obs: impl IntoIterator<Item = Observation>) -> Vec<Finding> {
    let mut s = State::new(StateConfig {
        verdicts: config,
        redact: false,
        ..StateConfig::default()
    });
    let mut last = Vec::new();
    for o in obs {
        last = s.step(o).snapshot.findings;
    }
    last.into_iter()
        .map(std::sync::Arc::unwrap_or_clone)
        .collect()
}

fn kinds(f: &[Finding]) -> Vec<FindingKind> {
    f.iter().map(|f| f.kind).collect()
}

/// The same observation at t = 0 and t = 6 (the grace).
fn held(build: impl Fn(i64) -> Observation) -> Vec<Finding> {
    run([build(0), build(6)])
}

fn worker(pid: u32, session: &str) -> P {
    P::new(pid, Role::Worker)
        .ppid(100)
        .group(100, 100)
        .owner(100)
        .session(session)
}

fn created(o: Obs, line: u64, t: i64, sid: &str) -> Obs {
    o.log(
        line,
        t,
        LogOrigin::Server,
        K::DebugSessionCreated {
            session_id: sid.into(),
            name: Some("n".into()),
            language: Some("mock".into()),
        },
    )
}

fn stdio_server(pid: u32) -> P {
    P::new(pid, Role::Server)
        .ppid(1)
        .argv("node /n/@modelcontextprotocol/server-memory/dist/index.js")
        .mcp(crate::model::McpEvidence::Argv {
            arg: "/n/@modelcontextprotocol/server-memory/dist/index.js".into(),
        })
        .piped(77)
}

fn planned(f: &Finding) -> Vec<u32> {
    f.plan
        .as_ref()
        .map(|p| p.targets.iter().map(|t| t.pid).collect())
        .unwrap_or_default()
}

/// [`stuck::starting`] without the adapter's process: the worker logged spawning adapter 300,
/// which is gone.
fn starting_with(t: i64, state: &str, since: i64, stages: &[(i64, Stage)]) -> Obs {
    let mut o = created(Obs::at(t), 1, -3600, "s-1")
        .log(
            2,
            since,
            LogOrigin::Server,
            K::StateChanged {
                session_id: "s-1".into(),
                from: "created".into(),
                to: state.into(),
            },
        )
        .proc(worker(200, "s-1").build());
    if !stages.is_empty() {
        o = o.log(
            3,
            since,
            LogOrigin::Proxy,
            K::AdapterSpawned {
                pid: 300,
                session_id: Some("s-1".into()),
            },
        );
    }
    for (i, (at, stage)) in stages.iter().enumerate() {
        o = o.log(
            10 + i as u64,
            *at,
            LogOrigin::Proxy,
            K::Stage {
                session_id: Some("s-1".into()),
                stage: stage.clone(),
            },
        );
    }
    o
}

/// A change to one input of a memoised finding, by name.
type Change<'a> = (&'a str, &'a dyn Fn(Obs) -> Obs);

/// Checks a memoised rule's invalidation: with nothing changed, its finding about `subject` is
/// last step's very allocation; after each change (applied from t = 2 on), it differs from what
/// it was and is exactly what a state that never saw the earlier steps finds — its memo had
/// nothing to answer from — but for `since`. A rule that reads an input it does not name
/// fails here for the change that touches it.
fn memo_follows(kind: FindingKind, subject: u32, base: impl Fn(i64) -> Obs, changes: &[Change]) {
    let config = || StateConfig {
        verdicts: VerdictConfig {
            grace: Duration::ZERO,
            ..VerdictConfig::default()
        },
        redact: false,
        ..StateConfig::default()
    };
    let about = |s: &mut State, o: Obs| {
        let snap = s.step(o.build()).snapshot;
        snap.findings
            .into_iter()
            .find(|f| f.kind == kind && f.pids.first() == Some(&subject))
    };
    let without_since = |f: &Finding| Finding {
        since: at(0),
        confirmed_at: None,
        ..f.clone()
    };
    let mut s = State::new(config());
    let _ = about(&mut s, base(0));
    let first = about(&mut s, base(1)).unwrap_or_else(|| panic!("no {kind} about {subject}"));
    let again = about(&mut s, base(2));
    assert!(
        again.is_some_and(|f| std::sync::Arc::ptr_eq(&f, &first)),
        "nothing changed: last step's very finding"
    );
    for (what, change) in changes {
        let mut memo = State::new(config());
        let _ = (about(&mut memo, base(0)), about(&mut memo, base(1)));
        let after = about(&mut memo, change(base(2)));
        let mut fresh = State::new(config());
        let _ = about(&mut fresh, change(base(1)));
        let expected = about(&mut fresh, change(base(2)));
        let (after, expected) = (after.as_deref(), expected.as_deref());
        assert_eq!(
            after.map(without_since),
            expected.map(without_since),
            "{what}: the memo's finding is not what the rule finds"
        );
        assert_ne!(
            after.map(without_since),
            Some(without_since(&first)),
            "{what}: the change does not change the finding (it tests no input)"
        );
    }
}
