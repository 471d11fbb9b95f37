//! Reports: the snapshot as people and other tools read it outside the app (the Markdown
//! incident report, desktop notices, Prometheus series).

pub mod agent;
pub mod markdown;
pub mod metrics;
pub mod notices;
pub mod run;

#[cfg(test)]
mod redaction_tests;
