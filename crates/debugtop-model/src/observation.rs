//! One tick's observation: everything the sources read, as data. It is the only input of the
//! state step, so a recorded observation replays exactly (tests and bug reports use that).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::health::{Health, HealthError};
use super::ids::ProcId;
use super::logs::{LogEvent, TailStats};
use super::process::{Proc, ProcessTable};
use super::snapshot::SourceStatus;

/// Everything read in one tick. `P` holds the table's processes (`()` once taken out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation<P = Vec<Proc>> {
    /// When it was taken (the scan's end).
    pub at: DateTime<Utc>,
    /// The machine's host name.
    pub host: String,
    /// The server-related processes, as the scan resolved them.
    pub table: ProcessTable<P>,
    /// Exits of watched processes since the last observation, timed when they happened.
    pub exits: Vec<Exit>,
    /// What each live local server's sources said.
    pub servers: Vec<ServerObservation>,
    /// Servers given by URL: `/health` only.
    pub remote: Vec<RemoteObservation>,
    /// The observing process (kill plans never include it or its ancestors).
    pub me: SelfInfo,
    /// Sources that are not per server (the exit watcher, say), when degraded.
    pub sources: Vec<SourceStatus>,
}

impl<P> Observation<P> {
    /// Its processes, and the rest of what was seen: the state step takes the processes first
    /// and hands on the rest, which has none to read.
    pub fn take_procs(self) -> (P, Observation<()>) {
        let (procs, table) = self.table.take_procs();
        let rest = Observation {
            at: self.at,
            host: self.host,
            table,
            exits: self.exits,
            servers: self.servers,
            remote: self.remote,
            me: self.me,
            sources: self.sources,
        };
        (procs, rest)
    }
}

/// A watched process's exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exit {
    /// Who.
    pub id: ProcId,
    /// When the exit was seen.
    pub at: DateTime<Utc>,
}

/// What one server's sources said this tick.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerObservation {
    /// The server's pid.
    pub pid: u32,
    /// Where it listens.
    pub endpoints: Endpoints,
    /// `/health`, for HTTP servers with a known port.
    pub health: Option<HealthCheck>,
    /// Log events read this tick (the server's own logs and its sessions' proxy logs).
    pub log_events: Vec<LogEvent>,
    /// How reading its logs went.
    pub logs: LogsRead,
    /// What each followed session's worker log and DAP trace say now.
    #[serde(default)]
    pub sessions: Vec<SessionLogs>,
}

/// One session's newest worker-log line and its DAP trace, as of this tick.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionLogs {
    /// The debug session.
    pub session_id: String,
    /// The newest line of its `proxy-<id>.log`.
    pub last_line: Option<super::SignOfLife>,
    /// Its DAP trace.
    pub trace: Option<super::TraceState>,
}

/// Where a server listens.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoints {
    /// TCP ports it listens on (sorted), from its socket inodes.
    pub listening: Vec<u16>,
    /// The base URL for `/health`, when the server speaks HTTP and its port is known.
    pub base_url: Option<String>,
    /// Whether the argv port was confirmed by a listening socket.
    pub port_confirmed: bool,
    /// Why `/health` is not asked though the server speaks HTTP (it listens in another network
    /// namespace than debugtop's: its loopback is not debugtop's, and asking debugtop's own
    /// would reach another process or nothing — an unanswered `/health` there is no verdict).
    #[serde(default)]
    pub not_asked: Option<String>,
    /// The port the server's own `/health` said it bound (`listening.port`, newer servers),
    /// when one of its listening sockets has it: `/health` is then asked there, and no port
    /// is guessed (a server started with `-p 0` names none in its argv).
    #[serde(default)]
    pub said_port: Option<u16>,
}

/// One `/health` answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HealthCheck {
    /// The base URL asked.
    pub url: String,
    /// What it said.
    pub result: Result<Health, HealthError>,
}

/// How reading a server's logs went, cumulatively.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LogsRead {
    /// Files tailed.
    pub files: u32,
    /// Counters summed over every file.
    pub stats: TailStats,
    /// Lines read so far from the server's *own* logs (not proxy logs): 0 means nothing the
    /// server wrote was ever read, so its silence about a session proves nothing.
    pub server_lines: u64,
    /// Errors of this tick, in words.
    pub errors: Vec<String>,
    /// Proxy logs found but not followed, past the caps (the oldest runs of a session, the
    /// least recent sessions of a server): a session's folder is written by the server's user,
    /// and a hundred thousand `run-*` folders must not cost every tick.
    #[serde(default)]
    pub not_followed: u32,
    /// Files not read this tick because the same file was read under another name (a hard
    /// link, a sibling, another server's log): each file is read once a tick.
    #[serde(default)]
    pub same_file: u32,
    /// Files that wait for the next tick: their user's logs already cost this tick's budget
    /// (`sources::log_budget::PER_USER_BYTES`).
    #[serde(default)]
    pub held: u32,
}

/// The most runs (`run-<ms>` folders) of one session whose logs are followed, newest first: a
/// session restarted many times has one live run, and the rest is history.
pub const MAX_RUNS_PER_SESSION: usize = 8;

/// The most proxy logs (with their DAP traces, twice as many files) followed for one server:
/// the sessions with live processes first, then those its log has open.
pub const MAX_PROXY_LOGS: usize = 1024;

/// The most bytes of one user's logs read in one tick (the rest waits for the next): any user
/// can make logs, and hard links make one file many.
pub const LOG_BYTES_PER_USER: u64 = 4 * 1024 * 1024;

/// A server given by URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteObservation {
    /// The base URL.
    pub url: String,
    /// What `/health` said.
    pub health: Result<Health, HealthError>,
}

/// The observing process and its ancestors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelfInfo {
    /// Its pid.
    pub pid: u32,
    /// Its real uid, when known (a non-root debugtop never plans another user's processes).
    pub uid: Option<u32>,
    /// Its ancestors up to init.
    pub ancestors: Vec<u32>,
}

/// The processes a kill may be planned against: live ones only (never tombs of processes that
/// just exited, whose pid may already belong to someone else), and who is asking.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveTable {
    /// Live, server-related processes (shared with the step's snapshot).
    pub procs: Vec<std::sync::Arc<Proc>>,
    /// The process that will execute the plan.
    pub me: SelfInfo,
}

impl LiveTable {
    /// The live processes of a table.
    pub fn new(procs: &[Proc], me: SelfInfo) -> Self {
        Self {
            procs: procs
                .iter()
                .filter(|p| {
                    p.exited_at.is_none() && p.sample.state != super::process::ProcState::Dead
                })
                .map(|p| std::sync::Arc::new(p.clone()))
                .collect(),
            me,
        }
    }

    /// The live processes of a table, taking it.
    pub fn from_procs(mut procs: Vec<std::sync::Arc<Proc>>, me: SelfInfo) -> Self {
        procs
            .retain(|p| p.exited_at.is_none() && p.sample.state != super::process::ProcState::Dead);
        Self { procs, me }
    }

    /// The process with this pid.
    pub fn get(&self, pid: u32) -> Option<&Proc> {
        self.procs.iter().find(|p| p.pid == pid).map(|p| &**p)
    }
}
