//! The sampler: the one loop that owns polling. Each tick: collect → discover → logs → health →
//! reconcile, and the result is published on a `tokio::sync::watch` channel, so a slow consumer
//! only ever sees the latest update and never slows the loop. Views (CLI, app) never poll the OS.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::collect::exits::ExitWatcher;
use crate::collect::Collector;
use crate::error::{Error, Result};
use crate::model::ServerMode;
use crate::reconcile::Reconciler;
use crate::snapshot::Snapshot;
use crate::sources::discovery;
use crate::sources::health::{HealthClient, DEFAULT_TIMEOUT};
use crate::sources::logs::LogEvent;
use crate::timeline::Timeline;
use crate::verdict::{Evaluator, VerdictConfig};

/// Sampler settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between ticks (default 1 s).
    pub interval: Duration,
    /// `/health` timeout (default 1.5 s).
    pub health_timeout: Duration,
    /// Servers given by URL (`http://host:port`), asked for `/health` only.
    pub extra_servers: Vec<String>,
    /// Redact argv in published snapshots (default on).
    pub redact: bool,
    /// Verdict rules: grace, spin threshold, live or audit confirmation.
    pub verdicts: VerdictConfig,
    /// Timeline events kept in memory (a ring).
    pub timeline_capacity: usize,
    /// How long just-exited processes stay as tombs.
    pub tomb_ttl: Duration,
    /// How much of the timeline each published snapshot carries.
    pub timeline_window: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            health_timeout: DEFAULT_TIMEOUT,
            extra_servers: Vec::new(),
            redact: true,
            verdicts: VerdictConfig::default(),
            timeline_capacity: crate::timeline::DEFAULT_CAPACITY,
            tomb_ttl: crate::timeline::DEFAULT_TOMB_TTL,
            timeline_window: Duration::from_secs(600),
        }
    }
}

/// One published result.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct Update {
    /// Tick number, from 1.
    #[ts(type = "number")]
    pub seq: u64,
    /// The reconciled snapshot.
    pub snapshot: Snapshot,
    /// Log events read during this tick.
    pub events: Vec<LogEvent>,
}

/// Collector, sources and reconciler, driven one tick at a time.
#[derive(Debug)]
pub struct Engine {
    config: Config,
    collector: Collector,
    reconciler: Reconciler,
    health: HealthClient,
    evaluator: Evaluator,
    timeline: Timeline,
    exits: Option<Arc<ExitWatcher>>,
    seq: u64,
    last_world: Option<crate::reconcile::World>,
}

impl Engine {
    /// A new engine.
    pub fn new(config: Config) -> Result<Self> {
        Ok(Self {
            health: HealthClient::new(config.health_timeout),
            collector: Collector::new()?,
            reconciler: Reconciler::default(),
            evaluator: Evaluator::new(config.verdicts),
            timeline: Timeline::new(config.timeline_capacity, config.tomb_ttl),
            exits: ExitWatcher::start().map(Arc::new),
            config,
            seq: 0,
            last_world: None,
        })
    }

    /// One tick. Every source failure is recorded in the snapshot's `sources`; only a failure
    /// to read the process table at all is an error.
    pub async fn tick(&mut self) -> Result<Update> {
        self.seq += 1;
        let mut table = self.collector.scan()?;
        let now = table.taken_at;
        let exits = match &self.exits {
            Some(w) => {
                w.watch(
                    table
                        .procs
                        .iter()
                        .filter(|p| p.state.is_alive())
                        .map(|p| (p.pid, p.start_ticks)),
                );
                w.take_exits()
            }
            None => Vec::new(),
        };
        self.timeline.observe_procs(now, &table.procs, &exits);
        table.procs.extend(self.timeline.tombs());
        let mut checks = Vec::new();
        for s in &table.servers {
            let endpoints = discovery::endpoints(s);
            if s.mode == ServerMode::Http {
                if let Some(base) = endpoints.base_url.clone() {
                    checks.push((Some(s.pid), base));
                }
            }
            let live: BTreeSet<String> = table
                .procs
                .iter()
                .filter(|p| p.server_pid == Some(s.pid))
                .filter_map(|p| p.session_id.clone())
                .collect();
            self.reconciler.poll_logs(s, endpoints, &live);
        }
        checks.extend(
            self.config
                .extra_servers
                .iter()
                .map(|u| (None, u.trim_end_matches('/').to_owned())),
        );
        // All health checks at once: a hung server costs one timeout, not one per server.
        let client = &self.health;
        let results =
            futures_util::future::join_all(checks.iter().map(|(_, base)| client.check(base))).await;
        for ((pid, base), r) in checks.into_iter().zip(results) {
            match pid {
                Some(pid) => self.reconciler.set_health(pid, base, r),
                None => self.reconciler.set_remote_health(base, r),
            }
        }
        let mut world = self.reconciler.build(table);
        let events = std::mem::take(&mut world.new_events);
        let findings = self.evaluator.evaluate(&world);
        let live_sessions = world
            .table
            .procs
            .iter()
            .filter(|p| p.state.is_alive())
            .filter_map(|p| Some((p.server_pid, p.session_id.clone()?)))
            .collect();
        self.timeline.observe_world(
            now,
            &world.debug_sessions,
            &live_sessions,
            &findings,
            &events,
        );
        let window = chrono::Duration::from_std(self.config.timeline_window)
            .unwrap_or_else(|_| chrono::Duration::minutes(10));
        let timeline = self.timeline.since(now - window);
        let snapshot = Snapshot::from_world(&world, findings, timeline, self.config.redact);
        self.last_world = Some(world);
        Ok(Update {
            seq: self.seq,
            snapshot,
            events,
        })
    }

    /// Resolves when a watched process exits (never, where exits cannot be watched).
    pub fn exit_signal(&self) -> Option<Arc<ExitWatcher>> {
        self.exits.clone()
    }

    /// The world of the last tick (unredacted; for planning kills).
    pub fn last_world(&self) -> Option<&crate::reconcile::World> {
        self.last_world.as_ref()
    }
}

/// A running sampler: the latest update, and the task.
#[derive(Debug)]
pub struct Running {
    /// Always holds the latest update (`None` before the first tick).
    pub updates: watch::Receiver<Option<Arc<Update>>>,
    /// The loop; abort it to stop.
    pub task: JoinHandle<()>,
    /// Where tick errors are reported (the loop goes on).
    pub errors: watch::Receiver<Option<String>>,
}

/// Starts the loop on the current tokio runtime.
pub fn spawn(config: Config) -> Result<Running> {
    let interval = config.interval.max(Duration::from_millis(50));
    let mut engine = Engine::new(config)?;
    let (tx, rx) = watch::channel(None);
    let (etx, erx) = watch::channel(None);
    let task = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let exits = engine.exit_signal();
        loop {
            // A tick on the interval, or at once when a watched process exits.
            match &exits {
                Some(w) => {
                    tokio::select! {
                        _ = ticker.tick() => {}
                        () = w.exited() => {}
                    }
                }
                None => {
                    ticker.tick().await;
                }
            }
            match engine.tick().await {
                Ok(u) => {
                    // `send_replace` never waits for readers: a slow consumer just misses ticks.
                    tx.send_replace(Some(Arc::new(u)));
                    etx.send_replace(None);
                }
                Err(e) => {
                    etx.send_replace(Some(e.to_string()));
                }
            }
            if tx.is_closed() {
                break;
            }
        }
    });
    Ok(Running {
        updates: rx,
        task,
        errors: erx,
    })
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Self {
        Error::SystemInfo {
            what: "a background task",
            detail: e.to_string(),
        }
    }
}
