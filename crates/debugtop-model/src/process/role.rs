//! What a process is in the debug server's world (its role; the launchers between a host and
//! its server), and what state the kernel says it is in.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

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
