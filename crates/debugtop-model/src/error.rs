//! The model's one error type: text that should be one of its identities (a process, a
//! finding, a target) and is not — said in words, with what was given.

/// What parsing the model's identities can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A string that should be an identity is not one.
    #[error("{text:?} is not {what}")]
    NotAnId {
        /// What was expected (`a process identity (pid.start-ticks)`, …).
        what: &'static str,
        /// What was given (cut at 80 characters).
        text: String,
    },
    /// A target string that does not name a target.
    #[error("{text:?} is not a target: {why}")]
    NotATarget {
        /// What was given (cut at 120 characters).
        text: String,
        /// What is wrong, and how to say it.
        why: String,
    },
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
