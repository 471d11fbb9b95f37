//! Workers: orphaned (their owner is gone or is not the same process) and leaked (their owner
//! lives, their session is over).

use super::{about, of_session, secs, Candidate, Ctx};
use crate::model::{FindingKind, Proc, Role, ServerInfo, Severity};

/// The worker's owner, if it is a live mcp-debugger server that started no later than it.
fn same_owner<'a>(ctx: &'a Ctx<'_>, p: &Proc) -> Option<&'a ServerInfo> {
    let owner = p.owner_pid?;
    ctx.world
        .server(owner)
        .filter(|s| s.start_time <= p.start_time)
}

fn live_workers<'a>(ctx: &'a Ctx<'_>) -> impl Iterator<Item = &'a Proc> {
    ctx.procs()
        .filter(|p| p.role == Role::Worker && p.state.is_alive())
}

/// A live worker whose `--mcp-owner-pid` is not a live server started before it.
pub fn orphaned_worker(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in live_workers(ctx).filter(|p| same_owner(ctx, p).is_none()) {
        let owner = p.owner_pid.unwrap_or(0);
        let mut f = about(
            FindingKind::OrphanedWorker,
            Severity::Critical,
            p,
            ctx.now(),
        );
        f.server_pid = Some(owner);
        f.evidence.push(format!(
            "worker {}{} names its owner with --mcp-owner-pid={owner} (process table)",
            p.pid,
            of_session(p)
        ));
        f.evidence.push(match ctx.world.server(owner) {
            Some(s) => format!(
                "pid {owner} is an mcp-debugger server started at {}, after the worker (started {}): not its owner",
                s.start_time.to_rfc3339(),
                p.start_time.to_rfc3339()
            ),
            None => format!("no mcp-debugger server with pid {owner} is running"),
        });
        if p.ppid != owner {
            let was = p
                .remembered_ppid
                .map(|r| format!(" (was {r})"))
                .unwrap_or_default();
            f.evidence
                .push(format!("its parent is now pid {}{was}", p.ppid));
        }
        f.suggested_action = format!("kill worker {} and everything under it", p.pid);
        f.plan = Some(ctx.plan(&[p.pid], true));
        out.push(Candidate::new(f));
    }
    out
}

/// A live worker whose owner is alive and the same, but whose session is over: the server's
/// own log ended it, or never created it although the log was read from its start.
pub fn leaked_worker(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in live_workers(ctx) {
        let Some(server) = same_owner(ctx, p) else {
            continue;
        };
        let sid = p.session_id.as_deref();
        let session = sid.and_then(|s| ctx.session(s, server.pid));
        let mut f = about(FindingKind::LeakedWorker, Severity::Critical, p, ctx.now());
        f.server_pid = Some(server.pid);
        f.suggested_action = format!("kill worker {} and everything under it", p.pid);
        if let Some(d) = session.filter(|d| d.ended) {
            let at = d.ended_at.unwrap_or(ctx.now());
            let cite = d
                .ended_by
                .as_ref()
                .map(|fact| format!("{} ({})", fact.text, fact.source))
                .unwrap_or_else(|| "its end in the server's log".into());
            f.evidence.push(format!(
                "worker {}{} is still alive {} after its session ended: {cite}",
                p.pid,
                of_session(p),
                secs(ctx.now() - at)
            ));
            f.evidence.push(format!(
                "its owner {} is alive and is the same server (started before the worker)",
                server.pid
            ));
            f.plan = Some(ctx.plan(&[p.pid], false));
            out.push(Candidate::dated(f, at));
            continue;
        }
        let read = ctx
            .world
            .logs
            .get(&server.pid)
            .map_or(0, |l| l.server_lines);
        if session.is_none_or(|d| !d.in_log) && read > 0 {
            f.evidence.push(format!(
                "worker {}{} claims server {} as its owner, but that server's logs never created session {}",
                p.pid,
                of_session(p),
                server.pid,
                sid.unwrap_or("(none)")
            ));
            if p.ppid != server.pid {
                f.evidence.push(format!(
                    "its parent is pid {}, not the server {} that spawns every worker",
                    p.ppid, server.pid
                ));
            }
            f.plan = Some(ctx.plan(&[p.pid], false));
            out.push(Candidate::new(f));
        }
    }
    out
}
