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
#[cfg(target_os = "linux")]
pub mod inet_diag;
pub mod mcp;
#[cfg(target_os = "linux")]
pub mod ns;
pub mod parse;
pub mod portable;
mod relate;
#[cfg(any(target_os = "linux", windows))]
pub mod scope;
#[cfg(target_os = "linux")]
mod sock_diag;
#[cfg(target_os = "linux")]
pub mod unix_diag;

#[cfg(target_os = "linux")]
pub mod linux;
#[cfg(windows)]
pub mod windows;

pub mod detail;
mod glance;
mod harvest;
mod identity;
pub mod listening;
#[cfg(target_os = "linux")]
mod pid_counters;
mod sample;
#[cfg(target_os = "linux")]
mod stat_files;

pub use glance::{glance, parent_links, parent_pid, read_stat, Glance};
pub use harvest::Harvest;
pub(crate) use harvest::{finish, lifetime_percent, raw_owner, FdView, NoFds};
#[allow(unused_imports)] // each only where a backend or a test needs it
pub(crate) use harvest::{translate, unlink_reused_parents};
pub use identity::{Ident, IdentityCache, QUIET_AFTER, QUIET_EVERY, YOUNG};
pub use relate::relate;
pub use sample::{Belonging, Sample};

// The table a backend returns, named where the backends look for it.
use debugtop_model::{ProcessTable, ScanStats};

/// The collector for this OS.
#[cfg(target_os = "linux")]
pub type Collector = linux::ProcfsCollector;
/// The collector for this OS.
#[cfg(windows)]
pub type Collector = windows::WindowsCollector;
/// The collector for this OS.
#[cfg(not(any(target_os = "linux", windows)))]
pub type Collector = portable::SysinfoCollector;
