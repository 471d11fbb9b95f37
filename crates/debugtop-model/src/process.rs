//! Processes as the process table shows them: a process is its facts (what it is) and its
//! sample (what moves every look); its role and state ([`role`]), what it carries
//! ([`markers`]), and one scan's table ([`table`]).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ids::ProcId;

mod markers;
mod role;
mod table;

pub use markers::{
    Adopted, EnvMarkers, FdKind, HostKind, HostRef, Language, McpEvidence, PidNs, ServerMode, Stdio,
};
pub use role::{wrapper_name, ProcState, Role};
pub use table::{ProcessTable, ScanStats, ServerInfo};

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
            argv: argv.into(),
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
    pub argv: std::sync::Arc<[String]>,
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
