//! The timeline: what changed, and when. Events come from consecutive samples (processes
//! appearing and exiting — exits timed by pidfd, not by the tick — state changes, sessions
//! appearing and ending, findings raised and cleared) merged in time order with the log events.
//! Memory is bounded: a ring of at most `capacity` events (default 10,000). Processes that just
//! exited are kept as tombs for a while (default 10 s) so a view can show them leaving.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::model::{Proc, ProcState};
use crate::reconcile::{DebugSession, FactSource};
use crate::sources::logs::{LogEvent, LogEventKind};
use crate::verdict::Finding;

/// Default ring size.
pub const DEFAULT_CAPACITY: usize = 10_000;
/// Default time a tomb stays.
pub const DEFAULT_TOMB_TTL: Duration = Duration::from_secs(10);

/// What kind of event.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, TS, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum TimelineKind {
    /// A server-related process appeared.
    ProcessAppeared,
    /// It exited (or became a zombie).
    ProcessExited,
    /// Its scheduler state changed (R/S/T/Z…).
    StateChanged,
    /// A debug session appeared.
    SessionAppeared,
    /// A debug session ended (log) or vanished.
    SessionEnded,
    /// A finding was raised.
    FindingRaised,
    /// A finding cleared.
    FindingCleared,
    /// A line of the server's log.
    Log,
}

/// One event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TimelineEvent {
    /// When.
    pub at: DateTime<Utc>,
    /// What kind.
    pub kind: TimelineKind,
    /// In words.
    pub text: String,
    /// The process, if any.
    pub pid: Option<u32>,
    /// The debug session, if any.
    pub session_id: Option<String>,
    /// The server, if any.
    pub server_pid: Option<u32>,
    /// The finding, for finding events.
    pub finding_id: Option<String>,
    /// Where it was read, for log events.
    pub source: Option<FactSource>,
}

impl TimelineEvent {
    fn new(at: DateTime<Utc>, kind: TimelineKind, text: String) -> Self {
        Self {
            at,
            kind,
            text,
            pid: None,
            session_id: None,
            server_pid: None,
            finding_id: None,
            source: None,
        }
    }
}

#[derive(Debug, Clone)]
struct Seen {
    proc: Proc,
}

/// The timeline state.
#[derive(Debug)]
pub struct Timeline {
    events: VecDeque<TimelineEvent>,
    capacity: usize,
    tomb_ttl: chrono::Duration,
    procs: HashMap<(u32, u64), Seen>,
    sessions: BTreeSet<(Option<u32>, String)>,
    ended: BTreeSet<(Option<u32>, String)>,
    findings: BTreeMap<String, Finding>,
    tombs: Vec<(Proc, DateTime<Utc>)>,
    primed: bool,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY, DEFAULT_TOMB_TTL)
    }
}

impl Timeline {
    /// A timeline keeping at most `capacity` events and tombs for `tomb_ttl`.
    pub fn new(capacity: usize, tomb_ttl: Duration) -> Self {
        Self {
            events: VecDeque::new(),
            capacity: capacity.max(1),
            tomb_ttl: chrono::Duration::from_std(tomb_ttl)
                .unwrap_or_else(|_| chrono::Duration::seconds(10)),
            procs: HashMap::new(),
            sessions: BTreeSet::new(),
            ended: BTreeSet::new(),
            findings: BTreeMap::new(),
            tombs: Vec::new(),
            primed: false,
        }
    }

    /// Number of events held.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Events at or after `since`, oldest first.
    pub fn since(&self, since: DateTime<Utc>) -> Vec<TimelineEvent> {
        let start = self.events.partition_point(|e| e.at < since);
        self.events.iter().skip(start).cloned().collect()
    }

    /// Processes that exited less than the tomb time ago, as they were last seen, with state
    /// `X` and their exit time.
    pub fn tombs(&self) -> Vec<Proc> {
        self.tombs
            .iter()
            .map(|(p, at)| {
                let mut p = p.clone();
                p.state = ProcState::Dead;
                p.exited_at = Some(*at);
                p.cpu_percent = None;
                p
            })
            .collect()
    }

    /// Adds events, keeping time order and the capacity bound.
    pub fn push_all(&mut self, mut batch: Vec<TimelineEvent>) {
        batch.sort_by_key(|e| e.at);
        for e in batch {
            // Most events are newest; log lines may be a little older than the last sample.
            let at = self.events.partition_point(|x| x.at <= e.at);
            if at == self.events.len() {
                self.events.push_back(e);
            } else {
                self.events.insert(at, e);
            }
            while self.events.len() > self.capacity {
                self.events.pop_front();
            }
        }
    }

    /// Compares the live processes of a new sample with the previous one. `exits` are the
    /// pidfd-timed exits seen since. Returns the new events (also kept).
    pub fn observe_procs(
        &mut self,
        now: DateTime<Utc>,
        procs: &[Proc],
        exits: &[((u32, u64), DateTime<Utc>)],
    ) -> Vec<TimelineEvent> {
        let exit_at: HashMap<(u32, u64), DateTime<Utc>> = exits.iter().copied().collect();
        let mut out = Vec::new();
        let mut current = HashMap::new();
        for p in procs {
            let id = (p.pid, p.start_ticks);
            match self.procs.get(&id) {
                None if self.primed => {
                    let mut e = TimelineEvent::new(
                        p.start_time.max(now - chrono::Duration::seconds(5)),
                        TimelineKind::ProcessAppeared,
                        format!("{} {} appeared: {}", p.role.as_str(), p.pid, short_argv(p)),
                    );
                    e.pid = Some(p.pid);
                    e.session_id = p.session_id.clone();
                    e.server_pid = p.server_pid;
                    e.at = e.at.min(now);
                    out.push(e);
                }
                Some(prev) if prev.proc.state != p.state => {
                    let at = if p.state == ProcState::Zombie {
                        exit_at.get(&id).copied().unwrap_or(now)
                    } else {
                        now
                    };
                    let mut e = TimelineEvent::new(
                        at,
                        if p.state == ProcState::Zombie {
                            TimelineKind::ProcessExited
                        } else {
                            TimelineKind::StateChanged
                        },
                        format!(
                            "{} {}: {} → {}",
                            p.role.as_str(),
                            p.pid,
                            prev.proc.state.letter(),
                            p.state.letter()
                        ),
                    );
                    e.pid = Some(p.pid);
                    e.session_id = p.session_id.clone();
                    e.server_pid = p.server_pid;
                    out.push(e);
                }
                _ => {}
            }
            current.insert(id, Seen { proc: p.clone() });
        }
        for (id, gone) in &self.procs {
            if current.contains_key(id) {
                continue;
            }
            let at = exit_at.get(id).copied().unwrap_or(now);
            let p = &gone.proc;
            if p.state != ProcState::Zombie {
                let mut e = TimelineEvent::new(
                    at,
                    TimelineKind::ProcessExited,
                    format!("{} {} exited", p.role.as_str(), p.pid),
                );
                e.pid = Some(p.pid);
                e.session_id = p.session_id.clone();
                e.server_pid = p.server_pid;
                out.push(e);
            }
            self.tombs.push((p.clone(), at));
        }
        self.tombs.retain(|(_, at)| now - *at < self.tomb_ttl);
        self.procs = current;
        self.primed = true;
        self.push_all(out.clone());
        out
    }

    /// Sessions, findings and log lines of a new sample. Returns the new events (also kept).
    pub fn observe_world(
        &mut self,
        now: DateTime<Utc>,
        sessions: &[DebugSession],
        live_session_procs: &BTreeSet<(Option<u32>, String)>,
        findings: &[Finding],
        logs: &[LogEvent],
    ) -> Vec<TimelineEvent> {
        let mut out = Vec::new();
        let mut current = BTreeSet::new();
        for d in sessions {
            let key = (d.server_pid, d.id.clone());
            if d.ended {
                if !self.ended.contains(&key) && self.sessions.contains(&key) {
                    let mut e = TimelineEvent::new(
                        d.ended_at.unwrap_or(now),
                        TimelineKind::SessionEnded,
                        format!("session {} ended", short(&d.id)),
                    );
                    e.session_id = Some(d.id.clone());
                    e.server_pid = d.server_pid;
                    e.source = d.ended_by.as_ref().map(|f| f.source.clone());
                    out.push(e);
                }
                self.ended.insert(key.clone());
                if !live_session_procs.contains(&key) {
                    continue;
                }
            }
            if !self.sessions.contains(&key) && !self.ended.contains(&key) {
                let name = d
                    .name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                let mut e = TimelineEvent::new(
                    now,
                    TimelineKind::SessionAppeared,
                    format!("session {}{name} appeared", short(&d.id)),
                );
                e.session_id = Some(d.id.clone());
                e.server_pid = d.server_pid;
                out.push(e);
            }
            current.insert(key);
        }
        for key in self.sessions.difference(&current) {
            if !self.ended.contains(key) {
                let mut e = TimelineEvent::new(
                    now,
                    TimelineKind::SessionEnded,
                    format!("session {} is gone", short(&key.1)),
                );
                e.session_id = Some(key.1.clone());
                e.server_pid = key.0;
                out.push(e);
            }
        }
        self.sessions.extend(current.iter().cloned());
        self.sessions.retain(|k| current.contains(k));
        // Bound the memory of ended sessions.
        if self.ended.len() > 4096 {
            let drop: Vec<_> = self
                .ended
                .iter()
                .take(self.ended.len() - 4096)
                .cloned()
                .collect();
            for k in drop {
                self.ended.remove(&k);
            }
        }

        let now_ids: BTreeMap<String, &Finding> =
            findings.iter().map(|f| (f.id.clone(), f)).collect();
        for (id, f) in &now_ids {
            if !self.findings.contains_key(id) {
                let mut e = TimelineEvent::new(
                    now,
                    TimelineKind::FindingRaised,
                    format!(
                        "{} raised: {}",
                        f.kind.as_str(),
                        f.evidence.first().cloned().unwrap_or_default()
                    ),
                );
                e.finding_id = Some(id.clone());
                e.pid = f.pids.first().copied();
                e.session_id = f.session_id.clone();
                e.server_pid = f.server_pid;
                out.push(e);
            }
        }
        for (id, f) in &self.findings {
            if !now_ids.contains_key(id) {
                let mut e = TimelineEvent::new(
                    now,
                    TimelineKind::FindingCleared,
                    format!("{} cleared", f.kind.as_str()),
                );
                e.finding_id = Some(id.clone());
                e.pid = f.pids.first().copied();
                e.session_id = f.session_id.clone();
                e.server_pid = f.server_pid;
                out.push(e);
            }
        }
        self.findings = now_ids.into_iter().map(|(k, f)| (k, f.clone())).collect();

        for l in logs {
            let (text, session) = log_text(&l.kind);
            let mut e = TimelineEvent::new(l.at.unwrap_or(now), TimelineKind::Log, text);
            e.session_id = session;
            e.source = Some(FactSource::Log {
                file: l.file.clone(),
                line: l.line,
            });
            out.push(e);
        }
        self.push_all(out.clone());
        out
    }
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn short_argv(p: &Proc) -> String {
    let s = crate::snapshot::redact::redact_argv(&p.argv).join(" ");
    if s.chars().count() > 120 {
        format!("{}…", s.chars().take(120).collect::<String>())
    } else {
        s
    }
}

/// A log event in words, and its session.
pub fn log_text(k: &LogEventKind) -> (String, Option<String>) {
    use LogEventKind as K;
    match k {
        K::HttpSessionInitialized { http_session } => (
            format!("HTTP session {} initialized", short(http_session)),
            None,
        ),
        K::HttpSessionClosed { http_session } => {
            (format!("HTTP session {} closed", short(http_session)), None)
        }
        K::HttpSessionReaped {
            http_session,
            idle_secs,
        } => (
            format!(
                "HTTP session {} reaped as stale{}",
                short(http_session),
                idle_secs
                    .map(|s| format!(" ({s} s idle)"))
                    .unwrap_or_default()
            ),
            None,
        ),
        K::DebugSessionCreated {
            session_id, name, ..
        } => (
            format!(
                "debug session {} created{}",
                short(session_id),
                name.as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ),
            Some(session_id.clone()),
        ),
        K::StateChanged {
            session_id,
            from,
            to,
        } => (
            format!("session {}: {from} → {to}", short(session_id)),
            Some(session_id.clone()),
        ),
        K::SessionStopped { session_id } => (
            format!("session {} marked STOPPED/TERMINATED", short(session_id)),
            Some(session_id.clone()),
        ),
        K::DebugSessionClosing { session_id, .. } => (
            format!("closing session {}", short(session_id)),
            Some(session_id.clone()),
        ),
        K::DebugSessionClosed { session_id } => (
            format!("session {} closed", short(session_id)),
            Some(session_id.clone()),
        ),
        K::ClosingAll { active } => (
            format!("closing all debug sessions ({active} active)"),
            None,
        ),
        K::ProxySpawned { pid, session_id } => {
            (format!("worker {pid} spawned"), session_id.clone())
        }
        K::ProxyStopping { session_id } => (
            format!("stopping the worker of {}", short(session_id)),
            Some(session_id.clone()),
        ),
        K::ProxyForceKilled { session_id } => (
            "worker did not exit in time: force-killed".into(),
            session_id.clone(),
        ),
        K::ProxyExited {
            code,
            signal,
            session_id,
        } => (
            format!(
                "worker exited ({})",
                signal
                    .clone()
                    .or_else(|| code.map(|c| format!("code {c}")))
                    .unwrap_or_else(|| "?".into())
            ),
            session_id.clone(),
        ),
        K::WorkerExited {
            session_id,
            signal,
            code,
            ..
        } => (
            format!(
                "worker of {} died ({})",
                short(session_id),
                signal
                    .clone()
                    .or_else(|| code.map(|c| format!("code {c}")))
                    .unwrap_or_else(|| "?".into())
            ),
            Some(session_id.clone()),
        ),
        K::ReaperKilledOrphan {
            pid, session_id, ..
        } => (
            format!("startup reaper killed orphan worker {pid}"),
            session_id.clone(),
        ),
        K::AdapterSpawned { pid, session_id } => {
            (format!("adapter {pid} spawned"), session_id.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(secs: i64) -> TimelineEvent {
        TimelineEvent::new(
            DateTime::from_timestamp(secs, 0).unwrap_or_default(),
            TimelineKind::Log,
            format!("e{secs}"),
        )
    }

    #[test]
    fn ring_is_bounded_under_100k_events_and_keeps_the_newest() {
        let mut t = Timeline::new(DEFAULT_CAPACITY, DEFAULT_TOMB_TTL);
        for chunk in 0..100 {
            t.push_all((0..1000).map(|i| ev(chunk * 1000 + i)).collect());
            assert!(t.len() <= DEFAULT_CAPACITY);
        }
        assert_eq!(t.len(), DEFAULT_CAPACITY);
        let all = t.since(DateTime::from_timestamp(0, 0).unwrap_or_default());
        assert_eq!(all.first().map(|e| e.text.as_str()), Some("e90000"));
        assert_eq!(all.last().map(|e| e.text.as_str()), Some("e99999"));
    }

    #[test]
    fn late_log_lines_are_merged_in_time_order() {
        let mut t = Timeline::default();
        t.push_all(vec![ev(10), ev(30)]);
        t.push_all(vec![ev(20), ev(5)]);
        let texts: Vec<String> = t
            .since(DateTime::from_timestamp(0, 0).unwrap_or_default())
            .into_iter()
            .map(|e| e.text)
            .collect();
        assert_eq!(texts, ["e5", "e10", "e20", "e30"]);
    }
}
