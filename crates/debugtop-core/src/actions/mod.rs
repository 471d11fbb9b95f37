//! Actions: what the front ends do — audit, kill (plan, hold, recheck, execute), export and
//! import. The CLI and the app call these and nothing deeper, so they cannot decide differently.

pub mod audit;
pub mod container;
pub mod export;
pub mod fleet;
pub mod kill;
pub mod run;
