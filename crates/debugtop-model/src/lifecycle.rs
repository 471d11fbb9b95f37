//! Where a session stands: a debug session's state as the server names it, and how an HTTP
//! session ended. Facts name these words and sessions hold them; both read them from here, so
//! neither depends on the other for them.

use serde::{Deserialize, Serialize};
use ts_rs::TS;

/// A debug session's state, as mcp-debugger names it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
    strum::EnumString,
    strum::EnumIter,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum SessionState {
    /// Created, not started.
    Created,
    /// Starting: the worker and adapter are being set up.
    Initializing,
    /// Ready to run.
    Ready,
    /// Running the debuggee.
    Running,
    /// Stopped at a breakpoint, a step or an entry: the user's choice.
    Paused,
    /// Stopped for good (the debuggee ended or the session was closed).
    Stopped,
    /// Failed (the worker died under it, say).
    Error,
    /// A state this build does not know.
    #[serde(other)]
    #[strum(to_string = "unknown")]
    Unknown,
}

impl SessionState {
    /// Parses a state as logged; unknown words are [`SessionState::Unknown`].
    pub fn from_log(s: &str) -> Self {
        s.trim().parse().unwrap_or(Self::Unknown)
    }

    /// Still setting up (a worker may not exist yet).
    pub fn is_starting(self) -> bool {
        matches!(self, Self::Created | Self::Initializing)
    }
}

/// How an HTTP session ended.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum HttpEnd {
    /// The client closed it (`DELETE /mcp`) or the server did.
    Closed,
    /// The stale sweep reaped it (idle, no open stream).
    Reaped,
    /// Reaped because its SSE stream was lost (newer servers).
    StreamLost,
}
