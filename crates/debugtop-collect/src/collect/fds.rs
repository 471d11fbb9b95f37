//! Standard streams and who is at their other end, from `/proc/<pid>/fd` and `fdinfo`: what a
//! process's stdin and stdout are, whether a parent holds the other end of a child's stdin (a
//! host talking to a stdio MCP server), and who, if anyone, can still write to it (nobody: no
//! request can ever reach the reader). A pipe's two ends show the same `pipe:[inode]` (the
//! access mode in `fdinfo` tells the writing end); a socket pair's ends have their own inodes
//! (the kernel names the peer: `unix_diag`), and a socket whose peer closed has none.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::unix_diag;
use debugtop_model::{FdKind, Proc, Role, Stdio};

/// What `/proc/<pid>/fd/<n>` points at.
pub fn fd_kind(pid: u32, fd: u32) -> FdKind {
    let Ok(link) = std::fs::read_link(format!("/proc/{pid}/fd/{fd}")) else {
        return FdKind::Unknown;
    };
    let l = link.to_string_lossy();
    let inode = |prefix: &str| {
        l.strip_prefix(prefix)
            .and_then(|r| r.strip_suffix(']'))
            .and_then(|n| n.parse().ok())
    };
    if let Some(inode) = inode("pipe:[") {
        FdKind::Pipe { inode }
    } else if let Some(inode) = inode("socket:[") {
        FdKind::Socket { inode }
    } else if l == "/dev/null" {
        FdKind::Null
    } else if l.starts_with("/dev/pts/") || l.starts_with("/dev/tty") || l == "/dev/console" {
        FdKind::Tty
    } else {
        FdKind::Other
    }
}

/// Bytes a process has read and written so far (`rchar` + `wchar` of `/proc/<pid>/io`: every
/// read and write, pipes included, page cache or not), when readable.
pub fn io_bytes(pid: u32) -> Option<u64> {
    let raw = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
    parse_io_bytes(&raw)
}

/// `rchar` + `wchar` from the text of `/proc/<pid>/io`.
fn parse_io_bytes(raw: &str) -> Option<u64> {
    let field = |name: &str| {
        raw.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(field("rchar")?.wrapping_add(field("wchar")?))
}

/// A process's stdin and stdout.
pub fn stdio(pid: u32) -> Stdio {
    Stdio {
        stdin: fd_kind(pid, 0),
        stdout: fd_kind(pid, 1),
    }
}

/// Every pipe and socket a process has open (at most 64), for a server that moved its stdio
/// channel off fds 0 and 1 (Python MCP servers put `/dev/null` on 0 and stderr on 1 and speak
/// on a duplicate).
pub fn channels(pid: u32) -> Vec<FdKind> {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let mut fds: Vec<u32> = rd
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|fd| *fd > 2)
        .collect();
    fds.sort_unstable();
    fds.into_iter()
        .take(256)
        .map(|fd| fd_kind(pid, fd))
        .filter(|k| k.is_channel())
        .take(64)
        .collect()
}

/// The channel a process talks to its host on: stdin when it is a pipe or a socket, else the
/// first pipe or socket whose other end it does not hold itself (its own socket pairs are
/// internal), as far as the kernel still tells. For a process whose parent is not a host
/// debugtop confirmed (`strict`), only the one known shape of a moved channel counts: a Python
/// interpreter with `/dev/null` on fd 0, fd 1 the same as fd 2, and at least two such channels
/// (one in, one out) — so a daemon, a supervisor or a host that merely holds sockets to its
/// own children is never taken for a server speaking on a duplicate.
fn host_channel(pid: u32, stdio: Option<Stdio>, others: &[FdKind], strict: bool) -> Option<FdKind> {
    if let Some(c) = stdio.and_then(|x| x.stdin_channel()) {
        return Some(c);
    }
    if strict && !python_moved_stdio(pid, stdio) {
        return None;
    }
    let fars = far_ends(others);
    let mut open = others.iter().copied().filter(|c| match fars.get(c) {
        Some(Far::Gone) => true,
        Some(f) => !holds(pid, *f),
        None => false,
    });
    let first = open.next()?;
    (!strict || open.next().is_some()).then_some(first)
}

/// The Python MCP SDK's stdio shape: `/dev/null` on fd 0, fd 1 pointed where fd 2 goes, the
/// interpreter a Python.
fn python_moved_stdio(pid: u32, stdio: Option<Stdio>) -> bool {
    let Some(io) = stdio else { return false };
    let python = std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| {
            p.file_name()
                .map(|n| n.to_string_lossy().starts_with("python"))
        })
        .unwrap_or(false);
    let same_as_stderr = || {
        let link = |fd: u32| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok();
        link(1).is_some_and(|one| Some(one) == link(2))
    };
    python && io.stdin == FdKind::Null && same_as_stderr()
}

/// What the other end of a stdin channel looks like in another process's fd table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Far {
    /// The writing end of this pipe.
    PipeWriter(u64),
    /// The reading end of this pipe (of a stdout).
    PipeReader(u64),
    /// This socket (the peer of stdin's).
    Socket(u64),
    /// Nothing: a socket whose peer closed.
    Gone,
}

impl Far {
    fn link(self) -> Option<String> {
        match self {
            Self::PipeWriter(i) | Self::PipeReader(i) => Some(format!("pipe:[{i}]")),
            Self::Socket(i) => Some(format!("socket:[{i}]")),
            Self::Gone => None,
        }
    }
}

/// The peers of the sockets among `channels`, in one netlink round (none when there are none).
fn socket_peers(channels: impl IntoIterator<Item = FdKind>) -> HashMap<u64, Option<u64>> {
    let sockets: Vec<u64> = channels
        .into_iter()
        .filter_map(|c| match c {
            FdKind::Socket { inode } => Some(inode),
            _ => None,
        })
        .collect();
    if sockets.is_empty() {
        HashMap::new()
    } else {
        unix_diag::peers(&sockets)
    }
}

/// The far ends of these stdin channels.
fn far_ends(channels: &[FdKind]) -> HashMap<FdKind, Far> {
    let peers = socket_peers(channels.iter().copied());
    channels
        .iter()
        .filter_map(|c| {
            let far = match c {
                FdKind::Pipe { inode } => Far::PipeWriter(*inode),
                FdKind::Socket { inode } => match peers.get(inode)? {
                    Some(p) => Far::Socket(*p),
                    None => Far::Gone,
                },
                _ => return None,
            };
            Some((*c, far))
        })
        .collect()
}

/// The access mode `/proc/<pid>/fdinfo/<fd>` says the fd was opened with (`O_ACCMODE`:
/// O_RDONLY = 0, O_WRONLY = 1, O_RDWR = 2).
fn access_mode(pid: u32, fd: &str) -> Option<u32> {
    let info = std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .map(|flags| flags & 3)
}

/// Whether an fd of `pid` (named `fd`, pointing at `link`) is the far end wanted.
fn is_far(pid: u32, fd: &str, link: &str, far: Far) -> bool {
    far.link().is_some_and(|want| link == want)
        && match far {
            Far::PipeWriter(_) => access_mode(pid, fd).is_some_and(|m| m != 0),
            Far::PipeReader(_) => access_mode(pid, fd).is_some_and(|m| m != 1),
            _ => true,
        }
}

/// Whether `pid` holds `far`.
fn holds(pid: u32, far: Far) -> bool {
    if far == Far::Gone || pid <= 1 {
        return false;
    }
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    rd.flatten().any(|e| {
        std::fs::read_link(e.path()).is_ok_and(|l| {
            is_far(
                pid,
                &e.file_name().to_string_lossy(),
                &l.to_string_lossy(),
                far,
            )
        })
    })
}

/// Every process holding each of `fars`. One pass over every process's fds: only for the few
/// channels whose other end is not the reader's parent.
fn holders(fars: &[Far]) -> HashMap<Far, Vec<u32>> {
    let mut out: HashMap<Far, Vec<u32>> = fars.iter().map(|f| (*f, Vec::new())).collect();
    let wanted: HashMap<String, Far> = fars.iter().filter_map(|f| Some((f.link()?, *f))).collect();
    if wanted.is_empty() {
        return out;
    }
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for p in procs.flatten() {
        let Some(pid) = p.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let link = link.to_string_lossy();
            let Some(far) = wanted.get(link.as_ref()) else {
                continue;
            };
            let who = out.entry(*far).or_default();
            if !who.contains(&pid) && is_far(pid, &fd.file_name().to_string_lossy(), &link, *far) {
                who.push(pid);
            }
        }
    }
    out
}

/// How long a leaked chain's root is believed without looking again.
const ROOT_RECHECK: Duration = Duration::from_secs(60);
/// How long a "who holds the other end" answer is reused.
const HOLDERS_TTL: Duration = Duration::from_secs(5);
/// How long a "the parent holds the other end of this child's stdin" answer is reused (a host
/// rarely closes a live server's stdin; when it dies, the child's parent changes and the
/// answer is not reused).
const PARENT_TTL: Duration = Duration::from_secs(10);

/// The collector's view of the channels between hosts and their stdio servers, across scans.
#[derive(Debug, Default)]
pub struct FdWatch {
    parent: HashMap<(u32, u32, FdKind), (Instant, bool)>,
    holders: HashMap<Far, (Instant, Vec<u32>)>,
    /// The leaked chains' roots found by the last scan (by identity), with when each was last
    /// confirmed by looking at every process's fds.
    roots: HashMap<(u32, u64), Instant>,
    /// A new root was found: the next scan reads every process (what runs under it may be
    /// idle and unread so far).
    pub full_next: bool,
}

/// The far ends of an adopted process's stdio: its stdin's writer, its stdout's reader (a
/// socket's peer for either).
fn stdio_far_ends(io: Stdio, peers: &HashMap<u64, Option<u64>>) -> Vec<(FdKind, Far)> {
    let far = |c: FdKind, pipe: fn(u64) -> Far| match c {
        FdKind::Pipe { inode } => Some((c, pipe(inode))),
        FdKind::Socket { inode } => Some((
            c,
            match peers.get(&inode) {
                Some(Some(p)) => Far::Socket(*p),
                _ => Far::Gone,
            },
        )),
        _ => None,
    };
    let mut out: Vec<(FdKind, Far)> = far(io.stdin, Far::PipeWriter).into_iter().collect();
    if io.stdout != io.stdin || !matches!(io.stdout, FdKind::Socket { .. }) {
        out.extend(far(io.stdout, Far::PipeReader));
    }
    out
}

/// debugtop's own ancestors: in use while it runs, whatever their pipes say (their other ends
/// may be held outside this pid namespace: a container's `exec`, a CI runner).
fn own_ancestors() -> HashSet<u32> {
    let mut out = HashSet::new();
    let mut pid = std::process::id();
    for _ in 0..64 {
        match super::parent_pid(pid) {
            Some(pp) if pp > 1 && out.insert(pp) => pid = pp,
            _ => break,
        }
    }
    out
}

impl FdWatch {
    /// Adopted processes with nobody at the other end of their stdio: no process can write to
    /// their stdin, nor read their stdout (a socket's peer closed, or nobody holds it). Each
    /// is the root of a leaked chain ([`super::Sample::dead_end`]). A root stays one for
    /// [`ROOT_RECHECK`] without a look at every process's fds (a pipe whose every other end is
    /// closed is reopened only through `/proc/<pid>/fd`: checked again then).
    fn dead_ends(&mut self, samples: &mut [super::Sample], now: Instant) {
        let id = |s: &super::Sample| (s.pid, s.start_ticks);
        let (known, ask): (Vec<usize>, Vec<usize>) = (0..samples.len())
            .filter(|&i| samples[i].adopted.is_some() && samples[i].state.is_alive())
            .filter(|&i| {
                samples[i]
                    .stdio
                    .is_some_and(|io| io.stdin.is_channel() || io.stdout.is_channel())
            })
            .partition(|&i| {
                self.roots
                    .get(&id(&samples[i]))
                    .is_some_and(|at| now.duration_since(*at) < ROOT_RECHECK)
            });
        let mut roots = HashMap::new();
        for i in known {
            let s = &mut samples[i];
            let was = self.roots.get(&(s.pid, s.start_ticks)).copied();
            s.dead_end = s.stdio.map(|io| {
                if io.stdin.is_channel() {
                    io.stdin
                } else {
                    io.stdout
                }
            });
            roots.insert((s.pid, s.start_ticks), was.unwrap_or(now));
        }
        for (i, channel) in self.unreachable(samples, &ask, now) {
            samples[i].dead_end = Some(channel);
            roots.insert(id(&samples[i]), now);
        }
        for s in samples.iter_mut().filter(|s| s.dead_end.is_some()) {
            s.channel = s.channel.or(s.dead_end);
        }
        self.full_next |= roots.keys().any(|r| !self.roots.contains_key(r));
        self.roots = roots;
    }

    /// Which of the samples `ask` (adopted, with a stdio channel) nobody can reach over their
    /// stdio, with the channel to name; debugtop's own ancestors never (see [`own_ancestors`]).
    fn unreachable(
        &mut self,
        samples: &[super::Sample],
        ask: &[usize],
        now: Instant,
    ) -> Vec<(usize, FdKind)> {
        if ask.is_empty() {
            return Vec::new();
        }
        let ours = own_ancestors();
        let peers = socket_peers(
            ask.iter()
                .filter_map(|&i| samples[i].stdio)
                .flat_map(|io| [io.stdin, io.stdout]),
        );
        let ends: Vec<(usize, Vec<(FdKind, Far)>)> = ask
            .iter()
            .filter(|&&i| !ours.contains(&samples[i].pid))
            .filter_map(|&i| Some((i, stdio_far_ends(samples[i].stdio?, &peers))))
            .collect();
        let fars: Vec<Far> = ends
            .iter()
            .flat_map(|(_, e)| e.iter().map(|x| x.1))
            .collect();
        self.refresh_holders(&fars, now);
        let nobody = |far: &Far, me: u32| {
            *far == Far::Gone
                || self
                    .holders
                    .get(far)
                    .is_none_or(|(_, who)| who.iter().all(|p| *p == me))
        };
        ends.into_iter()
            .filter(|(i, e)| e.iter().all(|(_, far)| nobody(far, samples[*i].pid)))
            .filter_map(|(i, e)| Some((i, e.first()?.0)))
            .collect()
    }

    /// Reads again who holds each of `fars` whose answer is older than [`HOLDERS_TTL`].
    fn refresh_holders(&mut self, fars: &[Far], now: Instant) {
        self.holders
            .retain(|_, (at, _)| now.duration_since(*at) < HOLDERS_TTL);
        let stale: Vec<Far> = fars
            .iter()
            .copied()
            .filter(|f| *f != Far::Gone && !self.holders.contains_key(f))
            .collect();
        if stale.is_empty() {
            return;
        }
        for (far, who) in holders(&stale) {
            self.holders.insert(far, (now, who));
        }
    }

    /// For each (child, parent, stdin channel): whether the parent holds the other end.
    fn parents_hold(&mut self, asks: &[(u32, u32, FdKind)], now: Instant) -> HashSet<u32> {
        self.parent
            .retain(|_, (at, _)| now.duration_since(*at) < PARENT_TTL);
        let fresh: Vec<FdKind> = asks
            .iter()
            .filter(|k| !self.parent.contains_key(k))
            .map(|(_, _, c)| *c)
            .collect();
        let fars = far_ends(&fresh);
        let mut yes = HashSet::new();
        for key in asks {
            let held = match self.parent.get(key) {
                Some((_, h)) => *h,
                None => {
                    let h = fars.get(&key.2).is_some_and(|f| holds(key.1, *f));
                    self.parent.insert(*key, (now, h));
                    h
                }
            };
            if held {
                yes.insert(key.0);
            }
        }
        yes
    }
}

impl super::FdView for FdWatch {
    fn io_bytes(&self, pid: u32) -> Option<u64> {
        io_bytes(pid)
    }

    fn mark_parent_writers(&mut self, samples: &mut [super::Sample]) {
        let now = Instant::now();
        // Step 1: parents of processes that say MCP, or that a marked host started.
        let marked: HashSet<u32> = samples
            .iter()
            .filter(|s| s.ident.host.is_some())
            .map(|s| s.pid)
            .collect();
        let says = |s: &super::Sample| {
            s.ident.mcp.is_some()
                || matches!(s.ident.signature, super::classify::Signature::Server { .. })
                || marked.contains(&s.ppid)
        };
        for s in samples.iter_mut().filter(|s| says(s)) {
            s.channel = host_channel(s.pid, s.stdio, &s.ident.channels, !marked.contains(&s.ppid));
        }
        let asks: Vec<(u32, u32, FdKind)> = samples
            .iter()
            .filter(|s| says(s))
            .filter_map(|s| Some((s.pid, s.ppid, s.channel?)))
            .collect();
        let held = self.parents_hold(&asks, now);
        let hosts: HashSet<u32> = samples
            .iter()
            .filter(|s| held.contains(&s.pid))
            .map(|s| s.ppid)
            .collect();
        // Step 2: every other piped child of a host found so (name-free: what it does, not
        // what it is called).
        for s in samples
            .iter_mut()
            .filter(|s| hosts.contains(&s.ppid) && s.channel.is_none())
        {
            let io = *s.stdio.get_or_insert_with(|| stdio(s.pid));
            let others = if io.stdin_channel().is_some() {
                Vec::new()
            } else {
                channels(s.pid)
            };
            s.channel = host_channel(s.pid, Some(io), &others, false);
        }
        let asks: Vec<(u32, u32, FdKind)> = samples
            .iter()
            .filter(|s| hosts.contains(&s.ppid))
            .filter_map(|s| Some((s.pid, s.ppid, s.channel?)))
            .collect();
        let held = held
            .union(&self.parents_hold(&asks, now))
            .copied()
            .collect::<HashSet<u32>>();
        for s in samples.iter_mut() {
            s.parent_writes_stdin = held.contains(&s.pid);
        }
        self.dead_ends(samples, now);
    }

    fn stdin_holders(&mut self, procs: &mut [Proc]) {
        let now = Instant::now();
        let servers: Vec<usize> = (0..procs.len())
            .filter(|&i| procs[i].role == Role::Server && procs[i].sample.state.is_alive())
            .filter(|&i| procs[i].channel.is_some())
            .collect();
        let asks: Vec<(u32, u32, FdKind)> = servers
            .iter()
            .filter_map(|&i| Some((procs[i].pid, procs[i].ppid, procs[i].channel?)))
            .collect();
        let by_parent = self.parents_hold(&asks, now);
        let mut suspects = Vec::new();
        for &i in &servers {
            if by_parent.contains(&procs[i].pid) {
                procs[i].stdin_holders = Some(vec![procs[i].ppid]);
            } else if let Some(c) = procs[i].channel {
                suspects.push((i, c));
            }
        }
        if suspects.is_empty() {
            return;
        }
        let channels: Vec<FdKind> = suspects.iter().map(|(_, c)| *c).collect();
        let fars = far_ends(&channels);
        let wanted: Vec<Far> = fars.values().copied().collect();
        self.refresh_holders(&wanted, now);
        for (i, c) in suspects {
            let me = procs[i].pid;
            let Some(far) = fars.get(&c) else { continue };
            let who = self
                .holders
                .get(far)
                .map(|(_, w)| w.clone())
                .unwrap_or_default();
            procs[i].stdin_holders = Some(who.into_iter().filter(|p| *p != me).collect());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_bytes_are_the_characters_read_and_written_and_a_garbled_file_is_none() {
        let raw = "rchar: 1200\nwchar: 34\nsyscr: 9\nsyscw: 3\nread_bytes: 0\nwrite_bytes: 0\n";
        assert_eq!(parse_io_bytes(raw), Some(1234));
        assert_eq!(parse_io_bytes("rchar: 12\n"), None);
        assert_eq!(parse_io_bytes("rchar: x\nwchar: 1\n"), None);
        assert_eq!(io_bytes(std::process::id()).map(|b| b > 0), Some(true));
    }
}
