//! What the server's logs say, as typed events (the parser lives in `sources::logs`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// What happened, according to a log line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum LogEventKind {
    /// `HTTP session initialized: <id>`.
    HttpSessionInitialized {
        /// HTTP session id.
        http_session: String,
    },
    /// `HTTP session closed: <id>`.
    HttpSessionClosed {
        /// HTTP session id.
        http_session: String,
    },
    /// `Reaping stale HTTP session <id> (idle 41s, no open streams).` — newer servers end the
    /// line with `; holding debug session(s) <id> (<lang>, <state>), …`.
    HttpSessionReaped {
        /// HTTP session id.
        http_session: String,
        /// Idle seconds, as logged.
        idle_secs: Option<u64>,
        /// The debug sessions it held, when the line says (newer servers).
        #[serde(default)]
        holding: Vec<String>,
    },
    /// `Reaping HTTP session <id>: its SSE stream closed Ns ago…` (newer servers).
    HttpSessionStreamLost {
        /// HTTP session id.
        http_session: String,
        /// Seconds since the stream closed, as logged.
        secs: Option<u64>,
        /// The debug sessions it held, when the line says.
        holding: Vec<String>,
    },
    /// `[startup-janitor] Reaped N orphan proxy worker(s) from prior runs` (0.24.2 says
    /// `[startup]`).
    StartupReaped {
        /// How many.
        count: u32,
        /// What (`orphan proxy worker(s)`, `orphan JVM(s)`).
        what: String,
    },
    /// The worker's own log says it is done: `[Worker] Shutdown sequence completed.` or
    /// `[Worker] Already shutting down or terminated.` (in `proxy-<session>.log`).
    WorkerFinished {
        /// The session (from the file name).
        session_id: Option<String>,
        /// The line's words.
        said: String,
    },
    /// `[SessionManager] Created new session: <name> (ID: <id>), state: created`, or `session:created`.
    DebugSessionCreated {
        /// Debug session id.
        session_id: String,
        /// Its name, when logged.
        name: Option<String>,
        /// Its language, when logged.
        language: Option<String>,
    },
    /// `[SM _updateSessionState <id>] State change: <from> -> <to>`.
    StateChanged {
        /// Debug session id.
        session_id: String,
        /// Old state.
        from: String,
        /// New state.
        to: String,
    },
    /// `Session <id> marked as STOPPED/TERMINATED.`
    SessionStopped {
        /// Debug session id.
        session_id: String,
    },
    /// `Closing debug session: <id>. Active proxy: yes|no`.
    DebugSessionClosing {
        /// Debug session id.
        session_id: String,
        /// Whether a proxy was active.
        active_proxy: bool,
    },
    /// `session:closed`.
    DebugSessionClosed {
        /// Debug session id.
        session_id: String,
    },
    /// `Closing all debug sessions (N active)`.
    ClosingAll {
        /// How many.
        active: u32,
    },
    /// `[ProxyManager] Proxy spawned with PID: <pid>` (session from the preceding
    /// `Spawning proxy for session <id>` line).
    ProxySpawned {
        /// The worker's pid.
        pid: u32,
        /// Its session, tied by line order.
        session_id: Option<String>,
    },
    /// `[ProxyManager] Stopping proxy for session <id>`.
    ProxyStopping {
        /// Debug session id.
        session_id: String,
    },
    /// `Timeout waiting for proxy exit. Force killing.` (session tied by line order).
    ProxyForceKilled {
        /// The session being stopped, by line order.
        session_id: Option<String>,
    },
    /// `Proxy exited. Code: <c>, Signal: <s>` (session tied by line order).
    ProxyExited {
        /// Exit code.
        code: Option<i32>,
        /// Signal name.
        signal: Option<String>,
        /// The session being stopped, by line order.
        session_id: Option<String>,
    },
    /// `[ProxyManager <id>] Exit: code=…, signal=…, expected=…`: a worker died under a session.
    WorkerExited {
        /// Debug session id.
        session_id: String,
        /// Exit code.
        code: Option<i32>,
        /// Signal name.
        signal: Option<String>,
        /// Whether the server expected it (`undefined` when it did not know).
        expected: Option<bool>,
    },
    /// `[SessionManager] Detailed error in startDebugging for session <id>: <why>` (or `Failed
    /// to attach to process for session <id>:`): the server gave up starting the session.
    StartFailed {
        /// Debug session id.
        session_id: String,
        /// The server's reason, first line, bounded.
        reason: String,
    },
    /// The startup janitor killed an orphan of an earlier run: `[proxy-reaper] Killed orphan
    /// proxy worker pid=<p> owner_pid=<o> session=<id>` (a tagged js-debug adapter is logged
    /// in the same words), or `[jvm-reaper] Killed orphan JVM pid=<p> owner_pid=<o> tag=<id>`.
    /// Written once the kill is done (after SIGTERM, up to 3 s, then SIGKILL), with pids of the
    /// server's own pid namespace.
    ReaperKilledOrphan {
        /// The process killed.
        pid: u32,
        /// Its dead owner.
        owner_pid: Option<u32>,
        /// Its session (`session=`, or the JVM's `tag=`).
        session_id: Option<String>,
        /// Which reaper said it.
        #[serde(default)]
        reaper: OrphanReaper,
    },
    /// `[startup-janitor] Removed N stale session run dir(s)`: `run-*` folders older than 7 days.
    JanitorSwept {
        /// How many folders.
        runs: u32,
    },
    /// The startup janitor reaped nothing this start: `[startup-janitor] Process scan failed:
    /// …`, `[startup-janitor] Orphan proxy reaper failed: …` (JVM alike), or `[startup-janitor]
    /// Orphan reapers skipped (MCP_SKIP_ORPHAN_REAPERS)`.
    JanitorFailed {
        /// The line's words after the tag, bounded.
        said: String,
    },
    /// A step of the session's start, in `proxy-<id>.log`.
    Stage {
        /// The session (from the file name).
        session_id: Option<String>,
        /// The step.
        stage: super::Stage,
    },
    /// `[AdapterManager] Spawned adapter process PID: <pid> (…)` in `proxy-<id>.log`.
    AdapterSpawned {
        /// The adapter's pid.
        pid: u32,
        /// The session (from the line's namespace or the file name).
        session_id: Option<String>,
    },
}

/// Which of the startup janitor's reapers logged a kill.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum OrphanReaper {
    /// `[proxy-reaper]`: a proxy worker, or a tagged js-debug adapter (the same words).
    #[default]
    Proxy,
    /// `[jvm-reaper]`: a debuggee JVM (`-Dmcp.debugger.owner_pid=`).
    Jvm,
}

/// Which log a line came from. The server's own logs record what the server decided; a worker's
/// `proxy-<session>.log` records what the worker did, and is never evidence of what the server
/// knows.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum LogOrigin {
    /// The server's per-pid CLI log (`debug-mcp-server-<pid>.log`) or its `--log-file`.
    Server,
    /// A worker's `proxy-<session>.log`.
    Proxy,
}

/// One event read from a log, with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct LogEvent {
    /// The line's timestamp (ISO string or epoch ms, both forms are logged).
    pub at: Option<DateTime<Utc>>,
    /// The file.
    pub file: String,
    /// Which kind of log it is.
    pub origin: LogOrigin,
    /// 1-based line number in the file (since the tail started at its beginning).
    #[ts(type = "number")]
    pub line: u64,
    /// What happened.
    pub kind: LogEventKind,
}

/// Counters of one tail.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[ts(export)]
pub struct TailStats {
    /// Complete lines read.
    #[ts(type = "number")]
    pub lines: u64,
    /// Lines that became events.
    #[ts(type = "number")]
    pub events: u64,
    /// Lines that carry nothing tracked, or are not JSON.
    #[ts(type = "number")]
    pub skipped: u64,
    /// Lines longer than [`MAX_LINE`], skipped.
    #[ts(type = "number")]
    pub oversized: u64,
    /// Times the file was truncated or replaced (rotation) and read again from the start.
    pub restarts: u32,
}
