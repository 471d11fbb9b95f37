//! The end-to-end harness: spawn real process shapes and the real `mcp-debugger`, drive it over
//! real MCP Streamable HTTP, and clean up **only what we started**, by pid and identity (pid +
//! start time), never by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

pub mod mcp;
pub mod procs;

pub use procs::{
    fixture, respawn_at, start_ticks, wait_for, HeldZombie, Owned, Spawned, TreeGuard,
};

/// The tree as indented text (for failure messages and eyeballing).
pub fn render(nodes: &[debugtop_core::reconcile::TreeNode]) -> String {
    fn go(n: &debugtop_core::reconcile::TreeNode, depth: usize, out: &mut String) {
        let role = n
            .role
            .map(|r| format!(" [{}]", r.as_str()))
            .unwrap_or_default();
        let state = n
            .state
            .map(|s| format!(" {}", s.letter()))
            .unwrap_or_default();
        let status = n
            .status
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        let label: String = n.label.chars().take(110).collect();
        out.push_str(&format!(
            "{}{:?}{role}{state}{status} {label}\n",
            "  ".repeat(depth),
            n.kind
        ));
        for c in &n.children {
            go(c, depth + 1, out);
        }
    }
    let mut out = String::new();
    for n in nodes {
        go(n, 0, &mut out);
    }
    out
}
