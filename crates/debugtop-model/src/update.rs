//! What the engine publishes: one update per tick, and the audit's answer.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::finding::{group_findings, Finding, FindingGroup};
use super::logs::LogEvent;
use super::process::ServerInfo;
use super::snapshot::{Snapshot, SourceStatus};
use super::target::{Hello, Target};

/// One published result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Update {
    /// Tick number, from 1.
    #[ts(type = "number")]
    pub seq: u64,
    /// The reconciled snapshot.
    pub snapshot: Snapshot,
    /// Log events read during this tick.
    pub events: Vec<LogEvent>,
}

/// The liveness audit's answer: what `debugtop-cli audit --json` prints and the app's audit
/// pane shows, from the same function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct AuditResult {
    /// No finding.
    pub clean: bool,
    /// When the last sample was taken.
    pub taken_at: DateTime<Utc>,
    /// The machine.
    pub host: String,
    /// Servers audited.
    pub servers: Vec<ServerInfo>,
    /// Debug sessions known.
    pub debug_sessions: u32,
    /// Server-related processes looked at.
    pub processes: u32,
    /// What it found (empty: all healthy), worst first.
    pub findings: Vec<std::sync::Arc<Finding>>,
    /// The findings by kind and cause, each with one bulk plan.
    #[serde(default)]
    pub groups: Vec<FindingGroup>,
    /// Each source's health (a degraded source is said, not hidden).
    pub sources: Vec<SourceStatus>,
}

impl AuditResult {
    /// The process exit code of an audit that ran: 0 clean, 1 findings.
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.clean)
    }
}

/// Builds the audit's answer from the last snapshot of an audit run.
pub fn audit_result(s: &Snapshot) -> AuditResult {
    AuditResult {
        clean: s.findings.is_empty(),
        taken_at: s.taken_at,
        host: s.host.clone(),
        servers: s.servers.clone(),
        debug_sessions: u32::try_from(s.debug_sessions.len()).unwrap_or(u32::MAX),
        processes: u32::try_from(s.processes.len()).unwrap_or(u32::MAX),
        findings: s.findings.clone(),
        groups: group_findings(&s.findings),
        sources: s.sources.clone(),
    }
}

/// One target's part of a fleet audit: its answer, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TargetAudit {
    /// Where.
    pub target: Target,
    /// Who answered (remote targets).
    pub hello: Option<Hello>,
    /// The audit, when it ran.
    pub result: Option<AuditResult>,
    /// Why it could not audit (exit 2 for the fleet).
    pub error: Option<String>,
}

/// `debugtop-cli audit --target …`: every target's audit, and the worst status of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct FleetAudit {
    /// Each target, in the order given.
    pub targets: Vec<TargetAudit>,
}

impl FleetAudit {
    /// The worst status: 2 when a target could not be audited, 1 with findings, 0 clean.
    pub fn exit_code(&self) -> u8 {
        self.targets
            .iter()
            .map(|t| match &t.result {
                None => 2,
                Some(r) => r.exit_code(),
            })
            .max()
            .unwrap_or(0)
    }
}

/// The schema tag of a fleet incident file.
pub const FLEET_SCHEMA: &str = "debugtop.fleet/1";

/// One target's part of a fleet incident file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TargetSnapshot {
    /// Where.
    pub target: Target,
    /// Who answered.
    pub hello: Option<Hello>,
    /// Its snapshot (redacted on the far side unless asked otherwise).
    pub snapshot: Option<Snapshot>,
    /// Why there is none.
    pub error: Option<String>,
}

/// A fleet incident file (`"schema": "debugtop.fleet/1"`): every target's tree at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Fleet {
    /// `debugtop.fleet/1`.
    pub schema: String,
    /// When it was taken.
    pub taken_at: DateTime<Utc>,
    /// Each target.
    pub targets: Vec<TargetSnapshot>,
}
