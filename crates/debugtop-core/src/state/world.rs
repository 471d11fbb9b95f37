//! What one step knows, joined: the processes, the servers and their trees, the sessions, how
//! each source went — the one value the rules, the timeline and the views read. Its processes
//! are indexed by pid and group the first time a rule asks.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};

use super::knowledge::JanitorKill;
use crate::model::{
    DebugSession, Health, HealthError, HttpSession, LogsRead, Observation, Proc, Role, SelfInfo,
    ServerInfo, SourceStatus, TreeNode,
};
use crate::redact::CommandLines;

/// Everything the rules and the views need from one step.
#[derive(Debug, Clone)]
pub struct World {
    /// When.
    pub at: DateTime<Utc>,
    /// Server-related processes, live and just exited (tombs, state `X`).
    pub procs: Vec<Arc<Proc>>,
    /// Live servers.
    pub servers: Vec<ServerInfo>,
    /// One tree per server (live, gone, remote).
    pub tree: Vec<Arc<TreeNode>>,
    /// HTTP sessions known.
    pub http_sessions: Vec<HttpSession>,
    /// Debug sessions known.
    pub debug_sessions: Vec<Arc<DebugSession>>,
    /// Health of each source per server.
    pub sources: Vec<SourceStatus>,
    /// The latest `/health` outcome per live server pid.
    pub health: BTreeMap<u32, Result<Health, HealthError>>,
    /// How reading each live server's logs went.
    pub logs: BTreeMap<u32, LogsRead>,
    /// The observing process.
    pub me: SelfInfo,
    /// How text made from a command line is written (labels).
    pub command_lines: CommandLines,
    /// What live servers of debugtop's own pid namespace said their startup janitor killed,
    /// by server pid: those processes are expected gone.
    pub janitor_kills: Vec<(u32, JanitorKill)>,
    /// `procs` indexed, the first time a rule asks (`procs` does not change once built).
    index: OnceLock<ProcIndex>,
}

/// The live processes of a world by pid and by process group, and its watchdogs: a rule asks
/// about each of thousands of subjects' relatives, and a walk of the table for each is
/// quadratic at incident scale.
#[derive(Debug, Clone, Default)]
struct ProcIndex {
    by_pid: rustc_hash::FxHashMap<u32, usize>,
    by_group: rustc_hash::FxHashMap<u32, Vec<usize>>,
    watchdogs: Vec<usize>,
}

impl ProcIndex {
    fn of(procs: &[Arc<Proc>]) -> Self {
        let mut idx = Self::default();
        for (i, p) in procs.iter().enumerate() {
            if p.exited_at.is_some() {
                continue;
            }
            idx.by_pid.entry(p.pid).or_insert(i);
            idx.by_group.entry(p.pgid).or_default().push(i);
            if p.role == Role::Watchdog {
                idx.watchdogs.push(i);
            }
        }
        idx
    }
}

impl World {
    /// The live process with this pid.
    pub fn proc(&self, pid: u32) -> Option<&Proc> {
        self.proc_arc(pid).map(|p| &**p)
    }

    /// The live process with this pid, as shared between steps.
    pub fn proc_arc(&self, pid: u32) -> Option<&Arc<Proc>> {
        let i = self.index().by_pid.get(&pid)?;
        self.procs.get(*i)
    }

    /// The live members of process group `pgid`, in the table's order.
    pub fn group(&self, pgid: u32) -> impl Iterator<Item = &Arc<Proc>> {
        self.at_positions(self.index().by_group.get(&pgid).map(Vec::as_slice))
    }

    /// The live watchdogs, in the table's order.
    pub fn watchdogs(&self) -> impl Iterator<Item = &Arc<Proc>> {
        self.at_positions(Some(&self.index().watchdogs))
    }

    fn at_positions<'a>(&'a self, at: Option<&'a [usize]>) -> impl Iterator<Item = &'a Arc<Proc>> {
        at.unwrap_or_default()
            .iter()
            .filter_map(|i| self.procs.get(*i))
    }

    fn index(&self) -> &ProcIndex {
        self.index.get_or_init(|| ProcIndex::of(&self.procs))
    }

    /// The live server with this pid.
    pub fn server(&self, pid: u32) -> Option<&ServerInfo> {
        self.servers.iter().find(|s| s.pid == pid)
    }
}

impl World {
    /// A world at the observation's instant with its servers, sources and observer, and
    /// nothing joined yet.
    pub(super) fn empty<P>(obs: &Observation<P>, command_lines: CommandLines) -> Self {
        Self {
            at: obs.at,
            servers: obs.table.servers.clone(),
            tree: Vec::new(),
            http_sessions: Vec::new(),
            debug_sessions: Vec::new(),
            sources: obs.sources.clone(),
            health: BTreeMap::new(),
            logs: BTreeMap::new(),
            me: obs.me.clone(),
            procs: Vec::new(),
            command_lines,
            janitor_kills: Vec::new(),
            index: OnceLock::new(),
        }
    }

    /// Gives the world its processes (live and tombs), once its trees are built.
    pub(super) fn set_procs(&mut self, procs: Vec<Arc<Proc>>) {
        self.procs = procs;
        self.index = OnceLock::new();
    }
}
