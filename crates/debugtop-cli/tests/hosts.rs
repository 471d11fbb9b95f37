//! MCP hosts and the stdio servers they spawn, as a user meets them: a plain host process (no
//! host markers, nothing MCP in its name) drives the real `@debugmcp/mcp-debugger` in stdio mode
//! with a mock session, the real `@modelcontextprotocol/server-memory` (npm), the real
//! `mcp-server-time` (PyPI), and the test's own server that ignores stdin EOF and keeps a
//! child (`tests/fixtures/stdio/eof-ignorer.mjs`, the real MCP SDK). Then the host is SIGKILLed.
//! Each test judges only the findings about processes it started. They run beside nothing but
//! each other all the same (`make test`: two at a time, `.config/nextest.toml`'s `hosts-pairs`;
//! alone under a plain `cargo nextest run`; one at a time under `cargo test`): their verdicts
//! wait on silences, a spinner's share of a core and one-shot looks, which two cores busy with
//! other suites delay past their windows (seen: a watched audit missing a duplicate, a spinner
//! under 25 %, a kill's look missing a container).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use debugtop_core::model::FindingId;
use debugtop_e2e::dockerd::Dockerd;
use debugtop_e2e::procs::{descendants, state_of};
use debugtop_e2e::{fixture, wait_for, Owned, Spawned};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
}

/// A one-shot `audit --json` judged on the test's own processes: the findings that name any of
/// `ours` (as a subject or a plan's target), and the exit code they would give (other tests
/// run beside this one, and the machine's other findings are not this test's to judge).
fn audit(ours: &[u32]) -> (i32, Value) {
    let out = cli().args(["audit", "--json"]).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "audit could not run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mine = findings_about(&doc, ours);
    // The CLI's own exit code where it is this test's to judge: any finding means 1 (with none
    // of ours, the machine's others decide it).
    if !mine.is_empty() {
        assert_eq!(code, 1, "findings, yet audit exited {code}: {doc:#}");
    }
    let code = i32::from(!mine.is_empty());
    doc["findings"] = Value::Array(mine);
    (code, doc)
}

fn gone(pid: u32) -> bool {
    state_of(pid).is_none_or(|s| s == 'Z' || s == 'X')
}

/// The identities (pid, start ticks) of processes the test started.
fn identities(owned: &[Owned]) -> Vec<(u32, u64)> {
    owned.iter().map(|o| (o.pid, o.ticks)).collect()
}

/// The pids a test may judge: the host, what it runs now, and what the test already owns
/// (what outlived a dead host is no longer under it).
fn ours_now(host: u32, owned: &[Owned]) -> Vec<u32> {
    let mut ours: Vec<u32> = owned.iter().map(|o| o.pid).collect();
    ours.push(host);
    ours.extend(descendants(host).into_iter().map(|(p, _)| p));
    ours
}

/// The identity a finding is about (its id's subject, `kind:pid.ticks`), when it is a process.
fn subject_of(f: &Value) -> Option<(u32, u64)> {
    let id: FindingId = f["id"].as_str()?.parse().ok()?;
    id.proc().map(|p| (p.pid, p.start_ticks))
}

/// Every target of a plan, as identities (`pid.start-ticks`).
fn plan_identities(plan: &Value) -> Vec<(u32, u64)> {
    plan["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let pid = t["pid"].as_u64().and_then(|p| u32::try_from(p).ok());
            match (pid, t["start_ticks"].as_u64()) {
                (Some(pid), Some(ticks)) => (pid, ticks),
                _ => panic!("a target without an identity: {t:#}"),
            }
        })
        .collect()
}

/// Refuses (panics) unless every target of `plan` — and the main process of the container it
/// ends, if any — is one of `ours`, by pid and start ticks: a plan that reaches anything the
/// test did not start is never executed.
fn assert_only_ours(what: &str, plan: &Value, ours: &[(u32, u64)]) {
    let targets = plan_identities(plan);
    assert!(
        !targets.is_empty(),
        "{what}: a plan with no target: {plan:#}"
    );
    for (pid, ticks) in &targets {
        assert!(
            ours.contains(&(*pid, *ticks)),
            "refusing to execute {what}: its plan targets {pid}.{ticks}, which this test did not \
             start (ours: {ours:?}): {plan:#}"
        );
    }
    if let Some(c) = plan["container"].as_object() {
        let main = c["main_pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok())
            .zip(c["main_start_ticks"].as_u64());
        assert!(
            main.is_some_and(|m| ours.contains(&m)),
            "refusing to execute {what}: it ends a container whose main process is not ours: \
             {plan:#}"
        );
    }
}

/// Kills what the finding `id` plans, as root, only after a dry run showed every target to be
/// the test's own (`assert_only_ours`), and then only those identities (`--only`: anything the
/// plan holds by then that was not confirmed is refused, not signalled). `env` reaches the CLI
/// (docker's command). The answer (`KillAnswer`).
fn kill_ours(id: &str, ours: &[(u32, u64)], env: &[(&str, String)]) -> Value {
    let run = |args: &[&str]| {
        let mut cmd = cli();
        cmd.arg("kill").arg(id).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        assert_eq!(
            out.status.code(),
            Some(0),
            "kill {id} {args:?}: {answer:#} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        answer
    };
    let dry = run(&["--dry-run", "--json"]);
    assert!(dry["report"].is_null(), "a dry run executed: {dry:#}");
    assert_only_ours(id, &dry["plan"], ours);
    let only: Vec<String> = plan_identities(&dry["plan"])
        .iter()
        .map(|(pid, ticks)| format!("{pid}.{ticks}"))
        .collect();
    let answer = run(&["--yes", "--json", "--only", &only.join(",")]);
    assert_only_ours(id, &answer["plan"], ours);
    answer
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

/// Starts `host.mjs` on `config` (with `env`) and waits for it to say which servers it started.
fn start_host(config: &std::path::Path, env: &[(&str, String)]) -> (Spawned, Vec<u32>) {
    let mut cmd = Command::new("node");
    cmd.arg(fixture("stdio/host.mjs"))
        .arg(config)
        .stderr(Stdio::null())
        // A job of its own, as a shell with job control starts a host: its orphans keep that
        // group, which is how a one-shot audit knows init did not start them even when the
        // tree runs in init's own session (a CI runner that never made one).
        .process_group(0);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut host = Spawned::spawn(&mut cmd);
    let ready = host.read_line(Duration::from_secs(90));
    let servers = ready
        .strip_prefix("ready ")
        .unwrap_or_else(|| panic!("host said {ready:?}"))
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    (host, servers)
}

/// See the module's doc: verdicts that wait on time, one test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

#[test]
fn a_crashed_host_leaves_exactly_the_eof_ignoring_server_orphaned() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let (mut host, servers) = start_host(&config(dir.path()), &[]);
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
    let (code, doc) = audit(&ours_now(host.pid, &owned));
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
    let under = subtree_pids(host_node);
    for pid in [memory, time, eof, debugger, eof_child] {
        assert!(
            under.contains(&u64::from(pid)),
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
    let (code, doc) = audit(&ours_now(host.pid, &owned));
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

    // Executed only once its plan is shown to hold the test's own processes alone.
    let id = f["id"].as_str().unwrap().to_owned();
    kill_ours(&id, &identities(&owned), &[]);
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
    let (host, servers) = start_host(
        &dir.path().join("nested.json"),
        &[("MCP_DEBUGGER_MAIN_PID", outer.pid().to_string())],
    );
    let nested = servers[0];
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
    let (code, doc) = audit(&ours);
    assert_eq!(code, 0, "near misses raised findings: {doc:#}");
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
    let (code, doc) = audit(&ours);
    assert_eq!(code, 1, "{doc:#}");
    let f = findings_about(&doc, &[supervised]);
    assert_eq!(f.len(), 1, "{doc:#}");
    assert_eq!(f[0]["kind"], "orphaned-server");
    assert!(
        findings_about(&doc, &[daemon, host.pid, nested, nested_worker]).is_empty(),
        "{doc:#}"
    );
}

/// A stdio server as the seed's repro wrote it: answers `initialize` and `tools/list` by hand
/// (no SDK), keeps a child and a timer, ignores stdin EOF; nothing MCP in its name, no package.
const BARE_SERVER: &str = r#"
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
createInterface({ input: process.stdin }).on('line', (l) => {
  let m; try { m = JSON.parse(l); } catch { return; }
  if (m.id === undefined) return;
  const result = m.method === 'initialize'
    ? { protocolVersion: '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'bare', version: '1' } }
    : { tools: [] };
  process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }) + '\n');
});
spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
setInterval(() => {}, 1 << 30);
"#;

/// A server written with the real Python MCP SDK (`mcp` 2.x, `MCPServer`), kept alive past
/// stdin's EOF by a non-daemon thread.
const PY_SERVER: &str = r#"
import threading
import time

from mcp.server import MCPServer

app = MCPServer("weather")


@app.tool()
def ping() -> str:
    return "pong"


threading.Thread(target=lambda: time.sleep(10**6)).start()
app.run()
"#;

/// The host's helper that, once its stdout's reader is gone, loops on the failing write
/// (claude-code's orphan: ~79k writes a second, state R).
const SPINNER: &str = "import os, time\nwhile True:\n    try:\n        os.write(1, b'tick\\n')\n        time.sleep(0.5)\n    except OSError:\n        pass\n";

/// The shapes hosts really start servers in, each in a temporary folder of its own: the seed's
/// bare server; the SDK server as a package (`weather-tool`, the SDK a dependency, nothing MCP
/// in any name) through `npm exec`, and through `sh -c`; the Python SDK server through `sh -c`
/// with the venv's python; the host's own helper (a plain python sleep loop, never
/// initialised); the same helper spinning on its closed stdout; and the real memory server
/// behind `sh -c`, which exits with its stdin.
fn wrapped_config(dir: &std::path::Path) -> std::path::PathBuf {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let node_modules = tests.join("node_modules");
    let bare = dir.join("bare");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::write(bare.join("server.mjs"), BARE_SERVER).unwrap();
    let tool = dir.join("tool");
    std::fs::create_dir_all(&tool).unwrap();
    std::fs::write(
        tool.join("package.json"),
        json!({"name": "weather-tool", "version": "1.0.0", "type": "module",
               "bin": {"weather-tool": "index.mjs"},
               "dependencies": {"@modelcontextprotocol/sdk": "1.32.2"}})
        .to_string(),
    )
    .unwrap();
    let eof = std::fs::read_to_string(fixture("stdio/eof-ignorer.mjs")).unwrap();
    std::fs::write(
        tool.join("index.mjs"),
        format!("#!/usr/bin/env node\n{eof}"),
    )
    .unwrap();
    std::fs::set_permissions(
        tool.join("index.mjs"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink(&node_modules, tool.join("node_modules")).unwrap();
    std::fs::write(dir.join("pyserver.py"), PY_SERVER).unwrap();
    let python = tests.join(".venv/bin/python");
    let sh = |cmd: String| json!({"cmd": ["sh", "-c", cmd]});
    let c = json!({"servers": [
        {"cmd": ["node", bare.join("server.mjs")]},
        {"cmd": ["npm", "exec", "--prefer-offline", "--yes",
                 format!("--package={}", tool.display()), "--", "weather-tool"],
         "env": {"npm_config_cache": dir.join("npm-cache"), "npm_config_update_notifier": "false"}},
        sh(format!("node {}", tool.join("index.mjs").display())),
        sh(format!("{} {}", python.display(), dir.join("pyserver.py").display())),
        {"cmd": ["python3", "-c", "import time\nwhile True: time.sleep(1)"], "plain": true},
        sh(format!("node {}", node_modules.join("@modelcontextprotocol/server-memory/dist/index.js").display())),
        {"cmd": ["python3", "-c", SPINNER], "plain": true},
    ]});
    let p = dir.join("host.json");
    std::fs::write(&p, c.to_string()).unwrap();
    p
}

/// Every finding's planned pids.
fn planned_pids(f: &Value) -> Vec<u32> {
    f["plan"]["targets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| u32::try_from(t["pid"].as_u64()?).ok())
        .collect()
}

#[test]
fn a_crashed_hosts_wrapped_and_nameless_servers_are_each_found_and_killed_whole() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let (mut host, servers) = start_host(&wrapped_config(dir.path()), &[]);
    let (bare, npx, sh_node, sh_py, helper, sh_memory, spinner) = (
        servers[0], servers[1], servers[2], servers[3], servers[4], servers[5], servers[6],
    );
    // Each chain's processes, by identity (the test cleans up only its own).
    let settle = wait_for(Duration::from_secs(30), || {
        let n = |p: u32| descendants(p).len();
        // bare: its child; npx: sh, node, child; sh→node: node, child; sh→python; sh→memory.
        (n(bare) >= 1 && n(npx) >= 3 && n(sh_node) >= 2 && n(sh_py) >= 1 && n(sh_memory) >= 1)
            .then_some(())
    });
    settle.expect("every chain started what it starts");
    let chains: Vec<(u32, Vec<u32>)> = servers
        .iter()
        .map(|&s| {
            let mut all = vec![s];
            all.extend(descendants(s).into_iter().map(|(p, _)| p));
            (s, all)
        })
        .collect();
    let mut owned: Vec<Owned> = chains
        .iter()
        .flat_map(|(_, all)| all.iter().map(|p| Owned::adopt(*p)))
        .collect();

    let (code, doc) = audit(&ours_now(host.pid, &owned));
    assert_eq!(code, 0, "a live host raises nothing: {doc:#}");
    let mut watch = Spawned::spawn(cli().args(["watch", "--json", "--interval", "500"]));
    let stream = collect_lines(&mut watch);
    wait_for(Duration::from_secs(10), || {
        (stream.lock().unwrap().len() >= 2).then_some(())
    })
    .expect("watch streams");

    host.signal(Signal::SIGKILL);
    host.reap();
    let memory_chain = chains
        .iter()
        .find(|(s, _)| *s == sh_memory)
        .unwrap()
        .1
        .clone();
    wait_for(Duration::from_secs(20), || {
        memory_chain.iter().all(|p| gone(*p)).then_some(())
    })
    .unwrap_or_else(|| panic!("the well-behaved server and its shell outlived the host"));
    let survivors: Vec<u32> = chains
        .iter()
        .filter(|(s, _)| *s != sh_memory)
        .flat_map(|(_, all)| all.clone())
        .filter(|p| !gone(*p))
        .collect();
    eprintln!("survivors: {survivors:?}");

    // A one-shot audit started after the crash (after the 6 s grace: it waits for it).
    let (code, doc) = audit(&ours_now(host.pid, &owned));
    assert_eq!(code, 1, "{doc:#}");
    let findings = doc["findings"].as_array().unwrap().clone();
    let about = |root: u32| {
        let all = &chains.iter().find(|(s, _)| *s == root).unwrap().1;
        findings
            .iter()
            .filter(|f| planned_pids(f).iter().any(|p| all.contains(p)))
            .cloned()
            .collect::<Vec<Value>>()
    };
    for (root, kind) in [
        (bare, "orphaned-stdio"),
        (helper, "orphaned-stdio"),
        (npx, "orphaned-server"),
        (sh_node, "orphaned-server"),
        (sh_py, "orphaned-server"),
    ] {
        let fs = about(root);
        assert_eq!(fs.len(), 1, "one finding for the chain of {root}: {fs:#?}");
        assert_eq!(fs[0]["kind"], kind, "{:#}", fs[0]);
        let all = &chains.iter().find(|(s, _)| *s == root).unwrap().1;
        let plan = planned_pids(&fs[0]);
        for p in all.iter().filter(|p| !gone(**p)) {
            assert!(
                plan.contains(p),
                "survivor {p} of {root}'s chain not in {plan:?}: {:#}",
                fs[0]
            );
        }
        if kind == "orphaned-stdio" {
            assert_eq!(fs[0]["severity"], "warning");
        }
    }
    // The spinner: orphaned and spinning, one plan.
    let spun = about(spinner);
    let mut kinds: Vec<&str> = spun.iter().filter_map(|f| f["kind"].as_str()).collect();
    kinds.sort_unstable();
    assert_eq!(kinds, ["orphaned-stdio", "spinning"], "{spun:#?}");
    assert_eq!(
        spun[0]["plan"]["targets"], spun[1]["plan"]["targets"],
        "one plan: {spun:#?}"
    );
    assert!(planned_pids(&spun[0]).contains(&spinner));
    let npx_f = &about(npx)[0];
    assert!(
        npx_f["evidence"]
            .to_string()
            .contains("started through npx"),
        "{npx_f:#}"
    );
    assert!(
        npx_f["evidence"].to_string().contains("package.json"),
        "the package found through npx's .bin link: {npx_f:#}"
    );
    assert!(
        about(sh_py)[0]["evidence"]
            .to_string()
            .contains("imports mcp"),
        "{:#}",
        about(sh_py)[0]
    );

    // The monitor running across the crash names the same chains.
    for root in [bare, npx, sh_node, sh_py, helper, spinner] {
        let all = chains.iter().find(|(s, _)| *s == root).unwrap().1.clone();
        wait_for(Duration::from_secs(30), || {
            stream.lock().unwrap().iter().rev().take(3).find_map(|l| {
                let u: Value = serde_json::from_str(l).ok()?;
                u["snapshot"]["findings"]
                    .as_array()?
                    .iter()
                    .find(|f| planned_pids(f).iter().any(|p| all.contains(p)))
                    .cloned()
            })
        })
        .unwrap_or_else(|| panic!("watch never named the chain of {root}"));
    }
    drop(watch);

    // One kill per chain (the spinner's two findings share one plan): the findings about the
    // test's own processes (by identity), each executed only once its plan is shown to hold
    // the test's own processes alone.
    let ours = identities(&owned);
    let mine: Vec<&Value> = findings
        .iter()
        .filter(|f| f["kind"] != "spinning")
        .filter(|f| subject_of(f).is_some_and(|s| ours.contains(&s)))
        .collect();
    // bare, helper, npx, sh→node, sh→python and the spinner.
    assert_eq!(mine.len(), 6, "one finding per surviving chain: {mine:#?}");
    for f in mine {
        kill_ours(f["id"].as_str().unwrap(), &ours, &[]);
    }
    wait_for(Duration::from_secs(10), || {
        survivors.iter().all(|p| gone(*p)).then_some(())
    })
    .unwrap_or_else(|| panic!("survivors left: {survivors:?}"));
    let (code, doc) = audit(&ours_now(host.pid, &owned));
    assert_eq!(code, 0, "{doc:#}");
    owned.clear();
}

/// A live host that reconnects: it starts a second real memory server and talks only to the
/// new one (the old one keeps its open stdin, silent); and a second real time server (PyPI),
/// talking to both time servers.
fn reconnecting_config(dir: &std::path::Path) -> std::path::PathBuf {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let node_modules = tests.join("node_modules");
    let c = json!({
        "servers": [
            {"cmd": ["node", node_modules.join("@modelcontextprotocol/server-memory/dist/index.js")],
             "env": {"MEMORY_FILE_PATH": dir.join("memory.json")}},
            {"cmd": [tests.join(".venv/bin/mcp-server-time")]},
            {"cmd": ["node", fixture("stdio/eof-ignorer.mjs")]},
        ],
        "then": {"afterMs": 3000, "restart": [0], "pingAll": [1], "pingMs": 2000},
    });
    let p = dir.join("host.json");
    std::fs::write(&p, c.to_string()).unwrap();
    p
}

/// What the last update of a `watch --json` stream says of `pids` (for a failure's message):
/// how many updates came, the last one's time, and each process's state, parent, host and
/// since when its stdio stood still.
fn seen_of(lines: &[String], pids: &[u32]) -> Value {
    let last = lines
        .iter()
        .rev()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .unwrap_or(Value::Null);
    let procs: Vec<Value> = last["snapshot"]["processes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| {
            p["pid"]
                .as_u64()
                .is_some_and(|x| pids.iter().any(|q| u64::from(*q) == x))
        })
        .map(|p| {
            json!({"pid": p["pid"], "state": p["state"], "ppid": p["ppid"], "role": p["role"],
                   "host": p["host"], "stdio_quiet_since": p["stdio_quiet_since"]})
        })
        .collect();
    json!({"updates": lines.len(), "taken_at": last["snapshot"]["taken_at"], "processes": procs,
           "sources": last["snapshot"]["sources"]})
}

/// The processes a finding is about.
fn finding_pids(f: &Value) -> Vec<u32> {
    f["pids"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| u32::try_from(p.as_u64()?).ok())
        .collect()
}

#[test]
fn a_live_hosts_old_server_left_silent_after_a_reconnect_is_a_duplicate_and_twins_that_talk_are_not(
) {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(fixture("stdio/host.mjs"))
        .arg(reconnecting_config(dir.path()))
        .stderr(Stdio::null())
        .process_group(0);
    let mut host = Spawned::spawn(&mut cmd);
    let said = collect_lines(&mut host);
    let line = |prefix: &'static str| {
        let said = Arc::clone(&said);
        move || {
            said.lock().unwrap().iter().find_map(|l| {
                l.strip_prefix(prefix).map(|rest| {
                    rest.split(' ')
                        .filter_map(|p| p.parse::<u32>().ok())
                        .collect::<Vec<u32>>()
                })
            })
        }
    };
    let servers = wait_for(Duration::from_secs(90), line("ready ")).expect("the host started");
    let (memory, time) = (servers[0], servers[1]);
    let mut owned: Vec<Owned> = servers.iter().map(|p| Owned::adopt(*p)).collect();
    // The EOF-ignoring server's own child is ours too (it was left running after every run).
    let eof_child = wait_for(Duration::from_secs(10), || {
        descendants(servers[2]).first().map(|(p, _)| *p)
    })
    .expect("the EOF-ignoring server started its child");
    owned.push(Owned::adopt(eof_child));
    // The monitor is running before the reconnect.
    let mut watch = Spawned::spawn(cli().args(["watch", "--json", "--interval", "1000"]));
    let stream = collect_lines(&mut watch);
    let twins = wait_for(Duration::from_secs(60), line("twins ")).expect("the host reconnected");
    let (new_memory, new_time) = (twins[0], twins[1]);
    owned.extend(twins.iter().map(|p| Owned::adopt(*p)));
    let ours = [memory, time, servers[2], new_memory, new_time];
    // 30 s of silence, the grace, a tick or two — after the old server's own start-up I/O,
    // which can come half a minute late, and quiet servers' counters are read one scan in
    // four. 90 s was missed once in four runs on this 2-core machine (cause not seen: the
    // message below says what the monitor saw); a deadline, not a timing.
    // The finding about the old memory server itself, by identity (any other duplicate on
    // the machine is not this test's).
    let old_memory = owned
        .iter()
        .find(|o| o.pid == memory)
        .map(|o| format!("duplicate-server:{}.{}", o.pid, o.ticks))
        .unwrap();
    let found = wait_for(Duration::from_secs(150), || {
        let lines = stream.lock().unwrap();
        let u: Value = serde_json::from_str(lines.last()?).ok()?;
        let fs = u["snapshot"]["findings"].as_array()?.clone();
        fs.iter().any(|f| f["id"] == old_memory).then_some(fs)
    })
    .unwrap_or_else(|| {
        panic!(
            "the old memory server was never called a duplicate; what the monitor last saw of \
             ours: {:#}",
            seen_of(&stream.lock().unwrap(), &ours)
        )
    });
    // The watched audit, started once the monitor has seen the old server silent (nobody talks
    // to it again): it must see thirty silent seconds of its own, then the grace, with quiet
    // servers' counters read one scan in four, so 50 s reach it. Started beside the monitor,
    // a 70 s audit missed it once, when the old server's start-up I/O came late.
    let watched_audit = std::thread::spawn(|| {
        let started = std::time::Instant::now();
        let out = cli()
            .args(["audit", "--json", "--watch-for", "50"])
            .output()
            .unwrap();
        let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        doc["test: seconds"] = json!(started.elapsed().as_secs());
        doc["test: stderr"] = json!(String::from_utf8_lossy(&out.stderr));
        (out.status.code(), doc)
    });
    let dups: Vec<&Value> = found
        .iter()
        .filter(|f| finding_pids(f).iter().any(|p| ours.contains(p)))
        .collect();
    assert_eq!(dups.len(), 1, "only the old memory server: {dups:#?}");
    let dup = dups[0];
    assert_eq!(dup["kind"], "duplicate-server", "{dup:#}");
    assert_eq!(dup["severity"], "warning");
    assert_eq!(finding_pids(dup), [memory], "{dup:#}");
    assert_eq!(planned_pids(dup), [memory], "the old one only: {dup:#}");
    let e = dup["evidence"].to_string();
    assert!(names_pid(&e, new_memory), "{e}");
    // No tick ever said anything about the twins that both talk, the new memory server or the
    // lone server (nor about the old memory server before it had been silent for long).
    for l in stream.lock().unwrap().iter() {
        let Ok(u) = serde_json::from_str::<Value>(l) else {
            continue;
        };
        for f in u["snapshot"]["findings"].as_array().into_iter().flatten() {
            let pids = finding_pids(f);
            assert!(
                !pids.iter().any(|p| ours.contains(p) && *p != memory),
                "a false finding: {f:#}"
            );
        }
    }
    // The watched audit names the same one, and nothing else of ours.
    let (code, doc) = watched_audit.join().unwrap();
    assert_eq!(code, Some(1), "{doc:#}");
    let audited: Vec<&Value> = doc["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| finding_pids(f).iter().any(|p| ours.contains(p)))
        .collect();
    assert_eq!(audited.len(), 1, "{doc:#}");
    assert_eq!(audited[0]["kind"], "duplicate-server");
    assert_eq!(finding_pids(audited[0]), [memory]);

    // The monitor's plan, executed as shown (only the identities it named), once it is shown
    // to hold the test's own processes alone.
    assert_eq!(dup["id"], old_memory.as_str(), "{dup:#}");
    assert_only_ours("the duplicate's plan", &dup["plan"], &identities(&owned));
    let only: Vec<String> = plan_identities(&dup["plan"])
        .iter()
        .map(|(pid, ticks)| format!("{pid}.{ticks}"))
        .collect();
    let out = cli()
        .args(["kill", &memory.to_string(), "--tree", "--yes", "--only"])
        .arg(only.join(","))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    wait_for(Duration::from_secs(10), || gone(memory).then_some(()))
        .expect("the old memory server is gone");
    assert!(
        [new_memory, time, new_time, host.pid]
            .iter()
            .all(|p| !gone(*p)),
        "the host and what it uses live on"
    );
    let cleared = wait_for(Duration::from_secs(15), || {
        let lines = stream.lock().unwrap();
        let u: Value = serde_json::from_str(lines.last()?).ok()?;
        let fs = u["snapshot"]["findings"].as_array()?;
        (!fs.iter().any(|f| f["id"] == old_memory.as_str())).then_some(())
    });
    cleared.expect("the finding went with the old server");
    drop(watch);
    host.signal(Signal::SIGKILL);
    host.reap();
    owned.clear();
}

/// A host's stdio server run as `docker run -i --rm` (upstream's own transport for containers):
/// `cmd` in the test image, the project's tests folder shared read-only.
fn in_container(dockerd: &Dockerd, name: &str, cmd: &[&str]) -> Value {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let tests = tests.canonicalize().unwrap();
    let mut argv = dockerd.command();
    argv.extend(
        [
            "run",
            "-i",
            "--rm",
            "--name",
            name,
            "--network",
            "host",
            "-v",
            "/usr:/usr:ro",
        ]
        .map(String::from),
    );
    argv.extend(["-v".into(), format!("{0}:{0}:ro", tests.display())]);
    argv.push(debugtop_e2e::dockerd::IMAGE.into());
    argv.extend(
        cmd.iter()
            .map(|a| a.replace("$TESTS", &tests.display().to_string())),
    );
    json!({"cmd": argv})
}

#[test]
fn a_stdio_container_whose_client_is_gone_is_an_orphaned_container_ended_through_docker() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let mut dockerd = Dockerd::start();
    let tag = std::process::id();
    let names = [
        format!("dt-leak-{tag}"),
        format!("dt-live-{tag}"),
        format!("dt-eof-{tag}"),
    ];
    for n in &names {
        dockerd.owns(n);
    }
    let eof = ["node", "$TESTS/fixtures/stdio/eof-ignorer.mjs"];
    let memory = [
        "node",
        "$TESTS/node_modules/@modelcontextprotocol/server-memory/dist/index.js",
    ];
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("host.json");
    std::fs::write(
        &config,
        json!({"servers": [
            in_container(&dockerd, &names[0], &eof),
            in_container(&dockerd, &names[1], &eof),
            in_container(&dockerd, &names[2], &memory),
        ]})
        .to_string(),
    )
    .unwrap();
    let (mut host, clients) = start_host(&config, &[]);
    let mut owned: Vec<Owned> = clients.iter().map(|p| Owned::adopt(*p)).collect();
    let main_of = |name: &str| -> Option<u32> {
        let out = dockerd.docker(&["inspect", "--format", "{{.State.Pid}}", name]);
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .ok()
            .filter(|p| *p != 0)
    };
    let (leak, live) = (
        main_of(&names[0]).expect("the leaking container runs"),
        main_of(&names[1]).expect("the other container runs"),
    );
    // What this test may judge: its host, the clients, both containers' processes.
    let host_pid = host.pid;
    let third = main_of(&names[2]).expect("the third container runs");
    let judged = |owned: &[Owned]| {
        let mut ours = ours_now(host_pid, owned);
        for main in [leak, live, third] {
            ours.push(main);
            ours.extend(descendants(main).into_iter().map(|(p, _)| p));
        }
        ours
    };
    let (code, doc) = audit(&judged(&owned));
    assert_eq!(code, 0, "every client alive: nothing: {doc:#}");
    let mut watch = Spawned::spawn(cli().args(["watch", "--json", "--interval", "500"]));
    let stream = collect_lines(&mut watch);

    // The clients of the first and third die (a host killing them on its way out); the
    // second's stays.
    for c in [clients[0], clients[2]] {
        let o = owned.iter().find(|o| o.pid == c).expect("owned");
        assert!(debugtop_e2e::procs::signal_if_same(
            o.pid,
            o.ticks,
            Signal::SIGKILL
        ));
    }
    wait_for(Duration::from_secs(30), || {
        main_of(&names[2]).is_none().then_some(())
    })
    .expect("the memory server exits on the end of its input and its container goes");
    let (code, doc) = audit(&judged(&owned));
    assert_eq!(code, 1, "{doc:#}");
    let findings = doc["findings"].as_array().unwrap();
    assert_eq!(
        findings.len(),
        1,
        "only the leaked container: {findings:#?}"
    );
    let f = &findings[0];
    assert_eq!(f["kind"], "orphaned-container", "{f:#}");
    assert_eq!(f["severity"], "critical");
    assert_eq!(finding_pids(f), [leak]);
    assert!(
        !planned_pids(f).contains(&live),
        "the container with a live client is not touched: {f:#}"
    );
    let e = f["evidence"].to_string();
    assert!(e.contains("it is the main process of container"), "{e}");
    assert!(f["plan"]["container"]["id"].is_string(), "{f:#}");

    // The monitor running across it names the same container, with the same kind of plan.
    let watched = wait_for(Duration::from_secs(30), || {
        stream.lock().unwrap().iter().rev().take(3).find_map(|l| {
            let u: Value = serde_json::from_str(l).ok()?;
            u["snapshot"]["findings"]
                .as_array()?
                .iter()
                .find(|f| f["kind"] == "orphaned-container" && finding_pids(f) == [leak])
                .cloned()
        })
    })
    .expect("watch never named the container");
    assert_eq!(finding_pids(&watched), [leak]);
    assert_eq!(watched["plan"]["container"], f["plan"]["container"]);
    drop(watch);

    // A forged id (a local user can name a cgroup after someone else's container): docker
    // names another main process for it, and nothing is killed.
    let live_id = dockerd.docker(&["inspect", "--format", "{{.Id}}", &names[1]]);
    let forged = debugtop_core::model::ContainerStop {
        id: String::from_utf8_lossy(&live_id.stdout).trim().to_owned(),
        main_pid: leak,
        main_start_ticks: debugtop_e2e::procs::start_ticks(leak).unwrap(),
    };
    let refused = debugtop_core::actions::container::kill_with(&forged, &dockerd.command());
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains(&format!("is pid {live}, not the planned pid {leak}"))),
        "{refused:?}"
    );
    assert_eq!(
        main_of(&names[1]),
        Some(live),
        "the other container still runs"
    );

    // Ended through docker: the container is gone (and removed: --rm), the other one runs.
    // Only once the plan is shown to end the test's own container (named by the test, its
    // main process and what runs under it, by identity) and nothing else.
    let leak_id = dockerd.docker(&["inspect", "--format", "{{.Id}}", &names[0]]);
    let leak_id = String::from_utf8_lossy(&leak_id.stdout).trim().to_owned();
    let planned_id = f["plan"]["container"]["id"].as_str().unwrap();
    assert!(
        !planned_id.is_empty() && leak_id.starts_with(planned_id),
        "the plan ends container {planned_id}, not the test's {leak_id}: {f:#}"
    );
    let mut ours = identities(&owned);
    ours.push((leak, debugtop_e2e::procs::start_ticks(leak).unwrap()));
    ours.extend(descendants(leak));
    let id = f["id"].as_str().unwrap();
    let answer = kill_ours(
        id,
        &ours,
        &[(
            debugtop_core::targets::DOCKER_COMMAND_ENV,
            dockerd.command().join(" "),
        )],
    );
    let outcomes = answer["report"]["outcomes"].to_string();
    assert!(outcomes.contains("container-killed"), "{answer:#}");
    let listed = dockerd.docker(&["ps", "-a", "--format", "{{.Names}}"]);
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains(&names[0]), "removed: {listed}");
    assert!(listed.contains(&names[1]), "{listed}");
    let (code, doc) = audit(&judged(&owned));
    assert_eq!(code, 0, "{doc:#}");
    host.signal(Signal::SIGKILL);
    host.reap();
    owned.clear();
    drop(dockerd);
}

/// Two live hosts side by side. One reconnects its Python time server (the PyPI
/// `mcp-server-time`, MCP SDK 2.x, which moves the wire off fds 0 and 1), started through a
/// `sh -c` wrapper as `uvx` starts it: the wrapper holds the host's pipe and moves no byte of
/// its own, its server does. The other runs every server twice on purpose (time and memory,
/// the second copies 2 s after the first, as a desktop host with two MCP subsystems does) and
/// talks only to the younger copies.
fn twin_hosts_configs(dir: &std::path::Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let tests = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let memory = tests.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    let time = tests.join(".venv/bin/mcp-server-time");
    let reconnecting = json!({
        "servers": [
            {"cmd": ["sh", "-c", "\"$0\"; exit $?", time]},
            {"cmd": ["node", memory], "env": {"MEMORY_FILE_PATH": dir.join("memory-a.json")}},
        ],
        "then": {"afterMs": 3000, "restart": [0], "pingMs": 2000},
    });
    let paired = json!({
        "servers": [
            {"cmd": [time]},
            {"cmd": ["node", memory], "env": {"MEMORY_FILE_PATH": dir.join("memory-b.json")}},
        ],
        "then": {"afterMs": 2000, "restart": [0, 1], "pingMs": 2000},
    });
    let (a, b) = (dir.join("reconnecting.json"), dir.join("paired.json"));
    std::fs::write(&a, reconnecting.to_string()).unwrap();
    std::fs::write(&b, paired.to_string()).unwrap();
    (a, b)
}

/// Starts a host with a `then` and waits for its `twins` line: (host, first servers, twins).
fn start_twinning_host(config: &std::path::Path) -> (Spawned, Vec<u32>, Vec<u32>) {
    let (mut host, servers) = start_host(config, &[]);
    let said = host.read_line(Duration::from_secs(60));
    let twins = said
        .strip_prefix("twins ")
        .unwrap_or_else(|| panic!("host said {said:?}"))
        .split(' ')
        .map(|p| p.parse().unwrap())
        .collect();
    (host, servers, twins)
}

/// `audit --json --watch-for 40` (README's promise), started `after` from now, in a thread.
fn watched_audit_after(after: Duration) -> std::thread::JoinHandle<(Option<i32>, Value)> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let out = cli()
            .args(["audit", "--json", "--watch-for", "40"])
            .output()
            .unwrap();
        let mut doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        doc["test: started after s"] = json!(after.as_secs());
        doc["test: stderr"] = json!(String::from_utf8_lossy(&out.stderr));
        (out.status.code(), doc)
    })
}

/// Issue 38, items 1 and 2. A watched audit reaches the verdict `watch` reaches, whenever it is
/// started relative to the silence: three audits, started 0, 12 and 24 s after the reconnect,
/// each name the wrapped old time server (before the fix, the wrapped newer twin's silent
/// wrapper made it look silent too: 0 audits of 3 found it with `uvx`). The host that keeps
/// its copies on purpose gets nothing from any of them.
#[test]
fn a_watched_audit_finds_a_wrapped_python_twin_whenever_started_and_paired_hosts_get_nothing() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let (reconnecting, paired) = twin_hosts_configs(dir.path());
    let (mut host_a, servers_a, twins_a) = start_twinning_host(&reconnecting);
    let (mut host_b, servers_b, twins_b) = start_twinning_host(&paired);
    let mut owned: Vec<Owned> = Vec::new();
    for pid in servers_a
        .iter()
        .chain(&twins_a)
        .chain(&servers_b)
        .chain(&twins_b)
    {
        owned.push(Owned::adopt(*pid));
    }
    // The wrappers' Python servers are the test's too.
    for wrapper in [servers_a[0], twins_a[0]] {
        owned.extend(children_of(wrapper));
    }
    let old_time = owned
        .iter()
        .find(|o| o.pid == servers_a[0])
        .map(|o| format!("duplicate-server:{}.{}", o.pid, o.ticks))
        .unwrap();
    let paired_pids: Vec<u32> = servers_b.iter().chain(&twins_b).copied().collect();
    let audits: Vec<_> = [0, 12, 24]
        .into_iter()
        .map(|s| watched_audit_after(Duration::from_secs(s)))
        .collect();
    for audit in audits {
        let (code, doc) = audit.join().unwrap();
        let fs: Vec<&Value> = doc["findings"].as_array().into_iter().flatten().collect();
        let found = fs.iter().find(|f| f["id"] == old_time.as_str());
        let f = found.unwrap_or_else(|| panic!("{old_time} not found: {doc:#}"));
        assert_eq!(code, Some(1), "{doc:#}");
        assert_eq!(f["severity"], "warning", "{f:#}");
        assert_eq!(finding_pids(f), [servers_a[0]], "the old wrapper: {f:#}");
        let planned = planned_pids(f);
        assert!(planned.contains(&servers_a[0]), "{f:#}");
        assert!(
            !planned.iter().any(|p| *p == twins_a[0] || *p == host_a.pid),
            "the newer twin and the host are not in the plan: {f:#}"
        );
        for f in &fs {
            let pids = finding_pids(f);
            assert!(
                !pids
                    .iter()
                    .any(|p| paired_pids.contains(p) || *p == twins_a[0]),
                "a false finding: {f:#}"
            );
        }
    }
    for host in [&mut host_a, &mut host_b] {
        host.signal(Signal::SIGKILL);
        host.reap();
    }
    drop(owned);
}

/// Every pid in a tree node and the nodes under it.
fn subtree_pids(node: &Value) -> Vec<u64> {
    let mut out: Vec<u64> = node["pid"].as_u64().into_iter().collect();
    for c in node["children"].as_array().into_iter().flatten() {
        out.extend(subtree_pids(c));
    }
    out
}

/// Whether `text` says "pid N" of exactly this pid (pid 123 is not said by "pid 1234").
fn names_pid(text: &str, pid: u32) -> bool {
    let said = format!("pid {pid}");
    text.match_indices(&said).any(|(i, _)| {
        !text[i + said.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}
