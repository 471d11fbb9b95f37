//! Reconciliation: one tree per server from the process table, `/health` and what the logs
//! said — server → HTTP sessions → debug sessions → worker → adapter → launcher / debuggee →
//! watchdog. Debug sessions hang under their HTTP session only when the link is known (newer
//! `/health` `details`); otherwise directly under the server. Processes tied (by marker or owner
//! pid) to a server that is gone stay under a node for that gone server. Pure over the
//! observation and the knowledge; one entry point, [`reconcile`], in parts: servers
//! ([`servers`]), their debug sessions ([`sessions`]), hosts ([`hosts`]) and process forests
//! ([`forest`]). The world it makes is `super::world`; the statuses, `super::statuses`.

mod forest;
mod hosts;
mod servers;
mod sessions;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use chrono::Duration;

use super::knowledge::{DebugRec, Knowledge, ServerKnowledge};
use super::reuse::memo::{ByAlloc, Memo};
use super::world::World;
use crate::model::{DebugSession, Observation, Proc, ServerInfo, TreeNode};
use crate::redact::CommandLines;
use rustc_hash::FxHashMap;

pub use forest::process_forest;
use hosts::{host_trees, stdio_servers};
use servers::{gone_server, live_server, remote_server};

/// How long an ended session with no process left stays listed.
const ENDED_KEEP: Duration = Duration::seconds(60);

/// Each server's debug sessions as the last step built them — the session and its tree node —
/// with what they were built from: the same allocations of its processes and an equal record
/// from the logs give the very same session and node again, at incident scale thousands a tick.
/// And each server's whole set of them: when none of its processes and none of its records
/// changed (5,000 leaked workers of a gone server, sleeping), not even the sessions are looked
/// up one by one.
#[derive(Debug, Default)]
pub struct SessionMemo {
    servers: FxHashMap<u32, ServerSessions>,
    step: u64,
}

/// One server's sessions, as last built.
#[derive(Debug, Default)]
pub(super) struct ServerSessions {
    /// The whole of the last build, with what it was made from.
    last: Option<(ServerInputs, Sessions)>,
    /// Each session, by id.
    each: Memo<String, SessionInputs, Built>,
    /// The last step that asked for this server.
    step: u64,
}

/// A server's session nodes (with the loose processes' forest) and its debug sessions.
pub(super) type Sessions = (Vec<Arc<TreeNode>>, Vec<Arc<DebugSession>>);

/// What all of one server's sessions are made from: its processes by allocation, its debug
/// records, which of them are still listed now (an ended one is, for a while), and how
/// command lines are written. The records are copied only once the processes held still for a
/// step: a live server whose processes change every tick (its CPU) is not worth a copy of
/// every record it has every tick.
#[derive(Debug)]
pub(super) struct ServerInputs {
    procs: Vec<ByAlloc<Proc>>,
    /// `None`: not copied (the processes had just changed); never matches.
    debug: Option<BTreeMap<String, DebugRec>>,
    listed: Vec<bool>,
    lines: CommandLines,
}

/// [`ServerInputs`] as a step has them, borrowed.
#[derive(Debug)]
pub(super) struct ServerNow<'a> {
    pub(super) procs: &'a [&'a Arc<Proc>],
    pub(super) debug: &'a BTreeMap<String, DebugRec>,
    pub(super) listed: Vec<bool>,
    pub(super) lines: CommandLines,
}

impl ServerInputs {
    fn same_procs(&self, now: &ServerNow<'_>) -> bool {
        self.procs.len() == now.procs.len()
            && self
                .procs
                .iter()
                .zip(now.procs)
                .all(|(a, b)| Arc::ptr_eq(&a.0, b))
    }

    fn matches(&self, now: &ServerNow<'_>) -> bool {
        self.lines == now.lines
            && self.same_procs(now)
            && self.listed == now.listed
            && self.debug.as_ref() == Some(now.debug)
    }

    /// `now`, kept; its records copied only if `steady`.
    fn of(now: ServerNow<'_>, steady: bool) -> Self {
        Self {
            procs: ByAlloc::all(now.procs.iter().copied()),
            debug: steady.then(|| now.debug.clone()),
            listed: now.listed,
            lines: now.lines,
        }
    }
}

impl SessionMemo {
    /// `server`'s sessions: the last step's when `now` matches what they were made from,
    /// else `build`'s (given the server's per-session memo), remembered with `now`.
    pub(super) fn sessions(
        &mut self,
        server: u32,
        now: ServerNow<'_>,
        build: impl FnOnce(&mut Memo<String, SessionInputs, Built>) -> Sessions,
    ) -> Sessions {
        let step = self.step;
        let memo = self.servers.entry(server).or_default();
        memo.step = step;
        if let Some((_, out)) = memo.last.as_ref().filter(|(was, _)| was.matches(&now)) {
            return out.clone();
        }
        let steady = memo
            .last
            .as_ref()
            .is_some_and(|(was, _)| was.same_procs(&now));
        let out = build(&mut memo.each);
        memo.each.turn();
        memo.last = Some((ServerInputs::of(now, steady), out.clone()));
        out
    }

    /// Forgets the servers this step did not ask for; the next step begins.
    pub fn turn(&mut self) {
        let step = self.step;
        self.servers.retain(|_, m| m.step == step);
        self.step += 1;
    }
}

/// What a debug session and its node are made from: its record from the logs and its
/// processes, by allocation.
#[derive(Debug, PartialEq)]
pub struct SessionInputs(Option<DebugRec>, Vec<ByAlloc<Proc>>);

/// [`SessionInputs`] as a step has them, borrowed: a session that did not change is found
/// again without a copy of either.
#[derive(Debug, Clone, Copy)]
pub(super) struct SessionNow<'a>(Option<&'a DebugRec>, &'a [&'a Arc<Proc>]);

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
pub(super) type Built = (Option<Arc<TreeNode>>, Arc<DebugSession>);

/// Joins everything known into one tree per server, over `procs` (live and tombs; the
/// observation's own table's processes are not read, whether it still has them or not),
/// reusing the debug sessions `memo` holds where nothing they were built from changed; text
/// made from command lines written as `command_lines` says. The one entry point.
pub fn reconcile<P>(
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
    let mut w = World::empty(obs, command_lines);
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
    w.set_procs(procs);
    w
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{
        FactKind, Health, HealthError, HttpSessionDetail, LogEventKind as K, LogOrigin, NodeKind,
        RemoteObservation, Role, SourceState,
    };
    use crate::testing::{ObservationBuilder as Obs, ProcBuilder as P};

    /// One step's world of `obs` alone (no tombs, a fresh memo).
    fn build(obs: &Observation, tombs: Vec<Proc>, k: &Knowledge) -> World {
        let procs = obs
            .table
            .procs
            .iter()
            .cloned()
            .chain(tombs)
            .map(Arc::new)
            .collect();
        reconcile(
            obs,
            procs,
            k,
            &mut SessionMemo::default(),
            CommandLines::Hidden,
        )
    }

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
            .any(|f| f.what == FactKind::Listening { port: 3001 }));
        let http = &w.http_sessions[0];
        assert!(
            http.in_health
                && http
                    .facts
                    .iter()
                    .any(|f| f.what == FactKind::ListedByHealth)
        );
        // 0.24.2 does not say which HTTP session holds it: under the server, saying why.
        assert!(w.tree[0].children[1]
            .facts
            .iter()
            .any(|f| f.what == FactKind::HttpHolderUnknown));
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
            .any(|f| f.what == FactKind::HttpHolderUnknown));
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
                reconcile(&o, procs, &k, &mut memo, CommandLines::Hidden)
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

    /// A worker whose CPU figure changed (a new allocation: its session is built again) gave
    /// an equal session in a new allocation, which the memo then kept while `share` kept the
    /// old one: every step after, the 5,000 sessions of an incident were matched by key and
    /// compared whole (found by profiling the window at 5,000 orphans, where each worker's
    /// first figure did it).
    #[test]
    fn a_session_built_again_equal_is_the_same_allocation() {
        let worker = |cpu: f32| {
            Arc::new(
                P::new(200, Role::Worker)
                    .ppid(1)
                    .owner(999)
                    .session("s-1")
                    .cpu(cpu)
                    .build(),
            )
        };
        let w = worlds(vec![
            (Obs::at(0).without_server().build(), vec![worker(0.5)]),
            (Obs::at(1).without_server().build(), vec![worker(0.0)]),
        ]);
        let ((d0, n0), (d1, n1)) = (gone_session(&w[0]), gone_session(&w[1]));
        assert!(
            Arc::ptr_eq(d0, d1) && Arc::ptr_eq(n0, n1),
            "neither the session nor its node shows the figure"
        );
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
            .any(|f| f.what == FactKind::HttpHolderUnknown));
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
            .any(|f| f.what == FactKind::ServerGone { pid: 999 }));
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

    /// At 0: session s-1 of the server, created 30 s and closed 10 s before.
    fn s1_ended_10_s_before() -> Obs {
        Obs::at(0)
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
    }

    #[test]
    fn an_ended_session_with_nothing_left_leaves_the_tree_but_stays_listed() {
        let o = s1_ended_10_s_before().build();
        let w = world(&o);
        assert!(
            !tree(&w).iter().any(|l| l.contains("DebugSession")),
            "{:?}",
            tree(&w)
        );
        assert!(w.debug_sessions.iter().any(|d| d.id == "s-1" && d.ended));
    }

    /// The whole of a server's sessions is last step's while nothing it is made from changed
    /// — but time is among it: an ended session leaves the list a minute after it ended, with
    /// no process or record changed.
    #[test]
    fn a_servers_unchanged_sessions_are_last_steps_until_an_ended_one_is_a_minute_old() {
        // The lines are read once; later steps see the same server and nothing new.
        let w = worlds(vec![
            (s1_ended_10_s_before().build(), Vec::new()),
            (Obs::at(5).build(), Vec::new()),
            (Obs::at(51).build(), Vec::new()),
        ]);
        let (w0, w1, w2) = (
            &w[0].debug_sessions,
            &w[1].debug_sessions,
            &w[2].debug_sessions,
        );
        assert_eq!(w0.len(), 1, "ended 10 s ago: listed");
        assert!(
            Arc::ptr_eq(&w0[0], &w1[0]),
            "nothing changed: the very same session"
        );
        assert!(w2.is_empty(), "ended 61 s ago: no longer listed, {w2:?}");
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
                listening: None,
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
