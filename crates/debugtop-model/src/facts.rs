//! Typed facts: one thing known, where it came from, and when. Rules match on the [`FactKind`];
//! the tree, the timeline and the reports show its one `Display`, so a fact is worded once and
//! rewording it cannot make evidence disappear.

use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::ids::short;
use super::lifecycle::{HttpEnd, SessionState};
use super::logs::{LogEvent, LogEventKind, OrphanReaper};
use super::process::ServerMode;

/// Where a fact comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum FactSource {
    /// `/proc` (or the OS process list).
    ProcessTable,
    /// A server's `/health`.
    Health {
        /// The URL asked.
        url: String,
    },
    /// A log line.
    Log {
        /// The file.
        file: String,
        /// Its line number.
        #[ts(type = "number")]
        line: u64,
    },
}

impl fmt::Display for FactSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ProcessTable => f.write_str("process table"),
            Self::Health { url } => write!(f, "{url}"),
            Self::Log { file, line } => {
                let name = std::path::Path::new(file)
                    .file_name()
                    .map_or(file.as_str().into(), |n| n.to_string_lossy());
                write!(f, "{name}:{line}")
            }
        }
    }
}

/// How a worker (or any process) ended, as the log gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct ExitHow {
    /// Exit code, when it exited.
    pub code: Option<i32>,
    /// Signal name, when it was killed.
    pub signal: Option<String>,
}

impl fmt::Display for ExitHow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.signal, self.code) {
            (Some(s), _) => write!(f, " on {s}"),
            (None, Some(c)) => write!(f, " with code {c}"),
            (None, None) => Ok(()),
        }
    }
}

/// What a fact says: one kind of thing known, with its data.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum FactKind {
    /// A fact known only by its words: read from a snapshot written before facts were typed.
    #[default]
    Noted,
    /// `HTTP session initialized`.
    HttpInitialized,
    /// `HTTP session closed`.
    HttpClosed,
    /// Reaped by the stale sweep.
    HttpReaped {
        /// Idle seconds, as logged.
        idle_secs: Option<u64>,
    },
    /// Reaped because its SSE stream was lost (newer servers).
    HttpStreamLost {
        /// Seconds since the stream closed, as logged.
        secs: Option<u64>,
    },
    /// Listed by the latest `/health`.
    ListedByHealth,
    /// Left under its server: the server does not say which HTTP session holds it (its
    /// `/health` has no `details[]`, which releases after 0.24.2 add).
    HttpHolderUnknown,
    /// The debug session ended with the HTTP session that held it (the reap line names it).
    EndedWithHttp {
        /// The HTTP session.
        http_session: String,
        /// How it ended.
        how: HttpEnd,
    },
    /// The worker's own log says it is done.
    WorkerFinished {
        /// The line's words.
        said: String,
    },
    /// The server's startup janitor reaped what earlier runs left.
    StartupReaped {
        /// How many.
        count: u32,
        /// What.
        what: String,
    },
    /// The server's log created the debug session.
    SessionCreated,
    /// The session changed state.
    StateChanged {
        /// From.
        from: SessionState,
        /// To.
        to: SessionState,
    },
    /// `Session <id> marked as STOPPED/TERMINATED.`
    MarkedStopped,
    /// `Closing debug session`.
    Closing,
    /// `session:closed`.
    Closed,
    /// The server spawned the session's worker.
    WorkerSpawned {
        /// Its pid.
        pid: u32,
    },
    /// The worker spawned the session's adapter.
    AdapterSpawned {
        /// Its pid.
        pid: u32,
    },
    /// A step of the session's start, in its worker's log.
    Stage {
        /// The step.
        stage: super::Stage,
    },
    /// The server gave up waiting for the worker and SIGKILLed it.
    WorkerForceKilled,
    /// The worker exited after being asked to stop.
    WorkerExited {
        /// How.
        how: ExitHow,
    },
    /// The worker died while its session was live.
    WorkerDied {
        /// How.
        how: ExitHow,
    },
    /// The server gave up starting the session (it is over: history, not a live session).
    StartFailed {
        /// The server's reason.
        reason: String,
    },
    /// The startup janitor killed an orphan of this session left by an earlier run.
    ReaperKilledWorker {
        /// The pid it names (in the server's own pid namespace).
        pid: u32,
        /// Which reaper: a proxy worker (or tagged js-debug adapter), or a JVM.
        #[serde(default)]
        reaper: OrphanReaper,
    },
    /// The startup janitor removed stale session run folders (older than 7 days).
    JanitorSwept {
        /// How many.
        runs: u32,
    },
    /// The startup janitor reaped nothing this start (its process scan or a reaper failed, or
    /// the reapers were turned off).
    JanitorFailed {
        /// Its words.
        said: String,
    },
    /// The server closed every session (shutdown).
    ClosingAll {
        /// How many were active.
        active: u32,
    },
    /// A server's pid and transport.
    ServerMode {
        /// The pid.
        pid: u32,
        /// The transport.
        mode: ServerMode,
    },
    /// The argv port is confirmed by a listening socket.
    Listening {
        /// The port.
        port: u16,
    },
    /// The server has no listening TCP socket.
    NotListening,
    /// The argv port is not the one it listens on.
    PortMismatch {
        /// The port in argv.
        argv: Option<u16>,
        /// What it listens on.
        listening: Vec<u16>,
    },
    /// A process left the parent it had in the tree.
    Reparented {
        /// The parent it had.
        from: u32,
        /// The parent it has.
        to: u32,
    },
    /// It runs in another pid namespace (a container on this machine).
    InContainer {
        /// The container id, or the pid namespace's inode.
        container: String,
        /// Its pid there (what its own markers use).
        inner_pid: u32,
    },
    /// A debugger holds it under ptrace.
    TracedBy {
        /// The tracer's pid.
        pid: u32,
    },
    /// No live server started before these processes has this pid.
    ServerGone {
        /// The pid they name.
        pid: u32,
    },
}

impl fmt::Display for FactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Noted => f.write_str("(noted)"),
            Self::WorkerFinished { said } => write!(f, "its worker logged `{said}`"),
            Self::SessionCreated => f.write_str("debug session created"),
            Self::StateChanged { from, to } => write!(f, "state {from} → {to}"),
            Self::MarkedStopped => f.write_str("marked as STOPPED/TERMINATED"),
            Self::Closing => f.write_str("closing"),
            Self::Closed => f.write_str("closed"),
            Self::WorkerSpawned { pid } => write!(f, "worker spawned with pid {pid}"),
            Self::AdapterSpawned { pid } => write!(f, "adapter spawned with pid {pid}"),
            Self::Stage { stage } => write!(f, "start: {stage}"),
            Self::WorkerForceKilled => f.write_str("worker did not exit in time: force-killed"),
            Self::WorkerExited { how } => write!(f, "worker exited{how}"),
            Self::WorkerDied { how } => write!(f, "worker exited under a live session{how}"),
            Self::StartFailed { reason } if reason.is_empty() => {
                f.write_str("the server could not start it")
            }
            Self::StartFailed { reason } => write!(f, "the server could not start it: {reason}"),
            Self::ClosingAll { active } => {
                write!(f, "closing all debug sessions ({active} active)")
            }
            Self::HttpInitialized
            | Self::HttpClosed
            | Self::HttpReaped { .. }
            | Self::HttpStreamLost { .. }
            | Self::ListedByHealth
            | Self::HttpHolderUnknown
            | Self::EndedWithHttp { .. } => self.fmt_http(f),
            Self::StartupReaped { .. }
            | Self::ReaperKilledWorker { .. }
            | Self::JanitorSwept { .. }
            | Self::JanitorFailed { .. } => self.fmt_janitor(f),
            Self::ServerMode { .. }
            | Self::Listening { .. }
            | Self::NotListening
            | Self::PortMismatch { .. }
            | Self::Reparented { .. }
            | Self::InContainer { .. }
            | Self::TracedBy { .. }
            | Self::ServerGone { .. } => self.fmt_table(f),
        }
    }
}

impl FactKind {
    /// The wording of an HTTP session's life, from the log and `/health`.
    fn fmt_http(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HttpInitialized => f.write_str("HTTP session initialized"),
            Self::HttpClosed => f.write_str("HTTP session closed"),
            Self::HttpReaped { idle_secs } => match idle_secs {
                Some(s) => write!(f, "reaped as stale after {s} s idle"),
                None => f.write_str("reaped as stale"),
            },
            Self::HttpStreamLost { secs } => match secs {
                Some(s) => write!(f, "reaped: its SSE stream closed {s} s before"),
                None => f.write_str("reaped: its SSE stream closed"),
            },
            Self::ListedByHealth => f.write_str("listed by /health"),
            Self::HttpHolderUnknown => f.write_str(
                "shown under its server: the server's /health does not say which HTTP session holds it (no details[]; releases after 0.24.2 say)",
            ),
            Self::EndedWithHttp { http_session, how } => {
                write!(f, "ended with HTTP session {} ({how})", short(http_session))
            }
            _ => Ok(()),
        }
    }

    /// The wording of the startup janitor's lines.
    fn fmt_janitor(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::StartupReaped { count, what } => {
                write!(f, "startup janitor reaped {count} {what}")
            }
            Self::ReaperKilledWorker { pid, reaper } => match reaper {
                OrphanReaper::Proxy => write!(f, "the startup janitor killed orphan worker {pid}"),
                OrphanReaper::Jvm => write!(f, "the startup janitor killed orphan JVM {pid}"),
            },
            Self::JanitorSwept { runs } => write!(
                f,
                "the startup janitor removed {runs} stale session run folder(s)"
            ),
            Self::JanitorFailed { said } => write!(f, "the startup janitor reaped nothing: {said}"),
            _ => Ok(()),
        }
    }

    /// The wording of what the process table and the sockets say.
    fn fmt_table(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ServerMode { pid, mode } => write!(f, "pid {pid} in {mode} mode"),
            Self::Listening { port } => write!(f, "listening on port {port}"),
            Self::NotListening => f.write_str("no listening socket found"),
            Self::PortMismatch { argv, listening } => {
                let argv = argv.map_or("(none)".to_owned(), |p| p.to_string());
                let l: Vec<String> = listening.iter().map(u16::to_string).collect();
                write!(
                    f,
                    "argv port {argv} not listening; listening on {}",
                    l.join(", ")
                )
            }
            Self::Reparented { from, to } => {
                write!(f, "reparented: its parent was {from}, now {to}")
            }
            Self::InContainer {
                container,
                inner_pid,
            } => write!(f, "in container {container}: pid {inner_pid} there"),
            Self::TracedBy { pid } => write!(f, "traced (ptrace) by pid {pid}"),
            Self::ServerGone { pid } => write!(
                f,
                "no live mcp-debugger server with pid {pid} started before these processes"
            ),
            // Only the variants above are sent here by `Display`.
            _ => Ok(()),
        }
    }
}

/// A fact: what, where from, when. `text` is `what`'s one wording, kept for readers of the
/// JSON; rules never read it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Fact {
    /// What is known (`noted` for facts of older snapshots, known by their text only).
    #[serde(default)]
    pub what: FactKind,
    /// It in words (`what`'s `Display`).
    pub text: String,
    /// Where from.
    pub source: FactSource,
    /// When it happened, if the source says.
    pub at: Option<DateTime<Utc>>,
}

impl Fact {
    /// A fact with its wording.
    pub fn new(what: FactKind, source: FactSource, at: Option<DateTime<Utc>>) -> Self {
        Self {
            text: what.to_string(),
            what,
            source,
            at,
        }
    }

    /// A fact read off the process table now.
    pub fn table(what: FactKind) -> Self {
        Self::new(what, FactSource::ProcessTable, None)
    }
}

/// What a log event is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// An HTTP session.
    Http(String),
    /// A debug session.
    Debug(String),
    /// The server itself.
    Server,
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Http(id) => write!(f, "HTTP session {}", short(id)),
            Self::Debug(id) => write!(f, "session {}", short(id)),
            Self::Server => f.write_str("server"),
        }
    }
}

/// A log event as a fact about its subject: the one translation from a log line to words.
/// `None` for lines that only tie other lines together (`Stopping proxy for session …`) and for
/// session-less lines whose session line order could not recover.
pub fn from_log(ev: &LogEvent) -> Option<(Subject, Fact)> {
    let source = FactSource::Log {
        file: ev.file.clone(),
        line: ev.line,
    };
    let (subject, what) = http_fact(&ev.kind)
        .or_else(|| session_fact(&ev.kind))
        .or_else(|| worker_fact(&ev.kind))?;
    Some((subject, Fact::new(what, source, ev.at)))
}

/// HTTP session lines and the server's own.
fn http_fact(kind: &LogEventKind) -> Option<(Subject, FactKind)> {
    use LogEventKind as K;
    let http = |id: &String| Subject::Http(id.clone());
    Some(match kind {
        K::HttpSessionInitialized { http_session } => {
            (http(http_session), FactKind::HttpInitialized)
        }
        K::HttpSessionClosed { http_session } => (http(http_session), FactKind::HttpClosed),
        K::HttpSessionReaped {
            http_session,
            idle_secs,
            ..
        } => (
            http(http_session),
            FactKind::HttpReaped {
                idle_secs: *idle_secs,
            },
        ),
        K::HttpSessionStreamLost {
            http_session, secs, ..
        } => (http(http_session), FactKind::HttpStreamLost { secs: *secs }),
        K::StartupReaped { count, what } => (
            Subject::Server,
            FactKind::StartupReaped {
                count: *count,
                what: what.clone(),
            },
        ),
        K::ClosingAll { active } => (Subject::Server, FactKind::ClosingAll { active: *active }),
        K::JanitorSwept { runs } => (Subject::Server, FactKind::JanitorSwept { runs: *runs }),
        K::JanitorFailed { said } => (
            Subject::Server,
            FactKind::JanitorFailed { said: said.clone() },
        ),
        _ => return None,
    })
}

/// The SessionManager's lines about one debug session.
fn session_fact(kind: &LogEventKind) -> Option<(Subject, FactKind)> {
    use LogEventKind as K;
    let debug = |sid: &String| Subject::Debug(sid.clone());
    Some(match kind {
        K::DebugSessionCreated { session_id, .. } => (debug(session_id), FactKind::SessionCreated),
        K::StateChanged {
            session_id,
            from,
            to,
        } => (
            debug(session_id),
            FactKind::StateChanged {
                from: SessionState::from_log(from),
                to: SessionState::from_log(to),
            },
        ),
        K::SessionStopped { session_id } => (debug(session_id), FactKind::MarkedStopped),
        K::StartFailed { session_id, reason } => (
            debug(session_id),
            FactKind::StartFailed {
                reason: reason.clone(),
            },
        ),
        K::DebugSessionClosing { session_id, .. } => (debug(session_id), FactKind::Closing),
        K::DebugSessionClosed { session_id } => (debug(session_id), FactKind::Closed),
        _ => return None,
    })
}

/// Every stage is one, but of up to 60 connect attempts only the first and every tenth: a
/// worker retrying for half a minute should not fill the timeline.
fn worth_a_fact(stage: &super::Stage) -> bool {
    !matches!(stage, super::Stage::ConnectAttempt { attempt, .. } if *attempt != 1 && attempt % 10 != 0)
}

/// Lines about a session's worker and adapter. Those whose session line order could not
/// recover (and `Stopping proxy…`, which only ties others together) give no fact.
fn worker_fact(kind: &LogEventKind) -> Option<(Subject, FactKind)> {
    use LogEventKind as K;
    let debug = |sid: &String| Subject::Debug(sid.clone());
    Some(match kind {
        K::WorkerFinished {
            session_id: Some(sid),
            said,
        } => (debug(sid), FactKind::WorkerFinished { said: said.clone() }),
        K::ProxySpawned {
            pid,
            session_id: Some(sid),
        } => (debug(sid), FactKind::WorkerSpawned { pid: *pid }),
        K::AdapterSpawned {
            pid,
            session_id: Some(sid),
        } => (debug(sid), FactKind::AdapterSpawned { pid: *pid }),
        K::Stage {
            session_id: Some(sid),
            stage,
        } if worth_a_fact(stage) => (
            debug(sid),
            FactKind::Stage {
                stage: stage.clone(),
            },
        ),
        _ => return exit_fact(kind),
    })
}

/// Lines about a session's worker ending.
fn exit_fact(kind: &LogEventKind) -> Option<(Subject, FactKind)> {
    use LogEventKind as K;
    let debug = |sid: &String| Subject::Debug(sid.clone());
    let how = |code: &Option<i32>, signal: &Option<String>| ExitHow {
        code: *code,
        signal: signal.clone(),
    };
    Some(match kind {
        K::ProxyForceKilled {
            session_id: Some(sid),
        } => (debug(sid), FactKind::WorkerForceKilled),
        K::ProxyExited {
            code,
            signal,
            session_id: Some(sid),
        } => (
            debug(sid),
            FactKind::WorkerExited {
                how: how(code, signal),
            },
        ),
        // `expected=true`: the server stopped it itself.
        K::WorkerExited {
            session_id,
            code,
            signal,
            expected: Some(true),
        } => (
            debug(session_id),
            FactKind::WorkerExited {
                how: how(code, signal),
            },
        ),
        K::WorkerExited {
            session_id,
            code,
            signal,
            ..
        } => (
            debug(session_id),
            FactKind::WorkerDied {
                how: how(code, signal),
            },
        ),
        K::ReaperKilledOrphan {
            pid,
            session_id,
            reaper,
            ..
        } => (
            session_id.as_ref().map_or(Subject::Server, debug),
            FactKind::ReaperKilledWorker {
                pid: *pid,
                reaper: *reaper,
            },
        ),
        _ => return None,
    })
}
