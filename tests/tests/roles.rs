//! Roles from real processes carrying each role's markers: a worker, a js-debug chain
//! (adapter, debuggee, watchdog), a debugpy chain (adapter, launcher, debuggee), adapters of the
//! other languages, and a process that only carries `MCP_DEBUGGER_MAIN_PID`.
//!
//! Stand-ins, named: these are real processes, but the programs are the test's own
//! (`tests/fixtures/worker`, `js-debug`, `py/debugpy`, and `perl` renamed with `exec -a`) so every
//! shape is reproducible without a server. The same roles and markers on the real adapters —
//! js-debug vendored in the npm package, debugpy from PyPI — are checked in
//! `real_server.rs::real_adapters_carry_every_role_and_marker`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::Duration;

use debugtop_core::collect::linux::ProcfsCollector;
use debugtop_core::model::{Language, Proc, ProcessTable, Role};
use debugtop_e2e::procs::my_pid;
use debugtop_e2e::{fixture, wait_for, Spawned, TreeGuard};

const T: Duration = Duration::from_secs(15);

/// Scans until `done` holds for the processes of `session` (or panics with what was seen).
fn scan_session(session: &str, done: impl Fn(&[&Proc]) -> bool) -> ProcessTable {
    let mut c = ProcfsCollector::new().unwrap();
    let mut last = Vec::new();
    wait_for(T, || {
        let t = c.scan().ok()?;
        let ps: Vec<&Proc> = t
            .procs
            .iter()
            .filter(|p| p.session_id.as_deref() == Some(session))
            .collect();
        last = ps.iter().map(|p| (p.pid, p.role, p.argv.clone())).collect();
        done(&ps).then_some(t.clone())
    })
    .unwrap_or_else(|| panic!("session {session} never complete; last seen: {last:#?}"))
}

fn count(ps: &[&Proc], role: Role) -> usize {
    ps.iter().filter(|p| p.role == role).count()
}

#[test]
fn worker_with_markers_is_a_worker_owned_by_its_owner() {
    let session = uuid::Uuid::new_v4().to_string();
    let w = Spawned::spawn(
        Command::new("node")
            .arg(fixture("worker/dist/proxy/proxy-bootstrap.js"))
            .arg(format!("--mcp-owner-pid={}", my_pid()))
            .arg(format!("--mcp-session-id={session}")),
    );
    let t = scan_session(&session, |ps| count(ps, Role::Worker) == 1);
    let p = t.get(w.pid).unwrap();
    assert_eq!(p.role, Role::Worker);
    assert_eq!(p.owner_pid, Some(my_pid()));
    assert_eq!(p.server_pid, Some(my_pid()));
}

#[test]
fn js_debug_chain_under_a_worker() {
    let session = uuid::Uuid::new_v4().to_string();
    let w = Spawned::spawn(
        Command::new("node")
            .arg(fixture("worker/dist/proxy/proxy-bootstrap.js"))
            .arg(format!("--mcp-owner-pid={}", my_pid()))
            .arg(format!("--mcp-session-id={session}"))
            .env("MCP_DEBUGGER_MAIN_PID", my_pid().to_string())
            .env("FAKE_CHILD", fixture("js-debug/vsDebugServer.cjs")),
    );
    let _g = TreeGuard::new(w.pid);
    let t = scan_session(&session, |ps| {
        count(ps, Role::Adapter) == 1
            && count(ps, Role::Debuggee) == 1
            && count(ps, Role::Watchdog) == 1
    });
    let ps: Vec<&Proc> = t
        .procs
        .iter()
        .filter(|p| p.session_id.as_deref() == Some(session.as_str()))
        .collect();
    let adapter = ps.iter().find(|p| p.role == Role::Adapter).unwrap();
    let debuggee = ps.iter().find(|p| p.role == Role::Debuggee).unwrap();
    let watchdog = ps.iter().find(|p| p.role == Role::Watchdog).unwrap();
    assert_eq!(adapter.ppid, w.pid);
    assert_eq!(adapter.language, Some(Language::Javascript));
    assert_eq!(debuggee.ppid, adapter.pid);
    assert!(debuggee.markers.js_bootloader);
    // The watchdog has its own session and no MCP_DEBUGGER_MAIN_PID: tied through the
    // debuggee pid it names.
    assert_eq!(watchdog.sid, watchdog.pid);
    assert_eq!(watchdog.markers.main_pid, None);
    assert_eq!(watchdog.markers.inspector_pid, Some(debuggee.pid));
    for p in [adapter, debuggee, watchdog] {
        assert_eq!(p.server_pid, Some(my_pid()), "{p:?}");
    }
}

#[test]
fn debugpy_chain_with_its_session_from_debugpy_log_dir() {
    let session = uuid::Uuid::new_v4().to_string();
    let logs = tempfile::tempdir().unwrap();
    let run_dir = logs.path().join(format!("sessions/{session}/run-1"));
    let a = Spawned::spawn(
        Command::new("python3")
            .args([
                "-m",
                "debugpy.adapter",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
            ])
            .env("PYTHONPATH", fixture("py"))
            .env("DEBUGPY_LOG_DIR", &run_dir)
            .env("MCP_DEBUGGER_MAIN_PID", my_pid().to_string()),
    );
    let _g = TreeGuard::new(a.pid);
    let t = scan_session(&session, |ps| {
        count(ps, Role::Adapter) == 1
            && count(ps, Role::Launcher) == 1
            && count(ps, Role::Debuggee) == 2
    });
    let ps: Vec<&Proc> = t
        .procs
        .iter()
        .filter(|p| p.session_id.as_deref() == Some(session.as_str()))
        .collect();
    let launcher = ps.iter().find(|p| p.role == Role::Launcher).unwrap();
    assert_eq!(launcher.ppid, a.pid);
    let debuggee = ps
        .iter()
        .find(|p| p.role == Role::Debuggee && p.ppid == launcher.pid)
        .unwrap();
    assert!(debuggee.argv.iter().any(|x| x == "--adapter-access-token"));
    let grandchild = ps
        .iter()
        .find(|p| p.role == Role::Debuggee && p.ppid == debuggee.pid)
        .unwrap();
    assert_eq!(grandchild.language, Some(Language::Python));
    assert!(ps.iter().all(|p| p.server_pid == Some(my_pid())));
    // What leaves the core is redacted.
    let snap = serde_json::to_string(&debugtop_e2e::snapshot_of(&t, true)).unwrap();
    assert!(
        !snap.contains("s3cr3t-t0ken-value"),
        "debugpy's access token leaked into the snapshot"
    );
    assert!(serde_json::to_string(&debugtop_e2e::snapshot_of(&t, false))
        .unwrap()
        .contains("s3cr3t-t0ken-value"));
}

#[test]
fn adapters_of_the_other_languages_by_signature() {
    // Real processes whose argv carries each adapter's signature (argv[0] set with `exec -a`).
    let cases = [
        ("dlv", "dap --listen=127.0.0.1:0", Language::Go),
        ("codelldb", "--port 0", Language::Lldb),
        (
            "java",
            "-cp x.jar dev.mcp.JdiDapServer --port 0 --owner-pid OWNER",
            Language::Java,
        ),
        ("rdbg", "--open --port 0 -- app.rb", Language::Ruby),
        ("node", "/x/netcoredbg-bridge.js --port 0", Language::Dotnet),
        (
            "node",
            "/x/dist/mock-adapter-process.cjs --port 0 --host 127.0.0.1 --session mock-1",
            Language::Mock,
        ),
    ];
    let mut kids = Vec::new();
    for (argv0, rest, _) in cases {
        // The JDI server names its server with `--owner-pid` (as newer servers stamp it).
        let rest = rest.replace("OWNER", &my_pid().to_string());
        let script = format!("exec -a {argv0} perl -e 'sleep 300' -- {rest}");
        let mut cmd = Command::new("bash");
        cmd.args(["-c", &script])
            .env("MCP_DEBUGGER_MAIN_PID", my_pid().to_string());
        kids.push(Spawned::spawn(&mut cmd));
    }
    let mut c = ProcfsCollector::new().unwrap();
    let t = wait_for(T, || {
        let t = c.scan().ok()?;
        kids.iter()
            .all(|k| t.get(k.pid).is_some_and(|p| p.role == Role::Adapter))
            .then_some(t)
    })
    .expect("every adapter classified");
    for (k, (_, _, lang)) in kids.iter().zip(cases) {
        let p = t.get(k.pid).unwrap();
        assert_eq!(p.language, Some(lang), "{:?}", p.argv);
        assert_eq!(p.server_pid, Some(my_pid()));
    }
    let mock = t.get(kids[5].pid).unwrap();
    assert_eq!(mock.session_id.as_deref(), Some("mock-1"));
}

#[test]
fn main_pid_marker_alone_ties_a_process_to_its_server() {
    let p = Spawned::spawn(
        Command::new("node")
            .args(["-e", "setInterval(() => {}, 1 << 30)"])
            .env("MCP_DEBUGGER_MAIN_PID", my_pid().to_string()),
    );
    let mut c = ProcfsCollector::new().unwrap();
    let t = wait_for(T, || c.scan().ok().filter(|t| t.get(p.pid).is_some())).expect("seen");
    let got = t.get(p.pid).unwrap();
    assert_eq!(got.role, Role::Other);
    assert_eq!(got.server_pid, Some(my_pid()));
    // A plain process without markers is not listed at all.
    let plain = Spawned::spawn(Command::new("sleep").arg("300"));
    let t = c.scan().unwrap();
    assert!(t.get(plain.pid).is_none());
}
