//! MCP hosts and the stdio servers they spawn, as a user meets them: a plain host process (no
//! host markers, nothing MCP in its name) drives the real `@debugmcp/mcp-debugger` in stdio mode
//! with a mock session, the real `@modelcontextprotocol/server-memory` (npm), the real
//! `mcp-server-time` (PyPI), and the test's own server that ignores stdin EOF and keeps a
//! child (`tests/fixtures/stdio/eof-ignorer.mjs`, the real MCP SDK). Then the host is SIGKILLed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use debugtop_e2e::procs::{descendants, state_of};
use debugtop_e2e::{fixture, wait_for, Owned, Spawned};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
}

fn audit() -> (i32, Value) {
    let out = cli().args(["audit", "--json"]).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "audit could not run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (code, serde_json::from_slice(&out.stdout).unwrap())
}

fn gone(pid: u32) -> bool {
    state_of(pid).is_none_or(|s| s == 'Z' || s == 'X')
}

/// The host's configuration: every server, and for mcp-debugger one mock session.
fn config(dir: &std::path::Path) -> std::path::PathBuf {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let node_modules = tests.join("node_modules");
    let c = json!({"servers": [
        {"cmd": ["node", node_modules.join("@modelcontextprotocol/server-memory/dist/index.js")]},
        {"cmd": [tests.join(".venv/bin/mcp-server-time")]},
        {"cmd": ["node", fixture("stdio/eof-ignorer.mjs")]},
        {"cmd": ["node", node_modules.join("@debugmcp/mcp-debugger/dist/cli.mjs"), "stdio"],
         "calls": [
            {"name": "create_debug_session", "arguments": {"language": "mock", "name": "stdio-mock"}},
            {"name": "start_debugging", "arguments": {"sessionId": "$last.sessionId",
              "scriptPath": fixture("mock/script.js"), "dapLaunchArgs": {"stopOnEntry": true}}}
         ]}
    ]});
    let p = dir.join("host.json");
    std::fs::write(&p, c.to_string()).unwrap();
    p
}

/// Lines of a child's stdout, collected as they come.
fn collect_lines(child: &mut Spawned) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let out = child.child.stdout.take().unwrap();
    let l = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            l.lock().unwrap().push(line);
        }
    });
    lines
}

/// The tests here read the whole machine's findings: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_crashed_host_leaves_exactly_the_eof_ignoring_server_orphaned() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let mut host = Spawned::spawn(
        Command::new("node")
            .arg(fixture("stdio/host.mjs"))
            .arg(config(dir.path()))
            .stderr(Stdio::null()),
    );
    let ready = host.read_line(Duration::from_secs(60));
    let servers: Vec<u32> = ready
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("host said {ready:?}"))
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    let (memory, time, eof, debugger) = (servers[0], servers[1], servers[2], servers[3]);
    // Everything the host started, by identity, so the test cleans up only its own.
    let mut owned: Vec<Owned> = wait_for(Duration::from_secs(20), || {
        let d = descendants(host.pid);
        (d.len() >= 7).then_some(d)
    })
    .expect("the servers and what they started")
    .into_iter()
    .map(|(pid, _)| Owned::adopt(pid))
    .collect();
    let eof_child = descendants(eof)
        .first()
        .map(|(p, _)| *p)
        .expect("the eof-ignorer's child");

    // The host alive: no finding, and the tree shows it with every server.
    let (code, doc) = audit();
    assert_eq!(code, 0, "a live host raises nothing: {doc:#}");
    let snap: Value =
        serde_json::from_slice(&cli().arg("snapshot").output().unwrap().stdout).unwrap();
    let host_node = snap["tree"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["kind"] == "host" && n["pid"] == host.pid)
        .unwrap_or_else(|| panic!("no host node in {:#}", snap["tree"]));
    let text = host_node.to_string();
    for pid in [memory, time, eof, debugger, eof_child] {
        assert!(
            text.contains(&format!("\"pid\":{pid}")),
            "{pid} not under its host: {text}"
        );
    }
    assert!(
        host_node["children"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["kind"] == "server"
                && c["pid"] == debugger
                && c.to_string().contains("\"role\":\"worker\"")),
        "mcp-debugger in stdio mode sits under its host, its worker under it: {text}"
    );

    // A monitor running across the crash.
    let mut watch = Spawned::spawn(cli().args(["watch", "--json", "--interval", "500"]));
    let stream = collect_lines(&mut watch);
    wait_for(Duration::from_secs(10), || {
        // The hello line, then at least one update.
        (stream.lock().unwrap().len() >= 2).then_some(())
    })
    .expect("watch streams");

    host.signal(Signal::SIGKILL);
    host.reap();
    // The well-behaved servers exit on stdin EOF (mcp-debugger with its worker and adapter).
    let well_behaved: Vec<u32> = owned
        .iter()
        .map(|o| o.pid)
        .filter(|p| *p != eof && *p != eof_child)
        .collect();
    wait_for(Duration::from_secs(20), || {
        well_behaved.iter().all(|p| gone(*p)).then_some(())
    })
    .unwrap_or_else(|| panic!("a well-behaved server outlived its host: {well_behaved:?}"));
    assert!(
        !gone(eof) && !gone(eof_child),
        "the EOF-ignoring server and its child survive"
    );

    // A one-shot audit, started after the crash, knows nothing of the host: the pipe fact.
    let (code, doc) = audit();
    assert_eq!(code, 1, "{doc:#}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "exactly one finding: {doc:#}");
    let f = &findings[0];
    assert_eq!(f["kind"], "orphaned-server");
    assert_eq!(f["pids"], json!([eof]));
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("no request can ever reach it"),
        "{evidence}"
    );
    let planned: Vec<u64> = f["plan"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pid"].as_u64().unwrap())
        .collect();
    assert!(
        planned.contains(&u64::from(eof)) && planned.contains(&u64::from(eof_child)),
        "its child is in the plan: {planned:?}"
    );

    // The monitor that saw the host alive names it.
    let seen = wait_for(Duration::from_secs(20), || {
        stream.lock().unwrap().iter().rev().find_map(|l| {
            let u: Value = serde_json::from_str(l).ok()?;
            u["snapshot"]["findings"]
                .as_array()?
                .iter()
                .find(|f| f["kind"] == "orphaned-server" && f["pids"] == json!([eof]))
                .cloned()
        })
    })
    .expect("watch reports the orphaned server");
    assert!(
        seen["evidence"]
            .to_string()
            .contains(&format!("its MCP host {} ", host.pid)),
        "{seen:#}"
    );
    drop(watch);

    let id = f["id"].as_str().unwrap().to_owned();
    let out = cli().args(["kill", &id, "--yes"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        wait_for(Duration::from_secs(5), || (gone(eof) && gone(eof_child))
            .then_some(()))
        .is_some(),
        "the server and its child are gone"
    );
    owned.clear();
}

/// Findings of the audit that name any of `pids` (as a subject or in their plan).
fn findings_about(doc: &Value, pids: &[u32]) -> Vec<Value> {
    let named = |f: &Value| -> Vec<u64> {
        let subjects = f["pids"].as_array().into_iter().flatten();
        let planned = f["plan"]["targets"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| &t["pid"]);
        subjects.chain(planned).filter_map(Value::as_u64).collect()
    };
    doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| {
            named(f)
                .iter()
                .any(|p| pids.iter().any(|q| u64::from(*q) == *p))
        })
        .cloned()
        .collect()
}

/// Every process node's pid under the tree node `n`.
fn pids_under(n: &Value, out: &mut Vec<u64>) {
    for c in n["children"].as_array().into_iter().flatten() {
        if let Some(p) = c["pid"].as_u64() {
            out.push(p);
        }
        pids_under(c, out);
    }
}

/// What `pid` started (waiting for it to start something), each to be ended on drop.
fn children_of(pid: u32) -> Vec<Owned> {
    wait_for(Duration::from_secs(10), || {
        let d = descendants(pid);
        (!d.is_empty()).then_some(d)
    })
    .unwrap_or_else(|| panic!("{pid} started nothing"))
    .into_iter()
    .map(|(p, _)| Owned::adopt(p))
    .collect()
}

/// The near misses of `orphaned-server`, for real: a daemon under init whose stdin is
/// `/dev/null`; a server re-parented to init whose supervisor still holds its pipes; and a
/// nested mcp-debugger (stdio, with a mock session) under a live host that itself runs with an
/// outer server's `MCP_DEBUGGER_MAIN_PID` (an agent inside a debuggee, upstream #717). None
/// raises a finding, the nested server keeps its own worker. Then the positive control: the
/// supervisor dies, nobody holds the pipes, and the same server is an orphaned server.
#[test]
fn near_misses_daemon_supervised_server_nested_mcp_debugger_raise_nothing() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let eof = fixture("stdio/eof-ignorer.mjs");
    // A daemon: re-parented to init, stdin and stdout /dev/null.
    let mut sh = Spawned::spawn(Command::new("sh").args([
        "-c",
        "node \"$1\" </dev/null >/dev/null 2>&1 & echo $!",
        "sh",
        &eof,
    ]));
    let daemon: u32 = sh.read_line(Duration::from_secs(10)).parse().unwrap();
    let _daemon = Owned::adopt(daemon);
    // The eof-ignorer starts a child of its own: ours too, ended with it (it leaked before).
    let _daemon_child = children_of(daemon);
    sh.reap();
    // A supervised server: re-parented, its supervisor holds both ends.
    let mut supervisor = Spawned::spawn(
        Command::new("python3")
            .arg(fixture("supervisor/supervisor.py"))
            .args(["node", &eof]),
    );
    let ready = supervisor.read_line(Duration::from_secs(20));
    let supervised: u32 = ready.strip_prefix("ready ").unwrap().parse().unwrap();
    let _supervised = Owned::adopt(supervised);
    let _supervised_child = children_of(supervised);
    // A nested mcp-debugger under a live host that carries an outer server's marker.
    let outer = debugtop_e2e::mcp::Server::start(60_000);
    let dir = tempfile::tempdir().unwrap();
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let c = json!({"servers": [
        {"cmd": ["node", tests.join("node_modules/@debugmcp/mcp-debugger/dist/cli.mjs"), "stdio"],
         "calls": [
            {"name": "create_debug_session", "arguments": {"language": "mock", "name": "nested"}},
            {"name": "start_debugging", "arguments": {"sessionId": "$last.sessionId",
              "scriptPath": fixture("mock/script.js"), "dapLaunchArgs": {"stopOnEntry": true}}}
         ]}
    ]});
    std::fs::write(dir.path().join("nested.json"), c.to_string()).unwrap();
    let mut host = Spawned::spawn(
        Command::new("node")
            .arg(fixture("stdio/host.mjs"))
            .arg(dir.path().join("nested.json"))
            .env("MCP_DEBUGGER_MAIN_PID", outer.pid().to_string())
            .stderr(Stdio::null()),
    );
    let ready = host.read_line(Duration::from_secs(60));
    let nested: u32 = ready.strip_prefix("ready ").unwrap().parse().unwrap();
    let nested_worker = wait_for(Duration::from_secs(20), || {
        descendants(nested).into_iter().find_map(|(p, _)| {
            let argv = std::fs::read(format!("/proc/{p}/cmdline")).ok()?;
            String::from_utf8_lossy(&argv)
                .contains("proxy-bootstrap")
                .then_some(p)
        })
    })
    .expect("the nested server's worker");
    let _host_tree: Vec<Owned> = descendants(host.pid)
        .into_iter()
        .map(|(p, _)| Owned::adopt(p))
        .collect();

    let ours = [
        daemon,
        supervised,
        supervisor.pid,
        host.pid,
        nested,
        nested_worker,
        outer.pid(),
    ];
    let (_, doc) = audit();
    let bad = findings_about(&doc, &ours);
    assert!(bad.is_empty(), "near misses raised findings: {bad:#?}");
    let snap: Value =
        serde_json::from_slice(&cli().arg("snapshot").output().unwrap().stdout).unwrap();
    let tree = snap["tree"].as_array().unwrap();
    let host_node = tree
        .iter()
        .find(|n| n["kind"] == "host" && n["pid"] == host.pid)
        .unwrap_or_else(|| panic!("no host node for {}: {:#}", host.pid, snap["tree"]));
    let nested_node = host_node["children"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "server" && c["pid"] == nested)
        .unwrap_or_else(|| panic!("the nested server is not under its host: {host_node:#}"));
    let mut under = Vec::new();
    pids_under(nested_node, &mut under);
    assert!(
        under.contains(&u64::from(nested_worker)),
        "its worker is under it: {nested_node:#}"
    );
    let outer_node = tree
        .iter()
        .find(|n| n["kind"] == "server" && n["pid"] == outer.pid())
        .expect("the outer server");
    let mut under_outer = Vec::new();
    pids_under(outer_node, &mut under_outer);
    assert!(
        !under_outer.contains(&u64::from(nested))
            && !under_outer.contains(&u64::from(nested_worker)),
        "the nested server was taken for the outer server's process: {outer_node:#}"
    );

    // The positive control: without its supervisor, nobody can write to the server.
    supervisor.signal(Signal::SIGKILL);
    supervisor.reap();
    let (code, doc) = audit();
    assert_eq!(code, 1, "{doc:#}");
    let f = findings_about(&doc, &[supervised]);
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["kind"], "orphaned-server");
    assert!(
        findings_about(&doc, &[daemon, host.pid, nested, nested_worker]).is_empty(),
        "{doc:#}"
    );
}
