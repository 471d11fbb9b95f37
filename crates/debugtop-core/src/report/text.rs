//! The audit as a person reads it on a terminal: a head line, each group of findings with its
//! bulk kill, each finding with its evidence and fix, and every source that did not answer; a
//! fleet's audit target by target, its kill hints naming the target. Every string from outside
//! is put on one line.

use std::fmt::Write;

use crate::model::printable::one_line;
use crate::model::{AuditResult, Finding, FindingGroup, FleetAudit, Severity, SourceState, Target};

/// A group's findings listed in the readable report (the rest are counted; `--json` has all).
const LISTED_PER_GROUP: usize = 5;

/// The readable report of one audit.
pub fn audit(r: &AuditResult) -> String {
    let mut o = String::new();
    let head = match r.findings.len() {
        0 => "all healthy".to_owned(),
        1 => "1 finding".to_owned(),
        n => format!("{n} findings"),
    };
    let _ = writeln!(
        o,
        "debugtop audit: {head} on {} server(s), {} debug session(s), {} process(es)",
        r.servers.len(),
        r.debug_sessions,
        r.processes
    );
    for g in &r.groups {
        let _ = write_group(r, &mut o, g);
    }
    for src in r.sources.iter().filter(|x| x.state != SourceState::Ok) {
        let who = src
            .server_pid
            .map(|p| format!(" (server {p})"))
            .unwrap_or_default();
        let _ = writeln!(o, "note: {}{who}: {}", src.source, one_line(&src.detail));
    }
    o
}

/// A group: its title and bulk kill when it holds several findings, then its findings.
fn write_group(r: &AuditResult, o: &mut String, g: &FindingGroup) -> std::fmt::Result {
    if g.findings.len() > 1 {
        writeln!(o, "== {} ({} processes)", one_line(&g.title), g.pids)?;
        let alone =
            g.server_pid.is_some() || r.groups.iter().filter(|x| x.kind == g.kind).count() == 1;
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
        let Some(f) = r.findings.iter().find(|f| &f.id == id) else {
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

fn write_finding(o: &mut String, f: &Finding) -> std::fmt::Result {
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

/// The readable report of a fleet's audit: each target's, under its name.
pub fn fleet(f: &FleetAudit) -> String {
    let mut o = String::new();
    for t in &f.targets {
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
                let text = audit(r);
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
    let worst = match f.exit_code() {
        0 => "all targets healthy",
        1 => "findings on at least one target",
        _ => "at least one target could not be audited",
    };
    o.push_str(&format!("fleet: {worst} ({} target(s))\n", f.targets.len()));
    o
}

fn shell_word(t: &Target) -> String {
    let s = t.to_string();
    shlex::try_quote(&s).map_or(s.clone(), |q| q.into_owned())
}
