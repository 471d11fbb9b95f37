//! How far a debug session got: the stages of its start as its worker logged them, its last
//! sign of life, the DAP requests still waiting for an answer, and its debuggee's state — what a
//! person needs to see to tell a stuck session from a slow one.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::{FactSource, ProcState};

/// The requests of a session's start that its worker logs.
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
    strum::IntoStaticStr,
)]
#[serde(rename_all = "camelCase")]
#[strum(serialize_all = "camelCase")]
#[ts(export)]
pub enum StartRequest {
    /// `initialize`.
    Initialize,
    /// `launch`.
    Launch,
    /// `attach`.
    Attach,
    /// `configurationDone`.
    ConfigurationDone,
}

impl fmt::Display for StartRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.into())
    }
}

/// One step of a session's start, as the worker's log says it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "stage", rename_all = "kebab-case")]
#[ts(export)]
pub enum Stage {
    /// `[AdapterManager] Spawned adapter process PID: <pid>`.
    AdapterSpawned {
        /// The adapter.
        pid: u32,
    },
    /// `[ConnectionManager] Attempting DAP client connect (attempt <n>/<of>) to <address>`.
    ConnectAttempt {
        /// This attempt.
        attempt: u32,
        /// The most the worker makes.
        of: u32,
        /// Where it connects.
        address: String,
    },
    /// `Failed to connect DAP client after <n> attempts`: the worker gave up.
    ConnectFailed {
        /// Attempts made.
        attempts: u32,
    },
    /// `DAP client connected to adapter successfully.`
    Connected,
    /// `Sending DAP "initialize" request`, `Sending "launch" request…`, and so on.
    Sent {
        /// Which request.
        request: StartRequest,
    },
    /// `DAP "initialize" request sent and response received.`, `DAP "launch" request sent.`
    /// (logged once the answer came), `"configurationDone" sent.`
    Answered {
        /// Which request.
        request: StartRequest,
    },
    /// `[Worker] DAP event: stopped reason=<reason>`.
    Stopped {
        /// Why (`entry`, `breakpoint`, `step`, …).
        reason: String,
    },
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AdapterSpawned { pid } => write!(f, "adapter {pid} spawned"),
            Self::ConnectAttempt {
                attempt,
                of,
                address,
            } => write!(f, "connect attempt {attempt}/{of} to {address}"),
            Self::ConnectFailed { attempts } => {
                write!(f, "gave up connecting after {attempts} attempts")
            }
            Self::Connected => f.write_str("connected"),
            Self::Sent { request } => write!(f, "{request} sent"),
            Self::Answered { request } => write!(f, "{request} answered"),
            Self::Stopped { reason } => write!(f, "stopped ({reason})"),
        }
    }
}

/// A stage with when and where it was logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct StageMark {
    /// The stage.
    pub stage: Stage,
    /// The stage in words, as the CLI and the report say it (the window shows this).
    #[serde(default)]
    pub text: String,
    /// The line's time.
    pub at: Option<DateTime<Utc>>,
    /// The log.
    pub file: String,
    /// Its line.
    #[ts(type = "number")]
    pub line: u64,
}

impl StageMark {
    /// A stage read from `file`'s `line`, logged at `at`.
    pub fn new(stage: Stage, at: Option<DateTime<Utc>>, file: String, line: u64) -> Self {
        Self {
            text: stage.to_string(),
            stage,
            at,
            file,
            line,
        }
    }

    /// Where it was logged (`proxy-<id>.log:14` in words).
    pub fn source(&self) -> FactSource {
        FactSource::Log {
            file: self.file.clone(),
            line: self.line,
        }
    }
}

/// The newest line written about a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct SignOfLife {
    /// When.
    pub at: DateTime<Utc>,
    /// Which log.
    pub file: String,
    /// Its line.
    #[ts(type = "number")]
    pub line: u64,
    /// What it said (bounded).
    pub text: String,
}

impl SignOfLife {
    /// Where it was logged.
    pub fn source(&self) -> FactSource {
        FactSource::Log {
            file: self.file.clone(),
            line: self.line,
        }
    }
}

/// Who is waiting for the answer to a DAP request.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum Asker {
    /// The worker asked the adapter.
    Worker,
    /// The adapter asked the worker (a reverse request: `runInTerminal`, `startDebugging`).
    Adapter,
}

impl fmt::Display for Asker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Worker => "worker",
            Self::Adapter => "adapter",
        })
    }
}

/// A DAP request with no response yet in the session's trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct PendingRequest {
    /// The request's command.
    pub command: String,
    /// Its sequence number.
    #[ts(type = "number")]
    pub seq: u64,
    /// When it was sent.
    pub sent_at: DateTime<Utc>,
    /// Who waits.
    pub asker: Asker,
}

/// What a session's DAP trace (`dap-trace-<session>.ndjson`) says now.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[ts(export)]
pub struct TraceState {
    /// The file.
    pub file: String,
    /// Requests without a response, oldest first.
    pub pending: Vec<PendingRequest>,
    /// The newest message's time.
    pub last_at: Option<DateTime<Utc>>,
    /// Messages read.
    #[ts(type = "number")]
    pub messages: u64,
}

/// A session's debuggee, as the process table has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct DebuggeeState {
    /// Its pid.
    pub pid: u32,
    /// Its scheduler state: `t` stopped by the debugger, `T` by a signal.
    pub state: ProcState,
    /// Its ptrace holder, when traced.
    pub tracer_pid: Option<u32>,
}

/// How far a session got and when it last did anything.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[ts(export)]
pub struct SessionProgress {
    /// When it entered its current state, per the server's log.
    pub state_since: Option<DateTime<Utc>>,
    /// The newest line from the server's log or its worker's log about it.
    pub last_sign: Option<SignOfLife>,
    /// Its start, stage by stage (the first connect attempt and the latest are kept).
    pub stages: Vec<StageMark>,
    /// Its DAP trace, when one exists.
    pub trace: Option<TraceState>,
    /// Its debuggee, when running.
    pub debuggee: Option<DebuggeeState>,
}

impl SessionProgress {
    /// The newest stage.
    pub fn latest(&self) -> Option<&StageMark> {
        self.stages.last()
    }

    /// Has the start gone through: its first stop, or `configurationDone` answered (running
    /// without a stop on entry)?
    pub fn is_through(&self) -> bool {
        self.stages.iter().any(|m| {
            matches!(
                m.stage,
                Stage::Stopped { .. }
                    | Stage::Answered {
                        request: StartRequest::ConfigurationDone
                    }
            )
        })
    }

    /// The newest mark of a stage matching `f`.
    pub fn last_of(&self, f: impl Fn(&Stage) -> bool) -> Option<&StageMark> {
        self.stages.iter().rev().find(|m| f(&m.stage))
    }
}
