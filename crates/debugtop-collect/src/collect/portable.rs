//! The portable collector: `sysinfo`, for systems without `/proc` (macOS, Windows, BSDs).
//!
//! It gives the subset sysinfo exposes: pid, ppid, state, start time (seconds), CPU, RSS, argv,
//! environment, uid. Process group and session are not portable and are reported as 0. It is
//! compiled (and tested) on Linux too, so it cannot silently rot.

use std::sync::Arc;
use std::time::Instant;

use chrono::{TimeZone, Utc};
use sysinfo::{ProcessRefreshKind, ProcessStatus, ProcessesToUpdate, System, UpdateKind};

use super::classify::{classify, is_env_candidate, pkg_dir_of, Signature};
use super::parse::{parse_cmdline, parse_env_markers};
use super::{finish, Harvest, Ident, IdentityCache, ProcessTable, Sample, ScanStats, YOUNG};
use crate::error::{Error, Result};
use debugtop_model::{EnvMarkers, ProcState};

/// The sysinfo-backed collector.
#[derive(Debug)]
pub struct SysinfoCollector {
    sys: System,
    cache: IdentityCache,
    gen: u64,
}

impl SysinfoCollector {
    /// A new collector.
    pub fn new() -> Result<Self> {
        let sys = System::new().map_err(|e| Error::SystemInfo {
            what: "the process list (sysinfo)",
            detail: e.to_string(),
        })?;
        Ok(Self {
            sys,
            cache: IdentityCache::default(),
            gen: 0,
        })
    }

    /// Reads are not skipped here: nothing to force.
    pub fn read_next(&mut self, _pids: impl IntoIterator<Item = u32>) {}

    /// Every process is read every scan here.
    pub fn set_exits_watched(&mut self, _watched: bool) {}

    /// CPU needs two samples here.
    pub fn set_one_read_cpu(&mut self, _on: bool) {}

    /// One pass over the process table.
    pub fn scan(&mut self) -> Result<ProcessTable> {
        let started = Instant::now();
        self.gen += 1;
        let gen = self.gen;
        let young = self.refresh();
        let now = Instant::now();
        let mut stats = ScanStats::default();
        let mut samples = Vec::new();
        for (pid, p) in self.sys.processes() {
            let pid = pid.as_u32();
            // sysinfo gives seconds; scale so identities still differ when a pid is reused.
            let start_ticks = p.start_time().saturating_mul(100);
            let young = young.binary_search(&sysinfo::Pid::from_u32(pid)).is_ok();
            let ident = identity(&mut self.cache, pid, start_ticks, p, young, &mut stats);
            let _ = self
                .cache
                .observe(pid, start_ticks, Arc::clone(&ident), 0, 100, now, gen);
            stats.processes += 1;
            samples.push(sample_of(pid, p, start_ticks, ident));
        }
        stats.exited = u32::try_from(self.cache.sweep(gen)).unwrap_or(u32::MAX);
        Ok(finish(
            Harvest {
                samples,
                stats,
                started,
            },
            &mut self.cache,
            &mut super::NoFds,
        ))
    }

    /// Every process's numbers; a command line, environment and user once per process, and
    /// again while the process is young: between fork and exec a child shows its parent's
    /// command line, and sysinfo keeps the first one it read. The young processes, sorted.
    fn refresh(&mut self) -> Vec<sysinfo::Pid> {
        self.sys.refresh_processes_specifics(
            ProcessesToUpdate::All,
            true,
            ProcessRefreshKind::nothing()
                .with_cpu()
                .with_memory()
                .with_cmd(UpdateKind::OnlyIfNotSet)
                .with_environ(UpdateKind::OnlyIfNotSet)
                .with_user(UpdateKind::OnlyIfNotSet),
        );
        let young = self.young_pids();
        if !young.is_empty() {
            self.sys.refresh_processes_specifics(
                ProcessesToUpdate::Some(&young),
                false,
                ProcessRefreshKind::nothing()
                    .with_cmd(UpdateKind::Always)
                    .with_environ(UpdateKind::Always),
            );
        }
        young
    }

    /// The processes started less than [`YOUNG`] ago (a second more: sysinfo's start times are
    /// whole seconds), sorted.
    fn young_pids(&self) -> Vec<sysinfo::Pid> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut young: Vec<sysinfo::Pid> = self
            .sys
            .processes()
            .iter()
            .filter(|(_, p)| now.saturating_sub(p.start_time()) <= YOUNG.as_secs() + 1)
            .map(|(pid, _)| *pid)
            .collect();
        young.sort_unstable();
        young
    }
}

/// What `p` says about itself: cached per identity, read again while it is young; a changed
/// read (it exec'd) drops what was concluded about the old image.
fn identity(
    cache: &mut IdentityCache,
    pid: u32,
    start_ticks: u64,
    p: &sysinfo::Process,
    young: bool,
    stats: &mut ScanStats,
) -> Arc<Ident> {
    match cache.get(pid, start_ticks).cloned() {
        Some(known) if !young => known,
        None => {
            stats.new_identities += 1;
            Arc::new(ident_of(p))
        }
        Some(known) => {
            let fresh = ident_of(p);
            if *known == fresh {
                known
            } else {
                cache.forget(pid);
                Arc::new(fresh)
            }
        }
    }
}

/// One process as the relating step wants it (sysinfo knows no groups or sessions).
fn sample_of(pid: u32, p: &sysinfo::Process, start_ticks: u64, ident: Arc<Ident>) -> Sample {
    Sample {
        pid,
        ppid: p.parent().map(|p| p.as_u32()).unwrap_or(0),
        pgid: 0,
        sid: 0,
        state: state_of(p.status()),
        start_ticks,
        start_time: Utc
            .timestamp_opt(i64::try_from(p.start_time()).unwrap_or(0), 0)
            .single()
            .unwrap_or_default(),
        cpu_percent: Some(p.cpu_usage()),
        rss_bytes: p.memory(),
        markers: ident.markers.clone(),
        owner_pid: super::raw_owner(&ident.signature),
        stdio: None,
        channel: None,
        parent_writes_stdin: false,
        adopted: None,
        dead_end: None,
        ident,
    }
}

/// What a process says about itself, read once per identity.
fn ident_of(p: &sysinfo::Process) -> Ident {
    let nul_joined = |parts: &[std::ffi::OsString]| {
        let mut raw = Vec::new();
        for a in parts {
            raw.extend_from_slice(a.as_encoded_bytes());
            raw.push(0);
        }
        raw
    };
    let argv = parse_cmdline(&nul_joined(p.cmd()));
    let markers = if is_env_candidate(&argv) {
        parse_env_markers(&nul_joined(p.environ()))
    } else {
        EnvMarkers::default()
    };
    let signature = classify(&argv, &markers);
    let pkg_dir = match &signature {
        Signature::Server { script, .. } => pkg_dir_of(script),
        _ => None,
    };
    Ident {
        uid: p.user_id().and_then(|u| u.to_string().parse::<u32>().ok()),
        host: markers.host.or_else(|| super::classify::host_kind(&argv)),
        argv: argv.into(),
        markers,
        signature,
        pkg_dir,
        stdio: None,
        channels: Vec::new(),
        ns: None,
        mcp: None,
        tracer_pid: None,
        wine: false,
    }
}

fn state_of(s: ProcessStatus) -> ProcState {
    match s {
        ProcessStatus::Run => ProcState::Running,
        ProcessStatus::Sleep => ProcState::Sleeping,
        ProcessStatus::Idle => ProcState::Idle,
        ProcessStatus::Stop => ProcState::Stopped,
        ProcessStatus::Zombie => ProcState::Zombie,
        ProcessStatus::Tracing => ProcState::TracingStop,
        ProcessStatus::Dead => ProcState::Dead,
        ProcessStatus::UninterruptibleDiskSleep => ProcState::DiskSleep,
        ProcessStatus::Wakekill => ProcState::WakeKill,
        ProcessStatus::Waking => ProcState::Waking,
        ProcessStatus::Parked => ProcState::Parked,
        _ => ProcState::Unknown,
    }
}
