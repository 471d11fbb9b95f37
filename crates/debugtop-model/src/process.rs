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
    strum::EnumIter,
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
    /// An MCP host: a process that spawned stdio MCP servers (opencode, Claude Code, an IDE,
    /// MCP Inspector, or anything else).
    Host,
    /// A launcher between a host and its stdio server (`npm exec`/`npx`, `uvx`, `pipx run`,
    /// `sh -c`, `cmd /c`): it shares the server's stdio and lives as long as it does.
    Wrapper,
    /// Related to a server (by marker or ancestry) but none of the above.
    Other,
}

/// The launcher a command line is, when it is one that starts another program and stays as
/// its parent: `npm exec`/`npx`, `uvx`, `uv tool run`, `pipx run`, `sh -c`, `cmd /c`. npm
/// names its process `npm exec …` (one argument with spaces inside, then empty ones).
pub fn wrapper_name(argv: &[String]) -> Option<&'static str> {
    let words: Vec<&str> = argv
        .iter()
        .take(8)
        .flat_map(|a| a.split(' '))
        .filter(|w| !w.is_empty())
        .take(8)
        .collect();
    let base = |a: &str| -> String {
        let b = a
            .rsplit(['/', '\\'])
            .next()
            .unwrap_or(a)
            .to_ascii_lowercase();
        [".exe", ".cmd"]
            .iter()
            .find_map(|x| b.strip_suffix(x).map(str::to_owned))
            .unwrap_or(b)
    };
    let first = base(words.first()?);
    // `node /usr/bin/npx …`: the runtime's script names it.
    let (prog, rest) = match (first.as_str(), words.get(1)) {
        ("node" | "nodejs", Some(script)) => (base(script), words.get(2..).unwrap_or(&[])),
        _ => (first, words.get(1..).unwrap_or(&[])),
    };
    let next = rest.first().copied().unwrap_or("");
    match prog.as_str() {
        "npx" | "npx-cli.js" => Some("npx"),
        "npm" | "npm-cli.js" if next == "exec" || next == "x" => Some("npx"),
        "uvx" => Some("uvx"),
        "uv" if next == "tool" || next == "run" => Some("uv run"),
        "pipx" if next == "run" => Some("pipx run"),
        "sh" | "bash" | "dash" | "zsh" if rest.iter().any(|a| *a == "-c" || *a == "-lc") => {
            Some("a shell (sh -c)")
        }
        "cmd" if rest.iter().any(|a| a.eq_ignore_ascii_case("/c")) => Some("cmd /c"),
        _ => None,
    }
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

    /// In words, as the window and the report say it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Sleeping => "sleeping",
            Self::DiskSleep => "disk wait",
            Self::Zombie => "zombie",
            Self::Stopped => "stopped",
            Self::TracingStop => "traced",
            Self::Dead => "exited",
            Self::Idle => "idle",
            Self::Parked => "parked",
            Self::WakeKill => "wakekill",
            Self::Waking => "waking",
            Self::Unknown => "unknown",
        }
    }

    /// Every state (for the window's words).
    pub const ALL: [Self; 12] = [
        Self::Running,
        Self::Sleeping,
        Self::DiskSleep,
        Self::Zombie,
        Self::Stopped,
        Self::TracingStop,
        Self::Dead,
        Self::Idle,
        Self::Parked,
        Self::WakeKill,
        Self::Waking,
        Self::Unknown,
    ];

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
    #[strum(to_string = "other")]
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
    /// `VSCODE_INSPECTOR_OPTIONS` is set: js-debug's inspector options, inherited by what its
    /// debuggee starts.
    #[serde(default)]
    pub js_inspector: bool,
    /// An MCP host's own marker (`OPENCODE=1`, `OPENCODE_PID`, `CLAUDECODE=1`,
    /// `CLAUDE_CODE_ENTRYPOINT`): a label, never a condition for a verdict.
    #[serde(default)]
    pub host: Option<HostKind>,
}

/// What an MCP host is, where a marker or its argv says so (labels only).
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
pub enum HostKind {
    /// opencode.
    Opencode,
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex CLI.
    Codex,
    /// Cursor.
    Cursor,
    /// VS Code.
    VsCode,
    /// MCP Inspector's proxy.
    McpInspector,
    /// A process that spawned stdio MCP servers and says nothing about itself.
    Unlabelled,
}

impl HostKind {
    /// Every kind (for the window's words).
    pub const ALL: [Self; 7] = [
        Self::Opencode,
        Self::ClaudeCode,
        Self::Codex,
        Self::Cursor,
        Self::VsCode,
        Self::McpInspector,
        Self::Unlabelled,
    ];

    /// How a person names it ("opencode host 500", "MCP host 500" when nothing says what).
    pub fn title(self) -> &'static str {
        match self {
            Self::Opencode => "opencode",
            Self::ClaudeCode => "Claude Code",
            Self::Codex => "Codex",
            Self::Cursor => "Cursor",
            Self::VsCode => "VS Code",
            Self::McpInspector => "MCP Inspector",
            Self::Unlabelled => "MCP",
        }
    }
}

/// What a standard stream is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum FdKind {
    /// A pipe (`pipe:[inode]`).
    Pipe {
        /// The pipe's inode: the same on both ends.
        #[ts(type = "number")]
        inode: u64,
    },
    /// A socket (Node starts its children's stdio "pipes" as Unix socket pairs).
    Socket {
        /// The socket's inode (each end of a pair has its own).
        #[ts(type = "number")]
        inode: u64,
    },
    /// A terminal.
    Tty,
    /// `/dev/null`.
    Null,
    /// A regular file or anything else.
    Other,
    /// Not open, or not readable.
    Unknown,
}

/// The process's standard input and output (read once per identity, for candidates).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Stdio {
    /// fd 0.
    pub stdin: FdKind,
    /// fd 1.
    pub stdout: FdKind,
}

impl FdKind {
    /// A pipe or a socket: a channel to another process.
    pub fn is_channel(self) -> bool {
        matches!(self, Self::Pipe { .. } | Self::Socket { .. })
    }
}

impl Stdio {
    /// stdin and stdout are both pipes or sockets: how a stdio MCP server talks to its host.
    pub fn piped(&self) -> bool {
        self.stdin.is_channel() && self.stdout.is_channel()
    }

    /// stdin, when it is a pipe or a socket.
    pub fn stdin_channel(&self) -> Option<FdKind> {
        self.stdin.is_channel().then_some(self.stdin)
    }
}

/// A process in another pid namespace (a container): its pid there, and which namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct PidNs {
    /// The pid namespace's inode (`/proc/<pid>/ns/pid`).
    #[ts(type = "number")]
    pub inode: u64,
    /// Its pid inside that namespace (the last `NSpid` entry): what its own markers use.
    pub pid: u32,
    /// The container, from its cgroup path (docker, containerd, podman, kubepods), when one.
    pub container: Option<String>,
}

/// Why a process counts as an MCP server (other than mcp-debugger, known by its signature).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum McpEvidence {
    /// An argument names MCP (`@modelcontextprotocol/server-memory`, `mcp-server-time`).
    Argv {
        /// The argument.
        arg: String,
    },
    /// The script's package says MCP (a dependency on the MCP SDK, or its name).
    Package {
        /// The `package.json` read.
        file: String,
        /// What in it says MCP.
        says: String,
    },
    /// Its host (a process holding its stdin and stdout pipes) has other MCP servers.
    HostChild,
}
impl EnvMarkers {
    /// True when no marker is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

impl ProcFacts {
    /// A process of which nothing is known but its identity, start, command line and role:
    /// no parent, group, owner, server, session, stdio, host or container yet.
    pub fn new(
        pid: u32,
        start_ticks: u64,
        start_time: DateTime<Utc>,
        role: Role,
        argv: Vec<String>,
    ) -> Self {
        Self {
            pid,
            ppid: 0,
            pgid: 0,
            sid: 0,
            start_time,
            start_ticks,
            uid: None,
            role,
            argv,
            markers: EnvMarkers::default(),
            server_pid: None,
            session_id: None,
            language: None,
            owner_pid: None,
            remembered_ppid: None,
            exited_at: None,
            stdio: None,
            channel: None,
            stdin_holders: None,
            stdin_unchecked: false,
            mcp: None,
            host: None,
            ns: None,
            tracer_pid: None,
            adopted: None,
        }
    }

    /// Its identity (pid + start ticks).
    pub fn id(&self) -> ProcId {
        ProcId::new(self.pid, self.start_ticks)
    }
}

/// One process that matters to debugtop, as seen by the collector at one instant: what it is
/// (its facts, which change only when the process or what is known of it does) and how it is
/// doing (its sample, which moves with every look). On the wire it is one flat object.
//
// In Rust a process reads as its facts (`p.pid`, `p.argv`: it dereferences to them) and its
// sample is `p.sample`; "the same process, only its numbers moved" is `a.facts == b.facts`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Proc {
    /// What it is.
    #[serde(flatten)]
    #[ts(flatten)]
    pub facts: ProcFacts,
    /// How it is doing.
    #[serde(flatten)]
    #[ts(flatten)]
    pub sample: ProcSample,
}

impl std::ops::Deref for Proc {
    type Target = ProcFacts;
    fn deref(&self) -> &ProcFacts {
        &self.facts
    }
}

impl std::ops::DerefMut for Proc {
    fn deref_mut(&mut self) -> &mut ProcFacts {
        &mut self.facts
    }
}

/// How a process is doing at one look: numbers, times and fixed words that move while the
/// process stays what it is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
pub struct ProcSample {
    /// Scheduler state.
    pub state: ProcState,
    /// CPU use since the previous sample, in percent of one core; `None` on the first sample.
    pub cpu_percent: Option<f32>,
    /// Resident set size.
    #[ts(type = "number")]
    pub rss_bytes: u64,
    /// For a stdio server of a live host: since when debugtop has seen it read and write
    /// nothing (the later of the last change in its I/O counters and debugtop's first reading
    /// of them). A sample, like CPU: it moves whenever the process talks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdio_quiet_since: Option<DateTime<Utc>>,
}

/// What a process is: everything debugtop knows of it but its sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
pub struct ProcFacts {
    /// Process id.
    pub pid: u32,
    /// Parent process id (1 or a subreaper once orphaned).
    pub ppid: u32,
    /// Process group id.
    pub pgid: u32,
    /// Session id.
    pub sid: u32,
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
    /// Its stdin and stdout, for MCP-server candidates.
    #[serde(default)]
    pub stdio: Option<Stdio>,
    /// The channel it talks to its host on: stdin, or the pipe or socket it moved its stdio to
    /// (Python servers put `/dev/null` on fd 0 and speak on a duplicate).
    #[serde(default)]
    pub channel: Option<FdKind>,
    /// For a stdio MCP server: the live pids holding the other end of its channel (empty:
    /// nobody can ever send it a request). `None` when not checked.
    #[serde(default)]
    pub stdin_holders: Option<Vec<u32>>,
    /// For a stdio MCP server: who holds the other end of its channel cannot be checked on
    /// this system (Windows: enumerating other processes' handles takes rights a normal user
    /// lacks). Whether anyone can reach it then rests on its host being gone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stdin_unchecked: bool,
    /// Why it counts as an MCP server, for one that is not mcp-debugger.
    #[serde(default)]
    pub mcp: Option<McpEvidence>,
    /// The MCP host it runs under (directly or through its parents), when known; remembered
    /// after the host is gone.
    #[serde(default)]
    pub host: Option<HostRef>,
    /// Its pid namespace, when not debugtop's own (a container on this machine).
    #[serde(default)]
    pub ns: Option<PidNs>,
    /// Its ptrace holder (`TracerPid`), when traced (a debugger attached to a debuggee).
    #[serde(default)]
    pub tracer_pid: Option<u32>,
    /// Whoever started it is gone: it was re-parented to init or adopted by a subreaper.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopted: Option<Adopted>,
}

/// Who took in a process whose parent died.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum Adopted {
    /// Init (pid 1 of its pid namespace).
    Init,
    /// A known subreaper (`systemd --user`, tini, dumb-init, docker-init, s6).
    Subreaper {
        /// Its pid.
        pid: u32,
        /// Its program's name.
        name: String,
    },
    /// A process that did not start it: it was seen under another parent, or its parent was
    /// created after it.
    Adopter {
        /// Its pid.
        pid: u32,
    },
}

impl std::fmt::Display for Adopted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Init => f.write_str("re-parented to init"),
            Self::Subreaper { pid, name } => {
                write!(f, "adopted by the subreaper {name} (pid {pid})")
            }
            Self::Adopter { pid } => {
                write!(f, "adopted by pid {pid}, which did not start it")
            }
        }
    }
}

impl Proc {
    /// Equal to `now` but for the sample (CPU, memory, scheduler state, stdio quiet).
    pub fn same_but_samples(&self, now: &Proc) -> bool {
        self.facts == now.facts
    }

    /// Takes `now`'s sample.
    pub fn take_samples(&mut self, now: &Proc) {
        self.sample = now.sample;
    }
}

/// An MCP host as its servers remember it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct HostRef {
    /// Its pid.
    pub pid: u32,
    /// Its start ticks (with the pid, its identity).
    #[ts(type = "number")]
    pub start_ticks: u64,
    /// What it is.
    pub kind: HostKind,
    /// Its command line (for a label once it is gone): redacted as a command line, argument by
    /// argument, wherever it leaves.
    #[serde(default)]
    pub argv: Vec<String>,
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
    /// Watched processes that were quiet (no CPU time, sleeping) for their last reads and not
    /// due to be read this scan: their last read stands.
    #[serde(default)]
    pub quiet: u32,
    /// Processes run by Wine: listed, not judged (their command lines name Windows pids,
    /// which are not this table's pids).
    #[serde(default)]
    pub wine: u32,
    /// Other processes' CPU cannot be measured here (Windows under Wine): CPU is unknown and
    /// spinning is not judged.
    #[serde(default)]
    pub cpu_unmeasured: bool,
    /// Stdio servers of live hosts whose I/O counters cannot be read here (another user's
    /// process; Windows under Wine, which keeps none): whether they still talk is not known,
    /// so they are never judged duplicates.
    #[serde(default)]
    pub io_unmeasured: u32,
    /// The system has no per-process scheduler state (Windows: no zombies, no stopped
    /// processes): `zombie` and `stopped` cannot be told.
    #[serde(default)]
    pub no_states: bool,
    /// Wall time of the scan, in microseconds.
    #[ts(type = "number")]
    pub duration_us: u64,
}

/// The result of one scan: every process that belongs to a debug server, resolved. `P` is
/// what holds the processes: `()` once they were taken out (the state step takes them first,
/// so what reads the rest cannot read a table that was emptied).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProcessTable<P = Vec<Proc>> {
    /// When the scan finished.
    pub taken_at: DateTime<Utc>,
    /// Server-related processes, sorted by (server, pid).
    pub procs: P,
    /// The servers among them.
    pub servers: Vec<ServerInfo>,
    /// Counters.
    pub stats: ScanStats,
}

impl<P> ProcessTable<P> {
    /// Its processes, and the rest of it.
    pub fn take_procs(self) -> (P, ProcessTable<()>) {
        let rest = ProcessTable {
            taken_at: self.taken_at,
            procs: (),
            servers: self.servers,
            stats: self.stats,
        };
        (self.procs, rest)
    }
}

impl ProcessTable {
    /// The process with this pid, if it is server-related.
    pub fn get(&self, pid: u32) -> Option<&Proc> {
        self.procs.iter().find(|p| p.pid == pid)
    }
}
