//! The one error type of `debugtop-core`. Every variant says, in words, what went wrong and
//! with what, so the CLI and the app can show it as it is (the app sends the message as a
//! string over IPC).

use std::path::PathBuf;

/// Everything the core can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Text that should be an identity or a target is not one (the model's words).
    #[error(transparent)]
    Model(#[from] debugtop_model::Error),
    /// The process table or a system fact could not be read (the collector's words).
    #[error(transparent)]
    Collect(#[from] debugtop_collect::Error),
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
    /// A log file could not be read this time (the tail keeps trying).
    #[error("cannot read {path}: {detail}")]
    Log {
        /// The file.
        path: PathBuf,
        /// Why, in words.
        detail: String,
    },
    /// A file could not be read or written.
    #[error("cannot {what} {path}: {source}")]
    File {
        /// `read`, `write`, …
        what: &'static str,
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// A document from elsewhere holds more values than debugtop parses.
    #[error(
        "{what} holds {values} JSON values; at most {limit} are read (a snapshot of 5,000 \
         processes holds well under a million): not parsed"
    )]
    TooManyValues {
        /// What it is.
        what: &'static str,
        /// How many it holds.
        values: u64,
        /// The cap.
        limit: u64,
    },
    /// A snapshot file is too big to be one.
    #[error("{path} is {size} bytes; a snapshot is at most {limit} bytes: not read")]
    TooLarge {
        /// The file.
        path: String,
        /// Its size.
        size: u64,
        /// The cap.
        limit: u64,
    },
    /// Not JSON, or cut short.
    #[error("{what} at line {line}, column {column}: {detail}")]
    Malformed {
        /// `the snapshot is truncated` or `the snapshot is not valid JSON`.
        what: &'static str,
        /// Line.
        line: usize,
        /// Column.
        column: usize,
        /// The parser's message.
        detail: String,
    },
    /// No schema tag: not a debugtop snapshot.
    #[error("not a debugtop snapshot: no \"schema\": \"debugtop.snapshot/…\" field at the top")]
    NotASnapshot,
    /// A fleet file (several targets' snapshots) where one snapshot was expected.
    #[error("a fleet file with {targets} target(s) (debugtop.fleet/1), not one snapshot: open one target's part, e.g. `jq '.targets[0].snapshot' fleet.json > one.json`")]
    FleetFile {
        /// How many targets it holds.
        targets: usize,
    },
    /// A major version this build does not read.
    #[error("this snapshot is {found}; this build reads {reads} only{hint}")]
    OtherMajor {
        /// The schema tag found.
        found: String,
        /// The one this build reads.
        reads: &'static str,
        /// What to do.
        hint: &'static str,
    },
    /// The right schema, but a field has the wrong shape.
    #[error("the snapshot does not match {schema} at {path}: {detail}")]
    WrongShape {
        /// The schema.
        schema: &'static str,
        /// Where (`processes[3].state`).
        path: String,
        /// What is wrong.
        detail: String,
    },
    /// A kill was asked for something that is not (or no longer) there.
    #[error("{0}")]
    NothingToKill(String),
    /// The blocking half of the sources panicked on its thread; the sampler must be restarted.
    #[error("the process-table reader stopped (a panic on its thread): restart debugtop")]
    SourcesLost,
    /// A target could not be reached, or did not speak debugtop's stream.
    #[error("{target}: {detail}")]
    Target {
        /// The target.
        target: String,
        /// Why, as a kind.
        failure: debugtop_model::TargetFailure,
        /// In words, with what to do.
        detail: String,
    },
    /// A kill plan id that is unknown, or was already executed.
    #[error("no kill plan {0} is waiting: plans are made by plan_kill and run at most once")]
    NoSuchPlan(u64),
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
