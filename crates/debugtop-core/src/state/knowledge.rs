//! What the logs have said about each server, folded event by event and kept across ticks: its
//! HTTP sessions and debug sessions with their facts, states and ends. Pure: events in, records
//! out; no clock (an event without a time takes the observation's).

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};

use crate::model::{
    from_log, Fact, FactKind, FactSource, HttpEnd, Language, LogEvent, LogEventKind, LogOrigin,
    Observation, Proc, SessionLogs, SessionState, SignOfLife, Stage, StageMark, Subject,
};

/// How long an ended session's record is kept after its end (then forgotten).
pub const RETAIN_ENDED: Duration = Duration::minutes(10);
/// The most session records kept per server (oldest ended ones go first).
pub const MAX_RECORDS: usize = 2048;
/// The most session records kept for all the servers of one user together (of each kind,
/// debug and HTTP): any user can start look-alike servers whose logs name sessions by the
/// thousand, and their records must not grow with the number of servers.
pub const MAX_RECORDS_PER_USER: usize = 4096;
/// The most facts kept per session (the first and the newest).
const MAX_FACTS: usize = 64;

/// An HTTP session, as the logs tell.
#[derive(Debug, Default, Clone)]
pub struct HttpRec {
    /// Facts, oldest first.
    pub facts: Vec<Fact>,
    /// How and when it ended.
    pub ended: Option<(HttpEnd, DateTime<Utc>)>,
}

/// A debug session, as the logs tell.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DebugRec {
    /// Its name.
    pub name: Option<String>,
    /// Its language.
    pub language: Option<Language>,
    /// Last state.
    pub state: Option<SessionState>,
    /// The server's own log created it.
    pub created: bool,
    /// When the server's own log ended it.
    pub ended: Option<DateTime<Utc>>,
    /// The line that ended it.
    pub ended_by: Option<Fact>,
    /// The worker the server spawned for it.
    pub worker_pid: Option<u32>,
    /// The adapter its worker spawned.
    pub adapter_pid: Option<u32>,
    /// The HTTP session that held it, when a line said so (newer servers' reap lines).
    pub http_session: Option<String>,
    /// When and how its worker's own log said it was done.
    pub worker_finished: Option<(DateTime<Utc>, Fact)>,
    /// Facts, oldest first.
    pub facts: Vec<Fact>,
    /// When it entered its last state.
    pub state_at: Option<DateTime<Utc>>,
    /// Its start, stage by stage (one start: a new adapter begins them again).
    pub stages: Vec<StageMark>,
    /// The newest event about it from any log.
    pub last_event: Option<SignOfLife>,
    /// Its worker log's newest line and its DAP trace, as of the last tick that read them.
    pub logs: Option<SessionLogs>,
}

/// The most stages kept per session (connect attempts replace one another).
const MAX_STAGES: usize = 32;

/// One server's records.
#[derive(Debug, Default, Clone)]
pub struct ServerKnowledge {
    /// When the server started (records of a previous holder of the pid are dropped).
    pub start: Option<DateTime<Utc>>,
    /// HTTP sessions by id.
    pub http: BTreeMap<String, HttpRec>,
    /// Debug sessions by id.
    pub debug: BTreeMap<String, DebugRec>,
    /// Records dropped because its user's servers together held more than
    /// [`MAX_RECORDS_PER_USER`] (since it started).
    pub dropped_over_user_cap: u64,
    /// What its startup janitor said it killed (newer servers), newest last, bounded.
    pub janitor_kills: Vec<JanitorKill>,
}

/// The most janitor kills kept per server (a start reaps what earlier runs left: a handful).
const MAX_JANITOR_KILLS: usize = 256;

/// One kill the server's startup janitor logged: the process it names is expected gone.
#[derive(Debug, Clone, PartialEq)]
pub struct JanitorKill {
    /// The pid it names (the server's own pid namespace's).
    pub pid: u32,
    /// When the line says the kill was done.
    pub at: Option<DateTime<Utc>>,
    /// The line, as a fact (its text and where it was read).
    pub said: Fact,
}

/// Every server's records.
#[derive(Debug, Default, Clone)]
pub struct Knowledge {
    servers: BTreeMap<u32, ServerKnowledge>,
}

impl Knowledge {
    /// What is known about the server with this pid (live or gone).
    pub fn server(&self, pid: u32) -> Option<&ServerKnowledge> {
        self.servers.get(&pid)
    }

    /// Folds one observation's log events in; returns them, for the timeline and the update.
    pub fn apply(&mut self, obs: &Observation<()>, procs: &[Proc]) -> Vec<LogEvent> {
        let mut all = Vec::new();
        for s in &obs.servers {
            let start = obs
                .table
                .servers
                .iter()
                .find(|x| x.pid == s.pid)
                .map(|x| x.start_time);
            let k = self.servers.entry(s.pid).or_default();
            if start.is_some() && k.start.is_some() && k.start != start {
                *k = ServerKnowledge::default();
            }
            k.start = k.start.or(start);
            for ev in &s.log_events {
                k.apply(ev, obs.at);
            }
            for logs in &s.sessions {
                if let Some(r) = k.debug.get_mut(&logs.session_id) {
                    r.logs = Some(logs.clone());
                }
            }
            k.prune(obs.at);
            all.extend(s.log_events.iter().cloned());
        }
        self.forget_gone(obs, procs);
        self.cap_per_user(procs);
        all
    }

    /// Keeps at most [`MAX_RECORDS_PER_USER`] debug and HTTP records for the servers of each
    /// user together, dropping the earliest-ended first (as [`MAX_RECORDS`] does per server).
    fn cap_per_user(&mut self, procs: &[Proc]) {
        let uid_of = |pid: u32| procs.iter().find(|p| p.pid == pid).and_then(|p| p.uid);
        let mut by_user: BTreeMap<Option<u32>, Vec<u32>> = BTreeMap::new();
        for pid in self.servers.keys() {
            by_user.entry(uid_of(*pid)).or_default().push(*pid);
        }
        for pids in by_user.values().filter(|p| p.len() > 1) {
            let debug: usize = pids
                .iter()
                .filter_map(|p| self.servers.get(p))
                .map(|k| k.debug.len())
                .sum();
            let http: usize = pids
                .iter()
                .filter_map(|p| self.servers.get(p))
                .map(|k| k.http.len())
                .sum();
            if debug > MAX_RECORDS_PER_USER {
                self.drop_earliest(
                    pids,
                    debug - MAX_RECORDS_PER_USER,
                    |k| {
                        k.debug
                            .iter()
                            .map(|(id, r)| (r.ended, id.clone()))
                            .collect()
                    },
                    |k, id| {
                        k.debug.remove(id);
                    },
                );
            }
            if http > MAX_RECORDS_PER_USER {
                self.drop_earliest(
                    pids,
                    http - MAX_RECORDS_PER_USER,
                    |k| {
                        k.http
                            .iter()
                            .map(|(id, r)| (r.ended.map(|(_, at)| at), id.clone()))
                            .collect()
                    },
                    |k, id| {
                        k.http.remove(id);
                    },
                );
            }
        }
    }

    /// Drops `n` records among `servers`' (listed by `records`: when each ended, its id), the
    /// earliest-ended first, live ones last.
    fn drop_earliest(
        &mut self,
        servers: &[u32],
        n: usize,
        records: impl Fn(&ServerKnowledge) -> Vec<(Option<DateTime<Utc>>, String)>,
        remove: impl Fn(&mut ServerKnowledge, &str),
    ) {
        let mut all: Vec<(Option<DateTime<Utc>>, u32, String)> = servers
            .iter()
            .filter_map(|pid| self.servers.get(pid).map(|k| (pid, k)))
            .flat_map(|(pid, k)| records(k).into_iter().map(move |(e, id)| (e, *pid, id)))
            .collect();
        all.sort_by_key(|(e, pid, _)| (e.is_none(), *e, *pid));
        for (_, pid, id) in all.into_iter().take(n) {
            if let Some(k) = self.servers.get_mut(&pid) {
                remove(k, &id);
                k.dropped_over_user_cap += 1;
            }
        }
    }

    /// Drops servers that are gone and left nothing behind.
    fn forget_gone(&mut self, obs: &Observation<()>, procs: &[Proc]) {
        let live: Vec<u32> = obs.table.servers.iter().map(|s| s.pid).collect();
        let referenced: Vec<u32> = procs.iter().filter_map(|p| p.server_pid).collect();
        self.servers
            .retain(|pid, _| live.contains(pid) || referenced.contains(pid));
    }
}

impl ServerKnowledge {
    /// Applies one log event.
    pub fn apply(&mut self, ev: &LogEvent, now: DateTime<Utc>) {
        let at = ev.at.unwrap_or(now);
        if let Some((subject, fact)) = from_log(ev) {
            match subject {
                Subject::Http(id) => self.http_fact(id, fact, at),
                Subject::Debug(id) => self.debug_fact(id, fact, ev, at),
                Subject::Server => {}
            }
        }
        // What only the structured fields carry: the name and language of a new session, and
        // the debug sessions a reaped HTTP session held.
        match &ev.kind {
            LogEventKind::DebugSessionCreated {
                session_id,
                name,
                language,
            } => {
                let r = self.debug.entry(session_id.clone()).or_default();
                r.name = r.name.take().or_else(|| name.clone());
                r.language = r
                    .language
                    .or_else(|| language.as_deref().and_then(Language::from_server_name));
            }
            LogEventKind::HttpSessionReaped {
                http_session,
                holding,
                ..
            } => self.ended_with_http(http_session, HttpEnd::Reaped, holding, ev, at),
            LogEventKind::HttpSessionStreamLost {
                http_session,
                holding,
                ..
            } => self.ended_with_http(http_session, HttpEnd::StreamLost, holding, ev, at),
            LogEventKind::ReaperKilledOrphan { pid, .. } if ev.origin == LogOrigin::Server => {
                self.janitor_killed(*pid, ev);
            }
            LogEventKind::Stage {
                session_id: Some(sid),
                stage,
            } => self.stage(sid, stage.clone(), ev),
            LogEventKind::AdapterSpawned {
                pid,
                session_id: Some(sid),
            } => {
                // A new adapter is a new start.
                let r = self.debug.entry(sid.clone()).or_default();
                r.stages.clear();
                self.stage(sid, Stage::AdapterSpawned { pid: *pid }, ev);
            }
            _ => {}
        }
    }

    /// The startup janitor's word that it killed `pid`.
    fn janitor_killed(&mut self, pid: u32, ev: &LogEvent) {
        let Some((_, said)) = from_log(ev) else {
            return;
        };
        self.janitor_kills.push(JanitorKill {
            pid,
            at: ev.at,
            said,
        });
        if self.janitor_kills.len() > MAX_JANITOR_KILLS {
            self.janitor_kills.remove(0);
        }
    }

    /// One step of a session's start; a connect attempt replaces the previous one unless that
    /// was the first (the strip shows where the attempts began and where they are).
    fn stage(&mut self, sid: &str, stage: Stage, ev: &LogEvent) {
        let r = self.debug.entry(sid.to_owned()).or_default();
        r.last_event = sign_of(ev, || format!("start: {stage}")).or(r.last_event.take());
        let mark = StageMark::new(stage, ev.at, ev.file.clone(), ev.line);
        let retry = matches!(mark.stage, Stage::ConnectAttempt { attempt, .. } if attempt > 2);
        let full = r.stages.len() >= MAX_STAGES;
        match r.stages.last_mut() {
            Some(last)
                if retry
                    && matches!(last.stage, Stage::ConnectAttempt { attempt, .. } if attempt > 1) =>
            {
                *last = mark;
            }
            _ if !full => r.stages.push(mark),
            _ => {}
        }
    }

    /// The server's own reap line names the debug sessions the HTTP session held: they end
    /// with it (the line is their end's witness).
    fn ended_with_http(
        &mut self,
        http: &str,
        how: HttpEnd,
        held: &[String],
        ev: &LogEvent,
        at: DateTime<Utc>,
    ) {
        if ev.origin != LogOrigin::Server {
            return;
        }
        for sid in held {
            let fact = Fact::new(
                FactKind::EndedWithHttp {
                    http_session: http.to_owned(),
                    how,
                },
                FactSource::Log {
                    file: ev.file.clone(),
                    line: ev.line,
                },
                ev.at,
            );
            let r = self.debug.entry(sid.clone()).or_default();
            r.http_session = Some(http.to_owned());
            if r.ended.is_none() {
                r.ended = Some(at);
                r.ended_by = Some(fact.clone());
            }
            push_bounded(&mut r.facts, fact);
        }
    }

    fn http_fact(&mut self, id: String, fact: Fact, at: DateTime<Utc>) {
        let r = self.http.entry(id).or_default();
        match fact.what {
            FactKind::HttpReaped { .. } => r.ended = Some((HttpEnd::Reaped, at)),
            FactKind::HttpStreamLost { .. } => r.ended = Some((HttpEnd::StreamLost, at)),
            FactKind::HttpClosed if r.ended.is_none() => r.ended = Some((HttpEnd::Closed, at)),
            _ => {}
        }
        push_bounded(&mut r.facts, fact);
    }

    fn debug_fact(&mut self, id: String, fact: Fact, ev: &LogEvent, at: DateTime<Utc>) {
        let server_said = ev.origin == LogOrigin::Server;
        let r = self.debug.entry(id).or_default();
        if matches!(fact.what, FactKind::Stage { .. }) {
            // Stages have their own list (and their own sign of life); the facts keep what
            // the tree shows.
            return;
        }
        r.last_event = sign_of(ev, || fact.text.clone()).or(r.last_event.take());
        match &fact.what {
            FactKind::SessionCreated if server_said => {
                r.created = true;
                if r.state.is_none() {
                    r.state = Some(SessionState::Created);
                    r.state_at = Some(at);
                }
            }
            FactKind::SessionCreated => {}
            // The session's state is the server's to say: a worker's log is written by the
            // worker's user, and a planted one must not make a session look stuck.
            FactKind::StateChanged { to, .. } if server_said => {
                if r.state != Some(*to) {
                    r.state_at = Some(at);
                }
                r.state = Some(*to);
            }
            FactKind::MarkedStopped | FactKind::Closed | FactKind::StartFailed { .. }
                if server_said && r.ended.is_none() =>
            {
                r.ended = Some(at);
                r.ended_by = Some(fact.clone());
            }
            // A failed session started again is live again.
            FactKind::WorkerSpawned { pid } => {
                if r.ended_by
                    .as_ref()
                    .is_some_and(|f| matches!(f.what, FactKind::StartFailed { .. }))
                {
                    r.ended = None;
                    r.ended_by = None;
                }
                r.worker_pid = Some(*pid);
            }
            FactKind::AdapterSpawned { pid } => r.adapter_pid = Some(*pid),
            FactKind::WorkerFinished { .. } if r.worker_finished.is_none() => {
                r.worker_finished = Some((at, fact.clone()));
            }
            _ => {}
        }
        // A session's first fact ("created") is its birth; don't repeat it.
        if !(matches!(fact.what, FactKind::SessionCreated)
            && r.facts.iter().any(|f| f.what == FactKind::SessionCreated))
        {
            push_bounded(&mut r.facts, fact);
        }
    }

    /// Forgets ended sessions past the retention window, and the oldest ended ones past the
    /// cap; records of live sessions are kept.
    fn prune(&mut self, now: DateTime<Utc>) {
        self.debug
            .retain(|_, r| r.ended.is_none_or(|at| now - at < RETAIN_ENDED));
        self.http
            .retain(|_, r| r.ended.is_none_or(|(_, at)| now - at < RETAIN_ENDED));
        cap(&mut self.debug, |r| r.ended);
        cap(&mut self.http, |r| r.ended.map(|(_, at)| at));
    }
}

/// Keeps at most [`MAX_RECORDS`], dropping the earliest-ended first (never a live one unless
/// only live ones are left).
fn cap<R>(map: &mut BTreeMap<String, R>, ended: impl Fn(&R) -> Option<DateTime<Utc>>) {
    if map.len() <= MAX_RECORDS {
        return;
    }
    let mut order: Vec<(Option<DateTime<Utc>>, String)> =
        map.iter().map(|(k, r)| (ended(r), k.clone())).collect();
    // Ended (Some) before live (None), earliest first.
    order.sort_by_key(|(e, _)| (e.is_none(), *e));
    for (_, k) in order.into_iter().take(map.len() - MAX_RECORDS) {
        map.remove(&k);
    }
}

/// An event as a session's sign of life, when it carries a time.
fn sign_of(ev: &LogEvent, text: impl FnOnce() -> String) -> Option<SignOfLife> {
    Some(SignOfLife {
        at: ev.at?,
        file: ev.file.clone(),
        line: ev.line,
        text: text(),
    })
}

fn push_bounded(facts: &mut Vec<Fact>, fact: Fact) {
    facts.push(fact);
    if facts.len() > MAX_FACTS {
        facts.drain(1..facts.len() - (MAX_FACTS - 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LogEventKind as K;

    fn ev(line: u64, origin: LogOrigin, kind: K) -> LogEvent {
        LogEvent {
            at: DateTime::from_timestamp(1_800_000_000 + line as i64, 0),
            file: "/l/server.log".into(),
            origin,
            line,
            kind,
        }
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_500, 0).unwrap_or_default()
    }

    #[test]
    fn session_stopped_line_cites_itself_as_the_end() {
        let mut k = ServerKnowledge::default();
        let created = K::DebugSessionCreated {
            session_id: "s-1".into(),
            name: Some("n".into()),
            language: Some("python".into()),
        };
        k.apply(&ev(1, LogOrigin::Server, created), now());
        let stopped = K::SessionStopped {
            session_id: "s-1".into(),
        };
        k.apply(&ev(212, LogOrigin::Server, stopped), now());
        let closed = K::DebugSessionClosed {
            session_id: "s-1".into(),
        };
        k.apply(&ev(213, LogOrigin::Server, closed), now());
        let r = &k.debug["s-1"];
        let by = r.ended_by.as_ref().expect("ended_by recorded");
        assert_eq!(
            by.source,
            FactSource::Log {
                file: "/l/server.log".into(),
                line: 212
            }
        );
        assert_eq!(by.what, FactKind::MarkedStopped);
        assert_eq!(by.source.to_string(), "server.log:212");
        assert_eq!(r.language, Some(Language::Python));
        assert!(r.created);
    }

    #[test]
    fn a_proxy_log_neither_creates_nor_ends_a_session_for_the_server() {
        let mut k = ServerKnowledge::default();
        let adapter = K::AdapterSpawned {
            pid: 42,
            session_id: Some("s-2".into()),
        };
        k.apply(&ev(1, LogOrigin::Proxy, adapter), now());
        let r = &k.debug["s-2"];
        assert!(!r.created, "the worker's own log is not the server's word");
        assert_eq!(r.adapter_pid, Some(42));
        let stopped = K::SessionStopped {
            session_id: "s-2".into(),
        };
        k.apply(&ev(2, LogOrigin::Proxy, stopped), now());
        assert!(k.debug["s-2"].ended.is_none());
        // Nor gives it a state: a planted `State change` line made a session look stuck.
        let changed = || K::StateChanged {
            session_id: "s-2".into(),
            from: "created".into(),
            to: "initializing".into(),
        };
        k.apply(&ev(3, LogOrigin::Proxy, changed()), now());
        assert_eq!(k.debug["s-2"].state, None);
        k.apply(&ev(4, LogOrigin::Server, changed()), now());
        assert_eq!(k.debug["s-2"].state, Some(SessionState::Initializing));
    }

    #[test]
    fn http_session_reaped_is_ended_as_reaped() {
        let mut k = ServerKnowledge::default();
        for (line, kind) in [
            (
                1,
                K::HttpSessionInitialized {
                    http_session: "h-1".into(),
                },
            ),
            (
                2,
                K::HttpSessionReaped {
                    http_session: "h-1".into(),
                    idle_secs: Some(41),
                    holding: Vec::new(),
                },
            ),
            (
                3,
                K::HttpSessionClosed {
                    http_session: "h-1".into(),
                },
            ),
        ] {
            k.apply(&ev(line, LogOrigin::Server, kind), now());
        }
        assert_eq!(
            k.http["h-1"].ended.map(|(how, _)| how),
            Some(HttpEnd::Reaped)
        );
        assert_eq!(k.http["h-1"].facts.len(), 3);
    }

    #[test]
    fn ended_records_are_forgotten_after_the_window_and_capped() {
        let mut k = ServerKnowledge::default();
        for i in 0..(MAX_RECORDS + 10) {
            let sid = format!("s-{i}");
            let created = K::DebugSessionCreated {
                session_id: sid.clone(),
                name: None,
                language: None,
            };
            k.apply(&ev(i as u64, LogOrigin::Server, created), now());
            if i % 2 == 0 {
                let closed = K::DebugSessionClosed { session_id: sid };
                k.apply(&ev(i as u64, LogOrigin::Server, closed), now());
            }
        }
        k.prune(now());
        assert_eq!(k.debug.len(), MAX_RECORDS);
        assert!(k.debug.contains_key("s-1"), "live sessions are kept");
        k.prune(now() + Duration::hours(2));
        assert!(k.debug.values().all(|r| r.ended.is_none()));
    }
}
