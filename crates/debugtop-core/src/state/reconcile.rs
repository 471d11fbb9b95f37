//! Reconciliation: one tree per server from the process table, `/health` and what the logs
//! said — server → HTTP sessions → debug sessions → worker → adapter → launcher / debuggee →
//! watchdog. Debug sessions hang under their HTTP session only when the link is known (newer
//! `/health` `details`); otherwise directly under the server. Processes tied (by marker or owner
//! pid) to a server that is gone stay under a node for that gone server. Pure over the
//! observation and the knowledge.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Duration, Utc};

use super::knowledge::{DebugRec, Knowledge, ServerKnowledge};
use super::memo::{ByAlloc, Memo};
use crate::model::{
    proc_node_id, DebugSession, DebuggeeState, Fact, FactSource, Health, HealthError, HttpSession,
    LogsRead, NodeKind, NodeStatus, Observation, Proc, Role, SelfInfo, ServerInfo,
    ServerObservation, SessionProgress, SourceKind, SourceState, SourceStatus, TreeNode, What,
};
use crate::redact::CommandLines;

/// How long an ended session with no process left stays listed.
const ENDED_KEEP: Duration = Duration::seconds(60);

/// Everything the rules and the views need from one step.
#[derive(Debug, Clone)]
pub struct World {
    /// When.
    pub at: DateTime<Utc>,
    /// Server-related processes, live and just exited (tombs, state `X`).
    pub procs: Vec<Arc<Proc>>,
    /// Live servers.
    pub servers: Vec<ServerInfo>,
    /// One tree per server (live, gone, remote).
    pub tree: Vec<Arc<TreeNode>>,
    /// HTTP sessions known.
    pub http_sessions: Vec<HttpSession>,
    /// Debug sessions known.
    pub debug_sessions: Vec<Arc<DebugSession>>,
    /// Health of each source per server.
    pub sources: Vec<SourceStatus>,
    /// The latest `/health` outcome per live server pid.
    pub health: BTreeMap<u32, Result<Health, HealthError>>,
    /// How reading each live server's logs went.
    pub logs: BTreeMap<u32, LogsRead>,
    /// The observing process.
    pub me: SelfInfo,
    /// How text made from a command line is written (labels).
    pub command_lines: CommandLines,
    /// `procs` indexed, the first time a rule asks (`procs` does not change once built).
    index: OnceLock<ProcIndex>,
}

/// The live processes of a world by pid and by process group, and its watchdogs: a rule asks
/// about each of thousands of subjects' relatives, and a walk of the table for each is
/// quadratic at incident scale.
#[derive(Debug, Clone, Default)]
struct ProcIndex {
    by_pid: rustc_hash::FxHashMap<u32, usize>,
    by_group: rustc_hash::FxHashMap<u32, Vec<usize>>,
    watchdogs: Vec<usize>,
}

impl ProcIndex {
    fn of(procs: &[Arc<Proc>]) -> Self {
        let mut idx = Self::default();
        for (i, p) in procs.iter().enumerate() {
            if p.exited_at.is_some() {
                continue;
            }
            idx.by_pid.entry(p.pid).or_insert(i);
            idx.by_group.entry(p.pgid).or_default().push(i);
            if p.role == Role::Watchdog {
                idx.watchdogs.push(i);
            }
        }
        idx
    }
}

impl World {
    /// The live process with this pid.
    pub fn proc(&self, pid: u32) -> Option<&Proc> {
        self.proc_arc(pid).map(|p| &**p)
    }

    /// The live process with this pid, as shared between steps.
    pub fn proc_arc(&self, pid: u32) -> Option<&Arc<Proc>> {
        let i = self.index().by_pid.get(&pid)?;
        self.procs.get(*i)
    }

    /// The live members of process group `pgid`, in the table's order.
    pub fn group(&self, pgid: u32) -> impl Iterator<Item = &Arc<Proc>> {
        self.at_positions(self.index().by_group.get(&pgid).map(Vec::as_slice))
    }

    /// The live watchdogs, in the table's order.
    pub fn watchdogs(&self) -> impl Iterator<Item = &Arc<Proc>> {
        self.at_positions(Some(&self.index().watchdogs))
    }

    fn at_positions<'a>(&'a self, at: Option<&'a [usize]>) -> impl Iterator<Item = &'a Arc<Proc>> {
        at.unwrap_or_default()
            .iter()
            .filter_map(|i| self.procs.get(*i))
    }

    fn index(&self) -> &ProcIndex {
        self.index.get_or_init(|| ProcIndex::of(&self.procs))
    }

    /// The live server with this pid.
    pub fn server(&self, pid: u32) -> Option<&ServerInfo> {
        self.servers.iter().find(|s| s.pid == pid)
    }
}

/// Joins everything known into one tree per server: the observation's table and `tombs`.
pub fn build(obs: &Observation, tombs: Vec<Proc>, k: &Knowledge) -> World {
    let procs = obs
        .table
        .procs
        .iter()
        .cloned()
        .chain(tombs)
        .map(Arc::new)
        .collect();
    from_shared(obs, procs, k)
}

/// Joins everything known into one tree per server, over `procs` (live and tombs; the
/// observation's own table's processes are not read, whether it still has them or not).
pub fn from_shared<P>(obs: &Observation<P>, procs: Vec<Arc<Proc>>, k: &Knowledge) -> World {
    from_shared_with(
        obs,
        procs,
        k,
        &mut SessionMemo::default(),
        CommandLines::Hidden,
    )
}

/// Each server's debug sessions as the last step built them — the session and its tree node —
/// with what they were built from: the same allocations of its processes and an equal record
/// from the logs give the very same session and node again, at incident scale thousands a tick.
pub type SessionMemo = Memo<SessionKey, SessionInputs, Built>;

/// A debug session: its server and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SessionKey(u32, String);

/// What a debug session and its node are made from: its record from the logs and its
/// processes, by allocation.
#[derive(Debug, PartialEq)]
pub struct SessionInputs(Option<DebugRec>, Vec<ByAlloc<Proc>>);

/// [`SessionInputs`] as a step has them, borrowed: a session that did not change is found
/// again without a copy of either.
#[derive(Debug, Clone, Copy)]
struct SessionNow<'a>(Option<&'a DebugRec>, &'a [&'a Arc<Proc>]);

impl PartialEq<SessionNow<'_>> for SessionInputs {
    fn eq(&self, now: &SessionNow<'_>) -> bool {
        self.0.as_ref() == now.0
            && self.1.len() == now.1.len()
            && self.1.iter().zip(now.1).all(|(a, b)| Arc::ptr_eq(&a.0, b))
    }
}

impl From<SessionNow<'_>> for SessionInputs {
    fn from(now: SessionNow<'_>) -> Self {
        Self(now.0.cloned(), ByAlloc::all(now.1.iter().copied()))
    }
}

/// A debug session's node (none when it is history) and the session.
type Built = (Option<Arc<TreeNode>>, Arc<DebugSession>);

/// [`from_shared`], reusing the debug sessions `memo` holds where nothing they were built from
/// changed.
pub fn from_shared_with<P>(
    obs: &Observation<P>,
    procs: Vec<Arc<Proc>>,
    k: &Knowledge,
    memo: &mut SessionMemo,
    command_lines: CommandLines,
) -> World {
    let by_server_span = tracing::trace_span!("reconcile: by server").entered();
    let stdio = stdio_servers(&obs.table.servers, &procs);
    let (by_server, gone) = group_by_server(&obs.table.servers, &procs, &stdio);
    drop(by_server_span);
    let mut w = World {
        at: obs.at,
        servers: obs.table.servers.clone(),
        tree: Vec::new(),
        http_sessions: Vec::new(),
        debug_sessions: Vec::new(),
        sources: obs.sources.clone(),
        health: BTreeMap::new(),
        logs: BTreeMap::new(),
        me: obs.me.clone(),
        procs: Vec::new(),
        command_lines,
        index: OnceLock::new(),
    };
    let servers_span = tracing::trace_span!("reconcile: servers").entered();
    let empty = ServerKnowledge::default();
    for s in &obs.table.servers {
        let seen = obs.servers.iter().find(|x| x.pid == s.pid);
        let mine = by_server.get(&s.pid).cloned().unwrap_or_default();
        let know = k.server(s.pid).unwrap_or(&empty);
        live_server(&mut w, s, seen, know, &mine, memo);
    }
    for (pid, mine) in gone {
        gone_server(&mut w, pid, k.server(pid).unwrap_or(&empty), &mine, memo);
    }
    memo.turn();
    drop(servers_span);
    let _hosts = tracing::trace_span!("reconcile: hosts").entered();
    for r in &obs.remote {
        remote_server(&mut w, &r.url, &r.health);
    }
    host_trees(&mut w, &procs, &stdio);
    w.procs = procs;
    w.index = OnceLock::new();
    w
}

/// Stdio MCP servers that are not mcp-debugger (their own `server_pid`, not a live
/// mcp-debugger server's), and leaked stdio chains' roots that stand for themselves: what runs
/// under them belongs to them, not to a gone debug server.
fn stdio_servers(servers: &[ServerInfo], procs: &[Arc<Proc>]) -> BTreeSet<u32> {
    procs
        .iter()
        .filter(|p| {
            (p.role == Role::Server && p.mcp.is_some())
                || (matches!(p.role, Role::Other | Role::Wrapper) && p.server_pid == Some(p.pid))
        })
        .filter(|p| !servers.iter().any(|s| s.pid == p.pid))
        .map(|p| p.pid)
        .collect()
}

/// Hosts and what they started: each live host's mcp-debugger servers (moved under it) and
/// other stdio servers with what they started; servers whose host is gone under a node for the
/// gone host.
fn host_trees(w: &mut World, procs: &[Arc<Proc>], stdio: &BTreeSet<u32>) {
    let live_hosts: Vec<&Proc> = procs
        .iter()
        .map(|p| &**p)
        .filter(|p| p.role == Role::Host && p.exited_at.is_none())
        .collect();
    let host_of = |p: &Proc| p.host.as_ref().map(|h| (h.pid, h.start_ticks));
    let mut groups: BTreeMap<Option<(u32, u64)>, Vec<Arc<TreeNode>>> = BTreeMap::new();
    // mcp-debugger servers with a host: their whole server node moves under it.
    let mut top = Vec::new();
    for node in std::mem::take(&mut w.tree) {
        let host = (node.kind == NodeKind::Server)
            .then(|| node.pid.and_then(|pid| procs.iter().find(|p| p.pid == pid)))
            .flatten()
            .and_then(|p| host_of(p));
        match host {
            Some(h) => groups.entry(Some(h)).or_default().push(node),
            None => top.push(node),
        }
    }
    for &sp in stdio {
        let Some(server) = procs.iter().find(|p| p.pid == sp) else {
            continue;
        };
        let mine: Vec<&Proc> = procs
            .iter()
            .map(|p| &**p)
            .filter(|p| p.pid == sp || p.server_pid == Some(sp))
            .collect();
        groups
            .entry(host_of(server))
            .or_default()
            .extend(process_forest(&mine, w.command_lines));
    }
    for h in &live_hosts {
        let label = w.command_lines.text(&h.argv, HOST_LABEL_CHARS);
        let mut node = host_node(h.pid, &label, h.markers.host);
        node.role = Some(Role::Host);
        node.state = Some(h.sample.state);
        node.children = groups
            .remove(&Some((h.pid, h.start_ticks)))
            .unwrap_or_default();
        w.tree.push(Arc::new(node));
    }
    for (key, children) in groups {
        let mut node = gone_host_node(key, procs, w.command_lines);
        node.children = children;
        w.tree.push(Arc::new(node));
    }
    w.tree.extend(top);
}

/// The most characters of a host's command line in its label.
const HOST_LABEL_CHARS: usize = 120;

/// The node for a host that is gone, named as its servers remember it.
fn gone_host_node(key: Option<(u32, u64)>, procs: &[Arc<Proc>], lines: CommandLines) -> TreeNode {
    let remembered = key.and_then(|(pid, ticks)| {
        procs.iter().find_map(|p| {
            p.host
                .as_ref()
                .filter(|h| h.pid == pid && h.start_ticks == ticks)
        })
    });
    let mut node = match remembered {
        Some(h) => TreeNode::new(
            format!("gone-host:{}.{}", h.pid, h.start_ticks),
            NodeKind::GoneHost,
            format!(
                "{} host {} (gone): {}",
                h.kind.title(),
                h.pid,
                lines.text(&h.argv, HOST_LABEL_CHARS)
            ),
        ),
        None => TreeNode::new(
            "gone-host:unknown".into(),
            NodeKind::GoneHost,
            "stdio processes whose host debugtop never saw".into(),
        ),
    };
    node.pid = remembered.map(|h| h.pid);
    node
}

fn host_node(pid: u32, label: &str, kind: Option<crate::model::HostKind>) -> TreeNode {
    let what = kind.unwrap_or(crate::model::HostKind::Unlabelled).title();
    let mut node = TreeNode::new(
        format!("host:{pid}"),
        NodeKind::Host,
        format!("{what} host: {label}"),
    );
    node.pid = Some(pid);
    node
}

type ByServer<'a> = BTreeMap<u32, Vec<&'a Arc<Proc>>>;

/// Processes by the server they belong to; a server is "the same" only if it started no later
/// than the process that names it. The rest belong to gone servers.
fn group_by_server<'a>(
    servers: &[ServerInfo],
    procs: &'a [Arc<Proc>],
    stdio: &BTreeSet<u32>,
) -> (ByServer<'a>, ByServer<'a>) {
    let mut by_server: ByServer<'a> = BTreeMap::new();
    let mut gone: ByServer<'a> = BTreeMap::new();
    for p in procs {
        let Some(sp) = p.server_pid.filter(|sp| !stdio.contains(sp)) else {
            continue;
        };
        match servers.iter().find(|s| s.pid == sp) {
            Some(s) if s.start_time <= p.start_time => by_server.entry(sp).or_default().push(p),
            _ => gone.entry(sp).or_default().push(p),
        }
    }
    (by_server, gone)
}

fn live_server(
    w: &mut World,
    s: &ServerInfo,
    seen: Option<&ServerObservation>,
    know: &ServerKnowledge,
    mine: &[&Arc<Proc>],
    memo: &mut SessionMemo,
) {
    let health = seen.and_then(|x| x.health.as_ref());
    let ok_health = health.and_then(|h| h.result.as_ref().ok().map(|r| (h.url.as_str(), r)));
    let mut node = server_node(s, seen, mine);
    let others: Vec<&Arc<Proc>> = mine.iter().copied().filter(|p| p.pid != s.pid).collect();
    let (mut sessions, mut debug) =
        session_nodes(s.pid, know, &others, (w.at, w.command_lines), memo);
    let http = http_sessions(s.pid, know, ok_health, w.at);
    // Which listed HTTP session holds each debug session (the first that names it), found in
    // one pass: a walk of every session per HTTP session was quadratic.
    let holder: HashMap<&str, usize> = http
        .iter()
        .enumerate()
        .filter(|(_, h)| h.listed)
        .flat_map(|(i, h)| {
            h.session
                .debug_sessions
                .iter()
                .map(move |d| (d.as_str(), i))
        })
        .rev()
        .collect();
    let mut held: Vec<Vec<Arc<TreeNode>>> = vec![Vec::new(); http.len()];
    let mut unheld = Vec::with_capacity(sessions.len());
    for d in sessions {
        match d.session_id.as_deref().and_then(|sid| holder.get(sid)) {
            Some(&i) => held[i].push(d),
            None => unheld.push(d),
        }
    }
    sessions = unheld;
    for d in debug.iter_mut() {
        let Some(h) = holder.get(d.id.as_str()).map(|&i| &http[i].session) else {
            continue;
        };
        if d.http_session.as_ref() != Some(&h.id) {
            Arc::make_mut(d).http_session = Some(h.id.clone());
        }
    }
    for (h, mine) in http.iter().zip(held) {
        if !h.listed {
            continue;
        }
        let mut n = http_node(&h.session);
        n.children = mine;
        node.children.push(Arc::new(n));
    }
    if http.iter().any(|h| h.listed) {
        for d in &mut sessions {
            // A copy only when the node is also last step's (kept as it was built).
            Arc::make_mut(d)
                .facts
                .push(Fact::table(What::HttpHolderUnknown));
        }
    }
    node.children.extend(sessions);
    w.tree.push(Arc::new(node));
    w.http_sessions.extend(http.into_iter().map(|h| h.session));
    w.debug_sessions.extend(debug);
    if let Some(h) = health {
        w.health.insert(s.pid, h.result.clone());
    }
    if let Some(x) = seen {
        w.logs.insert(s.pid, x.logs.clone());
    }
    w.sources
        .extend(server_sources(s.pid, seen, know.dropped_over_user_cap));
}

fn server_node(s: &ServerInfo, seen: Option<&ServerObservation>, mine: &[&Arc<Proc>]) -> TreeNode {
    let label = seen
        .and_then(|x| x.health.as_ref().map(|h| h.url.clone()))
        .or_else(|| seen.and_then(|x| x.endpoints.base_url.clone()))
        .unwrap_or_else(|| s.mode.to_string());
    let mut node = TreeNode::new(
        format!("server:{}", s.pid),
        NodeKind::Server,
        format!("mcp-debugger {label}"),
    );
    node.pid = Some(s.pid);
    node.role = Some(Role::Server);
    let me = mine.iter().find(|p| p.pid == s.pid);
    node.state = me.map(|p| p.sample.state);
    if let Some(ns) = me.and_then(|p| p.ns.as_ref()) {
        node.facts.push(Fact::table(What::InContainer {
            container: ns
                .container
                .clone()
                .unwrap_or_else(|| format!("pid-ns:{}", ns.inode)),
            inner_pid: ns.pid,
        }));
    }
    node.facts.push(Fact::new(
        What::ServerMode {
            pid: s.pid,
            mode: s.mode,
        },
        FactSource::ProcessTable,
        Some(s.start_time),
    ));
    if let Some(e) = seen.map(|x| &x.endpoints) {
        node.facts.push(Fact::table(if e.port_confirmed {
            What::Listening {
                port: s.port.unwrap_or_default(),
            }
        } else if e.listening.is_empty() {
            What::NotListening
        } else {
            What::PortMismatch {
                argv: s.port,
                listening: e.listening.clone(),
            }
        }));
    }
    node
}

/// An HTTP session as the tree and the list show it.
struct HttpView {
    session: HttpSession,
    /// Shown in the tree (open, per `/health` or the log); ended ones are listed only.
    listed: bool,
}

/// HTTP sessions: those `/health` lists, plus (when `/health` could not be asked) those the
/// log opened and never ended; ended ones stay in the list (not the tree) for a while.
fn http_sessions(
    server: u32,
    know: &ServerKnowledge,
    health: Option<(&str, &Health)>,
    now: DateTime<Utc>,
) -> Vec<HttpView> {
    let mut ids: BTreeSet<String> = match health {
        Some((_, h)) => h.sessions.iter().cloned().collect(),
        None => know
            .http
            .iter()
            .filter(|(_, r)| r.ended.is_none())
            .map(|(k, _)| k.clone())
            .collect(),
    };
    let listed = ids.clone();
    ids.extend(
        know.http
            .iter()
            .filter(|(_, r)| r.ended.is_some_and(|(_, at)| now - at < ENDED_KEEP))
            .map(|(k, _)| k.clone()),
    );
    // Looked up by id, once each: `/health` may list tens of thousands (a walk of its list per
    // session was quadratic).
    let in_health: HashSet<&str> = health
        .map(|(_, h)| h.sessions.iter().map(String::as_str).collect())
        .unwrap_or_default();
    let details: HashMap<&str, &Vec<String>> = health
        .and_then(|(_, h)| h.details.as_ref())
        .map(|d| {
            d.iter()
                .map(|d| (d.http_session.as_str(), &d.debug_sessions))
                .collect()
        })
        .unwrap_or_default();
    ids.into_iter()
        .map(|id| {
            let rec = know.http.get(&id);
            let in_health = in_health.contains(id.as_str());
            let mut facts = rec.map(|r| r.facts.clone()).unwrap_or_default();
            if let (true, Some((url, _))) = (in_health, health) {
                facts.push(Fact::new(
                    What::ListedByHealth,
                    FactSource::Health {
                        url: url.to_owned(),
                    },
                    None,
                ));
            }
            let linked = details
                .get(id.as_str())
                .map(|d| (*d).clone())
                .unwrap_or_default();
            HttpView {
                listed: listed.contains(&id),
                session: HttpSession {
                    server_pid: Some(server),
                    in_health,
                    ended: rec.and_then(|r| r.ended.map(|(how, _)| how)),
                    debug_sessions: linked,
                    facts,
                    id,
                },
            }
        })
        .collect()
}

fn http_node(h: &HttpSession) -> TreeNode {
    let mut n = TreeNode::new(
        format!("http:{}", h.id),
        NodeKind::HttpSession,
        h.id.clone(),
    );
    n.status = Some(h.ended.map_or(NodeStatus::Open, NodeStatus::from));
    n.facts = h.facts.clone();
    n
}

/// Debug-session nodes (with their process subtrees) and loose processes of one server.
fn session_nodes(
    server_pid: u32,
    know: &ServerKnowledge,
    procs: &[&Arc<Proc>],
    (now, lines): (DateTime<Utc>, CommandLines),
    memo: &mut SessionMemo,
) -> (Vec<Arc<TreeNode>>, Vec<Arc<DebugSession>>) {
    let mut by_session: BTreeMap<&str, Vec<&Arc<Proc>>> = BTreeMap::new();
    let mut loose: Vec<&Proc> = Vec::new();
    for p in procs {
        match &p.session_id {
            Some(s) => by_session.entry(s.as_str()).or_default().push(p),
            None => loose.push(p),
        }
    }
    let mut ids: BTreeSet<&str> = by_session.keys().copied().collect();
    ids.extend(
        know.debug
            .iter()
            .filter(|(_, r)| r.ended.is_none_or(|at| now - at < ENDED_KEEP))
            .map(|(k, _)| k.as_str()),
    );
    let mut nodes = Vec::new();
    let mut out = Vec::new();
    for id in ids {
        let rec = know.debug.get(id);
        let ps = by_session.remove(id).unwrap_or_default();
        let (node, session) = memo.get_or_build(
            &SessionKey(server_pid, id.to_owned()),
            SessionNow(rec, &ps),
            |_| true,
            || session_and_node(server_pid, id, rec, &ps, lines),
        );
        nodes.extend(node);
        out.push(session);
    }
    nodes.extend(process_forest(&loose, lines));
    (nodes, out)
}

/// One debug session and, unless it ended with nothing left running (history, not part of
/// the tree), its node.
fn session_and_node(
    server_pid: u32,
    id: &str,
    rec: Option<&DebugRec>,
    ps: &[&Arc<Proc>],
    lines: CommandLines,
) -> Built {
    let ps: Vec<&Proc> = ps.iter().map(|p| &***p).collect();
    let session = debug_session(server_pid, id, rec, &ps);
    let node =
        (!(session.ended && ps.is_empty())).then(|| Arc::new(session_node(&session, &ps, lines)));
    (node, Arc::new(session))
}

fn debug_session(server: u32, id: &str, rec: Option<&DebugRec>, ps: &[&Proc]) -> DebugSession {
    let worker = ps
        .iter()
        .find(|p| p.role == Role::Worker && p.sample.state.is_alive())
        .map(|p| p.pid);
    let adapter = ps
        .iter()
        .find(|p| p.role == Role::Adapter && p.sample.state.is_alive())
        .map(|p| p.pid)
        .or(rec.and_then(|r| r.adapter_pid));
    DebugSession {
        id: id.to_owned(),
        server_pid: Some(server),
        name: rec.and_then(|r| r.name.clone()),
        language: rec
            .and_then(|r| r.language)
            .or_else(|| ps.iter().find_map(|p| p.language)),
        state: rec.and_then(|r| r.state),
        in_log: rec.is_some_and(|r| r.created),
        ended: rec.is_some_and(|r| r.ended.is_some()),
        ended_at: rec.and_then(|r| r.ended),
        ended_by: rec.and_then(|r| r.ended_by.clone()),
        worker_pid: worker,
        adapter_pid: adapter,
        http_session: rec.and_then(|r| r.http_session.clone()),
        worker_finished: rec.and_then(|r| r.worker_finished.as_ref().map(|(_, f)| f.clone())),
        worker_finished_at: rec.and_then(|r| r.worker_finished.as_ref().map(|(at, _)| *at)),
        facts: rec.map(|r| r.facts.clone()).unwrap_or_default(),
        progress: progress(rec, ps),
    }
}

/// How far the session got, from its records and its processes.
fn progress(rec: Option<&DebugRec>, ps: &[&Proc]) -> SessionProgress {
    let logs = rec.and_then(|r| r.logs.as_ref());
    let last_line = logs.and_then(|l| l.last_line.clone());
    let last_event = rec.and_then(|r| r.last_event.clone());
    let last_sign = match (last_line, last_event) {
        (Some(a), Some(b)) => Some(if b.at > a.at { b } else { a }),
        (a, b) => a.or(b),
    };
    SessionProgress {
        state_since: rec.and_then(|r| r.state_at),
        last_sign,
        stages: rec.map(|r| r.stages.clone()).unwrap_or_default(),
        trace: logs.and_then(|l| l.trace.clone()),
        // A live debuggee first; else a zombie one (exited, not reaped: worth seeing).
        debuggee: ps
            .iter()
            .filter(|p| p.role == Role::Debuggee && p.exited_at.is_none())
            .min_by_key(|p| !p.sample.state.is_alive())
            .map(|p| DebuggeeState {
                pid: p.pid,
                state: p.sample.state,
                tracer_pid: p.tracer_pid,
            }),
    }
}

fn session_node(d: &DebugSession, ps: &[&Proc], lines: CommandLines) -> TreeNode {
    let name = d
        .name
        .as_deref()
        .map(|n| format!("{n} "))
        .unwrap_or_default();
    let mut n = TreeNode::new(
        format!("debug:{}", d.id),
        NodeKind::DebugSession,
        format!("{name}{}", d.id),
    );
    n.session_id = Some(d.id.clone());
    n.status = Some(match (d.ended, d.state) {
        (true, _) => NodeStatus::Closed,
        (false, Some(s)) => s.into(),
        (false, None) => NodeStatus::Unknown,
    });
    n.facts = d.facts.clone();
    n.children = process_forest(ps, lines);
    n
}

fn gone_server(
    w: &mut World,
    pid: u32,
    know: &ServerKnowledge,
    mine: &[&Arc<Proc>],
    memo: &mut SessionMemo,
) {
    let mut node = TreeNode::new(
        format!("gone:{pid}"),
        NodeKind::GoneServer,
        format!("server {pid} (gone)"),
    );
    node.pid = Some(pid);
    node.facts.push(Fact::table(What::ServerGone { pid }));
    let (sessions, debug) = session_nodes(pid, know, mine, (w.at, w.command_lines), memo);
    node.children = sessions;
    w.debug_sessions.extend(debug);
    w.tree.push(Arc::new(node));
}

fn remote_server(w: &mut World, url: &str, h: &Result<Health, HealthError>) {
    let mut node = TreeNode::new(
        format!("remote:{url}"),
        NodeKind::RemoteServer,
        url.to_owned(),
    );
    match h {
        Ok(h) => {
            for id in &h.sessions {
                let mut n = TreeNode::new(format!("http:{id}"), NodeKind::HttpSession, id.clone());
                n.status = Some(NodeStatus::Open);
                n.facts.push(Fact::new(
                    What::ListedByHealth,
                    FactSource::Health {
                        url: url.to_owned(),
                    },
                    None,
                ));
                node.children.push(Arc::new(n));
            }
            w.sources.push(SourceStatus::new(
                SourceKind::Health,
                None,
                SourceState::Ok,
                format!("{url}: {} HTTP sessions", h.sessions.len()),
            ));
        }
        Err(e) => w.sources.push(SourceStatus::new(
            SourceKind::Health,
            None,
            SourceState::Failed,
            e.to_string(),
        )),
    }
    w.tree.push(Arc::new(node));
}

/// Processes as a forest by parent links within the set; a watchdog hangs under the debuggee it
/// names. Children ordered by pid; workers first among roots. Labelled with their command
/// lines, written as `lines` says.
pub fn process_forest(ps: &[&Proc], lines: CommandLines) -> Vec<Arc<TreeNode>> {
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
    roots.sort_by_key(|p| (p.role != Role::Worker, p.pid));
    roots
        .into_iter()
        .map(|p| Arc::new(proc_node(p, &children, 0, lines)))
        .collect()
}

fn proc_node(
    p: &Proc,
    children: &BTreeMap<u32, Vec<&Proc>>,
    depth: usize,
    lines: CommandLines,
) -> TreeNode {
    // The whole command line (the views cut what they show).
    let label = lines.text(&p.argv, usize::MAX);
    let mut n = TreeNode::new(proc_node_id(p.id()), NodeKind::Process, label);
    n.pid = Some(p.pid);
    n.role = Some(p.role);
    n.state = Some(p.sample.state);
    n.session_id = p.session_id.clone();
    if let Some(old) = p.remembered_ppid {
        n.facts.push(Fact::table(What::Reparented {
            from: old,
            to: p.ppid,
        }));
    }
    if let Some(ns) = &p.ns {
        n.facts.push(Fact::table(What::InContainer {
            container: ns
                .container
                .clone()
                .unwrap_or_else(|| format!("pid-ns:{}", ns.inode)),
            inner_pid: ns.pid,
        }));
    }
    if let Some(t) = p.tracer_pid {
        n.facts.push(Fact::table(What::TracedBy { pid: t }));
    }
    if depth < 64 {
        let mut kids = children.get(&p.pid).cloned().unwrap_or_default();
        kids.sort_by_key(|k| k.pid);
        n.children = kids
            .into_iter()
            .map(|k| Arc::new(proc_node(k, children, depth + 1, lines)))
            .collect();
    }
    n
}

fn server_sources(pid: u32, seen: Option<&ServerObservation>, dropped: u64) -> Vec<SourceStatus> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HttpSessionDetail, LogEventKind as K, LogOrigin, RemoteObservation};
    use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

    fn world(obs: &Observation) -> World {
        let mut k = Knowledge::default();
        let (table, rest) = obs.clone().take_procs();
        k.apply(&rest, &table);
        build(obs, Vec::new(), &k)
    }

    fn shape(n: &TreeNode, depth: usize, out: &mut Vec<String>) {
        let what = match (n.kind, n.role) {
            (NodeKind::Process, Some(r)) => format!("{r} {}", n.pid.unwrap_or(0)),
            (k, _) => format!("{k:?}"),
        };
        let status = n.status.map(|s| format!(" ({s})")).unwrap_or_default();
        out.push(format!("{}{what}{status}", "  ".repeat(depth)));
        for c in &n.children {
            shape(c, depth + 1, out);
        }
    }

    fn tree(w: &World) -> Vec<String> {
        let mut out = Vec::new();
        for n in &w.tree {
            shape(n, 0, &mut out);
        }
        out
    }

    fn js_chain(o: Obs) -> Obs {
        o.log(
            1,
            -30,
            LogOrigin::Server,
            K::DebugSessionCreated {
                session_id: "s-1".into(),
                name: Some("js".into()),
                language: Some("javascript".into()),
            },
        )
        .log(
            2,
            -29,
            LogOrigin::Server,
            K::StateChanged {
                session_id: "s-1".into(),
                from: "initializing".into(),
                to: "paused".into(),
            },
        )
        .proc(
            P::new(200, Role::Worker)
                .ppid(100)
                .owner(100)
                .session("s-1")
                .build(),
        )
        .proc(P::new(300, Role::Adapter).ppid(200).session("s-1").build())
        .proc(
            P::new(301, Role::Debuggee)
                .ppid(300)
                .group(300, 300)
                .session("s-1")
                .build(),
        )
        .proc(
            P::new(302, Role::Watchdog)
                .ppid(1)
                .inspector(301)
                .session("s-1")
                .build(),
        )
    }

    #[test]
    fn server_http_session_debug_session_and_the_whole_chain() {
        let w = world(&js_chain(Obs::at(0)).build());
        assert_eq!(
            tree(&w),
            [
                "Server",
                "  HttpSession (open)",
                "  DebugSession (paused)",
                "    worker 200",
                "      adapter 300",
                "        debuggee 301",
                "          watchdog 302",
            ],
            "the watchdog hangs under the debuggee it names"
        );
        let d = &w.debug_sessions[0];
        assert_eq!(
            (d.worker_pid, d.adapter_pid, d.in_log),
            (Some(200), Some(300), true)
        );
        assert!(w.tree[0]
            .facts
            .iter()
            .any(|f| f.what == What::Listening { port: 3001 }));
        let http = &w.http_sessions[0];
        assert!(http.in_health && http.facts.iter().any(|f| f.what == What::ListedByHealth));
        // 0.24.2 does not say which HTTP session holds it: under the server, saying why.
        assert!(w.tree[0].children[1]
            .facts
            .iter()
            .any(|f| f.what == What::HttpHolderUnknown));
    }

    #[test]
    fn debug_sessions_hang_under_the_http_session_details_name() {
        let mut o = js_chain(Obs::at(0)).build();
        if let Some(Ok(h)) = o.servers[0].health.as_mut().map(|h| h.result.as_mut()) {
            h.details = Some(vec![HttpSessionDetail {
                http_session: "h-1".into(),
                open_streams: Some(1),
                idle_ms: Some(10),
                stream_lost: None,
                debug_sessions: vec!["s-1".into()],
            }]);
        }
        let w = world(&o);
        assert_eq!(
            tree(&w)[..3],
            [
                "Server",
                "  HttpSession (open)",
                "    DebugSession (paused)"
            ]
        );
        assert_eq!(w.debug_sessions[0].http_session.as_deref(), Some("h-1"));
        let nested = &w.tree[0].children[0].children[0];
        assert!(!nested
            .facts
            .iter()
            .any(|f| f.what == What::HttpHolderUnknown));
    }

    /// Steps reconciliation with one memo over observations whose processes are given as
    /// shared allocations (as the state step shares them); each step's world.
    fn worlds(steps: Vec<(Observation, Vec<Arc<Proc>>)>) -> Vec<World> {
        let mut k = Knowledge::default();
        let mut memo = SessionMemo::default();
        steps
            .into_iter()
            .map(|(o, procs)| {
                let (table, o) = o.take_procs();
                k.apply(&o, &table);
                from_shared_with(&o, procs, &k, &mut memo, CommandLines::Hidden)
            })
            .collect()
    }

    fn gone_session(w: &World) -> (&Arc<DebugSession>, &Arc<TreeNode>) {
        let node = w
            .tree
            .iter()
            .find(|n| n.kind == NodeKind::GoneServer)
            .and_then(|g| g.children.first());
        match (w.debug_sessions.first(), node) {
            (Some(d), Some(n)) => (d, n),
            _ => panic!("no session under a gone server: {:?}", tree(w)),
        }
    }

    #[test]
    fn a_remembered_session_is_last_steps_until_a_process_joins_it() {
        // Processes of session s-1 of the gone server 999, each one allocation for every step.
        let of_s1 = |pid: u32, role: Role, ppid: u32| {
            Arc::new(
                P::new(pid, role)
                    .ppid(ppid)
                    .server(Some(999))
                    .session("s-1")
                    .build(),
            )
        };
        let worker = Arc::new(
            P::new(200, Role::Worker)
                .ppid(1)
                .owner(999)
                .session("s-1")
                .build(),
        );
        let two = vec![worker, of_s1(300, Role::Adapter, 200)];
        let mut three = two.clone();
        three.push(of_s1(301, Role::Debuggee, 300));
        let w = worlds(vec![
            (Obs::at(0).without_server().build(), two.clone()),
            (Obs::at(1).without_server().build(), two),
            (Obs::at(2).without_server().build(), three),
        ]);
        let (d0, n0) = gone_session(&w[0]);
        let (d1, n1) = gone_session(&w[1]);
        assert!(
            Arc::ptr_eq(d0, d1) && Arc::ptr_eq(n0, n1),
            "nothing changed: the same session and node"
        );
        let (_, n2) = gone_session(&w[2]);
        assert!(
            tree(&w[2]).contains(&"        debuggee 301".to_owned()),
            "a process that joins the session is in its node at once: {:?}",
            tree(&w[2])
        );
        assert_eq!(n2.children.len(), 1);
    }

    #[test]
    fn a_remembered_session_follows_its_log_and_the_http_session_health_names() {
        let procs: Vec<Arc<Proc>> = js_chain(Obs::at(0))
            .build()
            .table
            .procs
            .into_iter()
            .map(Arc::new)
            .collect();
        let with_details = |t: i64, details: bool| {
            let mut o = js_chain(Obs::at(t)).build();
            if let Some(Ok(h)) = o.servers[0].health.as_mut().map(|h| h.result.as_mut()) {
                h.details = details.then(|| {
                    vec![HttpSessionDetail {
                        http_session: "h-1".into(),
                        open_streams: Some(1),
                        idle_ms: Some(10),
                        stream_lost: None,
                        debug_sessions: vec!["s-1".into()],
                    }]
                });
            }
            (o, procs.clone())
        };
        let mut resumed = with_details(3, false);
        resumed.0 = js_chain(Obs::at(3))
            .log(
                3,
                2,
                LogOrigin::Server,
                K::StateChanged {
                    session_id: "s-1".into(),
                    from: "paused".into(),
                    to: "running".into(),
                },
            )
            .build();
        let w = worlds(vec![
            with_details(0, true),
            with_details(1, true),
            with_details(2, false),
            resumed,
        ]);
        for w in &w[..2] {
            assert_eq!(w.debug_sessions[0].http_session.as_deref(), Some("h-1"));
            assert_eq!(tree(w)[2], "    DebugSession (paused)");
        }
        assert_eq!(
            w[2].debug_sessions[0].http_session, None,
            "health no longer says so"
        );
        assert_eq!(tree(&w[2])[2], "  DebugSession (paused)");
        assert!(w[2].tree[0].children[1]
            .facts
            .iter()
            .any(|f| f.what == What::HttpHolderUnknown));
        assert_eq!(
            w[3].debug_sessions[0].state,
            Some(crate::model::SessionState::Running),
            "a new line in the log renews the session"
        );
    }

    #[test]
    fn processes_of_a_gone_server_stay_under_a_node_for_it() {
        let o = Obs::at(0)
            .proc(
                P::new(200, Role::Worker)
                    .ppid(1)
                    .owner(999)
                    .session("s-1")
                    .build(),
            )
            .proc(
                P::new(300, Role::Adapter)
                    .ppid(200)
                    .server(Some(999))
                    .session("s-1")
                    .build(),
            )
            .build();
        let w = world(&o);
        let t = tree(&w);
        assert!(t.contains(&"GoneServer".to_owned()), "{t:?}");
        let gone = w
            .tree
            .iter()
            .find(|n| n.kind == NodeKind::GoneServer)
            .expect("gone node");
        assert_eq!(gone.pid, Some(999));
        assert!(gone
            .facts
            .iter()
            .any(|f| f.what == What::ServerGone { pid: 999 }));
        assert_eq!(gone.walk().iter().filter(|n| n.role.is_some()).count(), 2);
    }

    #[test]
    fn regression_a_leaked_stdio_root_is_under_its_gone_host_not_a_gone_server() {
        let o = Obs::at(0)
            .without_server()
            .proc(
                P::new(800, Role::Other)
                    .argv("sleep 300")
                    .adopted(crate::model::Adopted::Init)
                    .server(Some(800))
                    .build(),
            )
            .proc(P::new(801, Role::Other).ppid(800).server(Some(800)).build())
            .build();
        let w = world(&o);
        assert_eq!(tree(&w), ["GoneHost", "  other 800", "    other 801"]);
        assert_eq!(
            w.tree[0].label,
            "stdio processes whose host debugtop never saw"
        );
    }

    #[test]
    fn an_ended_session_with_nothing_left_leaves_the_tree_but_stays_listed() {
        let o = Obs::at(0)
            .log(
                1,
                -30,
                LogOrigin::Server,
                K::DebugSessionCreated {
                    session_id: "s-1".into(),
                    name: None,
                    language: None,
                },
            )
            .log(
                2,
                -10,
                LogOrigin::Server,
                K::DebugSessionClosed {
                    session_id: "s-1".into(),
                },
            )
            .build();
        let w = world(&o);
        assert!(
            !tree(&w).iter().any(|l| l.contains("DebugSession")),
            "{:?}",
            tree(&w)
        );
        assert!(w.debug_sessions.iter().any(|d| d.id == "s-1" && d.ended));
    }

    #[test]
    fn a_remote_server_shows_what_its_health_lists_and_a_failure_in_words() {
        let mut o = Obs::at(0).without_server().build();
        o.remote.push(RemoteObservation {
            url: "http://10.0.0.5:3001".into(),
            health: Ok(Health {
                status: "ok".into(),
                mode: None,
                connections: None,
                sessions: vec!["h-9".into()],
                details: None,
            }),
        });
        o.remote.push(RemoteObservation {
            url: "http://10.0.0.6:3001".into(),
            health: Err(HealthError::Refused {
                url: "http://10.0.0.6:3001/health".into(),
            }),
        });
        let w = world(&o);
        assert_eq!(
            tree(&w),
            ["RemoteServer", "  HttpSession (open)", "RemoteServer"]
        );
        assert!(w
            .sources
            .iter()
            .any(|s| s.state == SourceState::Failed && s.detail.starts_with("connection refused")));
    }
}
