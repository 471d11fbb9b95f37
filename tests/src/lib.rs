//! The end-to-end harness: spawn real process shapes and the real `mcp-debugger`, drive it over
//! real MCP Streamable HTTP, and clean up **only what we started**, by pid and identity (pid +
//! start time), never by name.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

pub mod mcp;
pub mod procs;

pub use procs::{fixture, start_ticks, wait_for, Owned, Spawned, TreeGuard};
