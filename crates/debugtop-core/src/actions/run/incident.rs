//! A run's incident snapshot: the engine's snapshot of the machine cut down to the run's
//! survivors (their processes, the findings and timeline about them, the servers among them
//! and those servers' sessions), with a tree drawn from the run's own memory of who started
//! whom — the file `snapshot` writes and the app opens.

use std::collections::HashSet;
use std::sync::Arc;

use crate::model::{proc_node_id, LiveTable, NodeKind, ProcId, Snapshot, Survivor, TreeNode};

/// `full` (the audit's snapshot) cut down to `survivors`.
pub fn of_run(full: &Snapshot, survivors: &[Survivor]) -> Snapshot {
    let ids: HashSet<ProcId> = survivors.iter().map(|s| s.id).collect();
    let pids: HashSet<u32> = ids.iter().map(|i| i.pid).collect();
    let mut s = full.clone();
    s.processes.retain(|p| ids.contains(&p.id()));
    let known: Vec<u32> = s.processes.iter().map(|p| p.pid).collect();
    let missing: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|p| !known.contains(p))
        .collect();
    let read = crate::actions::kill::with_processes(
        &LiveTable::new(&[], crate::sources::self_info()),
        &missing,
    );
    s.processes
        .extend(read.procs.iter().filter(|p| ids.contains(&p.id())).cloned());
    let about_ours = |f: &Arc<crate::model::Finding>| f.pids.iter().any(|p| pids.contains(p));
    s.findings.retain(about_ours);
    s.unconfirmed.retain(about_ours);
    s.groups = crate::model::group_findings(&s.findings);
    s.servers.retain(|sv| pids.contains(&sv.pid));
    let servers: HashSet<u32> = s.servers.iter().map(|sv| sv.pid).collect();
    let ours = |server: Option<u32>| server.is_some_and(|p| servers.contains(&p));
    s.http_sessions.retain(|h| ours(h.server_pid));
    s.debug_sessions
        .retain(|d| ours(d.server_pid) || d.worker_pid.is_some_and(|w| pids.contains(&w)));
    s.timeline
        .retain(|e| e.pid.is_some_and(|p| pids.contains(&p)) || ours(e.server_pid));
    s.log_excerpts.clear();
    s.tree = tree(survivors);
    s
}

/// The survivors as a tree: each under the nearest survivor it descends from, the rest at
/// the top.
fn tree(survivors: &[Survivor]) -> Vec<Arc<TreeNode>> {
    let ids: HashSet<ProcId> = survivors.iter().map(|s| s.id).collect();
    let parent_of = |s: &Survivor| s.ancestry.iter().map(|a| a.id).find(|a| ids.contains(a));
    fn build(
        s: &Survivor,
        all: &[Survivor],
        parent_of: &dyn Fn(&Survivor) -> Option<ProcId>,
        depth: usize,
    ) -> Arc<TreeNode> {
        let mut n = TreeNode::new(proc_node_id(s.id), NodeKind::Process, s.argv.join(" "));
        n.pid = Some(s.id.pid);
        n.role = s.role;
        n.state = Some(s.state);
        if depth < 64 {
            n.children = all
                .iter()
                .filter(|c| parent_of(c) == Some(s.id))
                .map(|c| build(c, all, parent_of, depth + 1))
                .collect();
        }
        Arc::new(n)
    }
    survivors
        .iter()
        .filter(|s| parent_of(s).is_none())
        .map(|s| build(s, survivors, &parent_of, 0))
        .collect()
}
