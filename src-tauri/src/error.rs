//! The app's error type: serialised as its message at the IPC boundary.

/// What a command can fail with.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The engine failed (including a snapshot that cannot be read, in words).
    #[error(transparent)]
    Core(#[from] debugtop_core::Error),
    /// Reading or writing a file failed.
    #[error("cannot {what} {path}: {source}")]
    File {
        /// What was being done.
        what: &'static str,
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// Nothing to act on.
    #[error("{0}")]
    NotFound(String),
    /// The person declined to let a target's command run.
    #[error("{0}")]
    Declined(String),
    /// A background task died.
    #[error("a background task failed: {0}")]
    Task(String),
}

impl serde::Serialize for AppError {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}
