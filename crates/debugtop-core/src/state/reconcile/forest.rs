//! Processes as a forest by their parent links within a set (a watchdog under the debuggee it
//! names), each node labelled with its command line as the state writes it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::model::{proc_node_id, Fact, FactKind, NodeKind, Proc, Role, TreeNode};
use crate::redact::CommandLines;

/// Processes as a forest by parent links within the set; a watchdog hangs under the debuggee it
/// names. Children ordered by pid; workers first among roots. Labelled with their command
/// lines, written as `lines` says.
pub fn process_forest(ps: &[&Proc], lines: CommandLines) -> Vec<Arc<TreeNode>> {
    let pids: BTreeSet<u32> = ps.iter().map(|p| p.pid).collect();
    let parent_of = |p: &Proc| -> Option<u32> {
        if p.role == Role::Watchdog {
            if let Some(d) = p.markers.inspector_pid.filter(|d| pids.contains(d)) {
                return Some(d);
            }
        }
        Some(p.ppid).filter(|pp| pids.contains(pp) && *pp != p.pid)
    };
    let mut children: BTreeMap<u32, Vec<&Proc>> = BTreeMap::new();
    let mut roots = Vec::new();
    for p in ps {
        match parent_of(p) {
            Some(pp) => children.entry(pp).or_default().push(p),
            None => roots.push(*p),
        }
    }
    roots.sort_by_key(|p| (p.role != Role::Worker, p.pid));
    roots
        .into_iter()
        .map(|p| Arc::new(proc_node(p, &children, 0, lines)))
        .collect()
}

fn proc_node(
    p: &Proc,
    children: &BTreeMap<u32, Vec<&Proc>>,
    depth: usize,
    lines: CommandLines,
) -> TreeNode {
    // The whole command line (the views cut what they show).
    let label = lines.text(&p.argv, usize::MAX);
    let mut n = TreeNode::new(proc_node_id(p.id()), NodeKind::Process, label);
    n.pid = Some(p.pid);
    n.role = Some(p.role);
    n.state = Some(p.sample.state);
    n.session_id = p.session_id.clone();
    if let Some(old) = p.remembered_ppid {
        n.facts.push(Fact::table(FactKind::Reparented {
            from: old,
            to: p.ppid,
        }));
    }
    if let Some(ns) = &p.ns {
        n.facts.push(Fact::table(FactKind::InContainer {
            container: ns
                .container
                .clone()
                .unwrap_or_else(|| format!("pid-ns:{}", ns.inode)),
            inner_pid: ns.pid,
        }));
    }
    if let Some(t) = p.tracer_pid {
        n.facts.push(Fact::table(FactKind::TracedBy { pid: t }));
    }
    if depth < 64 {
        let mut kids = children.get(&p.pid).cloned().unwrap_or_default();
        kids.sort_by_key(|k| k.pid);
        n.children = kids
            .into_iter()
            .map(|k| Arc::new(proc_node(k, children, depth + 1, lines)))
            .collect();
    }
    n
}
