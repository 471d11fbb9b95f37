//! mcp-debugger's JSON-lines logs: an incremental tail per file ([`tail`]) and a parser that
//! turns the lines that matter (docs/server-behaviour.md, "The server's log") into typed [`LogEvent`](crate::model::LogEvent)s
//! ([`parse`]).
//!
//! The logs are the only server-side record that names debug sessions. They are also untrusted
//! input: a line may be huge, truncated, interleaved with another write, or not JSON at all.
//! Nothing here panics on a line; unknown and oversized lines are skipped and counted.

pub mod parse;
pub mod tail;

pub use parse::{session_of_file, LineParser};
pub use tail::{LogTail, Waiting, MAX_LINE, MAX_READ_PER_POLL};
