//! The verdicts as Prometheus series: what `serve` answers on `/metrics` and `--textfile`
//! writes for node_exporter's textfile collector, so a fleet's Prometheus and Alertmanager
//! page on the same findings, confirmed after the same grace, as `audit`.
//!
//! Every label takes its values from a fixed set (finding kinds and their severities, roles,
//! session states, sources, this build's version): nothing that grows with processes or
//! sessions — no pid, session id, command line or path — so the series are [`MAX_SERIES`] at
//! most, whatever happens on the machine. Every gauge of a fixed set is written for every value
//! (0 when none): `absent()` then means "not scraped", never "no problem". The detail (ids,
//! pids, evidence, the command to run) is the findings' JSON, not here.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use prometheus_client::encoding::{prometheus_text, text as openmetrics_text};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use strum::IntoEnumIterator;

use crate::model::{
    FindingKind, ProcState, Role, SessionState, Severity, Snapshot, SourceKind, SourceState,
};

/// The most series one exposition holds: 16 finding kind and severity pairs, 9 roles twice,
/// 8 session states, 5 sources and 5 series of one value each.
pub const MAX_SERIES: usize = 16 + 9 * 2 + 8 + 5 + 5;

/// One look, as the exposition reads it.
#[derive(Debug, Clone, Copy)]
pub struct Look<'a> {
    /// The look's snapshot (its findings confirmed after the grace, as `audit` counts them).
    pub snapshot: &'a Snapshot,
    /// How long the look took (the process table, the logs, `/health` and the step).
    pub duration: Duration,
    /// The sampler's latest look failed (the snapshot is the last one that did not).
    pub failed: bool,
}

/// Which text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exposition {
    /// Prometheus' text format 0.0.4 (what node_exporter's textfile collector reads).
    Prometheus,
    /// OpenMetrics 1.0 text, for a scraper that asks for it.
    OpenMetrics,
}

impl Exposition {
    /// The format a scraper's `Accept` header asks for (OpenMetrics only when named).
    pub fn for_accept(accept: &str) -> Self {
        if accept.contains("application/openmetrics-text") {
            Self::OpenMetrics
        } else {
            Self::Prometheus
        }
    }

    /// Its `Content-Type`.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Prometheus => prometheus_text::CONTENT_TYPE,
            Self::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// The look as text in `how`'s format, ending with a newline.
pub fn render(look: &Look<'_>, how: Exposition) -> String {
    let registry = registry(&Counts::of(look));
    let mut out = String::new();
    let written = match how {
        Exposition::Prometheus => prometheus_text::encode(&mut out, &registry),
        Exposition::OpenMetrics => openmetrics_text::encode(&mut out, &registry),
    };
    // Writing to a String cannot fail; an encoder error would be a bug, said in the text.
    if written.is_err() {
        out = "# debugtop: the metrics could not be encoded\n".to_owned();
    }
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// What the series say, counted from one look.
#[derive(Debug, Clone, PartialEq)]
pub struct Counts {
    /// Confirmed findings by kind and severity: every pair a kind can take.
    pub findings: BTreeMap<(FindingKind, Severity), i64>,
    /// The processes confirmed leaks name (their plans' targets), by role: every role.
    pub leaked: BTreeMap<Role, i64>,
    /// Their resident memory.
    pub leaked_bytes: u64,
    /// Live processes by role: every role.
    pub processes: BTreeMap<Role, i64>,
    /// Debug sessions not ended, by state: every state.
    pub sessions: BTreeMap<SessionState, i64>,
    /// Servers found.
    pub servers: i64,
    /// Whether each source works (none of its statuses failed): every source.
    pub sources_up: BTreeMap<SourceKind, bool>,
    /// How long the look took.
    pub duration: Duration,
    /// When it was taken (seconds since the epoch).
    pub at: f64,
}

impl Counts {
    /// The counts of a look.
    pub fn of(look: &Look<'_>) -> Self {
        let s = look.snapshot;
        let mut findings: BTreeMap<(FindingKind, Severity), i64> = FindingKind::iter()
            .flat_map(|k| k.severities().iter().map(move |s| ((k, *s), 0)))
            .collect();
        for f in &s.findings {
            *findings.entry((f.kind, f.severity)).or_default() += 1;
        }
        let (leaked, leaked_bytes) = leaked(s);
        let mut processes = every(Role::iter());
        for p in s.processes.iter().filter(|p| is_live(p)) {
            *processes.entry(p.role).or_default() += 1;
        }
        let mut sessions = every(SessionState::iter());
        for d in s.debug_sessions.iter().filter(|d| !d.ended) {
            *sessions
                .entry(d.state.unwrap_or(SessionState::Unknown))
                .or_default() += 1;
        }
        let mut sources_up: BTreeMap<SourceKind, bool> =
            SourceKind::iter().map(|k| (k, true)).collect();
        for st in &s.sources {
            if st.state == SourceState::Failed {
                sources_up.insert(st.source, false);
            }
        }
        if look.failed {
            sources_up.insert(SourceKind::Sampler, false);
        }
        Self {
            findings,
            leaked,
            leaked_bytes,
            processes,
            sessions,
            servers: i64::try_from(s.servers.len()).unwrap_or(i64::MAX),
            sources_up,
            duration: look.duration,
            at: s.taken_at.timestamp_millis() as f64 / 1000.0,
        }
    }
}

/// Every value of a set, at 0.
fn every<K: Ord>(values: impl Iterator<Item = K>) -> BTreeMap<K, i64> {
    values.map(|v| (v, 0)).collect()
}

fn is_live(p: &crate::model::Proc) -> bool {
    p.exited_at.is_none() && p.sample.state != ProcState::Dead
}

/// The processes confirmed leaks name — each finding's plan's targets (what killing it frees),
/// else the processes it is about — each counted once, by role; and their resident memory.
fn leaked(s: &Snapshot) -> (BTreeMap<Role, i64>, u64) {
    let mut pids: BTreeMap<u32, Role> = BTreeMap::new();
    for f in s.findings.iter().filter(|f| f.kind.is_leak()) {
        match &f.plan {
            Some(p) if !p.targets.is_empty() => {
                for t in &p.targets {
                    pids.entry(t.pid).or_insert(t.role);
                }
            }
            _ => {
                for pid in &f.pids {
                    let role = s.processes.iter().find(|p| p.pid == *pid).map(|p| p.role);
                    pids.entry(*pid).or_insert(role.unwrap_or(Role::Other));
                }
            }
        }
    }
    let rss: BTreeMap<u32, u64> = s
        .processes
        .iter()
        .filter(|p| is_live(p))
        .map(|p| (p.pid, p.sample.rss_bytes))
        .collect();
    let mut by_role = every(Role::iter());
    let mut bytes = 0u64;
    for (pid, role) in pids {
        *by_role.entry(role).or_default() += 1;
        bytes = bytes.saturating_add(rss.get(&pid).copied().unwrap_or(0));
    }
    (by_role, bytes)
}

type Labels = Vec<(String, String)>;

fn labels(pairs: &[(&str, String)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect()
}

/// A gauge family of `name`, one series per `values` entry labelled `label`.
fn family<K: std::fmt::Display>(
    r: &mut Registry,
    name: &str,
    help: &str,
    label: &str,
    values: &BTreeMap<K, i64>,
) {
    let f = Family::<Labels, Gauge>::default();
    for (k, n) in values {
        f.get_or_create(&labels(&[(label, k.to_string())])).set(*n);
    }
    r.register(name, help, f);
}

/// One gauge of `name` with one value.
fn single(r: &mut Registry, name: &str, help: &str, unit: Option<Unit>, value: f64) {
    let g = Gauge::<f64, AtomicU64>::default();
    g.set(value);
    match unit {
        Some(u) => r.register_with_unit(name, help, u, g),
        None => r.register(name, help, g),
    }
}

fn registry(c: &Counts) -> Registry {
    let mut r = Registry::with_prefix("debugtop");
    verdicts(&mut r, c);
    inventory(&mut r, c);
    the_look(&mut r, c);
    r
}

/// What the verdicts say: findings by kind and severity, and what their plans would free.
fn verdicts(r: &mut Registry, c: &Counts) {
    let findings = Family::<Labels, Gauge>::default();
    for ((kind, severity), n) in &c.findings {
        findings
            .get_or_create(&labels(&[
                ("kind", kind.to_string()),
                ("severity", severity.to_string()),
            ]))
            .set(*n);
    }
    r.register(
        "findings",
        "Confirmed findings now (held for the grace, as audit counts them), by kind and severity",
        findings,
    );
    family(
        r,
        "leaked_processes",
        "Processes that confirmed leaks name (what killing their plans frees), by role",
        "role",
        &c.leaked,
    );
    single(
        r,
        "leaked_resident",
        "Resident memory of the processes confirmed leaks name",
        Some(Unit::Bytes),
        c.leaked_bytes as f64,
    );
}

/// What runs: processes by role, debug sessions by state, servers.
fn inventory(r: &mut Registry, c: &Counts) {
    family(
        r,
        "processes",
        "Live processes debugtop relates to debug and MCP servers, by role",
        "role",
        &c.processes,
    );
    family(
        r,
        "debug_sessions",
        "Debug sessions not ended, by state",
        "state",
        &c.sessions,
    );
    single(r, "servers", "Debug servers found", None, c.servers as f64);
}

/// How the look itself went: each source, its duration and instant, and the build.
fn the_look(r: &mut Registry, c: &Counts) {
    let up: BTreeMap<SourceKind, i64> = c
        .sources_up
        .iter()
        .map(|(k, up)| (*k, i64::from(*up)))
        .collect();
    family(
        r,
        "source_up",
        "Whether each source of facts works (0: it failed; verdicts that need it may be missing)",
        "source",
        &up,
    );
    single(
        r,
        "scan_duration",
        "How long the last look took (process table, logs, /health and the verdicts)",
        Some(Unit::Seconds),
        c.duration.as_secs_f64(),
    );
    single(
        r,
        "last_scan_timestamp",
        "When the last look was taken, in seconds since the epoch",
        Some(Unit::Seconds),
        c.at,
    );
    r.register(
        "build",
        "debugtop's version",
        Info::new(labels(&[("version", env!("CARGO_PKG_VERSION").to_owned())])),
    );
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::testing::sample_snapshot;

    fn look(s: &Snapshot) -> Look<'_> {
        Look {
            snapshot: s,
            duration: Duration::from_millis(12),
            failed: false,
        }
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn every_kind_and_severity_is_written_and_a_finding_counts_once() {
        let s = sample_snapshot();
        let text = render(&look(&s), Exposition::Prometheus);
        assert_eq!(
            value(
                &text,
                r#"debugtop_findings{kind="leaked-adapter",severity="critical"}"#
            ),
            Some(1.0),
            "{text}"
        );
        for k in FindingKind::iter() {
            for sev in k.severities() {
                let series = format!(r#"debugtop_findings{{kind="{k}",severity="{sev}"}}"#);
                assert!(value(&text, &series).is_some(), "{series} missing");
            }
        }
        assert_eq!(
            value(
                &text,
                r#"debugtop_findings{kind="zombie",severity="warning"}"#
            ),
            Some(0.0)
        );
        assert!(text.contains(r#"debugtop_build_info{version=""#), "{text}");
        assert!(text.ends_with('\n'));
        assert!(
            text.lines().filter(|l| !l.starts_with('#')).count() <= MAX_SERIES,
            "{text}"
        );
    }

    #[test]
    fn a_leak_costs_its_plans_processes_each_once() {
        let s = sample_snapshot();
        let c = Counts::of(&look(&s));
        // The leaked adapter's plan: its watchdog, debuggee and itself.
        let plan = s.findings[0].plan.as_ref().unwrap();
        let want: i64 = plan.targets.len() as i64;
        assert_eq!(c.leaked.values().sum::<i64>(), want);
        assert_eq!(c.leaked[&Role::Adapter], 1);
        let rss: u64 = plan
            .targets
            .iter()
            .filter_map(|t| s.processes.iter().find(|p| p.pid == t.pid && is_live(p)))
            .map(|p| p.sample.rss_bytes)
            .sum();
        assert_eq!(c.leaked_bytes, rss);
        // Near miss: a finding that is no leak (a zombie) costs nothing here.
        let mut z = s.clone();
        Arc::make_mut(&mut z.findings[0]).kind = FindingKind::Zombie;
        let c = Counts::of(&look(&z));
        assert_eq!(c.leaked.values().sum::<i64>(), 0);
        assert_eq!(c.leaked_bytes, 0);
    }

    #[test]
    fn a_failed_source_or_look_is_down_and_the_rest_up() {
        let mut s = sample_snapshot();
        s.sources[1].state = SourceState::Failed;
        let c = Counts::of(&Look {
            failed: true,
            ..look(&s)
        });
        assert!(!c.sources_up[&SourceKind::Health]);
        assert!(!c.sources_up[&SourceKind::Sampler]);
        assert!(c.sources_up[&SourceKind::Logs] && c.sources_up[&SourceKind::Exits]);
    }

    #[test]
    fn openmetrics_when_asked_for_and_no_label_grows_with_the_machine() {
        let s = sample_snapshot();
        let om = render(&look(&s), Exposition::OpenMetrics);
        assert!(om.ends_with("# EOF\n"), "{om}");
        assert_eq!(
            Exposition::for_accept("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"),
            Exposition::OpenMetrics
        );
        assert_eq!(Exposition::for_accept("text/plain"), Exposition::Prometheus);
        assert_eq!(Exposition::for_accept(""), Exposition::Prometheus);
        let text = render(&look(&s), Exposition::Prometheus);
        for p in &s.processes {
            assert!(
                !text.contains(&format!("\"{}\"", p.pid)),
                "a pid as a label: {text}"
            );
        }
        for d in &s.debug_sessions {
            assert!(!text.contains(&d.id), "a session id as a label");
        }
    }

    #[test]
    fn print_for_promtool() {
        if let Some(out) = std::env::var_os("DEBUGTOP_METRICS_OUT") {
            let s = sample_snapshot();
            std::fs::write(out, render(&look(&s), Exposition::Prometheus)).unwrap();
        }
    }
}
