//! `debugtop-cli` as a user runs it, against the real mcp-debugger.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;

use debugtop_e2e::fixture;
use debugtop_e2e::mcp::{Client, Server};
use serde_json::Value;

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_and_watch_show_a_real_server_and_its_session() {
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("mock", "cli-mock").await;
    client.start(&session, &fixture("mock/script.js")).await;

    let out = tokio::task::spawn_blocking(|| cli().arg("snapshot").output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["schema"], "debugtop.snapshot/1");
    let tree = snap["tree"].as_array().unwrap();
    let srv = tree
        .iter()
        .find(|n| n["pid"] == server.pid())
        .expect("server node");
    assert_eq!(srv["kind"], "server");
    let text = srv.to_string();
    assert!(
        text.contains(&session),
        "session {session} in the server's subtree"
    );
    assert!(snap["debug_sessions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["id"] == session.as_str() && d["name"] == "cli-mock"));

    let out = tokio::task::spawn_blocking(|| {
        cli()
            .args(["watch", "--json", "--interval", "200", "--count", "2"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["seq"], 1);
    assert_eq!(lines[1]["seq"], 2);
    assert!(lines[1]["snapshot"]["tree"].to_string().contains(&session));
    client.close().await;
}

#[test]
fn unknown_flags_fail_with_usage_and_exit_2() {
    let out = cli().args(["snapshot", "--bogus"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--bogus"));
}

#[test]
fn snapshot_to_an_unwritable_path_says_so() {
    let out = cli()
        .args(["snapshot", "--out", "/nonexistent-dir/x.json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cannot write /nonexistent-dir/x.json"),
        "{err}"
    );
}
