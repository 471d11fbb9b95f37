//! debugtop's engine: what a debug server really has running, and what it left behind.
//!
//! Data flows one way: `sources` read the machine into one [`model::Observation`] per tick;
//! `state::State::step` folds it — reconciliation, verdict rules, timeline — into a
//! [`model::Update`], purely; the `sampler` publishes updates to the views; `actions` (audit,
//! kill, export) are the only paths the CLI and the app take. `model` is the schema every
//! boundary shares, `redact` the bottom layer both use. No Tauri, no UI: `debugtop-cli` and the
//! desktop app are thin layers over this crate.
//!
//! Where to add things: a rule → `state::rules` (one function, listed in `RULES`); a source →
//! `sources` (a field of the observation); an action → `actions`.

pub mod actions;
pub mod collect;
pub mod delta;
pub mod error;
pub mod model;
pub mod os;
pub mod redact;
pub mod report;
pub mod safe_fs;
pub mod sampler;
pub mod sources;
pub mod state;
pub mod targets;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(windows)]
pub mod win32;

pub use error::{Error, Result};
