//! One scan of the process table as the collector hands it on: the servers found, the
//! processes that matter, and what the scan could not read.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{Proc, ServerMode};

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
