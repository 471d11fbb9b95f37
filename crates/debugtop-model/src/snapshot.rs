//! The snapshot document: one reconciled view of a machine (`"schema": "debugtop.snapshot/1"`),
//! what `debugtop-cli snapshot` prints, the app exports and reopens, and an incident report
//! carries.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::finding::{Finding, FindingGroup};
use super::process::{Proc, ServerInfo};
use super::sessions::{DebugSession, HttpSession};
use super::timeline::TimelineEvent;
use super::tree::TreeNode;

/// Which source of facts.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
    strum::EnumIter,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum SourceKind {
    /// `/proc`.
    ProcessTable,
    /// Exit notifications (pidfds).
    Exits,
    /// A server's `/health`.
    Health,
    /// A server's logs.
    Logs,
    /// The sampler loop itself (a tick that failed).
    Sampler,
}

/// How a source of facts is doing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct SourceStatus {
    /// Which source.
    pub source: SourceKind,
    /// The server it concerns, if any.
    pub server_pid: Option<u32>,
    /// `ok`, `degraded` or `failed`.
    pub state: SourceState,
    /// In words: counts on success, the error when failing.
    pub detail: String,
}

impl SourceStatus {
    /// A status line.
    pub fn new(
        source: SourceKind,
        server_pid: Option<u32>,
        state: SourceState,
        detail: String,
    ) -> Self {
        Self {
            source,
            server_pid,
            state,
            detail,
        }
    }
}

/// The health of a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum SourceState {
    /// Working.
    Ok,
    /// Working with losses (e.g. some processes could not be read).
    Degraded,
    /// Not working; see the detail.
    Failed,
}

/// The schema tag of this build's snapshots.
pub const SCHEMA: &str = "debugtop.snapshot/1";
/// The major version this build reads and writes.
pub const SCHEMA_MAJOR: u32 = 1;
/// Lines of context kept on each side of a cited log line.
pub const EXCERPT_CONTEXT: u64 = 3;
/// The most excerpts one snapshot carries.
pub const MAX_EXCERPTS: usize = 32;

/// Lines of a log around a finding's evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct LogExcerpt {
    /// The finding it supports.
    pub finding_id: Option<super::finding::FindingId>,
    /// The file.
    pub file: String,
    /// Number of the first line.
    #[ts(type = "number")]
    pub first_line: u64,
    /// The cited line's number.
    #[ts(type = "number")]
    pub cited_line: u64,
    /// The lines (each cut at 500 characters; redacted unless turned off).
    pub lines: Vec<String>,
}

/// Versions and the machine, for a bug report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Environment {
    /// debugtop's version.
    pub debugtop: String,
    /// Each server's package version (from its `package.json`), by pid.
    pub servers: Vec<ServerVersion>,
    /// The node version running the first server, read from files (never by running it).
    pub node: Option<String>,
    /// Kernel release.
    pub kernel: Option<String>,
    /// Operating system.
    pub os: String,
}

/// A server's package and version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct ServerVersion {
    /// The server pid.
    pub pid: u32,
    /// Package name.
    pub package: Option<String>,
    /// Package version.
    pub version: Option<String>,
}

/// The snapshot document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Snapshot {
    /// `debugtop.snapshot/<major>`.
    pub schema: String,
    /// When it was taken.
    pub taken_at: DateTime<Utc>,
    /// Host name.
    pub host: String,
    /// debugtop's version.
    pub debugtop: String,
    /// Whether secrets were redacted.
    #[serde(default = "yes")]
    pub redacted: bool,
    /// Servers found.
    pub servers: Vec<ServerInfo>,
    /// HTTP sessions (from /health and logs).
    pub http_sessions: Vec<HttpSession>,
    /// Debug sessions.
    pub debug_sessions: Vec<Arc<DebugSession>>,
    /// Every server-related process (and tombs of those that just exited).
    pub processes: Vec<Arc<Proc>>,
    /// The reconciled tree.
    pub tree: Vec<Arc<TreeNode>>,
    /// Findings.
    pub findings: Vec<Arc<Finding>>,
    /// Conditions that hold now but have not held for their grace yet — only in a one-shot
    /// snapshot, which waits for none: what an audit would confirm, not yet confirmed (a
    /// normal teardown can look the same for a second).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unconfirmed: Vec<Arc<Finding>>,
    /// The findings by kind and cause (one line and one bulk plan each).
    #[serde(default)]
    pub groups: Vec<FindingGroup>,
    /// Timeline (the last minutes).
    pub timeline: Vec<Arc<TimelineEvent>>,
    /// Log lines around each finding's evidence (filled on export).
    pub log_excerpts: Vec<LogExcerpt>,
    /// Each source's health.
    pub sources: Vec<SourceStatus>,
    /// Versions and machine (filled on export).
    #[serde(default)]
    pub environment: Option<Environment>,
}

fn yes() -> bool {
    true
}

/// Export format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, TS)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum ExportFormat {
    /// The `debugtop.snapshot/1` document.
    Json,
    /// A Markdown incident report, ready for a GitHub issue.
    Md,
}
