//! Exit detection for watched processes through pidfds, so an exit is known when it happens, not
//! at the next tick. A background thread polls one pidfd per watched identity (plus an eventfd to
//! be woken when the set changes), records each exit's time, and notifies the sampler, which can
//! then run an out-of-band tick.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustix::event::{eventfd, poll, EventfdFlags, PollFd, PollFlags, Timespec};
use rustix::fd::OwnedFd;
use rustix::process::{pidfd_open, Pid, PidfdFlags};

/// An identity: pid and start ticks.
pub type Identity = (u32, u64);

#[derive(Debug, Default)]
struct State {
    watched: HashMap<Identity, Arc<OwnedFd>>,
    exits: Vec<(Identity, DateTime<Utc>)>,
    /// Identities of the last `watch` that got no pidfd because file descriptors ran out:
    /// they stay in the table, their exits are seen at the next tick.
    starved: usize,
    stop: bool,
}

/// Raises this process's soft limit on open files to its hard limit (capped at 1 << 20): one
/// pidfd per watched process runs out at the default 1,024 exactly when hundreds of leaked
/// workers are the incident. The soft limit after, if known.
pub fn raise_fd_limit() -> Option<u64> {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    let want = now.maximum.unwrap_or(1 << 20).min(1 << 20);
    if now.current.is_some_and(|c| c < want) {
        let _ = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(want),
                maximum: now.maximum,
            },
        );
    }
    getrlimit(Resource::Nofile).current
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    wake: OwnedFd,
    notify: tokio::sync::Notify,
}

/// Watches identities for exit. Dropping it stops the thread.
#[derive(Debug)]
pub struct ExitWatcher {
    shared: Arc<Shared>,
}

impl ExitWatcher {
    /// Starts the watcher thread. `None` where pidfds or eventfds are not available.
    pub fn start() -> Option<Self> {
        let w = Self::without_thread()?;
        let s = Arc::clone(&w.shared);
        std::thread::Builder::new()
            .name("debugtop-exits".into())
            .spawn(move || run(&s))
            .ok()?;
        Some(w)
    }

    /// A watcher with no thread of its own: exits are seen only when
    /// [`exited_by_now`](Self::exited_by_now) polls (what a scan does; tests use it to show
    /// that a scan does not depend on the thread having run).
    #[doc(hidden)]
    pub fn without_thread() -> Option<Self> {
        raise_fd_limit();
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok()?;
        Some(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                wake,
                notify: tokio::sync::Notify::new(),
            }),
        })
    }

    /// Sets the watched identities: new ones get a pidfd (checked against the start ticks),
    /// ones no longer listed are dropped.
    pub fn watch(&self, ids: impl IntoIterator<Item = Identity>) {
        let ids: HashSet<Identity> = ids.into_iter().collect();
        let Ok(mut st) = self.shared.state.lock() else {
            return;
        };
        let before = st.watched.len();
        st.watched.retain(|k, _| ids.contains(k));
        let mut changed = st.watched.len() != before;
        st.starved = 0;
        // Counting the open descriptors reads /proc/self/fd (thousands of entries at incident
        // scale): only when there is something new to open.
        let mut budget: Option<usize> = None;
        for id in ids {
            if st.watched.contains_key(&id) {
                continue;
            }
            let left = budget.get_or_insert_with(fd_budget);
            if *left == 0 {
                st.starved += 1;
                continue;
            }
            *left -= 1;
            match open_checked(id) {
                Ok(Some(fd)) => {
                    st.watched.insert(id, Arc::new(fd));
                    changed = true;
                }
                Ok(None) => {}
                Err(OutOfFds) => st.starved += 1,
            }
        }
        drop(st);
        // The thread polls the set it last took: it needs waking only when the set changed.
        if changed {
            wake(&self.shared.wake);
        }
    }

    /// The pids of the exits seen and not yet taken (for the next scan to read them).
    fn pending_pids(&self) -> Vec<u32> {
        self.shared
            .state
            .lock()
            .map(|s| s.exits.iter().map(|((pid, _), _)| *pid).collect())
            .unwrap_or_default()
    }

    /// Polls every watched pidfd once, without waiting, on the caller's thread, and records
    /// the exits found; then the pids of every exit not yet taken. A scan calls this right
    /// before it reads the table: the watcher thread may not have run yet since a process
    /// exited (two busy cores), and a quiet process is otherwise served from its last read —
    /// a zombie shown sleeping until it is due again.
    pub fn exited_by_now(&self) -> Vec<u32> {
        let (ids, fds) = match self.shared.state.lock() {
            Ok(s) => watched_now(&s),
            Err(_) => return Vec::new(),
        };
        let mut pfds = poll_set(&fds);
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        if poll(&mut pfds, Some(&zero)).is_ok() {
            let ready: Vec<bool> = pfds.iter().map(|p| !p.revents().is_empty()).collect();
            drop(pfds);
            record(&self.shared, &ids, &ready, Utc::now());
        }
        self.pending_pids()
    }

    /// Exits seen since the last call, with the time each was seen.
    pub fn take_exits(&self) -> Vec<(Identity, DateTime<Utc>)> {
        self.shared
            .state
            .lock()
            .map(|mut s| std::mem::take(&mut s.exits))
            .unwrap_or_default()
    }

    /// Resolves when an exit has been seen (for an out-of-band tick).
    pub async fn exited(&self) {
        self.shared.notify.notified().await;
    }

    /// How many identities are watched.
    pub fn len(&self) -> usize {
        self.shared
            .state
            .lock()
            .map(|s| s.watched.len())
            .unwrap_or(0)
    }

    /// Whether an exit of `pid` is recorded and not yet taken by a tick (for tests that must
    /// know the watcher, not the scan, saw it first).
    pub fn has_pending_exit(&self, pid: u32) -> bool {
        self.shared
            .state
            .lock()
            .is_ok_and(|s| s.exits.iter().any(|((p, _), _)| *p == pid))
    }

    /// How many processes of the last `watch` got no pidfd because file descriptors ran out.
    pub fn starved(&self) -> usize {
        self.shared.state.lock().map(|s| s.starved).unwrap_or(0)
    }

    /// True when nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Drop for ExitWatcher {
    fn drop(&mut self) {
        if let Ok(mut s) = self.shared.state.lock() {
            s.stop = true;
        }
        wake(&self.shared.wake);
    }
}

fn wake(fd: &OwnedFd) {
    let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
}

/// File descriptors kept free for everything else (the scan, log tails, sockets): pidfds never
/// take the last of them.
const FD_RESERVE: u64 = 128;

/// How many more pidfds may be opened now.
fn fd_budget() -> usize {
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(1 << 20);
    let open = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count() as u64);
    usize::try_from(limit.saturating_sub(FD_RESERVE).saturating_sub(open)).unwrap_or(usize::MAX)
}

/// No file descriptor was left for a pidfd.
struct OutOfFds;

/// A pidfd for `id`, only if the pid still has those start ticks once the fd is open; `None`
/// when it is gone.
fn open_checked((pid, ticks): Identity) -> Result<Option<OwnedFd>, OutOfFds> {
    let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) else {
        return Ok(None);
    };
    let fd = match pidfd_open(p, PidfdFlags::empty()) {
        Ok(fd) => fd,
        Err(e) if e == rustix::io::Errno::MFILE || e == rustix::io::Errno::NFILE => {
            return Err(OutOfFds)
        }
        Err(_) => return Ok(None),
    };
    Ok(super::read_stat(pid)
        .filter(|s| s.starttime == ticks)
        .map(|_| fd))
}

/// The watched identities and their pidfds, as one poll takes them.
fn watched_now(s: &State) -> (Vec<Identity>, Vec<Arc<OwnedFd>>) {
    s.watched.iter().map(|(k, v)| (*k, Arc::clone(v))).unzip()
}

fn poll_set(fds: &[Arc<OwnedFd>]) -> Vec<PollFd<'_>> {
    fds.iter()
        .map(|f| PollFd::new(f.as_ref(), PollFlags::IN))
        .collect()
}

/// Records the identities whose pidfd was `ready` as exited at `now` (each once: an exit is
/// moved out of the watched set). True when any was new.
fn record(shared: &Shared, ids: &[Identity], ready: &[bool], now: DateTime<Utc>) -> bool {
    let exited: Vec<Identity> = ids
        .iter()
        .zip(ready)
        .filter(|(_, r)| **r)
        .map(|(id, _)| *id)
        .collect();
    if exited.is_empty() {
        return false;
    }
    let Ok(mut s) = shared.state.lock() else {
        return false;
    };
    let mut new = false;
    for id in &exited {
        if s.watched.remove(id).is_some() {
            s.exits.push((*id, now));
            new = true;
        }
    }
    new
}

fn run(shared: &Shared) {
    loop {
        let (ids, fds) = match shared.state.lock() {
            Ok(s) if s.stop => return,
            Ok(s) => watched_now(&s),
            Err(_) => return,
        };
        let mut pfds = poll_set(&fds);
        pfds.push(PollFd::new(&shared.wake, PollFlags::IN));
        let timeout = Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        if poll(&mut pfds, Some(&timeout)).is_err() {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        let now = Utc::now();
        let ready: Vec<bool> = pfds.iter().map(|p| !p.revents().is_empty()).collect();
        drop(pfds);
        if ready.last().copied().unwrap_or(false) {
            let mut buf = [0u8; 8];
            let _ = rustix::io::read(&shared.wake, &mut buf);
        }
        if record(shared, &ids, &ready[..ids.len()], now) {
            shared.notify.notify_one();
        }
    }
}
