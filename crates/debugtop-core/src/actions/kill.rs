//! Kill, done right: plan → execute → report. Planning is `state::plan` (pure, made with each
//! finding during the step); here is what turns what a user asked for into a plan
//! ([`choose`]: a finding's own plan, never planned again), the one gate before execution
//! ([`recheck`]), plans held between being shown and carried out ([`registry`]), a forced
//! pid read from the system ([`forced`]), and carrying a plan out ([`execute`]).

mod choose;
mod execute;
mod forced;
mod recheck;
mod registry;
mod request;

pub use choose::{plan_for, KillOptions};
pub use execute::execute;
pub use forced::{with_forced_targets, with_processes};
pub use recheck::recheck;
pub use registry::{HeldPlan, PlanRegistry, PlannedOn};
pub use request::{parse_target, KillRequest};
