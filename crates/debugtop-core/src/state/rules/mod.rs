//! Verdicts: the rules that tell a leaked or orphaned process from a healthy one, each finding
//! with the evidence that supports it. One function per finding kind (this module's children);
//! the [`Evaluator`] confirms what they propose over time.
//!
//! Liveness is zombie-aware everywhere (a Z process is not alive; `kill(pid, 0)` is never the
//! test), and an owner is "the same process" only if it is an mcp-debugger server that started
//! no later than the worker. Grace periods keep a normal teardown (a worker exits ≈ 0.9 s after
//! its session closes; the server force-kills at 5 s) from ever raising a finding.
//!
//! To add a rule: a function `fn rule(ctx: &Ctx) -> Vec<Candidate>` in a child module, listed
//! in [`RULES`], with a positive and a near-miss negative unit test in `tests/<that module>.rs`.

mod adapters;
mod debuggees;
mod duplicate_servers;
mod hosts;
mod processes;
mod servers;
mod sessions;
pub mod stuck;
mod workers;

use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustc_hash::FxHashMap;

use super::plan::{self, PlanOptions, PlanTrace, SHORT_GRACE};
use super::reuse::memo::{ByAlloc, Memo};
use super::world::World;
use crate::model::{
    short, DebugSession, Finding, FindingId, FindingKind, KillPlan, LiveTable, Proc, ProcId,
    ServerInfo, Severity,
};

/// How findings are confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A live monitor: a condition must hold for the grace before it is raised.
    Live,
    /// An audit: a condition must hold in two consecutive samples (and, where a log gives
    /// its time, the grace must have passed since).
    Audit,
}

/// Verdict settings.
#[derive(Debug, Clone, Copy)]
pub struct VerdictConfig {
    /// Minimum time a condition holds before it is a finding.
    pub grace: Duration,
    /// CPU percent (of one core) that counts as spinning, in consecutive samples over the grace.
    pub spin_cpu: f32,
    /// Confirmation mode.
    pub mode: Mode,
    /// When a session counts as stuck.
    pub stuck: stuck::StuckThresholds,
    /// How long the older of two twin stdio servers under one live host must have read and
    /// written nothing before it counts as left behind.
    pub duplicate_quiet: Duration,
}

impl Default for VerdictConfig {
    fn default() -> Self {
        Self {
            grace: crate::judging::DEFAULT_GRACE,
            spin_cpu: 25.0,
            mode: Mode::Live,
            stuck: stuck::StuckThresholds::default(),
            duplicate_quiet: DUPLICATE_QUIET,
        }
    }
}

impl VerdictConfig {
    /// Verdicts as `judging` says (its grace, when a session is stuck), live.
    pub fn judging(judging: &crate::judging::Judging) -> Self {
        Self {
            grace: judging.grace,
            stuck: stuck::StuckThresholds::default().after(judging.stuck_after),
            ..Self::default()
        }
    }
}

/// The default [`VerdictConfig::duplicate_quiet`]: long past a host's start-up chatter, short
/// enough that a reconnect's leftover shows while someone still looks.
pub const DUPLICATE_QUIET: Duration = Duration::from_secs(30);

/// A condition that holds now, not yet confirmed.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The finding it would be (last step's allocation when nothing it says changed).
    pub finding: Arc<Finding>,
    /// Time the evidence itself gives (a log line), if any.
    pub evidence_at: Option<DateTime<Utc>>,
    /// Needs two consecutive samples whatever the mode (spinning).
    pub two_samples: bool,
    /// Must hold for the grace whatever the mode: what it describes also happens, briefly, in
    /// a healthy run (a stdio server that just lost its host exits on EOF within seconds).
    pub hold_grace: bool,
    /// Must hold this long from when it was first seen (live mode; an audit takes two
    /// samples): a threshold of its own, longer than the grace.
    pub hold: Option<chrono::Duration>,
}

impl Candidate {
    /// A condition dated by when it was first seen.
    pub fn new(finding: Finding) -> Self {
        Self::of_shared(Arc::new(finding))
    }

    fn of_shared(finding: Arc<Finding>) -> Self {
        Self {
            finding,
            evidence_at: None,
            two_samples: false,
            hold_grace: false,
            hold: None,
        }
    }

    /// A condition that must hold for `hold` from when it is first seen.
    pub fn held(finding: Finding, hold: chrono::Duration) -> Self {
        Self {
            hold: Some(hold),
            ..Self::new(finding)
        }
    }

    /// A condition the evidence dates (a log line's time).
    pub fn dated(finding: Finding, at: DateTime<Utc>) -> Self {
        Self {
            evidence_at: Some(at),
            ..Self::new(finding)
        }
    }
}

/// What every rule reads.
#[derive(Debug)]
pub struct Ctx<'a> {
    /// The step's world.
    pub world: &'a World,
    /// The processes plans are made against.
    pub live: &'a LiveTable,
    /// The settings.
    pub config: &'a VerdictConfig,
    /// Plans against `live`, indexed once for every finding of the step.
    pub planner: plan::Planner<'a>,
    /// Last step's findings about processes, for those whose inputs did not change.
    memo: &'a RefCell<FindingMemo>,
    /// Since when each condition has held (last step's).
    first_seen: &'a Held,
}

/// The most characters of a command line a sentence of evidence quotes (redacted first, cut
/// after, on a word's boundary).
pub const NAME_CHARS: usize = 100;

impl Ctx<'_> {
    /// When.
    pub fn now(&self) -> DateTime<Utc> {
        self.world.at
    }

    /// How text made from a command line is written.
    pub fn command_lines(&self) -> crate::redact::CommandLines {
        self.world.command_lines
    }

    /// Live processes (not tombs).
    pub fn procs(&self) -> impl Iterator<Item = &Proc> {
        self.proc_arcs().map(|p| &**p)
    }

    /// The debug session with this id held by this server.
    pub fn session(&self, id: &str, server: u32) -> Option<&DebugSession> {
        self.world
            .debug_sessions
            .iter()
            .find(|d| d.id == id && d.server_pid == Some(server))
            .map(|d| &**d)
    }

    /// Live processes (not tombs), as shared between steps.
    pub fn proc_arcs(&self) -> impl Iterator<Item = &Arc<Proc>> {
        self.world.procs.iter().filter(|p| p.exited_at.is_none())
    }

    /// A kill plan for a finding about `subject`: these processes and everything they
    /// started, each tied to `subject` by the process table and of its user (a pid the table
    /// does not confirm is refused); `short` for processes that ignore SIGTERM in practice.
    pub fn plan(&self, subject: &Proc, pids: &[u32], short: bool) -> KillPlan {
        self.planner.plan_about(subject, pids, plan_options(short))
    }

    /// A finding of `kind` about `p` with a plan to kill `p` and what it started, built by
    /// `build` (everything but the plan and `since`) — or last step's very finding when `p` is
    /// the same allocation, `inputs` (everything else of the world `build` reads) are equal
    /// and the plan would be the same ([`plan::Planner::holds`]). At incident scale the rules
    /// would otherwise format and plan thousands of unchanged findings every tick.
    pub fn memoized(
        &self,
        kind: FindingKind,
        p: &Arc<Proc>,
        inputs: &[Input],
        short: bool,
        build: impl FnOnce() -> Finding,
    ) -> Candidate {
        let finding = self.memo.borrow_mut().get_or_build(
            &(kind, p.id()),
            FindingNow(p, short, inputs),
            |m| self.planner.holds(&m.trace),
            || {
                let mut f = build();
                let (plan, trace) = self.planner.plan_with_trace(p, plan_options(short));
                f.plan = Some(plan);
                f.since = self.first_seen.first(&f.id).unwrap_or(f.since);
                Arc::new(Memoized {
                    finding: Arc::new(f),
                    trace,
                })
            },
        );
        Candidate::of_shared(Arc::clone(&finding.finding))
    }
}

/// One thing of the world besides its subject that a memoised finding is made from
/// ([`Ctx::memoized`]): what the rule read, as it read it.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// A process, or that there is none, by allocation.
    Proc(Option<ByAlloc<Proc>>),
    /// Processes, in order, by allocation.
    Procs(Vec<ByAlloc<Proc>>),
    /// A live mcp-debugger server as read, or that there is none.
    Server(Option<ServerInfo>),
    /// A yes or no the world answered (a group's leader lives).
    Fact(bool),
}

impl Input {
    /// The process `p`, or none, by allocation.
    pub fn proc(p: Option<&Arc<Proc>>) -> Self {
        Self::Proc(p.map(ByAlloc::of))
    }
}

fn plan_options(short: bool) -> PlanOptions {
    let mut opts = PlanOptions::default();
    if short {
        opts.grace = SHORT_GRACE;
    }
    opts
}

/// Findings about processes as [`Ctx::memoized`] built them, by kind and subject: each made
/// from its subject, whether its plan is the short one, and the rule's other inputs; held with
/// what its plan read.
type FindingMemo = Memo<(FindingKind, ProcId), FindingInputs, Arc<Memoized>>;

/// What a memoised finding is made from: its subject (by allocation), whether its plan is the
/// short one, and the rule's other inputs.
#[derive(Debug, PartialEq)]
struct FindingInputs(ByAlloc<Proc>, bool, Vec<Input>);

/// [`FindingInputs`] as a rule gives them, borrowed (nothing is copied for a finding found
/// again).
#[derive(Debug, Clone, Copy)]
struct FindingNow<'a>(&'a Arc<Proc>, bool, &'a [Input]);

impl PartialEq<FindingNow<'_>> for FindingInputs {
    fn eq(&self, now: &FindingNow<'_>) -> bool {
        Arc::ptr_eq(&self.0 .0, now.0) && self.1 == now.1 && self.2 == now.2
    }
}

impl From<FindingNow<'_>> for FindingInputs {
    fn from(now: FindingNow<'_>) -> Self {
        Self(ByAlloc::of(now.0), now.1, now.2.to_vec())
    }
}

/// A finding and what its kill plan was made from.
#[derive(Debug)]
struct Memoized {
    finding: Arc<Finding>,
    trace: PlanTrace,
}

/// A finding about one process, with what every such finding has in common filled in.
pub fn about(kind: FindingKind, severity: Severity, p: &Proc, now: DateTime<Utc>) -> Finding {
    Finding {
        id: FindingId::of_proc(kind, p.id()),
        kind,
        severity,
        pids: vec![p.pid],
        session_id: p.session_id.clone(),
        server_pid: p.server_pid,
        evidence: Vec::new(),
        since: now,
        confirmed_at: None,
        suggested_action: String::new(),
        plan: None,
    }
}

/// ` of session abcd1234`, or nothing.
pub fn of_session(p: &Proc) -> String {
    p.session_id
        .as_deref()
        .map(|s| format!(" of session {}", short(s)))
        .unwrap_or_default()
}

/// A duration in whole seconds, for evidence.
pub fn secs(d: chrono::Duration) -> String {
    format!("{:.0} s", d.num_milliseconds() as f64 / 1000.0)
}

type Rule = fn(&Ctx<'_>) -> Vec<Candidate>;

/// Every rule, one per finding kind.
pub const RULES: &[(FindingKind, Rule)] = &[
    (FindingKind::OrphanedWorker, workers::orphaned_worker),
    (FindingKind::LeakedWorker, workers::leaked_worker),
    (FindingKind::LeakedAdapter, adapters::leaked_adapter),
    (FindingKind::LeakedDebuggee, debuggees::leaked_debuggee),
    (FindingKind::OrphanedServer, hosts::orphaned_server),
    (FindingKind::OrphanedStdio, hosts::orphaned_stdio),
    (FindingKind::OrphanedContainer, hosts::orphaned_container),
    (
        FindingKind::DuplicateServer,
        duplicate_servers::duplicate_server,
    ),
    (FindingKind::Spinning, processes::spinning),
    (FindingKind::Zombie, processes::zombie),
    (FindingKind::Stopped, processes::stopped),
    (
        FindingKind::SessionWithoutWorker,
        sessions::session_without_worker,
    ),
    (
        FindingKind::ServerUnresponsive,
        servers::server_unresponsive,
    ),
    (FindingKind::StuckSession, stuck::stuck_session),
];

/// Confirmed findings as [`dated`] made them, by id: each made from the rule's finding (by
/// allocation), since when it was seen and when it was confirmed. A memoised finding found
/// again is the same allocation with the same dates, and copying it to date it every step
/// was a tenth of the app's tick at 5,000 orphans (BENCHMARKS.md).
type DatedMemo = Memo<FindingId, DatedInputs, Arc<Finding>>;

/// What [`dated`] makes a confirmed finding from.
#[derive(Debug, PartialEq)]
struct DatedInputs(ByAlloc<Finding>, DateTime<Utc>, DateTime<Utc>);

/// `f` dated: since `seen` (the evidence's time or its first sight; never later than the rule
/// said), confirmed `at`. `f` itself when neither date changes it.
fn dated(mut f: Arc<Finding>, seen: DateTime<Utc>, at: DateTime<Utc>) -> Arc<Finding> {
    let since = seen.min(f.since);
    if since != f.since || f.confirmed_at != Some(at) {
        let g = Arc::make_mut(&mut f);
        g.since = since;
        g.confirmed_at = Some(at);
    }
    f
}

/// Since when each condition that held at the last evaluation has held, and since when it has
/// been confirmed. Changed in place, step after step: at 5,000 findings, rebuilding two ordered
/// maps of them every tick (a copy of every id, a string comparison per level) was a tenth of
/// the rules' time.
#[derive(Debug, Default)]
struct Held {
    dates: FxHashMap<FindingId, Dates>,
    /// The evaluation that saw each condition last is this one.
    turn: u64,
}

#[derive(Debug, Clone, Copy)]
struct Dates {
    first: DateTime<Utc>,
    /// Since when it has been confirmed, as of the evaluation `turn`.
    confirmed: Option<DateTime<Utc>>,
    /// As of the evaluation before (what `turn`'s own dates are read from: an id seen twice in
    /// one evaluation is dated from the last one both times).
    was: Option<DateTime<Utc>>,
    /// The last evaluation that saw it.
    turn: u64,
    /// The evaluation that saw it first.
    born: u64,
}

impl Held {
    /// Since when `id` has held, if it held at the last evaluation (not first in this one).
    fn first(&self, id: &FindingId) -> Option<DateTime<Utc>> {
        self.dates
            .get(id)
            .filter(|d| d.born <= self.turn)
            .map(|d| d.first)
    }

    /// Since when `id` had been confirmed at the last evaluation before `turn`, if it had.
    fn confirmed(&self, id: &FindingId, turn: u64) -> Option<DateTime<Utc>> {
        self.dates
            .get(id)
            .and_then(|d| if d.turn == turn { d.was } else { d.confirmed })
    }

    /// `id` holds in this evaluation (`turn`): first seen now if it did not hold before;
    /// confirmed since `confirmed` (or not).
    fn hold(
        &mut self,
        id: &FindingId,
        turn: u64,
        now: DateTime<Utc>,
        confirmed: Option<DateTime<Utc>>,
    ) {
        match self.dates.get_mut(id) {
            Some(d) => {
                if d.turn != turn {
                    d.was = d.confirmed.take();
                    d.turn = turn;
                }
                // A second candidate of the same id that is not ripe leaves the first's date.
                d.confirmed = d.confirmed.or(confirmed);
            }
            None => {
                self.dates.insert(
                    id.clone(),
                    Dates {
                        first: now,
                        confirmed,
                        was: None,
                        turn,
                        born: turn,
                    },
                );
            }
        }
    }

    /// Forgets what did not hold in evaluation `turn`.
    fn forget_all_but(&mut self, turn: u64) {
        self.dates.retain(|_, d| d.turn == turn);
        self.turn = turn;
    }
}

/// Runs the rules step after step, remembering since when each condition holds.
#[derive(Debug, Default)]
pub struct Evaluator {
    config: VerdictConfig,
    /// Since when each condition held at the last evaluation, and was confirmed.
    held: Held,
    /// Conditions that held at the last evaluation but not yet long enough.
    unconfirmed: Vec<Arc<Finding>>,
    memo: RefCell<FindingMemo>,
    dated: DatedMemo,
}

impl Evaluator {
    /// A new evaluator.
    pub fn new(config: VerdictConfig) -> Self {
        Self {
            config,
            held: Held::default(),
            unconfirmed: Vec::new(),
            memo: RefCell::default(),
            dated: DatedMemo::default(),
        }
    }

    /// Forgets the findings kept to be reused (their conditions' dates stay).
    pub fn forget_reused(&mut self) {
        self.memo = RefCell::default();
        self.dated = DatedMemo::default();
    }

    /// Conditions seen but not yet confirmed at the last evaluation (an audit samples on
    /// while some are waiting for their grace).
    pub fn pending(&self) -> usize {
        self.unconfirmed.len()
    }

    /// Those conditions, worst first, each dated from when it was first seen.
    pub fn unconfirmed(&self) -> &[Arc<Finding>] {
        &self.unconfirmed
    }

    /// The settings.
    pub fn config(&self) -> &VerdictConfig {
        &self.config
    }

    /// Every rule against a world; the confirmed findings, worst first, then by id.
    pub fn evaluate(&mut self, world: &World, live: &LiveTable) -> Vec<Arc<Finding>> {
        let candidates = self.candidates(world, live);
        let mut out =
            tracing::trace_span!("rules: confirm").in_scope(|| self.confirm(candidates, world.at));
        let _sort = tracing::trace_span!("rules: sort").entered();
        let worst_first =
            |a: &Arc<Finding>, b: &Arc<Finding>| b.severity.cmp(&a.severity).then(a.id.cmp(&b.id));
        out.sort_by(worst_first);
        self.unconfirmed.sort_by(worst_first);
        out
    }

    /// What every rule proposes now (each rule a `rule` span with its kind).
    fn candidates(&mut self, world: &World, live: &LiveTable) -> Vec<Candidate> {
        let ctx = Ctx {
            world,
            live,
            config: &self.config,
            planner: plan::Planner::new(live),
            memo: &self.memo,
            first_seen: &self.held,
        };
        let mut candidates: Vec<Candidate> = Vec::new();
        for (kind, rule) in RULES {
            let _rule = tracing::trace_span!("rule", kind = kind.as_str()).entered();
            candidates.extend(rule(&ctx));
        }
        drop(ctx);
        self.memo.get_mut().turn();
        candidates
    }

    /// The candidates that held long enough; the rest kept as unconfirmed; since when each
    /// held, and when each was confirmed, remembered.
    fn confirm(&mut self, candidates: Vec<Candidate>, now: DateTime<Utc>) -> Vec<Arc<Finding>> {
        let turn = self.held.turn + 1;
        let mut out = Vec::new();
        self.unconfirmed.clear();
        for c in candidates {
            let id = &c.finding.id;
            let first = self.held.first(id);
            if self.ripe(&c, first, now) {
                let at = self.held.confirmed(id, turn).unwrap_or(now);
                self.held.hold(id, turn, now, Some(at));
                let since = c.evidence_at.or(first).unwrap_or(now);
                let inputs = DatedInputs(ByAlloc::of(&c.finding), since, at);
                let f = c.finding;
                out.push(
                    self.dated
                        .get_or_build_same(&f.id, inputs, || dated(Arc::clone(&f), since, at)),
                );
            } else {
                self.held.hold(id, turn, now, None);
                self.unconfirmed.push(c.finding);
            }
        }
        self.dated.turn();
        self.held.forget_all_but(turn);
        out
    }

    /// Whether a condition has held long enough to be raised.
    fn ripe(&self, c: &Candidate, first: Option<DateTime<Utc>>, now: DateTime<Utc>) -> bool {
        let grace = chrono::Duration::from_std(self.config.grace)
            .unwrap_or_else(|_| chrono::Duration::seconds(6));
        let seen_before = first.is_some();
        if c.two_samples {
            // With `hold_grace` a hot moment is not enough: it must also last the grace.
            return seen_before && (!c.hold_grace || first.is_some_and(|f| now - f >= grace));
        }
        if let Some(hold) = c.hold {
            return match self.config.mode {
                Mode::Live => first.is_some_and(|f| now - f >= hold.max(grace)),
                Mode::Audit => seen_before,
            };
        }
        if c.hold_grace {
            return first.is_some_and(|f| now - f >= grace);
        }
        if let Some(at) = c.evidence_at {
            return now - at >= grace && (self.config.mode == Mode::Live || seen_before);
        }
        match self.config.mode {
            Mode::Live => first.is_some_and(|f| now - f >= grace),
            Mode::Audit => seen_before,
        }
    }
}

#[cfg(test)]
mod tests;
