//! HTTP (MCP transport) sessions and debug sessions, as far as the server's `/health` and logs
//! tell.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::facts::Fact;
use super::lifecycle::{HttpEnd, SessionState};
use super::process::Language;
use super::progress::SessionProgress;

/// An HTTP (MCP transport) session of a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct HttpSession {
    /// `Mcp-Session-Id`.
    pub id: String,
    /// The server holding it.
    pub server_pid: Option<u32>,
    /// Listed by the latest `/health`.
    pub in_health: bool,
    /// How it ended, once the log says so.
    pub ended: Option<HttpEnd>,
    /// Debug sessions it holds (newer `/health` `details` only).
    pub debug_sessions: Vec<String>,
    /// What is known, with sources.
    pub facts: Vec<Fact>,
}

/// A debug session, as far as it is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct DebugSession {
    /// The debug session id.
    pub id: String,
    /// The server that owns it.
    pub server_pid: Option<u32>,
    /// Its name (from the log).
    pub name: Option<String>,
    /// Its language (from the log or the adapter).
    pub language: Option<Language>,
    /// Last state the log gave.
    pub state: Option<SessionState>,
    /// The server's own logs created it (otherwise it is known only from processes, or from
    /// its worker's proxy log).
    pub in_log: bool,
    /// The server's own log says it was closed or stopped.
    pub ended: bool,
    /// When it ended, per the log.
    pub ended_at: Option<DateTime<Utc>>,
    /// The log line that ended it.
    pub ended_by: Option<Fact>,
    /// Its live worker, if any.
    pub worker_pid: Option<u32>,
    /// Its adapter, if known.
    pub adapter_pid: Option<u32>,
    /// The HTTP session holding it, when known.
    pub http_session: Option<String>,
    /// Its worker's own log says the worker is done (the line), when it did.
    #[serde(default)]
    pub worker_finished: Option<Fact>,
    /// When that line was written.
    #[serde(default)]
    pub worker_finished_at: Option<DateTime<Utc>>,
    /// What is known, with sources.
    pub facts: Vec<Fact>,
    /// How far its start got, its last sign of life, what it waits for.
    #[serde(default)]
    pub progress: SessionProgress,
}
