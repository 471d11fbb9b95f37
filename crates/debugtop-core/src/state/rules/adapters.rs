//! Adapters whose worker is gone.

use super::{about, Candidate, Ctx};
use crate::model::{FindingKind, Proc, ProcState, Role, Severity};

/// A live adapter whose parent is not a live worker.
pub fn leaked_adapter(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx
        .procs()
        .filter(|p| p.role == Role::Adapter && p.state.is_alive())
    {
        let parent = ctx.world.proc(p.ppid);
        if parent.is_some_and(|q| q.role == Role::Worker && q.state.is_alive()) {
            continue;
        }
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
        if p.pgid != p.pid && ctx.world.proc(p.pgid).is_none() {
            f.evidence.push(format!(
                "the leader of its process group {} (its worker, upstream #343) is gone",
                p.pgid
            ));
        }
        if let Some(m) = p.markers.main_pid {
            let state = if ctx.world.server(m).is_some() {
                "a live server"
            } else {
                "no live server"
            };
            f.evidence.push(format!(
                "it still carries MCP_DEBUGGER_MAIN_PID={m} ({state})"
            ));
        }
        let chain = chain_of(ctx, p);
        if !chain.is_empty() {
            f.evidence
                .push(format!("still running with it: {}", chain.join(", ")));
        }
        f.suggested_action = format!("kill adapter {}, its group and what it started", p.pid);
        f.plan = Some(ctx.plan(p, &[p.pid], false));
        out.push(Candidate::new(f));
    }
    out
}

fn parent_text(p: &Proc, parent: Option<&Proc>) -> String {
    match parent {
        Some(q) if q.state == ProcState::Zombie => {
            format!("pid {} ({}, a zombie)", q.pid, q.role)
        }
        Some(q) => format!("pid {} ({})", q.pid, q.role),
        None if p.ppid == 1 => "pid 1 (reparented to init)".into(),
        None => format!("pid {} (not a worker)", p.ppid),
    }
}

/// What still runs with the adapter: its process group, and a watchdog of its session.
fn chain_of(ctx: &Ctx<'_>, p: &Proc) -> Vec<String> {
    ctx.procs()
        .filter(|q| q.pid != p.pid && q.state.is_alive())
        .filter(|q| {
            q.pgid == p.pid
                || (q.role == Role::Watchdog
                    && p.session_id.is_some()
                    && q.session_id == p.session_id)
        })
        .map(|q| format!("{} {}", q.role, q.pid))
        .collect()
}
