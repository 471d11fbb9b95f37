//! mcp-debugger's JSON-lines logs: an incremental tail per file and a parser that turns the lines
//! that matter (mcp-debugger.md §2) into typed [`LogEvent`]s.
//!
//! The logs are the only server-side record that names debug sessions. They are also untrusted
//! input: a line may be huge, truncated, interleaved with another write, or not JSON at all.
//! Nothing here panics on a line; unknown and oversized lines are skipped and counted.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use super::dap_trace::{TraceReader, HEAD};
use super::log_budget::{Allowance, LogBudget};
use crate::error::{Error, Result};
use crate::model::{
    parse_pid, session_id, LogEvent, LogEventKind, LogOrigin, SignOfLife, TailStats, TraceState,
};

/// Lines longer than this are skipped (and counted), never buffered whole.
pub const MAX_LINE: usize = 64 * 1024;
/// The most bytes read from one file per poll: a huge backlog is caught up over several ticks.
pub const MAX_READ_PER_POLL: usize = 4 * 1024 * 1024;

/// Per-file parser state: the two lines that carry no session id are tied to the preceding
/// `Spawning proxy…` / `Stopping proxy…` line.
#[derive(Debug, Default, Clone)]
pub struct LineParser {
    spawning: Option<String>,
    stopping: Option<String>,
    /// The session a `proxy-<id>.log` file belongs to.
    file_session: Option<String>,
    /// The newest line's time and words (a session's last sign of life).
    last: Option<(Option<DateTime<Utc>>, String)>,
    /// `last` changed since the tail looked.
    touched: bool,
}

impl LineParser {
    /// A parser for lines of `path` (a `proxy-<id>.log` gives every line its session).
    pub fn for_file(path: &Path) -> Self {
        let file_session = session_of_file(path).filter(|_| !is_trace(path));
        Self {
            file_session,
            ..Self::default()
        }
    }

    /// Parses one line. `None` for lines that carry nothing debugtop tracks.
    pub fn parse(&mut self, line: &str) -> Option<(Option<DateTime<Utc>>, LogEventKind)> {
        let v = json_object(line)?;
        let message = v.get("message")?.as_str()?;
        let at = v.get("timestamp").and_then(timestamp);
        if self.file_session.is_some() {
            self.last = Some((at, bounded(message)));
            self.touched = true;
        }
        let kind = self.message(message, &v)?;
        Some((at, kind))
    }

    /// The first parser that recognises the message wins.
    fn message(&mut self, m: &str, v: &Value) -> Option<LogEventKind> {
        structured(m, v)
            .or_else(|| http_line(m))
            .or_else(|| self.worker_line(m))
            .or_else(|| janitor_line(m))
            .or_else(|| session_line(m))
            .or_else(|| self.proxy_line(m))
            .or_else(|| reaper_line(m))
            .or_else(|| self.adapter_line(m, v))
            .or_else(|| self.stage_line(m))
    }

    /// A step of the session's start, in its worker's log.
    fn stage_line(&self, m: &str) -> Option<LogEventKind> {
        let session_id = self.file_session.clone()?;
        Some(LogEventKind::Stage {
            session_id: Some(session_id),
            stage: super::stages::stage(m)?,
        })
    }

    /// The ProxyManager's lines; two of them carry no session id and are tied to the
    /// preceding `Spawning proxy…` / `Stopping proxy…` line.
    fn proxy_line(&mut self, m: &str) -> Option<LogEventKind> {
        if let Some(rest) = m.strip_prefix("[ProxyManager] Spawning proxy for session ") {
            self.spawning = rest.split_once('.').and_then(|(id, _)| session_id(id));
            return None;
        }
        if let Some(rest) = m.strip_prefix("[ProxyManager] Proxy spawned with PID: ") {
            return Some(LogEventKind::ProxySpawned {
                pid: parse_pid(rest)?,
                session_id: self.spawning.take(),
            });
        }
        if let Some(id) = m.strip_prefix("[ProxyManager] Stopping proxy for session ") {
            let id = session_id(id.trim())?;
            self.stopping = Some(id.clone());
            return Some(LogEventKind::ProxyStopping { session_id: id });
        }
        if m.starts_with("[ProxyManager] Timeout waiting for proxy exit. Force killing.") {
            return Some(LogEventKind::ProxyForceKilled {
                session_id: self.stopping.clone(),
            });
        }
        if let Some(rest) = m.strip_prefix("[ProxyManager] Proxy exited. Code: ") {
            let (code, signal) = rest.split_once(", Signal: ")?;
            return Some(LogEventKind::ProxyExited {
                code: code.trim().parse().ok(),
                signal: signal_name(signal),
                session_id: self.stopping.take(),
            });
        }
        worker_exit_line(m)
    }

    /// The worker saying it is done, in its own log.
    fn worker_line(&self, m: &str) -> Option<LogEventKind> {
        let done = [
            "[Worker] Shutdown sequence completed.",
            "[Worker] Already shutting down or terminated.",
        ];
        let said = done
            .iter()
            .find(|d| m.starts_with(**d))
            .map(|d| (*d).to_owned())
            .or_else(|| {
                (m.starts_with("[Worker DRY_RUN]") && m.contains("TERMINATED")).then(|| bounded(m))
            })?;
        Some(LogEventKind::WorkerFinished {
            session_id: self.file_session.clone(),
            said,
        })
    }

    /// `[AdapterManager] Spawned adapter process PID: <pid> (…)` in a proxy log.
    fn adapter_line(&self, m: &str, v: &Value) -> Option<LogEventKind> {
        let rest = m.strip_prefix("[AdapterManager] Spawned adapter process PID: ")?;
        let pid = parse_pid(rest.split(' ').next()?)?;
        let ns_session = v
            .get("namespace")
            .and_then(Value::as_str)
            .and_then(|n| n.strip_prefix("dap-proxy:"))
            .and_then(session_id);
        Some(LogEventKind::AdapterSpawned {
            pid,
            session_id: ns_session.or_else(|| self.file_session.clone()),
        })
    }
}

/// Structured lines: their message is a fixed tag and the fields carry the data.
fn structured(m: &str, v: &Value) -> Option<LogEventKind> {
    let field = |k: &str| v.get(k).and_then(Value::as_str).and_then(session_id);
    match m {
        "session:created" => Some(LogEventKind::DebugSessionCreated {
            session_id: field("sessionId")?,
            name: v.get("sessionName").and_then(Value::as_str).map(bounded),
            language: v.get("language").and_then(Value::as_str).map(bounded),
        }),
        "session:closed" => Some(LogEventKind::DebugSessionClosed {
            session_id: field("sessionId")?,
        }),
        _ => None,
    }
}

/// The CLI's HTTP session lines.
fn http_line(m: &str) -> Option<LogEventKind> {
    if let Some(id) = m.strip_prefix("HTTP session initialized: ") {
        return Some(LogEventKind::HttpSessionInitialized {
            http_session: session_id(id.trim())?,
        });
    }
    if let Some(id) = m.strip_prefix("HTTP session closed: ") {
        return Some(LogEventKind::HttpSessionClosed {
            http_session: session_id(id.trim())?,
        });
    }
    if let Some(rest) = m.strip_prefix("Reaping HTTP session ") {
        let (id, rest) = rest.split_once(':')?;
        let secs = rest
            .split_once("closed ")
            .and_then(|(_, r)| r.split_once('s'))
            .and_then(|(n, _)| n.trim().parse().ok());
        return Some(LogEventKind::HttpSessionStreamLost {
            http_session: session_id(id.trim())?,
            secs,
            holding: holding(rest),
        });
    }
    let rest = m.strip_prefix("Reaping stale HTTP session ")?;
    let (id, rest) = rest.split_once(' ')?;
    let idle_secs = rest
        .strip_prefix("(idle ")
        .and_then(|r| r.split_once('s'))
        .and_then(|(n, _)| n.parse().ok());
    Some(LogEventKind::HttpSessionReaped {
        http_session: session_id(id)?,
        idle_secs,
        holding: holding(rest),
    })
}

/// The debug session ids of a `; holding debug session(s) <id> (<lang>, <state>), …` tail.
fn holding(rest: &str) -> Vec<String> {
    let Some((_, list)) = rest.split_once("holding debug session(s) ") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut word = String::new();
    for c in list.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' | ' ' | '.' if depth == 0 => {
                if let Some(id) = session_id(word.trim()) {
                    out.push(id);
                }
                word.clear();
            }
            _ if depth == 0 => word.push(c),
            _ => {}
        }
        if out.len() >= 64 {
            break;
        }
    }
    if let Some(id) = session_id(word.trim()) {
        out.push(id);
    }
    out
}

/// `[startup-janitor] Reaped N orphan proxy worker(s) from prior runs` (0.24.2: `[startup]`).
fn janitor_line(m: &str) -> Option<LogEventKind> {
    let rest = m
        .strip_prefix("[startup-janitor] Reaped ")
        .or_else(|| m.strip_prefix("[startup] Reaped "))?;
    let (n, what) = rest.split_once(' ')?;
    Some(LogEventKind::StartupReaped {
        count: n.parse().ok()?,
        what: bounded(what.split(" from ").next().unwrap_or(what)),
    })
}

/// The SessionManager's lines: created, state changes, stopped, closing.
fn session_line(m: &str) -> Option<LogEventKind> {
    if let Some(rest) = m.strip_prefix("[SessionManager] Created new session: ") {
        let (name, rest) = rest.rsplit_once(" (ID: ")?;
        let (id, _) = rest.split_once(')')?;
        return Some(LogEventKind::DebugSessionCreated {
            session_id: session_id(id)?,
            name: Some(bounded(name)),
            language: None,
        });
    }
    if let Some(rest) = m.strip_prefix("[SM _updateSessionState ") {
        let (id, rest) = rest.split_once("] State change: ")?;
        let (from, to) = rest.split_once(" -> ")?;
        return Some(LogEventKind::StateChanged {
            session_id: session_id(id)?,
            from: bounded(from.trim()),
            to: bounded(to.trim()),
        });
    }
    if let Some(e) = start_failed_line(m) {
        return Some(e);
    }
    if let Some(id) = m
        .strip_prefix("Session ")
        .and_then(|r| r.strip_suffix(" marked as STOPPED/TERMINATED."))
    {
        return Some(LogEventKind::SessionStopped {
            session_id: session_id(id)?,
        });
    }
    if let Some(rest) = m.strip_prefix("Closing debug session: ") {
        let (id, rest) = rest.split_once(". Active proxy: ")?;
        return Some(LogEventKind::DebugSessionClosing {
            session_id: session_id(id)?,
            active_proxy: rest.trim().starts_with("yes"),
        });
    }
    let rest = m.strip_prefix("Closing all debug sessions (")?;
    let n = rest.split_once(' ')?.0.parse().ok()?;
    Some(LogEventKind::ClosingAll { active: n })
}

/// The server giving up on a session's start (launch or attach).
fn start_failed_line(m: &str) -> Option<LogEventKind> {
    let rest = m
        .strip_prefix("[SessionManager] Detailed error in startDebugging for session ")
        .or_else(|| m.strip_prefix("[SessionManager] Failed to attach to process for session "))?;
    let (id, reason) = rest.split_once(':').unwrap_or((rest, ""));
    Some(LogEventKind::StartFailed {
        session_id: session_id(id.trim())?,
        reason: bounded(reason.trim().lines().next().unwrap_or("").trim()),
    })
}

/// `[ProxyManager <id>] Exit: code=…, signal=…, expected=…`: a worker died under a session.
fn worker_exit_line(m: &str) -> Option<LogEventKind> {
    let rest = m.strip_prefix("[ProxyManager ")?;
    let (id, rest) = rest.split_once("] Exit: code=")?;
    let (code, rest) = rest.split_once(", signal=")?;
    let (signal, expected) = rest.split_once(", expected=")?;
    Some(LogEventKind::WorkerExited {
        session_id: session_id(id)?,
        code: code.trim().parse().ok(),
        signal: signal_name(signal),
        expected: match expected.trim() {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        },
    })
}

/// `[proxy-reaper] Killed orphan proxy worker pid=<p> owner_pid=<o> session=<id>`.
fn reaper_line(m: &str) -> Option<LogEventKind> {
    let rest = m.strip_prefix("[proxy-reaper] Killed orphan proxy worker ")?;
    let mut pid = None;
    let mut owner = None;
    let mut sid = None;
    for kv in rest.split_whitespace() {
        match kv.split_once('=') {
            Some(("pid", p)) => pid = parse_pid(p),
            Some(("owner_pid", p)) => owner = parse_pid(p),
            Some(("session", s)) => sid = session_id(s),
            _ => {}
        }
    }
    Some(LogEventKind::ReaperKilledOrphan {
        pid: pid?,
        owner_pid: owner,
        session_id: sid,
    })
}

/// The JSON object of a line. Concurrent writers sometimes interleave two records on one line
/// (seen in 0.24.2's proxy logs: `{"args":["/p/{"level":…}`); then the last complete
/// `{"level":` record on the line is used.
fn json_object(line: &str) -> Option<Value> {
    let line = line.trim();
    if let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(line) {
        return Some(v);
    }
    line.match_indices("{\"level\":")
        .skip(usize::from(line.starts_with("{\"level\":")))
        .find_map(|(i, _)| match serde_json::from_str::<Value>(&line[i..]) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => None,
        })
}

/// Both timestamp forms: an ISO-8601 string, or epoch milliseconds.
fn timestamp(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s)
            .ok()
            .map(|d| d.with_timezone(&Utc)),
        Value::Number(n) => n
            .as_i64()
            .and_then(|ms| Utc.timestamp_millis_opt(ms).single()),
        _ => None,
    }
}

fn signal_name(s: &str) -> Option<String> {
    let s = s.trim();
    // JavaScript's two words for "none" are not signals.
    (s != "null"
        && s != "undefined"
        && !s.is_empty()
        && s.len() < 16
        && s.bytes().all(|b| b.is_ascii_alphanumeric()))
    .then(|| s.to_owned())
}

/// Free text from a log is kept short.
fn bounded(s: &str) -> String {
    crate::redact::bounded(s, 200)
}

/// How many bytes before the offset are remembered to recognise the same file content.
const MARK_LEN: usize = 64;

/// An incremental reader of one JSON-lines file: keeps its offset, reads only appended bytes,
/// holds back a partial last line, and starts over when the file is replaced (another inode),
/// truncated (shorter than the offset), or truncated and rewritten past the offset (the bytes
/// just before the offset are no longer the ones read there).
#[derive(Debug)]
pub struct LogTail {
    path: PathBuf,
    origin: LogOrigin,
    offset: u64,
    identity: Option<(u64, u64)>,
    /// The last bytes consumed (up to [`MARK_LEN`]), ending at `offset`.
    mark: Vec<u8>,
    pending: Vec<u8>,
    /// Skipping the rest of an oversized line.
    discarding: bool,
    line_no: u64,
    parser: LineParser,
    /// For a DAP trace: its lines are DAP messages, not log lines.
    trace: Option<TraceReader>,
    /// The head of the oversized line being skipped (a trace reads its header from it).
    head: Vec<u8>,
    /// The line number of the newest parsed line.
    last_line_no: u64,
    /// Counters.
    pub stats: TailStats,
    /// The user the file must belong to (the server's).
    owner: Option<u32>,
    /// Why the last poll read nothing it could have.
    waiting: Waiting,
}

/// Why a poll read nothing of a file that has more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Waiting {
    /// It did not.
    #[default]
    No,
    /// The same file was read this tick under another name (a hard link, another server's log).
    SameFile,
    /// Its user's budget for this tick was spent: it is read next tick.
    Budget,
}

/// What tells two names of one file apart: its device and inode where the system has them,
/// else its name (no file is then read twice under one name, nor deduplicated under two).
fn dedup_key(identity: (u64, u64), path: &Path) -> (u64, u64) {
    if cfg!(unix) {
        identity
    } else {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut h);
        (u64::MAX, h.finish())
    }
}

/// Why another user's log cannot be read, in words.
fn denied(path: &Path) -> String {
    let me = crate::os::my_uid().map_or("?".to_owned(), |u| u.to_string());
    match crate::os::path_owner(path) {
        Some(owner) => format!(
            "permission denied: it belongs to uid {owner} and debugtop runs as uid {me}; run \
             debugtop as that user (or with sudo) to read it",
        ),
        None => format!("permission denied (debugtop runs as uid {me})"),
    }
}

impl LogTail {
    /// Reads the file only while it belongs to `uid` (the server whose argv named it), root
    /// included: a server's argv can point debugtop — perhaps running as root — only at its
    /// own user's files, and a root server logging into a folder anyone may write to (`/tmp`)
    /// does not make a file another user planted there (a proxy log of a session) its own.
    pub fn owned_by(mut self, uid: Option<u32>) -> Self {
        self.owner = uid;
        self
    }

    /// A tail of `path` from its beginning. The file need not exist yet.
    pub fn new(path: impl Into<PathBuf>, origin: LogOrigin) -> Self {
        let path = path.into();
        let parser = LineParser::for_file(&path);
        let trace = is_trace(&path).then(TraceReader::default);
        Self {
            trace,
            head: Vec::new(),
            last_line_no: 0,
            origin,
            path,
            offset: 0,
            identity: None,
            mark: Vec::new(),
            pending: Vec::new(),
            discarding: false,
            line_no: 0,
            parser,
            stats: TailStats::default(),
            owner: None,
            waiting: Waiting::No,
        }
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Which kind of log it is.
    pub fn origin(&self) -> LogOrigin {
        self.origin
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The newest line of a worker's log, as a sign of its session's life.
    pub fn last_line(&self) -> Option<SignOfLife> {
        let (at, text) = self.parser.last.clone()?;
        Some(SignOfLife {
            at: at?,
            file: self.path.to_string_lossy().into_owned(),
            line: self.last_line_no,
            text,
        })
    }

    /// For a DAP trace: the requests waiting now.
    pub fn trace(&self) -> Option<TraceState> {
        let file = self.path.to_string_lossy();
        self.trace.as_ref().map(|t| t.state(&file))
    }

    /// Reads what was appended since the last poll. A missing file gives no events (it may
    /// appear later).
    pub fn poll(&mut self, budget: &mut LogBudget) -> Result<Vec<LogEvent>> {
        let path = self.path.clone();
        let io = |source: std::io::Error| Error::Log {
            path: path.clone(),
            detail: source.to_string(),
        };
        self.waiting = Waiting::No;
        let Some((mut file, meta)) = self.open_checked()? else {
            return Ok(Vec::new());
        };
        let identity = file_identity(&meta);
        let allowed = match budget.allow(&self.path, dedup_key(identity, &self.path), self.owner) {
            Allowance::Bytes(n) => n,
            Allowance::Spent => {
                self.waiting = Waiting::Budget;
                return Ok(Vec::new());
            }
            Allowance::ReadAs(_) => {
                self.waiting = Waiting::SameFile;
                return Ok(Vec::new());
            }
        };
        let replaced = self.identity.is_some_and(|id| id != identity);
        let truncated = meta.len() < self.offset;
        let rewritten = !replaced
            && !truncated
            && meta.len() > self.offset
            && !self.mark_still_there(&mut file).map_err(io)?;
        if replaced || truncated || rewritten {
            // The content the offset pointed into is gone: the file starts again at 0.
            self.restart();
        }
        self.identity = Some(identity);
        if meta.len() == self.offset {
            return Ok(Vec::new());
        }
        file.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        let mut buf = Vec::new();
        let n = file
            .take(allowed.min(MAX_READ_PER_POLL as u64))
            .read_to_end(&mut buf)
            .map_err(io)?;
        budget.spend(self.owner, n as u64);
        self.offset += n as u64;
        self.remember_mark(&buf);
        Ok(self.feed(&buf))
    }

    /// Why the last poll read nothing it could have.
    pub fn waiting(&self) -> Waiting {
        self.waiting
    }

    /// Opens the log as untrusted input: checked before it is opened — no symbolic link and no
    /// `..` on the way, a regular file (a device is never opened), of the server's user.
    /// `None` when it does not exist (yet).
    fn open_checked(&self) -> Result<Option<(std::fs::File, std::fs::Metadata)>> {
        use crate::safe_fs::{Owner, Refused};
        let path = self.path.clone();
        let fail = |detail: String| Error::Log {
            path: path.clone(),
            detail,
        };
        let file = match crate::safe_fs::open_as(&path, Owner::is(self.owner)) {
            Ok(f) => f,
            Err(Refused::Missing) => return Ok(None),
            Err(Refused::Owner { got, want }) => {
                return Err(fail(format!(
                    "owned by uid {got}, not by the server's user (uid {want}): not read (a \
                     server's command line can point debugtop only at its own user's files)"
                )))
            }
            Err(Refused::Io(e)) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                return Err(fail(denied(&path)))
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        let meta = file.metadata().map_err(|e| fail(e.to_string()))?;
        Ok(Some((file, meta)))
    }

    fn restart(&mut self) {
        self.offset = 0;
        self.line_no = 0;
        self.mark.clear();
        self.pending.clear();
        self.discarding = false;
        self.parser = LineParser::for_file(&self.path);
        self.trace = is_trace(&self.path).then(TraceReader::default);
        self.head.clear();
        self.stats.restarts += 1;
    }

    /// Whether the bytes just before the offset are still the ones consumed there.
    fn mark_still_there(&self, file: &mut File) -> std::io::Result<bool> {
        if self.mark.is_empty() {
            return Ok(true);
        }
        let start = self.offset - self.mark.len() as u64;
        file.seek(SeekFrom::Start(start))?;
        let mut now = vec![0u8; self.mark.len()];
        file.read_exact(&mut now)?;
        Ok(now == self.mark)
    }

    fn remember_mark(&mut self, consumed: &[u8]) {
        if consumed.len() >= MARK_LEN {
            self.mark.clear();
            self.mark
                .extend_from_slice(&consumed[consumed.len() - MARK_LEN..]);
        } else {
            self.mark.extend_from_slice(consumed);
            let extra = self.mark.len().saturating_sub(MARK_LEN);
            self.mark.drain(..extra);
        }
    }

    /// One complete line: a DAP trace's message folded in, or a log line parsed (an event, or
    /// only a sign of life); an oversized one skipped (a trace reads its head).
    fn complete(&mut self, line: &[u8], file: &str) -> Option<LogEvent> {
        if line.len() > MAX_LINE {
            self.stats.oversized += 1;
            if let Some(t) = &mut self.trace {
                t.head(&line[..HEAD]);
            }
            return None;
        }
        self.stats.lines += 1;
        if let Some(t) = &mut self.trace {
            if let Ok(l) = std::str::from_utf8(line) {
                t.line(l);
            }
            return None;
        }
        let parsed = std::str::from_utf8(line)
            .ok()
            .and_then(|l| self.parser.parse(l));
        if std::mem::take(&mut self.parser.touched) {
            self.last_line_no = self.line_no;
        }
        let Some((at, kind)) = parsed else {
            self.stats.skipped += 1;
            return None;
        };
        self.stats.events += 1;
        Some(LogEvent {
            at,
            file: file.to_owned(),
            origin: self.origin,
            line: self.line_no,
            kind,
        })
    }

    /// Splits bytes into lines and parses the complete ones.
    fn feed(&mut self, bytes: &[u8]) -> Vec<LogEvent> {
        let mut out = Vec::new();
        let file = self.path.to_string_lossy().into_owned();
        let mut rest = bytes;
        while let Some(nl) = rest.iter().position(|b| *b == b'\n') {
            let (head, tail) = rest.split_at(nl);
            rest = &tail[1..];
            self.line_no += 1;
            if self.discarding {
                self.discarding = false;
                if let Some(t) = &mut self.trace {
                    t.head(&self.head);
                }
                self.head.clear();
                continue;
            }
            let line: std::borrow::Cow<'_, [u8]> = if self.pending.is_empty() {
                head.into()
            } else {
                let mut l = std::mem::take(&mut self.pending);
                l.extend_from_slice(head);
                l.into()
            };
            out.extend(self.complete(&line, &file));
        }
        if !self.discarding {
            self.pending.extend_from_slice(rest);
            if self.pending.len() > MAX_LINE {
                // Do not buffer a giant line: drop it and skip to its end.
                self.head = self.pending[..HEAD].to_vec();
                self.pending.clear();
                self.discarding = true;
                self.stats.oversized += 1;
            }
        }
        out
    }
}

/// The session a worker's file belongs to, by its name: `proxy-<id>.log` (its log) or
/// `dap-trace-<id>.ndjson` (its DAP trace).
pub fn session_of_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    name.strip_prefix("proxy-")
        .and_then(|n| n.strip_suffix(".log"))
        .or_else(|| {
            name.strip_prefix("dap-trace-")
                .and_then(|n| n.strip_suffix(".ndjson"))
        })
        .and_then(session_id)
}

/// `dap-trace-<session>.ndjson`.
fn is_trace(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("dap-trace-") && n.ends_with(".ndjson"))
}

#[cfg(unix)]
fn file_identity(m: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.dev(), m.ino())
}

#[cfg(not(unix))]
fn file_identity(m: &std::fs::Metadata) -> (u64, u64) {
    (
        0,
        m.created()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs()),
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const SERVER: &str = include_str!("testdata/server-0.24.2.log");
    const CLI: &str = include_str!("testdata/cli-0.24.2.log");
    const PROXY: &str = include_str!("testdata/proxy-0.24.2.log");
    const INTERLEAVED: &str = include_str!("testdata/interleaved-0.24.2.log");
    const SID: &str = "cb314c2b-73ad-458b-be4c-b345061baca9";

    fn parse_all(text: &str, file: &str) -> Vec<LogEventKind> {
        let mut p = LineParser::for_file(Path::new(file));
        text.lines()
            .filter_map(|l| p.parse(l))
            .map(|(_, k)| k)
            .collect()
    }

    #[test]
    fn real_server_log_lifecycle() {
        let ev = parse_all(SERVER, "server.log");
        let sid = SID.to_owned();
        assert!(ev.contains(&LogEventKind::DebugSessionCreated {
            session_id: sid.clone(),
            name: Some("m1".into()),
            language: None
        }));
        assert!(ev.contains(&LogEventKind::DebugSessionCreated {
            session_id: sid.clone(),
            name: Some("m1".into()),
            language: Some("mock".into())
        }));
        assert!(ev.contains(&LogEventKind::ProxySpawned {
            pid: 8172,
            session_id: Some(sid.clone())
        }));
        assert!(ev.contains(&LogEventKind::StateChanged {
            session_id: sid.clone(),
            from: "initializing".into(),
            to: "paused".into()
        }));
        assert!(ev.contains(&LogEventKind::DebugSessionClosing {
            session_id: sid.clone(),
            active_proxy: true
        }));
        assert!(ev.contains(&LogEventKind::ProxyStopping {
            session_id: sid.clone()
        }));
        assert!(ev.contains(&LogEventKind::ProxyExited {
            code: Some(0),
            signal: None,
            session_id: Some(sid.clone())
        }));
        assert!(ev.contains(&LogEventKind::SessionStopped {
            session_id: sid.clone()
        }));
        assert!(ev.contains(&LogEventKind::DebugSessionClosed { session_id: sid }));
    }

    #[test]
    fn real_cli_log_http_sessions() {
        let ev = parse_all(CLI, "debug-mcp-server-8116.log");
        let h = "75944ee0-fce7-449e-8c55-4f274deae49c".to_owned();
        assert_eq!(
            ev,
            [
                LogEventKind::HttpSessionInitialized {
                    http_session: h.clone()
                },
                LogEventKind::HttpSessionClosed { http_session: h }
            ]
        );
    }

    /// A real 0.24.2 worker log of a mock session started with `stopOnEntry`.
    const PROXY_MOCK: &str = include_str!("testdata/proxy-mock.log");
    const MOCK_SID: &str = "753b115d-6c16-409a-84b1-333be3a07051";

    fn stages(text: &str, file: &str) -> Vec<String> {
        parse_all(text, file)
            .into_iter()
            .filter_map(|k| match k {
                LogEventKind::Stage { stage, .. } => Some(stage.to_string()),
                LogEventKind::AdapterSpawned { pid, .. } => Some(format!("adapter {pid} spawned")),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn every_stage_of_a_real_start_in_order() {
        let file = format!("/l/sessions/{MOCK_SID}/run-1/proxy-{MOCK_SID}.log");
        assert_eq!(
            stages(PROXY_MOCK, &file),
            [
                "adapter 971 spawned",
                "connect attempt 1/60 to 127.0.0.1:44045",
                "connected",
                "initialize sent",
                "initialize answered",
                "launch sent",
                "launch answered",
                "configurationDone sent",
                "configurationDone answered",
                "stopped (entry)",
            ]
        );
        // Not a worker's log: no stages (the server's own log never has these lines).
        assert!(!parse_all(PROXY_MOCK, "/l/server.log")
            .iter()
            .any(|k| matches!(k, LogEventKind::Stage { .. })));
    }

    /// A real 0.24.2 worker log of a javascript (js-debug) session: its start goes through the
    /// worker's command queue, with other lines.
    const PROXY_JS: &str = include_str!("testdata/proxy-js.log");

    #[test]
    fn every_stage_of_a_real_js_debug_start() {
        let sid = "23ea8330-42b9-45c0-b1b9-19443834dc18";
        let file = format!("/l/sessions/{sid}/run-1/proxy-{sid}.log");
        assert_eq!(
            stages(PROXY_JS, &file),
            [
                "adapter 7546 spawned",
                "connect attempt 1/60 to 127.0.0.1:42779",
                "connected",
                "initialize sent",
                "initialize answered",
                "configurationDone sent",
                "configurationDone answered",
                "launch sent",
                "launch answered",
                "stopped (entry)",
            ]
        );
    }

    #[test]
    fn stage_lines_cut_interleaved_or_reworded_are_skipped() {
        let file = format!("/l/sessions/{MOCK_SID}/run-1/proxy-{MOCK_SID}.log");
        let lines: Vec<&str> = PROXY_MOCK.lines().collect();
        // Cut in the middle (the writer died mid-line): skipped; two records on one line: the
        // whole one is read.
        let cut = &lines[14][..lines[14].len() / 2];
        let joined = format!("{}{}", &lines[16][..40], lines[18]);
        let retry = line("[ConnectionManager] Attempting DAP client connect (attempt x/60) to h:1");
        let failed = line("[ConnectionManager] Failed to connect DAP client after 60 attempts. Last error: ECONNREFUSED");
        let text = [cut, &joined, &retry, &failed].join("\n");
        assert_eq!(
            stages(&text, &file),
            ["initialize sent", "gave up connecting after 60 attempts"]
        );
    }

    #[test]
    fn a_workers_last_line_is_its_sign_of_life() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("proxy-{MOCK_SID}.log"));
        std::fs::write(&path, PROXY_MOCK).unwrap();
        let mut t = LogTail::new(&path, LogOrigin::Proxy).owned_by(crate::os::my_uid());
        t.poll(&mut LogBudget::default()).unwrap();
        let s = t.last_line().unwrap();
        assert_eq!(s.line, 39);
        assert!(
            s.text
                .starts_with("[Worker] DAP event: stopped reason=entry"),
            "{s:?}"
        );
        assert_eq!(s.at.to_rfc3339(), "2026-12-01T18:13:14.048+00:00");
    }

    #[test]
    fn a_dap_trace_is_read_as_dap_messages_and_a_huge_answer_by_its_head() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("dap-trace-{MOCK_SID}.ndjson"));
        let big = format!(
            r#"{{"ts":"2026-12-01T18:13:15.000Z","direction":"in","payload":{{"seq":30,"type":"response","request_seq":12,"command":"variables","success":true,"body":{{"variables":"{}"}}}}}}"#,
            "x".repeat(MAX_LINE + 10)
        );
        let ask = r#"{"ts":"2026-12-01T18:13:14.900Z","direction":"out","payload":{"seq":12,"type":"request","command":"variables","arguments":{}}}"#;
        std::fs::write(&path, format!("{ask}\n")).unwrap();
        let mut t = LogTail::new(&path, LogOrigin::Proxy).owned_by(crate::os::my_uid());
        assert!(
            t.poll(&mut LogBudget::default()).unwrap().is_empty(),
            "no log events from a trace"
        );
        assert_eq!(t.trace().unwrap().pending.len(), 1);
        // The answer arrives in two writes, longer than a log line may be.
        let (a, b) = big.split_at(big.len() / 2);
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(a.as_bytes())
            .unwrap();
        t.poll(&mut LogBudget::default()).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(format!("{b}\n").as_bytes())
            .unwrap();
        t.poll(&mut LogBudget::default()).unwrap();
        let s = t.trace().unwrap();
        assert!(s.pending.is_empty(), "{s:?}");
        assert_eq!(s.messages, 2);
    }

    #[test]
    fn real_proxy_log_adapter_pid_and_interleaved_write() {
        let file = format!("/l/sessions/{SID}/run-1/proxy-{SID}.log");
        let ev = parse_all(PROXY, &file);
        assert_eq!(
            ev,
            [LogEventKind::AdapterSpawned {
                pid: 8183,
                session_id: Some(SID.into())
            }]
        );
        // Two records interleaved on one line by concurrent writers (seen in the real log).
        let ev = parse_all(INTERLEAVED, &file);
        assert_eq!(
            ev,
            [LogEventKind::AdapterSpawned {
                pid: 8183,
                session_id: Some(SID.into())
            }]
        );
    }

    #[test]
    fn both_timestamp_forms() {
        let mut p = LineParser::default();
        let iso = r#"{"level":"info","message":"HTTP session closed: a-1","timestamp":"2026-11-30T17:30:12.449Z"}"#;
        let ms = r#"{"level":"info","message":"session:closed","sessionId":"a-1","timestamp":1796059798280}"#;
        let (a, _) = p.parse(iso).unwrap();
        let (b, _) = p.parse(ms).unwrap();
        assert_eq!(a.unwrap().timestamp_millis(), 1_796_059_812_449);
        assert_eq!(b.unwrap().timestamp_millis(), 1_796_059_798_280);
    }

    #[test]
    fn failure_shapes_from_the_message_templates() {
        // Templates from 0.24.2's cli.mjs (mcp-debugger.md §2); these shapes were seen live.
        let lines = [
            r#"{"level":"warn","message":"Reaping stale HTTP session h-1 (idle 41s, no open streams).","timestamp":"2026-11-30T10:00:00Z"}"#,
            r#"{"level":"info","message":"[ProxyManager] Stopping proxy for session s-1","timestamp":"2026-11-30T10:00:00Z"}"#,
            r#"{"level":"warn","message":"[ProxyManager] Timeout waiting for proxy exit. Force killing.","timestamp":"2026-11-30T10:00:05Z"}"#,
            r#"{"level":"info","message":"[ProxyManager] Proxy exited. Code: null, Signal: SIGKILL","timestamp":"2026-11-30T10:00:05Z"}"#,
            r#"{"level":"info","message":"[ProxyManager s-2] Exit: code=null, signal=SIGKILL, expected=undefined","timestamp":1}"#,
            r#"{"level":"info","message":"[proxy-reaper] Killed orphan proxy worker pid=123 owner_pid=45 session=s-3","timestamp":1}"#,
            r#"{"level":"info","message":"Closing all debug sessions (3 active)","timestamp":1}"#,
        ];
        let ev = parse_all(&lines.join("\n"), "server.log");
        assert_eq!(
            ev,
            [
                LogEventKind::HttpSessionReaped {
                    http_session: "h-1".into(),
                    idle_secs: Some(41),
                    holding: Vec::new()
                },
                LogEventKind::ProxyStopping {
                    session_id: "s-1".into()
                },
                LogEventKind::ProxyForceKilled {
                    session_id: Some("s-1".into())
                },
                LogEventKind::ProxyExited {
                    code: None,
                    signal: Some("SIGKILL".into()),
                    session_id: Some("s-1".into())
                },
                LogEventKind::WorkerExited {
                    session_id: "s-2".into(),
                    code: None,
                    signal: Some("SIGKILL".into()),
                    expected: None
                },
                LogEventKind::ReaperKilledOrphan {
                    pid: 123,
                    owner_pid: Some(45),
                    session_id: Some("s-3".into())
                },
                LogEventKind::ClosingAll { active: 3 },
            ]
        );
    }

    #[test]
    fn a_failed_start_is_the_servers_own_word_and_undefined_is_no_signal() {
        let ev = parse_all(
            include_str!("testdata/failed-start-0.24.2.log"),
            "server.log",
        );
        let failed: Vec<(&str, &str)> = ev
            .iter()
            .filter_map(|e| match e {
                LogEventKind::StartFailed { session_id, reason } => {
                    Some((session_id.as_str(), reason.as_str()))
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            failed,
            [
                (
                    "91e2c754-815d-46c3-bc18-94deac3adbf3",
                    "Invalid environment for python: debugpy not installed for /tmp/fs/fakepy. Run: /tmp/fs/fakepy -m pip install debugpy"
                ),
                (
                    "00567f4f-bd6e-4040-84b4-95518fc851fd",
                    "Proxy exited during initialization. Code: null, Signal: SIGTERM"
                ),
            ]
        );
        assert!(ev.contains(&LogEventKind::WorkerExited {
            session_id: "00567f4f-bd6e-4040-84b4-95518fc851fd".into(),
            code: None,
            signal: Some("SIGTERM".into()),
            expected: Some(true),
        }));
        let line = r#"{"level":"info","message":"[ProxyManager s-9] Exit: code=1, signal=undefined, expected=undefined","timestamp":1}"#;
        assert_eq!(
            parse_all(line, "server.log"),
            [LogEventKind::WorkerExited {
                session_id: "s-9".into(),
                code: Some(1),
                signal: None,
                expected: None,
            }]
        );
    }

    #[test]
    fn the_next_release_lines_are_parsed_when_present() {
        let ev = parse_all(
            include_str!("testdata/next-release-lines.log"),
            "server.log",
        );
        assert_eq!(
            ev,
            [
                LogEventKind::HttpSessionReaped {
                    http_session: "3f1e9a2c-7d41-4c55-9e1b-0a2b3c4d5e6f".into(),
                    idle_secs: Some(41),
                    holding: vec![
                        "b85b4926-1c2d-4e5f-8a9b-0c1d2e3f4a5b".into(),
                        "c0ffee00-1111-2222-3333-444455556666".into()
                    ],
                },
                LogEventKind::HttpSessionStreamLost {
                    http_session: "9a8b7c6d-0000-4111-8222-933344455566".into(),
                    secs: Some(120),
                    holding: vec!["d00dfeed-aaaa-bbbb-cccc-ddddeeeeffff".into()],
                },
                LogEventKind::StartupReaped {
                    count: 2,
                    what: "orphan proxy worker(s)".into()
                },
                LogEventKind::StartupReaped {
                    count: 1,
                    what: "orphan proxy worker(s)".into()
                },
            ]
        );
    }

    #[test]
    fn the_workers_own_done_lines_name_its_session_by_file() {
        let file = format!("/l/sessions/{SID}/run-1/proxy-{SID}.log");
        let ev = parse_all(include_str!("testdata/worker-finished-0.24.2.log"), &file);
        assert_eq!(
            ev,
            [
                LogEventKind::WorkerFinished {
                    session_id: Some(SID.into()),
                    said: "[Worker] Shutdown sequence completed.".into()
                },
                LogEventKind::WorkerFinished {
                    session_id: Some(SID.into()),
                    said: "[Worker] Already shutting down or terminated.".into()
                },
            ]
        );
    }

    #[test]
    fn hostile_lines_are_skipped() {
        let mut p = LineParser::default();
        for l in [
            "",
            "not json",
            "[1,2,3]",
            "{\"message\":42}",
            "{\"level\":\"info\",\"message\":\"HTTP session closed: ../../etc/passwd\"}",
            "{\"level\":\"info\",\"message\":\"[ProxyManager] Proxy spawned with PID: -1\"}",
            "{\"level\":\"info\",\"message\":\"[ProxyManager] Proxy spawned with PID: 99999999999\"}",
            "{\"level\":\"info\",\"message\":\"Reaping stale HTTP session \"}",
            "{\"level\":\"info\",\"message\":\"[SM _updateSessionState x] State change: \"}",
            "{\"level\":\"info\",\"message\":\"session:created\"}",
            "{\"level\":\"info\",\"message\":\"HTTP session initialized: <img src=x onerror=alert(1)>\"}",
            "{\"level\":", 
        ] {
            assert_eq!(p.parse(l), None, "{l}");
        }
    }

    proptest::proptest! {
        #[test]
        fn parser_never_panics(s in ".{0,400}") {
            let mut p = LineParser::default();
            let _ = p.parse(&s);
            let _ = p.parse(&format!("{{\"level\":\"info\",\"message\":{}}}", serde_json::to_string(&s).unwrap()));
        }
    }

    fn tail_of(dir: &tempfile::TempDir) -> (PathBuf, LogTail) {
        let path = dir.path().join("server.log");
        (
            path.clone(),
            LogTail::new(path, LogOrigin::Server).owned_by(crate::os::my_uid()),
        )
    }

    #[test]
    fn a_log_of_another_user_than_the_servers_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.log");
        std::fs::write(
            &path,
            line("HTTP session initialized: 1d12251f-892b-4497-b1ed-b024728b2f22"),
        )
        .unwrap();
        let file_uid = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&path).unwrap());
        // The server's user is someone else: not read, and said why.
        let mut t = LogTail::new(&path, LogOrigin::Server).owned_by(Some(file_uid + 1));
        let err = t.poll(&mut LogBudget::default()).unwrap_err().to_string();
        assert!(
            err.contains(&format!(
                "owned by uid {file_uid}, not by the server's user"
            )),
            "{err}"
        );
        // The server's own file is read.
        let mut t = LogTail::new(&path, LogOrigin::Server).owned_by(Some(file_uid));
        assert_eq!(t.poll(&mut LogBudget::default()).unwrap().len(), 1);
    }

    fn line(msg: &str) -> String {
        format!(
            "{{\"level\":\"info\",\"message\":\"{msg}\",\"timestamp\":\"2026-11-30T10:00:00Z\"}}\n"
        )
    }

    #[test]
    fn tail_reads_only_appended_bytes_and_holds_partial_lines() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (path, mut t) = tail_of(&dir);
        assert!(
            t.poll(&mut LogBudget::default()).unwrap().is_empty(),
            "missing file is not an error"
        );
        let mut f = std::fs::File::create(&path).unwrap();
        let full = line("HTTP session initialized: h-1");
        let (a, b) = full.split_at(30);
        f.write_all(a.as_bytes()).unwrap();
        assert!(
            t.poll(&mut LogBudget::default()).unwrap().is_empty(),
            "partial line held back"
        );
        f.write_all(b.as_bytes()).unwrap();
        let ev = t.poll(&mut LogBudget::default()).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].line, 1);
        f.write_all(line("HTTP session closed: h-1").as_bytes())
            .unwrap();
        let ev = t.poll(&mut LogBudget::default()).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].line, 2);
        assert_eq!(t.offset(), std::fs::metadata(&path).unwrap().len());
        assert!(t.poll(&mut LogBudget::default()).unwrap().is_empty());
    }

    #[test]
    fn tail_survives_truncation_and_rotation() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (path, mut t) = tail_of(&dir);
        std::fs::write(
            &path,
            line("HTTP session initialized: h-1") + &line("HTTP session initialized: h-2"),
        )
        .unwrap();
        assert_eq!(t.poll(&mut LogBudget::default()).unwrap().len(), 2);
        // Truncated in place.
        std::fs::write(&path, line("HTTP session initialized: h-3")).unwrap();
        let ev = t.poll(&mut LogBudget::default()).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(
            ev[0].kind,
            LogEventKind::HttpSessionInitialized {
                http_session: "h-3".into()
            }
        );
        // Rotated: renamed away, a new file at the path.
        std::fs::rename(&path, dir.path().join("server.log.1")).unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(line("HTTP session closed: h-3").as_bytes())
            .unwrap();
        let ev = t.poll(&mut LogBudget::default()).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].line, 1);
        assert_eq!(t.stats.restarts, 2);
    }

    #[test]
    fn truncated_and_regrown_past_the_offset_is_read_again_from_the_start() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (path, mut t) = tail_of(&dir);
        std::fs::write(&path, line("HTTP session initialized: h-1")).unwrap();
        assert_eq!(t.poll(&mut LogBudget::default()).unwrap().len(), 1);
        // Truncated, then (before the next poll) written past the old offset: the size alone
        // says "it grew", the inode is the same; only the content says it is a new file.
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        f.write_all(line("HTTP session initialized: h-2").as_bytes())
            .unwrap();
        f.write_all(line("HTTP session closed: h-2").as_bytes())
            .unwrap();
        let ev = t.poll(&mut LogBudget::default()).unwrap();
        assert_eq!(
            ev.iter()
                .map(|e| (e.line, e.kind.clone()))
                .collect::<Vec<_>>(),
            [
                (
                    1,
                    LogEventKind::HttpSessionInitialized {
                        http_session: "h-2".into()
                    }
                ),
                (
                    2,
                    LogEventKind::HttpSessionClosed {
                        http_session: "h-2".into()
                    }
                )
            ]
        );
        assert_eq!(t.stats.restarts, 1);
        // Appending is not a restart.
        f.write_all(line("HTTP session initialized: h-3").as_bytes())
            .unwrap();
        assert_eq!(t.poll(&mut LogBudget::default()).unwrap().len(), 1);
        assert_eq!(t.stats.restarts, 1);
    }

    #[test]
    fn tail_skips_oversized_lines_without_buffering_them() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut t) = tail_of(&dir);
        let big = "x".repeat(MAX_LINE * 3);
        std::fs::write(
            &path,
            format!("{big}\n{}", line("HTTP session initialized: h-9")),
        )
        .unwrap();
        let ev = t.poll(&mut LogBudget::default()).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].line, 2);
        assert_eq!(t.stats.oversized, 1);
        assert!(t.pending.capacity() <= MAX_LINE * 4);
    }
}
