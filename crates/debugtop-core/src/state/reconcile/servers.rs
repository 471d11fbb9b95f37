//! One server's tree: its node, its HTTP sessions (from `/health`, or its log when `/health`
//! cannot be asked) with the debug sessions each holds when that is known, and its debug
//! sessions; a gone server's node; a server given by URL.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::super::knowledge::ServerKnowledge;
use super::super::statuses::{remote_health, server_sources};
use super::super::world::World;
use crate::model::{
    Fact, FactKind, FactSource, Health, HealthError, HttpSession, NodeKind, NodeStatus, Proc, Role,
    ServerInfo, ServerObservation, TreeNode,
};

use super::sessions::session_nodes;
use super::{SessionMemo, ENDED_KEEP};

pub(super) fn live_server(
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
    note_janitor_kills(w, s, know, mine);
    let others: Vec<&Arc<Proc>> = mine.iter().copied().filter(|p| p.pid != s.pid).collect();
    let (mut sessions, mut debug) =
        session_nodes(s.pid, know, &others, (w.at, w.command_lines), memo);
    let http = http_sessions(s.pid, know, ok_health, w.at);
    let holder = holders(&http);
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
                .push(Fact::table(FactKind::HttpHolderUnknown));
        }
    }
    node.children.extend(sessions);
    w.tree.push(Arc::new(node));
    w.http_sessions.extend(http.into_iter().map(|h| h.session));
    w.debug_sessions.extend(debug);
    note_sources(w, s.pid, seen, know);
}

/// What a live server's startup janitor said it killed, for the rules: its pids are its pid
/// namespace's, so only a server in debugtop's own namespace is taken at its word.
fn note_janitor_kills(w: &mut World, s: &ServerInfo, know: &ServerKnowledge, mine: &[&Arc<Proc>]) {
    if mine.iter().any(|p| p.pid == s.pid && p.ns.is_none()) {
        w.janitor_kills
            .extend(know.janitor_kills.iter().map(|k| (s.pid, k.clone())));
    }
}

/// Which listed HTTP session holds each debug session (the first that names it), found in
/// one pass: a walk of every session per HTTP session was quadratic.
fn holders(http: &[HttpView]) -> HashMap<&str, usize> {
    http.iter()
        .enumerate()
        .filter(|(_, h)| h.listed)
        .flat_map(|(i, h)| {
            h.session
                .debug_sessions
                .iter()
                .map(move |d| (d.as_str(), i))
        })
        .rev()
        .collect()
}

/// The server's `/health` outcome, how its logs were read, and its sources' statuses.
fn note_sources(w: &mut World, pid: u32, seen: Option<&ServerObservation>, know: &ServerKnowledge) {
    if let Some(h) = seen.and_then(|x| x.health.as_ref()) {
        w.health.insert(pid, h.result.clone());
    }
    if let Some(x) = seen {
        w.logs.insert(pid, x.logs.clone());
    }
    w.sources
        .extend(server_sources(pid, seen, know.dropped_over_user_cap));
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
        node.facts.push(Fact::table(FactKind::InContainer {
            container: ns
                .container
                .clone()
                .unwrap_or_else(|| format!("pid-ns:{}", ns.inode)),
            inner_pid: ns.pid,
        }));
    }
    node.facts.push(Fact::new(
        FactKind::ServerMode {
            pid: s.pid,
            mode: s.mode,
        },
        FactSource::ProcessTable,
        Some(s.start_time),
    ));
    if let Some((port, url)) = seen.and_then(said_port) {
        // The server's own word, agreed by a listening socket of its own.
        node.facts.push(Fact::new(
            FactKind::Listening { port },
            FactSource::Health { url },
            None,
        ));
    } else if let Some(e) = seen.map(|x| &x.endpoints) {
        node.facts.push(Fact::table(if e.port_confirmed {
            FactKind::Listening {
                port: s.port.unwrap_or_default(),
            }
        } else if e.listening.is_empty() {
            FactKind::NotListening
        } else {
            FactKind::PortMismatch {
                argv: s.port,
                listening: e.listening.clone(),
            }
        }));
    }
    node
}

/// The port `/health` said the server bound (taken only when a socket of its own listens
/// there) and the URL that said it.
fn said_port(seen: &ServerObservation) -> Option<(u16, String)> {
    let port = seen.endpoints.said_port?;
    let url = seen.health.as_ref()?.url.clone();
    Some((port, url))
}

/// An HTTP session as the tree and the list show it.
pub(super) struct HttpView {
    session: HttpSession,
    /// Shown in the tree (open, per `/health` or the log); ended ones are listed only.
    listed: bool,
}

/// HTTP sessions: those `/health` lists, plus (when `/health` could not be asked) those the
/// log opened and never ended; ended ones stay in the list (not the tree) for a while.
pub(super) fn http_sessions(
    server: u32,
    know: &ServerKnowledge,
    health: Option<(&str, &Health)>,
    now: DateTime<Utc>,
) -> Vec<HttpView> {
    let (ids, listed) = session_ids(know, health, now);
    let index = HealthIndex::of(health);
    ids.into_iter()
        .map(|id| HttpView {
            listed: listed.contains(&id),
            session: http_session(server, know, &index, id),
        })
        .collect()
}

/// Every session to show or list, and those of them the tree shows (open ones).
fn session_ids(
    know: &ServerKnowledge,
    health: Option<(&str, &Health)>,
    now: DateTime<Utc>,
) -> (BTreeSet<String>, BTreeSet<String>) {
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
    (ids, listed)
}

/// What `/health` said, looked up by id once each: it may list tens of thousands (a walk of
/// its list per session was quadratic).
struct HealthIndex<'a> {
    url: Option<&'a str>,
    listed: HashSet<&'a str>,
    details: HashMap<&'a str, &'a Vec<String>>,
}

impl<'a> HealthIndex<'a> {
    fn of(health: Option<(&'a str, &'a Health)>) -> Self {
        let listed = health
            .map(|(_, h)| h.sessions.iter().map(String::as_str).collect())
            .unwrap_or_default();
        let details = health
            .and_then(|(_, h)| h.details.as_ref())
            .map(|d| {
                d.iter()
                    .map(|d| (d.http_session.as_str(), &d.debug_sessions))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            url: health.map(|(url, _)| url),
            listed,
            details,
        }
    }
}

/// One HTTP session as known from the log and `/health`.
fn http_session(
    server: u32,
    know: &ServerKnowledge,
    index: &HealthIndex,
    id: String,
) -> HttpSession {
    let rec = know.http.get(&id);
    let in_health = index.listed.contains(id.as_str());
    let mut facts = rec.map(|r| r.facts.clone()).unwrap_or_default();
    if let (true, Some(url)) = (in_health, index.url) {
        facts.push(Fact::new(
            FactKind::ListedByHealth,
            FactSource::Health {
                url: url.to_owned(),
            },
            None,
        ));
    }
    HttpSession {
        server_pid: Some(server),
        in_health,
        ended: rec.and_then(|r| r.ended.map(|(how, _)| how)),
        debug_sessions: index
            .details
            .get(id.as_str())
            .map(|d| (*d).clone())
            .unwrap_or_default(),
        facts,
        id,
    }
}

pub(super) fn http_node(h: &HttpSession) -> TreeNode {
    let mut n = TreeNode::new(
        format!("http:{}", h.id),
        NodeKind::HttpSession,
        h.id.clone(),
    );
    n.status = Some(h.ended.map_or(NodeStatus::Open, NodeStatus::from));
    n.facts = h.facts.clone();
    n
}

pub(super) fn gone_server(
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
    node.facts.push(Fact::table(FactKind::ServerGone { pid }));
    let (sessions, debug) = session_nodes(pid, know, mine, (w.at, w.command_lines), memo);
    node.children = sessions;
    w.debug_sessions.extend(debug);
    w.tree.push(Arc::new(node));
}

pub(super) fn remote_server(w: &mut World, url: &str, h: &Result<Health, HealthError>) {
    let mut node = TreeNode::new(
        format!("remote:{url}"),
        NodeKind::RemoteServer,
        url.to_owned(),
    );
    for id in h.iter().flat_map(|h| &h.sessions) {
        let mut n = TreeNode::new(format!("http:{id}"), NodeKind::HttpSession, id.clone());
        n.status = Some(NodeStatus::Open);
        n.facts.push(Fact::new(
            FactKind::ListedByHealth,
            FactSource::Health {
                url: url.to_owned(),
            },
            None,
        ));
        node.children.push(Arc::new(n));
    }
    w.sources.push(remote_health(url, h));
    w.tree.push(Arc::new(node));
}
