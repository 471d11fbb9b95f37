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
