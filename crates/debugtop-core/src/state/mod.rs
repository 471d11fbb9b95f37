//! The state: everything debugtop concluded so far, advanced by one pure step per observation.
//!
//! `State::step(observation) -> Update` folds the logs into what is known about each server,
//! reconciles the tree, runs every verdict rule, diffs the timeline and builds the snapshot —
//! with no clock, no `/proc` and no network inside (times come from the observation), so every
//! rule and the tree are unit-tested from fixtures and a recorded observation replays exactly.

pub mod knowledge;
pub mod plan;
pub mod reconcile;
pub mod reuse;
pub mod rules;
mod statuses;
pub mod timeline;
pub mod tombs;
pub mod world;

#[cfg(test)]
mod redaction_tests;

use std::sync::Arc;
use std::time::Duration;

use tracing::trace_span;

use crate::model::{
    DebugSession, Finding, FindingId, LiveTable, Observation, Proc, ProcId, Snapshot, TreeNode,
    Update, SCHEMA,
};
use crate::redact::{CommandLines, LiveRedaction};
use knowledge::Knowledge;
use reuse::share::{self, Interned};
use rules::{Evaluator, VerdictConfig};
use timeline::Timeline;
use world::World;

/// What the state step is told.
#[derive(Debug, Clone)]
pub struct StateConfig {
    /// Verdict rules: grace, spin threshold, live or audit confirmation.
    pub verdicts: VerdictConfig,
    /// Redact published snapshots (default on); `home` is shown as `~`.
    pub redact: bool,
    /// The user's home directory, for redaction.
    pub home: Option<String>,
    /// Timeline events kept in memory (a ring).
    pub timeline_capacity: usize,
    /// How long just-exited processes stay as tombs.
    pub tomb_ttl: Duration,
    /// How much of the timeline each published snapshot carries.
    pub timeline_window: Duration,
    /// Publish the conditions not yet confirmed too (`Snapshot::unconfirmed`): for a one-shot
    /// snapshot, which waits for no grace.
    pub publish_unconfirmed: bool,
    /// Reuse what did not change since the last step (default on; see [`reuse`]). Off, each
    /// step builds everything anew: slower at scale, and equal, snapshot for snapshot.
    pub reuse: bool,
}

impl Default for StateConfig {
    fn default() -> Self {
        Self {
            verdicts: VerdictConfig::default(),
            redact: true,
            home: None,
            timeline_capacity: timeline::DEFAULT_CAPACITY,
            tomb_ttl: tombs::DEFAULT_TOMB_TTL,
            timeline_window: Duration::from_secs(600),
            publish_unconfirmed: false,
            reuse: true,
        }
    }
}

/// Everything concluded so far.
#[derive(Debug)]
pub struct State {
    config: StateConfig,
    knowledge: Knowledge,
    evaluator: Evaluator,
    timeline: Timeline,
    tombs: tombs::Tombs,
    live: LiveTable,
    redaction: LiveRedaction,
    /// Last step's processes, tree, debug sessions and findings, for sharing what did not
    /// change (`share`).
    procs: Interned<ProcId, Proc>,
    tree: Vec<Arc<TreeNode>>,
    sessions: Interned<(Option<u32>, String), DebugSession>,
    findings: Interned<FindingId, Finding>,
    /// Last step's debug sessions and their nodes, with what they were built from.
    session_memo: reconcile::SessionMemo,
    /// The last snapshot as the step made it, before it was redacted: what an export reads
    /// this machine's files through (the real paths) and then redacts itself.
    raw: Arc<Snapshot>,
    seq: u64,
}

impl State {
    /// A state that has seen nothing.
    pub fn new(config: StateConfig) -> Self {
        Self {
            knowledge: Knowledge::default(),
            evaluator: Evaluator::new(config.verdicts),
            tombs: tombs::Tombs::new(config.tomb_ttl),
            timeline: Timeline::new(config.timeline_capacity)
                .with_command_lines(CommandLines::when_redacting(config.redact)),
            live: LiveTable::default(),
            redaction: LiveRedaction::new(config.home.clone()),
            procs: Interned::default(),
            tree: Vec::new(),
            sessions: Interned::default(),
            findings: Interned::default(),
            session_memo: reconcile::SessionMemo::default(),
            raw: Arc::new(empty_snapshot()),
            seq: 0,
            config,
        }
    }

    /// One step: the observation in, the update out. Each phase is a `trace` span (what the
    /// benchmark times).
    pub fn step(&mut self, obs: Observation) -> Update {
        self.seq += 1;
        if !self.config.reuse {
            self.forget_reused();
        }
        let (table, obs) = obs.take_procs();
        let events = trace_span!("step: knowledge").in_scope(|| self.knowledge.apply(&obs, &table));
        let world = self.world(table, &obs);
        let findings = trace_span!("step: rules").in_scope(|| self.verdicts(&world));
        trace_span!("step: timeline (world)")
            .in_scope(|| self.timeline.observe_world(&world, &findings, &events));
        let snapshot =
            trace_span!("step: snapshot").in_scope(|| self.snapshot(&world, findings, &obs));
        trace_span!("step: drop").in_scope(|| drop((world, obs)));
        self.publish(Update {
            seq: self.seq,
            snapshot,
            events,
        })
    }

    /// Forgets everything kept only to be reused (see [`reuse`]); what the step concludes
    /// over time (knowledge, held conditions, timeline, tombs) stays.
    fn forget_reused(&mut self) {
        self.procs = Interned::default();
        self.tree = Vec::new();
        self.sessions = Interned::default();
        self.findings = Interned::default();
        self.session_memo = reconcile::SessionMemo::default();
        self.redaction = LiveRedaction::new(self.config.home.clone());
        self.evaluator.forget_reused();
    }

    /// The confirmed findings, each last step's allocation where it did not change.
    fn verdicts(&mut self, world: &World) -> Vec<Arc<Finding>> {
        let findings = self.evaluator.evaluate(world, &self.live);
        trace_span!("step: sharing (findings)")
            .in_scope(|| self.findings.share_built(findings, |f| f.id.clone()))
    }

    /// The update as it leaves the step: redacted here and nowhere before (what the step keeps
    /// — the timeline, plans, log events — is raw), and its findings grouped as published.
    fn publish(&mut self, mut u: Update) -> Update {
        // Shares every element with the update (a copy of the lists, not of what they hold).
        self.raw = Arc::new(u.snapshot.clone());
        if self.config.redact {
            let _redaction = trace_span!("publish: redaction").entered();
            self.redaction.apply(&mut u.snapshot);
            // The raw log events leave the core too (`watch --json`, the app's channel).
            self.redaction.events(&mut u.events);
        }
        // From the findings as published (redacted): a group says only what its findings say.
        u.snapshot.groups = trace_span!("publish: groups")
            .in_scope(|| crate::model::group_findings(&u.snapshot.findings));
        u
    }

    /// The world of this observation (its table's processes and the rest of it), everything
    /// in it that did not change last step's allocation; the live table too.
    fn world(&mut self, table: Vec<Proc>, obs: &Observation<()>) -> World {
        let table = trace_span!("step: sharing (processes)")
            .in_scope(|| self.procs.share(table, |p| p.id()));
        let procs = trace_span!("step: timeline (processes)").in_scope(|| {
            let exited = self.timeline.observe_procs(obs.at, &table, &obs.exits);
            self.tombs.bury(exited, obs.at);
            let tombs = self.tombs.procs().into_iter().map(Arc::new);
            table.iter().cloned().chain(tombs).collect()
        });
        let mut world = trace_span!("step: reconcile").in_scope(|| {
            reconcile::reconcile(
                obs,
                procs,
                &self.knowledge,
                &mut self.session_memo,
                CommandLines::when_redacting(self.config.redact),
            )
        });
        trace_span!("step: sharing (tree, sessions)").in_scope(|| self.share_world(&mut world));
        self.live = trace_span!("step: live table")
            .in_scope(|| LiveTable::from_procs(table, obs.me.clone()));
        world
    }

    /// The world's tree and debug sessions as last step's allocations where they are equal.
    fn share_world(&mut self, world: &mut World) {
        world.tree = share::tree(&self.tree, std::mem::take(&mut world.tree));
        self.tree.clone_from(&world.tree);
        world.debug_sessions = self
            .sessions
            .share_built(std::mem::take(&mut world.debug_sessions), |d| {
                (d.server_pid, d.id.clone())
            });
    }

    /// The live processes of the last step (never tombs), for planning kills.
    pub fn live(&self) -> &LiveTable {
        &self.live
    }

    /// The last snapshot before redaction (see [`export::prepare`](crate::actions::export)):
    /// never shown as it is.
    pub fn raw_snapshot(&self) -> Arc<Snapshot> {
        Arc::clone(&self.raw)
    }

    /// Conditions seen at the last step but not yet confirmed.
    pub fn pending(&self) -> usize {
        self.evaluator.pending()
    }

    fn snapshot(
        &mut self,
        world: &World,
        findings: Vec<Arc<Finding>>,
        obs: &Observation<()>,
    ) -> Snapshot {
        let window = chrono::Duration::from_std(self.config.timeline_window)
            .unwrap_or_else(|_| chrono::Duration::minutes(10));
        let mut sources = vec![statuses::process_table_status(&obs.table.stats)];
        sources.extend(world.sources.iter().cloned());
        let s = Snapshot {
            schema: SCHEMA.to_owned(),
            taken_at: world.at,
            host: obs.host.clone(),
            debugtop: env!("CARGO_PKG_VERSION").to_owned(),
            redacted: false,
            servers: world.servers.clone(),
            http_sessions: world.http_sessions.clone(),
            debug_sessions: world.debug_sessions.clone(),
            processes: world.procs.clone(),
            tree: world.tree.clone(),
            // Grouped as published.
            groups: Vec::new(),
            findings,
            unconfirmed: if self.config.publish_unconfirmed {
                self.evaluator.unconfirmed().to_vec()
            } else {
                Vec::new()
            },
            timeline: self.timeline.since(world.at - window),
            log_excerpts: Vec::new(),
            sources,
            environment: None,
        };
        s
    }
}

/// A snapshot of nothing, before the first step.
fn empty_snapshot() -> Snapshot {
    Snapshot {
        schema: SCHEMA.to_owned(),
        taken_at: chrono::DateTime::UNIX_EPOCH,
        host: String::new(),
        debugtop: env!("CARGO_PKG_VERSION").to_owned(),
        redacted: false,
        servers: Vec::new(),
        http_sessions: Vec::new(),
        debug_sessions: Vec::new(),
        processes: Vec::new(),
        tree: Vec::new(),
        findings: Vec::new(),
        unconfirmed: Vec::new(),
        groups: Vec::new(),
        timeline: Vec::new(),
        log_excerpts: Vec::new(),
        sources: Vec::new(),
        environment: None,
    }
}
