//! User settings, persisted as JSON in the user's config directory.

use std::path::{Path, PathBuf};

use debugtop_core::actions::audit::AuditConfig;
use debugtop_core::judging::{Judging, DEFAULT_GRACE, DEFAULT_INTERVAL, DEFAULT_STUCK_AFTER};
use debugtop_core::model::Target;
use debugtop_core::sampler;
use serde::{Deserialize, Serialize};

/// What the user can change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(default)]
#[ts(export)]
pub struct Settings {
    /// Sampler interval in milliseconds.
    #[ts(type = "number")]
    pub interval_ms: u64,
    /// Verdict grace in seconds.
    pub grace_secs: f64,
    /// Seconds after which a stalled session (a start on one step, an unanswered DAP request,
    /// a running debuggee stopped by a signal) is a stuck session.
    pub stuck_after_secs: f64,
    /// Servers given by URL (`/health` only).
    pub extra_servers: Vec<String>,
    /// Show a desktop notification when a new critical finding appears.
    pub notify_critical: bool,
    /// Remote targets to stream (ssh, docker, kubectl, cmd), remembered.
    pub targets: Vec<Target>,
    /// The target whose tree is shown (`local`, or one of `targets`).
    pub target: Target,
    /// The targets whose command a person let run, in the backend's own dialog: only these
    /// are ever run. Never taken from the window (`set_settings` keeps the backend's list).
    #[serde(default)]
    pub confirmed: Vec<Target>,
}

/// The most remote targets kept.
pub const MAX_TARGETS: usize = 32;

impl Default for Settings {
    fn default() -> Self {
        Self {
            interval_ms: DEFAULT_INTERVAL.as_millis() as u64,
            grace_secs: DEFAULT_GRACE.as_secs_f64(),
            stuck_after_secs: DEFAULT_STUCK_AFTER.as_secs_f64(),
            extra_servers: Vec::new(),
            notify_critical: true,
            targets: Vec::new(),
            target: Target::Local,
            confirmed: Vec::new(),
        }
    }
}

impl Settings {
    /// Bounds every value to something sane.
    pub fn clamped(mut self) -> Self {
        // The figures as the engine bounds them, written back: what is saved is what runs.
        let j = self.judging();
        self.interval_ms = u64::try_from(j.interval.as_millis()).unwrap_or(u64::MAX);
        self.grace_secs = j.grace.as_secs_f64();
        self.stuck_after_secs = j.stuck_after.as_secs_f64();
        self.extra_servers
            .retain(|u| u.starts_with("http://") && u.len() < 512);
        self.extra_servers.truncate(32);
        let mut seen = Vec::new();
        self.targets.retain(|t| {
            let new = !t.is_local() && !seen.contains(t);
            seen.push(t.clone());
            new
        });
        self.targets.truncate(MAX_TARGETS);
        if !self.target.is_local() && !self.targets.contains(&self.target) {
            self.target = Target::Local;
        }
        // A target removed is forgotten: added again, it is asked again.
        let targets = &self.targets;
        self.confirmed.retain(|t| targets.contains(t));
        self
    }

    /// Whether a person let `t`'s command run.
    pub fn is_confirmed(&self, t: &Target) -> bool {
        t.is_local() || self.confirmed.contains(t)
    }

    /// How these settings judge: this machine's sampler and audit, and every remote target's
    /// command line, from this one value.
    pub fn judging(&self) -> Judging {
        Judging::from_user(
            self.interval_ms,
            self.grace_secs,
            self.stuck_after_secs,
            self.extra_servers.clone(),
        )
    }

    /// The audit these settings ask for (the same mapping the CLI's flags go through).
    pub fn audit_config(&self) -> AuditConfig {
        AuditConfig::new(self.judging())
    }

    /// The sampler these settings ask for.
    pub fn sampler_config(&self) -> sampler::Config {
        sampler::Config::judging(&self.judging())
    }

    /// Loads settings; a missing or unreadable file gives the defaults.
    pub fn load(path: &Path) -> Self {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<Settings>(&t).ok())
            .unwrap_or_default()
            .clamped()
    }

    /// Saves atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        debugtop_core::safe_fs::write_atomic(
            path,
            text.as_bytes(),
            debugtop_core::safe_fs::Visibility::Private,
        )
    }
}

/// Where settings live: `<config dir>/settings.json`.
pub fn path_in(config_dir: PathBuf) -> PathBuf {
    config_dir.join("settings.json")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_clamp() {
        let dir = tempfile::tempdir().unwrap();
        let p = path_in(dir.path().to_path_buf());
        assert_eq!(Settings::load(&p), Settings::default());
        let s = Settings {
            interval_ms: 5,
            grace_secs: f64::NAN,
            stuck_after_secs: -1.0,
            extra_servers: vec!["http://127.0.0.1:3001".into(), "javascript:alert(1)".into()],
            notify_critical: false,
            targets: vec![
                "ssh:box".parse().unwrap(),
                Target::Local,
                "ssh:box".parse().unwrap(),
            ],
            target: "docker:gone".parse().unwrap(),
            confirmed: vec!["ssh:box".parse().unwrap(), "docker:gone".parse().unwrap()],
        };
        s.clone().clamped().save(&p).unwrap();
        let back = Settings::load(&p);
        assert_eq!(back.interval_ms, 100);
        assert_eq!(back.grace_secs, 6.0);
        assert_eq!(back.stuck_after_secs, 10.0);
        assert_eq!(
            back.sampler_config().state.verdicts.stuck.start,
            std::time::Duration::from_secs(10)
        );
        assert_eq!(back.extra_servers, ["http://127.0.0.1:3001"]);
        assert_eq!(back.targets, ["ssh:box".parse::<Target>().unwrap()]);
        assert_eq!(
            back.confirmed,
            ["ssh:box".parse::<Target>().unwrap()],
            "a confirmation of a target no longer listed is forgotten"
        );
        assert_eq!(
            back.target,
            Target::Local,
            "a target not in the list is not shown"
        );
        std::fs::write(&p, "{ not json").unwrap();
        assert_eq!(Settings::load(&p), Settings::default());
    }
}
