//! The liveness audit: three observations 250 ms apart (CPU needs two samples; a finding must
//! hold in two consecutive evaluations), every rule in audit mode — or, told to keep watching,
//! one a second for that long (what shows only over time: a server's silence). The one recipe
//! of the CLI's `audit` and the app's audit pane.

use std::time::Duration;

use crate::error::Result;
use crate::judging::Judging;
use crate::model::{audit_result, AuditResult, Finding, LiveTable};
use crate::sources::{Observe, SourcesConfig};
use crate::state::rules::{Mode, VerdictConfig};
use crate::state::{State, StateConfig};

/// Samples an audit takes at least: a condition seen in the first is confirmed by the second;
/// one first seen in the second (a process's CPU is measured over the time between them:
/// spinning) is pending there, and the audit takes more samples until it is confirmed or gone.
const SAMPLES: usize = 2;
/// Time between them.
const SPACING: Duration = Duration::from_millis(250);
/// Time between the samples of an audit told to keep watching.
const WATCH_SPACING: Duration = Duration::from_secs(1);

/// What an audit is told, from a front end's flags or settings.
#[derive(Debug, Clone)]
pub struct AuditConfig {
    /// How it judges (the grace, when a session is stuck, servers given by URL; the interval
    /// is the audit's own).
    pub judging: Judging,
    /// Redact the findings' text (`home` shown as `~`).
    pub redact: bool,
    /// The user's home directory.
    pub home: Option<String>,
    /// How long to keep looking before answering (0: the few samples an audit takes).
    pub watch_for: Duration,
}

impl AuditConfig {
    /// An audit that judges as `judging` says, redacted, answering after its few samples.
    pub fn new(judging: Judging) -> Self {
        Self {
            judging,
            redact: true,
            home: crate::redact::home_dir(),
            watch_for: Duration::ZERO,
        }
    }

    /// Keep looking `secs` before answering (as users give it: negative or not a number is
    /// none; at most an hour), so that what shows only over time is judged.
    pub fn watch_for(mut self, secs: f64) -> Self {
        self.watch_for = (secs.is_finite() && secs > 0.0)
            .then(|| Duration::try_from_secs_f64(secs.min(3600.0)).ok())
            .flatten()
            .unwrap_or(Duration::ZERO);
        self
    }

    /// What the sources need.
    pub fn sources(&self) -> SourcesConfig {
        SourcesConfig::judging(&self.judging)
    }

    fn state(&self) -> StateConfig {
        StateConfig {
            verdicts: VerdictConfig {
                mode: Mode::Audit,
                ..VerdictConfig::judging(&self.judging)
            },
            redact: self.redact,
            home: self.home.clone(),
            ..StateConfig::default()
        }
    }
}

/// An audit's answer, and what a kill planned from it needs.
#[derive(Debug, Clone)]
pub struct AuditRun {
    /// The answer.
    pub result: AuditResult,
    /// The findings, unredacted argv in their plans aside (for planning).
    pub findings: Vec<std::sync::Arc<Finding>>,
    /// The live processes of the last sample.
    pub live: LiveTable,
    /// The last sample's snapshot (its findings are `findings`), as published.
    pub snapshot: std::sync::Arc<crate::model::Snapshot>,
    /// How long the last sample took.
    pub took: Duration,
}

/// Audits this machine: its live sources as `config` says, then [`audit`]. The one local
/// audit of the CLI, the app and a fleet's `local` entry.
pub async fn audit_here(config: &AuditConfig) -> Result<AuditRun> {
    let mut sources = crate::sources::Sources::new(&config.sources())?;
    audit(&mut sources, config).await
}

/// Runs the audit over `sources`: two samples, then more while a condition is waiting for
/// its grace (a finding that must hold that long even in an audit), at most the grace and a
/// second — and, with [`AuditConfig::watch_for`], one a second until that has passed.
pub async fn audit(sources: &mut impl Observe, config: &AuditConfig) -> Result<AuditRun> {
    let mut state = State::new(config.state());
    let mut last = None;
    let started = std::time::Instant::now();
    // A condition seen late in a watched audit still gets its grace.
    let limit = config.watch_for + config.judging.grace + Duration::from_secs(1);
    let mut i = 0;
    while i < SAMPLES
        || (state.pending() > 0 && started.elapsed() < limit)
        || started.elapsed() < config.watch_for
    {
        if i > 0 {
            // Past the first samples, a watched audit looks once a second, as `watch` does.
            let spacing = if i >= SAMPLES && state.pending() == 0 {
                WATCH_SPACING
            } else {
                SPACING
            };
            tokio::time::sleep(spacing).await;
        }
        let look = std::time::Instant::now();
        last = Some((state.step(sources.observe().await?), look.elapsed()));
        i += 1;
    }
    let (update, took) = last.ok_or(crate::Error::SystemInfo {
        what: "a sample",
        detail: "the audit took none".into(),
    })?;
    Ok(AuditRun {
        result: audit_result(&update.snapshot),
        findings: update.snapshot.findings.clone(),
        live: state.live().clone(),
        snapshot: std::sync::Arc::new(update.snapshot),
        took,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watch_for_is_taken_as_users_give_it() {
        let w = |secs: f64| {
            AuditConfig::new(Judging::default())
                .watch_for(secs)
                .watch_for
        };
        assert_eq!(w(40.0), Duration::from_secs(40));
        assert_eq!(w(0.0), Duration::ZERO);
        assert_eq!(w(-3.0), Duration::ZERO);
        assert_eq!(w(f64::NAN), Duration::ZERO);
        assert_eq!(w(1e9), Duration::from_secs(3600));
    }
}
