//! How each source went this step, in words: the process table, each server's `/health` and
//! logs (with what the bounds on reading them left out), a server given by URL. What a user
//! reads to know whether a silence means "nothing there" or "not looked".

use crate::model::{
    Health, HealthError, LogsRead, ScanStats, ServerObservation, SourceKind, SourceState,
    SourceStatus,
};

/// How reading the process table went.
pub(super) fn process_table_status(stats: &ScanStats) -> SourceStatus {
    let state = if stats.denied > 0 {
        SourceState::Degraded
    } else {
        SourceState::Ok
    };
    let mut detail = format!(
        "{} processes read in {} ms; {} vanished mid-read, {} not readable (other users)",
        stats.processes,
        stats.duration_us / 1000,
        stats.vanished,
        stats.denied,
    );
    if stats.wine > 0 {
        detail.push_str(&format!(
            "; {} run by Wine, not judged here (they name Windows pids): see them with the \
             Windows debugtop-cli under Wine",
            stats.wine
        ));
    }
    if stats.cpu_unmeasured {
        detail.push_str(
            "; other processes' CPU cannot be measured here (under Wine every process shows the \
             same figure), so spinning is not judged",
        );
    }
    if stats.io_unmeasured > 0 {
        detail.push_str(&format!(
            "; the I/O of {} stdio server(s) of live hosts cannot be read here, so whether they \
             still talk (duplicate servers) is not judged",
            stats.io_unmeasured
        ));
    }
    if stats.no_states {
        detail.push_str(
            "; this system has no zombie or stopped state to read, so zombie and stopped are \
             not judged",
        );
    }
    SourceStatus::new(SourceKind::ProcessTable, None, state, detail)
}

/// How asking a live server's `/health` and reading its logs went.
pub(super) fn server_sources(
    pid: u32,
    seen: Option<&ServerObservation>,
    dropped: u64,
) -> Vec<SourceStatus> {
    let mut out = Vec::new();
    let health = seen.and_then(|x| x.health.as_ref());
    out.push(match health.map(|h| (&h.url, &h.result)) {
        Some((url, Ok(h))) => SourceStatus::new(
            SourceKind::Health,
            Some(pid),
            SourceState::Ok,
            format!(
                "{url}/health: {}, {} HTTP sessions",
                h.status,
                h.sessions.len()
            ),
        ),
        Some((_, Err(e))) => SourceStatus::new(
            SourceKind::Health,
            Some(pid),
            SourceState::Failed,
            e.to_string(),
        ),
        None => match seen.and_then(|x| x.endpoints.not_asked.clone()) {
            Some(why) => {
                SourceStatus::new(SourceKind::Health, Some(pid), SourceState::Degraded, why)
            }
            None => SourceStatus::new(
                SourceKind::Health,
                Some(pid),
                SourceState::Ok,
                "not an HTTP server (or its port is unknown): no /health to ask".into(),
            ),
        },
    });
    if let Some(l) = seen.map(|x| &x.logs) {
        let detail = format!(
            "{} files tailed, {} events, {} lines skipped, {} restarts (a file truncated or replaced){}",
            l.files,
            l.stats.events,
            l.stats.skipped + l.stats.oversized,
            l.stats.restarts,
            logs_bounds(l, dropped),
        );
        out.push(if l.errors.is_empty() {
            SourceStatus::new(SourceKind::Logs, Some(pid), SourceState::Ok, detail)
        } else {
            SourceStatus::new(
                SourceKind::Logs,
                Some(pid),
                SourceState::Degraded,
                format!("{}; {detail}", l.errors.join("; ")),
            )
        });
    }
    out
}

/// What the bounds on reading a server's logs left out, in words (empty when nothing).
fn logs_bounds(l: &LogsRead, dropped: u64) -> String {
    let mut out = String::new();
    if l.not_followed > 0 {
        out.push_str(&format!(
            "; {} older proxy logs not followed (at most {} runs a session, {} sessions a server)",
            l.not_followed,
            crate::model::MAX_RUNS_PER_SESSION,
            crate::model::MAX_PROXY_LOGS
        ));
    }
    if l.same_file > 0 {
        out.push_str(&format!(
            "; {} files not read again: the same file as one already read this tick (a hard link \
             or another server's log; each file is read once)",
            l.same_file
        ));
    }
    if l.held > 0 {
        out.push_str(&format!(
            "; {} files wait for the next tick: this user's logs already cost {} MiB this tick",
            l.held,
            crate::model::LOG_BYTES_PER_USER >> 20
        ));
    }
    if dropped > 0 {
        out.push_str(&format!(
            "; {dropped} session records dropped: this user's servers together keep at most {}",
            super::knowledge::MAX_RECORDS_PER_USER
        ));
    }
    out
}

/// How asking a server given by URL went.
pub(super) fn remote_health(url: &str, h: &Result<Health, HealthError>) -> SourceStatus {
    match h {
        Ok(h) => SourceStatus::new(
            SourceKind::Health,
            None,
            SourceState::Ok,
            format!("{url}: {} HTTP sessions", h.sessions.len()),
        ),
        Err(e) => SourceStatus::new(SourceKind::Health, None, SourceState::Failed, e.to_string()),
    }
}
