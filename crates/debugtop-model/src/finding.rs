//! Findings: a condition that holds, with its evidence and what would fix it.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_with::{DeserializeFromStr, SerializeDisplay};
use ts_rs::TS;

use super::ids::{not_an_id, ProcId};
use super::kill::KillPlan;
use crate::error::Error;

/// The stable finding kinds (the CLI's JSON and the GUI use the same strings).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
    strum::IntoStaticStr,
    strum::EnumString,
    strum::EnumIter,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum FindingKind {
    /// Owner alive and the same, session over, worker still alive past the grace.
    LeakedWorker,
    /// The worker's owner is dead or is not the same process any more.
    OrphanedWorker,
    /// An adapter whose parent is no longer a live worker.
    LeakedAdapter,
    /// A debuggee, launcher or watchdog whose adapter is gone (what survived of a finished
    /// debug session's chain).
    LeakedDebuggee,
    /// A stdio MCP server whose host is gone: nobody holds the other end of its stdin, so no
    /// request can ever reach it.
    OrphanedServer,
    /// A process whose stdio pipe has nobody at the other end and whose parent is gone, with
    /// nothing saying it is an MCP server: nothing can write to it again.
    OrphanedStdio,
    /// A container whose main process is a stdio MCP server nobody can reach: the client that
    /// ran it (`docker run -i`, `docker attach`) is gone and the runtime closed its stdin, and
    /// it ignored the end of its input.
    OrphanedContainer,
    /// A stdio MCP server its live host keeps but no longer uses: silent while a newer twin
    /// (same host, same command line) started or talked.
    DuplicateServer,
    /// Infrastructure process burning CPU over two samples.
    Spinning,
    /// Exited but not reaped.
    Zombie,
    /// Stopped by a signal.
    Stopped,
    /// The server lists a session whose worker is gone.
    SessionWithoutWorker,
    /// A session stalled: its start waits on a step past a threshold, a DAP request has no
    /// answer, or its running debuggee is stopped by a signal or stuck in D.
    StuckSession,
    /// `/health` does not answer.
    ServerUnresponsive,
}

impl FindingKind {
    /// The stable string.
    pub fn as_str(self) -> &'static str {
        self.into()
    }

    /// What one finding of this kind is about, singular and plural ("leaked adapter").
    pub fn nouns(self) -> (&'static str, &'static str) {
        match self {
            Self::LeakedWorker => ("leaked worker", "leaked workers"),
            Self::OrphanedWorker => ("orphaned worker", "orphaned workers"),
            Self::LeakedAdapter => ("leaked adapter", "leaked adapters"),
            Self::LeakedDebuggee => ("leaked debuggee", "leaked debuggees"),
            Self::OrphanedServer => ("orphaned MCP server", "orphaned MCP servers"),
            Self::OrphanedStdio => ("orphaned stdio process", "orphaned stdio processes"),
            Self::OrphanedContainer => ("orphaned MCP container", "orphaned MCP containers"),
            Self::DuplicateServer => ("duplicate MCP server", "duplicate MCP servers"),
            Self::Spinning => ("spinning process", "spinning processes"),
            Self::Zombie => ("zombie", "zombies"),
            Self::Stopped => ("stopped process", "stopped processes"),
            Self::SessionWithoutWorker => ("session without a worker", "sessions without a worker"),
            Self::StuckSession => ("stuck session", "stuck sessions"),
            Self::ServerUnresponsive => ("unresponsive server", "unresponsive servers"),
        }
    }

    /// Every severity a finding of this kind can have (most have one; a stopped server and a
    /// session stuck past the server's own start timeout are critical).
    pub fn severities(self) -> &'static [Severity] {
        match self {
            Self::Stopped | Self::StuckSession => &[Severity::Warning, Severity::Critical],
            Self::OrphanedStdio
            | Self::DuplicateServer
            | Self::Spinning
            | Self::Zombie
            | Self::SessionWithoutWorker => &[Severity::Warning],
            Self::LeakedWorker
            | Self::OrphanedWorker
            | Self::LeakedAdapter
            | Self::LeakedDebuggee
            | Self::OrphanedServer
            | Self::OrphanedContainer
            | Self::ServerUnresponsive => &[Severity::Critical],
        }
    }

    /// Whether a finding of this kind is something left running that holds resources — what
    /// killing its plan frees (a spinning or stopped process, a zombie or a session's state
    /// are conditions of something, not leaks of it).
    pub fn is_leak(self) -> bool {
        matches!(
            self,
            Self::LeakedWorker
                | Self::OrphanedWorker
                | Self::LeakedAdapter
                | Self::LeakedDebuggee
                | Self::OrphanedServer
                | Self::OrphanedStdio
                | Self::OrphanedContainer
                | Self::DuplicateServer
        )
    }

    /// Whether a finding of this kind is about a debug session itself, not a process (the
    /// window marks the session's row with it).
    pub fn about_session(self) -> bool {
        matches!(self, Self::StuckSession | Self::SessionWithoutWorker)
    }

    /// Whether only a monitor that has watched for a while can raise it (a one-shot audit
    /// cannot: the evidence is what did not happen over time).
    pub fn needs_watching(self) -> bool {
        matches!(self, Self::DuplicateServer)
    }

    /// Whether findings of this kind are grouped by the server they concern (an orphaned MCP
    /// server's finding names itself as the server: those are grouped by kind alone).
    fn groups_by_server(self) -> bool {
        !matches!(
            self,
            Self::OrphanedServer
                | Self::OrphanedStdio
                | Self::OrphanedContainer
                | Self::DuplicateServer
        )
    }
}

/// How bad.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    TS,
    schemars::JsonSchema,
    strum::Display,
)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[ts(export)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Probably wrong.
    Warning,
    /// Leaking resources now.
    Critical,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Finding {
    /// Stable id: the kind and the identity it concerns, so a later `debugtop-cli kill <id>`
    /// finds the same finding.
    pub id: FindingId,
    /// What kind.
    pub kind: FindingKind,
    /// How bad.
    pub severity: Severity,
    /// The processes concerned.
    pub pids: Vec<u32>,
    /// The debug session concerned.
    pub session_id: Option<String>,
    /// The server concerned.
    pub server_pid: Option<u32>,
    /// Plain sentences with the facts and their sources.
    pub evidence: Vec<String>,
    /// Since when it holds: when the condition was first seen, or earlier when the evidence
    /// dates it (a log line, a process's start, the last byte a silent twin moved).
    pub since: DateTime<Utc>,
    /// When it was confirmed: it had held for its grace (or its two samples) then. `None` while
    /// it waits (a one-shot look names what it saw, unconfirmed) and in files older than this
    /// field.
    #[serde(default)]
    pub confirmed_at: Option<DateTime<Utc>>,
    /// What to do, in words.
    pub suggested_action: String,
    /// The kill plan that would fix it, when killing is the fix.
    pub plan: Option<KillPlan>,
}

impl Finding {
    /// When its condition was first seen and when it was confirmed, in words (UTC): "since
    /// 16:00:03, confirmed 16:00:40 (UTC)" — what an incident report says of every finding.
    pub fn dates(&self) -> String {
        let t = |d: DateTime<Utc>| d.format("%H:%M:%S");
        match self.confirmed_at {
            Some(c) => format!("since {}, confirmed {} (UTC)", t(self.since), t(c)),
            None => format!("since {} (UTC), not confirmed yet", t(self.since)),
        }
    }
}

/// Findings of one kind and cause, as one line of the findings pane with one bulk plan:
/// "1,000 orphaned workers of gone server 24633".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct FindingGroup {
    /// Stable key: the kind and the server (`orphaned-worker@24633`, `zombie@-`).
    pub key: String,
    /// The kind.
    pub kind: FindingKind,
    /// The worst severity in it.
    pub severity: Severity,
    /// The server they concern (gone, for orphaned workers), when they share one.
    pub server_pid: Option<u32>,
    /// In words, with the count.
    pub title: String,
    /// Its findings, in the snapshot's order (worst first).
    pub findings: Vec<FindingId>,
    /// Distinct processes named by them.
    pub pids: u32,
    /// Whether killing fixes any of them (one bulk plan for those).
    pub killable: bool,
}

/// The schema tag of [`FindingsReport`].
pub const FINDINGS_SCHEMA: &str = "debugtop.findings/1";

/// The confirmed findings of one look as an exporter serves them beside its series
/// (`/api/findings`): what the series cannot carry (ids, pids, evidence, the command that fixes
/// each), redacted as an export is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FindingsReport {
    /// `debugtop.findings/<major>`.
    pub schema: String,
    /// Host name.
    pub host: String,
    /// When the look was taken.
    pub taken_at: DateTime<Utc>,
    /// Whether secrets were redacted.
    pub redacted: bool,
    /// The findings, worst first, each with what to run.
    pub findings: Vec<ReportedFinding>,
}

/// One finding and the command that fixes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportedFinding {
    /// The finding.
    #[serde(flatten)]
    pub finding: std::sync::Arc<Finding>,
    /// `debugtop-cli kill <id>` on the host, when killing fixes it (else `suggested_action`).
    pub fix: Option<String>,
}

impl FindingsReport {
    /// The report of a (published) snapshot's confirmed findings.
    pub fn of(s: &super::Snapshot) -> Self {
        Self {
            schema: FINDINGS_SCHEMA.to_owned(),
            host: s.host.clone(),
            taken_at: s.taken_at,
            redacted: s.redacted,
            findings: s
                .findings
                .iter()
                .map(|f| ReportedFinding {
                    fix: f
                        .plan
                        .as_ref()
                        .filter(|p| !p.targets.is_empty())
                        .map(|_| format!("debugtop-cli kill {}", f.id)),
                    finding: std::sync::Arc::clone(f),
                })
                .collect(),
        }
    }
}

/// "1,000" for 1000.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl AsRef<Finding> for Finding {
    fn as_ref(&self) -> &Finding {
        self
    }
}

/// The findings grouped by kind and cause, in the order their first finding appears (findings
/// come worst first, so groups do too).
pub fn group_findings<F: AsRef<Finding>>(findings: &[F]) -> Vec<FindingGroup> {
    let mut groups: Vec<(FindingGroup, rustc_hash::FxHashSet<u32>)> = Vec::new();
    let mut at_key: rustc_hash::FxHashMap<(FindingKind, Option<u32>), usize> =
        rustc_hash::FxHashMap::default();
    for f in findings.iter().map(AsRef::as_ref) {
        let server = f.server_pid.filter(|_| f.kind.groups_by_server());
        let at = *at_key.entry((f.kind, server)).or_insert_with(|| {
            let key = format!(
                "{}@{}",
                f.kind,
                server.map_or_else(|| "-".to_owned(), |p| p.to_string())
            );
            groups.push((
                FindingGroup {
                    key,
                    kind: f.kind,
                    severity: f.severity,
                    server_pid: server,
                    title: String::new(),
                    findings: Vec::new(),
                    pids: 0,
                    killable: false,
                },
                rustc_hash::FxHashSet::default(),
            ));
            groups.len() - 1
        });
        let (g, pids) = &mut groups[at];
        g.severity = g.severity.max(f.severity);
        g.findings.push(f.id.clone());
        g.killable |= f.plan.as_ref().is_some_and(|p| !p.targets.is_empty());
        pids.extend(f.pids.iter().copied());
    }
    groups
        .into_iter()
        .map(|(mut g, pids)| {
            g.pids = u32::try_from(pids.len()).unwrap_or(u32::MAX);
            g.title = group_title(&g);
            g
        })
        .collect()
}

fn group_title(g: &FindingGroup) -> String {
    let n = g.findings.len();
    let (one, many) = g.kind.nouns();
    let what = if n == 1 { one } else { many };
    let of = match (g.kind, g.server_pid) {
        (_, None) => String::new(),
        (FindingKind::OrphanedWorker, Some(p)) => format!(" of gone server {p}"),
        (FindingKind::ServerUnresponsive, Some(p)) => format!(": server {p}"),
        (_, Some(p)) => format!(" of server {p}"),
    };
    format!("{} {what}{of}", thousands(n))
}

/// A finding's stable id: its kind and the identity it concerns (a process identity, a debug
/// session id, or a server's identity), written `kind:subject`. The same condition on the same
/// identity has the same id in every run, so `debugtop-cli kill <id>` in another process finds
/// it.
#[derive(
    Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, SerializeDisplay, DeserializeFromStr,
)]
pub struct FindingId {
    /// The kind.
    pub kind: FindingKind,
    /// What it concerns (`4242.881733`, a session id, …).
    pub subject: String,
}

impl FindingId {
    /// The id of a finding about a process.
    pub fn of_proc(kind: FindingKind, id: ProcId) -> Self {
        Self {
            kind,
            subject: id.to_string(),
        }
    }

    /// The id of a finding about something else named by a token (a session id).
    pub fn of(kind: FindingKind, subject: &str) -> Self {
        Self {
            kind,
            subject: subject.to_owned(),
        }
    }

    /// The process identity it concerns, when it concerns one.
    pub fn proc(&self) -> Option<ProcId> {
        self.subject.parse().ok()
    }
}

impl fmt::Display for FindingId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.subject)
    }
}

impl FromStr for FindingId {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            not_an_id(
                "a finding id (kind:subject, e.g. leaked-adapter:4242.881733)",
                s,
            )
        };
        let (kind, subject) = s.split_once(':').ok_or_else(bad)?;
        let kind = FindingKind::from_str(kind).map_err(|_| bad())?;
        let ok = !subject.is_empty()
            && subject.len() <= 200
            && subject
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
        if !ok {
            return Err(bad());
        }
        Ok(Self {
            kind,
            subject: subject.to_owned(),
        })
    }
}

string_in_schemas!(FindingId, "FindingId", {
    "type": "string",
    "description": "A finding id: kind:subject"
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finding_ids_parse_their_kind() {
        let id: FindingId = "leaked-adapter:1019.7133"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(id.kind, FindingKind::LeakedAdapter);
        assert_eq!(id.proc(), Some(ProcId::new(1019, 7133)));
        let s: FindingId = "session-without-worker:b85b4926-1c2d"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.proc(), None);
        for bad in [
            "1234",
            "leaked:1.2",
            "leaked-adapter:",
            "leaked-adapter:a b",
            "x",
        ] {
            assert!(bad.parse::<FindingId>().is_err(), "{bad}");
        }
    }
}
