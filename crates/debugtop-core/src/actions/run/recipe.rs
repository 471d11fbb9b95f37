//! The run's recipe, the same on every OS, as a few named steps: hold a scope, live with the
//! command, linger through the grace, ask the engine about what is left, end it, let the
//! scope go, report.

use std::time::Duration;

use chrono::Utc;

use super::containers::Tie;
use super::os::{self, Forwarder, Held};
use super::survivors::{describe, Describe, EngineView};
use super::watch::{linger, Lived, NotLived};
use super::{end, incident, RunAnswer, RunConfig};
use crate::actions::audit::{audit_here, AuditConfig, AuditRun};
use crate::collect::scope::Member;
use crate::judging::Judging;
use crate::model::{
    CommandEnd, ContainerStop, LiveTable, ProcId, RunReport, RunScope, ScopeKind, Survivor,
    RUN_SCHEMA,
};

/// How long a condition must hold in the engine's look at what is left: the survivors have
/// outlived the command by the run's grace already, so the audit confirms rather than waits.
const AUDIT_GRACE_SECS: f64 = 1.0;

/// Runs the command as `config` says and answers with the report (and the snapshot when
/// asked). An error only where nothing could be run: no scope could be held, or the signals
/// could not be taken.
pub async fn run(config: &RunConfig) -> crate::Result<RunAnswer> {
    let unchecked = |detail: String| crate::Error::SystemInfo {
        what: "a scope for the run's processes",
        detail,
    };
    let mut signals = Forwarder::start().map_err(unchecked)?;
    let held =
        os::open(config.scope, config.joiner.as_ref(), config.follow_forks).map_err(unchecked)?;
    let started_at = Utc::now();
    let mut lived = match os::live(&held, &config.command, config.joiner.as_ref(), &mut signals)
        .await
    {
        Ok(l) => l,
        Err(NotLived::NotStarted(why)) => return Ok(not_started(config, &held, started_at, why)),
        Err(NotLived::Unchecked(why)) => {
            held.release_unstarted();
            return Err(unchecked(why));
        }
    };
    let alive = linger(&held, &mut lived, config.grace, &mut signals).await;
    let engine = if !alive.is_empty() || config.snapshot {
        Some(ask_engine(config).await)
    } else {
        None
    };
    let audit = engine.as_ref().and_then(|r| r.as_ref().ok());
    if let Some(Err(e)) = &engine {
        lived
            .problems
            .push(format!("the engine could not look at what is left: {e}"));
    }
    let mut survivors = describe_all(config, &lived, &alive, audit);
    if !config.keep {
        let ties: Vec<Tie> = lived.looks.containers.ties().cloned().collect();
        end_leaks(
            &mut survivors,
            &ties,
            audit.map(|a| &a.live),
            config.kill_grace,
        )
        .await;
    }
    held.release(&mut lived.problems);
    let snapshot = audit
        .filter(|_| config.snapshot)
        .map(|a| incident::of_run(&a.snapshot, &survivors));
    Ok(RunAnswer {
        report: report(config, held.scope, lived, survivors),
        snapshot,
    })
}

/// The engine's audit, judging with the run's servers and a short grace.
async fn ask_engine(config: &RunConfig) -> crate::Result<AuditRun> {
    let j = &config.judging;
    let judging = Judging::from_user(
        250,
        AUDIT_GRACE_SECS,
        j.stuck_after.as_secs_f64(),
        j.extra_servers.clone(),
    );
    let mut audit = AuditConfig::new(judging);
    audit.redact = config.redact;
    audit_here(&audit).await
}

fn describe_all(
    config: &RunConfig,
    lived: &Lived,
    alive: &[(Member, Option<f32>)],
    audit: Option<&AuditRun>,
) -> Vec<Survivor> {
    let engine = audit.map_or_else(EngineView::default, |a| EngineView {
        processes: &a.snapshot.processes,
        findings: &a.findings,
    });
    describe(
        alive,
        &Describe {
            lineage: &lived.lineage,
            left: &lived.looks.left,
            containers: &lived.looks.containers.members,
            command: lived.id,
            since_end_ms: u64::try_from(lived.ended.elapsed().as_millis()).unwrap_or(u64::MAX),
            engine,
            allow: &config.allow,
            redact: config.redact,
        },
    )
}

/// Ends the leaks (never the allowed): the containers whose main process is one through their
/// engine, then one plan over exactly the leaks still running.
async fn end_leaks(
    survivors: &mut [Survivor],
    ties: &[Tie],
    live: Option<&LiveTable>,
    grace: Duration,
) {
    let leaks: Vec<(ProcId, Option<String>)> = survivors
        .iter()
        .filter(|s| s.is_leak())
        .map(|s| (s.id, s.container.clone()))
        .collect();
    if leaks.is_empty() {
        return;
    }
    let stops: Vec<(ContainerStop, Vec<String>)> = ties
        .iter()
        .filter(|t| leaks.iter().any(|(id, _)| *id == t.main))
        .map(|t| (t.stop(), t.engine.clone()))
        .collect();
    let live = live
        .cloned()
        .unwrap_or_else(|| LiveTable::new(&[], crate::sources::self_info()));
    let outcomes = tokio::task::spawn_blocking(move || {
        let by_engine = end::end_containers(&stops);
        let (mut outcomes, rest) = end::ended_with_containers(&leaks, &by_engine);
        let plan = end::plan_exactly(&live, &rest, grace);
        outcomes.extend(end::end(&live, &plan));
        outcomes
    })
    .await
    .unwrap_or_default();
    crate::collect::scope::reap_children();
    for s in survivors.iter_mut().filter(|s| s.is_leak()) {
        s.ended = outcomes.get(&s.id.pid).cloned();
    }
}

fn report(
    config: &RunConfig,
    scope: RunScope,
    lived: Lived,
    survivors: Vec<Survivor>,
) -> RunReport {
    let leaks = survivors.iter().filter(|s| s.is_leak()).count();
    let (verdict, exit_status) =
        RunReport::judge(lived.end, leaks, lived.problems.len(), config.leaks);
    RunReport {
        schema: RUN_SCHEMA.to_owned(),
        command: command_words(config),
        started_at: lived.started_at,
        reported_at: Utc::now(),
        command_ms: u64::try_from(lived.ran.as_millis()).unwrap_or(u64::MAX),
        end: lived.end,
        forwarded: lived.forwarded,
        scope,
        grace_ms: u64::try_from(config.grace.as_millis()).unwrap_or(u64::MAX),
        survivors,
        kept: config.keep,
        leaks: config.leaks,
        problems: lived.problems,
        verdict,
        exit_status,
    }
}

fn command_words(config: &RunConfig) -> Vec<String> {
    let words: Vec<String> = config
        .command
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if config.redact {
        crate::redact::redact_argv(&words)
    } else {
        words
    }
}

/// The report of a command that could not be started.
fn not_started(
    config: &RunConfig,
    held: &Held,
    started_at: chrono::DateTime<Utc>,
    why: String,
) -> RunAnswer {
    held.release_unstarted();
    let mut report = RunReport {
        schema: RUN_SCHEMA.to_owned(),
        command: command_words(config),
        started_at,
        reported_at: Utc::now(),
        command_ms: 0,
        end: CommandEnd::NotStarted,
        forwarded: Vec::new(),
        scope: held.scope.clone(),
        grace_ms: 0,
        survivors: Vec::new(),
        kept: config.keep,
        leaks: config.leaks,
        problems: vec![why],
        verdict: crate::model::RunVerdict::CommandFailed,
        exit_status: 127,
    };
    if report.scope.kind == ScopeKind::Cgroup {
        report.scope.path = None;
    }
    RunAnswer {
        report,
        snapshot: None,
    }
}
