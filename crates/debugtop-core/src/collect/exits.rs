//! Exit detection for watched processes through pidfds, so an exit is known when it happens, not
//! at the next tick. A background thread polls one pidfd per watched identity (plus an eventfd to
//! be woken when the set changes), records each exit's time, and notifies the sampler, which can
//! then run an out-of-band tick.

use std::collections::HashMap;
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
    stop: bool,
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
        let wake = eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok()?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            wake,
            notify: tokio::sync::Notify::new(),
        });
        let s = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("debugtop-exits".into())
            .spawn(move || run(&s))
            .ok()?;
        Some(Self { shared })
    }

    /// Sets the watched identities: new ones get a pidfd (checked against the start ticks),
    /// ones no longer listed are dropped.
    pub fn watch(&self, ids: impl IntoIterator<Item = Identity>) {
        let ids: Vec<Identity> = ids.into_iter().collect();
        let Ok(mut st) = self.shared.state.lock() else {
            return;
        };
        st.watched.retain(|k, _| ids.contains(k));
        for id in ids {
            if st.watched.contains_key(&id) {
                continue;
            }
            if let Some(fd) = open_checked(id) {
                st.watched.insert(id, Arc::new(fd));
            }
        }
        drop(st);
        wake(&self.shared.wake);
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

/// A pidfd for `id`, only if the pid still has those start ticks once the fd is open.
fn open_checked((pid, ticks): Identity) -> Option<OwnedFd> {
    let fd = pidfd_open(
        Pid::from_raw(i32::try_from(pid).ok()?)?,
        PidfdFlags::empty(),
    )
    .ok()?;
    (super::read_stat(pid)?.starttime == ticks).then_some(fd)
}

fn run(shared: &Shared) {
    loop {
        let (ids, fds): (Vec<Identity>, Vec<Arc<OwnedFd>>) = match shared.state.lock() {
            Ok(s) if s.stop => return,
            Ok(s) => s.watched.iter().map(|(k, v)| (*k, Arc::clone(v))).unzip(),
            Err(_) => return,
        };
        let mut pfds: Vec<PollFd<'_>> = fds
            .iter()
            .map(|f| PollFd::new(f.as_ref(), PollFlags::IN))
            .collect();
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
        let exited: Vec<Identity> = ids
            .iter()
            .zip(&ready)
            .filter(|(_, r)| **r)
            .map(|(id, _)| *id)
            .collect();
        if exited.is_empty() {
            continue;
        }
        if let Ok(mut s) = shared.state.lock() {
            for id in &exited {
                s.watched.remove(id);
                s.exits.push((*id, now));
            }
        }
        shared.notify.notify_one();
    }
}
