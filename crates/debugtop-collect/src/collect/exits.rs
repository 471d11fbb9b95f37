//! Exit detection for watched processes through pidfds, so an exit is known when it happens, not
//! at the next tick. One pidfd per watched identity sits in an epoll set; a background thread
//! waits on it (and on an eventfd, to be stopped), records each exit's time, and notifies the
//! sampler, which can then run an out-of-band tick. The set is changed in place as processes
//! come and go, and a wait costs what is ready, not what is watched: at 5,000 watched processes
//! a `poll` over every pidfd, once a second by the thread and once a tick by the scan, was most
//! of what the watcher cost.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use rustix::buffer::spare_capacity;
use rustix::event::epoll::{self, EventData, EventFlags};
use rustix::event::{eventfd, EventfdFlags, Timespec};
use rustix::fd::OwnedFd;
use rustix::process::{pidfd_open, Pid, PidfdFlags};

use super::exit_log::ExitLog;
pub use super::exit_log::Identity;

#[derive(Debug, Default)]
struct State {
    /// Each watched identity's token in the epoll set and its pidfd.
    watched: HashMap<Identity, (u64, OwnedFd)>,
    /// The identity of each token.
    tokens: HashMap<u64, Identity>,
    next_token: u64,
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
    /// Every watched pidfd, and `wake` under [`WAKE`].
    epoll: OwnedFd,
    wake: OwnedFd,
    log: ExitLog,
}

/// The token of the eventfd that stops the thread.
const WAKE: u64 = u64::MAX;

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
        let epoll = epoll::create(epoll::CreateFlags::CLOEXEC).ok()?;
        epoll::add(&epoll, &wake, EventData::new_u64(WAKE), EventFlags::IN).ok()?;
        Some(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                epoll,
                wake,
                log: ExitLog::default(),
            }),
        })
    }

    /// Sets the watched identities: new ones get a pidfd (checked against the start ticks),
    /// ones no longer listed are dropped. The thread's wait sees the change at once.
    pub fn watch(&self, ids: impl IntoIterator<Item = Identity>) {
        let ids: HashSet<Identity> = ids.into_iter().collect();
        let Ok(mut st) = self.shared.state.lock() else {
            return;
        };
        let gone: Vec<Identity> = st
            .watched
            .keys()
            .filter(|k| !ids.contains(k))
            .copied()
            .collect();
        for id in gone {
            unwatch(&self.shared.epoll, &mut st, id);
        }
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
                    let token = st.next_token;
                    st.next_token += 1;
                    let data = EventData::new_u64(token);
                    if epoll::add(&self.shared.epoll, &fd, data, EventFlags::IN).is_ok() {
                        st.watched.insert(id, (token, fd));
                        st.tokens.insert(token, id);
                    } else {
                        // Not watched (the kernel's epoll limit): seen at the next tick.
                        st.starved += 1;
                    }
                }
                Ok(None) => {}
                Err(OutOfFds) => st.starved += 1,
            }
        }
    }

    /// The pids of the exits seen and not yet taken (for the next scan to read them).
    fn pending_pids(&self) -> Vec<u32> {
        self.shared.log.pending_pids()
    }

    /// Polls every watched pidfd once, without waiting, on the caller's thread, and records
    /// the exits found; then the pids of every exit not yet taken. A scan calls this right
    /// before it reads the table: the watcher thread may not have run yet since a process
    /// exited (two busy cores), and a quiet process is otherwise served from its last read —
    /// a zombie shown sleeping until it is due again.
    pub fn exited_by_now(&self) -> Vec<u32> {
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        if let Some(ready) = ready_tokens(&self.shared.epoll, Some(&zero)) {
            let _ = record(&self.shared, &ready, Utc::now());
        }
        // The watcher thread may be between unwatching an exited pidfd (which the poll above
        // then no longer sees) and logging it: it holds the state until it has logged, so
        // taking the state once here waits for that (a zombie was shown sleeping in CI, with
        // the Wine suites busy beside the tests).
        drop(self.shared.state.lock());
        self.pending_pids()
    }

    /// Exits seen since the last call, with the time each was seen.
    pub fn take_exits(&self) -> Vec<(Identity, DateTime<Utc>)> {
        self.shared.log.take()
    }

    /// Resolves when an exit has been seen (for an out-of-band tick).
    pub async fn exited(&self) {
        self.shared.log.exited().await;
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
        self.shared.log.has(pid)
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

/// Stops watching `id`: out of the epoll set, its pidfd closed.
fn unwatch(epoll: &OwnedFd, st: &mut State, id: Identity) {
    if let Some((token, fd)) = st.watched.remove(&id) {
        let _ = epoll::delete(epoll, &fd);
        st.tokens.remove(&token);
    }
}

/// How many ready pidfds one wait takes.
const BATCH: usize = 1024;

/// The tokens ready in the epoll set, waiting at most `timeout` for the first; every one ready
/// (a burst of exits can be more than one batch). `None` when the wait failed.
fn ready_tokens(epoll: &OwnedFd, timeout: Option<&Timespec>) -> Option<Vec<u64>> {
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut events = Vec::with_capacity(BATCH);
    let mut wait = timeout;
    loop {
        events.clear();
        epoll::wait(epoll, spare_capacity(&mut events), wait).ok()?;
        let before = out.len();
        out.extend(
            events
                .iter()
                .map(|e| e.data.u64())
                .filter(|t| seen.insert(*t)),
        );
        // Level-triggered: a ready pidfd stays ready (the kernel hands them out in turn) until
        // it is recorded and removed; ask again only while a full batch brought new ones.
        if events.len() < BATCH || out.len() == before {
            return Some(out);
        }
        wait = Some(&zero);
    }
}

/// Records the identities of the `ready` tokens as exited at `now` (each once: an exit is
/// moved out of the watched set, so its pidfd is not ready again). True when any was new.
fn record(shared: &Shared, ready: &[u64], now: DateTime<Utc>) -> bool {
    if ready.iter().all(|t| *t == WAKE) {
        return false;
    }
    let Ok(mut s) = shared.state.lock() else {
        return false;
    };
    let mut exited = Vec::new();
    for token in ready {
        let Some(id) = s.tokens.get(token).copied() else {
            continue;
        };
        unwatch(&shared.epoll, &mut s, id);
        exited.push(id);
    }
    // Logged before the state is let go: a scan polling meanwhile finds the pidfd unwatched,
    // so the exit must already be in the log (taking the locks apart lost an exit: the
    // quiet-zombie regression test caught it).
    let new = shared.log.record(exited, now);
    drop(s);
    new
}

fn run(shared: &Shared) {
    let timeout = Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    loop {
        match shared.state.lock() {
            Ok(s) if s.stop => return,
            Ok(_) => {}
            Err(_) => return,
        }
        let Some(ready) = ready_tokens(&shared.epoll, Some(&timeout)) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        if ready.contains(&WAKE) {
            let mut buf = [0u8; 8];
            let _ = rustix::io::read(&shared.wake, &mut buf);
        }
        if record(shared, &ready, Utc::now()) {
            shared.log.wake();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    /// A `sleep` of this test's own, its identity, killed and waited for as a zombie (its
    /// pidfd is then ready).
    fn a_zombie() -> (std::process::Child, Identity) {
        let child = std::process::Command::new("sleep")
            .arg("300")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        let ticks = super::super::glance::read_stat(pid).unwrap().starttime;
        (child, (pid, ticks))
    }

    fn zombie_now(child: &mut std::process::Child) {
        child.kill().expect("kill the test's own sleep");
        let pid = child.id();
        for _ in 0..500 {
            if super::super::glance::read_stat(pid).is_some_and(|s| s.state == 'Z') {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("{pid} never became a zombie");
    }

    /// Regression: the watcher's thread unwatches an exited pidfd (a poll then no longer sees
    /// it) before it logs the exit; a scan polling in between found nothing and showed the
    /// zombie sleeping. Here the test is that thread, stopped between the two steps: the scan's
    /// poll waits for the record and returns the exit. Without the wait it returns nothing.
    #[test]
    fn regression_an_exit_being_recorded_by_the_thread_is_not_missed_by_a_scan() {
        let w = ExitWatcher::without_thread().unwrap();
        let (mut child, id) = a_zombie();
        w.watch([id]);
        zombie_now(&mut child);
        let polled = std::thread::scope(|scope| {
            // The thread's record, first half: the pidfd unwatched, the state held.
            let mut st = w.shared.state.lock().unwrap();
            unwatch(&w.shared.epoll, &mut st, id);
            let (asked_tx, asked) = std::sync::mpsc::channel();
            let watcher = &w;
            let scan = scope.spawn(move || {
                let _ = asked_tx.send(());
                watcher.exited_by_now()
            });
            asked.recv().unwrap();
            // Long enough for the scan's poll to run and find the pidfd unwatched.
            std::thread::sleep(Duration::from_millis(100));
            // Second half: logged, then the state let go.
            w.shared.log.record([id], Utc::now());
            drop(st);
            scan.join().unwrap()
        });
        assert_eq!(polled, vec![id.0]);
        let _ = child.wait();
    }
}
