//! Kill plans and their outcomes, as data: what a kill will do, and what it did.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ids::ProcId;
use super::process::Role;

/// Why a process is in the plan.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum Via {
    /// Named directly (the pid, or a finding's process).
    Target,
    /// A descendant of a target (`--tree`).
    Descendant,
    /// A member of a target's process group.
    Group,
    /// A member of a target's session (js-debug's watchdog lives in its own).
    Session,
    /// A watchdog that names a target debuggee.
    Watchdog,
}

/// One process of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillTarget {
    /// Its pid.
    pub pid: u32,
    /// Its start ticks: the identity checked at execution.
    #[ts(type = "number")]
    pub start_ticks: u64,
    /// Its role.
    pub role: Role,
    /// Group and session, for the record.
    pub pgid: u32,
    /// Session id.
    pub sid: u32,
    /// Redacted command line.
    pub argv: Vec<String>,
    /// Why it is included.
    pub via: Via,
}

impl KillTarget {
    /// Its identity (pid + start ticks), as execution checks it.
    pub fn id(&self) -> ProcId {
        ProcId::new(self.pid, self.start_ticks)
    }
}

/// A process the plan will not touch, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Refusal {
    /// The pid asked for.
    pub pid: u32,
    /// Why, in words.
    pub why: String,
}

/// What a kill will do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillPlan {
    /// Targets in signalling order: leaves first, workers and servers last.
    pub targets: Vec<KillTarget>,
    /// Asked-for pids that will not be touched.
    pub refused: Vec<Refusal>,
    /// Milliseconds between SIGTERM and SIGKILL.
    #[ts(type = "number")]
    pub grace_ms: u64,
    /// How the machine that executes it ends a process (absent in older documents: signals).
    #[serde(default = "KillMethod::signals")]
    pub method: KillMethod,
    /// A container to end through its engine (`docker kill`) before anything is signalled:
    /// the plan's targets are what runs in it, signalled only if they outlive it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container: Option<ContainerStop>,
}

/// A container a plan ends through its engine. Executed only when the engine names the same
/// main process (pid and start) the plan does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct ContainerStop {
    /// Its id as its cgroup names it (12 or more hex characters).
    pub id: String,
    /// Its main process as debugtop sees it (pid 1 inside).
    pub main_pid: u32,
    /// The main process's start ticks: its identity.
    #[ts(type = "number")]
    pub main_start_ticks: u64,
}

impl ContainerStop {
    /// Whether `id` is a container id: hex only, 12 to 64 characters (never an option or a
    /// name an engine would read otherwise).
    pub fn valid_id(id: &str) -> bool {
        (12..=64).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_hexdigit())
    }
}

/// How a plan ends processes: by Unix signals, or — on Windows, which has no SIGTERM for
/// these processes — by `TerminateProcess`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum KillMethod {
    /// SIGTERM, a grace, then SIGKILL.
    Signals,
    /// `TerminateProcess` on a handle opened with an identity check; no grace.
    Terminate,
}

impl KillMethod {
    /// Unix signals.
    pub fn signals() -> Self {
        Self::Signals
    }

    /// How this build's kill ends processes.
    pub fn native() -> Self {
        if cfg!(windows) {
            Self::Terminate
        } else {
            Self::Signals
        }
    }
}

impl Default for KillMethod {
    fn default() -> Self {
        Self::native()
    }
}

impl KillPlan {
    /// The plan in words, one line per step (for a preview).
    pub fn describe(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .container
            .iter()
            .map(|c| {
                format!(
                    "docker kill container {} (its main process is pid {}), once docker names \
                     that very process; then what is left of it is signalled",
                    c.id, c.main_pid
                )
            })
            .collect();
        out.extend(self.targets.iter().map(|t| {
            let how = match self.method {
                KillMethod::Signals => "SIGTERM",
                KillMethod::Terminate => "terminate",
            };
            // Windows has no process groups or sessions as Unix has them.
            let group = match self.method {
                KillMethod::Signals => format!(", group {}, session {}", t.pgid, t.sid),
                KillMethod::Terminate => String::new(),
            };
            format!(
                "{how} {} (pid {}{group}, {}): {}",
                t.role,
                t.pid,
                t.via,
                super::printable::one_line(&t.argv.join(" "))
            )
        }));
        if !self.targets.is_empty() {
            out.push(match self.method {
                KillMethod::Signals => format!(
                    "wait up to {} ms for each to exit, then SIGKILL what is left, then verify",
                    self.grace_ms
                ),
                KillMethod::Terminate => "TerminateProcess each, leaves first (Windows has no \
                    SIGTERM for these processes), then verify each has ended"
                    .to_owned(),
            });
        }
        out.extend(
            self.refused
                .iter()
                .map(|r| format!("refuse {}: {}", r.pid, super::printable::one_line(&r.why))),
        );
        out
    }
}

/// What happened to one process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
#[ts(export)]
pub enum Outcome {
    /// Exited after SIGTERM.
    Exited,
    /// Needed SIGKILL.
    Killed,
    /// Ended by `TerminateProcess` (Windows).
    Terminated,
    /// Ended with its container (`docker kill`).
    ContainerKilled,
    /// Gone (or a zombie) before it was signalled.
    AlreadyGone,
    /// Not signalled.
    Refused {
        /// Why.
        why: String,
    },
    /// Signalling or waiting failed.
    Failed {
        /// The error, in words.
        why: String,
    },
}

impl Outcome {
    /// Whether the process is verified gone.
    pub fn is_gone(&self) -> bool {
        matches!(
            self,
            Self::Exited
                | Self::Killed
                | Self::Terminated
                | Self::ContainerKilled
                | Self::AlreadyGone
        )
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exited => f.write_str("exited"),
            Self::Killed => f.write_str("killed"),
            Self::Terminated => f.write_str("terminated"),
            Self::ContainerKilled => f.write_str("container-killed"),
            Self::AlreadyGone => f.write_str("already-gone"),
            Self::Refused { why } => write!(f, "refused: {why}"),
            Self::Failed { why } => write!(f, "failed: {why}"),
        }
    }
}

/// One line of a kill report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct PidOutcome {
    /// The pid.
    pub pid: u32,
    /// Its role.
    pub role: Role,
    /// What happened.
    pub outcome: Outcome,
}

impl PidOutcome {
    /// A refusal of the plan, as a line of its report (role unknown: it was not planned).
    pub fn refused(r: &Refusal) -> Self {
        Self {
            pid: r.pid,
            role: Role::Other,
            outcome: Outcome::Refused { why: r.why.clone() },
        }
    }
}

/// The report of an executed plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillReport {
    /// One outcome per target and per refusal.
    pub outcomes: Vec<PidOutcome>,
}

impl KillReport {
    /// Every target verified gone (and nothing refused).
    pub fn all_gone(&self) -> bool {
        self.outcomes.iter().all(|o| o.outcome.is_gone())
    }
}

/// A signal a kill sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub enum KillSignal {
    /// Ask to exit.
    #[serde(rename = "SIGTERM")]
    Term,
    /// Resume a stopped target (so it can act on the SIGTERM).
    #[serde(rename = "SIGCONT")]
    Cont,
    /// Force.
    #[serde(rename = "SIGKILL")]
    Kill,
    /// Windows' only way: `TerminateProcess`.
    #[serde(rename = "TerminateProcess")]
    Terminate,
}

impl std::fmt::Display for KillSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Term => "SIGTERM",
            Self::Cont => "SIGCONT",
            Self::Kill => "SIGKILL",
            Self::Terminate => "TerminateProcess",
        })
    }
}

/// Progress while executing (for a live view).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "step", rename_all = "kebab-case")]
#[ts(export)]
pub enum Progress {
    /// A signal was sent.
    Signalled {
        /// The pid.
        pid: u32,
        /// Which.
        signal: KillSignal,
    },
    /// A pid has its outcome.
    Done {
        /// The pid.
        pid: u32,
        /// The outcome.
        outcome: Outcome,
    },
}

/// What `debugtop-cli kill --json` prints: the plan, and what executing it did (`None` for a
/// dry run, an empty plan, or no confirmation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct KillAnswer {
    /// The plan, as checked on the machine where the pids live.
    pub plan: KillPlan,
    /// The outcome per pid.
    pub report: Option<KillReport>,
}
