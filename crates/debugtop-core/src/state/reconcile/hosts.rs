//! Hosts and what they started: a live host's servers (moved under it) and its other stdio
//! servers with their processes; servers whose host is gone under a node for that host, named
//! as its servers remember it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use super::super::world::World;
use crate::model::{NodeKind, Proc, Role, ServerInfo, TreeNode};
use crate::redact::CommandLines;

use super::forest::process_forest;

/// Stdio MCP servers that are not mcp-debugger (their own `server_pid`, not a live
/// mcp-debugger server's), and leaked stdio chains' roots that stand for themselves: what runs
/// under them belongs to them, not to a gone debug server.
pub(super) fn stdio_servers(servers: &[ServerInfo], procs: &[Arc<Proc>]) -> BTreeSet<u32> {
    procs
        .iter()
        .filter(|p| {
            (p.role == Role::Server && p.mcp.is_some())
                || (matches!(p.role, Role::Other | Role::Wrapper) && p.server_pid == Some(p.pid))
        })
        .filter(|p| !servers.iter().any(|s| s.pid == p.pid))
        .map(|p| p.pid)
        .collect()
}

/// Hosts and what they started: each live host's mcp-debugger servers (moved under it) and
/// other stdio servers with what they started; servers whose host is gone under a node for the
/// gone host.
pub(super) fn host_trees(w: &mut World, procs: &[Arc<Proc>], stdio: &BTreeSet<u32>) {
    let live_hosts: Vec<&Proc> = procs
        .iter()
        .map(|p| &**p)
        .filter(|p| p.role == Role::Host && p.exited_at.is_none())
        .collect();
    let host_of = |p: &Proc| p.host.as_ref().map(|h| (h.pid, h.start_ticks));
    let mut groups: BTreeMap<Option<(u32, u64)>, Vec<Arc<TreeNode>>> = BTreeMap::new();
    // mcp-debugger servers with a host: their whole server node moves under it.
    let mut top = Vec::new();
    for node in std::mem::take(&mut w.tree) {
        let host = (node.kind == NodeKind::Server)
            .then(|| node.pid.and_then(|pid| procs.iter().find(|p| p.pid == pid)))
            .flatten()
            .and_then(|p| host_of(p));
        match host {
            Some(h) => groups.entry(Some(h)).or_default().push(node),
            None => top.push(node),
        }
    }
    for &sp in stdio {
        let Some(server) = procs.iter().find(|p| p.pid == sp) else {
            continue;
        };
        let mine: Vec<&Proc> = procs
            .iter()
            .map(|p| &**p)
            .filter(|p| p.pid == sp || p.server_pid == Some(sp))
            .collect();
        groups
            .entry(host_of(server))
            .or_default()
            .extend(process_forest(&mine, w.command_lines));
    }
    for h in &live_hosts {
        let label = w.command_lines.text(&h.argv, HOST_LABEL_CHARS);
        let mut node = host_node(h.pid, &label, h.markers.host);
        node.role = Some(Role::Host);
        node.state = Some(h.sample.state);
        node.children = groups
            .remove(&Some((h.pid, h.start_ticks)))
            .unwrap_or_default();
        w.tree.push(Arc::new(node));
    }
    for (key, children) in groups {
        let mut node = gone_host_node(key, procs, w.command_lines);
        node.children = children;
        w.tree.push(Arc::new(node));
    }
    w.tree.extend(top);
}

/// The most characters of a host's command line in its label.
const HOST_LABEL_CHARS: usize = 120;

/// The node for a host that is gone, named as its servers remember it.
fn gone_host_node(key: Option<(u32, u64)>, procs: &[Arc<Proc>], lines: CommandLines) -> TreeNode {
    let remembered = key.and_then(|(pid, ticks)| {
        procs.iter().find_map(|p| {
            p.host
                .as_ref()
                .filter(|h| h.pid == pid && h.start_ticks == ticks)
        })
    });
    let mut node = match remembered {
        Some(h) => TreeNode::new(
            format!("gone-host:{}.{}", h.pid, h.start_ticks),
            NodeKind::GoneHost,
            format!(
                "{} host {} (gone): {}",
                h.kind.title(),
                h.pid,
                lines.text(&h.argv, HOST_LABEL_CHARS)
            ),
        ),
        None => TreeNode::new(
            "gone-host:unknown".into(),
            NodeKind::GoneHost,
            "stdio processes whose host debugtop never saw".into(),
        ),
    };
    node.pid = remembered.map(|h| h.pid);
    node
}

fn host_node(pid: u32, label: &str, kind: Option<crate::model::HostKind>) -> TreeNode {
    let what = kind.unwrap_or(crate::model::HostKind::Unlabelled).title();
    let mut node = TreeNode::new(
        format!("host:{pid}"),
        NodeKind::Host,
        format!("{what} host: {label}"),
    );
    node.pid = Some(pid);
    node
}
