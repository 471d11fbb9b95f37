//! Sources: all of debugtop's I/O except kill. One [`Sources`] reads the process table, the
//! exits the pidfd watcher saw, each server's listening ports, logs and `/health`, and the
//! servers given by URL, and returns it as one [`Observation`] per tick. Each source reports its
//! own health in words and never stops the others; only an unreadable process table is an error.

pub mod dap_trace;
pub mod discovery;
pub mod health;
pub mod log_budget;
pub mod logs;
pub mod server_logs;
pub mod stages;

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::collect::exits::ExitWatcher;
use crate::collect::Collector;
use crate::error::{Error, Result};
use crate::model::{
    Exit, HealthCheck, Observation, ProcId, ProcessTable, RemoteObservation, SelfInfo,
    ServerObservation, SourceKind, SourceState, SourceStatus,
};
use health::HealthClient;
use log_budget::LogBudget;
use server_logs::ServerLogs;

/// Anything that yields observations: the live [`Sources`], or a recording replayed.
pub trait Observe: Send {
    /// The next observation.
    fn observe(&mut self) -> impl Future<Output = Result<Observation>> + Send;
}

/// What the sources need to know.
#[derive(Debug, Clone)]
pub struct SourcesConfig {
    /// `/health` timeout.
    pub health_timeout: Duration,
    /// Servers given by URL (`http://host:port`), asked for `/health` only.
    pub extra_servers: Vec<String>,
    /// One look and no other (a one-shot `snapshot`): a process's CPU is its life's average,
    /// as `ps` gives it (there is no second sample); exits are not watched (there is no next
    /// look to tell them to) and the table is read on the calling thread (nothing else runs
    /// meanwhile) — no thread is started for it.
    pub one_look: bool,
}

impl Default for SourcesConfig {
    fn default() -> Self {
        Self {
            health_timeout: health::DEFAULT_TIMEOUT,
            extra_servers: Vec::new(),
            one_look: false,
        }
    }
}

impl SourcesConfig {
    /// What the sources read as `judging` says (its servers given by URL).
    pub fn judging(judging: &crate::judging::Judging) -> Self {
        Self {
            extra_servers: judging.extra_servers.clone(),
            ..Self::default()
        }
    }
}

/// The live sources of this machine.
#[derive(Debug)]
pub struct Sources {
    /// What reads files and `/proc` (blocking work): lent to a blocking thread each tick, so the
    /// async runtime never waits on a scan or a log read.
    local: Option<Box<Local>>,
    exits: Option<Arc<ExitWatcher>>,
    /// One look only (see [`SourcesConfig::one_look`]).
    one_look: bool,
    health: HealthClient,
    extra: Vec<String>,
    host: String,
}

/// The blocking part of the sources: the process table, the exit watcher's arming, and each
/// server's ports and log tails.
#[derive(Debug)]
struct Local {
    collector: Collector,
    exits: Option<Arc<ExitWatcher>>,
    /// Per server identity (pid, start time): a reused pid is another server.
    logs: BTreeMap<(u32, DateTime<Utc>), ServerLogs>,
    /// Each server's listening ports, by the same identity.
    ports: BTreeMap<(u32, DateTime<Utc>), discovery::PortMemo>,
}

/// What one blocking read gives.
type LocalRead = (ProcessTable, Vec<Exit>, Vec<ServerObservation>);

impl Sources {
    /// Opens the collector and starts the exit watcher.
    pub fn new(config: &SourcesConfig) -> Result<Self> {
        let exits = (!config.one_look).then(ExitWatcher::start).flatten();
        Self::with_exits(config, exits)
    }

    /// Opens the collector over `exits`, a watcher already made (a test's, without its
    /// thread, so that only the scan's own poll can see an exit).
    #[doc(hidden)]
    pub fn with_exits(config: &SourcesConfig, exits: Option<ExitWatcher>) -> Result<Self> {
        let exits = exits.map(Arc::new);
        let mut collector = Collector::new()?;
        collector.set_one_read_cpu(config.one_look);
        Ok(Self {
            local: Some(Box::new(Local {
                collector,
                exits: exits.clone(),
                logs: BTreeMap::new(),
                ports: BTreeMap::new(),
            })),
            exits,
            one_look: config.one_look,
            health: HealthClient::new(config.health_timeout),
            extra: config
                .extra_servers
                .iter()
                .map(|u| u.trim_end_matches('/').to_owned())
                .collect(),
            host: hostname::get()
                .map(|h| h.to_string_lossy().into_owned())
                .unwrap_or_default(),
        })
    }

    /// Resolves when a watched process exits (for an out-of-band tick); `None` where exits
    /// cannot be watched.
    pub fn exit_signal(&self) -> Option<Arc<ExitWatcher>> {
        self.exits.clone()
    }

    async fn observe_now(&mut self) -> Result<Observation> {
        let (table, exits, mut servers) = self.read_local().await?;
        self.ask_health(&mut servers).await;
        self.remember_said_ports(&servers);
        let remote = self.ask_remote().await;
        Ok(Observation {
            at: table.taken_at,
            host: self.host.clone(),
            exits,
            servers,
            remote,
            me: self_info(),
            sources: self.own_status(),
            table,
        })
    }

    /// The blocking reads, on a blocking thread.
    async fn read_local(&mut self) -> Result<LocalRead> {
        if self.one_look {
            return self.local.as_mut().ok_or(Error::SourcesLost)?.read();
        }
        let mut local = self.local.take().ok_or(Error::SourcesLost)?;
        let (local, read) = tokio::task::spawn_blocking(move || {
            let read = local.read();
            (local, read)
        })
        .await
        .map_err(|_| Error::SourcesLost)?;
        self.local = Some(local);
        read
    }
}

impl Local {
    fn read(&mut self) -> Result<LocalRead> {
        let scan = tracing::trace_span!("sources: process table").entered();
        // A process that has exited by now is read this scan even if it was quiet: it may be
        // a zombie, which its last read would show sleeping. Without a pidfd for every process
        // (none available, or descriptors ran out at the last watch) nothing is served from a
        // last read.
        let covered = self.exits.as_ref().is_some_and(|w| w.starved() == 0);
        self.collector.set_exits_watched(covered);
        if let Some(w) = &self.exits {
            self.collector.read_next(w.exited_by_now());
        }
        let table = self.collector.scan()?;
        drop(scan);
        let exits =
            tracing::trace_span!("sources: exit watch").in_scope(|| self.watched_exits(&table));
        // One budget for every server's logs this tick, servers in pid order (the table's).
        let mut budget = LogBudget::default();
        let servers: Vec<ServerObservation> = table
            .servers
            .iter()
            .map(|s| self.server_files(s, &table, &mut budget))
            .collect();
        let live: BTreeSet<(u32, DateTime<Utc>)> = table
            .servers
            .iter()
            .map(|s| (s.pid, s.start_time))
            .collect();
        self.logs.retain(|k, _| live.contains(k));
        self.ports.retain(|k, _| live.contains(k));
        Ok((table, exits, servers))
    }

    /// Arms a pidfd for every live process of the table; returns the exits seen since.
    fn watched_exits(&mut self, table: &ProcessTable) -> Vec<Exit> {
        let Some(w) = &self.exits else {
            return Vec::new();
        };
        w.watch(
            table
                .procs
                .iter()
                .filter(|p| p.sample.state.is_alive())
                .map(|p| (p.pid, p.start_ticks)),
        );
        let exits: Vec<Exit> = w
            .take_exits()
            .into_iter()
            .map(|((pid, ticks), at)| Exit {
                id: ProcId::new(pid, ticks),
                at,
            })
            .collect();
        // Seen during this scan: the next one reads them (a quiet one was not read now).
        self.collector.read_next(exits.iter().map(|e| e.id.pid));
        exits
    }

    /// One server's ports and logs (health comes after, for all servers at once).
    fn server_files(
        &mut self,
        s: &crate::model::ServerInfo,
        table: &ProcessTable,
        budget: &mut LogBudget,
    ) -> ServerObservation {
        let uid = table
            .procs
            .iter()
            .find(|p| p.pid == s.pid)
            .and_then(|p| p.uid);
        let endpoints = self
            .ports
            .entry((s.pid, s.start_time))
            .or_default()
            .endpoints(s, uid);
        let live: BTreeSet<String> = table
            .procs
            .iter()
            .filter(|p| p.server_pid == Some(s.pid))
            .filter_map(|p| p.session_id.clone())
            .collect();
        let logs = self
            .logs
            .entry((s.pid, s.start_time))
            .or_insert_with(|| ServerLogs::new(s.start_time, discovery::files(s), uid));
        let (log_events, logs_read) = logs.poll(&live, Instant::now(), budget);
        ServerObservation {
            pid: s.pid,
            health: None,
            endpoints,
            log_events,
            logs: logs_read,
            sessions: logs.sessions(),
        }
    }
}

impl Sources {
    /// Every `/health` at once: a hung server costs one timeout, not one per server.
    async fn ask_health(&self, servers: &mut [ServerObservation]) {
        let client = &self.health;
        let asks: Vec<(usize, String)> = servers
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((i, s.endpoints.base_url.clone()?)))
            .collect();
        let results =
            futures_util::future::join_all(asks.iter().map(|(_, url)| client.check(url))).await;
        for ((i, url), result) in asks.into_iter().zip(results) {
            servers[i].health = Some(HealthCheck { url, result });
        }
    }

    /// What each `/health` said of the port it bound, for the next tick's endpoints.
    fn remember_said_ports(&mut self, servers: &[ServerObservation]) {
        for s in servers {
            let Some(check) = &s.health else { continue };
            let said = check
                .result
                .as_ref()
                .ok()
                .and_then(|h| h.listening.as_ref());
            let Some(local) = self.local.as_mut() else {
                return;
            };
            if let Some(memo) = local.ports.iter_mut().find(|((pid, _), _)| *pid == s.pid) {
                memo.1.said(said.map(|l| l.port));
            }
        }
    }

    async fn ask_remote(&self) -> Vec<RemoteObservation> {
        let client = &self.health;
        let results =
            futures_util::future::join_all(self.extra.iter().map(|u| client.check(u))).await;
        self.extra
            .iter()
            .cloned()
            .zip(results)
            .map(|(url, health)| RemoteObservation { url, health })
            .collect()
    }

    fn own_status(&self) -> Vec<SourceStatus> {
        match &self.exits {
            Some(w) if w.starved() > 0 => vec![SourceStatus::new(
                SourceKind::Exits,
                None,
                SourceState::Degraded,
                format!(
                    "out of file descriptors (limit {}): {} processes are not watched by pidfd; \
                     they stay in the table and their exits are seen at the next tick",
                    crate::os::fd_limit().map_or("unknown".to_owned(), |l| l.to_string()),
                    w.starved()
                ),
            )],
            Some(_) => Vec::new(),
            None => vec![SourceStatus::new(
                SourceKind::Exits,
                None,
                SourceState::Degraded,
                "pidfds are not available: exits are seen at the next tick".into(),
            )],
        }
    }
}

impl Observe for Sources {
    fn observe(&mut self) -> impl Future<Output = Result<Observation>> + Send {
        self.observe_now()
    }
}

/// This process and its ancestors up to init (kill plans refuse all of them).
pub fn self_info() -> SelfInfo {
    let pid = std::process::id();
    let mut ancestors = Vec::new();
    let mut cur = pid;
    for _ in 0..128 {
        let Some(ppid) = crate::collect::parent_pid(cur) else {
            break;
        };
        if ppid == 0 || ancestors.contains(&ppid) {
            break;
        }
        ancestors.push(ppid);
        cur = ppid;
    }
    SelfInfo {
        pid,
        uid: crate::os::my_uid(),
        ancestors,
    }
}
