//! What a process is, read once per identity (pid + start ticks) and kept: its command line,
//! markers, signature, owner, stdio — and, per identity across scans, its CPU ticks, what relate
//! concluded, its last quiet reads and its I/O counters. A reused pid is a new identity.

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use debugtop_model::{EnvMarkers, FdKind, HostKind, McpEvidence, PidNs, Stdio};

use super::classify::{self, Signature};
use super::parse;
use super::sample::Belonging;

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
    pub argv: Arc<[String]>,
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
            argv: argv.into(),
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
    memory: Belonging,
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
    pub(crate) fn note_parent(&mut self, pid: u32, start_ticks: u64, ppid: u32) {
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
    pub(crate) fn note_io(
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
    pub fn memory(&self, pid: u32, start_ticks: u64) -> Option<&Belonging> {
        self.entries
            .get(&pid)
            .filter(|e| e.start_ticks == start_ticks)
            .map(|e| &e.memory)
    }

    /// How many times the collector read `pid`'s stat (the one it holds now).
    pub fn reads(&self, pid: u32) -> Option<u32> {
        self.entries.get(&pid).map(|e| e.reads)
    }

    /// Whether `pid`'s identity (whichever it holds) is watched: related to a debug server,
    /// or one the scan reads every time for another reason (see `CacheEntry::watched`).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn is_watched(&self, pid: u32) -> bool {
        self.entries.get(&pid).is_some_and(CacheEntry::watched)
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
    pub(crate) fn observe(
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
                        memory: Belonging::default(),
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
    pub(crate) fn skip_unwatched(&mut self, pid: u32, gen: u64, now: Instant) -> bool {
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
    pub(crate) fn keep_stat(&mut self, stat: &parse::StatFields) {
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
    pub(crate) fn quiet_stat(
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
    pub(crate) fn set_born(&mut self, pid: u32, born: Instant) {
        if let Some(e) = self.entries.get_mut(&pid) {
            e.first_seen = born;
        }
    }

    /// Whether the command name changed since argv was read (the process exec'd); records the
    /// new one.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn comm_changed(&mut self, pid: u32, start_ticks: u64, comm_hash: u64) -> bool {
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
    pub(crate) fn sweep(&mut self, gen: u64) -> usize {
        let before = self.entries.len();
        self.entries.retain(|_, e| e.seen_gen == gen);
        before - self.entries.len()
    }

    /// Forgets what relate concluded about `pid` (its image changed).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) fn forget(&mut self, pid: u32) {
        if let Some(e) = self.entries.get_mut(&pid) {
            e.memory = Belonging::default();
        }
    }

    pub(crate) fn remember(&mut self, pid: u32, start_ticks: u64, memory: &Belonging) {
        if let Some(e) = self
            .entries
            .get_mut(&pid)
            .filter(|e| e.start_ticks == start_ticks && e.memory != *memory)
        {
            e.memory.clone_from(memory);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ident(argv: &str) -> Arc<Ident> {
        Arc::new(Ident::of_argv(argv.split(' ').map(String::from).collect()))
    }

    fn stat(pid: u32, start: u64, cpu: u64, state: char) -> parse::StatFields {
        parse::StatFields {
            pid,
            state,
            ppid: 1,
            pgrp: pid,
            session: pid,
            utime: cpu,
            stime: 0,
            starttime: start,
            rss: 100,
        }
    }

    #[test]
    fn a_reused_pid_is_a_new_identity_and_cpu_is_measured_between_two_reads() {
        let mut c = IdentityCache::default();
        let t0 = Instant::now();
        let worker = ident("node proxy-bootstrap.js --mcp-owner-pid=7 --mcp-session-id=s");
        assert_eq!(
            c.observe(42, 1000, Arc::clone(&worker), 0, 100, t0, 1),
            None
        );
        let pct = c.observe(42, 1000, worker, 50, 100, t0 + Duration::from_secs(1), 2);
        assert!(pct.is_some_and(|p| (p - 50.0).abs() < 0.5), "{pct:?}");
        c.remember(
            42,
            1000,
            &Belonging {
                role: Some(debugtop_model::Role::Worker),
                ..Belonging::default()
            },
        );
        assert!(c.memory(42, 1000).is_some_and(|m| m.role.is_some()));
        // The same pid, started later: another process, nothing of the first carried over.
        assert_eq!(c.observe(42, 2000, ident("sleep 9"), 0, 100, t0, 3), None);
        assert!(c.get(42, 1000).is_none() && c.get(42, 2000).is_some());
        assert!(c.memory(42, 2000).is_some_and(|m| m.role.is_none()));
        // What was not seen in a generation is swept.
        c.observe(43, 5, ident("sleep 1"), 0, 100, t0, 3);
        assert_eq!(c.sweep(3), 0, "both were seen in 3");
        assert_eq!(c.sweep(4), 2, "neither in 4");
        assert!(c.is_empty());
    }

    #[test]
    fn a_quiet_watched_identity_is_served_from_its_last_read_but_on_its_due_scan() {
        let mut c = IdentityCache::default();
        let born = Instant::now() - YOUNG - Duration::from_secs(1);
        let w = ident("node proxy-bootstrap.js --mcp-owner-pid=7 --mcp-session-id=s");
        let pid = 44;
        c.observe(pid, 9, w, 0, 100, born, 1);
        c.set_born(pid, born);
        // Not yet quiet for QUIET_AFTER reads in a row.
        for _ in 0..=QUIET_AFTER {
            c.keep_stat(&stat(pid, 9, 5, 'S'));
        }
        let now = Instant::now();
        let not_due = (0..QUIET_EVERY)
            .find(|g| (g + u64::from(pid)) % QUIET_EVERY != 0)
            .unwrap();
        let due = (0..QUIET_EVERY)
            .find(|g| (g + u64::from(pid)) % QUIET_EVERY == 0)
            .unwrap();
        assert!(
            c.quiet_stat(pid, not_due, now).is_some(),
            "served from its last read"
        );
        assert!(
            c.quiet_stat(pid, due, now).is_none(),
            "read on its due scan"
        );
        // CPU time used: no longer quiet.
        c.keep_stat(&stat(pid, 9, 6, 'S'));
        assert!(c.quiet_stat(pid, not_due, now).is_none());
        // Near miss: an unwatched process is never served (it is skipped, not judged).
        c.observe(45, 9, ident("sleep 100"), 0, 100, born, 1);
        c.set_born(45, born);
        for _ in 0..=QUIET_AFTER {
            c.keep_stat(&stat(45, 9, 0, 'S'));
        }
        assert!(c.quiet_stat(45, not_due, now).is_none());
        assert!(c.skip_unwatched(45, 2, now));
    }

    #[test]
    fn io_counters_say_since_when_they_stood_still_and_an_exec_is_a_changed_name() {
        let mut c = IdentityCache::default();
        c.observe(50, 1, ident("node server.js"), 0, 100, Instant::now(), 1);
        let t = |s: i64| chrono::DateTime::from_timestamp(s, 0).unwrap();
        assert_eq!(c.note_io(50, 1, 100, t(10)), Some(t(10)));
        assert_eq!(c.note_io(50, 1, 100, t(20)), Some(t(10)), "still since 10");
        assert_eq!(c.note_io(50, 1, 120, t(30)), Some(t(30)), "moved");
        assert_eq!(c.note_io(50, 2, 120, t(30)), None, "another identity");
        assert!(
            !c.comm_changed(50, 1, 7),
            "the first name seen is no change"
        );
        assert!(!c.comm_changed(50, 1, 7));
        assert!(c.comm_changed(50, 1, 8), "an exec");
    }
}
