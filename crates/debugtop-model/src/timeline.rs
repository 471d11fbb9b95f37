//! Timeline events: what changed, and when.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::facts::FactSource;
use super::finding::FindingId;

/// What kind of event.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum TimelineKind {
    /// A server-related process appeared.
    ProcessAppeared,
    /// It exited (or became a zombie).
    ProcessExited,
    /// Its scheduler state changed (R/S/T/Z…).
    StateChanged,
    /// A debug session appeared.
    SessionAppeared,
    /// A debug session ended (log) or vanished.
    SessionEnded,
    /// A finding was raised.
    FindingRaised,
    /// A finding cleared.
    FindingCleared,
    /// A line of the server's log.
    Log,
    /// A step of a debug session's start (its worker's log).
    Stage,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TimelineEvent {
    /// When.
    pub at: DateTime<Utc>,
    /// What kind.
    pub kind: TimelineKind,
    /// In words.
    pub text: String,
    /// The process, if any.
    pub pid: Option<u32>,
    /// The debug session, if any.
    pub session_id: Option<String>,
    /// The server, if any.
    pub server_pid: Option<u32>,
    /// The finding, for finding events.
    pub finding_id: Option<FindingId>,
    /// Where it was read, for log events.
    pub source: Option<FactSource>,
}

impl TimelineEvent {
    /// An event with nothing attached.
    pub fn new(at: DateTime<Utc>, kind: TimelineKind, text: String) -> Self {
        Self {
            at,
            kind,
            text,
            pid: None,
            session_id: None,
            server_pid: None,
            finding_id: None,
            source: None,
        }
    }
}
