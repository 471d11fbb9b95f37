//! The lines of mcp-debugger's logs that matter (written down in docs/server-behaviour.md,
//! "The server's log"), parsed into typed events: pure, one line at a time, with the little
//! state two lines without a session id need (the line before them names it). Untrusted input:
//! nothing here panics on a line; what is not recognised is `None`.

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::Value;

use crate::model::{parse_pid, session_id, LogEventKind, OrphanReaper};

/// Per-file parser state: the two lines that carry no session id are tied to the preceding
/// `Spawning proxy…` / `Stopping proxy…` line.
#[derive(Debug, Default, Clone)]
pub struct LineParser {
    spawning: Option<String>,
    stopping: Option<String>,
    /// The session a `proxy-<id>.log` file belongs to.
    file_session: Option<String>,
    /// The newest line's time and words (a session's last sign of life).
    pub(super) last: Option<(Option<DateTime<Utc>>, String)>,
    /// `last` changed since the tail looked.
    pub(super) touched: bool,
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
            stage: crate::sources::stages::stage(m)?,
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

/// The startup janitor's own lines: `[startup-janitor] Reaped N orphan JVM(s)|proxy worker(s)|
/// js-debug adapter(s) from prior runs` (0.24.2: `[startup] Reaped N …`), `Removed N stale
/// session run dir(s)`, and what says it reaped nothing this start (`Process scan failed: …`,
/// `Orphan … reaper failed: …`, `Orphan reapers skipped (MCP_SKIP_ORPHAN_REAPERS)`).
fn janitor_line(m: &str) -> Option<LogEventKind> {
    if let Some(rest) = m
        .strip_prefix("[startup-janitor] Reaped ")
        .or_else(|| m.strip_prefix("[startup] Reaped "))
    {
        let (n, what) = rest.split_once(' ')?;
        return Some(LogEventKind::StartupReaped {
            count: n.parse().ok()?,
            what: bounded(what.split(" from ").next().unwrap_or(what)),
        });
    }
    let rest = m.strip_prefix("[startup-janitor] ")?;
    if let Some(n) = rest
        .strip_prefix("Removed ")
        .and_then(|r| r.strip_suffix(" stale session run dir(s)"))
    {
        return Some(LogEventKind::JanitorSwept {
            runs: n.parse().ok()?,
        });
    }
    let reaped_nothing = rest.starts_with("Process scan failed:")
        || (rest.starts_with("Orphan ") && rest.contains(" reaper failed:"))
        || rest.starts_with("Orphan reapers skipped");
    reaped_nothing.then(|| LogEventKind::JanitorFailed {
        said: bounded(rest.lines().next().unwrap_or(rest).trim()),
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

/// A kill of the startup janitor: `[proxy-reaper] Killed orphan proxy worker pid=<p>
/// owner_pid=<o> session=<id>` (a tagged js-debug adapter in the same words), or
/// `[jvm-reaper] Killed orphan JVM pid=<p> owner_pid=<o> tag=<id>`.
fn reaper_line(m: &str) -> Option<LogEventKind> {
    let (rest, reaper, tag) =
        if let Some(r) = m.strip_prefix("[proxy-reaper] Killed orphan proxy worker ") {
            (r, OrphanReaper::Proxy, "session")
        } else {
            let r = m.strip_prefix("[jvm-reaper] Killed orphan JVM ")?;
            (r, OrphanReaper::Jvm, "tag")
        };
    let mut pid = None;
    let mut owner = None;
    let mut sid = None;
    for kv in rest.split_whitespace() {
        match kv.split_once('=') {
            Some(("pid", p)) => pid = parse_pid(p),
            Some(("owner_pid", p)) => owner = parse_pid(p),
            Some((k, s)) if k == tag => sid = session_id(s),
            _ => {}
        }
    }
    Some(LogEventKind::ReaperKilledOrphan {
        pid: pid?,
        owner_pid: owner,
        session_id: sid,
        reaper,
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
pub(super) fn is_trace(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("dap-trace-") && n.ends_with(".ndjson"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A log line as mcp-debugger writes one.
    fn line(msg: &str) -> String {
        format!(
            "{{\"level\":\"info\",\"message\":\"{msg}\",\"timestamp\":\"2026-11-30T10:00:00Z\"}}\n"
        )
    }

    const SERVER: &str = include_str!("../testdata/server-0.24.2.log");
    const CLI: &str = include_str!("../testdata/cli-0.24.2.log");
    const PROXY: &str = include_str!("../testdata/proxy-0.24.2.log");
    const INTERLEAVED: &str = include_str!("../testdata/interleaved-0.24.2.log");
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
    const PROXY_MOCK: &str = include_str!("../testdata/proxy-mock.log");
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
    const PROXY_JS: &str = include_str!("../testdata/proxy-js.log");

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
        // Templates from 0.24.2's cli.mjs (docs/server-behaviour.md, "The server's log"); these shapes were seen live.
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
                    session_id: Some("s-3".into()),
                    reaper: OrphanReaper::Proxy,
                },
                LogEventKind::ClosingAll { active: 3 },
            ]
        );
    }

    #[test]
    fn a_failed_start_is_the_servers_own_word_and_undefined_is_no_signal() {
        let ev = parse_all(
            include_str!("../testdata/failed-start-0.24.2.log"),
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
            include_str!("../testdata/next-release-lines.log"),
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
    fn the_startup_janitors_lines_of_upstream_main_are_parsed_and_malformed_ones_are_not() {
        let ev = parse_all(
            include_str!("../testdata/janitor-upstream-main.log"),
            "server.log",
        );
        let killed = |pid, session: &str, reaper| LogEventKind::ReaperKilledOrphan {
            pid,
            owner_pid: Some(48100),
            session_id: Some(session.into()),
            reaper,
        };
        let reaped = |what: &str| LogEventKind::StartupReaped {
            count: 1,
            what: what.into(),
        };
        let failed = |said: &str| LogEventKind::JanitorFailed { said: said.into() };
        assert_eq!(
            ev,
            [
                killed(
                    48211,
                    "6f1d2c3b-4a59-4e8f-9b7a-1c2d3e4f5a6b",
                    OrphanReaper::Proxy
                ),
                killed(
                    48230,
                    "6f1d2c3b-4a59-4e8f-9b7a-1c2d3e4f5a6b",
                    OrphanReaper::Proxy
                ),
                killed(
                    48300,
                    "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
                    OrphanReaper::Jvm
                ),
                reaped("orphan JVM(s)"),
                reaped("orphan proxy worker(s)"),
                reaped("orphan js-debug adapter(s)"),
                LogEventKind::JanitorSwept { runs: 3 },
                failed("Process scan failed: spawn ps ENOENT"),
                failed("Orphan proxy reaper failed: EPERM"),
                failed("Orphan reapers skipped (MCP_SKIP_ORPHAN_REAPERS)"),
            ],
            "the last two lines (no count, no pid) are nothing"
        );
    }

    #[test]
    fn the_workers_own_done_lines_name_its_session_by_file() {
        let file = format!("/l/sessions/{SID}/run-1/proxy-{SID}.log");
        let ev = parse_all(
            include_str!("../testdata/worker-finished-0.24.2.log"),
            &file,
        );
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
}
