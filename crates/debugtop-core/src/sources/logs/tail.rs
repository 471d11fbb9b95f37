//! An incremental tail of one JSON-lines file: its offset kept, only appended bytes read,
//! a partial last line held back, and a file replaced, truncated or rewritten under the offset
//! read again from its start. The file is opened as another user's file must be
//! (`safe_fs::open_as`), within the tick's budget (`log_budget`); its lines go to the parser
//! (`super::parse`) or, for a DAP trace, to the trace reader.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::parse::{is_trace, LineParser};
use crate::error::{Error, Result};
use crate::model::{LogEvent, LogOrigin, SignOfLife, TailStats, TraceState};
use crate::sources::dap_trace::{TraceReader, HEAD};
use crate::sources::log_budget::{Allowance, LogBudget};

/// Lines longer than this are skipped (and counted), never buffered whole.
pub const MAX_LINE: usize = 64 * 1024;
/// The most bytes read from one file per poll: a huge backlog is caught up over several ticks.
pub const MAX_READ_PER_POLL: usize = 4 * 1024 * 1024;

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
    use crate::model::LogEventKind;

    const MOCK_SID: &str = "753b115d-6c16-409a-84b1-333be3a07051";
    /// A real 0.24.2 worker log of a mock session started with `stopOnEntry`.
    const PROXY_MOCK: &str = include_str!("../testdata/proxy-mock.log");

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
