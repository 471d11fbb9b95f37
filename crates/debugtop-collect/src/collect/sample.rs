//! One process at one instant (the cheap fields read every scan, with its cached identity),
//! and what relate last concluded about an identity.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use debugtop_model::{Adopted, EnvMarkers, FdKind, HostRef, Language, ProcState, Role, Stdio};

use super::identity::Ident;

/// One process at one instant: the cheap fields read every scan, plus its cached identity.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Process id.
    pub pid: u32,
    /// Parent pid.
    pub ppid: u32,
    /// Process group.
    pub pgid: u32,
    /// Session.
    pub sid: u32,
    /// Scheduler state.
    pub state: ProcState,
    /// Start time in clock ticks since boot (identity with `pid`).
    pub start_ticks: u64,
    /// Absolute start time.
    pub start_time: DateTime<Utc>,
    /// CPU use since this identity's previous sample, percent of one core.
    pub cpu_percent: Option<f32>,
    /// Resident set size in bytes.
    pub rss_bytes: u64,
    /// The identity's cached facts.
    pub ident: Arc<Ident>,
    /// Its environment markers, with pids translated to this namespace's (see `ns`).
    pub markers: EnvMarkers,
    /// A worker's `--mcp-owner-pid`, or a tagged adapter's or debuggee's owner, translated;
    /// `None` when it names no process of its namespace.
    pub owner_pid: Option<u32>,
    /// Its stdin and stdout (the identity's, or read this scan for a host's child).
    pub stdio: Option<Stdio>,
    /// The channel it talks to its host on (stdin, or where it moved it), for MCP candidates.
    pub channel: Option<FdKind>,
    /// Its parent holds the other end of that channel (the parent talks to it: a host).
    pub parent_writes_stdin: bool,
    /// Whoever started it is gone (its parent is init, a subreaper, or an adopter).
    pub adopted: Option<Adopted>,
    /// For an adopted process: the stdio channel nobody holds the other end of (no process
    /// can write to its stdin, or read its stdout). The root of a leaked stdio chain.
    pub dead_end: Option<FdKind>,
}

/// Where an identity belongs, as [`relate`] last concluded — its role, server, session,
/// language, parent and host — kept so that an orphan reparented to PID 1 (or a zombie whose
/// argv is gone) stays under its real owner.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Belonging {
    /// Role last resolved.
    pub role: Option<Role>,
    /// Server last resolved.
    pub server_pid: Option<u32>,
    /// Session last resolved.
    pub session_id: Option<String>,
    /// Language last resolved.
    pub language: Option<Language>,
    /// The parent it had while inside a server's tree.
    pub ppid: Option<u32>,
    /// The MCP host it ran under.
    pub host: Option<HostRef>,
}
