//! What `debugtop-cli run -- CMD` found: the command's own end, how its processes were kept in
//! scope, and every process of the run that outlived it — who it is, who started it, which test
//! — and what was done with it. One typed report: the JSON file, the JUnit file, the CI
//! annotations and the terminal summary are all drawn from it.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{FindingId, Outcome, ProcId, ProcState, Role};

/// The report's schema name and major version.
pub const RUN_SCHEMA: &str = "debugtop.run/1";

/// Exit status of a run whose command succeeded but left processes behind.
pub const LEAK_STATUS: u8 = 86;
/// Exit status of a run that could not check what its command left (and whose command did
/// not fail).
pub const UNCHECKED_STATUS: u8 = 87;

/// How a run keeps every process its command starts within reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ScopeKind {
    /// A cgroup v2 of its own: every descendant is in it, whoever its parent is now.
    Cgroup,
    /// debugtop made itself a child subreaper: orphans of the command are re-parented to it.
    Subreaper,
    /// A Windows job object: every process the command starts joins it.
    JobObject,
}

impl std::fmt::Display for ScopeKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Cgroup => "cgroup",
            Self::Subreaper => "subreaper",
            Self::JobObject => "job object",
        })
    }
}

/// The scope a run used, and why (a fallback says what it fell back from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunScope {
    /// Which.
    pub kind: ScopeKind,
    /// Where (the cgroup's path), when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Why this one (e.g. why no cgroup could be made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// Whether the kernel's fork and exec events were heard (`--follow-forks`, Linux, root):
    /// a parent that started a process and exited between two looks is still known. Without
    /// them, such a process is shown where it was found, its chain incomplete.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub heard_forks: bool,
    /// Why the forks asked for could not be heard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forks_unheard: Option<String>,
}

/// How the command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "how", rename_all = "kebab-case")]
pub enum CommandEnd {
    /// It exited with this status.
    Exited {
        /// Its status.
        code: i32,
    },
    /// A signal ended it.
    Signalled {
        /// The signal's number.
        signal: i32,
    },
    /// It could not be started.
    NotStarted,
}

impl CommandEnd {
    /// Whether the command succeeded.
    pub fn succeeded(self) -> bool {
        self == Self::Exited { code: 0 }
    }

    /// The status a shell would give for it (`128 + n` for signal `n`; 127 when it could not
    /// be started).
    pub fn shell_status(self) -> u8 {
        match self {
            Self::Exited { code } => u8::try_from(code & 0xff).unwrap_or(1),
            Self::Signalled { signal } => u8::try_from(128 + (signal & 0x7f)).unwrap_or(1),
            Self::NotStarted => 127,
        }
    }
}

impl std::fmt::Display for CommandEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited { code } => write!(f, "exited with status {code}"),
            Self::Signalled { signal } => write!(f, "was ended by signal {signal}"),
            Self::NotStarted => f.write_str("could not be started"),
        }
    }
}

/// Which test runner named a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TestRunner {
    /// pytest (`PYTEST_CURRENT_TEST` in the environment).
    Pytest,
    /// cargo-nextest (one process per test: `NEXTEST_TEST_NAME`, or `--exact NAME`).
    Nextest,
    /// Node's own test runner (a process per test file, `NODE_TEST_CONTEXT`).
    NodeTest,
    /// Jest (a worker: `JEST_WORKER_ID`; the test file is not said).
    Jest,
    /// Vitest (a worker: `VITEST_POOL_ID`/`VITEST_WORKER_ID`; the test file is not said).
    Vitest,
}

impl std::fmt::Display for TestRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Pytest => "pytest",
            Self::Nextest => "nextest",
            Self::NodeTest => "node --test",
            Self::Jest => "jest",
            Self::Vitest => "vitest",
        })
    }
}

/// The test that started a process, as its runner said it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TestName {
    /// Who said it.
    pub runner: TestRunner,
    /// The test (`tests/test_x.py::test_leak`), the test file, or the worker.
    pub name: String,
}

impl std::fmt::Display for TestName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.runner)
    }
}

/// One process above a survivor, as it was while it lived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ancestor {
    /// Its identity.
    pub id: ProcId,
    /// Its command line (redacted).
    pub argv: Vec<String>,
    /// Whether it is gone now.
    pub gone: bool,
}

/// Why a survivor is not a leak.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "by", rename_all = "kebab-case")]
pub enum Allowance {
    /// `--allow ROLE`.
    Role {
        /// The role named.
        role: Role,
    },
    /// `--allow PATTERN`, matched against its command line.
    Pattern {
        /// The pattern named.
        pattern: String,
    },
}

impl std::fmt::Display for Allowance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Role { role } => write!(f, "--allow {role}"),
            Self::Pattern { pattern } => write!(f, "--allow {pattern}"),
        }
    }
}

/// A process of the run alive after the command and the grace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Survivor {
    /// Its identity.
    pub id: ProcId,
    /// Its role, as the engine names it (none for a process no debug server or host explains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// The engine's finding about it, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finding: Option<FindingId>,
    /// Its command line (redacted).
    pub argv: Vec<String>,
    /// Its scheduler state.
    pub state: ProcState,
    /// Who started it, nearest first, as they were while they lived (a process re-parented
    /// after its parent exited is still shown under the parent that started it). Ends where
    /// the run's command is reached, or where a parent was never seen (it lived less than one
    /// look).
    pub ancestry: Vec<Ancestor>,
    /// Whether its chain reaches the run's command (false: a parent lived less than a look).
    pub ancestry_complete: bool,
    /// Milliseconds after the command started that it started.
    pub started_after_ms: i64,
    /// Milliseconds it has outlived the command.
    pub outlived_ms: u64,
    /// Resident memory, bytes.
    pub rss_bytes: u64,
    /// CPU over the grace, percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f32>,
    /// The test that started it, where the runner said so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<TestName>,
    /// Why it is not a leak, when an `--allow` names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Allowance>,
    /// It left the run's scope (a Windows process started with `CREATE_BREAKAWAY_FROM_JOB`),
    /// and was found by its parent, a member alive at that look.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub broke_away: bool,
    /// The container it runs in, when a `docker run` of the run started that container (its
    /// processes descend from the container engine, not from the command); it is ended
    /// through the engine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// What ending it did (none with `--keep`, or for an allowed survivor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Outcome>,
}

impl Survivor {
    /// Whether it is a leak (not allowed).
    pub fn is_leak(&self) -> bool {
        self.allowed.is_none()
    }

    /// What it is, in two words: its role, else "process".
    pub fn what(&self) -> String {
        self.role
            .map_or_else(|| "process".to_owned(), |r| r.to_string())
    }
}

/// What the run says of itself, as CI reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunVerdict {
    /// The command succeeded and nothing of it outlived it (allowed survivors aside).
    Clean,
    /// The command succeeded and left processes behind.
    Leaked,
    /// The command failed (its status is the run's).
    CommandFailed,
    /// The run could not check what the command left.
    Unchecked,
}

/// Whether leaks fail the run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum LeakPolicy {
    /// A leak is the run's failure ([`LEAK_STATUS`]).
    #[default]
    Fail,
    /// Leaks are reported; the status is the command's.
    Warn,
}

/// The report of one `run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunReport {
    /// [`RUN_SCHEMA`].
    pub schema: String,
    /// The command (redacted).
    pub command: Vec<String>,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// When the report was made.
    pub reported_at: DateTime<Utc>,
    /// How long the command ran, milliseconds.
    pub command_ms: u64,
    /// How it ended.
    pub end: CommandEnd,
    /// Signals passed on to it (by name), in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forwarded: Vec<String>,
    /// How its processes were kept in scope.
    pub scope: RunScope,
    /// The grace the run waited after the command, milliseconds.
    pub grace_ms: u64,
    /// Every process of the run still alive after it (zombies are never counted).
    pub survivors: Vec<Survivor>,
    /// Whether survivors were left running (`--keep`).
    pub kept: bool,
    /// Whether leaks fail the run.
    pub leaks: LeakPolicy,
    /// What could not be checked, in words (then the verdict is [`RunVerdict::Unchecked`]
    /// unless the command failed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
    /// The verdict.
    pub verdict: RunVerdict,
    /// The run's exit status.
    pub exit_status: u8,
}

impl RunReport {
    /// The survivors that are leaks.
    pub fn leaks(&self) -> impl Iterator<Item = &Survivor> {
        self.survivors.iter().filter(|s| s.is_leak())
    }

    /// The verdict and exit status for these facts: the command's status when it failed;
    /// else "could not check", else leaks (a failure unless `--leaks warn`), else clean.
    pub fn judge(
        end: CommandEnd,
        leaks: usize,
        problems: usize,
        policy: LeakPolicy,
    ) -> (RunVerdict, u8) {
        if !end.succeeded() {
            (RunVerdict::CommandFailed, end.shell_status().max(1))
        } else if problems > 0 {
            (RunVerdict::Unchecked, UNCHECKED_STATUS)
        } else if leaks > 0 {
            let status = match policy {
                LeakPolicy::Fail => LEAK_STATUS,
                LeakPolicy::Warn => 0,
            };
            (RunVerdict::Leaked, status)
        } else {
            (RunVerdict::Clean, 0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_is_the_commands_when_it_failed_then_unchecked_then_leaks() {
        let ok = CommandEnd::Exited { code: 0 };
        let j = RunReport::judge;
        assert_eq!(j(ok, 0, 0, LeakPolicy::Fail), (RunVerdict::Clean, 0));
        assert_eq!(
            j(ok, 2, 0, LeakPolicy::Fail),
            (RunVerdict::Leaked, LEAK_STATUS)
        );
        assert_eq!(j(ok, 2, 0, LeakPolicy::Warn), (RunVerdict::Leaked, 0));
        assert_eq!(
            j(ok, 2, 1, LeakPolicy::Fail),
            (RunVerdict::Unchecked, UNCHECKED_STATUS)
        );
        let failed = CommandEnd::Exited { code: 3 };
        assert_eq!(
            j(failed, 2, 1, LeakPolicy::Fail),
            (RunVerdict::CommandFailed, 3)
        );
        let killed = CommandEnd::Signalled { signal: 15 };
        assert_eq!(
            j(killed, 0, 0, LeakPolicy::Fail),
            (RunVerdict::CommandFailed, 143)
        );
        assert_eq!(j(CommandEnd::NotStarted, 0, 0, LeakPolicy::Fail).1, 127);
        // A status a byte cannot hold still fails.
        assert_eq!(CommandEnd::Exited { code: 256 }.shell_status().max(1), 1);
    }
}
