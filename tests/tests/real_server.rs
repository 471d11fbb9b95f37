//! The real `@debugmcp/mcp-debugger@0.24.2` from the npm registry, driven over real MCP
//! Streamable HTTP: server, worker and adapter of a mock-adapter debug session classified.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::time::Duration;

use debugtop_core::collect::linux::ProcfsCollector;
use debugtop_core::model::{Language, Role, ServerMode};
use debugtop_e2e::mcp::{package_dir, Client, Server};
use debugtop_e2e::{fixture, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_worker_and_mock_adapter_are_classified() {
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("mock", "e2e-mock").await;
    let started = client.start(&session, &fixture("mock/script.js")).await;
    assert_eq!(started["success"], true, "start_debugging: {started}");

    let mut c = ProcfsCollector::new().unwrap();
    let sid = session.clone();
    let t = tokio::task::spawn_blocking(move || {
        wait_for(Duration::from_secs(20), || {
            let t = c.scan().ok()?;
            let roles: Vec<Role> = t
                .procs
                .iter()
                .filter(|p| p.session_id.as_deref() == Some(sid.as_str()))
                .map(|p| p.role)
                .collect();
            (roles.contains(&Role::Worker) && roles.contains(&Role::Adapter)).then_some(t)
        })
    })
    .await
    .unwrap()
    .expect("worker and adapter of the session seen");

    let srv = t.get(server.pid()).expect("server listed");
    assert_eq!(srv.role, Role::Server);
    assert_eq!(srv.server_pid, Some(server.pid()));
    let info = t
        .servers
        .iter()
        .find(|s| s.pid == server.pid())
        .expect("server info");
    assert_eq!(info.mode, ServerMode::Http);
    assert_eq!(info.port, Some(server.port));
    assert_eq!(
        info.log_file.as_deref(),
        Some(server.log_file.to_str().unwrap())
    );
    assert_eq!(
        info.pkg_dir.as_deref(),
        Some(package_dir().to_str().unwrap())
    );

    let worker = t
        .procs
        .iter()
        .find(|p| p.role == Role::Worker && p.session_id.as_deref() == Some(&session))
        .unwrap();
    assert_eq!(worker.owner_pid, Some(server.pid()));
    assert_eq!(worker.server_pid, Some(server.pid()));
    assert_eq!(worker.ppid, server.pid());
    assert_eq!(
        (worker.pgid, worker.sid),
        (srv.pgid, srv.sid),
        "the worker shares the server's group"
    );
    assert_eq!(worker.markers.main_pid, Some(server.pid()));

    let adapter = t
        .procs
        .iter()
        .find(|p| p.role == Role::Adapter && p.session_id.as_deref() == Some(&session))
        .unwrap();
    assert_eq!(adapter.language, Some(Language::Mock));
    assert_eq!(adapter.ppid, worker.pid);
    assert_eq!(adapter.server_pid, Some(server.pid()));
    assert_eq!(adapter.pgid, adapter.pid, "the adapter leads its own group");

    let closed = client
        .call(
            "close_debug_session",
            serde_json::json!({ "sessionId": session }),
        )
        .await;
    assert_eq!(closed["success"], true, "{closed}");
    client.close().await;
}

/// Every role and marker on the real adapters (not stand-ins): debugpy from PyPI (adapter,
/// launcher, debuggee with its access token, session from `DEBUGPY_LOG_DIR`) and js-debug vendored
/// in the npm package (adapter with `MCP_DEBUGGER_MAIN_PID`, debuggee loading the bootloader,
/// watchdog in its own session naming its debuggee); and the real access token redacted in both
/// exports.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_adapters_carry_every_role_and_marker() {
    use debugtop_core::model::Proc;
    use debugtop_core::report::markdown;
    use debugtop_e2e::snapshot_of;
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let py = client.create_session("python", "real-py").await;
    let r = client.start(&py, &fixture("py-app/loop.py")).await;
    assert_eq!(r["success"], true, "python: {r}");
    let js = client.create_session("javascript", "real-js").await;
    let r = client.start(&js, &fixture("js-app/loop.js")).await;
    assert_eq!(r["success"], true, "javascript: {r}");

    let mut c = ProcfsCollector::new().unwrap();
    let (pys, jss) = (py.clone(), js.clone());
    let t = tokio::task::spawn_blocking(move || {
        wait_for(Duration::from_secs(30), || {
            let t = c.scan().ok()?;
            let roles = |s: &str| -> Vec<Role> {
                t.procs
                    .iter()
                    .filter(|p| p.session_id.as_deref() == Some(s) && p.sample.state.is_alive())
                    .map(|p| p.role)
                    .collect()
            };
            let (p, j) = (roles(&pys), roles(&jss));
            let all = |have: &[Role], want: &[Role]| want.iter().all(|r| have.contains(r));
            (all(
                &p,
                &[Role::Worker, Role::Adapter, Role::Launcher, Role::Debuggee],
            ) && all(
                &j,
                &[Role::Worker, Role::Adapter, Role::Debuggee, Role::Watchdog],
            ))
            .then_some(t)
        })
    })
    .await
    .unwrap()
    .expect("both real chains complete");
    let of = |s: &str, role: Role| -> Vec<&Proc> {
        t.procs
            .iter()
            .filter(|p| {
                p.session_id.as_deref() == Some(s) && p.role == role && p.sample.state.is_alive()
            })
            .collect()
    };
    let spid = server.pid();

    // debugpy: the adapter and everything under it carry DEBUGPY_LOG_DIR naming the session.
    let adapter = of(&py, Role::Adapter)[0];
    assert_eq!(adapter.language, Some(Language::Python));
    assert!(
        adapter.argv.iter().any(|a| a.contains("debugpy")),
        "{:?}",
        adapter.argv
    );
    assert!(
        adapter
            .markers
            .debugpy_log_dir
            .as_deref()
            .is_some_and(|d| d.contains(&format!("sessions/{py}/"))),
        "{:?}",
        adapter.markers
    );
    assert_eq!(
        adapter.pgid, adapter.pid,
        "the debugpy adapter leads its own group"
    );
    let launcher = of(&py, Role::Launcher)[0];
    assert_eq!(launcher.ppid, adapter.pid);
    let debuggee = of(&py, Role::Debuggee)
        .into_iter()
        .find(|p| p.argv.iter().any(|a| a == "--adapter-access-token"))
        .expect("the real debugpy debuggee carries its access token");
    assert_eq!(debuggee.ppid, launcher.pid);
    assert_eq!(
        debuggee.pgid, debuggee.pid,
        "the python debuggee has its own group"
    );
    let i = debuggee
        .argv
        .iter()
        .position(|a| a == "--adapter-access-token")
        .unwrap();
    let token = debuggee.argv[i + 1].clone();
    for p in [adapter, launcher, debuggee] {
        assert_eq!(p.server_pid, Some(spid), "{p:?}");
        assert_eq!(p.markers.main_pid, Some(spid), "{p:?}");
    }

    // js-debug: adapter with the server's marker, debuggee loading the bootloader, watchdog in
    // its own session without MCP_DEBUGGER_MAIN_PID, tied through NODE_INSPECTOR_INFO.
    let adapter = of(&js, Role::Adapter)[0];
    assert_eq!(adapter.language, Some(Language::Javascript));
    assert!(
        adapter.argv.iter().any(
            |a| a.ends_with("vsDebugServer.cjs") && a.contains(package_dir().to_str().unwrap())
        ),
        "the real vendored js-debug: {:?}",
        adapter.argv
    );
    assert_eq!(adapter.markers.main_pid, Some(spid));
    assert_eq!(adapter.pgid, adapter.pid, "js-debug leads its own group");
    let debuggee = of(&js, Role::Debuggee)
        .into_iter()
        .find(|p| p.markers.js_bootloader)
        .expect("a debuggee loading js-debug's bootloader");
    assert!(debuggee.argv.iter().any(|a| a.ends_with("loop.js")));
    let watchdog = of(&js, Role::Watchdog)[0];
    assert_eq!(watchdog.markers.main_pid, None);
    assert_eq!(watchdog.markers.inspector_pid, Some(debuggee.pid));
    assert_eq!(
        watchdog.sid, watchdog.pid,
        "the watchdog has its own session"
    );
    assert_eq!(watchdog.server_pid, Some(spid));

    // The real token never leaves redacted: not in the JSON, not in the Markdown report.
    let snap = snapshot_of(&t, true);
    let json = debugtop_core::actions::export::to_json(&snap).unwrap();
    let md = markdown::render(&snap);
    assert!(json.contains("--adapter-access-token"));
    assert!(
        !json.contains(&token),
        "the real debugpy token leaked into JSON"
    );
    assert!(
        !md.contains(&token),
        "the real debugpy token leaked into Markdown"
    );
    assert!(
        debugtop_core::actions::export::to_json(&snapshot_of(&t, false))
            .unwrap()
            .contains(&token)
    );
    client.close().await;
}
