//! Findings: a condition that holds, with its evidence and what would fix it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ids::FindingId;
use super::kill::KillPlan;

/// The stable finding kinds (the CLI's JSON and the GUI use the same strings).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::EnumIter,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum FindingKind {
    /// Owner alive and the same, session over, worker still alive past the grace.
    LeakedWorker,
    /// The worker's owner is dead or is not the same process any more.
    OrphanedWorker,
    /// An adapter whose parent is no longer a live worker.
    LeakedAdapter,
    /// A debuggee, launcher or watchdog whose adapter is gone (what survived of a finished
    /// debug session's chain).
    LeakedDebuggee,
    /// A stdio MCP server whose host is gone: nobody holds the other end of its stdin, so no
    /// request can ever reach it.
    OrphanedServer,
    /// Infrastructure process burning CPU over two samples.
    Spinning,
    /// Exited but not reaped.
    Zombie,
    /// Stopped by a signal.
    Stopped,
    /// The server lists a session whose worker is gone.
    SessionWithoutWorker,
    /// `/health` does not answer.
    ServerUnresponsive,
}

impl FindingKind {
    /// The stable string.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// How bad.
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
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Probably wrong.
    Warning,
    /// Leaking resources now.
    Critical,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Finding {
    /// Stable id: the kind and the identity it concerns, so a later `debugtop-cli kill <id>`
    /// finds the same finding.
    pub id: FindingId,
    /// What kind.
    pub kind: FindingKind,
    /// How bad.
    pub severity: Severity,
    /// The processes concerned.
    pub pids: Vec<u32>,
    /// The debug session concerned.
    pub session_id: Option<String>,
    /// The server concerned.
    pub server_pid: Option<u32>,
    /// Plain sentences with the facts and their sources.
    pub evidence: Vec<String>,
    /// Since when it holds (as far as the evidence shows).
    pub since: DateTime<Utc>,
    /// What to do, in words.
    pub suggested_action: String,
    /// The kill plan that would fix it, when killing is the fix.
    pub plan: Option<KillPlan>,
}
