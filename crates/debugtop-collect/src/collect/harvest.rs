//! One pass of a backend, made into the process table: samples related to one another
//! (roles, servers, sessions), identities remembered, servers listed, processes built — the
//! steps every backend ends with.

use std::collections::HashMap;
use std::time::Instant;

use chrono::Utc;
use debugtop_model::{
    McpEvidence, Proc, ProcFacts, ProcSample, ProcessTable, Role, ScanStats, ServerInfo,
};

use super::classify::Signature;
use super::identity::IdentityCache;
#[cfg(target_os = "linux")]
use super::ns;
use super::sample::Sample;
use super::{adopt, relate};

/// Every process of one pass, before roles are resolved.
#[derive(Debug)]
pub struct Harvest {
    /// One sample per readable process.
    pub samples: Vec<Sample>,
    /// Counters so far.
    pub stats: ScanStats,
    pub(crate) started: Instant,
}

impl Harvest {
    /// The sample of `pid`, if it was read.
    pub fn get(&self, pid: u32) -> Option<&Sample> {
        self.samples.iter().find(|s| s.pid == pid)
    }
}

pub(crate) fn server_info(s: &Sample) -> Option<ServerInfo> {
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

pub(crate) fn proc_of(s: &Sample, r: relate::Resolved) -> Proc {
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
pub(crate) fn translate(_: &mut [Sample]) {}

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

/// The bytes a host's stdio server has moved: its own and those of every process under it that
/// holds the same channel. A wrapper (`uvx`, `npx`, `sh -c`) hands the host's pipe to the
/// server it starts and moves nothing itself: its own counters stand still while its server
/// talks, and a wrapped twin that talks looked silent. `None` when its own are unreadable.
fn chain_io_bytes(samples: &[Sample], at: usize, fds: &dyn FdView) -> Option<u64> {
    let top = &samples[at];
    let mut total = fds.io_bytes(top.pid)?;
    let Some(channel) = top.channel else {
        return Some(total);
    };
    let mut under = vec![top.pid];
    // Parents come before children only by chance: walk until nothing new is found (the
    // chain of a wrapper is two or three deep).
    let mut grew = true;
    while grew {
        grew = false;
        for s in samples {
            if s.channel == Some(channel) && under.contains(&s.ppid) && !under.contains(&s.pid) {
                under.push(s.pid);
                total = total.wrapping_add(fds.io_bytes(s.pid).unwrap_or(0));
                grew = true;
            }
        }
    }
    Some(total)
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
        cache.remember(s.pid, s.start_ticks, &r.memory);
        if let Some(server) = server_info(s) {
            servers.push(server);
        }
        let mut p = proc_of(s, r);
        if s.parent_writes_stdin && p.role == Role::Server {
            // No byte ever moved: the counters are not kept here (a server that answered its
            // host has read something), so silence cannot be told from them.
            let bytes = chain_io_bytes(&samples, i, &*fds).filter(|bytes| *bytes > 0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_life_long_cpu_share_and_the_owner_a_signature_names() {
        assert_eq!(lifetime_percent(50, 200), Some(25.0));
        assert_eq!(lifetime_percent(5, 0), None, "no age, no share");
        let w = super::super::classify::classify(
            &[
                "node",
                "/p/proxy-bootstrap.js",
                "--mcp-owner-pid=77",
                "--mcp-session-id=s",
            ]
            .map(String::from),
            &debugtop_model::EnvMarkers::default(),
        );
        assert_eq!(raw_owner(&w), Some(77));
        assert_eq!(raw_owner(&Signature::None), None);
    }

    /// A wrapper's counters with those of the processes under it on its channel.
    struct Bytes(Vec<(u32, u64)>);

    impl FdView for Bytes {
        fn mark_parent_writers(&mut self, _: &mut [Sample]) {}
        fn stdin_holders(&mut self, _: &mut [Proc]) {}
        fn io_bytes(&self, pid: u32) -> Option<u64> {
            self.0.iter().find(|(p, _)| *p == pid).map(|(_, b)| *b)
        }
    }

    #[test]
    fn a_wrappers_bytes_are_its_own_and_its_servers_on_the_same_channel() {
        use crate::collect::relate::tests::sample;
        let pipe = Some(debugtop_model::FdKind::Pipe { inode: 9 });
        let other = Some(debugtop_model::FdKind::Pipe { inode: 10 });
        let markers = debugtop_model::EnvMarkers::default();
        // Listed child first: the walk does not rely on parents coming first.
        let mut samples = vec![
            sample(12, 11, "python3 server.py", markers.clone()),
            sample(11, 10, "sh -c server", markers.clone()),
            sample(13, 12, "helper", markers.clone()),
            sample(14, 11, "logger", markers),
        ];
        samples[0].channel = pipe;
        samples[1].channel = pipe;
        samples[2].channel = pipe;
        samples[3].channel = other;
        let fds = Bytes(vec![(11, 0), (12, 500), (13, 7), (14, 1000)]);
        assert_eq!(
            chain_io_bytes(&samples, 1, &fds),
            Some(507),
            "not the logger's"
        );
        samples[1].channel = None;
        assert_eq!(
            chain_io_bytes(&samples, 1, &fds),
            Some(0),
            "no channel, its own"
        );
        let unreadable = Bytes(vec![(12, 500)]);
        assert_eq!(chain_io_bytes(&samples, 1, &unreadable), None);
    }
}
