//! What a process carries besides its role: the transport a server speaks, a session's
//! language, environment markers, a host's kind, its stdio and the pipes and sockets it holds,
//! its pid namespace, why it counts as an MCP server, who adopted it, the host it ran under.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
    /// Dart or Flutter (`dart|flutter debug_adapter` behind mcp-debugger's
    /// `dap-stdio-bridge.js`, which carries no owner tag: tied to its session by its parent
    /// worker only).
    Dart,
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
            "flutter" => Some(Self::Dart),
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
