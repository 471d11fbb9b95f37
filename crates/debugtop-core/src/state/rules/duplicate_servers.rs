//! Stdio servers a live host keeps but no longer uses: a reconnect after a config edit leaves
//! the old server with its stdin still open; a long-running host starts a full set of servers
//! per session and never closes the old ones. Nothing is orphaned — the host still holds every
//! pipe — so the leak shows only over time: two children of one live host with the same
//! command line, the older one silent (no byte read or written) while a newer twin started or
//! talked. Twins that both talk, or that debugtop has not yet watched long enough, are nothing;
//! so are the copies of a host that runs every server twice on purpose (a desktop host with two
//! MCP subsystems, each starting its own set): every server of that host comes in the same
//! number of copies, each set started together, and one copy may stay quiet for hours.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::hosts::live_host;
use super::{about, secs, Candidate, Ctx};
use crate::model::{FindingKind, KillPlan, Proc, Role, Severity};

/// How close together a host that runs its servers in copies on purpose starts the copies of
/// one server (measured: two subsystems of one desktop host, 2 s apart; room left for a slow
/// start); a reconnect's new twin comes when a person edits a config, long after the old one.
pub const PAIRED_WITHIN: Duration = Duration::from_secs(15);

/// A stdio server of a live host that has read and written nothing for
/// [`super::VerdictConfig::duplicate_quiet`] while a newer twin (same parent, same command
/// line) started or talked: a warning, the older server and what it started in the plan.
pub fn duplicate_server(ctx: &Ctx<'_>) -> Vec<Candidate> {
    let Ok(needed) = chrono::Duration::from_std(ctx.config.duplicate_quiet) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut by_design: BTreeMap<u32, bool> = BTreeMap::new();
    for ((host, _), twins) in &twin_groups(ctx) {
        if *by_design
            .entry(*host)
            .or_insert_with(|| paired_by_design(ctx, *host))
        {
            continue;
        }
        for (i, older) in twins.iter().enumerate() {
            let Some(quiet) = older
                .sample
                .stdio_quiet_since
                .filter(|q| ctx.now() - *q >= needed)
            else {
                continue;
            };
            let Some(newer) = twins[i + 1..]
                .iter()
                .rev()
                .find(|b| b.start_time > older.start_time && started_or_talked_since(b, quiet))
            else {
                continue;
            };
            // Dated by its own evidence (when the silence reached the quiet time): confirmed
            // after the grace from then, however often a scan missed the twins meanwhile.
            out.push(Candidate::dated(
                finding(ctx, older, newer, quiet),
                quiet + needed,
            ));
        }
    }
    out
}

/// Live stdio servers of live hosts whose I/O debugtop watches, by parent and command line,
/// each group oldest first; groups of one left out.
fn twin_groups<'a>(ctx: &'a Ctx<'_>) -> BTreeMap<(u32, &'a [String]), Vec<&'a Proc>> {
    let mut groups: BTreeMap<(u32, &[String]), Vec<&Proc>> = BTreeMap::new();
    for p in ctx.procs().filter(|p| {
        p.role == Role::Server
            && p.sample.state.is_alive()
            && p.sample.stdio_quiet_since.is_some()
            && live_host(ctx, p).is_some()
    }) {
        groups.entry((p.ppid, &p.argv)).or_default().push(p);
    }
    groups.retain(|_, g| g.len() > 1);
    for g in groups.values_mut() {
        g.sort_by_key(|p| (p.start_time, p.pid));
    }
    groups
}

/// Whether `host` keeps its stdio servers in copies by design: two or more servers, every one
/// in the same number of copies (two or more), each set started within [`PAIRED_WITHIN`]. One
/// server kept once, a set whose copies came apart in time, or a host with one server only (a
/// quick reconnect looks the same) and the host is not one of those.
fn paired_by_design(ctx: &Ctx<'_>, host: u32) -> bool {
    let mut sets: BTreeMap<&[String], Vec<DateTime<Utc>>> = BTreeMap::new();
    for p in ctx.procs().filter(|p| {
        p.ppid == host
            && p.role == Role::Server
            && p.sample.state.is_alive()
            && live_host(ctx, p).is_some()
    }) {
        sets.entry(&p.argv).or_default().push(p.start_time);
    }
    let Ok(within) = chrono::Duration::from_std(PAIRED_WITHIN) else {
        return false;
    };
    let mut sizes = sets.values().map(Vec::len);
    let Some(copies) = sizes.next() else {
        return false;
    };
    sets.len() >= 2
        && copies >= 2
        && sizes.all(|n| n == copies)
        && sets.values().all(|starts| {
            let first = starts.iter().min();
            let last = starts.iter().max();
            first.zip(last).is_some_and(|(a, b)| *b - *a <= within)
        })
}

/// The newer twin started after the older one fell silent, or talked since.
fn started_or_talked_since(newer: &Proc, quiet: DateTime<Utc>) -> bool {
    newer.start_time >= quiet || newer.sample.stdio_quiet_since.is_some_and(|t| t > quiet)
}

fn finding(
    ctx: &Ctx<'_>,
    older: &Proc,
    newer: &Proc,
    quiet: DateTime<Utc>,
) -> crate::model::Finding {
    let mut f = about(
        FindingKind::DuplicateServer,
        Severity::Warning,
        older,
        ctx.now(),
    );
    f.server_pid = Some(older.pid);
    // The condition is the silence: dated from when it began.
    f.since = quiet;
    let lines = ctx.command_lines();
    let name = lines.text(&older.argv, super::NAME_CHARS);
    let host = live_host(ctx, older).map_or_else(
        || format!("pid {}", older.ppid),
        |h| {
            let label = lines.text(&h.argv, super::NAME_CHARS);
            format!("{} host {} ({label})", h.kind.title(), h.pid)
        },
    );
    let newer_did = if newer.start_time >= quiet {
        format!(
            "started {} after it fell silent",
            secs(newer.start_time - quiet)
        )
    } else {
        "has talked since it fell silent".to_owned()
    };
    f.evidence = vec![
        format!(
            "stdio MCP server {} ({name}) has read and written nothing for {} (since {})",
            older.pid,
            secs(ctx.now() - quiet),
            quiet.format("%H:%M:%S")
        ),
        format!(
            "a newer twin with the same command line under the same host, pid {}, {newer_did}",
            newer.pid
        ),
        format!("its {host} is alive and still holds its stdin, so it will not exit on its own"),
    ];
    f.suggested_action = format!(
        "kill the older MCP server {} and what it started: its host talks to pid {} now",
        older.pid, newer.pid
    );
    f.plan = Some(plan(ctx, older));
    f
}

fn plan(ctx: &Ctx<'_>, p: &Proc) -> KillPlan {
    ctx.plan(p, &[p.pid], false)
}
