//! Exit detection on Windows, so an exit is known when it happens, not at the next tick: one
//! process handle per watched identity (opened, then checked against the creation time — the
//! Windows pidfd), each registered with the thread pool's waits (`RegisterWaitForSingleObject`,
//! which waits on up to 63 handles per pool thread), whose callback records the exit's time
//! and notifies the sampler. The same interface as the Linux watcher.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};

use crate::win32::{self as sys, Access, Handle, Registration};

use crate::collect::exit_log::ExitLog;
pub use crate::collect::exit_log::Identity;

#[derive(Debug, Default)]
struct State {
    /// Each watched identity's wait (dropping it unregisters the wait, then closes the handle).
    watched: HashMap<Identity, Registration>,
    /// Identities of the last `watch` whose wait could not be registered: their exits are
    /// seen at the next tick.
    starved: usize,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    log: ExitLog,
}

/// Watches identities for exit.
#[derive(Debug)]
pub struct ExitWatcher {
    shared: Arc<Shared>,
}

impl ExitWatcher {
    /// A watcher (the thread pool does the waiting: no thread of its own).
    pub fn start() -> Option<Self> {
        Some(Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::default()),
                log: ExitLog::default(),
            }),
        })
    }

    /// Sets the watched identities: new ones get a handle checked against their creation
    /// time and a wait; ones no longer listed are dropped.
    pub fn watch(&self, ids: impl IntoIterator<Item = Identity>) {
        let ids: std::collections::HashSet<Identity> = ids.into_iter().collect();
        let (gone, new): (Vec<Identity>, Vec<Identity>) = {
            let Ok(st) = self.shared.state.lock() else {
                return;
            };
            (
                st.watched
                    .keys()
                    .filter(|k| !ids.contains(k))
                    .copied()
                    .collect(),
                ids.iter()
                    .filter(|k| !st.watched.contains_key(k))
                    .copied()
                    .collect(),
            )
        };
        // Unregistering waits for a running callback, which takes the lock: never under it.
        let dropped: Vec<Registration> = match self.shared.state.lock() {
            Ok(mut st) => gone.iter().filter_map(|id| st.watched.remove(id)).collect(),
            Err(_) => return,
        };
        drop(dropped);
        let mut starved = 0;
        let mut added = Vec::new();
        for id in new {
            let Some(handle) = open_checked(id) else {
                continue;
            };
            let shared = Arc::clone(&self.shared);
            match sys::register_exit_wait(handle, move || record(&shared, id)) {
                Some(r) => added.push((id, r)),
                None => starved += 1,
            }
        }
        if let Ok(mut st) = self.shared.state.lock() {
            st.watched.extend(added);
            st.starved = starved;
        }
    }

    /// The pids of the exits seen and not yet taken (for the next scan to read them).
    pub fn exited_by_now(&self) -> Vec<u32> {
        self.shared.log.pending_pids()
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

    /// True when nothing is watched.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether an exit of `pid` is recorded and not yet taken by a tick.
    pub fn has_pending_exit(&self, pid: u32) -> bool {
        self.shared.log.has(pid)
    }

    /// How many processes of the last `watch` got no wait.
    pub fn starved(&self) -> usize {
        self.shared.state.lock().map(|s| s.starved).unwrap_or(0)
    }
}

impl Drop for ExitWatcher {
    fn drop(&mut self) {
        // Each wait's function holds the shared state: unregister them all (outside the lock,
        // since unregistering waits for a running callback, which takes it).
        let all: Vec<Registration> = self
            .shared
            .state
            .lock()
            .map(|mut s| s.watched.drain().map(|(_, r)| r).collect())
            .unwrap_or_default();
        drop(all);
    }
}

/// A handle on `id`, only if the pid still has that creation time once it is open.
fn open_checked((pid, created): Identity) -> Option<Handle> {
    let h = sys::open(pid, Access::Wait).ok()?;
    (h.times()?.0 == created).then_some(h)
}

/// The wait's callback: the process of `id` has ended.
fn record(shared: &Shared, id: Identity) {
    shared.log.record([id], Utc::now());
    shared.log.wake();
}
