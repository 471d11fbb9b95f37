//! Snapshots: one reconciled view of the machine as a versioned document
//! (`"schema": "debugtop.snapshot/1"`), the body of `debugtop-cli snapshot`, the app's first view,
//! and what an incident report carries. Argv is redacted on the way in.

pub mod redact;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::collect::{ProcessTable, ScanStats};
use crate::model::{Language, Proc, Role, ServerInfo, SourceState, SourceStatus};

/// The schema tag of this build's snapshots.
pub const SCHEMA: &str = "debugtop.snapshot/1";

/// An HTTP (MCP transport) session of a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HttpSession {
    /// `Mcp-Session-Id`.
    pub id: String,
    /// The server holding it.
    pub server_pid: Option<u32>,
}

/// A debug session, as far as it is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct DebugSession {
    /// The debug session id (a UUID in mcp-debugger).
    pub id: String,
    /// The server that owns it.
    pub server_pid: Option<u32>,
    /// Its proxy worker, if one is alive.
    pub worker_pid: Option<u32>,
    /// Its adapter, if one is known.
    pub adapter_pid: Option<u32>,
    /// The adapter's language.
    pub language: Option<Language>,
}

/// A finding (filled by the verdict rules).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Finding {
    /// Stable id derived from the kind and the identities concerned.
    pub id: String,
    /// One of the stable kinds (`leaked-worker`, …).
    pub kind: String,
    /// `info`, `warning` or `critical`.
    pub severity: String,
    /// The processes concerned.
    pub pids: Vec<u32>,
    /// The session concerned.
    pub session_id: Option<String>,
    /// The server concerned.
    pub server_pid: Option<u32>,
    /// Plain sentences with the facts.
    pub evidence: Vec<String>,
    /// Since when it holds.
    pub since: DateTime<Utc>,
    /// What to do.
    pub suggested_action: Option<String>,
}

/// A node of the reconciled tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct TreeNode {
    /// Stable id within the tree.
    pub id: String,
    /// What the node stands for: `server`, `gone-server`, `http-session`, `debug-session`, `process`.
    pub kind: String,
    /// Short text to show.
    pub label: String,
    /// The process, for process and server nodes.
    pub pid: Option<u32>,
    /// Children.
    pub children: Vec<TreeNode>,
}

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
    /// A snapshot of a process table. Argv is redacted unless `redact` is false.
    pub fn from_table(table: &ProcessTable, redact: bool) -> Self {
        let mut processes = table.procs.clone();
        if redact {
            for p in &mut processes {
                p.argv = redact::redact_argv(&p.argv);
            }
        }
        Self {
            schema: SCHEMA.to_owned(),
            taken_at: table.taken_at,
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default(),
            debugtop: env!("CARGO_PKG_VERSION").to_owned(),
            servers: table.servers.clone(),
            http_sessions: Vec::new(),
            debug_sessions: debug_sessions(&table.procs),
            processes,
            tree: Vec::new(),
            findings: Vec::new(),
            timeline: Vec::new(),
            log_excerpts: Vec::new(),
            sources: vec![process_table_status(&table.stats)],
        }
    }
}

/// Debug sessions as the process table shows them: one per worker or adapter session id.
fn debug_sessions(procs: &[Proc]) -> Vec<DebugSession> {
    let mut out: Vec<DebugSession> = Vec::new();
    for p in procs {
        let Some(id) = &p.session_id else { continue };
        let idx = match out.iter().position(|s| &s.id == id) {
            Some(i) => i,
            None => {
                out.push(DebugSession {
                    id: id.clone(),
                    server_pid: p.server_pid,
                    worker_pid: None,
                    adapter_pid: None,
                    language: None,
                });
                out.len() - 1
            }
        };
        let s = &mut out[idx];
        match p.role {
            Role::Worker if p.state.is_alive() => s.worker_pid = Some(p.pid),
            Role::Adapter => {
                s.adapter_pid = Some(p.pid);
                s.language = p.language;
            }
            _ => {}
        }
    }
    out
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
