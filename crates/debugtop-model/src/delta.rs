//! What the window is sent per tick: the whole snapshot once (and on a resync), then only what
//! changed since the update it was last sent. A window left open all day on a quiet machine
//! receives a few dozen bytes a tick, not the whole world and ten thousand timeline events.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::finding::{Finding, FindingGroup};
use super::logs::LogEvent;
use super::process::{Proc, ServerInfo};
use super::sessions::{DebugSession, HttpSession};
use super::snapshot::{Environment, LogExcerpt, Snapshot, SourceStatus};
use super::timeline::TimelineEvent;
use super::tree::TreeNode;

/// One message on the window's update channel.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum ViewMessage {
    /// Everything: the first message, after a resync the window asked for, and whenever the
    /// world shown is another one (another target, a restarted sampler).
    Full {
        /// Tick number.
        #[ts(type = "number")]
        seq: u64,
        /// The whole snapshot.
        snapshot: Snapshot,
        /// Log events read during this tick.
        events: Vec<LogEvent>,
    },
    /// What changed since update `base`, which this window was sent last.
    Changes(SnapshotChanges),
}

/// The parts of a snapshot that changed; an absent part is unchanged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SnapshotChanges {
    /// This tick.
    #[ts(type = "number")]
    pub seq: u64,
    /// The tick these changes apply to (a window that has another one asks for a resync).
    #[ts(type = "number")]
    pub base: u64,
    /// When this tick's sample was taken.
    pub taken_at: DateTime<Utc>,
    /// Log events read during this tick.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<LogEvent>>")]
    pub events: Vec<LogEvent>,
    /// Schema, host, debugtop version and redaction, when any of them changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub head: Option<SnapshotHead>,
    /// Servers (few; sent whole when any changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub servers: Option<Vec<ServerInfo>>,
    /// HTTP sessions (sent whole when any changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub http_sessions: Option<Vec<HttpSession>>,
    /// Debug sessions (sent whole when any changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub debug_sessions: Option<Vec<std::sync::Arc<DebugSession>>>,
    /// Processes, by identity (`ProcId`: `pid.start-ticks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub processes: Option<Keyed<std::sync::Arc<Proc>>>,
    /// The tree, as rows in depth-first order, by node id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub tree: Option<Keyed<TreeRow>>,
    /// Findings, by finding id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub findings: Option<Keyed<std::sync::Arc<Finding>>>,
    /// The finding groups (sent whole when any changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub groups: Option<Vec<FindingGroup>>,
    /// New timeline events (and how many old ones fell off the front).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub timeline: Option<TimelineChanges>,
    /// Log excerpts (sent whole when any changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub log_excerpts: Option<Vec<LogExcerpt>>,
    /// Each source's health (sent whole when any changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub sources: Option<Vec<SourceStatus>>,
    /// The environment, when it changed (`value: null`: none any more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub environment: Option<EnvironmentChange>,
}

/// The snapshot's scalar identity fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct SnapshotHead {
    /// `debugtop.snapshot/N`.
    pub schema: String,
    /// The machine.
    pub host: String,
    /// debugtop's version.
    pub debugtop: String,
    /// Whether secrets were redacted.
    pub redacted: bool,
}

/// A replaced environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct EnvironmentChange {
    /// The new value.
    pub value: Option<Environment>,
}

/// Changes to a list whose items have a key. Applied as: drop `remove`, replace or add each of
/// `upsert` (new keys go to the end), then, when `order` is given, put the items in that order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
#[ts(export)]
pub struct Keyed<T> {
    /// Items new or changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<T>>")]
    pub upsert: Vec<T>,
    /// Keys of items gone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[ts(optional, as = "Option<Vec<String>>")]
    pub remove: Vec<String>,
    /// Every key in order, when the order is not the one the rule above gives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional)]
    pub order: Option<Vec<String>>,
}

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Self {
            upsert: Vec::new(),
            remove: Vec::new(),
            order: None,
        }
    }
}

/// One node of the tree without its children, and where it hangs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct TreeRow {
    /// The parent node's id (`None`: a root).
    pub parent: Option<String>,
    /// The node (its `children` empty).
    pub node: TreeNode,
}

/// The timeline's change: `drop_front` of the oldest events fell off, `append` are new
/// (after `reset`, the whole timeline).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct TimelineChanges {
    /// Start from an empty timeline (the old one could not be continued).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[ts(optional, as = "Option<bool>")]
    pub reset: bool,
    /// How many of the oldest events to drop.
    #[serde(default)]
    pub drop_front: u32,
    /// New events, oldest first.
    pub append: Vec<Arc<TimelineEvent>>,
}

/// Something with a stable key inside its list.
pub trait Key {
    /// The key.
    fn key(&self) -> String;
}

impl<T: Key> Key for std::sync::Arc<T> {
    fn key(&self) -> String {
        (**self).key()
    }
}

impl Key for Proc {
    fn key(&self) -> String {
        self.id().to_string()
    }
}

impl Key for Finding {
    fn key(&self) -> String {
        self.id.to_string()
    }
}

impl Key for TreeRow {
    fn key(&self) -> String {
        self.node.id.clone()
    }
}
