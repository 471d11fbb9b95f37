//! What the engine publishes: one update per tick, and the audit's answer.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use super::finding::{group_findings, Finding, FindingGroup, Severity};
use super::logs::LogEvent;
use super::printable::one_line;
use super::process::ServerInfo;
use super::snapshot::{Snapshot, SourceState, SourceStatus};
use super::target::{Hello, Target};

/// One published result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
#[ts(export)]
pub struct Update {
    /// Tick number, from 1.
    #[ts(type = "number")]
    pub seq: u64,
    /// The reconciled snapshot.
    pub snapshot: Snapshot,
    /// Log events read during this tick.
    pub events: Vec<LogEvent>,
}

/// The liveness audit's answer: what `debugtop-cli audit --json` prints and the app's audit
/// pane shows, from the same function.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct AuditResult {
    /// No finding.
    pub clean: bool,
    /// When the last sample was taken.
    pub taken_at: DateTime<Utc>,
    /// The machine.
    pub host: String,
    /// Servers audited.
    pub servers: Vec<ServerInfo>,
    /// Debug sessions known.
    pub debug_sessions: u32,
    /// Server-related processes looked at.
    pub processes: u32,
    /// What it found (empty: all healthy), worst first.
    pub findings: Vec<std::sync::Arc<Finding>>,
    /// The findings by kind and cause, each with one bulk plan.
    #[serde(default)]
    pub groups: Vec<FindingGroup>,
    /// Each source's health (a degraded source is said, not hidden).
    pub sources: Vec<SourceStatus>,
}

impl AuditResult {
    /// The process exit code of an audit that ran: 0 clean, 1 findings.
    pub fn exit_code(&self) -> u8 {
        u8::from(!self.clean)
    }

    /// The readable report.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut o = String::new();
        let head = match self.findings.len() {
            0 => "all healthy".to_owned(),
            1 => "1 finding".to_owned(),
            n => format!("{n} findings"),
        };
        let _ = writeln!(
            o,
            "debugtop audit: {head} on {} server(s), {} debug session(s), {} process(es)",
            self.servers.len(),
            self.debug_sessions,
            self.processes
        );
        for g in &self.groups {
            let _ = self.write_group(&mut o, g);
        }
        for src in self.sources.iter().filter(|x| x.state != SourceState::Ok) {
            let who = src
                .server_pid
                .map(|p| format!(" (server {p})"))
                .unwrap_or_default();
            let _ = writeln!(o, "note: {}{who}: {}", src.source, one_line(&src.detail));
        }
        o
    }
}

/// A group's findings listed in the readable report (the rest are counted; `--json` has all).
const LISTED_PER_GROUP: usize = 5;

impl AuditResult {
    /// A group: its title and bulk kill when it holds several findings, then its findings.
    fn write_group(&self, o: &mut String, g: &FindingGroup) -> std::fmt::Result {
        use std::fmt::Write;
        if g.findings.len() > 1 {
            writeln!(o, "== {} ({} processes)", one_line(&g.title), g.pids)?;
            let alone = g.server_pid.is_some()
                || self.groups.iter().filter(|x| x.kind == g.kind).count() == 1;
            if g.killable && alone {
                let server = g
                    .server_pid
                    .map(|p| format!(" --server {p}"))
                    .unwrap_or_default();
                writeln!(
                    o,
                    "   kill them all, in one plan: debugtop-cli kill --kind {}{server}",
                    g.kind
                )?;
            }
        }
        let mut listed = 0;
        for id in &g.findings {
            let Some(f) = self.findings.iter().find(|f| &f.id == id) else {
                continue;
            };
            if listed == LISTED_PER_GROUP {
                let rest = g.findings.len() - listed;
                writeln!(o, "   … and {rest} more like these (all of them in --json)")?;
                break;
            }
            write_finding(o, f)?;
            listed += 1;
        }
        Ok(())
    }
}

fn write_finding(o: &mut String, f: &Finding) -> std::fmt::Result {
    use std::fmt::Write;
    let sev = match f.severity {
        Severity::Critical => "CRITICAL",
        Severity::Warning => "WARNING",
        Severity::Info => "INFO",
    };
    let sid = f
        .session_id
        .as_deref()
        .map(|s| format!(", session {}", one_line(s)))
        .unwrap_or_default();
    let srv = f
        .server_pid
        .map(|s| format!(", server {s}"))
        .unwrap_or_default();
    let id = f.id.to_string();
    writeln!(o, "{sev} {} — {}{sid}{srv}", f.kind, one_line(&id))?;
    writeln!(o, "    {}", f.dates())?;
    for e in &f.evidence {
        writeln!(o, "    - {}", one_line(e))?;
    }
    writeln!(o, "    fix: {}", one_line(&f.suggested_action))?;
    if f.plan.as_ref().is_some_and(|p| !p.targets.is_empty()) {
        writeln!(o, "         debugtop-cli kill {}", f.id)?;
    }
    Ok(())
}

/// Builds the audit's answer from the last snapshot of an audit run.
pub fn audit_result(s: &Snapshot) -> AuditResult {
    AuditResult {
        clean: s.findings.is_empty(),
        taken_at: s.taken_at,
        host: s.host.clone(),
        servers: s.servers.clone(),
        debug_sessions: u32::try_from(s.debug_sessions.len()).unwrap_or(u32::MAX),
        processes: u32::try_from(s.processes.len()).unwrap_or(u32::MAX),
        findings: s.findings.clone(),
        groups: group_findings(&s.findings),
        sources: s.sources.clone(),
    }
}

/// One target's part of a fleet audit: its answer, or why there is none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TargetAudit {
    /// Where.
    pub target: Target,
    /// Who answered (remote targets).
    pub hello: Option<Hello>,
    /// The audit, when it ran.
    pub result: Option<AuditResult>,
    /// Why it could not audit (exit 2 for the fleet).
    pub error: Option<String>,
}

/// `debugtop-cli audit --target …`: every target's audit, and the worst status of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct FleetAudit {
    /// Each target, in the order given.
    pub targets: Vec<TargetAudit>,
}

impl FleetAudit {
    /// The worst status: 2 when a target could not be audited, 1 with findings, 0 clean.
    pub fn exit_code(&self) -> u8 {
        self.targets
            .iter()
            .map(|t| match &t.result {
                None => 2,
                Some(r) => r.exit_code(),
            })
            .max()
            .unwrap_or(0)
    }

    /// The readable report: each target's, under its name.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        for t in &self.targets {
            let host = t
                .hello
                .as_ref()
                .map(|h| {
                    format!(
                        " ({}, debugtop {})",
                        one_line(&h.host),
                        one_line(&h.debugtop)
                    )
                })
                .unwrap_or_default();
            o.push_str(&format!("== {}{host}\n", one_line(&t.target.to_string())));
            match (&t.result, &t.error) {
                (Some(r), _) => {
                    let text = r.to_text();
                    // Kill hints name the target, so a copied command acts where the pids live.
                    let hint = format!("debugtop-cli kill --target {} ", shell_word(&t.target));
                    o.push_str(&if t.target.is_local() {
                        text
                    } else {
                        text.replace("debugtop-cli kill ", &hint)
                    });
                }
                (None, e) => o.push_str(&format!(
                    "could not audit: {}\n",
                    one_line(e.as_deref().unwrap_or("no answer"))
                )),
            }
        }
        let worst = match self.exit_code() {
            0 => "all targets healthy",
            1 => "findings on at least one target",
            _ => "at least one target could not be audited",
        };
        o.push_str(&format!(
            "fleet: {worst} ({} target(s))\n",
            self.targets.len()
        ));
        o
    }
}

fn shell_word(t: &Target) -> String {
    let s = t.to_string();
    shlex::try_quote(&s).map_or(s.clone(), |q| q.into_owned())
}

/// The schema tag of a fleet incident file.
pub const FLEET_SCHEMA: &str = "debugtop.fleet/1";

/// One target's part of a fleet incident file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TargetSnapshot {
    /// Where.
    pub target: Target,
    /// Who answered.
    pub hello: Option<Hello>,
    /// Its snapshot (redacted on the far side unless asked otherwise).
    pub snapshot: Option<Snapshot>,
    /// Why there is none.
    pub error: Option<String>,
}

/// A fleet incident file (`"schema": "debugtop.fleet/1"`): every target's tree at one moment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Fleet {
    /// `debugtop.fleet/1`.
    pub schema: String,
    /// When it was taken.
    pub taken_at: DateTime<Utc>,
    /// Each target.
    pub targets: Vec<TargetSnapshot>,
}
