//! Reports: the snapshot as people and other tools read it outside the app (the Markdown
//! incident report, the audit's readable text, a run's summary, desktop notices, Prometheus
//! series, an agent's bounded answers).

pub mod agent;
pub mod markdown;
pub mod metrics;
pub mod notices;
pub mod run;
pub mod text;

#[cfg(test)]
mod redaction_tests;
