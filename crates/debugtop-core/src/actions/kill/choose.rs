//! Which plan carries out what a user asked: for a finding, the plan the step made with it —
//! planned once, shown as it is, never planned again wider (it was made about the finding's
//! subject: nothing of another user, nothing the table does not tie to it) — and for several,
//! their plans together; for a pid, a plan made now, within that process's own user. Execution
//! checks every target again
//! ([`super::recheck`]): that is the safety, not a second plan.

use std::time::Duration;

use super::forced::with_forced;
use super::KillRequest;
use crate::error::{Error, Result};
use crate::model::{
    Finding, FindingId, FindingKind, KillPlan, KillTarget, LiveTable, Refusal, Role,
};
use crate::state::plan::{self, PlanOptions, MAX_GRACE};

/// How a plan is made beyond the request.
#[derive(Debug, Clone, Copy, Default)]
pub struct KillOptions {
    /// Grace between SIGTERM and SIGKILL; `None`: the finding's suggested grace, or the default.
    pub grace: Option<Duration>,
    /// Allow pids outside every monitored tree (they are read from `/proc` now; with `tree`, so
    /// are their descendants).
    pub force: bool,
}

/// The plan for what `request` asks, from the live table (a pid) or the current findings'
/// own plans (findings): the one planning path of the CLI and the app. The plan leaves the core
/// here, to be shown before it is carried out: its targets' command lines are redacted (the
/// executor reads only pids and start times).
pub fn plan_for<F: AsRef<Finding>>(
    request: &KillRequest,
    findings: &[F],
    live: &LiveTable,
    opts: KillOptions,
) -> Result<KillPlan> {
    let mut plan = chosen(request, findings, live, opts)?;
    for t in &mut plan.targets {
        t.argv = crate::redact::redact_argv(&t.argv);
    }
    Ok(plan)
}

fn chosen<F: AsRef<Finding>>(
    request: &KillRequest,
    findings: &[F],
    live: &LiveTable,
    opts: KillOptions,
) -> Result<KillPlan> {
    let grace = |suggested: Option<u64>| {
        opts.grace
            .or(suggested.map(Duration::from_millis))
            .unwrap_or(plan::DEFAULT_TERM_WAIT)
            .min(MAX_GRACE)
    };
    match request {
        KillRequest::Pid { pid, tree } => {
            let table = if opts.force {
                with_forced(live, *pid, *tree)
            } else {
                live.clone()
            };
            let opts = PlanOptions {
                tree: *tree,
                grace: grace(None),
            };
            // What it started and the groups it leads, of its own user only (root's debugtop
            // asked for another user's pid never follows a group into root's processes).
            let planner = plan::Planner::new(&table);
            Ok(match table.get(*pid) {
                Some(subject) => planner.plan_about(subject, &[*pid], opts),
                None => planner.plan(&[*pid], opts),
            })
        }
        KillRequest::Finding { id } => {
            let f = find(findings, id)?;
            together(&[f], grace)
        }
        KillRequest::Findings { ids } => {
            let chosen = ids
                .iter()
                .map(|id| find(findings, id))
                .collect::<Result<Vec<_>>>()?;
            together(&chosen, grace)
        }
        KillRequest::Kind { kind, server } => together(&of_kind(findings, *kind, *server)?, grace),
    }
}

/// The findings' own plans as one: every target once (the first plan that names a process
/// decides how), leaves before workers, workers before servers, servers before the wrappers
/// that started them (each plan's own order kept within that); the refusals of all of them;
/// the longest grace any suggests (or the one asked); a container only when a single finding
/// names one. Every finding must be fixed by killing.
fn together(chosen: &[&Finding], grace: impl Fn(Option<u64>) -> Duration) -> Result<KillPlan> {
    let mut longest = 0;
    let mut targets: Vec<KillTarget> = Vec::new();
    let mut refused: Vec<Refusal> = Vec::new();
    let mut containers = Vec::new();
    for f in chosen {
        longest = longest.max(fixed_by_killing(f)?);
        let Some(p) = &f.plan else { continue };
        for t in &p.targets {
            if !targets.iter().any(|x| x.pid == t.pid) {
                targets.push(t.clone());
            }
        }
        for r in &p.refused {
            if !refused.iter().any(|x| x.pid == r.pid) {
                refused.push(r.clone());
            }
        }
        containers.extend(p.container.clone());
    }
    if targets.is_empty() && chosen.is_empty() {
        return Err(Error::NothingToKill("no finding was given".to_owned()));
    }
    refused.retain(|r| !targets.iter().any(|t| t.pid == r.pid));
    targets.sort_by_key(|t| rank(t.role));
    Ok(KillPlan {
        targets,
        refused,
        grace_ms: u64::try_from(grace(Some(longest)).as_millis()).unwrap_or(u64::MAX),
        method: crate::model::KillMethod::native(),
        container: (containers.len() == 1).then(|| containers.remove(0)),
    })
}

/// Where a role goes in a plan: leaves first, a server's workers before it, its wrappers after.
fn rank(r: Role) -> u8 {
    match r {
        Role::Wrapper => 3,
        Role::Server => 2,
        Role::Worker => 1,
        _ => 0,
    }
}

/// The current findings of `kind` (about `server`, when given) that killing fixes.
fn of_kind<F: AsRef<Finding>>(
    findings: &[F],
    kind: FindingKind,
    server: Option<u32>,
) -> Result<Vec<&Finding>> {
    let chosen: Vec<&Finding> = findings
        .iter()
        .map(AsRef::as_ref)
        .filter(|f| f.kind == kind && server.is_none_or(|s| f.server_pid == Some(s)))
        .filter(|f| fixed_by_killing(f).is_ok())
        .collect();
    if chosen.is_empty() {
        return Err(Error::NothingToKill(format!(
            "no current {kind} finding{} is fixed by killing",
            server.map_or(String::new(), |s| format!(" of server {s}"))
        )));
    }
    Ok(chosen)
}

fn find<'a, F: AsRef<Finding>>(findings: &'a [F], id: &FindingId) -> Result<&'a Finding> {
    let mut all = findings.iter().map(AsRef::as_ref);
    all.find(|f| &f.id == id).ok_or_else(|| {
        let known: Vec<String> = findings.iter().map(|f| f.as_ref().id.to_string()).collect();
        let why = if id.kind.needs_watching() {
            format!(
                "a {} is found only by a monitor that has watched for a while (watch, the app, audit --watch-for), \
                 not by this one-shot look: kill the process it names by pid, with --tree",
                id.kind.nouns().0
            )
        } else {
            "it may be resolved already".to_owned()
        };
        Error::NothingToKill(format!(
            "no current finding has the id {id} ({why}); current findings: {}",
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        ))
    })
}

/// The grace a finding's own plan suggests, or why killing does not fix it.
fn fixed_by_killing(f: &Finding) -> Result<u64> {
    f.plan
        .as_ref()
        .filter(|p| !p.targets.is_empty())
        .map(|p| p.grace_ms)
        .ok_or_else(|| {
            Error::NothingToKill(format!(
                "finding {} is not fixed by killing: {}",
                f.id, f.suggested_action
            ))
        })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::model::{FindingKind, KillMethod, Via};
    use crate::testing::{sample_snapshot, ProcBuilder};

    fn target(pid: u32, role: Role) -> KillTarget {
        KillTarget {
            pid,
            start_ticks: u64::from(pid) * 10,
            role,
            pgid: pid,
            sid: pid,
            argv: vec!["x".into(), "--token".into(), "Zqsecret".into()],
            via: Via::Target,
        }
    }

    fn finding(kind: FindingKind, subject: u32, targets: Vec<KillTarget>, grace: u64) -> Finding {
        let mut f = (*sample_snapshot().findings[0]).clone();
        f.kind = kind;
        f.id = FindingId::of_proc(
            kind,
            crate::model::ProcId::new(subject, u64::from(subject) * 10),
        );
        f.pids = vec![subject];
        f.plan = Some(KillPlan {
            targets,
            refused: vec![Refusal {
                pid: 777,
                why: "it belongs to uid 0, not to the user of worker".into(),
            }],
            grace_ms: grace,
            method: KillMethod::Signals,
            container: None,
        });
        f
    }

    /// A table where the subject's group holds another user's process and the subject has a
    /// child the finding's plan does not name: planning again from it would be wider.
    fn wider_table() -> LiveTable {
        let procs = vec![
            ProcBuilder::new(300, Role::Worker).build(),
            ProcBuilder::new(301, Role::Adapter).ppid(300).build(),
            ProcBuilder::new(777, Role::Other)
                .group(300, 300)
                .uid(0)
                .build(),
        ];
        LiveTable::new(&procs, crate::sources::self_info())
    }

    #[test]
    fn a_findings_kill_is_the_plan_shown_with_it_never_planned_again_wider() {
        let f = finding(
            FindingKind::OrphanedWorker,
            300,
            vec![target(300, Role::Worker)],
            3000,
        );
        let request = KillRequest::Finding { id: f.id.clone() };
        let plan = plan_for(
            &request,
            &[Arc::new(f.clone())],
            &wider_table(),
            KillOptions::default(),
        )
        .unwrap();
        let shown = f.plan.clone().unwrap();
        let ids = |p: &KillPlan| p.targets.iter().map(KillTarget::id).collect::<Vec<_>>();
        assert_eq!(ids(&plan), ids(&shown), "exactly what the finding planned");
        assert_eq!(plan.refused, shown.refused);
        assert_eq!(plan.grace_ms, 3000);
        assert!(
            !plan.targets[0].argv.contains(&"Zqsecret".to_owned()),
            "redacted as it leaves"
        );
        // The grace asked for overrides the suggested one.
        let opts = KillOptions {
            grace: Some(Duration::from_millis(500)),
            force: false,
        };
        let plan = plan_for(&request, &[Arc::new(f)], &wider_table(), opts).unwrap();
        assert_eq!(plan.grace_ms, 500);
    }

    #[test]
    fn several_findings_are_their_plans_together_leaves_first() {
        let a = finding(
            FindingKind::OrphanedWorker,
            300,
            vec![target(301, Role::Adapter), target(300, Role::Worker)],
            3000,
        );
        let b = finding(
            FindingKind::OrphanedWorker,
            400,
            vec![
                target(400, Role::Worker),
                target(301, Role::Adapter),
                target(401, Role::Debuggee),
            ],
            5000,
        );
        let all = [Arc::new(a.clone()), Arc::new(b.clone())];
        let kind = KillRequest::Kind {
            kind: FindingKind::OrphanedWorker,
            server: None,
        };
        let plan = plan_for(&kind, &all, &wider_table(), KillOptions::default()).unwrap();
        let pids: Vec<u32> = plan.targets.iter().map(|t| t.pid).collect();
        assert_eq!(
            pids,
            [301, 401, 300, 400],
            "each once, leaves before workers"
        );
        assert_eq!(plan.grace_ms, 5000, "the longest grace");
        assert_eq!(plan.refused.len(), 1, "a refusal named by both, once");
        let ids = KillRequest::Findings {
            ids: vec![a.id.clone(), b.id.clone()],
        };
        assert_eq!(
            plan_for(&ids, &all, &wider_table(), KillOptions::default()).unwrap(),
            plan
        );
        // Near miss: a finding killing does not fix is refused in words, not planned.
        let mut c = a;
        c.plan = None;
        c.suggested_action = "look at the server's log".into();
        let e = plan_for(
            &KillRequest::Finding { id: c.id.clone() },
            &[Arc::new(c)],
            &wider_table(),
            KillOptions::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("not fixed by killing"), "{e}");
    }

    #[test]
    fn a_pid_is_planned_now_against_the_live_table() {
        let req = KillRequest::Pid {
            pid: 300,
            tree: true,
        };
        let plan = plan_for(
            &req,
            &[] as &[Arc<Finding>],
            &wider_table(),
            KillOptions::default(),
        )
        .unwrap();
        let pids: Vec<u32> = plan.targets.iter().map(|t| t.pid).collect();
        assert_eq!(
            pids,
            [301, 300],
            "its child first, not root's process in its group"
        );
    }
}
