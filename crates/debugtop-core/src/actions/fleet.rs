//! Actions across targets: the fleet audit (every target audited at once, the worst status
//! wins), remote kills (planned, checked and executed on the target, where the pids live) and
//! the fleet snapshot (one incident file with every target's tree). The far side runs the same
//! `debugtop-cli`, so its answer is the same `AuditResult`, `KillAnswer` or `Snapshot` a local
//! run gives.

use std::time::Duration;

use chrono::Utc;

use super::audit::{audit_here, AuditConfig};
use super::kill::KillRequest;
use crate::error::{Error, Result};
use crate::model::{
    AuditResult, FleetAudit, Hello, KillAnswer, KillPlan, KillReport, KillTarget, PidOutcome,
    ProcId, Snapshot, Target, TargetAudit, TargetFailure,
};
use crate::targets::{run_once, Answer, Engines};

/// The fleet incident file's types, where the rest of the schema is.
pub use crate::model::{Fleet, TargetSnapshot, FLEET_SCHEMA};

/// How long one target's audit may take (login, the samples, the grace, the answer).
pub const AUDIT_DEADLINE: Duration = Duration::from_secs(90);
/// How long a remote kill may take (it waits up to the grace per process).
pub const KILL_DEADLINE: Duration = Duration::from_secs(180);

/// `a`'s body as a `T`, parsed within the memory budget of a document from elsewhere.
fn parse_answer<T: serde::de::DeserializeOwned>(
    target: &Target,
    what: &str,
    a: &Answer,
) -> Result<T> {
    if let Err(values) = crate::model::budget::within_budget(a.body.as_bytes()) {
        return Err(Error::Target {
            target: target.to_string(),
            failure: TargetFailure::Garbage,
            detail: format!(
                "its {what} holds {values} JSON values; at most {} are read: not parsed",
                crate::model::budget::MAX_JSON_VALUES
            ),
        });
    }
    serde_json::from_str(&a.body).map_err(|e| answer_error(target, what, a, &e))
}

fn answer_error(target: &Target, what: &str, a: &Answer, e: &serde_json::Error) -> Error {
    let said = if a.stderr.is_empty() {
        String::new()
    } else {
        format!(" (stderr: {})", a.stderr.lines().last().unwrap_or(""))
    };
    Error::Target {
        target: target.to_string(),
        failure: TargetFailure::Garbage,
        detail: format!(
            "its {what} is not one (exit status {}): {e}{said}",
            a.code.map_or("none".to_owned(), |c| c.to_string())
        ),
    }
}

/// The far side's arguments for an audit with `config`.
fn audit_args(config: &AuditConfig) -> Vec<String> {
    let mut args: Vec<String> = ["--hello", "audit", "--json"].map(String::from).into();
    args.extend(config.judging.audit_flags());
    args
}

async fn audit_local(config: &AuditConfig) -> Result<AuditResult> {
    Ok(audit_here(config).await?.result)
}

async fn audit_remote(
    target: &Target,
    config: &AuditConfig,
    engines: &Engines,
) -> Result<(Hello, AuditResult)> {
    let a = run_once(target, &audit_args(config), AUDIT_DEADLINE, engines).await?;
    if a.code == Some(2) {
        return Err(Error::Target {
            target: target.to_string(),
            failure: TargetFailure::Lost,
            detail: format!("its audit could not run: {}", a.stderr),
        });
    }
    let result: AuditResult = parse_answer(target, "audit", &a)?;
    Ok((a.hello, result))
}

/// Audits every target at once; a target that cannot be audited is an error in its entry, and
/// never holds up the others past its deadline.
pub async fn audit_targets(
    targets: &[Target],
    config: &AuditConfig,
    engines: &Engines,
) -> FleetAudit {
    let runs = targets.iter().map(|t| async move {
        let (hello, result) = if t.is_local() {
            (None, audit_local(config).await)
        } else {
            match audit_remote(t, config, engines).await {
                Ok((h, r)) => (Some(h), Ok(r)),
                Err(e) => (None, Err(e)),
            }
        };
        let (result, error) = match result {
            Ok(r) => (Some(r), None),
            Err(e) => (None, Some(e.to_string())),
        };
        TargetAudit {
            target: t.clone(),
            hello,
            result,
            error,
        }
    });
    FleetAudit {
        targets: futures_util::future::join_all(runs).await,
    }
}

/// What a remote kill runs with.
#[derive(Debug, Clone, Default)]
pub struct RemoteKill {
    /// The grace, when not the finding's.
    pub grace_ms: Option<u64>,
    /// Only print the plan.
    pub dry_run: bool,
    /// Execute only these identities (what the user confirmed from the dry run).
    pub only: Vec<ProcId>,
}

/// Plans (and, unless a dry run, executes) `request` on `target`: a finding's kill, or a pid
/// (with its descendants when asked). The far side audits, plans, re-checks every refusal
/// against its own table, and signals; nothing is planned here.
pub async fn kill_remote(
    target: &Target,
    request: &KillRequest,
    how: &RemoteKill,
    engines: &Engines,
) -> Result<(Hello, KillAnswer)> {
    let mut args: Vec<String> = vec!["--hello".into(), "kill".into()];
    match request {
        KillRequest::Finding { id } => args.push(id.to_string()),
        KillRequest::Findings { ids } => args.extend(ids.iter().map(ToString::to_string)),
        KillRequest::Kind { kind, server } => {
            args.extend(["--kind".to_owned(), kind.to_string()]);
            if let Some(s) = server {
                args.extend(["--server".to_owned(), s.to_string()]);
            }
        }
        KillRequest::Pid { pid, tree } => {
            args.push(pid.to_string());
            if *tree {
                args.push("--tree".into());
            }
        }
    }
    args.push("--json".into());
    if let Some(g) = how.grace_ms {
        args.extend(["--grace-ms".to_owned(), g.to_string()]);
    }
    if how.dry_run {
        args.push("--dry-run".into());
    } else {
        if how.only.is_empty() {
            return Err(Error::NothingToKill(
                "nothing was confirmed to kill on the target".into(),
            ));
        }
        args.push("--yes".into());
        let only: Vec<String> = how.only.iter().map(ToString::to_string).collect();
        args.extend(["--only".to_owned(), only.join(",")]);
    }
    let a = run_once(target, &args, KILL_DEADLINE, engines).await?;
    let answer: KillAnswer = parse_answer(target, "kill answer", &a)?;
    Ok((a.hello, answer))
}

/// Step one of a kill on a target: its plan for `request`, made and checked there (a dry
/// run), to be shown and confirmed here. The CLI and the app both kill on a target in these
/// two steps.
pub async fn plan_remote(
    target: &Target,
    request: &KillRequest,
    grace_ms: Option<u64>,
    engines: &Engines,
) -> Result<(Hello, KillAnswer)> {
    let how = RemoteKill {
        grace_ms,
        dry_run: true,
        only: Vec::new(),
    };
    kill_remote(target, request, &how, engines).await
}

/// Step two: carries out `plan` — step one's, as confirmed — on the target, restricted to its
/// targets' identities (the far side plans again and re-checks each, so a plan only shrinks).
/// A plan whose every process was refused travels not. The report lists the plan's refusals
/// beside what was done.
pub async fn execute_remote(
    target: &Target,
    request: &KillRequest,
    plan: &KillPlan,
    engines: &Engines,
) -> Result<KillAnswer> {
    let only: Vec<ProcId> = plan.targets.iter().map(KillTarget::id).collect();
    let KillAnswer { plan, report } = if only.is_empty() {
        KillAnswer {
            plan: plan.clone(),
            report: None,
        }
    } else {
        let how = RemoteKill {
            grace_ms: Some(plan.grace_ms),
            dry_run: false,
            only,
        };
        kill_remote(target, request, &how, engines).await?.1
    };
    let mut report = report.unwrap_or(KillReport {
        outcomes: Vec::new(),
    });
    for r in &plan.refused {
        if !report.outcomes.iter().any(|o| o.pid == r.pid) {
            report.outcomes.push(PidOutcome::refused(r));
        }
    }
    Ok(KillAnswer {
        plan,
        report: Some(report),
    })
}

/// Takes every remote target's snapshot (the far side's `snapshot --format json`); `local`
/// is `local`'s own snapshot, given by the caller (it owns the local engine).
pub async fn snapshot_targets(
    targets: &[Target],
    local: Option<Snapshot>,
    no_redact: bool,
    engines: &Engines,
) -> Fleet {
    let runs = targets.iter().map(|t| {
        let local = local.clone();
        async move {
            let got = if t.is_local() {
                local
                    .map(|s| (None, s))
                    .ok_or_else(|| "no local snapshot".to_owned())
            } else {
                remote_snapshot(t, no_redact, engines)
                    .await
                    .map(|(h, s)| (Some(h), s))
                    .map_err(|e| e.to_string())
            };
            match got {
                Ok((hello, s)) => TargetSnapshot {
                    target: t.clone(),
                    hello,
                    snapshot: Some(s),
                    error: None,
                },
                Err(e) => TargetSnapshot {
                    target: t.clone(),
                    hello: None,
                    snapshot: None,
                    error: Some(e),
                },
            }
        }
    });
    Fleet {
        schema: FLEET_SCHEMA.to_owned(),
        taken_at: Utc::now(),
        targets: futures_util::future::join_all(runs).await,
    }
}

async fn remote_snapshot(
    target: &Target,
    no_redact: bool,
    engines: &Engines,
) -> Result<(Hello, Snapshot)> {
    let mut args: Vec<String> = ["--hello", "snapshot", "--format", "json"]
        .map(String::from)
        .into();
    if no_redact {
        args.push("--no-redact".into());
    }
    let a = run_once(target, &args, AUDIT_DEADLINE, engines).await?;
    // The far side's snapshot is checked as an import is: schema tag, shape, size.
    let snap = super::export::import(&a.body).map_err(|e| Error::Target {
        target: target.to_string(),
        failure: TargetFailure::Garbage,
        detail: format!("its snapshot cannot be read: {e}"),
    })?;
    Ok((a.hello, snap))
}
