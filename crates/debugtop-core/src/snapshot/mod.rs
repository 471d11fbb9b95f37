//! Snapshots: one reconciled view of the machine as a versioned document
//! (`"schema": "debugtop.snapshot/1"`), the body of `debugtop-cli snapshot`, the app's first view,
//! and what an incident report carries. Argv is redacted on the way in.

pub mod redact;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::collect::{ProcessTable, ScanStats};
use crate::model::{Proc, ServerInfo, SourceState, SourceStatus};
use crate::reconcile::World;
pub use crate::reconcile::{DebugSession, Fact, FactSource, HttpSession, NodeKind, TreeNode};
pub use crate::verdict::Finding;

/// The schema tag of this build's snapshots.
pub const SCHEMA: &str = "debugtop.snapshot/1";

/// One timeline event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct TimelineEvent {
    /// When.
    pub at: DateTime<Utc>,
    /// What kind of event.
    pub kind: String,
    /// In words.
    pub text: String,
}

/// Lines of a log around a finding's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct LogExcerpt {
    /// The file.
    pub file: String,
    /// First line number.
    pub first_line: u32,
    /// The lines.
    pub lines: Vec<String>,
}

/// The snapshot document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Snapshot {
    /// Always [`SCHEMA`] for this build.
    pub schema: String,
    /// When it was taken.
    pub taken_at: DateTime<Utc>,
    /// Host name.
    pub host: String,
    /// debugtop's version.
    pub debugtop: String,
    /// Servers found.
    pub servers: Vec<ServerInfo>,
    /// HTTP sessions (from /health and logs).
    pub http_sessions: Vec<HttpSession>,
    /// Debug sessions.
    pub debug_sessions: Vec<DebugSession>,
    /// Every server-related process, argv redacted.
    pub processes: Vec<Proc>,
    /// The reconciled tree.
    pub tree: Vec<TreeNode>,
    /// Findings.
    pub findings: Vec<Finding>,
    /// Timeline.
    pub timeline: Vec<TimelineEvent>,
    /// Log excerpts.
    pub log_excerpts: Vec<LogExcerpt>,
    /// Each source's health.
    pub sources: Vec<SourceStatus>,
}

impl Snapshot {
    /// A snapshot of a process table alone (no logs, no health). Argv redacted unless `redact`
    /// is false.
    pub fn from_table(table: &ProcessTable, redact: bool) -> Self {
        let world = crate::reconcile::Reconciler::default().build_offline(table);
        Self::from_world(&world, Vec::new(), redact)
    }

    /// A snapshot of a reconciled world.
    pub fn from_world(world: &World, findings: Vec<Finding>, redact: bool) -> Self {
        let mut processes = world.table.procs.clone();
        let mut tree = world.tree.clone();
        if redact {
            for p in &mut processes {
                p.argv = redact::redact_argv(&p.argv);
            }
            redact_tree(&mut tree);
        }
        let mut sources = vec![process_table_status(&world.table.stats)];
        sources.extend(world.sources.iter().cloned());
        Self {
            schema: SCHEMA.to_owned(),
            taken_at: world.table.taken_at,
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default(),
            debugtop: env!("CARGO_PKG_VERSION").to_owned(),
            servers: world.table.servers.clone(),
            http_sessions: world.http_sessions.clone(),
            debug_sessions: world.debug_sessions.clone(),
            processes,
            tree,
            findings,
            timeline: Vec::new(),
            log_excerpts: Vec::new(),
            sources,
        }
    }
}

fn redact_tree(nodes: &mut [TreeNode]) {
    for n in nodes {
        if n.kind == NodeKind::Process {
            n.label =
                redact::redact_argv(&n.label.split(' ').map(str::to_owned).collect::<Vec<_>>())
                    .join(" ");
        }
        redact_tree(&mut n.children);
    }
}

fn process_table_status(stats: &ScanStats) -> SourceStatus {
    let degraded = stats.denied > 0;
    SourceStatus {
        source: "process-table".to_owned(),
        server_pid: None,
        state: if degraded {
            SourceState::Degraded
        } else {
            SourceState::Ok
        },
        detail: format!(
            "{} processes read in {} ms; {} vanished mid-read, {} not readable (other users)",
            stats.processes,
            stats.duration_us / 1000,
            stats.vanished,
            stats.denied
        ),
    }
}
