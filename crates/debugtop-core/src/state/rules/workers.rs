//! Workers: orphaned (their owner is gone or is not the same process) and leaked (their owner
//! lives, their session is over — by any witness).

use chrono::{DateTime, Utc};

use super::{about, of_session, secs, Candidate, Ctx, Input};
use crate::model::{
    DebugSession, FindingKind, Health, Proc, Role, ServerInfo, ServerMode, Severity,
};

/// The worker's owner, if it is a live mcp-debugger server that started no later than it.
fn same_owner<'a>(ctx: &'a Ctx<'_>, p: &Proc) -> Option<&'a ServerInfo> {
    let owner = p.owner_pid?;
    ctx.world
        .server(owner)
        .filter(|s| s.start_time <= p.start_time)
}

fn live_workers<'a>(ctx: &'a Ctx<'_>) -> impl Iterator<Item = &'a std::sync::Arc<Proc>> {
    ctx.proc_arcs()
        .filter(|p| p.role == Role::Worker && p.sample.state.is_alive())
}

/// The `--mcp-owner-pid=` as the worker wrote it (its own namespace's pid).
fn written_owner(p: &Proc) -> Option<&str> {
    p.argv
        .iter()
        .find_map(|a| a.strip_prefix("--mcp-owner-pid="))
}

/// A live worker whose `--mcp-owner-pid` is not a live server started before it.
pub fn orphaned_worker(ctx: &Ctx<'_>) -> Vec<Candidate> {
    live_workers(ctx)
        .filter(|p| same_owner(ctx, p).is_none())
        .map(|p| {
            // Everything of the world the finding reads besides the worker itself.
            let owner = p.owner_pid.and_then(|o| ctx.world.server(o)).cloned();
            let janitor = janitor_said_killed(ctx, p).is_some();
            ctx.memoized(
                FindingKind::OrphanedWorker,
                p,
                &[Input::Server(owner), Input::Fact(janitor)],
                true,
                || orphan_finding(ctx, p),
            )
        })
        .collect()
}

/// The finding about an orphaned worker, but its plan.
fn orphan_finding(ctx: &Ctx<'_>, p: &Proc) -> crate::model::Finding {
    let written = written_owner(p).unwrap_or("?");
    let mut f = about(
        FindingKind::OrphanedWorker,
        Severity::Critical,
        p,
        ctx.now(),
    );
    f.server_pid = p.owner_pid;
    f.evidence.push(format!(
        "worker {}{} names its owner with --mcp-owner-pid={written} (process table)",
        p.pid,
        of_session(p)
    ));
    f.evidence.push(match (p.owner_pid, &p.ns) {
        (None, Some(ns)) => format!(
            "no process has pid {written} in its pid namespace{} (the worker's pid there is {}): its owner is gone",
            ns.container.as_deref().map(|c| format!(" (container {c})")).unwrap_or_default(),
            ns.pid
        ),
        (Some(owner), _) => match ctx.world.server(owner) {
            Some(s) => format!(
                "pid {owner} is an mcp-debugger server started at {}, after the worker (started {}): not its owner",
                s.start_time.to_rfc3339(),
                p.start_time.to_rfc3339()
            ),
            None => format!("no mcp-debugger server with pid {owner} is running"),
        },
        (None, None) => "its owner pid names no process".to_owned(),
    });
    if let Some(said) = janitor_said_killed(ctx, p) {
        f.evidence.push(said);
    }
    if p.owner_pid != Some(p.ppid) {
        let was = p
            .remembered_ppid
            .map(|r| format!(" (was {r})"))
            .unwrap_or_default();
        f.evidence
            .push(format!("its parent is now pid {}{was}", p.ppid));
    }
    f.suggested_action = format!("kill worker {} and everything under it", p.pid);
    f
}

/// What a live server's startup janitor said of this very process: that it killed it (the
/// line written once the kill was done). A process that still runs after that line is one the
/// janitor failed to end; one started after the line only has its pid (reused).
pub(super) fn janitor_said_killed(ctx: &Ctx<'_>, p: &Proc) -> Option<String> {
    let (server, kill) = ctx
        .world
        .janitor_kills
        .iter()
        .rev()
        .find(|(_, k)| k.pid == p.pid && k.at.is_some_and(|at| at >= p.start_time))?;
    Some(format!(
        "the startup janitor of mcp-debugger {server} said it killed it: {} ({}); it still runs",
        kill.said.text, kill.said.source
    ))
}

/// One reason the server can no longer hold a worker's session.
struct Witness {
    /// What it says, in words, with its source.
    text: String,
    /// When it became true, when the source says.
    at: Option<DateTime<Utc>>,
}

/// Every witness that the session of `p` (owner `server`) is over.
fn witnesses(
    ctx: &Ctx<'_>,
    p: &Proc,
    server: &ServerInfo,
    session: Option<&DebugSession>,
) -> Vec<Witness> {
    let mut out = Vec::new();
    let sid = p.session_id.as_deref().unwrap_or("(none)");
    if let Some(d) = session.filter(|d| d.ended) {
        let cite = d
            .ended_by
            .as_ref()
            .map(|fact| format!("{} ({})", fact.text, fact.source))
            .unwrap_or_else(|| "its end in the server's log".into());
        out.push(Witness {
            text: format!("the server's log ended the session: {cite}"),
            at: Some(d.ended_at.unwrap_or(ctx.now())),
        });
    }
    if let Some(d) = session.filter(|d| d.worker_finished.is_some()) {
        if let Some(fact) = &d.worker_finished {
            out.push(Witness {
                text: format!(
                    "the worker's own log says it is done: {} ({})",
                    fact.text, fact.source
                ),
                at: d.worker_finished_at,
            });
        }
    }
    let read = ctx
        .world
        .logs
        .get(&server.pid)
        .map_or(0, |l| l.server_lines);
    if session.is_none_or(|d| !d.in_log) && read > 0 {
        out.push(Witness {
            text: format!("that server's logs (read from their start) never created session {sid}"),
            at: None,
        });
    }
    if server.mode == ServerMode::Http {
        if let Some(Ok(h)) = ctx.world.health.get(&server.pid) {
            out.extend(health_witness(h, sid));
        }
    }
    out
}

/// `/health` says no HTTP session can hold the debug session: it lists none at all, or its
/// `details` (newer servers) list the debug sessions and this one is not among them.
fn health_witness(h: &Health, sid: &str) -> Option<Witness> {
    if h.sessions.is_empty() {
        return Some(Witness {
            text:
                "the server's /health lists no HTTP session at all: no client can hold the session"
                    .into(),
            at: None,
        });
    }
    let details = h.details.as_ref()?;
    (!details
        .iter()
        .any(|d| d.debug_sessions.iter().any(|x| x == sid)))
    .then(|| Witness {
        text: format!(
            "the server's /health details list {} HTTP session(s), none holding session {sid}",
            details.len()
        ),
        at: None,
    })
}

/// A live worker whose owner is alive and the same, but whose session is over: any witness —
/// the server's own log ended or never created it, the worker's own log says it is done, or
/// `/health` leaves no HTTP session that could hold it.
pub fn leaked_worker(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let mut out = Vec::new();
    for p in live_workers(ctx) {
        let Some(server) = same_owner(ctx, p) else {
            continue;
        };
        let session = p
            .session_id
            .as_deref()
            .and_then(|s| ctx.session(s, server.pid));
        let found = witnesses(ctx, p, server, session);
        if found.is_empty() {
            continue;
        }
        let dated = found.iter().filter_map(|w| w.at).min();
        let mut f = about(FindingKind::LeakedWorker, Severity::Critical, p, ctx.now());
        f.server_pid = Some(server.pid);
        f.evidence.push(format!(
            "worker {}{} is still alive{}",
            p.pid,
            of_session(p),
            dated
                .map(|at| format!(" {} after its session ended", secs(ctx.now() - at)))
                .unwrap_or_default()
        ));
        f.evidence
            .extend(found.iter().map(|w| format!("witness: {}", w.text)));
        f.evidence.push(format!(
            "its owner {} is alive and is the same server (started before the worker)",
            server.pid
        ));
        if p.ppid != server.pid {
            f.evidence.push(format!(
                "its parent is pid {}, not the server {} that spawns every worker",
                p.ppid, server.pid
            ));
        }
        f.suggested_action = format!("kill worker {} and everything under it", p.pid);
        f.plan = Some(ctx.plan(p, &[p.pid], false));
        out.push(match dated {
            Some(at) => Candidate::dated(f, at),
            None => Candidate::new(f),
        });
    }
    out
}
