//! What survives of a finished debug session's chain once its adapter is gone: a debuggee, a
//! launcher, a watchdog, still running (upstream #343: process groups whose leader died).

use super::{about, of_session, Candidate, Ctx};
use crate::model::{FindingKind, Proc, Role, Severity};

/// Roles a chain process above a debuggee can have (if one is alive above it, the rules for
/// that process cover the chain).
fn chain_head(r: Role) -> bool {
    matches!(
        r,
        Role::Adapter | Role::Worker | Role::Launcher | Role::Debuggee
    )
}

/// A live debuggee, launcher or watchdog tied to mcp-debugger (a server marker or memory),
/// with no live adapter, worker, launcher or debuggee above it or leading its group.
pub fn leaked_debuggee(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in ctx.procs().filter(|p| {
        p.sample.state.is_alive()
            && matches!(p.role, Role::Debuggee | Role::Launcher | Role::Watchdog)
            && p.server_pid.is_some()
    }) {
        if covered(ctx, p) {
            continue;
        }
        let mut f = about(
            FindingKind::LeakedDebuggee,
            Severity::Critical,
            p,
            ctx.now(),
        );
        f.evidence = evidence(ctx, p);
        let group = group_of(ctx, p);
        let names: Vec<String> = group.iter().map(u32::to_string).collect();
        f.suggested_action = format!(
            "kill what survives of the chain: {} {} and its process group ({})",
            p.role,
            p.pid,
            names.join(", ")
        );
        f.plan = Some(ctx.plan(p, &group, false));
        out.push(Candidate::new(f));
    }
    out
}

/// Something alive above it answers for it: a live chain process as its parent, a live
/// adapter leading its group, or (for a watchdog) its debuggee alive.
fn covered(ctx: &Ctx<'_>, p: &Proc) -> bool {
    let alive = |pid: u32| ctx.world.proc(pid).filter(|q| q.sample.state.is_alive());
    if alive(p.ppid).is_some_and(|q| chain_head(q.role)) {
        return true;
    }
    if p.pgid != p.pid && alive(p.pgid).is_some_and(|q| q.role == Role::Adapter) {
        return true;
    }
    p.role == Role::Watchdog && p.markers.inspector_pid.and_then(alive).is_some()
}

fn evidence(ctx: &Ctx<'_>, p: &Proc) -> Vec<String> {
    let mut e = vec![format!(
        "{} {}{} runs on without its adapter: its parent is {}",
        p.role,
        p.pid,
        of_session(p),
        match ctx.world.proc(p.ppid) {
            Some(q) => format!("pid {} ({})", q.pid, q.role),
            None if p.ppid == 1 => "pid 1 (reparented to init)".into(),
            None => format!("pid {} (not part of the chain)", p.ppid),
        }
    )];
    if p.pgid != p.pid && ctx.world.proc(p.pgid).is_none() {
        let adapter = p
            .session_id
            .as_deref()
            .and_then(|s| ctx.world.debug_sessions.iter().find(|d| d.id == s))
            .and_then(|d| d.adapter_pid)
            .filter(|a| *a == p.pgid);
        e.push(match adapter {
            Some(a) => format!("its process group {a} was led by its adapter {a}, which is gone"),
            None => format!("the leader of its process group {} is gone", p.pgid),
        });
    }
    if let Some(m) = p.server_pid.filter(|_| p.markers.main_pid.is_some()) {
        let state = if ctx.world.server(m).is_some() {
            "a live server"
        } else {
            "no live server"
        };
        e.push(format!("it carries MCP_DEBUGGER_MAIN_PID={m} ({state})"));
    }
    if p.markers.js_bootloader || p.markers.js_inspector {
        e.push("its environment loads js-debug's bootloader (a js-debug debuggee)".into());
    }
    if p.argv.iter().any(|a| a == "--adapter-access-token") {
        e.push("its command line connects back to a debugpy adapter (--connect … --adapter-access-token)".into());
    }
    if let Some(d) = p.session_id.as_deref().and_then(|s| {
        ctx.world
            .debug_sessions
            .iter()
            .find(|d| d.id == s && d.ended)
    }) {
        if let Some(by) = &d.ended_by {
            e.push(format!("its session ended: {} ({})", by.text, by.source));
        }
    }
    e
}

/// It and every live process of its process group (the group a dead adapter led).
fn group_of(ctx: &Ctx<'_>, p: &Proc) -> Vec<u32> {
    let mut pids = vec![p.pid];
    pids.extend(
        ctx.procs()
            .filter(|q| q.pid != p.pid && q.pgid == p.pgid && q.sample.state.is_alive())
            .filter(|q| q.role != Role::Server && q.role != Role::Worker)
            .map(|q| q.pid),
    );
    pids
}
