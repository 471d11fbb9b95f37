//! The exits an exit watcher saw and a tick has not taken yet, and the wake-up for an
//! out-of-band tick: what the Linux (pidfd) and Windows (handle wait) watchers share. Each
//! watcher keeps what it watches; this keeps only what it saw.

use std::sync::Mutex;

use chrono::{DateTime, Utc};

/// An identity: pid and start ticks (Windows: creation time).
pub type Identity = (u32, u64);

/// Exits seen, not yet taken.
#[derive(Debug, Default)]
pub struct ExitLog {
    exits: Mutex<Vec<(Identity, DateTime<Utc>)>>,
    notify: tokio::sync::Notify,
}

impl ExitLog {
    /// Records exits seen at `at`; true when there was any.
    pub fn record(&self, ids: impl IntoIterator<Item = Identity>, at: DateTime<Utc>) -> bool {
        match self.exits.lock() {
            Ok(mut e) => {
                let n = e.len();
                e.extend(ids.into_iter().map(|id| (id, at)));
                n != e.len()
            }
            Err(_) => false,
        }
    }

    /// Wakes whoever waits in [`exited`](Self::exited) (the sampler, for an out-of-band tick).
    pub fn wake(&self) {
        self.notify.notify_one();
    }

    /// The pids of the exits seen and not yet taken (for the next scan to read them).
    pub fn pending_pids(&self) -> Vec<u32> {
        self.exits
            .lock()
            .map(|e| e.iter().map(|((pid, _), _)| *pid).collect())
            .unwrap_or_default()
    }

    /// Exits seen since the last call, with the time each was seen.
    pub fn take(&self) -> Vec<(Identity, DateTime<Utc>)> {
        self.exits
            .lock()
            .map(|mut e| std::mem::take(&mut *e))
            .unwrap_or_default()
    }

    /// Whether an exit of `pid` is recorded and not yet taken.
    pub fn has(&self, pid: u32) -> bool {
        self.exits
            .lock()
            .is_ok_and(|e| e.iter().any(|((p, _), _)| *p == pid))
    }

    /// Resolves when an exit has been recorded.
    pub async fn exited(&self) {
        self.notify.notified().await;
    }
}
