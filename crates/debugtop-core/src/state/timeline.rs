//! The timeline: what changed, and when. Events come from consecutive steps (processes
//! appearing and exiting — exits timed by the pidfd watcher, not by the tick — state changes,
//! sessions appearing and ending, findings raised and cleared) merged in time order with the log
//! events. Memory is bounded: a ring of at most `capacity` events (default 10,000). The
//! processes that exited are handed back to be kept as tombs (`super::tombs`). Pure: times
//! come from the observation.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use rustc_hash::{FxHashMap, FxHashSet};

use super::world::World;
use crate::model::{
    from_log, short, DebugSession, Exit, FactSource, Finding, FindingId, LogEvent, Proc, ProcId,
    ProcState, TimelineEvent, TimelineKind,
};
use crate::redact::CommandLines;

/// Default ring size.
pub const DEFAULT_CAPACITY: usize = 10_000;
/// The most ended sessions remembered (so an end is reported once).
const MAX_ENDED: usize = 4096;

type SessionKey = (Option<u32>, String);

/// The inputs of the last [`Timeline::observe_world`] that its session and finding events
/// follow from.
#[derive(Debug, Default)]
struct Observed {
    live: Vec<SessionKey>,
    sessions: Vec<Arc<DebugSession>>,
    findings: Vec<Arc<Finding>>,
}

/// The same allocations in the same order.
fn same_arcs<T>(a: &[Arc<T>], b: &[Arc<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| Arc::ptr_eq(x, y))
}

/// The timeline state.
#[derive(Debug)]
pub struct Timeline {
    events: VecDeque<Arc<TimelineEvent>>,
    capacity: usize,
    procs: HashMap<ProcId, Arc<Proc>>,
    /// The sessions seen at the last step, by server (looked up by `&str`, without a copy).
    sessions: FxHashMap<Option<u32>, FxHashSet<String>>,
    ended: BTreeSet<SessionKey>,
    findings: FxHashMap<FindingId, Arc<Finding>>,
    /// What the last step's sessions and findings were observed from: the same allocations,
    /// and the same live sessions, change nothing and raise no event (at 5,000 orphans,
    /// comparing them is a small part of building the sets again).
    observed: Observed,
    primed: bool,
    /// How command lines are written into events.
    command_lines: CommandLines,
}

impl Default for Timeline {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl Timeline {
    /// A timeline keeping at most `capacity` events.
    pub fn new(capacity: usize) -> Self {
        Self {
            events: VecDeque::new(),
            capacity: capacity.max(1),
            procs: HashMap::new(),
            sessions: FxHashMap::default(),
            ended: BTreeSet::new(),
            findings: FxHashMap::default(),
            observed: Observed::default(),
            primed: false,
            command_lines: CommandLines::Hidden,
        }
    }

    /// Writes command lines into events as `lines` says: raw for a state that publishes raw
    /// (`--no-redact`), which would otherwise still show `--token ‹redacted›`.
    pub fn with_command_lines(mut self, lines: CommandLines) -> Self {
        self.command_lines = lines;
        self
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
    pub fn since(&self, since: DateTime<Utc>) -> Vec<Arc<TimelineEvent>> {
        let start = self.events.partition_point(|e| e.at < since);
        self.events.iter().skip(start).cloned().collect()
    }

    /// Adds events, keeping time order and the capacity bound.
    pub fn push_all(&mut self, mut batch: Vec<TimelineEvent>) {
        batch.sort_by_key(|e| e.at);
        for e in batch.into_iter().map(Arc::new) {
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

    /// Compares the processes of a new observation with the previous one. `exits` are the
    /// pidfd-timed exits seen since. Records the new events; returns the processes that
    /// exited, each with its exit time (for the tombs).
    pub fn observe_procs(
        &mut self,
        now: DateTime<Utc>,
        procs: &[Arc<Proc>],
        exits: &[Exit],
    ) -> Vec<(Arc<Proc>, DateTime<Utc>)> {
        let exit_at: HashMap<ProcId, DateTime<Utc>> = exits.iter().map(|e| (e.id, e.at)).collect();
        let mut out = Vec::new();
        let mut exited = Vec::new();
        let mut current = HashMap::with_capacity(procs.len());
        let mut before = std::mem::take(&mut self.procs);
        for p in procs {
            if let Some(e) = self.proc_change(&before, p, now, &exit_at) {
                out.push(e);
            }
            before.remove(&p.id());
            current.insert(p.id(), Arc::clone(p));
        }
        // In pid order: the exits of one step are told, and buried, the same way every time.
        let mut gone: Vec<(ProcId, Arc<Proc>)> = before.into_iter().collect();
        gone.sort_unstable_by_key(|(id, _)| *id);
        for (id, p) in gone {
            let at = exit_at.get(&id).copied().unwrap_or(now);
            if p.sample.state != ProcState::Zombie {
                let text = format!("{} {} exited{}", p.role, p.pid, survivors(&p, procs));
                out.push(about(
                    &p,
                    TimelineEvent::new(at, TimelineKind::ProcessExited, text),
                ));
            }
            exited.push((p, at));
        }
        self.procs = current;
        self.primed = true;
        self.push_all(out);
        exited
    }

    /// The event a process's new sample is, if any: it appeared, or its state changed.
    fn proc_change(
        &self,
        before: &HashMap<ProcId, Arc<Proc>>,
        p: &Proc,
        now: DateTime<Utc>,
        exit_at: &HashMap<ProcId, DateTime<Utc>>,
    ) -> Option<TimelineEvent> {
        match before.get(&p.id()) {
            None if self.primed => {
                let at = p.start_time.max(now - Duration::seconds(5)).min(now);
                // Whole (the views cut what they show).
                let line = self.command_lines.text(&p.argv, usize::MAX);
                let text = format!("{} {} appeared: {}", p.role, p.pid, line);
                Some(about(
                    p,
                    TimelineEvent::new(at, TimelineKind::ProcessAppeared, text),
                ))
            }
            Some(prev) if prev.sample.state != p.sample.state => {
                let zombie = p.sample.state == ProcState::Zombie;
                let at = if zombie {
                    exit_at.get(&p.id()).copied().unwrap_or(now)
                } else {
                    now
                };
                let kind = if zombie {
                    TimelineKind::ProcessExited
                } else {
                    TimelineKind::StateChanged
                };
                let text = format!(
                    "{} {}: {} → {}",
                    p.role,
                    p.pid,
                    prev.sample.state.letter(),
                    p.sample.state.letter()
                );
                Some(about(p, TimelineEvent::new(at, kind, text)))
            }
            _ => None,
        }
    }

    /// Sessions, findings and log lines of a new step. Returns the new events (also kept).
    pub fn observe_world(
        &mut self,
        world: &World,
        findings: &[Arc<Finding>],
        logs: &[LogEvent],
    ) -> Vec<TimelineEvent> {
        let live: Vec<(Option<u32>, &str)> = world
            .procs
            .iter()
            .filter(|p| p.sample.state.is_alive() && p.exited_at.is_none())
            .filter_map(|p| Some((p.server_pid, p.session_id.as_deref()?)))
            .collect();
        let same_live = live.len() == self.observed.live.len()
            && live
                .iter()
                .zip(&self.observed.live)
                .all(|(a, b)| a.0 == b.0 && a.1 == b.1);
        let mut out = Vec::new();
        // Observing the very same inputs again raises nothing and changes nothing.
        if !same_live || !same_arcs(&self.observed.sessions, &world.debug_sessions) {
            if !same_live {
                self.observed.live = live.iter().map(|(s, id)| (*s, (*id).to_owned())).collect();
            }
            self.observed.sessions.clone_from(&world.debug_sessions);
            let live: FxHashSet<(Option<u32>, &str)> = live.into_iter().collect();
            out = self.observe_sessions(world.at, &world.debug_sessions, &live);
        }
        if !same_arcs(&self.observed.findings, findings) {
            self.observed.findings = findings.to_vec();
            out.extend(self.observe_findings(world.at, findings));
        }
        out.extend(logs.iter().filter_map(|l| log_event(l, world.at)));
        self.push_all(out.clone());
        out
    }

    fn observe_sessions(
        &mut self,
        now: DateTime<Utc>,
        sessions: &[Arc<DebugSession>],
        live: &FxHashSet<(Option<u32>, &str)>,
    ) -> Vec<TimelineEvent> {
        let mut out = Vec::new();
        let mut current: FxHashSet<(Option<u32>, &str)> = FxHashSet::default();
        for d in sessions {
            let key = (d.server_pid, d.id.as_str());
            let known = self
                .sessions
                .get(&d.server_pid)
                .is_some_and(|ids| ids.contains(&d.id));
            if d.ended {
                let owned = (d.server_pid, d.id.clone());
                if known && !self.ended.contains(&owned) {
                    let at = d.ended_at.unwrap_or(now);
                    let text = format!("session {} ended", short(&d.id));
                    let mut e =
                        session_event(d, TimelineEvent::new(at, TimelineKind::SessionEnded, text));
                    e.source = d.ended_by.as_ref().map(|f| f.source.clone());
                    out.push(e);
                }
                self.ended.insert(owned);
                if !live.contains(&key) {
                    continue;
                }
            }
            if !known && !self.ended.contains(&(d.server_pid, d.id.clone())) {
                let name = d
                    .name
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default();
                let text = format!("session {}{name} appeared", short(&d.id));
                out.push(session_event(
                    d,
                    TimelineEvent::new(now, TimelineKind::SessionAppeared, text),
                ));
            }
            current.insert(key);
        }
        out.extend(self.forget_sessions(now, &current));
        for (server, id) in current {
            let ids = self.sessions.entry(server).or_default();
            if !ids.contains(id) {
                ids.insert(id.to_owned());
            }
        }
        while self.ended.len() > MAX_ENDED {
            self.ended.pop_first();
        }
        out
    }

    /// Forgets the sessions of the last step that are not `current`; an event for each that
    /// did not end (in key order).
    fn forget_sessions(
        &mut self,
        now: DateTime<Utc>,
        current: &FxHashSet<(Option<u32>, &str)>,
    ) -> Vec<TimelineEvent> {
        let mut gone: Vec<SessionKey> = Vec::new();
        for (server, ids) in &mut self.sessions {
            ids.retain(|id| {
                let keep = current.contains(&(*server, id.as_str()));
                if !keep {
                    gone.push((*server, id.clone()));
                }
                keep
            });
        }
        self.sessions.retain(|_, ids| !ids.is_empty());
        gone.sort();
        gone.into_iter()
            .filter(|key| !self.ended.contains(key))
            .map(|(server, id)| {
                let text = format!("session {} is gone", short(&id));
                let mut e = TimelineEvent::new(now, TimelineKind::SessionEnded, text);
                e.session_id = Some(id);
                e.server_pid = server;
                e
            })
            .collect()
    }

    fn observe_findings(
        &mut self,
        now: DateTime<Utc>,
        findings: &[Arc<Finding>],
    ) -> Vec<TimelineEvent> {
        let mut raised: Vec<&Arc<Finding>> = Vec::new();
        for f in findings {
            match self.findings.get_mut(&f.id) {
                // The latest of each is kept: a cleared finding is told as it was last seen.
                Some(last) if !Arc::ptr_eq(last, f) => *last = Arc::clone(f),
                Some(_) => {}
                None => raised.push(f),
            }
        }
        let mut gone: Vec<Arc<Finding>> = Vec::new();
        if self.findings.len() + raised.len() != findings.len() {
            let current: FxHashSet<&FindingId> = findings.iter().map(|f| &f.id).collect();
            self.findings.retain(|id, f| {
                let keep = current.contains(id);
                if !keep {
                    gone.push(Arc::clone(f));
                }
                keep
            });
        }
        // In the order of their ids, as the events of one tick always were.
        raised.sort_by(|a, b| a.id.cmp(&b.id));
        raised.dedup_by(|a, b| a.id == b.id);
        gone.sort_by(|a, b| a.id.cmp(&b.id));
        let mut out = Vec::new();
        for f in raised {
            let first = f.evidence.first().cloned().unwrap_or_default();
            let text = format!("{} raised: {first}", f.kind);
            out.push(finding_event(
                f,
                TimelineEvent::new(now, TimelineKind::FindingRaised, text),
            ));
            self.findings.insert(f.id.clone(), Arc::clone(f));
        }
        for f in gone {
            let text = format!("{} cleared", f.kind);
            out.push(finding_event(
                &f,
                TimelineEvent::new(now, TimelineKind::FindingCleared, text),
            ));
        }
        out
    }
}

/// For a host that exited: what still runs of what it started (its servers remember it).
fn survivors(gone: &Proc, procs: &[Arc<Proc>]) -> String {
    if gone.role != crate::model::Role::Host {
        return String::new();
    }
    let left: Vec<String> = procs
        .iter()
        .filter(|p| {
            p.sample.state.is_alive()
                && p.host
                    .as_ref()
                    .is_some_and(|h| h.pid == gone.pid && h.start_ticks == gone.start_ticks)
        })
        .map(|p| format!("{} {}", p.role, p.pid))
        .collect();
    if left.is_empty() {
        String::new()
    } else {
        format!("; still running of what it started: {}", left.join(", "))
    }
}

fn about(p: &Proc, mut e: TimelineEvent) -> TimelineEvent {
    e.pid = Some(p.pid);
    e.session_id = p.session_id.clone();
    e.server_pid = p.server_pid;
    e
}

fn session_event(d: &DebugSession, mut e: TimelineEvent) -> TimelineEvent {
    e.session_id = Some(d.id.clone());
    e.server_pid = d.server_pid;
    e
}

fn finding_event(f: &Finding, mut e: TimelineEvent) -> TimelineEvent {
    e.finding_id = Some(f.id.clone());
    e.pid = f.pids.first().copied();
    e.session_id = f.session_id.clone();
    e.server_pid = f.server_pid;
    e
}

/// A log event on the timeline: its subject and its one wording (the same as the tree's fact).
fn log_event(l: &LogEvent, now: DateTime<Utc>) -> Option<TimelineEvent> {
    let (subject, fact) = from_log(l)?;
    let session = match &subject {
        crate::model::Subject::Debug(id) => Some(id.clone()),
        _ => None,
    };
    let text = format!("{subject}: {}", fact.text);
    let kind = match fact.what {
        crate::model::FactKind::Stage { .. } => TimelineKind::Stage,
        _ => TimelineKind::Log,
    };
    let mut e = TimelineEvent::new(l.at.unwrap_or(now), kind, text);
    e.session_id = session;
    e.source = Some(FactSource::Log {
        file: l.file.clone(),
        line: l.line,
    });
    Some(e)
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
        let mut t = Timeline::new(DEFAULT_CAPACITY);
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
            .map(|e| e.text.clone())
            .collect();
        assert_eq!(texts, ["e5", "e10", "e20", "e30"]);
    }

    /// Steps a state over observations; each step's new timeline events as "kind text" (process
    /// events left out: they are dated by the process's start, not the step).
    fn events_per_step(obs: Vec<crate::model::Observation>) -> Vec<Vec<String>> {
        let mut s = crate::state::State::new(crate::state::StateConfig {
            redact: false,
            ..crate::state::StateConfig::default()
        });
        let mut before: HashMap<String, usize> = HashMap::new();
        obs.into_iter()
            .map(|o| {
                let mut now: HashMap<String, usize> = HashMap::new();
                let mut new = Vec::new();
                for e in s.step(o).snapshot.timeline.iter().filter(|e| {
                    !matches!(
                        e.kind,
                        TimelineKind::ProcessAppeared | TimelineKind::ProcessExited
                    )
                }) {
                    let text = format!("{} {}", e.kind, e.text);
                    let n = now.entry(text.clone()).or_default();
                    *n += 1;
                    if *n > before.get(&text).copied().unwrap_or(0) {
                        new.push(text);
                    }
                }
                before = now;
                new
            })
            .collect()
    }

    #[test]
    fn the_same_inputs_again_raise_nothing_and_a_change_after_them_still_does() {
        use crate::model::Role;
        use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};
        let orphan = |pid: u32, sid: &str| {
            P::new(pid, Role::Worker)
                .ppid(1)
                .owner(999)
                .session(sid)
                .build()
        };
        let both = |t| {
            Obs::at(t)
                .proc(orphan(300, "s-a"))
                .proc(orphan(301, "s-b"))
                .build()
        };
        let one = |t| Obs::at(t).proc(orphan(300, "s-a")).build();
        // 301 exits at t = 9; its tomb keeps its session until the tomb time is over.
        let steps = events_per_step(vec![
            both(0),
            both(6),
            both(7),
            both(8),
            one(9),
            one(10),
            one(25),
            one(26),
        ]);
        let has = |i: usize, what: &str| steps[i].iter().any(|e| e.contains(what));
        assert!(has(1, "orphaned-worker raised"), "{:?}", steps[1]);
        assert!(steps[2].is_empty() && steps[3].is_empty(), "{steps:?}");
        assert!(has(4, "finding-cleared"), "{:?}", steps[4]);
        assert!(steps[5].is_empty(), "{:?}", steps[5]);
        assert!(has(6, "session s-b is gone"), "{:?}", steps[6]);
        assert!(steps[7].is_empty(), "{:?}", steps[7]);
    }

    #[test]
    fn one_session_appearing_among_many_raises_its_event_only() {
        use crate::model::Role;
        use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};
        let many = |t: i64| {
            let mut o = Obs::at(t);
            for i in 0..50 {
                o = o.proc(
                    P::new(300 + i, Role::Worker)
                        .ppid(1)
                        .owner(999)
                        .session(&format!("s-{i}"))
                        .build(),
                );
            }
            o
        };
        let with_new = |t: i64| {
            many(t)
                .proc(
                    P::new(400, Role::Worker)
                        .ppid(100)
                        .owner(100)
                        .session("s-new")
                        .build(),
                )
                .build()
        };
        let steps = events_per_step(vec![
            many(0).build(),
            many(6).build(),
            with_new(7),
            with_new(8),
        ]);
        assert_eq!(
            steps[2],
            ["session-appeared session s-new appeared"],
            "{steps:?}"
        );
        assert!(steps[3].is_empty(), "{:?}", steps[3]);
    }

    #[test]
    fn regression_the_exits_of_one_step_are_told_in_pid_order() {
        use crate::testing::ProcBuilder;
        let mut t = Timeline::new(100);
        let procs: Vec<Arc<Proc>> = (0..40u32)
            .map(|i| {
                Arc::new(ProcBuilder::new(1_000 + i * 7 % 40, crate::model::Role::Worker).build())
            })
            .collect();
        t.observe_procs(crate::testing::at(0), &procs, &[]);
        let gone = t.observe_procs(crate::testing::at(1), &[], &[]);
        let pids: Vec<u32> = gone.iter().map(|(p, _)| p.pid).collect();
        let mut sorted = pids.clone();
        sorted.sort_unstable();
        assert_eq!(pids, sorted);
        assert_eq!(pids.len(), 40);
    }
}
