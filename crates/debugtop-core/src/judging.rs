//! What a person tells debugtop about looking and judging — how often to look, how long a
//! condition must hold, when a stalled session is stuck, which servers to ask by URL — as one
//! value, whichever front end it came from (the app's settings, the CLI's flags). Bounded here,
//! once, and written here, once, as the flags a far side's `watch` or `audit` runs with: a
//! setting reaches this machine's sampler, its audit and every remote target alike.

use std::time::Duration;

/// The default grace: how long a condition must hold before it is a finding. Six seconds,
/// because the server's own force-kill of a worker that does not exit fires at five.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(6);
/// The default time after which a stalled session (a start on one step, an unanswered DAP
/// request, a running debuggee stopped by a signal) is stuck.
pub const DEFAULT_STUCK_AFTER: Duration = Duration::from_secs(10);
/// The default time between looks.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(1);

/// The shortest interval between looks (a shorter one costs a core and shows nothing more).
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The longest interval between looks.
pub const MAX_INTERVAL: Duration = Duration::from_secs(60);
/// The longest grace or stuck threshold anyone may ask for.
pub const MAX_WAIT: Duration = Duration::from_secs(3600);

/// How a look is paced and judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judging {
    /// Time between looks.
    pub interval: Duration,
    /// How long a condition must hold before it is a finding.
    pub grace: Duration,
    /// After how long a stalled session is stuck.
    pub stuck_after: Duration,
    /// Servers given by URL (their `/health` asked too).
    pub extra_servers: Vec<String>,
}

impl Default for Judging {
    fn default() -> Self {
        Self {
            interval: DEFAULT_INTERVAL,
            grace: DEFAULT_GRACE,
            stuck_after: DEFAULT_STUCK_AFTER,
            extra_servers: Vec::new(),
        }
    }
}

impl Judging {
    /// From the figures as people give them (milliseconds, seconds): the interval bounded to
    /// [`MIN_INTERVAL`]..=[`MAX_INTERVAL`], each wait to at most [`MAX_WAIT`]; a wait that is
    /// negative or not a number keeps its default.
    pub fn from_user(
        interval_ms: u64,
        grace_secs: f64,
        stuck_after_secs: f64,
        extra_servers: Vec<String>,
    ) -> Self {
        Self {
            interval: Duration::from_millis(interval_ms).clamp(MIN_INTERVAL, MAX_INTERVAL),
            grace: wait(grace_secs).unwrap_or(DEFAULT_GRACE),
            stuck_after: wait(stuck_after_secs).unwrap_or(DEFAULT_STUCK_AFTER),
            extra_servers,
        }
    }

    /// The flags a far side's `watch` runs with, after `watch`: every setting, so that a
    /// remote target judges as this machine does.
    pub fn watch_flags(&self) -> Vec<String> {
        let mut flags = vec![
            "--interval".to_owned(),
            self.interval.as_millis().to_string(),
        ];
        flags.extend(self.audit_flags());
        flags
    }

    /// The flags a far side's `audit` runs with, after `audit`.
    pub fn audit_flags(&self) -> Vec<String> {
        let mut flags = vec![
            "--grace".to_owned(),
            secs(self.grace),
            "--stuck-after".to_owned(),
            secs(self.stuck_after),
        ];
        for s in &self.extra_servers {
            flags.extend(["--server".to_owned(), s.clone()]);
        }
        flags
    }
}

/// A wait as people give it in seconds: none when negative or not a number; at most
/// [`MAX_WAIT`].
fn wait(secs: f64) -> Option<Duration> {
    (secs.is_finite() && secs >= 0.0)
        .then(|| Duration::try_from_secs_f64(secs).ok())
        .flatten()
        .map(|d| d.min(MAX_WAIT))
}

/// Seconds as a flag takes them, exactly (milliseconds are what anyone sets).
fn secs(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 == 0 {
        (ms / 1000).to_string()
    } else {
        format!("{}.{:03}", ms / 1000, ms % 1000)
            .trim_end_matches('0')
            .to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_as_people_give_them_are_bounded_once() {
        let j = Judging::from_user(10, -1.0, f64::NAN, Vec::new());
        assert_eq!(j.interval, MIN_INTERVAL);
        assert_eq!(j.grace, DEFAULT_GRACE);
        assert_eq!(j.stuck_after, DEFAULT_STUCK_AFTER);
        let j = Judging::from_user(u64::MAX, 1e12, f64::INFINITY, Vec::new());
        assert_eq!(j.interval, MAX_INTERVAL);
        assert_eq!(j.grace, MAX_WAIT);
        assert_eq!(j.stuck_after, DEFAULT_STUCK_AFTER);
        let j = Judging::from_user(250, 0.0, 2.5, Vec::new());
        assert_eq!(j.interval, Duration::from_millis(250));
        assert_eq!(j.grace, Duration::ZERO, "zero is a choice, not a mistake");
        assert_eq!(j.stuck_after, Duration::from_millis(2500));
    }

    #[test]
    fn every_setting_is_a_flag_for_the_far_side() {
        let j = Judging::from_user(
            250,
            2.5,
            20.0,
            vec!["http://127.0.0.1:3001".into(), "http://b:1".into()],
        );
        assert_eq!(
            j.watch_flags().join(" "),
            "--interval 250 --grace 2.5 --stuck-after 20 --server http://127.0.0.1:3001 \
             --server http://b:1"
        );
        assert_eq!(
            j.audit_flags().join(" "),
            "--grace 2.5 --stuck-after 20 --server http://127.0.0.1:3001 --server http://b:1"
        );
        assert_eq!(
            Judging::default().watch_flags().join(" "),
            "--interval 1000 --grace 6 --stuck-after 10"
        );
    }

    #[test]
    fn a_wait_written_as_a_flag_reads_back_the_same() {
        for ms in [0, 1, 10, 100, 999, 1000, 1500, 6000, 3_600_000] {
            let d = Duration::from_millis(ms);
            let back: f64 = secs(d).parse().expect("a number");
            assert_eq!(wait(back), Some(d), "{ms} ms written {}", secs(d));
        }
    }
}
