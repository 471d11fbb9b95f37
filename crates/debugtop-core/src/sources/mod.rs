//! Sources of facts beyond the process table: the server's logs (and, next, `/health` and
//! discovery of each server's ports and files). Each source reports its own health in words and
//! never stops the others.

pub mod discovery;
pub mod health;
pub mod logs;
