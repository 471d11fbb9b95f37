//! The Windows collector: the same [`ProcessTable`] as procfs gives on Linux, from Toolhelp32
//! (pids, parents, executable names), process handles (creation time — with the pid, the
//! identity, since Windows reuses pids quickly —, CPU time, working set, owner) and each
//! process's PEB (its command line and environment: the only way that works for other
//! processes of the same user, and under Wine).
//!
//! Windows never re-parents: a process keeps the parent pid it was created with, and that pid
//! may since belong to a younger process. A parent created after its child is therefore no
//! parent (see [`super::unlink_reused_parents`]). Windows has no scheduler state to read per
//! process, no process groups or sessions as Unix has them, and no zombies: states are
//! `Unknown`, groups and sessions 0. `conhost.exe` under a live console program is that
//! program's console, not a node of the tree: it is folded into its owner.

pub mod exits;

use crate::win32 as sys;

use std::sync::Arc;
use std::time::Instant;

use chrono::{DateTime, TimeZone, Utc};

use super::classify::{classify, is_env_candidate, pkg_dir_of, Signature};
use super::parse::{parse_cmdline, parse_env_markers};
use super::{finish, Harvest, Ident, IdentityCache, ProcessTable, Sample, ScanStats};
use crate::error::Result;
use debugtop_model::{EnvMarkers, FdKind, ProcState, Stdio};

/// Windows' time unit: 100 ns.
pub const TICKS_PER_SEC: u64 = 10_000_000;
/// 1601-01-01 to 1970-01-01 in 100 ns units.
const UNIX_EPOCH_TICKS: u64 = 116_444_736_000_000_000;
/// The longest command line read (UTF-16 units; Windows' own limit is 32,767).
const MAX_COMMAND_LINE: usize = 32_767;
/// The most of an environment block read (UTF-16 units).
const MAX_ENVIRONMENT: usize = 128 * 1024;

/// The Windows collector.
#[derive(Debug, Default)]
pub struct WindowsCollector {
    cache: IdentityCache,
    gen: u64,
    /// Under Wine 8, `GetProcessTimes` of other processes does not give their CPU time
    /// (measured: a busy loop and an idle timer both showed the same 11.5 %), so CPU is not
    /// reported there.
    wine: bool,
    /// A process's first read gives its CPU over its life (a one-shot look).
    one_read_cpu: bool,
}

impl WindowsCollector {
    /// A new collector.
    pub fn new() -> Result<Self> {
        Ok(Self {
            wine: sys::is_wine(),
            ..Self::default()
        })
    }

    /// Reads are not skipped here: nothing to force.
    pub fn read_next(&mut self, _pids: impl IntoIterator<Item = u32>) {}

    /// Every process is read every scan here.
    pub fn set_exits_watched(&mut self, _watched: bool) {}

    /// A process's first read gives its CPU over its whole life (as Task Manager's "CPU
    /// time" over its age) instead of nothing until a second sample: for a one-shot look.
    pub fn set_one_read_cpu(&mut self, on: bool) {
        self.one_read_cpu = on;
    }

    /// One pass over the process table.
    pub fn scan(&mut self) -> Result<ProcessTable> {
        let started = Instant::now();
        self.gen += 1;
        let entries = sys::snapshot().map_err(|e| crate::error::Error::SystemInfo {
            what: "the process list (Toolhelp32)",
            detail: e.to_string(),
        })?;
        let now = Instant::now();
        let mut stats = ScanStats::default();
        let mut samples = Vec::with_capacity(entries.len());
        for e in entries.iter().filter(|e| e.pid != 0) {
            if let Some(s) = self.sample(e, now, &mut stats) {
                samples.push(s);
            }
        }
        super::unlink_reused_parents(&mut samples);
        fold_consoles(&mut samples);
        stats.processes = u32::try_from(samples.len()).unwrap_or(u32::MAX);
        stats.cpu_unmeasured = self.wine;
        stats.no_states = true;
        stats.exited = u32::try_from(self.cache.sweep(self.gen)).unwrap_or(u32::MAX);
        Ok(finish(
            Harvest {
                samples,
                stats,
                started,
            },
            &mut self.cache,
            &mut WindowsPipes,
        ))
    }

    /// One process: what its handle gives, or what Toolhelp gave when it cannot be opened.
    fn sample(&mut self, e: &sys::Entry, now: Instant, stats: &mut ScanStats) -> Option<Sample> {
        let h = open_counted(e.pid, stats);
        let (created, cpu_ticks) = h.as_ref().and_then(sys::Handle::times).unwrap_or((0, 0));
        let ident = match self.cache.get(e.pid, created) {
            Some(k) => Arc::clone(k),
            None => {
                stats.new_identities += 1;
                Arc::new(ident_of(e, h.as_ref()))
            }
        };
        let cpu = self.cache.observe(
            e.pid,
            created,
            Arc::clone(&ident),
            cpu_ticks,
            TICKS_PER_SEC,
            now,
            self.gen,
        );
        // Only asked for by a one-shot look: the clock is not read for every new identity.
        let cpu = cpu.or_else(|| {
            self.one_read_cpu
                .then(|| lifetime_cpu(created, cpu_ticks))
                .flatten()
        });
        // Not openable: listed with what Toolhelp gave; no CPU without a creation time.
        let cpu_percent = cpu.filter(|_| created != 0 && !self.wine);
        Some(Sample {
            pid: e.pid,
            ppid: e.ppid,
            pgid: 0,
            sid: 0,
            state: ProcState::Unknown,
            start_ticks: created,
            start_time: start_time(created),
            cpu_percent,
            rss_bytes: h.as_ref().and_then(sys::Handle::working_set).unwrap_or(0),
            markers: ident.markers.clone(),
            owner_pid: super::raw_owner(&ident.signature),
            stdio: ident.stdio,
            channel: ident.stdio.and_then(|x| x.stdin_channel()),
            parent_writes_stdin: false,
            adopted: None,
            dead_end: None,
            ident,
        })
    }
}

/// A process's handle, read access if it can be had, else query; a process that opens with
/// neither is counted as denied.
fn open_counted(pid: u32, stats: &mut ScanStats) -> Option<sys::Handle> {
    let handle = sys::open(pid, sys::Access::Read).or_else(|_| sys::open(pid, sys::Access::Query));
    if handle.is_err() {
        stats.denied += 1;
    }
    handle.ok()
}

/// A process's CPU over its whole life from one read (`created` and `cpu_ticks` in 100 ns
/// ticks), as a one-shot look gives it.
fn lifetime_cpu(created: u64, cpu_ticks: u64) -> Option<f32> {
    let now = u64::try_from(chrono::Utc::now().timestamp_micros()).ok()?;
    let age = now
        .saturating_mul(10)
        .saturating_add(UNIX_EPOCH_TICKS)
        .checked_sub(created)?;
    super::lifetime_percent(cpu_ticks, age)
}

/// The wall-clock start of a creation time (the Unix epoch when unknown).
pub fn start_time(created: u64) -> DateTime<Utc> {
    let since_epoch = created.saturating_sub(UNIX_EPOCH_TICKS);
    let secs = i64::try_from(since_epoch / TICKS_PER_SEC).unwrap_or(0);
    let nanos = u32::try_from((since_epoch % TICKS_PER_SEC) * 100).unwrap_or(0);
    Utc.timestamp_opt(secs, nanos).single().unwrap_or_default()
}

/// What a process says about itself: argv from its PEB (or just its executable's name when
/// the PEB cannot be read), markers from its environment for candidates, its owner.
fn ident_of(e: &sys::Entry, h: Option<&sys::Handle>) -> Ident {
    let line = h.and_then(|h| h.command_line(MAX_COMMAND_LINE));
    let split = line
        .as_deref()
        .map(sys::split_command_line)
        .filter(|a| !a.is_empty())
        .unwrap_or_else(|| vec![e.exe.clone()]);
    let argv = parse_cmdline(&nul_joined(split.iter().map(String::as_str)));
    let markers = match h.filter(|_| is_env_candidate(&argv)) {
        Some(h) => h
            .environment(MAX_ENVIRONMENT)
            .map_or_else(EnvMarkers::default, |env| {
                parse_env_markers(String::from_utf16_lossy(&env).as_bytes())
            }),
        None => EnvMarkers::default(),
    };
    let signature = classify(&argv, &markers);
    let pkg_dir = match &signature {
        Signature::Server { script, .. } => pkg_dir_of(&super::classify::unix_slashes(script)),
        _ => None,
    };
    let stdio = h
        .filter(|_| is_env_candidate(&argv))
        .and_then(sys::Handle::stdio_kinds)
        .map(|(i, o)| Stdio {
            stdin: fd_kind(i),
            stdout: fd_kind(o),
        });
    let uid = h.and_then(sys::Handle::user_rid);
    // Only an absolute script path is resolved: another process's working directory is not
    // read here. Its files are read for its user (an unknown user's are not read by an
    // elevated debugtop: the package of every process went unread under Wine, which runs
    // everything elevated).
    let mcp = match &signature {
        Signature::None if stdio.is_some_and(|x| x.piped()) => super::mcp::evidence(
            &argv,
            |s| {
                let p = std::path::PathBuf::from(s);
                p.is_absolute().then_some(p)
            },
            uid,
        ),
        _ => None,
    };
    Ident {
        uid,
        host: markers.host.or_else(|| super::classify::host_kind(&argv)),
        argv: argv.into(),
        markers,
        signature,
        pkg_dir,
        stdio,
        channels: Vec::new(),
        ns: None,
        mcp,
        tracer_pid: None,
        wine: false,
    }
}

/// A standard handle as the model names it (a pipe has no inode here: 0).
fn fd_kind(k: sys::StdKind) -> FdKind {
    match k {
        sys::StdKind::Pipe => FdKind::Pipe { inode: 0 },
        sys::StdKind::Char | sys::StdKind::Disk => FdKind::Other,
        sys::StdKind::Unknown => FdKind::Unknown,
    }
}

/// What Windows lets a normal user tell about stdio pipes: that a process's stdin is one, not
/// who holds its other end (that takes enumerating every process's handles). A child whose
/// stdin is a pipe is taken as written to by the live parent that started it — the way every
/// host starts its stdio servers —, and a stdio server's reachability is marked unchecked, so
/// the rules rest it on its host being gone.
#[derive(Debug, Default)]
struct WindowsPipes;

impl super::FdView for WindowsPipes {
    fn mark_parent_writers(&mut self, samples: &mut [Sample]) {
        let alive: std::collections::HashSet<u32> = samples.iter().map(|s| s.pid).collect();
        for s in samples.iter_mut() {
            s.parent_writes_stdin = s.channel.is_some() && s.ppid != 0 && alive.contains(&s.ppid);
        }
    }

    fn io_bytes(&self, pid: u32) -> Option<u64> {
        crate::win32::open(pid, crate::win32::Access::Query)
            .ok()?
            .io_bytes()
    }

    fn stdin_holders(&mut self, procs: &mut [debugtop_model::Proc]) {
        for p in procs
            .iter_mut()
            .filter(|p| p.role == debugtop_model::Role::Server && p.channel.is_some())
        {
            p.stdin_unchecked = true;
        }
    }
}

fn nul_joined<'a>(parts: impl Iterator<Item = &'a str>) -> Vec<u8> {
    let mut raw = Vec::new();
    for a in parts {
        raw.extend_from_slice(a.as_bytes());
        raw.push(0);
    }
    raw
}

/// Drops `conhost.exe` processes whose parent is alive in the table: the console Windows
/// gives a console program, not something it started (a worker's conhost would otherwise be
/// taken for its adapter). One whose owner is gone stays listed.
fn fold_consoles(samples: &mut Vec<Sample>) {
    let alive: std::collections::HashSet<u32> = samples.iter().map(|s| s.pid).collect();
    samples.retain(|s| {
        let console = s
            .ident
            .argv
            .first()
            .is_some_and(|a| super::parse::basename(a).eq_ignore_ascii_case("conhost.exe"));
        !(console && s.ppid != 0 && alive.contains(&s.ppid))
    });
}

/// Listening TCP ports with their owning pids.
pub fn listening_ports() -> Vec<(u16, u32)> {
    sys::listening_tables()
        .iter()
        .flat_map(|(bytes, row, port_at, pid_at)| {
            super::parse::tcp_owner_table(bytes, *row, *port_at, *pid_at)
        })
        .collect()
}

/// `pid` read now (see [`super::glance`]).
pub fn glance(pid: u32) -> Option<super::Glance> {
    let e = sys::snapshot().ok()?.into_iter().find(|e| e.pid == pid)?;
    let h = sys::open(pid, sys::Access::Peb)
        .or_else(|_| sys::open(pid, sys::Access::Query))
        .ok()?;
    let (created, _) = h.times()?;
    let ident = ident_of(&e, Some(&h));
    Some(super::Glance {
        ppid: e.ppid,
        pgid: 0,
        sid: 0,
        state: ProcState::Unknown,
        start_ticks: created,
        argv: ident.argv.to_vec(),
        uid: ident.uid,
    })
}

/// Every running pid with the parent pid Toolhelp records.
pub fn parent_links() -> Vec<(u32, u32)> {
    sys::snapshot()
        .map(|all| all.into_iter().map(|e| (e.pid, e.ppid)).collect())
        .unwrap_or_default()
}

/// The parent pid of `pid` as Toolhelp records it, when `pid` runs.
pub fn parent_of(pid: u32) -> Option<u32> {
    sys::snapshot()
        .ok()?
        .into_iter()
        .find(|e| e.pid == pid)
        .map(|e| e.ppid)
}
