//! The end-to-end harness: spawn real process shapes and the real `mcp-debugger`, drive it over
//! real MCP Streamable HTTP, tick the real engine until a condition holds, and clean up **only
//! what we started**, by pid and identity (pid + start time), never by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

pub mod builds;
pub mod dockerd;
pub mod mcp;
pub mod nobody;
pub mod procs;
pub mod prometheus;
pub mod sshd;
pub mod wine;

use std::time::{Duration, Instant};

use debugtop_core::model::{Finding, FindingKind, TreeNode, Update};
use debugtop_core::sampler::{Config, Engine};

pub use procs::{
    fixture, kib_field, respawn_at, start_ticks, wait_for, HeldZombie, Owned, Spawned, TreeGuard,
};

/// An engine over this machine, `/health` timing out after `health_ms`.
pub fn engine(health_ms: u64) -> Engine {
    let mut c = Config::default();
    c.sources.health_timeout = Duration::from_millis(health_ms);
    Engine::new(c).expect("engine")
}

/// Ticks every `every` until `done` gives a value, or panics after `secs` with what was seen
/// last (the tree and the findings).
pub async fn tick_until<T>(
    engine: &mut Engine,
    secs: u64,
    every: Duration,
    what: &str,
    mut done: impl FnMut(&Update) -> Option<T>,
) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let u = engine.tick().await.expect("tick");
        if let Some(v) = done(&u) {
            return v;
        }
        if Instant::now() > end {
            let f: Vec<String> = u
                .snapshot
                .findings
                .iter()
                .map(|f| format!("{} {:?}", f.id, f.evidence))
                .collect();
            panic!(
                "{what}: not reached in {secs} s\ntree:\n{}\nfindings: {f:#?}",
                render(&u.snapshot.tree)
            );
        }
        tokio::time::sleep(every).await;
    }
}

/// The finding of `kind` about `pid`, if the update has one.
pub fn finding_of(u: &Update, kind: FindingKind, pid: u32) -> Option<Finding> {
    u.snapshot
        .findings
        .iter()
        .find(|f| f.kind == kind && f.pids.contains(&pid))
        .map(|f| (**f).clone())
}

/// The tree as indented text (for failure messages and eyeballing).
pub fn render<N: AsRef<TreeNode>>(nodes: &[N]) -> String {
    fn go(n: &TreeNode, depth: usize, out: &mut String) {
        let role = n.role.map(|r| format!(" [{r}]")).unwrap_or_default();
        let state = n
            .state
            .map(|s| format!(" {}", s.letter()))
            .unwrap_or_default();
        let status = n.status.map(|s| format!(" ({s})")).unwrap_or_default();
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
        go(n.as_ref(), 0, &mut out);
    }
    out
}

/// The snapshot one state step makes of a process table alone (no logs, no health).
pub fn snapshot_of(
    table: &debugtop_core::model::ProcessTable,
    redact: bool,
) -> debugtop_core::model::Snapshot {
    use debugtop_core::model::Observation;
    use debugtop_core::state::{State, StateConfig};
    let mut s = State::new(StateConfig {
        redact,
        ..StateConfig::default()
    });
    s.step(Observation {
        at: table.taken_at,
        host: String::new(),
        table: table.clone(),
        exits: Vec::new(),
        servers: Vec::new(),
        remote: Vec::new(),
        me: debugtop_core::sources::self_info(),
        sources: Vec::new(),
    })
    .snapshot
}
