//! Processes and servers as the process table shows them: roles, states, markers, and one
//! scan's table.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ids::ProcId;

/// What a process is, in the debug server's world.
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
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum Role {
    /// The debug server itself (`mcp-debugger`).
    Server,
    /// A proxy worker: one per debug session, child of the server.
    Worker,
    /// A debug adapter (js-debug, debugpy.adapter, the mock adapter, dlv, …).
    Adapter,
    /// A launcher between adapter and debuggee (debugpy's launcher).
    Launcher,
    /// The program being debugged, and its descendants.
    Debuggee,
    /// js-debug's watchdog, which lives in its own session.
    Watchdog,
    /// Related to a server (by marker or ancestry) but none of the above.
    Other,
}

impl Role {
    /// The stable string used in JSON, the CLI and the UI.
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// The scheduler state of a process, as the kernel reports it (`/proc/<pid>/stat` field 3).
/// Serialised as the kernel's letter so nothing is lost.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[ts(export)]
pub enum ProcState {
    /// R: running or runnable.
    #[serde(rename = "R")]
    Running,
    /// S: interruptible sleep.
    #[serde(rename = "S")]
    Sleeping,
    /// D: uninterruptible (disk) sleep.
    #[serde(rename = "D")]
    DiskSleep,
    /// Z: exited, not yet reaped by its parent. Not alive.
    #[serde(rename = "Z")]
    Zombie,
    /// T: stopped by a signal (SIGSTOP, SIGTSTP).
    #[serde(rename = "T")]
    Stopped,
    /// t: stopped by a tracer.
    #[serde(rename = "t")]
    TracingStop,
    /// X (or x): dead, being torn down.
    #[serde(rename = "X")]
    Dead,
    /// I: idle kernel thread.
    #[serde(rename = "I")]
    Idle,
    /// P: parked.
    #[serde(rename = "P")]
    Parked,
    /// K: wakekill.
    #[serde(rename = "K")]
    WakeKill,
    /// W: waking (or paging, on old kernels).
    #[serde(rename = "W")]
    Waking,
    /// Any letter this build does not know.
    #[serde(rename = "?")]
    Unknown,
}

impl ProcState {
    /// Maps the kernel's state letter.
    pub fn from_letter(c: char) -> Self {
        match c {
            'R' => Self::Running,
            'S' => Self::Sleeping,
            'D' => Self::DiskSleep,
            'Z' => Self::Zombie,
            'T' => Self::Stopped,
            't' => Self::TracingStop,
            'X' | 'x' => Self::Dead,
            'I' => Self::Idle,
            'P' => Self::Parked,
            'K' => Self::WakeKill,
            'W' => Self::Waking,
            _ => Self::Unknown,
        }
    }

    /// Whether the process still runs code: a zombie or a dead task does not,
    /// even though `kill(pid, 0)` succeeds on a zombie.
    pub fn is_alive(self) -> bool {
        !matches!(self, Self::Zombie | Self::Dead)
    }

    /// The kernel's letter.
    pub fn letter(self) -> char {
        match self {
            Self::Running => 'R',
            Self::Sleeping => 'S',
            Self::DiskSleep => 'D',
            Self::Zombie => 'Z',
            Self::Stopped => 'T',
            Self::TracingStop => 't',
            Self::Dead => 'X',
            Self::Idle => 'I',
            Self::Parked => 'P',
            Self::WakeKill => 'K',
            Self::Waking => 'W',
            Self::Unknown => '?',
        }
    }
}

/// The transport an mcp-debugger server was started with.
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
pub enum ServerMode {
    /// Streamable HTTP (`mcp-debugger http`): has `/health`.
    Http,
    /// Legacy SSE (`mcp-debugger sse`).
    Sse,
    /// stdio (`mcp-debugger stdio`, the default).
    Stdio,
}

/// The languages whose adapters debugtop recognises.
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
    strum::EnumString,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum Language {
    /// js-debug (`vsDebugServer`).
    Javascript,
    /// debugpy.
    Python,
    /// mcp-debugger's mock adapter.
    Mock,
    /// Delve (`dlv dap`).
    Go,
    /// CodeLLDB (rust, C, C++).
    Lldb,
    /// The JDI DAP server.
    Java,
    /// netcoredbg through mcp-debugger's bridge.
    Dotnet,
    /// rdbg.
    Ruby,
    /// A language this build does not know (read from a log or an older snapshot).
    #[serde(other)]
    #[strum(disabled)]
    Other,
}

impl Language {
    /// The language as mcp-debugger names it in its logs and tools (`"javascript"`, `"rust"`…).
    pub fn from_server_name(name: &str) -> Option<Self> {
        match name {
            "rust" | "cpp" | "c" | "lldb" => Some(Self::Lldb),
            "typescript" | "node" => Some(Self::Javascript),
            other => other.parse().ok(),
        }
    }
}

/// Environment variables that tie a process to a server or session. Only these are ever kept:
/// the rest of a process's environment is never stored.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[ts(export)]
pub struct EnvMarkers {
    /// `MCP_DEBUGGER_MAIN_PID`: the server every descendant was started under.
    pub main_pid: Option<u32>,
    /// `DEBUGPY_LOG_DIR`: holds the debug session id for debugpy processes.
    pub debugpy_log_dir: Option<String>,
    /// The `pid` inside `NODE_INSPECTOR_INFO` (js-debug's watchdog names its debuggee there).
    pub inspector_pid: Option<u32>,
    /// `NODE_OPTIONS` loads js-debug's `bootloader.js`: a js debuggee.
    pub js_bootloader: bool,
}

impl EnvMarkers {
    /// True when no marker is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl Proc {
    /// Its identity (pid + start ticks).
    pub fn id(&self) -> ProcId {
        ProcId::new(self.pid, self.start_ticks)
    }
}

/// One process that matters to debugtop, as seen by the collector at one instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Proc {
    /// Process id.
    pub pid: u32,
    /// Parent process id (1 or a subreaper once orphaned).
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Session id.
    pub sid: u32,
    /// Scheduler state.
    pub state: ProcState,
    /// When the process started (boot time + start ticks).
    pub start_time: DateTime<Utc>,
    /// Start time in clock ticks since boot: with `pid`, the process's identity.
    #[ts(type = "number")]
    pub start_ticks: u64,
    /// Real user id of the owner, when readable.
    pub uid: Option<u32>,
    /// What the process is.
    pub role: Role,
    /// Command line. Redacted wherever it leaves the core (snapshots, UI).
    pub argv: Vec<String>,
    /// Environment markers (never the whole environment).
    pub markers: EnvMarkers,
    /// CPU use since the previous sample, in percent of one core; `None` on the first sample.
    pub cpu_percent: Option<f32>,
    /// Resident set size.
    #[ts(type = "number")]
    pub rss_bytes: u64,
    /// The server this process belongs to (its own pid for a server).
    pub server_pid: Option<u32>,
    /// The debug session this process serves, when known.
    pub session_id: Option<String>,
    /// The debug adapter's language, for adapters and what runs under them.
    pub language: Option<Language>,
    /// For workers: the `--mcp-owner-pid` on their command line.
    pub owner_pid: Option<u32>,
    /// The parent this process had when debugtop last saw it inside a server's tree,
    /// if it has since been reparented.
    pub remembered_ppid: Option<u32>,
    /// For a process that just exited (a tomb, state `X`): when the exit was seen.
    #[serde(default)]
    pub exited_at: Option<DateTime<Utc>>,
}

/// What the process table says about one mcp-debugger server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct ServerInfo {
    /// The server's pid.
    pub pid: u32,
    /// When it started.
    pub start_time: DateTime<Utc>,
    /// Transport.
    pub mode: ServerMode,
    /// The port from argv (HTTP and SSE; default 3001).
    pub port: Option<u16>,
    /// `--log-file`, as given on the command line.
    pub log_file: Option<String>,
    /// The package directory (the folder that holds `dist/cli.mjs`), when it can be told.
    pub pkg_dir: Option<String>,
}

/// Counters of one scan, so a partial read is visible instead of silent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct ScanStats {
    /// Processes read.
    pub processes: u32,
    /// Identities seen for the first time (argv read).
    pub new_identities: u32,
    /// Identities from the previous scan that are gone.
    pub exited: u32,
    /// Processes that vanished while being read (normal; skipped).
    pub vanished: u32,
    /// Processes with something we may not read (another user's environ; skipped or partial).
    pub denied: u32,
    /// Wall time of the scan, in microseconds.
    #[ts(type = "number")]
    pub duration_us: u64,
}

/// The result of one scan: every process that belongs to a debug server, resolved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessTable {
    /// When the scan finished.
    pub taken_at: DateTime<Utc>,
    /// Server-related processes, sorted by (server, pid).
    pub procs: Vec<Proc>,
    /// The servers among them.
    pub servers: Vec<ServerInfo>,
    /// Counters.
    pub stats: ScanStats,
}

impl ProcessTable {
    /// The process with this pid, if it is server-related.
    pub fn get(&self, pid: u32) -> Option<&Proc> {
        self.procs.iter().find(|p| p.pid == pid)
    }
}
