//! Reconciliation: one tree per server from the process table, `/health` and the logs.
//!
//! server → HTTP sessions → debug sessions → worker → adapter → launcher / debuggee → watchdog.
//! Debug sessions hang under their HTTP session only when the link is known (newer `/health`
//! `details`); otherwise directly under the server. Processes tied (by marker or owner pid) to a
//! server that is gone stay under a node for that gone server. Every fact keeps its source, so
//! findings can cite it. The reconciler keeps what the logs said across ticks; building the tree
//! is pure over that state and the table.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::collect::ProcessTable;
use crate::model::{Proc, ProcState, Role, ServerInfo, SourceState, SourceStatus};
use crate::sources::discovery::ServerEndpoints;
use crate::sources::health::{Health, HealthError};
use crate::sources::logs::{LogEvent, LogEventKind, LogTail};

/// How often a session's run dirs are listed again for new proxy logs.
const PROXY_RELIST: std::time::Duration = std::time::Duration::from_secs(5);

/// How long an ended session with no process left stays listed.
const ENDED_KEEP: ChronoDuration = ChronoDuration::seconds(60);

/// Where a fact comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum FactSource {
    /// `/proc` (or the OS process list).
    ProcessTable,
    /// A server's `/health`.
    Health {
        /// The URL asked.
        url: String,
    },
    /// A log line.
    Log {
        /// The file.
        file: String,
        /// Its line number.
        #[ts(type = "number")]
        line: u64,
    },
}

impl std::fmt::Display for FactSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ProcessTable => f.write_str("process table"),
            Self::Health { url } => write!(f, "{url}"),
            Self::Log { file, line } => {
                let name = std::path::Path::new(file)
                    .file_name()
                    .map_or(file.as_str().into(), |n| n.to_string_lossy());
                write!(f, "{name}:{line}")
            }
        }
    }
}

/// A sentence with its source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct Fact {
    /// What is known, in words.
    pub text: String,
    /// Where from.
    pub source: FactSource,
    /// When it happened, if the source says.
    pub at: Option<DateTime<Utc>>,
}

impl Fact {
    fn log(text: String, ev: &LogEvent) -> Self {
        Self {
            text,
            source: FactSource::Log {
                file: ev.file.clone(),
                line: ev.line,
            },
            at: ev.at,
        }
    }
}

/// An HTTP (MCP transport) session of a server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct HttpSession {
    /// `Mcp-Session-Id`.
    pub id: String,
    /// The server holding it.
    pub server_pid: Option<u32>,
    /// Listed by the latest `/health`.
    pub in_health: bool,
    /// `closed` or `reaped`, once the log says so.
    pub ended: Option<String>,
    /// Debug sessions it holds (newer `/health` `details` only).
    pub debug_sessions: Vec<String>,
    /// What is known, with sources.
    pub facts: Vec<Fact>,
}

/// A debug session, as far as it is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct DebugSession {
    /// The debug session id.
    pub id: String,
    /// The server that owns it.
    pub server_pid: Option<u32>,
    /// Its name (from the log).
    pub name: Option<String>,
    /// Its language (from the log or the adapter).
    pub language: Option<String>,
    /// Last state the log gave (`created` … `paused`, `stopped`, `error`).
    pub state: Option<String>,
    /// The server's logs mention it (otherwise it is known only from processes).
    pub in_log: bool,
    /// The log says it was closed or stopped.
    pub ended: bool,
    /// When it ended, per the log.
    pub ended_at: Option<DateTime<Utc>>,
    /// The log line that ended it.
    pub ended_by: Option<Fact>,
    /// Its live worker, if any.
    pub worker_pid: Option<u32>,
    /// Its adapter, if known.
    pub adapter_pid: Option<u32>,
    /// The HTTP session holding it, when known.
    pub http_session: Option<String>,
    /// What is known, with sources.
    pub facts: Vec<Fact>,
}

/// What a tree node stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum NodeKind {
    /// A live mcp-debugger server.
    Server,
    /// A server that is gone (dead, or its pid now another process), kept for what it left.
    GoneServer,
    /// A server given by URL (`--server`): `/health` only.
    RemoteServer,
    /// An HTTP session.
    HttpSession,
    /// A debug session.
    DebugSession,
    /// A process.
    Process,
}

/// A node of the reconciled tree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS, schemars::JsonSchema)]
#[ts(export)]
pub struct TreeNode {
    /// Stable id: `server:<pid>`, `gone:<pid>`, `remote:<url>`, `http:<id>`, `debug:<id>`,
    /// `proc:<pid>:<start ticks>`.
    pub id: String,
    /// What it is.
    pub kind: NodeKind,
    /// Short text (for processes: the command line).
    pub label: String,
    /// The process (process and server nodes).
    pub pid: Option<u32>,
    /// Its role (process nodes).
    pub role: Option<Role>,
    /// Its scheduler state (process nodes).
    pub state: Option<ProcState>,
    /// The debug session, where known.
    pub session_id: Option<String>,
    /// For debug sessions: the log's state; for HTTP sessions: `open`, `closed`, `reaped`.
    pub status: Option<String>,
    /// What is known about this node, with sources.
    pub facts: Vec<Fact>,
    /// Children.
    pub children: Vec<TreeNode>,
}

impl TreeNode {
    fn new(id: String, kind: NodeKind, label: String) -> Self {
        Self {
            id,
            kind,
            label,
            pid: None,
            role: None,
            state: None,
            session_id: None,
            status: None,
            facts: Vec::new(),
            children: Vec::new(),
        }
    }

    /// Depth-first iterator over this node and its descendants.
    pub fn walk(&self) -> Vec<&TreeNode> {
        let mut out = vec![self];
        for c in &self.children {
            out.extend(c.walk());
        }
        out
    }
}

#[derive(Debug, Default)]
struct HttpRec {
    facts: Vec<Fact>,
    ended: Option<(String, DateTime<Utc>)>,
}

#[derive(Debug, Default)]
struct DebugRec {
    name: Option<String>,
    language: Option<String>,
    state: Option<String>,
    ended: Option<DateTime<Utc>>,
    ended_by: Option<Fact>,
    worker_pid: Option<u32>,
    adapter_pid: Option<u32>,
    facts: Vec<Fact>,
}

/// What the reconciler keeps about one server between ticks.
#[derive(Debug, Default)]
struct ServerState {
    endpoints: Option<ServerEndpoints>,
    tails: BTreeMap<PathBuf, LogTail>,
    http: BTreeMap<String, HttpRec>,
    debug: BTreeMap<String, DebugRec>,
    health: Option<(String, Result<Health, HealthError>)>,
    log_errors: Vec<String>,
    /// When each session's run dirs were last listed for proxy logs.
    proxy_listed: BTreeMap<String, std::time::Instant>,
}

/// The result of one reconciliation.
#[derive(Debug, Clone)]
pub struct World {
    /// The process table it was built from.
    pub table: ProcessTable,
    /// One tree per server (live, gone, remote).
    pub tree: Vec<TreeNode>,
    /// HTTP sessions known.
    pub http_sessions: Vec<HttpSession>,
    /// Debug sessions known.
    pub debug_sessions: Vec<DebugSession>,
    /// Health of each source per server.
    pub sources: Vec<SourceStatus>,
    /// Log events read this tick.
    pub new_events: Vec<LogEvent>,
    /// The latest `/health` outcome per live server pid.
    pub health: BTreeMap<u32, Result<Health, HealthError>>,
    /// Log lines read so far per live server pid (0: its logs were never found).
    pub logs_read: BTreeMap<u32, u64>,
}

/// Keeps log and health state per server and builds the [`World`].
#[derive(Debug, Default)]
pub struct Reconciler {
    servers: BTreeMap<u32, ServerState>,
    remote: BTreeMap<String, Result<Health, HealthError>>,
    pending_events: Vec<LogEvent>,
}

impl Reconciler {
    /// Records where a live server's facts are, and tails its logs (and the proxy logs of the
    /// sessions it is known to have). Returns nothing; events are kept for [`Self::build`].
    pub fn poll_logs(
        &mut self,
        server: &ServerInfo,
        endpoints: ServerEndpoints,
        live_sessions: &BTreeSet<String>,
    ) {
        let st = self.servers.entry(server.pid).or_default();
        let mut files = endpoints.server_logs();
        let known: BTreeSet<String> = st
            .debug
            .keys()
            .chain(live_sessions.iter())
            .cloned()
            .collect();
        let now = std::time::Instant::now();
        for sid in &known {
            if st.debug.get(sid).is_some_and(|d| d.ended.is_some()) && !live_sessions.contains(sid)
            {
                continue;
            }
            // Listing a session's run dirs is I/O on every tick; new run dirs are rare, so list
            // at most every PROXY_RELIST and keep tailing the files already found meanwhile.
            let due = st
                .proxy_listed
                .get(sid)
                .is_none_or(|t| now.duration_since(*t) >= PROXY_RELIST);
            if due {
                st.proxy_listed.insert(sid.clone(), now);
                files.extend(endpoints.proxy_logs(sid));
            } else {
                let name = format!("proxy-{sid}.log");
                files.extend(
                    st.tails
                        .keys()
                        .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == name))
                        .cloned(),
                );
            }
        }
        st.proxy_listed.retain(|sid, _| known.contains(sid));
        st.endpoints = Some(endpoints);
        st.log_errors.clear();
        for f in files {
            let tail = st.tails.entry(f.clone()).or_insert_with(|| LogTail::new(f));
            match tail.poll() {
                Ok(events) => {
                    for ev in events {
                        // A --log-file shared across runs (or a per-pid log of a reused pid)
                        // holds lines of earlier servers: they are not this server's.
                        if ev
                            .at
                            .is_some_and(|at| at < server.start_time - ChronoDuration::seconds(2))
                        {
                            continue;
                        }
                        apply(st, &ev);
                        self.pending_events.push(ev);
                    }
                }
                Err(e) => st.log_errors.push(e.to_string()),
            }
        }
    }

    /// Records the outcome of a `/health` check of a local server.
    pub fn set_health(
        &mut self,
        server_pid: u32,
        url: String,
        health: Result<Health, HealthError>,
    ) {
        self.servers.entry(server_pid).or_default().health = Some((url, health));
    }

    /// Records the outcome of a `/health` check of a server given by URL.
    pub fn set_remote_health(&mut self, url: String, health: Result<Health, HealthError>) {
        self.remote.insert(url, health);
    }

    /// A world from a process table alone.
    pub fn build_offline(&mut self, table: &ProcessTable) -> World {
        self.build(table.clone())
    }

    /// Joins everything known into one tree per server.
    pub fn build(&mut self, table: ProcessTable) -> World {
        let now = Utc::now();
        let live_servers: HashMap<u32, &ServerInfo> =
            table.servers.iter().map(|s| (s.pid, s)).collect();
        // Group processes by the server they belong to; a server is "the same" only if it
        // started no later than the process that names it.
        let mut by_server: BTreeMap<u32, Vec<&Proc>> = BTreeMap::new();
        let mut gone: BTreeMap<u32, Vec<&Proc>> = BTreeMap::new();
        for p in &table.procs {
            let Some(sp) = p.server_pid else { continue };
            match live_servers.get(&sp) {
                Some(s) if s.start_time <= p.start_time => by_server.entry(sp).or_default().push(p),
                _ => gone.entry(sp).or_default().push(p),
            }
        }
        let mut tree = Vec::new();
        let mut http_out = Vec::new();
        let mut debug_out = Vec::new();
        let mut sources = Vec::new();
        for s in &table.servers {
            let procs = by_server.remove(&s.pid).unwrap_or_default();
            let st = self.servers.entry(s.pid).or_default();
            let (node, http, debug) = server_tree(s, st, &procs, now);
            tree.push(node);
            http_out.extend(http);
            debug_out.extend(debug);
            sources.extend(server_sources(s.pid, st));
        }
        for (pid, procs) in gone {
            let st = self.servers.get(&pid);
            let mut node = TreeNode::new(
                format!("gone:{pid}"),
                NodeKind::GoneServer,
                format!("server {pid} (gone)"),
            );
            node.pid = Some(pid);
            node.facts.push(Fact {
                text: format!(
                    "no live mcp-debugger server with pid {pid} started before these processes"
                ),
                source: FactSource::ProcessTable,
                at: None,
            });
            let empty = ServerState::default();
            let (sessions, debug) = session_nodes(pid, st.unwrap_or(&empty), &procs, now);
            node.children = sessions;
            debug_out.extend(debug);
            tree.push(node);
        }
        for (url, h) in &self.remote {
            let mut node =
                TreeNode::new(format!("remote:{url}"), NodeKind::RemoteServer, url.clone());
            match h {
                Ok(h) => {
                    for id in &h.sessions {
                        let mut n =
                            TreeNode::new(format!("http:{id}"), NodeKind::HttpSession, id.clone());
                        n.status = Some("open".into());
                        n.facts.push(Fact {
                            text: format!("listed by {url}/health"),
                            source: FactSource::Health { url: url.clone() },
                            at: None,
                        });
                        node.children.push(n);
                    }
                    sources.push(status(
                        "health",
                        None,
                        SourceState::Ok,
                        format!("{url}: {} HTTP sessions", h.sessions.len()),
                    ));
                }
                Err(e) => sources.push(status("health", None, SourceState::Failed, e.to_string())),
            }
            tree.push(node);
        }
        let mut health = BTreeMap::new();
        let mut logs_read = BTreeMap::new();
        for s in &table.servers {
            if let Some(st) = self.servers.get(&s.pid) {
                if let Some((_, h)) = &st.health {
                    health.insert(s.pid, h.clone());
                }
                logs_read.insert(s.pid, st.tails.values().map(|t| t.stats.lines).sum());
            }
        }
        // Forget servers that are gone and left nothing behind.
        let referenced: BTreeSet<u32> = table.procs.iter().filter_map(|p| p.server_pid).collect();
        self.servers
            .retain(|pid, _| live_servers.contains_key(pid) || referenced.contains(pid));
        World {
            table,
            tree,
            http_sessions: http_out,
            debug_sessions: debug_out,
            sources,
            new_events: std::mem::take(&mut self.pending_events),
            health,
            logs_read,
        }
    }
}

fn status(
    source: &str,
    server_pid: Option<u32>,
    state: SourceState,
    detail: String,
) -> SourceStatus {
    SourceStatus {
        source: source.to_owned(),
        server_pid,
        state,
        detail,
    }
}

fn server_sources(pid: u32, st: &ServerState) -> Vec<SourceStatus> {
    let mut out = Vec::new();
    match &st.health {
        Some((url, Ok(h))) => out.push(status(
            "health",
            Some(pid),
            SourceState::Ok,
            format!(
                "{url}/health: {}, {} HTTP sessions",
                h.status,
                h.sessions.len()
            ),
        )),
        Some((_, Err(e))) => out.push(status(
            "health",
            Some(pid),
            SourceState::Failed,
            e.to_string(),
        )),
        None => out.push(status(
            "health",
            Some(pid),
            SourceState::Ok,
            "not an HTTP server: no /health to ask".into(),
        )),
    }
    let files = st.tails.len();
    let skipped: u64 = st
        .tails
        .values()
        .map(|t| t.stats.skipped + t.stats.oversized)
        .sum();
    let events: u64 = st.tails.values().map(|t| t.stats.events).sum();
    let restarts: u32 = st.tails.values().map(|t| t.stats.restarts).sum();
    if st.log_errors.is_empty() {
        out.push(status(
            "logs",
            Some(pid),
            SourceState::Ok,
            format!(
                "{files} files tailed, {events} events, {skipped} lines skipped, \
                 {restarts} restarts (a file truncated or replaced)"
            ),
        ));
    } else {
        out.push(status(
            "logs",
            Some(pid),
            SourceState::Degraded,
            st.log_errors.join("; "),
        ));
    }
    out
}

/// Applies one log event to what is known about a server.
fn apply(st: &mut ServerState, ev: &LogEvent) {
    let at = ev.at.unwrap_or_else(Utc::now);
    match &ev.kind {
        LogEventKind::HttpSessionInitialized { http_session } => {
            st.http
                .entry(http_session.clone())
                .or_default()
                .facts
                .push(Fact::log("HTTP session initialized".into(), ev));
        }
        LogEventKind::HttpSessionClosed { http_session } => {
            let r = st.http.entry(http_session.clone()).or_default();
            r.facts.push(Fact::log("HTTP session closed".into(), ev));
            if r.ended.is_none() {
                r.ended = Some(("closed".into(), at));
            }
        }
        LogEventKind::HttpSessionReaped {
            http_session,
            idle_secs,
        } => {
            let r = st.http.entry(http_session.clone()).or_default();
            let idle = idle_secs
                .map(|s| format!(" after {s} s idle"))
                .unwrap_or_default();
            r.facts
                .push(Fact::log(format!("reaped as stale{idle}"), ev));
            r.ended = Some(("reaped".into(), at));
        }
        LogEventKind::DebugSessionCreated {
            session_id,
            name,
            language,
        } => {
            let r = st.debug.entry(session_id.clone()).or_default();
            r.name = r.name.take().or_else(|| name.clone());
            r.language = r.language.take().or_else(|| language.clone());
            r.state.get_or_insert_with(|| "created".into());
            if r.facts.is_empty() {
                r.facts.push(Fact::log("debug session created".into(), ev));
            }
        }
        LogEventKind::StateChanged {
            session_id,
            from,
            to,
        } => {
            let r = st.debug.entry(session_id.clone()).or_default();
            r.state = Some(to.clone());
            r.facts.push(Fact::log(format!("state {from} → {to}"), ev));
        }
        LogEventKind::SessionStopped { session_id } => {
            let r = st.debug.entry(session_id.clone()).or_default();
            r.facts
                .push(Fact::log("marked as STOPPED/TERMINATED".into(), ev));
            if r.ended.is_none() {
                r.ended = Some(at);
                r.ended_by = Some(Fact::log(
                    format!("`Session {session_id} marked as STOPPED/TERMINATED.`"),
                    ev,
                ));
            }
        }
        LogEventKind::DebugSessionClosing { session_id, .. } => {
            st.debug
                .entry(session_id.clone())
                .or_default()
                .facts
                .push(Fact::log("closing".into(), ev));
        }
        LogEventKind::DebugSessionClosed { session_id } => {
            let r = st.debug.entry(session_id.clone()).or_default();
            r.facts.push(Fact::log("closed".into(), ev));
            if r.ended.is_none() {
                r.ended = Some(at);
                r.ended_by = Some(Fact::log("`session:closed`".into(), ev));
            }
        }
        LogEventKind::ProxySpawned {
            pid,
            session_id: Some(sid),
        } => {
            let r = st.debug.entry(sid.clone()).or_default();
            r.worker_pid = Some(*pid);
            r.facts
                .push(Fact::log(format!("worker spawned with pid {pid}"), ev));
        }
        LogEventKind::AdapterSpawned {
            pid,
            session_id: Some(sid),
        } => {
            let r = st.debug.entry(sid.clone()).or_default();
            r.adapter_pid = Some(*pid);
            r.facts
                .push(Fact::log(format!("adapter spawned with pid {pid}"), ev));
        }
        LogEventKind::ProxyForceKilled {
            session_id: Some(sid),
        } => {
            st.debug
                .entry(sid.clone())
                .or_default()
                .facts
                .push(Fact::log(
                    "worker did not exit in time: force-killed".into(),
                    ev,
                ));
        }
        LogEventKind::ProxyExited {
            code,
            signal,
            session_id: Some(sid),
        } => {
            st.debug
                .entry(sid.clone())
                .or_default()
                .facts
                .push(Fact::log(
                    exit_text("worker exited", *code, signal.as_deref()),
                    ev,
                ));
        }
        LogEventKind::WorkerExited {
            session_id,
            code,
            signal,
            ..
        } => {
            st.debug
                .entry(session_id.clone())
                .or_default()
                .facts
                .push(Fact::log(
                    exit_text(
                        "worker exited under a live session",
                        *code,
                        signal.as_deref(),
                    ),
                    ev,
                ));
        }
        LogEventKind::ReaperKilledOrphan {
            session_id: Some(sid),
            pid,
            ..
        } => {
            st.debug
                .entry(sid.clone())
                .or_default()
                .facts
                .push(Fact::log(
                    format!("startup reaper killed orphan worker {pid}"),
                    ev,
                ));
        }
        LogEventKind::ClosingAll { .. }
        | LogEventKind::ProxyStopping { .. }
        | LogEventKind::ProxySpawned {
            session_id: None, ..
        }
        | LogEventKind::AdapterSpawned {
            session_id: None, ..
        }
        | LogEventKind::ProxyForceKilled { session_id: None }
        | LogEventKind::ProxyExited {
            session_id: None, ..
        }
        | LogEventKind::ReaperKilledOrphan {
            session_id: None, ..
        } => {}
    }
    // Bound what one session can accumulate.
    for r in st.debug.values_mut() {
        if r.facts.len() > 64 {
            r.facts.drain(1..r.facts.len() - 63);
        }
    }
}

fn exit_text(what: &str, code: Option<i32>, signal: Option<&str>) -> String {
    match (code, signal) {
        (_, Some(s)) => format!("{what} on {s}"),
        (Some(c), None) => format!("{what} with code {c}"),
        (None, None) => what.to_owned(),
    }
}

/// A live server's node, with its HTTP and debug sessions.
fn server_tree(
    s: &ServerInfo,
    st: &mut ServerState,
    procs: &[&Proc],
    now: DateTime<Utc>,
) -> (TreeNode, Vec<HttpSession>, Vec<DebugSession>) {
    let port = st
        .endpoints
        .as_ref()
        .and_then(|e| e.base_url.clone())
        .unwrap_or_else(|| format!("{:?}", s.mode).to_lowercase());
    let mut node = TreeNode::new(
        format!("server:{}", s.pid),
        NodeKind::Server,
        format!("mcp-debugger {port}"),
    );
    node.pid = Some(s.pid);
    node.role = Some(Role::Server);
    if let Some(me) = procs.iter().find(|p| p.pid == s.pid) {
        node.state = Some(me.state);
    }
    node.facts.push(Fact {
        text: format!("pid {} in {:?} mode", s.pid, s.mode).to_lowercase(),
        source: FactSource::ProcessTable,
        at: Some(s.start_time),
    });
    if let Some(e) = &st.endpoints {
        let text = if e.port_confirmed {
            format!("listening on port {}", s.port.unwrap_or_default())
        } else if e.listening.is_empty() {
            "no listening socket found".to_owned()
        } else {
            format!(
                "argv port {:?} not listening; listening on {:?}",
                s.port, e.listening
            )
        };
        node.facts.push(Fact {
            text,
            source: FactSource::ProcessTable,
            at: None,
        });
    }
    let (health_url, health) = match &st.health {
        Some((u, Ok(h))) => (Some(u.clone()), Some(h)),
        _ => (None, None),
    };
    let others: Vec<&Proc> = procs.iter().copied().filter(|p| p.pid != s.pid).collect();
    let (mut session_nodes, mut debug) = session_nodes(s.pid, st, &others, now);

    // HTTP sessions: those /health lists, plus those the log opened and never ended.
    let mut http_out = Vec::new();
    let mut ids: BTreeSet<String> = health
        .map(|h| h.sessions.iter().cloned().collect())
        .unwrap_or_default();
    if health.is_none() {
        ids.extend(
            st.http
                .iter()
                .filter(|(_, r)| r.ended.is_none())
                .map(|(k, _)| k.clone()),
        );
    }
    // Ended ones stay in the list (not the tree) for a while.
    let recent_ended: Vec<String> = st
        .http
        .iter()
        .filter(|(_, r)| {
            r.ended
                .as_ref()
                .is_some_and(|(_, at)| now - *at < ENDED_KEEP)
        })
        .map(|(k, _)| k.clone())
        .collect();
    let details = health.and_then(|h| h.details.as_ref());
    for id in ids
        .iter()
        .chain(recent_ended.iter().filter(|k| !ids.contains(*k)))
    {
        let rec = st.http.get(id);
        let in_health = health.is_some_and(|h| h.sessions.contains(id));
        let linked: Vec<String> = details
            .and_then(|d| d.iter().find(|d| &d.http_session == id))
            .map(|d| d.debug_sessions.clone())
            .unwrap_or_default();
        let mut facts = rec.map(|r| r.facts.clone()).unwrap_or_default();
        if let (true, Some(u)) = (in_health, &health_url) {
            facts.push(Fact {
                text: "listed by /health".into(),
                source: FactSource::Health { url: u.clone() },
                at: None,
            });
        }
        let ended = rec
            .and_then(|r| r.ended.as_ref())
            .map(|(how, _)| how.clone());
        http_out.push(HttpSession {
            id: id.clone(),
            server_pid: Some(s.pid),
            in_health,
            ended: ended.clone(),
            debug_sessions: linked.clone(),
            facts: facts.clone(),
        });
        if !ids.contains(id) {
            continue;
        }
        let mut n = TreeNode::new(format!("http:{id}"), NodeKind::HttpSession, id.clone());
        n.status = Some(ended.unwrap_or_else(|| "open".into()));
        n.facts = facts;
        // Move linked debug sessions under it.
        let (mine, rest): (Vec<TreeNode>, Vec<TreeNode>) =
            session_nodes.into_iter().partition(|d| {
                d.session_id
                    .as_ref()
                    .is_some_and(|sid| linked.contains(sid))
            });
        session_nodes = rest;
        n.children = mine;
        for d in debug.iter_mut().filter(|d| linked.contains(&d.id)) {
            d.http_session = Some(id.clone());
        }
        node.children.push(n);
    }
    node.children.extend(session_nodes);
    (node, http_out, debug)
}

/// Debug-session nodes (with their process subtrees) and loose processes of one server.
fn session_nodes(
    server_pid: u32,
    st: &ServerState,
    procs: &[&Proc],
    now: DateTime<Utc>,
) -> (Vec<TreeNode>, Vec<DebugSession>) {
    let mut by_session: BTreeMap<String, Vec<&Proc>> = BTreeMap::new();
    let mut loose: Vec<&Proc> = Vec::new();
    for p in procs {
        match &p.session_id {
            Some(s) => by_session.entry(s.clone()).or_default().push(p),
            None => loose.push(p),
        }
    }
    let mut ids: BTreeSet<String> = by_session.keys().cloned().collect();
    ids.extend(
        st.debug
            .iter()
            .filter(|(_, r)| r.ended.is_none_or(|at| now - at < ENDED_KEEP))
            .map(|(k, _)| k.clone()),
    );
    let mut nodes = Vec::new();
    let mut out = Vec::new();
    for id in ids {
        let rec = st.debug.get(&id);
        let ps = by_session.remove(&id).unwrap_or_default();
        let worker = ps
            .iter()
            .find(|p| p.role == Role::Worker && p.state.is_alive())
            .map(|p| p.pid);
        let adapter = ps
            .iter()
            .find(|p| p.role == Role::Adapter)
            .map(|p| p.pid)
            .or(rec.and_then(|r| r.adapter_pid));
        let language = rec.and_then(|r| r.language.clone()).or_else(|| {
            ps.iter().find_map(|p| p.language).map(|l| {
                serde_json::to_value(l)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default()
            })
        });
        let ended = rec.is_some_and(|r| r.ended.is_some());
        let facts = rec.map(|r| r.facts.clone()).unwrap_or_default();
        out.push(DebugSession {
            id: id.clone(),
            server_pid: Some(server_pid),
            name: rec.and_then(|r| r.name.clone()),
            language: language.clone(),
            state: rec.and_then(|r| r.state.clone()),
            in_log: rec.is_some(),
            ended,
            ended_at: rec.and_then(|r| r.ended),
            ended_by: rec.and_then(|r| r.ended_by.clone()),
            worker_pid: worker,
            adapter_pid: adapter,
            http_session: None,
            facts: facts.clone(),
        });
        // An ended session with nothing left running is history, not part of the tree.
        if ended && ps.is_empty() {
            continue;
        }
        let name = rec
            .and_then(|r| r.name.clone())
            .map(|n| format!("{n} "))
            .unwrap_or_default();
        let mut n = TreeNode::new(
            format!("debug:{id}"),
            NodeKind::DebugSession,
            format!("{name}{id}"),
        );
        n.session_id = Some(id.clone());
        n.status = Some(match (ended, rec.and_then(|r| r.state.clone())) {
            (true, _) => "closed".into(),
            (false, Some(s)) => s,
            (false, None) => "unknown".into(),
        });
        n.facts = facts;
        n.children = process_forest(&ps);
        nodes.push(n);
    }
    nodes.extend(process_forest(&loose));
    (nodes, out)
}

/// Processes as a forest by parent links within the set; a watchdog hangs under the debuggee it
/// names. Children ordered by pid.
fn process_forest(ps: &[&Proc]) -> Vec<TreeNode> {
    let pids: BTreeSet<u32> = ps.iter().map(|p| p.pid).collect();
    let parent_of = |p: &Proc| -> Option<u32> {
        if p.role == Role::Watchdog {
            if let Some(d) = p.markers.inspector_pid.filter(|d| pids.contains(d)) {
                return Some(d);
            }
        }
        Some(p.ppid).filter(|pp| pids.contains(pp) && *pp != p.pid)
    };
    let mut children: BTreeMap<u32, Vec<&Proc>> = BTreeMap::new();
    let mut roots = Vec::new();
    for p in ps {
        match parent_of(p) {
            Some(pp) => children.entry(pp).or_default().push(p),
            None => roots.push(*p),
        }
    }
    fn build(p: &Proc, children: &BTreeMap<u32, Vec<&Proc>>, depth: usize) -> TreeNode {
        let mut n = TreeNode::new(
            format!("proc:{}:{}", p.pid, p.start_ticks),
            NodeKind::Process,
            p.argv.join(" "),
        );
        n.pid = Some(p.pid);
        n.role = Some(p.role);
        n.state = Some(p.state);
        n.session_id = p.session_id.clone();
        if let Some(old) = p.remembered_ppid {
            n.facts.push(Fact {
                text: format!("reparented: its parent was {old}, now {}", p.ppid),
                source: FactSource::ProcessTable,
                at: None,
            });
        }
        if depth < 64 {
            let mut kids = children.get(&p.pid).cloned().unwrap_or_default();
            kids.sort_by_key(|k| k.pid);
            n.children = kids
                .into_iter()
                .map(|k| build(k, children, depth + 1))
                .collect();
        }
        n
    }
    roots.sort_by_key(|p| (p.role != Role::Worker, p.pid));
    roots.into_iter().map(|p| build(p, &children, 0)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(line: u64, kind: LogEventKind) -> LogEvent {
        LogEvent {
            at: DateTime::from_timestamp(1_800_000_000 + line as i64, 0),
            file: "/l/server.log".into(),
            line,
            kind,
        }
    }

    #[test]
    fn session_stopped_line_cites_itself_as_the_end() {
        let mut st = ServerState::default();
        apply(
            &mut st,
            &ev(
                1,
                LogEventKind::DebugSessionCreated {
                    session_id: "s-1".into(),
                    name: Some("n".into()),
                    language: None,
                },
            ),
        );
        apply(
            &mut st,
            &ev(
                212,
                LogEventKind::SessionStopped {
                    session_id: "s-1".into(),
                },
            ),
        );
        apply(
            &mut st,
            &ev(
                213,
                LogEventKind::DebugSessionClosed {
                    session_id: "s-1".into(),
                },
            ),
        );
        let r = &st.debug["s-1"];
        let by = r.ended_by.as_ref().expect("ended_by recorded");
        assert_eq!(
            by.source,
            FactSource::Log {
                file: "/l/server.log".into(),
                line: 212
            }
        );
        assert_eq!(by.source.to_string(), "server.log:212");
        assert!(by.text.contains("marked as STOPPED/TERMINATED"));
    }

    #[test]
    fn http_session_reaped_is_ended_as_reaped() {
        let mut st = ServerState::default();
        apply(
            &mut st,
            &ev(
                1,
                LogEventKind::HttpSessionInitialized {
                    http_session: "h-1".into(),
                },
            ),
        );
        apply(
            &mut st,
            &ev(
                2,
                LogEventKind::HttpSessionReaped {
                    http_session: "h-1".into(),
                    idle_secs: Some(41),
                },
            ),
        );
        apply(
            &mut st,
            &ev(
                3,
                LogEventKind::HttpSessionClosed {
                    http_session: "h-1".into(),
                },
            ),
        );
        assert_eq!(
            st.http["h-1"].ended.as_ref().map(|(how, _)| how.as_str()),
            Some("reaped")
        );
    }
}
