//! What a person asks to kill — a pid, a finding, several findings, every finding of a kind —
//! and the plan the backend holds for them until it is carried out: the requests the CLI, the
//! app's window and a far side exchange.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::finding::{FindingId, FindingKind};
use super::kill::KillPlan;

/// What to kill.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, TS)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum KillRequest {
    /// A process (and, with `tree`, its descendants).
    Pid {
        /// The pid.
        pid: u32,
        /// Include descendants.
        tree: bool,
    },
    /// What a finding names (always with what it started).
    Finding {
        /// The finding id.
        id: FindingId,
    },
    /// What several findings name, in one plan (a group's bulk kill, or several ids given).
    Findings {
        /// The finding ids; each must be current and fixed by killing.
        ids: Vec<FindingId>,
    },
    /// Every current finding of one kind that killing fixes (of one server, when given).
    Kind {
        /// The kind.
        kind: FindingKind,
        /// Only findings about this server (the gone owner, for orphaned workers).
        server: Option<u32>,
    },
}

/// A plan held by the backend, to be executed once by id: the webview (or any caller) names a
/// plan, it never supplies one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct HeldPlan {
    /// The id to execute it by.
    #[ts(type = "number")]
    pub id: u64,
    /// What it will do.
    pub plan: KillPlan,
}
