//! Every log of one server, tailed incrementally: its own logs (the per-pid CLI log,
//! `--log-file`, winston's rotated siblings) and the `proxy-<session>.log` of each session that
//! is live (a process carries its id) or that the server's log opened and has not closed.
//! Looking for winston's rotated siblings and listing a session's run dirs is I/O (each name
//! looked up without following a link, component by component), and new siblings and run dirs
//! are rare: both are looked for at most every [`PROXY_RELIST`], the files already found are
//! tailed every poll.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::{DateTime, Duration as ChronoDuration, Utc};

use super::discovery::ServerFiles;
use super::log_budget::LogBudget;
use super::logs::{LogTail, Waiting};
use crate::model::{
    LogEvent, LogEventKind, LogOrigin, LogsRead, SessionLogs, TailStats, MAX_PROXY_LOGS,
};

/// How often a session's run dirs are listed again for new proxy logs, and a server's rotated
/// logs looked for again.
pub const PROXY_RELIST: Duration = Duration::from_secs(5);

/// Lines older than the server's start by more than this belong to an earlier server that
/// wrote the same file (a shared `--log-file`, or the per-pid log of a reused pid).
const BEFORE_START: ChronoDuration = ChronoDuration::seconds(2);

/// The most sessions whose proxy logs are tailed for one server (a bound under a real
/// incident: a server that opened thousands of sessions and closed none).
const MAX_OPEN_SESSIONS: usize = 4096;

/// The logs of one server.
#[derive(Debug)]
pub struct ServerLogs {
    start: DateTime<Utc>,
    files: ServerFiles,
    tails: BTreeMap<PathBuf, LogTail>,
    /// The server's own logs as last looked for, and when.
    server_listed: Option<(Instant, Vec<PathBuf>)>,
    proxy_listed: BTreeMap<String, Instant>,
    /// Sessions the server's own log created and has not closed.
    open: BTreeSet<String>,
    /// Proxy logs past the caps at the last listing, by session.
    not_followed: BTreeMap<String, u32>,
    /// The server's user: its logs must belong to it.
    owner: Option<u32>,
}

impl ServerLogs {
    /// The logs of a server that started at `start`, run by `owner`.
    pub fn new(start: DateTime<Utc>, files: ServerFiles, owner: Option<u32>) -> Self {
        Self {
            start,
            files,
            tails: BTreeMap::new(),
            server_listed: None,
            proxy_listed: BTreeMap::new(),
            open: BTreeSet::new(),
            not_followed: BTreeMap::new(),
            owner,
        }
    }

    /// Reads what every log gained since the last poll. `live` are the sessions whose processes
    /// are running now.
    pub fn poll(
        &mut self,
        live: &BTreeSet<String>,
        now: Instant,
        budget: &mut LogBudget,
    ) -> (Vec<LogEvent>, LogsRead) {
        let mut wanted: Vec<(PathBuf, LogOrigin)> = self
            .server_files(now)
            .into_iter()
            .map(|f| (f, LogOrigin::Server))
            .collect();
        wanted.extend(
            self.proxy_files(live, now)
                .into_iter()
                .map(|f| (f, LogOrigin::Proxy)),
        );
        let mut events = Vec::new();
        let mut errors = Vec::new();
        for (path, origin) in wanted {
            let tail = self
                .tails
                .entry(path.clone())
                .or_insert_with(|| LogTail::new(path.clone(), origin).owned_by(self.owner));
            match tail.poll(budget) {
                Ok(evs) => events.extend(evs.into_iter().filter(|e| self.is_this_servers(e))),
                Err(_) if origin == LogOrigin::Server && self.is_sibling(&path) => {
                    // A rotated log found at the last look that is no longer a plain file of
                    // the server's user: as at a look, it is not there (looked for again next).
                    self.forget(&path);
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        for e in &events {
            self.track(e);
        }
        (events, self.read(errors))
    }

    /// The server's own logs: looked for again when due, else those found last time.
    fn server_files(&mut self, now: Instant) -> Vec<PathBuf> {
        match &self.server_listed {
            Some((at, files)) if now.duration_since(*at) < PROXY_RELIST => files.clone(),
            _ => {
                let files = self.files.server_logs(self.owner);
                self.server_listed = Some((now, files.clone()));
                files
            }
        }
    }

    /// Whether `path` is one of winston's rotated logs (not the CLI log or `--log-file`).
    fn is_sibling(&self, path: &std::path::Path) -> bool {
        let main = [&self.files.cli_log, &self.files.log_file];
        !main.iter().any(|m| m.as_deref() == Some(path))
    }

    /// Stops tailing a rotated log until a look finds it again.
    fn forget(&mut self, path: &std::path::Path) {
        if let Some((_, files)) = &mut self.server_listed {
            files.retain(|f| f != path);
        }
        self.tails.remove(path);
    }

    /// The proxy logs to tail: those already found, plus new run dirs of sessions due for a
    /// listing.
    fn proxy_files(&mut self, live: &BTreeSet<String>, now: Instant) -> Vec<PathBuf> {
        let sessions = followed_sessions(live, &self.open);
        let mut out = Vec::new();
        for sid in &sessions {
            let due = self
                .proxy_listed
                .get(sid)
                .is_none_or(|t| now.duration_since(*t) >= PROXY_RELIST);
            if due {
                self.proxy_listed.insert(sid.clone(), now);
                let (logs, left) = self.files.proxy_logs(sid, self.owner);
                self.not_followed.insert(sid.clone(), left);
                for log in logs {
                    // The DAP trace sits beside the worker's log.
                    out.push(log.with_file_name(format!("dap-trace-{sid}.ndjson")));
                    out.push(log);
                }
            } else {
                let names = [
                    format!("proxy-{sid}.log"),
                    format!("dap-trace-{sid}.ndjson"),
                ];
                out.extend(
                    self.tails
                        .keys()
                        .filter(|p| {
                            p.file_name()
                                .is_some_and(|n| names.iter().any(|x| n.to_string_lossy() == *x))
                        })
                        .cloned(),
                );
            }
        }
        self.proxy_listed.retain(|sid, _| sessions.contains(sid));
        self.not_followed.retain(|sid, _| sessions.contains(sid));
        let past = out.len().saturating_sub(2 * MAX_PROXY_LOGS);
        if past > 0 {
            out.truncate(2 * MAX_PROXY_LOGS);
            self.not_followed
                .insert(String::new(), u32::try_from(past / 2).unwrap_or(u32::MAX));
        } else {
            self.not_followed.remove("");
        }
        // Proxy tails of sessions no longer followed are dropped (their files stay on disk).
        let keep: BTreeSet<&PathBuf> = out.iter().collect();
        self.tails
            .retain(|p, t| t.origin() == LogOrigin::Server || keep.contains(p));
        out
    }

    /// What each followed session's newest run says now: its worker log's last line and its
    /// DAP trace.
    pub fn sessions(&self) -> Vec<SessionLogs> {
        let mut by: BTreeMap<String, SessionLogs> = BTreeMap::new();
        // Paths in order: a session's newest run dir (`run-<ms>`) comes last and wins.
        for (path, tail) in &self.tails {
            let Some(sid) = super::logs::session_of_file(path) else {
                continue;
            };
            let e = by.entry(sid.clone()).or_insert_with(|| SessionLogs {
                session_id: sid,
                last_line: None,
                trace: None,
            });
            if let Some(t) = tail.trace() {
                e.trace = Some(t);
            } else if let Some(l) = tail.last_line() {
                e.last_line = Some(l);
            }
        }
        by.into_values().collect()
    }

    fn is_this_servers(&self, e: &LogEvent) -> bool {
        e.at.is_none_or(|at| at >= self.start - BEFORE_START)
    }

    /// Which sessions the server's own log has open (for whose proxy logs to follow).
    fn track(&mut self, e: &LogEvent) {
        if e.origin != LogOrigin::Server {
            return;
        }
        match &e.kind {
            LogEventKind::DebugSessionCreated { session_id, .. }
                if self.open.len() < MAX_OPEN_SESSIONS =>
            {
                self.open.insert(session_id.clone());
            }
            LogEventKind::DebugSessionClosed { session_id }
            | LogEventKind::SessionStopped { session_id } => {
                self.open.remove(session_id);
            }
            _ => {}
        }
    }

    fn read(&self, errors: Vec<String>) -> LogsRead {
        let mut stats = TailStats::default();
        let mut server_lines = 0;
        let (mut same_file, mut held) = (0u32, 0u32);
        for t in self.tails.values() {
            match t.waiting() {
                Waiting::SameFile => same_file += 1,
                Waiting::Budget => held += 1,
                Waiting::No => {}
            }
            stats.lines += t.stats.lines;
            stats.events += t.stats.events;
            stats.skipped += t.stats.skipped;
            stats.oversized += t.stats.oversized;
            stats.restarts += t.stats.restarts;
            if t.origin() == LogOrigin::Server {
                server_lines += t.stats.lines;
            }
        }
        LogsRead {
            files: u32::try_from(self.tails.len()).unwrap_or(u32::MAX),
            stats,
            server_lines,
            errors,
            not_followed: self
                .not_followed
                .values()
                .fold(0u32, |a, n| a.saturating_add(*n)),
            same_file,
            held,
        }
    }
}

/// The sessions whose proxy logs are followed: those with live processes first (what runs
/// now), then those the server's log has open, the most recent ids last within each.
fn followed_sessions(live: &BTreeSet<String>, open: &BTreeSet<String>) -> Vec<String> {
    let mut out: Vec<String> = live.iter().cloned().collect();
    out.extend(open.iter().filter(|s| !live.contains(*s)).cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regression_a_hundred_runs_of_one_session_follow_only_the_newest_and_say_so() {
        let d = tempfile::tempdir().expect("dir");
        let sid = "many-runs";
        for ms in 1..=100u64 {
            let run = d.path().join(format!("sessions/{sid}/run-{ms}"));
            std::fs::create_dir_all(&run).expect("mkdir");
            std::fs::write(run.join(format!("proxy-{sid}.log")), format!("run {ms}\n"))
                .expect("write");
        }
        let files = ServerFiles {
            cli_log: None,
            log_file: None,
            sessions_dir: d.path().join("sessions"),
        };
        let uid = std::fs::metadata(d.path()).map(|m| {
            use std::os::unix::fs::MetadataExt;
            m.uid()
        });
        let uid = uid.ok();
        let mut logs = ServerLogs::new(Utc::now(), files, uid);
        let live: BTreeSet<String> = [sid.to_owned()].into();
        let (_, read) = logs.poll(&live, Instant::now(), &mut LogBudget::default());
        assert_eq!(read.not_followed, 92, "{read:?}");
        let followed: Vec<String> = logs
            .tails
            .keys()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .filter_map(|p| Some(p.parent()?.file_name()?.to_string_lossy().into_owned()))
            .collect();
        let mut want: Vec<String> = (93..=100).map(|n| format!("run-{n}")).collect();
        want.sort();
        let mut got = followed;
        got.sort();
        assert_eq!(got, want, "the newest eight runs, by number");
        // Near miss: a session with a few runs follows every one and says nothing.
        let (few, left) = logs.files.proxy_logs("absent", uid);
        assert!(few.is_empty() && left == 0);
    }

    #[test]
    fn a_rotated_log_is_looked_for_at_each_relisting_and_tailed_at_every_poll_after() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().expect("dir");
        let log = d.path().join("server.log");
        std::fs::write(&log, "").expect("write");
        let files = ServerFiles {
            cli_log: None,
            log_file: Some(log.clone()),
            sessions_dir: d.path().join("sessions"),
        };
        let uid = std::fs::metadata(d.path()).map(|m| m.uid()).ok();
        let mut logs = ServerLogs::new(Utc::now(), files, uid);
        let none = BTreeSet::new();
        let tailed = |logs: &ServerLogs| logs.tails.keys().cloned().collect::<Vec<_>>();
        let t0 = Instant::now();
        // A poll `after` the first; what it read.
        let poll_at = |logs: &mut ServerLogs, after: Duration| {
            logs.poll(&none, t0 + after, &mut LogBudget::default()).1
        };
        poll_at(&mut logs, Duration::ZERO);
        assert_eq!(tailed(&logs), std::slice::from_ref(&log));
        // winston rotated: `server1.log` appears. Not looked for before the relisting is due…
        let rotated = d.path().join("server1.log");
        std::fs::write(&rotated, "").expect("write");
        poll_at(&mut logs, Duration::from_secs(1));
        assert_eq!(tailed(&logs), std::slice::from_ref(&log));
        // …found then, and tailed at every poll after it.
        poll_at(&mut logs, PROXY_RELIST);
        assert_eq!(tailed(&logs), [log.clone(), rotated.clone()]);
        let again = logs.server_files(t0 + PROXY_RELIST + Duration::from_secs(1));
        assert_eq!(again, [log.clone(), rotated.clone()]);
        // Between two looks the rotated log becomes a link: dropped without an error, as a
        // look would have passed it by. Near miss: the server's own log as a link is one.
        std::fs::remove_file(&rotated).expect("rm");
        std::os::unix::fs::symlink("/etc/hostname", &rotated).expect("link");
        let read = poll_at(&mut logs, PROXY_RELIST + Duration::from_secs(2));
        assert!(read.errors.is_empty(), "{:?}", read.errors);
        assert_eq!(tailed(&logs), std::slice::from_ref(&log));
        std::fs::remove_file(&log).expect("rm");
        std::os::unix::fs::symlink("/etc/hostname", &log).expect("link");
        let read = poll_at(&mut logs, PROXY_RELIST + Duration::from_secs(3));
        assert_eq!(read.errors.len(), 1, "{:?}", read.errors);
    }
}
