//! Debug sessions and their nodes: each session's record from the logs and its processes made
//! into the session and its subtree, given back from the memo while neither changed.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::super::knowledge::{DebugRec, ServerKnowledge};
use crate::model::{
    DebugSession, DebuggeeState, NodeKind, NodeStatus, Proc, Role, SessionProgress, TreeNode,
};
use crate::redact::CommandLines;

use super::forest::process_forest;
use super::{Built, ServerNow, SessionMemo, SessionNow, Sessions, ENDED_KEEP};

/// Debug-session nodes (with their process subtrees) and loose processes of one server.
pub(super) fn session_nodes(
    server_pid: u32,
    know: &ServerKnowledge,
    procs: &[&Arc<Proc>],
    (now, lines): (DateTime<Utc>, CommandLines),
    memo: &mut SessionMemo,
) -> Sessions {
    let listed = |r: &DebugRec| r.ended.is_none_or(|at| now - at < ENDED_KEEP);
    let inputs = ServerNow {
        procs,
        debug: &know.debug,
        listed: know.debug.values().map(listed).collect(),
        lines,
    };
    memo.sessions(server_pid, inputs, |each| {
        let mut by_session: BTreeMap<&str, Vec<&Arc<Proc>>> = BTreeMap::new();
        let mut loose: Vec<&Proc> = Vec::new();
        for p in procs {
            match &p.session_id {
                Some(s) => by_session.entry(s.as_str()).or_default().push(p),
                None => loose.push(p),
            }
        }
        let mut ids: BTreeSet<&str> = by_session.keys().copied().collect();
        ids.extend(
            know.debug
                .iter()
                .filter(|(_, r)| listed(r))
                .map(|(k, _)| k.as_str()),
        );
        let mut nodes = Vec::new();
        let mut out = Vec::new();
        for id in ids {
            let rec = know.debug.get(id);
            let ps = by_session.remove(id).unwrap_or_default();
            let (node, session) = each.get_or_build_same(id, SessionNow(rec, &ps), || {
                session_and_node(server_pid, id, rec, &ps, lines)
            });
            nodes.extend(node);
            out.push(session);
        }
        nodes.extend(process_forest(&loose, lines));
        (nodes, out)
    })
}

/// One debug session and, unless it ended with nothing left running (history, not part of
/// the tree), its node.
fn session_and_node(
    server_pid: u32,
    id: &str,
    rec: Option<&DebugRec>,
    ps: &[&Arc<Proc>],
    lines: CommandLines,
) -> Built {
    let ps: Vec<&Proc> = ps.iter().map(|p| &***p).collect();
    let session = debug_session(server_pid, id, rec, &ps);
    let node =
        (!(session.ended && ps.is_empty())).then(|| Arc::new(session_node(&session, &ps, lines)));
    (node, Arc::new(session))
}

fn debug_session(server: u32, id: &str, rec: Option<&DebugRec>, ps: &[&Proc]) -> DebugSession {
    let worker = ps
        .iter()
        .find(|p| p.role == Role::Worker && p.sample.state.is_alive())
        .map(|p| p.pid);
    let adapter = ps
        .iter()
        .find(|p| p.role == Role::Adapter && p.sample.state.is_alive())
        .map(|p| p.pid)
        .or(rec.and_then(|r| r.adapter_pid));
    DebugSession {
        id: id.to_owned(),
        server_pid: Some(server),
        name: rec.and_then(|r| r.name.clone()),
        language: rec
            .and_then(|r| r.language)
            .or_else(|| ps.iter().find_map(|p| p.language)),
        state: rec.and_then(|r| r.state),
        in_log: rec.is_some_and(|r| r.created),
        ended: rec.is_some_and(|r| r.ended.is_some()),
        ended_at: rec.and_then(|r| r.ended),
        ended_by: rec.and_then(|r| r.ended_by.clone()),
        worker_pid: worker,
        adapter_pid: adapter,
        http_session: rec.and_then(|r| r.http_session.clone()),
        worker_finished: rec.and_then(|r| r.worker_finished.as_ref().map(|(_, f)| f.clone())),
        worker_finished_at: rec.and_then(|r| r.worker_finished.as_ref().map(|(at, _)| *at)),
        facts: rec.map(|r| r.facts.clone()).unwrap_or_default(),
        progress: progress(rec, ps),
    }
}

/// How far the session got, from its records and its processes.
fn progress(rec: Option<&DebugRec>, ps: &[&Proc]) -> SessionProgress {
    let logs = rec.and_then(|r| r.logs.as_ref());
    let last_line = logs.and_then(|l| l.last_line.clone());
    let last_event = rec.and_then(|r| r.last_event.clone());
    let last_sign = match (last_line, last_event) {
        (Some(a), Some(b)) => Some(if b.at > a.at { b } else { a }),
        (a, b) => a.or(b),
    };
    SessionProgress {
        state_since: rec.and_then(|r| r.state_at),
        last_sign,
        stages: rec.map(|r| r.stages.clone()).unwrap_or_default(),
        trace: logs.and_then(|l| l.trace.clone()),
        // A live debuggee first; else a zombie one (exited, not reaped: worth seeing).
        debuggee: ps
            .iter()
            .filter(|p| p.role == Role::Debuggee && p.exited_at.is_none())
            .min_by_key(|p| !p.sample.state.is_alive())
            .map(|p| DebuggeeState {
                pid: p.pid,
                state: p.sample.state,
                tracer_pid: p.tracer_pid,
            }),
    }
}

fn session_node(d: &DebugSession, ps: &[&Proc], lines: CommandLines) -> TreeNode {
    let name = d
        .name
        .as_deref()
        .map(|n| format!("{n} "))
        .unwrap_or_default();
    let mut n = TreeNode::new(
        format!("debug:{}", d.id),
        NodeKind::DebugSession,
        format!("{name}{}", d.id),
    );
    n.session_id = Some(d.id.clone());
    n.status = Some(match (d.ended, d.state) {
        (true, _) => NodeStatus::Closed,
        (false, Some(s)) => s.into(),
        (false, None) => NodeStatus::Unknown,
    });
    n.facts = d.facts.clone();
    n.children = process_forest(ps, lines);
    n
}
