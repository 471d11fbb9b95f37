//! The collector's one error type: the process table itself, or a fact about the system it
//! needs, could not be read (a single process that cannot be read is counted, not an error).

use std::path::PathBuf;

/// What reading the process table can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The process table itself (not one process) could not be read.
    #[error("cannot read the process table at {path}: {source}")]
    ProcessTable {
        /// The path we tried (normally `/proc`).
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A system fact the collector needs (boot time, clock ticks) is not available.
    #[error("cannot read {what}: {detail}")]
    SystemInfo {
        /// Which fact.
        what: &'static str,
        /// Why it failed.
        detail: String,
    },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
