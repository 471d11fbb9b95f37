//! The run's looks at its scope, the same on every OS: each member read once when it first
//! appears (for its ancestry and its test), those that left the scope remembered and followed,
//! and, after the command, the grace waited through until nothing of the run is alive.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::containers::Containers;
use super::lineage::{FirstSight, Lineage};
use super::os::{Forwarder, Held};
use crate::collect::scope::{self, Member};
use crate::model::{CommandEnd, ProcId};

/// How often the run looks at its members while the command runs: a parent that lives less
/// than this between starting a process and exiting is not seen (its child is then shown
/// adopted).
pub const LOOK_EVERY: Duration = Duration::from_millis(50);

/// Why the command did not live under the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotLived {
    /// It could not be started (not found, not executable): the run's status is 127.
    NotStarted(String),
    /// It was started but could not be put in the scope, and was ended before it ran.
    Unchecked(String),
}

/// What the command's life left for the report.
#[derive(Debug)]
pub struct Lived {
    /// Its pid and start.
    pub id: ProcId,
    /// When it started.
    pub started_at: DateTime<Utc>,
    /// How long it ran.
    pub ran: Duration,
    /// How it ended.
    pub end: CommandEnd,
    /// When it ended.
    pub ended: Instant,
    /// Who started whom.
    pub lineage: Lineage,
    /// The looks so far (who left the scope among them).
    pub looks: Looks,
    /// Signals passed on, by name.
    pub forwarded: Vec<String>,
    /// Whether a second interrupt asked to stop waiting.
    pub hurry: bool,
    /// What could not be read (members).
    pub problems: Vec<String>,
}

/// The looks at the members: each new one read once.
#[derive(Debug, Default)]
pub struct Looks {
    /// What could not be read, once each.
    pub problems: Vec<String>,
    /// Those that left the scope (found by a parent in it), followed by identity since.
    pub left: HashSet<ProcId>,
    /// Containers the run's `docker run` clients started, and their processes.
    pub containers: Containers,
}

impl Looks {
    /// One look: new members remembered, gone ones marked. Returns the members alive now
    /// (not zombies), those that left the scope among them.
    pub fn look(&mut self, held: &Held, lineage: &mut Lineage) -> Vec<Member> {
        // What the kernel said since the last look comes first: a parent it names may be
        // gone by now.
        for h in held.heard() {
            lineage.hear(h);
        }
        let seen = match held.look() {
            Ok(s) => s,
            Err(e) => {
                let problem = format!("cannot list the run's processes: {e}");
                if !self.problems.contains(&problem) {
                    self.problems.push(problem);
                }
                return Vec::new();
            }
        };
        let mut members = seen.members;
        members.extend(self.still_left(seen.left));
        // Oldest first: a parent seen for the first time in the same look as its child is
        // remembered before it.
        members.sort_by_key(|m| m.start_ticks);
        members.dedup_by_key(|m| (m.pid, m.start_ticks));
        let ids: HashSet<ProcId> = members
            .iter()
            .filter(|m| m.state.is_alive())
            .map(id_of)
            .collect();
        // The containers' processes of the last look stay parents for this one's new ones.
        let before: HashSet<ProcId> = ids
            .iter()
            .chain(self.containers.members.keys())
            .copied()
            .collect();
        lineage.keep_only(&before);
        for m in &members {
            remember(lineage, m);
        }
        // A `docker run` client may live a single look: read as the others are first.
        let mut contained: Vec<Member> = self
            .containers
            .look(&members, lineage)
            .into_iter()
            .map(|c| c.member)
            .collect();
        contained.sort_by_key(|m| m.start_ticks);
        for m in &contained {
            remember(lineage, m);
        }
        for t in self.containers.ties() {
            lineage.started_by(t.main, t.client);
        }
        let ids: HashSet<ProcId> = ids
            .into_iter()
            .chain(contained.iter().filter(|m| m.state.is_alive()).map(id_of))
            .collect();
        members.extend(contained);
        lineage.keep_only(&ids);
        members.retain(|m| m.state.is_alive());
        members
    }

    /// Those that left now, with those that left before and still run as themselves.
    fn still_left(&mut self, now: Vec<Member>) -> Vec<Member> {
        let before = self
            .left
            .iter()
            .filter(|id| !now.iter().any(|m| id_of(m) == **id))
            .filter_map(|id| scope::read_member(id.pid).filter(|m| id_of(m) == *id))
            .collect::<Vec<_>>();
        let all: Vec<Member> = now.into_iter().chain(before).collect();
        self.left = all.iter().map(id_of).collect();
        all
    }
}

fn id_of(m: &Member) -> ProcId {
    ProcId::new(m.pid, m.start_ticks)
}

/// A member into the run's memory: read in full the first time, and again while it is young
/// (a fresh process may not have run its `exec` yet).
fn remember(lineage: &mut Lineage, m: &Member) {
    let id = id_of(m);
    if !lineage.knows(id) {
        lineage.see(FirstSight {
            id,
            ppid: m.ppid,
            argv: scope::read_argv(m.pid),
            test_env: scope::read_test_env(m.pid),
        });
    } else if lineage.young(id) && m.state.is_alive() {
        lineage.read_again(id, scope::read_argv(m.pid), scope::read_test_env(m.pid));
    }
}

/// The run's watch over the command from its start: the run's memory, its looks and their
/// clock, until the command's end makes it what the command's life left.
#[derive(Debug)]
pub struct Watch {
    id: ProcId,
    started: Instant,
    started_at: DateTime<Utc>,
    lineage: Lineage,
    looks: Looks,
    /// When to look next.
    pub tick: tokio::time::Interval,
}

impl Watch {
    /// The watch over `pid`, the command started as `command` at `started`.
    pub fn begin(pid: u32, command: &[OsString], started: (Instant, DateTime<Utc>)) -> Self {
        let start_ticks = scope::read_member(pid).map_or(0, |m| m.start_ticks);
        let id = ProcId::new(pid, start_ticks);
        // What a test runner around `run` itself set: inherited by the whole run.
        let outer = std::env::vars()
            .filter(|(k, _)| scope::TEST_ENV.contains(&k.as_str()))
            .collect();
        let lineage = Lineage::inside(
            FirstSight {
                id,
                ppid: std::process::id(),
                argv: command
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
                test_env: Vec::new(),
            },
            outer,
        );
        let mut tick = tokio::time::interval(LOOK_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        Self {
            id,
            started: started.0,
            started_at: started.1,
            lineage,
            looks: Looks::default(),
            tick,
        }
    }

    /// One look at the scope.
    pub fn look(&mut self, held: &Held) {
        self.looks.look(held, &mut self.lineage);
    }

    /// The command ended as `end`: a last look, and what its life left.
    pub fn ended(mut self, held: &Held, end: CommandEnd, forwarded: Vec<String>) -> Lived {
        self.look(held);
        Lived {
            id: self.id,
            started_at: self.started_at,
            ran: self.started.elapsed(),
            end,
            ended: Instant::now(),
            lineage: self.lineage,
            looks: self.looks,
            forwarded,
            hurry: false,
            problems: Vec::new(),
        }
    }
}

/// Waits the grace after the command, looking as before, until nothing of the run is alive,
/// the grace has passed, or an interrupt asks to stop waiting; then the members alive.
pub async fn linger(
    held: &Held,
    lived: &mut Lived,
    grace: Duration,
    signals: &mut Forwarder,
) -> Vec<(Member, Option<f32>)> {
    let until = lived.ended + grace;
    let mut first = HashMap::new();
    loop {
        scope::reap_children();
        let alive = lived.looks.look(held, &mut lived.lineage);
        for m in &alive {
            first
                .entry(id_of(m))
                .or_insert((m.cpu_ticks, Instant::now()));
        }
        let done = Instant::now() >= until || lived.hurry;
        if alive.is_empty() || done {
            lived.problems.append(&mut lived.looks.problems);
            lived.problems.append(&mut lived.looks.containers.problems);
            return with_cpu(alive, &first);
        }
        tokio::select! {
            () = tokio::time::sleep(LOOK_EVERY) => {}
            interrupt = signals.next_interrupt() => lived.hurry |= interrupt,
        }
    }
}

/// Each member with its CPU since it was first seen after the command, in percent of a core
/// (none when that was under 200 ms: too short to say).
fn with_cpu(
    alive: Vec<Member>,
    first: &HashMap<ProcId, (u64, Instant)>,
) -> Vec<(Member, Option<f32>)> {
    let tps = scope::ticks_per_second() as f64;
    alive
        .into_iter()
        .map(|m| {
            let cpu = first
                .get(&id_of(&m))
                .filter(|(_, at)| at.elapsed() >= Duration::from_millis(200))
                .map(|(ticks, at)| {
                    let used = m.cpu_ticks.saturating_sub(*ticks) as f64 / tps;
                    (used / at.elapsed().as_secs_f64() * 100.0) as f32
                });
            (m, cpu)
        })
        .collect()
}
