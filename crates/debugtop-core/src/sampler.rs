//! The sampler: the one loop that owns polling. Each tick: collect → discover → logs → health →
//! reconcile, and the result is published on a `tokio::sync::watch` channel, so a slow consumer
//! only ever sees the latest update and never slows the loop. Views (CLI, app) never poll the OS.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::collect::Collector;
use crate::error::{Error, Result};
use crate::model::ServerMode;
use crate::reconcile::Reconciler;
use crate::snapshot::Snapshot;
use crate::sources::discovery;
use crate::sources::health::{HealthClient, DEFAULT_TIMEOUT};
use crate::sources::logs::LogEvent;
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
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            health_timeout: DEFAULT_TIMEOUT,
            extra_servers: Vec::new(),
            redact: true,
            verdicts: VerdictConfig::default(),
        }
    }
}

/// One published result.
#[derive(Debug, Clone, Serialize)]
pub struct Update {
    /// Tick number, from 1.
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
            config,
            seq: 0,
            last_world: None,
        })
    }

    /// One tick. Every source failure is recorded in the snapshot's `sources`; only a failure
    /// to read the process table at all is an error.
    pub async fn tick(&mut self) -> Result<Update> {
        self.seq += 1;
        let table = self.collector.scan()?;
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
        let snapshot = Snapshot::from_world(&world, findings, self.config.redact);
        self.last_world = Some(world);
        Ok(Update {
            seq: self.seq,
            snapshot,
            events,
        })
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
        loop {
            ticker.tick().await;
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
