//! Sessions that stalled: a start waiting on one step past a threshold (the adapter never
//! answered `initialize`, the worker keeps failing to connect), a DAP request with no answer,
//! or a running session whose debuggee is stopped by a signal or stuck in D. Never a session
//! paused at a breakpoint: that is the user's choice, however long.

use chrono::{DateTime, Duration, Utc};

use super::{secs, Candidate, Ctx};
use crate::model::{
    short, DebugSession, Finding, FindingId, FindingKind, KillPlan, PendingRequest, ProcState,
    SessionProgress, SessionState, Severity, Stage, StageMark,
};

/// When a session counts as stuck.
#[derive(Debug, Clone, Copy)]
pub struct StuckThresholds {
    /// A start (`created` with a worker, `initializing`) taking longer than this.
    pub start: std::time::Duration,
    /// A DAP request without an answer for longer than this.
    pub request: std::time::Duration,
    /// A running session's debuggee stopped by a signal, or in D, for longer than this.
    pub debuggee: std::time::Duration,
    /// The server's own start timeout (0.24.2: 30 s): past it the server would have failed
    /// the start itself, and the finding is critical.
    pub server_timeout: std::time::Duration,
}

impl Default for StuckThresholds {
    fn default() -> Self {
        let after = crate::judging::DEFAULT_STUCK_AFTER;
        Self {
            start: after,
            request: after,
            debuggee: after,
            server_timeout: std::time::Duration::from_secs(30),
        }
    }
}

impl StuckThresholds {
    /// The start, request and debuggee thresholds at `after`; the server's own timeout stays
    /// what the server uses.
    pub fn after(self, after: std::time::Duration) -> Self {
        Self {
            start: after,
            request: after,
            debuggee: after,
            ..self
        }
    }
}

fn chrono(d: std::time::Duration) -> Duration {
    Duration::from_std(d).unwrap_or_else(|_| Duration::seconds(10))
}

/// Every live session of a live server that is stuck, with the step it is stuck on.
pub fn stuck_session(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let t = ctx.config.stuck;
    let mut out = Vec::new();
    for d in &ctx.world.debug_sessions {
        let Some(server) = d.server_pid.filter(|s| ctx.world.server(*s).is_some()) else {
            continue;
        };
        if d.ended || d.worker_pid.is_none() {
            continue;
        }
        let claim = adapter_claim(ctx, d);
        let adapter = claim.live();
        let stall = starting(d, adapter, ctx.now(), t)
            .or_else(|| waiting(d, ctx.now(), t))
            .or_else(|| debuggee(d, t));
        if let Some(mut s) = stall {
            if let AdapterClaim::Unconfirmed(words) = claim {
                s.evidence.push(words);
            }
            out.push(candidate(ctx, d, server, s));
        }
    }
    out
}

/// What the process table says of the adapter pid a session's logs name. The pid is written
/// by the worker, in a file its user owns: a claim, confirmed only by the table.
enum AdapterClaim {
    /// No adapter named, or the named process is gone (the logged pid outlives it).
    None,
    /// A live process under the session's worker, of the worker's user.
    Confirmed(u32),
    /// A live process the table does not tie to the worker: in the evidence, never planned.
    Unconfirmed(String),
}

impl AdapterClaim {
    fn live(&self) -> Option<u32> {
        match self {
            Self::Confirmed(pid) => Some(*pid),
            _ => None,
        }
    }
}

/// The session's adapter if it is alive now and confirmed by the table: a descendant of the
/// session's live worker (the worker spawns it), of the worker's user, not a server.
fn adapter_claim(ctx: &Ctx<'_>, d: &DebugSession) -> AdapterClaim {
    let Some(pid) = d.adapter_pid else {
        return AdapterClaim::None;
    };
    let Some(a) = ctx.world.proc(pid).filter(|p| p.sample.state.is_alive()) else {
        return AdapterClaim::None;
    };
    let worker = d.worker_pid.and_then(|w| ctx.world.proc(w));
    // The planner's own test of what the table ties to a subject: the same rule a plan obeys.
    let why = match worker {
        Some(w) => ctx.planner.untied(w, pid),
        None => Some("no live worker".to_owned()),
    };
    match why {
        None => AdapterClaim::Confirmed(pid),
        Some(why) => AdapterClaim::Unconfirmed(format!(
            "the worker's log names pid {pid} as its adapter; {pid} ({}) is not under this \
             worker{} ({why}): an unconfirmed claim, not planned",
            a.role,
            worker.map(|w| format!(" {}", w.pid)).unwrap_or_default()
        )),
    }
}

/// What a session is stuck on.
struct Stall {
    severity: Severity,
    evidence: Vec<String>,
    action: String,
    /// The adapter chain to kill: the right tool when a live adapter will never answer.
    kill: Option<u32>,
    /// How it is confirmed.
    timing: Timing,
}

/// How long a stall has held.
enum Timing {
    /// Since this time, which the logs give: the threshold is already measured.
    Since(DateTime<Utc>),
    /// It must hold this long from when it is first seen (a process state carries no time of
    /// its own).
    Held(Duration),
}

/// A start that has not reached its first stop or run past the threshold.
fn starting(
    d: &DebugSession,
    adapter: Option<u32>,
    now: DateTime<Utc>,
    t: StuckThresholds,
) -> Option<Stall> {
    let state = d.state?;
    if !state.is_starting() {
        return None;
    }
    let p = &d.progress;
    // Only a start its worker's log shows under way and not yet through: without the worker's
    // lines a state the server never updated proves nothing.
    let first = p.stages.first()?;
    let through = p.is_through();
    // `initializing` starts the server's own clock; a session `created` long ago and started
    // only now is timed from its worker's first line.
    let began = match state {
        SessionState::Initializing => p.state_since.or(first.at),
        _ => p.state_since.into_iter().chain(first.at).max(),
    }?;
    let age = now - began;
    if through || age < chrono(t.start) {
        return None;
    }
    let severity = if age >= chrono(t.server_timeout) {
        Severity::Critical
    } else {
        Severity::Warning
    };
    let mut evidence = vec![format!(
        "session {} ({state}) has been starting for {}{}",
        short(&d.id),
        secs(age),
        p.state_since
            .map(|at| format!(", {state} since {}", clock(at)))
            .unwrap_or_default()
    )];
    evidence.extend(step(p, adapter, now));
    evidence.extend(pending(p, now, Duration::zero()));
    evidence.extend(sign(p, now));
    Some(Stall {
        severity,
        evidence,
        action: if adapter.is_some() {
            "kill the adapter chain (the worker then fails the start and the server cleans up), then start the session again; if it stalls again, check the adapter or interpreter it was given".to_owned()
        } else {
            format!(
                "close the session (close_debug_session {}) and start it again",
                d.id
            )
        },
        kill: adapter,
        timing: Timing::Since(began),
    })
}

/// Where the start stands, in words: the newest step with its time and line, and whether the
/// adapter is alive.
fn step(p: &SessionProgress, adapter: Option<u32>, now: DateTime<Utc>) -> Option<String> {
    let latest = p.latest()?;
    let adapter = match adapter {
        Some(pid) => format!("adapter {pid} alive"),
        None => "no live adapter".to_owned(),
    };
    let at = |m: &StageMark| m.at.map(clock).unwrap_or_else(|| "?".into());
    let src = |m: &StageMark| m.source().to_string();
    Some(match &latest.stage {
        Stage::Sent { request } => {
            let connected = p
                .last_of(|s| matches!(s, Stage::Connected))
                .map(|m| format!(", connected at {} ({})", at(m), src(m)))
                .unwrap_or_default();
            let age = latest
                .at
                .map(|a| format!(" for {}", secs(now - a)))
                .unwrap_or_default();
            format!(
                "{request} request pending{age}; {adapter}{connected}; sent at {} ({})",
                at(latest),
                src(latest)
            )
        }
        Stage::ConnectAttempt {
            attempt,
            of,
            address,
        } => {
            let first = p
                .last_of(|s| matches!(s, Stage::ConnectAttempt { attempt: 1, .. }))
                .map(|m| format!(", the first at {}", at(m)))
                .unwrap_or_default();
            format!("connect attempt {attempt}/{of} to {address} at {} ({}){first}: nothing accepts the connection; {adapter}", at(latest), src(latest))
        }
        Stage::ConnectFailed { attempts } => format!(
            "the worker gave up connecting after {attempts} attempts at {} ({}); {adapter}",
            at(latest),
            src(latest)
        ),
        other => format!(
            "last step: {other} at {} ({}); {adapter}",
            at(latest),
            src(latest)
        ),
    })
}

/// A request with no answer past the threshold, in a session that is not starting.
fn waiting(d: &DebugSession, now: DateTime<Utc>, t: StuckThresholds) -> Option<Stall> {
    let p = &d.progress;
    let oldest = p.trace.as_ref()?.pending.first()?;
    if now - oldest.sent_at < chrono(t.request) {
        return None;
    }
    let mut evidence = pending(p, now, chrono(t.request));
    evidence.extend(sign(p, now));
    Some(Stall {
        severity: Severity::Warning,
        evidence,
        action: format!(
            "the adapter is not answering: close the session (close_debug_session {}); kill the adapter chain if closing hangs",
            d.id
        ),
        kill: None,
        timing: Timing::Since(oldest.sent_at),
    })
}

/// The requests of the trace waiting longer than `over`, in words.
fn pending(p: &SessionProgress, now: DateTime<Utc>, over: Duration) -> Vec<String> {
    let Some(trace) = &p.trace else {
        return Vec::new();
    };
    let words = |r: &PendingRequest| {
        format!(
            "DAP request {} (seq {}) sent at {} by the {}, unanswered for {} ({})",
            r.command,
            r.seq,
            clock(r.sent_at),
            r.asker,
            secs(now - r.sent_at),
            file_name(&trace.file)
        )
    };
    trace
        .pending
        .iter()
        .filter(|r| now - r.sent_at >= over)
        .take(5)
        .map(words)
        .collect()
}

/// The newest line about the session.
fn sign(p: &SessionProgress, now: DateTime<Utc>) -> Option<String> {
    let s = p.last_sign.as_ref()?;
    Some(format!(
        "last sign of life {} ago: \"{}\" ({})",
        secs(now - s.at),
        s.text,
        s.source()
    ))
}

/// A running session whose debuggee is stopped by a signal (not by its debugger) or in D.
fn debuggee(d: &DebugSession, t: StuckThresholds) -> Option<Stall> {
    if d.state != Some(SessionState::Running) {
        return None;
    }
    let g = d.progress.debuggee.as_ref()?;
    let (what, action) = match g.state {
        ProcState::Stopped if g.tracer_pid.is_none() => (
            "stopped by a signal (state T), not by its debugger",
            format!("resume it with SIGCONT (kill -CONT {})", g.pid),
        ),
        ProcState::DiskSleep => (
            "in uninterruptible sleep (state D): blocked in the kernel, on a disk or a network mount",
            "wait for the I/O or fix what it waits on; a kill does not take effect until it leaves D".to_owned(),
        ),
        _ => return None,
    };
    Some(Stall {
        severity: Severity::Warning,
        evidence: vec![format!(
            "session {} is running but its debuggee {} is {what}",
            short(&d.id),
            g.pid
        )],
        action,
        kill: None,
        timing: Timing::Held(chrono(t.debuggee)),
    })
}

fn candidate(ctx: &Ctx<'_>, d: &DebugSession, server: u32, s: Stall) -> Candidate {
    let worker = d.worker_pid.and_then(|w| ctx.world.proc(w));
    let plan: Option<KillPlan> = s.kill.zip(worker).map(|(a, w)| ctx.plan(w, &[a], true));
    let f = Finding {
        id: FindingId::of(FindingKind::StuckSession, &d.id),
        kind: FindingKind::StuckSession,
        severity: s.severity,
        pids: plan
            .as_ref()
            .map(|p| p.targets.iter().map(|t| t.pid).collect())
            .unwrap_or_default(),
        session_id: Some(d.id.clone()),
        server_pid: Some(server),
        evidence: s.evidence,
        since: ctx.now(),
        confirmed_at: None,
        suggested_action: s.action,
        plan,
    };
    match s.timing {
        Timing::Since(at) => Candidate::dated(f, at),
        Timing::Held(hold) => Candidate::held(f, hold),
    }
}

fn clock(at: DateTime<Utc>) -> String {
    at.format("%H:%M:%S%.3f").to_string()
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
