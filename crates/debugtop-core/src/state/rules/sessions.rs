//! Sessions the server still holds whose worker is gone.

use std::collections::BTreeSet;

use super::{Candidate, Ctx};
use crate::model::{
    DebugSession, FactKind, Finding, FindingId, FindingKind, Role, SessionState, Severity,
};

/// A session of a live server, not ended and past starting, with no live worker.
pub fn session_without_worker(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let live_workers: BTreeSet<(&str, u32)> = ctx
        .procs()
        .filter(|p| p.role == Role::Worker && p.sample.state.is_alive())
        .filter_map(|p| Some((p.session_id.as_deref()?, p.server_pid?)))
        .collect();
    let mut out = Vec::new();
    for d in &ctx.world.debug_sessions {
        let Some(server) = d.server_pid.filter(|s| ctx.world.server(*s).is_some()) else {
            continue;
        };
        let state = d.state.unwrap_or(SessionState::Created);
        if d.ended || state.is_starting() || live_workers.contains(&(d.id.as_str(), server)) {
            continue;
        }
        out.push(Candidate::new(finding(d, server, state, ctx)));
    }
    out
}

fn finding(d: &DebugSession, server: u32, state: SessionState, ctx: &Ctx<'_>) -> Finding {
    let name = d
        .name
        .as_deref()
        .map(|n| format!(" ({n})"))
        .unwrap_or_default();
    let state_src = d
        .facts
        .iter()
        .rev()
        .find(|x| matches!(x.what, FactKind::StateChanged { .. }))
        .map(|x| format!(" per {}", x.source))
        .unwrap_or_default();
    let mut evidence = vec![format!(
        "server {server} still lists session {}{name} in state {state}{state_src}, but no worker process serves it",
        d.id
    )];
    if let Some(exit) = d.facts.iter().rev().find(|x| {
        matches!(
            x.what,
            FactKind::WorkerDied { .. }
                | FactKind::WorkerExited { .. }
                | FactKind::WorkerForceKilled
        )
    }) {
        evidence.push(format!("{} ({})", exit.text, exit.source));
    }
    Finding {
        id: FindingId::of(FindingKind::SessionWithoutWorker, &d.id),
        kind: FindingKind::SessionWithoutWorker,
        severity: Severity::Warning,
        pids: Vec::new(),
        session_id: Some(d.id.clone()),
        server_pid: Some(server),
        evidence,
        since: ctx.now(),
        confirmed_at: None,
        suggested_action: format!(
            "close the session (close_debug_session {}) or restart the server",
            d.id
        ),
        plan: None,
    }
}
