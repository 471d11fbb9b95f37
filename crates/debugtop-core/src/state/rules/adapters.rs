//! Adapters whose worker is gone.

use std::sync::Arc;

use super::{about, Candidate, Ctx, Input};
use crate::model::{Finding, FindingKind, Proc, ProcState, Role, Severity};
use crate::state::reuse::memo::ByAlloc;

/// A live adapter whose parent is not a live worker.
pub fn leaked_adapter(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx
        .proc_arcs()
        .filter(|p| p.role == Role::Adapter && p.sample.state.is_alive())
    {
        let parent = ctx.world.proc_arc(p.ppid);
        if parent.is_some_and(|q| q.role == Role::Worker && q.sample.state.is_alive()) {
            continue;
        }
        let leader_gone = p.pgid != p.pid && ctx.world.proc(p.pgid).is_none();
        let main = p.markers.main_pid.map(|m| ctx.world.server(m).is_some());
        let chain = chain_of(ctx, p);
        let janitor = super::workers::janitor_said_killed(ctx, p).is_some();
        let inputs = [
            Input::proc(parent),
            Input::Fact(leader_gone),
            Input::Fact(main == Some(true)),
            Input::Procs(ByAlloc::all(chain.iter().copied())),
            Input::Fact(janitor),
        ];
        out.push(
            ctx.memoized(FindingKind::LeakedAdapter, p, &inputs, false, || {
                let parent = parent.map(|q| &**q);
                finding(ctx, p, parent, leader_gone, main == Some(true), &chain)
            }),
        );
    }
    out
}

/// The finding about a leaked adapter, but its plan.
fn finding(
    ctx: &Ctx<'_>,
    p: &Proc,
    parent: Option<&Proc>,
    leader_gone: bool,
    main_lives: bool,
    chain: &[&Arc<Proc>],
) -> Finding {
    let mut f = about(FindingKind::LeakedAdapter, Severity::Critical, p, ctx.now());
    let lang = p.language.map_or("unknown".to_owned(), |l| l.to_string());
    f.evidence.push(format!(
        "{lang} adapter {}{}: its parent is {}, not a live worker",
        p.pid,
        super::of_session(p),
        parent_text(p, parent)
    ));
    if let Some(old) = p.remembered_ppid {
        f.evidence.push(format!("it was started under pid {old}"));
    }
    // Newer servers' janitor reaps tagged js-debug adapters in the worker's words.
    if let Some(said) = super::workers::janitor_said_killed(ctx, p) {
        f.evidence.push(said);
    }
    if leader_gone {
        f.evidence.push(format!(
            "the leader of its process group {} (its worker, upstream #343) is gone",
            p.pgid
        ));
    }
    if let Some(m) = p.markers.main_pid {
        let state = if main_lives {
            "a live server"
        } else {
            "no live server"
        };
        f.evidence.push(format!(
            "it still carries MCP_DEBUGGER_MAIN_PID={m} ({state})"
        ));
    }
    if !chain.is_empty() {
        let chain: Vec<String> = chain
            .iter()
            .map(|q| format!("{} {}", q.role, q.pid))
            .collect();
        f.evidence
            .push(format!("still running with it: {}", chain.join(", ")));
    }
    f.suggested_action = format!("kill adapter {}, its group and what it started", p.pid);
    f
}

fn parent_text(p: &Proc, parent: Option<&Proc>) -> String {
    match parent {
        Some(q) if q.sample.state == ProcState::Zombie => {
            format!("pid {} ({}, a zombie)", q.pid, q.role)
        }
        Some(q) => format!("pid {} ({})", q.pid, q.role),
        None if p.ppid == 1 => "pid 1 (reparented to init)".into(),
        None => format!("pid {} (not a worker)", p.ppid),
    }
}

/// What still runs with the adapter: its process group, then a watchdog of its session.
fn chain_of<'a>(ctx: &'a Ctx<'_>, p: &Proc) -> Vec<&'a Arc<Proc>> {
    let group = ctx.world.group(p.pid);
    let watchdogs = ctx
        .world
        .watchdogs()
        .filter(|q| q.pgid != p.pid && p.session_id.is_some() && q.session_id == p.session_id);
    group
        .chain(watchdogs)
        .filter(|q| q.pid != p.pid && q.sample.state.is_alive())
        .collect()
}
