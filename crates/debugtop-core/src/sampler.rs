//! The sampler: the one loop that owns polling. Each tick: the sources observe, the state steps,
//! and the update is published on a `tokio::sync::watch` channel, so a slow consumer only ever
//! sees the latest update and never slows the loop. Views (CLI, app) never poll the OS. A tick
//! that fails is published as an error (the loop goes on) and shown by both front ends.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::error::Result;
use crate::model::{LiveTable, Update};
use crate::sources::{Observe, Sources, SourcesConfig};
use crate::state::{State, StateConfig};

/// Sampler settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// Time between ticks (default 1 s).
    pub interval: Duration,
    /// What the sources read.
    pub sources: SourcesConfig,
    /// What the state step is told.
    pub state: StateConfig,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            sources: SourcesConfig::default(),
            state: StateConfig {
                home: crate::redact::home_dir(),
                ..StateConfig::default()
            },
        }
    }
}

impl Config {
    /// The sampler `judging` asks for: its interval, sources and verdicts.
    pub fn judging(judging: &crate::judging::Judging) -> Self {
        let mut c = Self {
            interval: judging.interval,
            sources: SourcesConfig::judging(judging),
            ..Self::default()
        };
        c.state.verdicts = crate::state::rules::VerdictConfig::judging(judging);
        c
    }
}

/// One tick's result as published: the update the views draw, the live table a kill is
/// planned against, and the snapshot before redaction an export is made from (neither is ever
/// sent to a view).
#[derive(Debug, Clone)]
pub struct Published {
    /// The update.
    pub update: Arc<Update>,
    /// The live processes of this tick.
    pub live: Arc<LiveTable>,
    /// The snapshot before redaction, for an export (`actions::export::prepare`).
    pub raw: Arc<crate::model::Snapshot>,
    /// How long the tick took: the sources' look and the step.
    pub took: Duration,
}

impl Config {
    /// A one-shot look (the CLI's `snapshot`): one look, no waiting — a process's CPU is its
    /// life's average (as `ps` gives it), no exit watcher and no reading thread — and what holds
    /// now but has not held for its grace named as not yet confirmed. `servers`: also asked for
    /// `/health` by URL; `redact`: as published.
    pub fn one_look(servers: Vec<String>, redact: bool) -> Self {
        let mut c = Self::default();
        c.sources.extra_servers = servers;
        c.sources.one_look = true;
        c.state.publish_unconfirmed = true;
        c.state.redact = redact;
        c
    }
}

/// One look at this machine, as `config` says (see [`Config::one_look`]): the snapshot before
/// redaction, for an export (`actions::export::prepare`).
pub async fn one_look_here(config: &Config) -> Result<Arc<crate::model::Snapshot>> {
    one_look(config, Sources::new).await
}

/// [`one_look_here`] over the sources `open` makes of `config.sources` (this machine's, or a
/// test's wrapper around them): exactly one observation, stepped once. A one-shot snapshot
/// waits for no second look (it once took two, 250 ms apart, for CPU).
pub async fn one_look<O: Observe>(
    config: &Config,
    open: impl FnOnce(&SourcesConfig) -> Result<O>,
) -> Result<Arc<crate::model::Snapshot>> {
    let mut sources = open(&config.sources)?;
    let mut state = State::new(config.state.clone());
    let obs = sources
        .observe()
        .instrument(tracing::trace_span!("sources"))
        .await?;
    state.step(obs);
    Ok(state.raw_snapshot())
}

/// Sources and state, driven one tick at a time.
#[derive(Debug)]
pub struct Engine {
    sources: Sources,
    state: State,
}

impl Engine {
    /// A new engine over this machine's sources.
    pub fn new(config: Config) -> Result<Self> {
        Ok(Self {
            sources: Sources::new(&config.sources)?,
            state: State::new(config.state),
        })
    }

    /// A new engine whose sources watch exits with `exits` (see [`Sources::with_exits`]).
    #[doc(hidden)]
    pub fn with_exits(
        config: Config,
        exits: Option<crate::collect::exits::ExitWatcher>,
    ) -> Result<Self> {
        Ok(Self {
            sources: Sources::with_exits(&config.sources, exits)?,
            state: State::new(config.state),
        })
    }

    /// One tick. Every source failure is recorded in the snapshot's `sources`; only a failure
    /// to read the process table at all is an error.
    pub async fn tick(&mut self) -> Result<Update> {
        let obs = self
            .sources
            .observe()
            .instrument(tracing::trace_span!("sources"))
            .await?;
        Ok(self.state.step(obs))
    }

    /// The live processes of the last tick (never tombs), for planning kills.
    pub fn live(&self) -> &LiveTable {
        self.state.live()
    }

    /// The last tick's snapshot before redaction, for an export.
    pub fn raw_snapshot(&self) -> Arc<crate::model::Snapshot> {
        self.state.raw_snapshot()
    }

    /// The exit watcher, where pidfds are available.
    pub fn exit_signal(&self) -> Option<std::sync::Arc<crate::collect::exits::ExitWatcher>> {
        self.sources.exit_signal()
    }

    fn published(&self, update: Update, took: Duration) -> Published {
        Published {
            update: Arc::new(update),
            live: Arc::new(self.state.live().clone()),
            raw: self.state.raw_snapshot(),
            took,
        }
    }
}

/// A running sampler: the latest update, the latest tick error, and the task.
#[derive(Debug)]
pub struct Running {
    /// Always holds the latest result (`None` before the first tick).
    pub updates: watch::Receiver<Option<Published>>,
    /// The latest tick error, cleared by the next good tick.
    pub errors: watch::Receiver<Option<String>>,
    /// The loop; abort it to stop.
    pub task: JoinHandle<()>,
}

/// How long an exit tick waits for the rest of a burst of exits.
pub const EXIT_DEBOUNCE: Duration = Duration::from_millis(20);
/// At most one exit-triggered tick per this long (the interval's ticks are not affected).
pub const EXIT_MIN_GAP: Duration = Duration::from_millis(250);

/// Starts the loop on the current tokio runtime.
pub fn spawn(config: Config) -> Result<Running> {
    let interval = config.interval.max(Duration::from_millis(50));
    let mut engine = Engine::new(config)?;
    let (tx, rx) = watch::channel(None);
    let (etx, erx) = watch::channel(None);
    let task = tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let exits = engine.sources.exit_signal();
        let mut last = tokio::time::Instant::now();
        loop {
            // A tick on the interval, or soon after a watched process exits: a burst of exits
            // (500 leaked workers killed at once) is a few ticks, not one `/health` round per
            // exit — wait a moment for the rest of the burst, and at most one exit tick per
            // EXIT_MIN_GAP. Each exit keeps the time the watcher saw it.
            match &exits {
                Some(w) => {
                    tokio::select! {
                        _ = ticker.tick() => {}
                        () = w.exited() => {
                            let now = tokio::time::Instant::now();
                            tokio::time::sleep_until((last + EXIT_MIN_GAP).max(now + EXIT_DEBOUNCE)).await;
                        }
                    }
                }
                None => {
                    ticker.tick().await;
                }
            }
            last = tokio::time::Instant::now();
            match engine.tick().await {
                Ok(u) => {
                    // `send_replace` never waits for readers: a slow consumer just misses ticks.
                    tx.send_replace(Some(engine.published(u, last.elapsed())));
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
        errors: erx,
        task,
    })
}
