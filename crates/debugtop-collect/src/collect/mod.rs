//! The process table: who runs, what each process is, and how they hang together.
//!
//! A backend (procfs on Linux, sysinfo elsewhere) harvests [`Sample`]s; identities (pid + start
//! time) are cached so argv and environment markers are read once per process, not once per tick;
//! [`relate`] then applies ancestry to turn signatures into roles, server and session links.
//! Nothing here talks to a server or reads a log: that is `sources`.

pub mod adopt;
pub mod classify;
#[cfg(any(target_os = "linux", windows))]
pub mod exit_log;
#[cfg(target_os = "linux")]
pub mod exits;
#[cfg(windows)]
pub use self::windows::exits;
/// Without pidfds or process handles, exits are seen at the next tick.
#[cfg(not(any(target_os = "linux", windows)))]
pub mod exits {
    use chrono::{DateTime, Utc};
    /// An identity: pid and start ticks.
    pub type Identity = (u32, u64);
    /// A watcher that never starts.
    #[derive(Debug)]
    pub struct ExitWatcher;
    impl ExitWatcher {
        /// Not available here.
        pub fn start() -> Option<Self> {
            None
        }
        /// Nothing to watch with.
        pub fn watch(&self, _ids: impl IntoIterator<Item = Identity>) {}
        /// No exits.
        pub fn exited_by_now(&self) -> Vec<u32> {
            Vec::new()
        }
        /// No exits.
        pub fn take_exits(&self) -> Vec<(Identity, DateTime<Utc>)> {
            Vec::new()
        }
        /// Nothing is watched, so nothing starves.
        pub fn starved(&self) -> usize {
            0
        }
        /// No exits.
        pub fn has_pending_exit(&self, _pid: u32) -> bool {
            false
        }
        /// Never resolves.
        pub async fn exited(&self) {
            std::future::pending::<()>().await;
        }
    }
}
#[cfg(target_os = "linux")]
pub mod fds;
pub mod mcp;
#[cfg(target_os = "linux")]
pub mod ns;
pub mod parse;
pub mod portable;
mod relate;
#[cfg(target_os = "linux")]
pub mod unix_diag;

#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(windows)]
pub mod windows;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use classify::Signature;
use debugtop_model::{
    Adopted, EnvMarkers, FdKind, HostKind, HostRef, Language, McpEvidence, PidNs, Proc, ProcFacts,
    ProcSample, ProcState, ProcessTable, Role, ScanStats, ServerInfo, Stdio,
};

pub use relate::relate;

/// The collector for this OS.
#[cfg(target_os = "linux")]
pub type Collector = linux::ProcfsCollector;
/// The collector for this OS.
#[cfg(windows)]
pub type Collector = windows::WindowsCollector;
/// The collector for this OS.
#[cfg(not(any(target_os = "linux", windows)))]
pub type Collector = portable::SysinfoCollector;

/// The stat fields of one process, read now from `/proc/<pid>/stat` (`None` if it is gone or
/// there is no `/proc`). For one-off reads outside a scan (kill planning, identity checks).
pub fn read_stat(pid: u32) -> Option<parse::StatFields> {
    parse::parse_stat(&std::fs::read(format!("/proc/{pid}/stat")).ok()?)
}

/// One process read now, outside a scan: what `kill --force` adds to a plan as a process of no
/// role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glance {
    /// Parent pid.
    pub ppid: u32,
    /// Process group (0 where there are none).
    pub pgid: u32,
    /// Session (0 where there are none).
    pub sid: u32,
    /// Scheduler state.
    pub state: ProcState,
    /// The identity's start ticks (Windows: creation time).
    pub start_ticks: u64,
    /// Command line.
    pub argv: Vec<String>,
    /// Owner.
    pub uid: Option<u32>,
}

/// `pid` read now, if it runs and can be read.
pub fn glance(pid: u32) -> Option<Glance> {
    #[cfg(target_os = "linux")]
    {
        let st = read_stat(pid)?;
        let argv = std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|b| parse::parse_cmdline(&b))
            .unwrap_or_default();
        let uid = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|v| v.split_whitespace().next()?.parse().ok())
            });
        Some(Glance {
            ppid: st.ppid,
            pgid: st.pgrp,
            sid: st.session,
            state: ProcState::from_letter(st.state),
            start_ticks: st.starttime,
            argv,
            uid,
        })
    }
    #[cfg(windows)]
    {
        windows::glance(pid)
    }
    #[cfg(not(any(target_os = "linux", windows)))]
    {
        let _ = pid;
        None
    }
}

/// Every running pid with its parent pid, now.
pub fn parent_links() -> Vec<(u32, u32)> {
    #[cfg(windows)]
    {
        windows::parent_links()
    }
    #[cfg(not(windows))]
    {
        std::fs::read_dir("/proc")
            .map(|rd| {
                rd.flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter_map(|pid| Some((pid, read_stat(pid)?.ppid)))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// The parent pid of a running process, read now (kill planning, debugtop's own ancestry).
pub fn parent_pid(pid: u32) -> Option<u32> {
    #[cfg(windows)]
    {
        windows::parent_of(pid)
    }
    #[cfg(not(windows))]
    {
        read_stat(pid).map(|s| s.ppid)
    }
}

/// Reads in a row a watched process must be quiet before it is read only one scan in
/// [`QUIET_EVERY`].
pub const QUIET_AFTER: u8 = 3;
/// How often a quiet watched process is read (every this many scans).
pub const QUIET_EVERY: u64 = 4;

/// How long after its start a process's argv is re-read: between `fork` and `exec` a child still
/// shows its parent's command line.
pub const YOUNG: Duration = Duration::from_secs(2);

/// What is read once per process identity and then kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Ident {
    /// Command line (bounded; see [`parse::parse_cmdline`]).
    pub argv: Vec<String>,
    /// Environment markers (only for candidates; empty otherwise).
    pub markers: EnvMarkers,
    /// What the process says it is.
    pub signature: Signature,
    /// Real uid, when readable.
    pub uid: Option<u32>,
    /// For servers: the resolved package directory.
    pub pkg_dir: Option<String>,
    /// stdin and stdout, for candidates.
    pub stdio: Option<Stdio>,
    /// Every other pipe and socket it has open, for an MCP server whose stdin is not one
    /// (it moved its channel to another fd).
    pub channels: Vec<FdKind>,
    /// Its pid namespace, when not debugtop's own.
    pub ns: Option<PidNs>,
    /// Why it counts as an MCP server (argv or package), for candidates with piped stdio.
    pub mcp: Option<McpEvidence>,
    /// What kind of MCP host it says it is (markers, argv), if any.
    pub host: Option<HostKind>,
    /// `TracerPid` when read.
    pub tracer_pid: Option<u32>,
    /// Run by Wine: a Windows program whose command line names Windows pids; listed with no
    /// signature, never judged by this table.
    pub wine: bool,
}

impl Ident {
    /// What a process with this argv and nothing else read says.
    pub fn of_argv(argv: Vec<String>) -> Self {
        let markers = EnvMarkers::default();
        let signature = classify::classify(&argv, &markers);
        Self {
            argv,
            markers,
            signature,
            uid: None,
            pkg_dir: None,
            stdio: None,
            channels: Vec::new(),
            ns: None,
            mcp: None,
            host: None,
            tracer_pid: None,
            wine: false,
        }
    }
}

/// One process at one instant: the cheap fields read every scan, plus its cached identity.
#[derive(Debug, Clone)]
pub struct Sample {
    /// Process id.
    pub pid: u32,
    /// Parent pid.
    pub ppid: u32,
    /// Process group.
    pub pgid: u32,
    /// Session.
    pub sid: u32,
    /// Scheduler state.
    pub state: ProcState,
    /// Start time in clock ticks since boot (identity with `pid`).
    pub start_ticks: u64,
    /// Absolute start time.
    pub start_time: DateTime<Utc>,
    /// CPU use since this identity's previous sample, percent of one core.
    pub cpu_percent: Option<f32>,
    /// Resident set size in bytes.
    pub rss_bytes: u64,
    /// The identity's cached facts.
    pub ident: Arc<Ident>,
    /// Its environment markers, with pids translated to this namespace's (see `ns`).
    pub markers: EnvMarkers,
    /// A worker's `--mcp-owner-pid`, or a tagged adapter's or debuggee's owner, translated;
    /// `None` when it names no process of its namespace.
    pub owner_pid: Option<u32>,
    /// Its stdin and stdout (the identity's, or read this scan for a host's child).
    pub stdio: Option<Stdio>,
    /// The channel it talks to its host on (stdin, or where it moved it), for MCP candidates.
    pub channel: Option<FdKind>,
    /// Its parent holds the other end of that channel (the parent talks to it: a host).
    pub parent_writes_stdin: bool,
    /// Whoever started it is gone (its parent is init, a subreaper, or an adopter).
    pub adopted: Option<Adopted>,
    /// For an adopted process: the stdio channel nobody holds the other end of (no process
    /// can write to its stdin, or read its stdout). The root of a leaked stdio chain.
    pub dead_end: Option<FdKind>,
}

/// What [`relate`] last concluded about an identity, kept so that an orphan reparented to PID 1
/// (or a zombie whose argv is gone) stays under its real owner.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Memory {
    /// Role last resolved.
    pub role: Option<Role>,
    /// Server last resolved.
    pub server_pid: Option<u32>,
    /// Session last resolved.
    pub session_id: Option<String>,
    /// Language last resolved.
    pub language: Option<Language>,
    /// The parent it had while inside a server's tree.
    pub ppid: Option<u32>,
    /// The MCP host it ran under.
    pub host: Option<HostRef>,
}

/// Per-identity memory across scans, keyed by pid and checked against start ticks.
#[derive(Debug, Default)]
pub struct IdentityCache {
    entries: HashMap<u32, CacheEntry>,
}

#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))] // the quiet-read skips are procfs's
struct CacheEntry {
    start_ticks: u64,
    ident: Arc<Ident>,
    cpu_ticks: u64,
    cpu_at: Instant,
    memory: Memory,
    seen_gen: u64,
    /// When this identity was first read (its youth, for skipping decisions).
    first_seen: Instant,
    /// Hash of the command name (`/proc/<pid>/stat` field 2) when argv was read: a change means
    /// the process exec'd.
    comm_hash: u64,
    /// The last stat read, and for how many reads in a row it said the same (no CPU time used,
    /// sleeping, same memory): see [`IdentityCache::quiet_stat`].
    last: Option<(parse::StatFields, u8)>,
    /// How many times its stat was read (for tests and diagnostics).
    reads: u32,
    /// The parent it had when first read (a later other one adopted it).
    first_ppid: Option<u32>,
    /// Its I/O counters (bytes read + written) when last read, and since when they have not
    /// moved: see [`IdentityCache::note_io`].
    io: Option<(u64, DateTime<Utc>)>,
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl CacheEntry {
    /// Related to a debug server: by its own signature or markers, or as resolved by relate;
    /// or run by Wine.
    fn watched(&self) -> bool {
        self.memory.role.is_some()
            || self.ident.signature != Signature::None
            || !self.ident.markers.is_empty()
            // Counted every scan (the process table's status says how many are not judged).
            || self.ident.wine
            // Talks over stdin and stdout: when its host dies, its re-parenting is seen at once.
            || self.ident.stdio.is_some_and(|s| s.piped())
    }
}

impl IdentityCache {
    /// The cached identity for `pid` if it is the same process (same start ticks).
    pub fn get(&self, pid: u32, start_ticks: u64) -> Option<&Arc<Ident>> {
        self.entries
            .get(&pid)
            .filter(|e| e.start_ticks == start_ticks)
            .map(|e| &e.ident)
    }

    /// The identity `pid` has now, whatever its start time (a parent that was not read this
    /// scan).
    pub fn current(&self, pid: u32) -> Option<&Arc<Ident>> {
        self.entries.get(&pid).map(|e| &e.ident)
    }

    /// The parent this identity had when it was first read.
    pub fn first_ppid(&self, pid: u32, start_ticks: u64) -> Option<u32> {
        self.entries
            .get(&pid)
            .filter(|e| e.start_ticks == start_ticks)
            .and_then(|e| e.first_ppid)
    }

    /// Records the parent an identity has the first time it is seen.
    fn note_parent(&mut self, pid: u32, start_ticks: u64, ppid: u32) {
        if let Some(e) = self
            .entries
            .get_mut(&pid)
            .filter(|e| e.start_ticks == start_ticks)
        {
            e.first_ppid.get_or_insert(ppid);
        }
    }

    /// Records an identity's I/O counters (bytes read + written) read at `now`; returns since
    /// when they have not moved: `now` when they just did or were never read before.
    fn note_io(
        &mut self,
        pid: u32,
        start_ticks: u64,
        bytes: u64,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let e = self
            .entries
            .get_mut(&pid)
            .filter(|e| e.start_ticks == start_ticks)?;
        let since = match e.io {
            Some((last, since)) if last == bytes => since,
            _ => now,
        };
        e.io = Some((bytes, since));
        Some(since)
    }

    /// What relate remembered about this identity.
    pub fn memory(&self, pid: u32, start_ticks: u64) -> Option<&Memory> {
        self.entries
            .get(&pid)
            .filter(|e| e.start_ticks == start_ticks)
            .map(|e| &e.memory)
    }

    /// How many times the collector read `pid`'s stat (the one it holds now).
    pub fn reads(&self, pid: u32) -> Option<u32> {
        self.entries.get(&pid).map(|e| e.reads)
    }

    /// Number of identities held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Records a sample of `pid` in generation `gen`, returning CPU % since the last one.
    #[allow(clippy::too_many_arguments)] // one call site per backend; a struct would only rename them
    /// A different start time replaces the entry: a reused pid is a new identity.
    fn observe(
        &mut self,
        pid: u32,
        start_ticks: u64,
        ident: Arc<Ident>,
        cpu_ticks: u64,
        ticks_per_sec: u64,
        now: Instant,
        gen: u64,
    ) -> Option<f32> {
        match self.entries.get_mut(&pid) {
            Some(e) if e.start_ticks == start_ticks => {
                let dt = now.duration_since(e.cpu_at).as_secs_f64();
                let pct = (dt > 0.0).then(|| {
                    let used =
                        cpu_ticks.saturating_sub(e.cpu_ticks) as f64 / ticks_per_sec.max(1) as f64;
                    (used / dt * 100.0) as f32
                });
                e.ident = ident;
                e.cpu_ticks = cpu_ticks;
                e.cpu_at = now;
                e.seen_gen = gen;
                pct
            }
            _ => {
                self.entries.insert(
                    pid,
                    CacheEntry {
                        start_ticks,
                        ident,
                        cpu_ticks,
                        cpu_at: now,
                        memory: Memory::default(),
                        seen_gen: gen,
                        first_seen: now,
                        comm_hash: 0,
                        last: None,
                        reads: 0,
                        first_ppid: None,
                        io: None,
                    },
                );
                None
            }
        }
    }

    /// In an incremental scan: if `pid` is a known, unwatched identity older than [`YOUNG`],
    /// marks it seen in `gen` without reading it and returns true. Unwatched processes cannot
    /// become part of a server's tree except by exec (caught while young, or by the periodic
    /// full scan) — reparenting only ever goes to init or a subreaper.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn skip_unwatched(&mut self, pid: u32, gen: u64, now: Instant) -> bool {
        match self.entries.get_mut(&pid) {
            Some(e) if !e.watched() && now.duration_since(e.first_seen) >= YOUNG => {
                e.seen_gen = gen;
                true
            }
            _ => false,
        }
    }

    /// Keeps `stat` as the identity's last read, counting the reads in a row that found it
    /// quiet.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn keep_stat(&mut self, stat: &parse::StatFields) {
        if let Some(e) = self
            .entries
            .get_mut(&stat.pid)
            .filter(|e| e.start_ticks == stat.starttime)
        {
            let quiet = e.last.as_ref().is_some_and(|(was, _)| {
                was.utime + was.stime == stat.utime + stat.stime
                    && was.rss == stat.rss
                    && was.state == stat.state
                    && matches!(stat.state, 'S' | 'I')
            });
            let runs = match (&e.last, quiet) {
                (Some((_, n)), true) => n.saturating_add(1),
                _ => 0,
            };
            e.last = Some((*stat, runs));
            e.reads = e.reads.saturating_add(1);
        }
    }

    /// In an incremental scan: the last stat of a watched identity that was quiet for its last
    /// [`QUIET_AFTER`] reads (no CPU time, sleeping, same memory), on the scans it is not due
    /// to be read (one in [`QUIET_EVERY`], staggered by pid); marks it seen. At 5,000 orphans
    /// reading every stat was half of a tick; a quiet process that starts to spin or stops is
    /// seen at most `QUIET_EVERY - 1` scans late (its exit at once: the caller forces a read of
    /// a process whose exit the pidfd watcher saw).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn quiet_stat(
        &mut self,
        pid: u32,
        gen: u64,
        now: Instant,
    ) -> Option<(parse::StatFields, Arc<Ident>)> {
        let e = self.entries.get_mut(&pid)?;
        let (stat, runs) = e.last?;
        let due = (gen + u64::from(pid)) % QUIET_EVERY == 0;
        let young = now.duration_since(e.first_seen) < YOUNG;
        if runs < QUIET_AFTER || due || young || !e.watched() {
            return None;
        }
        e.seen_gen = gen;
        Some((stat, Arc::clone(&e.ident)))
    }

    /// Records when the process was born (from its start ticks), so youth is the process's age,
    /// not the time debugtop first saw it.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn set_born(&mut self, pid: u32, born: Instant) {
        if let Some(e) = self.entries.get_mut(&pid) {
            e.first_seen = born;
        }
    }

    /// Whether the command name changed since argv was read (the process exec'd); records the
    /// new one.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn comm_changed(&mut self, pid: u32, start_ticks: u64, comm_hash: u64) -> bool {
        match self
            .entries
            .get_mut(&pid)
            .filter(|e| e.start_ticks == start_ticks)
        {
            Some(e) if e.comm_hash != comm_hash => {
                let changed = e.comm_hash != 0;
                e.comm_hash = comm_hash;
                changed
            }
            _ => false,
        }
    }

    /// Drops identities not seen in generation `gen`; returns how many exited.
    fn sweep(&mut self, gen: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| e.seen_gen == gen);
        before - self.entries.len()
    }

    /// Forgets what relate concluded about `pid` (its image changed).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    fn forget(&mut self, pid: u32) {
        if let Some(e) = self.entries.get_mut(&pid) {
            e.memory = Memory::default();
        }
    }

    fn remember(&mut self, pid: u32, start_ticks: u64, memory: Memory) {
        if let Some(e) = self
            .entries
            .get_mut(&pid)
            .filter(|e| e.start_ticks == start_ticks)
        {
            e.memory = memory;
        }
    }
}

/// Every process of one pass, before roles are resolved.
#[derive(Debug)]
pub struct Harvest {
    /// One sample per readable process.
    pub samples: Vec<Sample>,
    /// Counters so far.
    pub stats: ScanStats,
    started: Instant,
}

impl Harvest {
    /// The sample of `pid`, if it was read.
    pub fn get(&self, pid: u32) -> Option<&Sample> {
        self.samples.iter().find(|s| s.pid == pid)
    }
}

fn server_info(s: &Sample) -> Option<ServerInfo> {
    let Signature::Server {
        mode,
        port,
        log_file,
        ..
    } = &s.ident.signature
    else {
        return None;
    };
    Some(ServerInfo {
        pid: s.pid,
        start_time: s.start_time,
        mode: *mode,
        port: *port,
        log_file: log_file.clone(),
        pkg_dir: s.ident.pkg_dir.clone(),
    })
}

fn proc_of(s: &Sample, r: relate::Resolved) -> Proc {
    let owner_pid = match &s.ident.signature {
        Signature::Worker { .. } => s.owner_pid,
        _ => None,
    };
    // A stdio server other than mcp-debugger always says why it is one (also when it was
    // resolved from memory).
    let mcp = match (&s.ident.signature, r.memory.role) {
        (Signature::Server { .. }, _) => None,
        (_, Some(Role::Server)) => r.mcp.clone().or_else(|| s.ident.mcp.clone()).or(r
            .memory
            .host
            .as_ref()
            .map(|_| McpEvidence::HostChild)),
        _ => None,
    };
    Proc {
        facts: ProcFacts {
            pid: s.pid,
            ppid: s.ppid,
            pgid: s.pgid,
            sid: s.sid,
            start_time: s.start_time,
            start_ticks: s.start_ticks,
            uid: s.ident.uid,
            role: r.memory.role.unwrap_or(Role::Other),
            argv: s.ident.argv.clone(),
            markers: s.markers.clone(),
            server_pid: r.memory.server_pid,
            session_id: r.memory.session_id,
            language: r.memory.language,
            owner_pid,
            remembered_ppid: r.remembered_ppid,
            exited_at: None,
            stdio: s.stdio,
            channel: s.channel,
            // A leaked chain's root: the collector found nobody at the other end.
            stdin_holders: s.dead_end.map(|_| Vec::new()),
            stdin_unchecked: false,
            mcp,
            host: r.memory.host,
            ns: s.ident.ns.clone(),
            tracer_pid: s.ident.tracer_pid,
            adopted: s.adopted.clone(),
        },
        sample: ProcSample {
            state: s.state,
            cpu_percent: s.cpu_percent,
            rss_bytes: s.rss_bytes,
            stdio_quiet_since: None,
        },
    }
}

/// What the file-descriptor side of a scan can tell (Linux: `/proc/<pid>/fd`); nothing on the
/// portable backend.
pub(crate) trait FdView {
    /// Marks samples whose parent holds the writing end of their stdin pipe.
    fn mark_parent_writers(&mut self, samples: &mut [Sample]);
    /// Fills `stdin_holders` for stdio MCP servers whose parent does not write to them.
    fn stdin_holders(&mut self, procs: &mut [Proc]);
    /// The bytes a process has read and written so far (every file, pipe and socket), when
    /// readable: whether a host's stdio server still talks.
    fn io_bytes(&self, _pid: u32) -> Option<u64> {
        None
    }
}

/// No file descriptors to look at.
#[derive(Debug, Default)]
pub(crate) struct NoFds;

impl FdView for NoFds {
    fn mark_parent_writers(&mut self, _: &mut [Sample]) {}
    fn stdin_holders(&mut self, _: &mut [Proc]) {}
}

/// CPU from one read, as `ps` gives it: the CPU time a process used over its whole life, in
/// percent of one core of that life (`None` for a process younger than a tick). A one-shot
/// look that takes no second sample shows this; a monitor shows the use since its last sample.
/// Both counts are in the same clock ticks.
pub(crate) fn lifetime_percent(cpu_ticks: u64, age_ticks: u64) -> Option<f32> {
    (age_ticks > 0).then(|| (cpu_ticks as f64 / age_ticks as f64 * 100.0) as f32)
}

/// The owner pid a signature names, as written.
pub(crate) fn raw_owner(sig: &Signature) -> Option<u32> {
    match sig {
        Signature::Worker { owner_pid, .. } => Some(*owner_pid),
        Signature::Adapter { owner_pid, .. } | Signature::Debuggee { owner_pid, .. } => *owner_pid,
        _ => None,
    }
}

/// Pids written inside another pid namespace, translated to the pids debugtop sees — within
/// that namespace only; a pid no process of that namespace has is unknown (`None`), never
/// another namespace's process of the same number.
#[cfg(target_os = "linux")]
pub(crate) fn translate(samples: &mut [Sample]) {
    let map = ns::NsMap::new(
        samples
            .iter()
            .filter_map(|s| s.ident.ns.as_ref().map(|n| (n.inode, n.pid, s.pid))),
    );
    for s in samples.iter_mut() {
        let Some(space) = s.ident.ns.as_ref().map(|n| n.inode) else {
            continue;
        };
        let outer = |p: Option<u32>| p.and_then(|p| map.outer(Some(space), p));
        s.owner_pid = outer(raw_owner(&s.ident.signature));
        s.markers.main_pid = outer(s.ident.markers.main_pid);
        s.markers.inspector_pid = outer(s.ident.markers.inspector_pid);
    }
}

#[cfg(not(target_os = "linux"))]
fn translate(_: &mut [Sample]) {}

/// Where the OS never re-parents (Windows), a parent pid is the one a process was created
/// with, and that pid may since belong to a younger process: a "parent" created after its
/// child is no parent (its pid was reused), and the child is an orphan (parent pid 0).
/// Where the OS re-parents, every parent is older than its child and nothing changes.
#[cfg_attr(not(windows), allow(dead_code))] // only Windows keeps parent pids that may be reused
pub(crate) fn unlink_reused_parents(samples: &mut [Sample]) {
    let born: HashMap<u32, u64> = samples.iter().map(|s| (s.pid, s.start_ticks)).collect();
    for s in samples.iter_mut() {
        let younger = born
            .get(&s.ppid)
            .is_some_and(|parent| s.start_ticks != 0 && *parent > s.start_ticks);
        if younger {
            s.ppid = 0;
        }
    }
}

/// Builds the [`ProcessTable`] from a full harvest: shared by every backend.
pub(crate) fn finish(
    harvest: Harvest,
    cache: &mut IdentityCache,
    fds: &mut dyn FdView,
) -> ProcessTable {
    let Harvest {
        mut samples,
        mut stats,
        started,
    } = harvest;
    translate(&mut samples);
    adopt::mark_adopted(&mut samples, cache);
    for s in &samples {
        cache.note_parent(s.pid, s.start_ticks, s.ppid);
    }
    stats.wine = u32::try_from(samples.iter().filter(|s| s.ident.wine).count()).unwrap_or(0);
    fds.mark_parent_writers(&mut samples);
    let resolved = relate(&samples, cache);
    let mut servers = Vec::new();
    let mut procs = Vec::with_capacity(resolved.len());
    let now = Utc::now();
    for (i, r) in resolved {
        let s = &samples[i];
        cache.remember(s.pid, s.start_ticks, r.memory.clone());
        if let Some(server) = server_info(s) {
            servers.push(server);
        }
        let mut p = proc_of(s, r);
        if s.parent_writes_stdin && p.role == Role::Server {
            // No byte ever moved: the counters are not kept here (a server that answered its
            // host has read something), so silence cannot be told from them.
            let bytes = fds.io_bytes(s.pid).filter(|bytes| *bytes > 0);
            stats.io_unmeasured += u32::from(bytes.is_none());
            p.sample.stdio_quiet_since =
                bytes.and_then(|bytes| cache.note_io(s.pid, s.start_ticks, bytes, now));
        }
        procs.push(p);
    }
    fds.stdin_holders(&mut procs);
    procs.sort_by_key(|p| (p.server_pid.unwrap_or(u32::MAX), p.pid));
    servers.sort_by_key(|s| s.pid);
    stats.duration_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    ProcessTable {
        taken_at: now,
        procs,
        servers,
        stats,
    }
}
