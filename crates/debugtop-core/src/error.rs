//! The one error type of `debugtop-core`. Every variant says, in words, what went wrong and
//! with what, so the CLI and the app can show it as it is.

use std::path::PathBuf;

/// Everything the core can fail with.
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
    /// Writing or serialising output failed.
    #[error("cannot serialise {what}: {source}")]
    Serialize {
        /// What we tried to serialise.
        what: &'static str,
        /// The underlying error.
        source: serde_json::Error,
    },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
