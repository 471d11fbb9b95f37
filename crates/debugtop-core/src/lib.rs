//! debugtop's engine: what a debug server really has running, and what it left behind.
//!
//! `collect` reads the process table and classifies every process by role; `snapshot` turns what
//! is known into the versioned, redacted document that the CLI prints, the app shows and bug
//! reports carry. This crate has no Tauri or UI dependency: `debugtop-cli` and the desktop app
//! are both thin layers over it.

pub mod collect;
pub mod error;
pub mod kill;
pub mod model;
pub mod reconcile;
pub mod sampler;
pub mod snapshot;
pub mod sources;
pub mod timeline;
pub mod verdict;

pub use error::{Error, Result};
