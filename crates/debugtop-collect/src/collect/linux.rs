//! The Linux collector: `/proc` through the `procfs` crate.
//!
//! Per scan it reads `/proc/<pid>/stat` for every process (the floor: ppid, pgid, sid, state,
//! CPU ticks, RSS, start time in one read); argv, uid and — for candidates only — the environment
//! markers are read once per identity and re-read while a process is young (a fork shows its
//! parent's argv until it execs). A process that vanishes mid-read, or that we may not read, is
//! counted and skipped: that is normal on a live machine, never a failed scan.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, TimeZone, Utc};
use procfs::process::Process;
use procfs::ProcError;

use super::classify::{classify, host_kind, is_env_candidate, pkg_dir_of, Signature};
use super::parse::{parse_cmdline, parse_env_markers, parse_stat, StatFields};
use super::pid_counters::{counters_trusted, PidCounters};
use super::stat_files::StatFiles;
use super::{finish, Harvest, Ident, IdentityCache, ProcessTable, Sample, ScanStats, YOUNG};
use crate::error::{Error, Result};
use debugtop_model::{EnvMarkers, McpEvidence, ProcState};

/// Every this many scans, a scan reads every process (not only the watched and new ones).
pub const FULL_EVERY: u64 = 60;

/// A listing of `/proc` reused while the kernel's pid counters stand is listed again anyway
/// after this many scans.
pub const RELIST_EVERY: u64 = 10;

/// Reads more than this from `/proc/<pid>/cmdline` or `environ` are cut (see [`parse_cmdline`]).
const READ_CAP: u64 = 256 * 1024;

/// The procfs-backed collector. Keep one alive across scans: its identity cache is what makes a
/// steady scan cheap and lets zombies and orphans keep their role.
#[derive(Debug)]
pub struct ProcfsCollector {
    root: PathBuf,
    boot_time_ms: i64,
    ticks_per_sec: u64,
    page_size: u64,
    cache: IdentityCache,
    gen: u64,
    fds: super::fds::FdWatch,
    /// Pids the next scan reads whatever they did before (their exit was seen).
    read_next: rustc_hash::FxHashSet<u32>,
    /// Whether an exit watcher covers every process: only then may a quiet process be served
    /// from its last read (otherwise its exit would show only when it is due again: a zombie
    /// shown sleeping).
    exits_watched: bool,
    /// A process's first read gives its CPU over its life (a one-shot look).
    one_read_cpu: bool,
    /// The last listing of `/proc`, reused while nothing was created or reaped since.
    listing: Option<Listing>,
    /// Whether `/proc/loadavg`'s counters describe the `/proc` listed (see [`counters_trusted`]).
    counters_trusted: bool,
    /// The watched processes' stat files, kept open.
    stat_files: StatFiles,
}

/// The pids of one listing of `/proc`, the counters read just before it (`None`: none to trust), and its scan.
#[derive(Debug)]
struct Listing {
    counters: Option<PidCounters>,
    pids: Vec<u32>,
    gen: u64,
}

impl ProcfsCollector {
    /// A collector over the system's `/proc`.
    pub fn new() -> Result<Self> {
        Self::with_root("/proc")
    }

    /// A collector over another procfs mount (a container's, say).
    pub fn with_root(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        let boot = procfs::boot_time_secs().map_err(|e| Error::SystemInfo {
            what: "the boot time (/proc/stat btime)",
            detail: e.to_string(),
        })?;
        Ok(Self {
            boot_time_ms: i64::try_from(boot).unwrap_or(0).saturating_mul(1000),
            ticks_per_sec: procfs::ticks_per_second().max(1),
            page_size: procfs::page_size(),
            cache: IdentityCache::default(),
            gen: 0,
            fds: super::fds::FdWatch::default(),
            read_next: rustc_hash::FxHashSet::default(),
            exits_watched: false,
            one_read_cpu: false,
            listing: None,
            counters_trusted: counters_trusted(&root),
            stat_files: StatFiles::default(),
            root,
        })
    }

    /// A process's first read gives its CPU over its whole life (as `ps` does) instead of
    /// nothing until a second sample: for a one-shot look.
    pub fn set_one_read_cpu(&mut self, on: bool) {
        self.one_read_cpu = on;
    }

    /// Makes the next scan read these pids, quiet or not (the exit watcher saw them exit: they
    /// may be zombies now).
    pub fn read_next(&mut self, pids: impl IntoIterator<Item = u32>) {
        self.read_next.extend(pids);
    }

    /// Tells the collector whether an exit watcher covers every process it lists (a pidfd each,
    /// none starved), and so tells it of every exit through [`read_next`](Self::read_next).
    /// Only then are quiet processes read one scan in [`QUIET_EVERY`](super::QUIET_EVERY);
    /// without it (the default) every watched process is read every scan.
    pub fn set_exits_watched(&mut self, watched: bool) {
        self.exits_watched = watched;
    }

    /// The pids the last scan went through (its listing of `/proc`, or the one before it
    /// reused), for tests and diagnostics.
    pub fn listed(&self) -> &[u32] {
        self.listing.as_ref().map_or(&[], |l| &l.pids)
    }

    /// Whether `pid`'s stat file is kept open (a watched process's), for tests and
    /// diagnostics.
    pub fn keeps_stat_file(&self, pid: u32) -> bool {
        self.stat_files.holds(pid)
    }

    /// The identity cache (read-only), for tests and diagnostics.
    pub fn cache(&self) -> &IdentityCache {
        &self.cache
    }

    /// Absolute time of a start-ticks value.
    pub fn start_time(&self, start_ticks: u64) -> DateTime<Utc> {
        let ms = self.boot_time_ms.saturating_add(
            i64::try_from(start_ticks.saturating_mul(1000) / self.ticks_per_sec)
                .unwrap_or(i64::MAX / 2),
        );
        Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
    }

    /// One pass over the process table, resolved: the server-related processes with their roles.
    pub fn scan(&mut self) -> Result<ProcessTable> {
        // Incremental: known processes unrelated to any server are only listed, not read; every
        // FULL_EVERY-th scan reads everything (a safety net for an old process exec'ing into a
        // server). Measured in BENCHMARKS.md.
        let full = self.gen % FULL_EVERY == 0 || std::mem::take(&mut self.fds.full_next);
        let harvest = self.harvest_inner(full);
        self.read_next.clear();
        let harvest = harvest?;
        Ok(finish(harvest, &mut self.cache, &mut self.fds))
    }

    /// One pass over the process table, raw: every process with its cached identity, no roles.
    /// (A harvest without [`finish`] does not update what the cache remembers about roles.)
    pub fn harvest(&mut self) -> Result<Harvest> {
        self.harvest_inner(true)
    }

    fn harvest_inner(&mut self, full: bool) -> Result<Harvest> {
        let started = Instant::now();
        self.gen += 1;
        let mut stats = ScanStats::default();
        let listing = self.listing(full, &mut stats)?;
        let mut pass = Pass::new(self, full);
        self.stat_files.set_budget();
        let mut samples = Vec::with_capacity(self.cache.len() + 64);
        let mut name = String::new();
        for &pid in &listing.pids {
            if let Some(s) = self.sample(pid, &mut name, &mut pass, &mut stats) {
                samples.push(s);
            }
        }
        self.listing = Some(listing);
        let exited = self.cache.sweep(self.gen);
        if exited > 0 {
            let cache = &self.cache;
            self.stat_files.retain(|pid| cache.current(pid).is_some());
        }
        stats.exited = u32::try_from(exited).unwrap_or(u32::MAX);
        Ok(Harvest {
            samples,
            stats,
            started,
        })
    }

    /// The pids in `/proc`: the last listing again while the kernel's pid counters stand (not
    /// for a full scan, and at least every [`RELIST_EVERY`] scans), else a new listing. Listing
    /// 5,000 pids was a tenth of the app's tick at 5,000 orphans (BENCHMARKS.md). Only where
    /// the counters are known to describe this `/proc` ([`counters_trusted`]).
    fn listing(&mut self, full: bool, stats: &mut ScanStats) -> Result<Listing> {
        let counters = self
            .counters_trusted
            .then(|| std::fs::read_to_string(self.root.join("loadavg")).ok())
            .flatten()
            .and_then(|t| PidCounters::parse(&t));
        let gen = self.gen;
        match self.listing.take() {
            Some(last)
                if !full
                    && counters.is_some()
                    && counters == last.counters
                    && gen.saturating_sub(last.gen) < RELIST_EVERY =>
            {
                Ok(last)
            }
            _ => Ok(Listing {
                pids: self.list(stats)?,
                counters,
                gen,
            }),
        }
    }

    /// Every pid in `/proc`, as listed now.
    fn list(&self, stats: &mut ScanStats) -> Result<Vec<u32>> {
        // rustix's Dir yields names without allocating (std's read_dir allocates per entry).
        let io = |e: rustix::io::Errno| Error::ProcessTable {
            path: self.root.clone(),
            source: e.into(),
        };
        let dir_fd = rustix::fs::openat(
            rustix::fs::CWD,
            &self.root,
            rustix::fs::OFlags::RDONLY
                | rustix::fs::OFlags::DIRECTORY
                | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )
        .map_err(io)?;
        let mut dir = rustix::fs::Dir::read_from(&dir_fd).map_err(io)?;
        let mut pids = Vec::with_capacity(self.cache.len() + 64);
        for entry in dir.by_ref() {
            let Ok(entry) = entry else {
                stats.vanished += 1;
                continue;
            };
            let raw = entry.file_name().to_bytes();
            if raw.is_empty() || !raw.iter().all(u8::is_ascii_digit) {
                continue;
            }
            if let Some(pid) = std::str::from_utf8(raw).ok().and_then(|n| n.parse().ok()) {
                pids.push(pid);
            }
        }
        Ok(pids)
    }

    /// One process of a pass: its stat read into the pass's buffer (the hot path: one open
    /// and read, parsed without allocating), its identity from the cache or read once. `None`
    /// for a process skipped (unwatched and old), vanished or unreadable (counted). `name` is
    /// a buffer for the pid's folder name, written only when it is read.
    fn sample(
        &mut self,
        pid: u32,
        name: &mut String,
        pass: &mut Pass,
        stats: &mut ScanStats,
    ) -> Option<Sample> {
        if !pass.full {
            if self.cache.skip_unwatched(pid, self.gen, pass.now) {
                stats.processes += 1;
                return None;
            }
            if self.exits_watched && !self.read_next.contains(&pid) {
                if let Some((stat, ident)) = self.cache.quiet_stat(pid, self.gen, pass.now) {
                    stats.processes += 1;
                    stats.quiet += 1;
                    // Quiet: no CPU time used over its last reads.
                    return Some(self.sample_of(&stat, ident, Some(0.0)));
                }
            }
        }
        name.clear();
        {
            use std::fmt::Write;
            let _ = write!(name, "{pid}");
        }
        let name = name.as_str();
        // A watched process is read scan after scan: its stat file is kept open.
        let keep = self.cache.is_watched(pid);
        let stat = read_stat_into((pid, name), &mut self.stat_files, keep, pass, stats)?;
        let state = ProcState::from_letter(stat.state);
        let ident = self.identity(name, &stat, state, pass, stats)?;
        let cpu_ticks = stat.utime.saturating_add(stat.stime);
        let cpu_percent = self.cache.observe(
            stat.pid,
            stat.starttime,
            Arc::clone(&ident),
            cpu_ticks,
            self.ticks_per_sec,
            pass.now,
            self.gen,
        );
        self.cache.keep_stat(&stat);
        let age_ticks = pass.now_ticks.map(|n| n.saturating_sub(stat.starttime));
        let cpu_percent = cpu_percent.or_else(|| {
            self.one_read_cpu
                .then(|| super::lifetime_percent(cpu_ticks, age_ticks?))
                .flatten()
        });
        if let Some(age) = age_ticks {
            let age = Duration::from_millis(age.saturating_mul(1000) / self.ticks_per_sec);
            self.cache
                .set_born(stat.pid, pass.now.checked_sub(age).unwrap_or(pass.now));
        }
        stats.processes += 1;
        Some(self.sample_of(&stat, ident, cpu_percent))
    }

    fn sample_of(
        &self,
        stat: &super::parse::StatFields,
        ident: Arc<Ident>,
        cpu_percent: Option<f32>,
    ) -> Sample {
        Sample {
            pid: stat.pid,
            ppid: stat.ppid,
            pgid: stat.pgrp,
            sid: stat.session,
            state: ProcState::from_letter(stat.state),
            start_ticks: stat.starttime,
            start_time: self.start_time(stat.starttime),
            cpu_percent,
            rss_bytes: stat.rss.saturating_mul(self.page_size),
            markers: ident.markers.clone(),
            owner_pid: super::raw_owner(&ident.signature),
            stdio: ident.stdio,
            channel: None,
            parent_writes_stdin: false,
            adopted: None,
            dead_end: None,
            ident,
        }
    }

    /// What the process says about itself: cached per identity, re-read while it is young
    /// (between fork and exec a child shows its parent's argv) or when it exec'd (its command
    /// name changed). `None` when it vanished meanwhile.
    fn identity(
        &mut self,
        name: &str,
        stat: &super::parse::StatFields,
        state: ProcState,
        pass: &Pass,
        stats: &mut ScanStats,
    ) -> Option<Arc<Ident>> {
        let pid = stat.pid;
        // Unknown uptime: treat everything as young (correct, only slower).
        let young = pass
            .now_ticks
            .is_none_or(|n| n.saturating_sub(stat.starttime) < pass.young_ticks);
        let exec_seen = self
            .cache
            .comm_changed(pid, stat.starttime, comm_hash(&pass.buf));
        let known = match self.cache.get(pid, stat.starttime) {
            Some(known) if !young && !exec_seen => return Some(Arc::clone(known)),
            known => known.cloned(),
        };
        let proc = match Process::new_with_root(self.root.join(name)) {
            Ok(p) => p,
            Err(e) => {
                count(stats, &e);
                return None;
            }
        };
        let kthreadd_child = stat.pid == 2 || stat.ppid == 2;
        let fresh = read_ident(&proc, state, kthreadd_child, known.as_deref(), stats)?;
        Some(match known {
            None => {
                stats.new_identities += 1;
                Arc::new(fresh)
            }
            Some(k) if *k == fresh => k,
            Some(_) => {
                // It exec'd (or the pid was reused within one clock tick): what we concluded
                // about the old image no longer holds.
                self.cache.forget(pid);
                Arc::new(fresh)
            }
        })
    }
}

/// What one pass reuses across processes: the path and read buffers, and its clocks.
struct Pass {
    full: bool,
    now: Instant,
    now_ticks: Option<u64>,
    young_ticks: u64,
    path: String,
    base_len: usize,
    buf: Vec<u8>,
}

impl Pass {
    fn new(c: &ProcfsCollector, full: bool) -> Self {
        let mut path = c.root.to_string_lossy().into_owned();
        path.push('/');
        Self {
            full,
            now: Instant::now(),
            // Age is measured in ticks against the uptime clock, not the wall clock: boot time
            // is only known to the second and drifts from wall time (0.75 s seen here).
            now_ticks: uptime_ticks(&c.root, c.ticks_per_sec),
            young_ticks: YOUNG.as_secs().saturating_mul(c.ticks_per_sec),
            base_len: path.len(),
            path,
            buf: Vec::with_capacity(1024),
        }
    }
}

/// FNV-1a of the command name in a stat line (between the first `(` and the last `)`).
fn comm_hash(raw: &[u8]) -> u64 {
    let (Some(a), Some(b)) = (
        raw.iter().position(|c| *c == b'('),
        raw.iter().rposition(|c| *c == b')'),
    ) else {
        return 1;
    };
    raw.get(a + 1..b)
        .unwrap_or(&[])
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
            (h ^ u64::from(*c)).wrapping_mul(0x100_0000_01b3)
        })
        | 1
}

/// Seconds since boot from `/proc/uptime`, in clock ticks.
fn uptime_ticks(root: &Path, ticks_per_sec: u64) -> Option<u64> {
    let text = std::fs::read_to_string(root.join("uptime")).ok()?;
    let secs: f64 = text.split_whitespace().next()?.parse().ok()?;
    // Rounded up: a process that started in the current tick is still young.
    Some((secs * ticks_per_sec as f64).ceil() as u64 + 1)
}

/// Counts a per-process failure by kind. Everything here is expected on a live machine.
fn count(stats: &mut ScanStats, e: &ProcError) {
    match e {
        ProcError::PermissionDenied(_) => stats.denied += 1,
        _ => stats.vanished += 1,
    }
}

/// `/proc/<name>/stat` into the pass's buffer, parsed; `None` (counted) when it vanished or is
/// unreadable.
fn read_stat_into(
    (pid, name): (u32, &str),
    files: &mut StatFiles,
    keep: bool,
    pass: &mut Pass,
    stats: &mut ScanStats,
) -> Option<StatFields> {
    pass.path.truncate(pass.base_len);
    pass.path.push_str(name);
    pass.path.push_str("/stat");
    match files.read(pid, &pass.path, &mut pass.buf, keep) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            stats.denied += 1;
            return None;
        }
        Err(_) => {
            stats.vanished += 1;
            return None;
        }
    }
    let stat = parse_stat(&pass.buf);
    if stat.is_none() {
        stats.vanished += 1;
    }
    stat
}

/// Reads argv, uid and (for candidates) the environment markers of one process.
/// `None` when the process vanished meanwhile.
fn read_ident(
    proc: &Process,
    state: ProcState,
    kthreadd_child: bool,
    known: Option<&Ident>,
    stats: &mut ScanStats,
) -> Option<Ident> {
    let argv = match read_capped(proc, "cmdline") {
        Ok(raw) => parse_cmdline(&raw),
        Err(ReadErr::Gone) => return None,
        Err(ReadErr::Denied) => {
            stats.denied += 1;
            Vec::new()
        }
    };
    // A zombie's cmdline is empty: keep what we read while it was alive.
    if argv.is_empty() {
        if let Some(k) = known {
            if !state.is_alive() || !k.argv.is_empty() {
                return Some(k.clone());
            }
        }
    }
    // A kernel thread (kthreadd or its child, no command line): no files, no environment, no
    // stdio — nothing more to read (most of a small machine's table).
    if argv.is_empty() && kthreadd_child && state.is_alive() {
        return Some(Ident::of_argv(Vec::new()));
    }
    let candidate = is_env_candidate(&argv);
    let markers = if candidate {
        match read_capped(proc, "environ") {
            Ok(raw) => parse_env_markers(&raw),
            Err(ReadErr::Gone) => return None,
            Err(ReadErr::Denied) => {
                stats.denied += 1;
                EnvMarkers::default()
            }
        }
    } else {
        EnvMarkers::default()
    };
    let status = read_capped(proc, "status")
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    Some(ident_of(proc, argv, markers, candidate, &status))
}

/// The identity from what was read: signature, package, stdio and MCP evidence (for
/// candidates), namespace and tracer.
fn ident_of(
    proc: &Process,
    argv: Vec<String>,
    markers: EnvMarkers,
    candidate: bool,
    status: &str,
) -> Ident {
    let uid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok());
    if is_wine(proc, &argv) {
        return Ident {
            uid,
            wine: true,
            argv: argv.into(),
            ..Ident::of_argv(Vec::new())
        };
    }
    let signature = classify(&argv, &markers);
    let pkg_dir = match &signature {
        Signature::Server { script, .. } => server_pkg_dir(proc, script),
        _ => None,
    };
    let pid = proc.pid().unsigned_abs();
    // Every process's stdio (two links): a leaked chain's wrapper or a nameless server is no
    // candidate by its name.
    let stdio = Some(super::fds::stdio(pid));
    let mcp = match &signature {
        Signature::None if candidate || stdio.is_some_and(|s| s.piped()) => {
            mcp_evidence(proc, &argv, uid)
        }
        _ => None,
    };
    let moved = stdio.is_some_and(|x| x.stdin_channel().is_none());
    let says = mcp.is_some() || matches!(signature, Signature::Server { .. });
    Ident {
        channels: if says && moved {
            super::fds::channels(pid)
        } else {
            Vec::new()
        },
        host: markers.host.or_else(|| host_kind(&argv)),
        ns: candidate
            .then(|| super::ns::read(&pid.to_string(), our_pid_ns(), our_container(), status))
            .flatten(),
        tracer_pid: super::ns::tracer_pid(status),
        argv: argv.into(),
        markers,
        signature,
        uid,
        pkg_dir,
        stdio,
        mcp,
        wine: false,
    }
}

/// A process Wine runs: its executable is Wine's loader (`wine64-preloader`, `wine`), or —
/// when another user's executable link cannot be read — its argv starts with a Windows path.
/// Its pids in argv and environment are Windows pids, Wine's own numbering.
fn is_wine(proc: &Process, argv: &[String]) -> bool {
    match proc.exe() {
        Ok(exe) => exe
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("wine")),
        Err(_) => argv.first().is_some_and(|a| {
            let b = a.as_bytes();
            b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && b[2] == b'\\'
        }),
    }
}

/// debugtop's own pid namespace (read once).
fn our_pid_ns() -> Option<u64> {
    static OURS: std::sync::OnceLock<Option<u64>> = std::sync::OnceLock::new();
    *OURS.get_or_init(|| super::ns::pid_ns_inode("self"))
}

/// The container debugtop itself runs in, if any: a process in the same one is not "in a
/// container" as far as the tree is concerned (only its pid namespace differs).
fn our_container() -> Option<&'static str> {
    static OURS: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    OURS.get_or_init(|| {
        std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|c| super::ns::container_of(&c))
    })
    .as_deref()
}

/// Why a process whose stdin and stdout are pipes counts as an MCP server (see
/// [`super::mcp::evidence`]), its script resolved against its working directory.
fn mcp_evidence(proc: &Process, argv: &[String], uid: Option<u32>) -> Option<McpEvidence> {
    super::mcp::evidence(argv, |script| Some(absolute(proc, script)), uid)
}

enum ReadErr {
    Gone,
    Denied,
}

fn read_capped(proc: &Process, name: &str) -> std::result::Result<Vec<u8>, ReadErr> {
    let file = proc.open_relative(name).map_err(|e| match e {
        ProcError::PermissionDenied(_) => ReadErr::Denied,
        _ => ReadErr::Gone,
    })?;
    let mut buf = Vec::new();
    match file.take(READ_CAP).read_to_end(&mut buf) {
        Ok(_) => Ok(buf),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(ReadErr::Denied),
        // ESRCH: the process exited between open and read.
        Err(_) => Err(ReadErr::Gone),
    }
}

/// The server's package directory: from the script path, resolving `bin/mcp-debugger` symlinks
/// (relative to the process's cwd when the path is relative).
fn server_pkg_dir(proc: &Process, script: &str) -> Option<String> {
    if let Some(dir) = pkg_dir_of(script) {
        return Some(absolute(proc, &dir).to_string_lossy().into_owned());
    }
    let resolved = std::fs::canonicalize(absolute(proc, script)).ok()?;
    pkg_dir_of(&resolved.to_string_lossy())
}

fn absolute(proc: &Process, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        return p.to_path_buf();
    }
    match proc.cwd() {
        Ok(cwd) => cwd.join(p),
        Err(_) => p.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::stat_files::read_whole_line;
    use super::*;

    #[test]
    fn a_line_read_in_one_go_is_whole_and_a_longer_file_is_read_to_its_end() {
        let mut buf = Vec::new();
        let mut own = std::fs::File::open("/proc/self/stat").expect("own stat");
        read_whole_line(&mut own, &mut buf).expect("read");
        assert!(
            parse_stat(&buf).is_some(),
            "{}",
            String::from_utf8_lossy(&buf)
        );
        // Longer than one read's chunk, with no newline where a chunk ends.
        let dir = tempfile::tempdir().expect("tmp");
        let path = dir.path().join("long");
        let text = format!("{}\n", "x".repeat(10_000));
        std::fs::write(&path, &text).expect("write");
        buf.clear();
        read_whole_line(&mut std::fs::File::open(&path).expect("open"), &mut buf).expect("read");
        assert_eq!(buf, text.as_bytes());
    }
}
