//! debugtop's engine: what a debug server really has running, and what it left behind.
//!
//! Data flows one way: `sources` read the machine into one [`model::Observation`] per tick;
//! `state::State::step` folds it — reconciliation, verdict rules, timeline — into a
//! [`model::Update`], purely; the `sampler` publishes updates to the views; `actions` (audit,
//! kill, export) are what the CLI and the app do. Below it, their own crates (Cargo holds the
//! order): `model` (`debugtop-model`, the schema every boundary shares), `redact`
//! (`debugtop-redact`), and the OS layer — `collect`, `os`, `safe_fs`, `win32`
//! (`debugtop-collect`) — re-exported here under the names the engine and the front ends use.
//! No Tauri, no UI: `debugtop-cli` and the desktop app are thin layers over this crate.
//!
//! Where to add things: a rule → `state::rules` (one function, listed in `RULES`); a source →
//! `sources` (a field of the observation); an action → `actions`.

pub mod actions;
pub mod delta;
pub mod error;
pub mod judging;
pub mod report;
pub mod sampler;
pub mod sources;
pub mod state;
pub mod targets;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

// The crates below the engine, under the names the engine and the front ends use.
#[cfg(windows)]
pub use debugtop_collect::win32;
pub use debugtop_collect::{collect, os, safe_fs};
pub use debugtop_model as model;
pub use debugtop_redact as redact;

pub use error::{Error, Result};
