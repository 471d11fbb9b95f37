//! `run -- CMD`: the leak check around one command. The command runs as it would without
//! debugtop, inside a scope nothing it starts leaves unseen; when it exits, the run waits a grace
//! for teardown, then names every process of the run still alive — by role and finding as the
//! engine names them, under the parent that started it, with the test that started it — ends
//! exactly those with the planned, verified kill, and answers with a status CI can use.

pub mod containers;
pub mod incident;
pub mod lineage;
pub mod survivors;

#[cfg(any(target_os = "linux", windows))]
mod end;
#[cfg(windows)]
mod job;
#[cfg(any(target_os = "linux", windows))]
mod recipe;
#[cfg(target_os = "linux")]
pub mod supervise;
#[cfg(any(target_os = "linux", windows))]
mod watch;

#[cfg(windows)]
use job as os;
#[cfg(target_os = "linux")]
use supervise as os;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

pub use survivors::Allow;

use crate::judging::Judging;
use crate::model::{LeakPolicy, RunReport, Snapshot};

/// The grace `run` waits after the command before it counts what is left: a teardown is
/// allowed to finish. mcp-debugger force-kills a worker 5 s after its session closes, and the
/// engine judges a leak after 6 s for the same reason; waiting stops as soon as nothing of
/// the run is left, so a clean run does not pay it.
pub const DEFAULT_RUN_GRACE: Duration = Duration::from_secs(6);

/// Which scope to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScopeChoice {
    /// A cgroup where one can be made, else a subreaper; on Windows, a job object.
    #[default]
    Auto,
    /// A cgroup, or fail.
    Cgroup,
    /// A subreaper, even where a cgroup could be made.
    Subreaper,
}

/// The program that joins a cgroup and then becomes the command (`debugtop-cli`'s hidden verb):
/// the command is born in the cgroup, so nothing it starts can be missed.
#[derive(Debug, Clone)]
pub struct Joiner {
    /// The program.
    pub program: PathBuf,
    /// Its arguments before the cgroup's directory.
    pub args: Vec<OsString>,
}

/// What a run is told.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// The wait after the command.
    pub grace: Duration,
    /// Where to keep its processes.
    pub scope: ScopeChoice,
    /// Hear every fork and exec of the run's processes from the kernel (Linux, root).
    pub follow_forks: bool,
    /// The program that joins a cgroup and becomes the command.
    pub joiner: Option<Joiner>,
    /// Leave survivors running.
    pub keep: bool,
    /// Expected survivors.
    pub allow: Vec<Allow>,
    /// Whether leaks fail the run.
    pub leaks: LeakPolicy,
    /// How the engine judges the survivors (servers given by URL among them).
    pub judging: Judging,
    /// SIGTERM → SIGKILL grace when ending them.
    pub kill_grace: Duration,
    /// Redact command lines (off only with `--no-redact`).
    pub redact: bool,
    /// Also make the incident snapshot of the run's processes.
    pub snapshot: bool,
}

/// What a run answers.
#[derive(Debug, Clone)]
pub struct RunAnswer {
    /// The report.
    pub report: RunReport,
    /// The incident snapshot, when asked for (and the engine could look).
    pub snapshot: Option<Snapshot>,
}

#[cfg(any(target_os = "linux", windows))]
pub use recipe::run;

/// `run` where this build has no scope to keep a command's processes in.
#[cfg(not(any(target_os = "linux", windows)))]
pub async fn run(config: &RunConfig) -> crate::Result<RunAnswer> {
    let _ = config;
    Err(crate::Error::SystemInfo {
        what: "a scope for the run's processes",
        detail: "`run` keeps them in a cgroup or as a subreaper on Linux, in a job object on \
                 Windows; this build is for neither"
            .into(),
    })
}

/// The JSON Schema of the run report (checked in as `schema/debugtop.run-1.schema.json`).
pub fn json_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(RunReport)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_in_run_schema_is_current() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schema/debugtop.run-1.schema.json");
        let mut now = serde_json::to_string_pretty(&json_schema()).unwrap_or_default();
        now.push('\n');
        if std::env::var_os("DEBUGTOP_WRITE_SCHEMA").is_some() {
            std::fs::write(&path, &now).expect("write the schema");
        }
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == now,
            "schema/debugtop.run-1.schema.json is stale: run `DEBUGTOP_WRITE_SCHEMA=1 cargo test -p debugtop-core schema`"
        );
        for field in ["survivors", "verdict", "exit_status", "scope", "end"] {
            assert!(
                json_schema()["required"]
                    .as_array()
                    .is_some_and(|r| r.iter().any(|f| f == field)),
                "{field}"
            );
        }
    }
}
