//! debugtop on Windows, for real: the Windows `debugtop-cli.exe` (cross-built from the same
//! core) under Wine, next to the real mcp-debugger 0.24.2 on npm's Windows node, with the real
//! proxy worker and mock adapter it spawns; and the Linux CLI beside them and reaching them
//! through a `cmd:` target. Every process here lives in the test's own Wine prefix and ends
//! with it; kills go through debugtop and are verified.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::time::{Duration, Instant};

use debugtop_e2e::mcp::Client;
use debugtop_e2e::wine::{seed_bug_stand_in, win, WinServer, Wine};
use debugtop_e2e::{fixture, wait_for};
use nix::sys::signal::Signal;
use serde_json::{json, Value};

const CLI: &str = env!("CARGO_BIN_EXE_debugtop-cli");

/// Wine is heavy on two cores: one Windows world at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A paused mock session on the Windows server, started over MCP from Linux.
async fn paused_mock_session(server: &WinServer) -> (Client, String) {
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("mock", "win-mock").await;
    let script = win(Path::new(&fixture("mock/script.js")));
    let started = client.start(&session, &script).await;
    assert!(
        started.to_string().contains("paused"),
        "the mock session did not pause: {started}"
    );
    (client, session)
}

fn procs(snap: &Value) -> Vec<Value> {
    snap["processes"].as_array().cloned().unwrap_or_default()
}

fn proc_of(snap: &Value, pid: u32) -> Option<Value> {
    procs(snap).into_iter().find(|p| p["pid"] == pid)
}

/// The worker and adapter of `session` in a Windows snapshot (pids).
fn chain_of(snap: &Value, session: &str) -> (u32, u32) {
    let ps = procs(snap);
    let pid = |role: &str| {
        ps.iter()
            .find(|p| p["role"] == role && p["session_id"] == session)
            .and_then(|p| p["pid"].as_u64())
            .map(|p| u32::try_from(p).unwrap())
            .unwrap_or_else(|| panic!("no {role} of {session}: {snap:#}"))
    };
    (pid("worker"), pid("adapter"))
}

/// The pids a plan (as JSON) targets, in order.
fn planned(plan: &Value) -> Vec<u64> {
    plan["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["pid"].as_u64().unwrap())
        .collect()
}

fn audit(wine: &Wine) -> (i32, Value) {
    let (code, out, err) = wine.cli(&["audit", "--json"]);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    (code, doc)
}

fn findings(doc: &Value) -> Vec<Value> {
    doc["findings"].as_array().cloned().unwrap_or_default()
}

/// The Linux pids of this prefix's Windows processes (their environment names the prefix).
fn linux_pids_of(wine: &Wine) -> Vec<u32> {
    let needle = format!("WINEPREFIX={}", wine.dir.path().join("prefix").display());
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        if env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()) {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_server_on_windows_node_audits_clean_with_its_windows_tree() {
    let _one = ONE_AT_A_TIME.lock().await;
    let wine = Wine::prepare();
    let server = WinServer::start(&wine);
    let (client, session) = paused_mock_session(&server).await;

    let (code, doc) = audit(&wine);
    assert_eq!(code, 0, "a healthy Windows server raises nothing: {doc:#}");

    let snap = wine.snapshot();
    let (worker, adapter) = chain_of(&snap, &session);
    let w = proc_of(&snap, worker).unwrap();
    let a = proc_of(&snap, adapter).unwrap();
    let s = proc_of(&snap, server.pid).unwrap();
    assert_eq!(s["role"], "server");
    assert_eq!(w["ppid"], server.pid, "the worker is the server's child");
    assert_eq!(a["ppid"], worker, "the adapter is the worker's child");
    assert_eq!(w["server_pid"], server.pid);
    assert!(
        w["argv"].to_string().contains("proxy-bootstrap.js")
            && w["argv"]
                .to_string()
                .contains(&format!("--mcp-owner-pid={}", server.pid)),
        "the worker's whole command line, read through its PEB: {w}"
    );
    assert!(
        procs(&snap)
            .iter()
            .all(|p| !p["argv"].to_string().to_lowercase().contains("conhost.exe")),
        "conhost.exe is its console owner's, not a node of the tree: {snap:#}"
    );
    assert!(
        w["uid"].is_u64() && w["uid"] == s["uid"],
        "owners from the token's SID: {w} {s}"
    );
    // Both times must be there: `None >= None` once passed this check with neither.
    let started = |p: &Value| {
        p["start_time"]
            .as_str()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .unwrap_or_else(|| panic!("a creation time: {p}"))
    };
    assert!(
        started(&w) >= started(&s),
        "creation times: the worker after its server"
    );
    assert!(
        snap["debug_sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == session.as_str() && d["state"] == "paused"),
        "the session, from /health and the logs the server writes on Windows: {snap:#}"
    );
    assert!(
        snap["tree"].to_string().contains(&session),
        "the tree holds the session"
    );
    let table = snap["sources"].to_string();
    assert!(
        table.contains("CPU cannot be measured here"),
        "under Wine the collector says CPU is not measured: {table}"
    );
    assert!(
        table.contains("no zombie or stopped state to read"),
        "Windows says which findings it cannot tell: {table}"
    );

    // The Linux CLI beside the Wine server: Wine's processes are counted, never judged (their
    // command lines name Windows pids, not Linux ones).
    let ours = linux_pids_of(&wine);
    assert!(!ours.is_empty());
    let out = std::process::Command::new(CLI)
        .arg("snapshot")
        .output()
        .unwrap();
    let linux: Value = serde_json::from_slice(&out.stdout).unwrap();
    for f in findings(&linux) {
        assert!(
            !f["pids"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| ours.iter().any(|o| p == o)),
            "the Linux CLI judged a Wine process: {f:#}"
        );
    }
    let table = linux["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "process-table")
        .unwrap()["detail"]
        .to_string();
    assert!(table.contains("run by Wine, not judged here"), "{table}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_leak_on_windows_is_a_leaked_worker_terminated_by_its_finding_id() {
    let _one = ONE_AT_A_TIME.lock().await;
    let wine = Wine::prepare();
    let server = WinServer::start(&wine);
    let (client, session) = paused_mock_session(&server).await;
    let (_harness, worker, leaked) = seed_bug_stand_in(&wine, server.pid, server.dir.path());

    let found = wait_for(Duration::from_secs(60), || {
        let (code, doc) = audit(&wine);
        let f = findings(&doc)
            .into_iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"] == json!([worker]))?;
        assert_eq!(code, 1, "{doc:#}");
        Some((f, doc))
    })
    .expect("the stand-in is a leaked worker");
    let (f, doc) = found;
    assert_eq!(f["session_id"], leaked.as_str());
    // What windows_exporter's textfile collector reads, and an export, both written by the
    // Windows build (a new file, then MoveFileEx over the name) and read back here.
    let prom = wine.dir.path().join("textfile_inputs/debugtop.prom");
    std::fs::create_dir_all(prom.parent().unwrap()).unwrap();
    let (code, out, err) = wine.cli(&["audit", "--textfile", &win(&prom)]);
    assert_eq!(code, 1, "the audit's own exit code: {out}{err}");
    let text = std::fs::read_to_string(&prom).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    assert!(
        text.ends_with('\n'),
        "windows_exporter needs the final newline"
    );
    assert!(
        text.contains("debugtop_findings{kind=\"leaked-worker\",severity=\"critical\"} 1"),
        "{text}"
    );
    let check = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::fs::File::open(&prom).unwrap())
        .output()
        .expect("promtool (Debian's prometheus)");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(prom.parent().unwrap()).unwrap().collect();
    assert_eq!(left.len(), 1, "no temporary file left beside it");
    let export = wine.dir.path().join("snap.json");
    let (code, out, err) = wine.cli(&["snapshot", "--out", &win(&export)]);
    assert_eq!(code, 0, "{out}{err}");
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    assert!(
        snap.to_string().contains(&leaked),
        "the export holds the leak's session"
    );
    assert_eq!(
        findings(&doc).len(),
        1,
        "only the leak: the server's own session is healthy ({session}): {doc:#}"
    );
    let plan = &f["plan"];
    assert_eq!(plan["method"], "terminate", "{plan:#}");
    let planned = planned(plan);
    assert!(planned.contains(&u64::from(worker)), "{planned:?}");

    let id = f["id"].as_str().unwrap();
    let (code, out, err) = wine.cli(&["kill", id, "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("terminate worker") && !out.contains("SIGTERM worker"),
        "Windows has no SIGTERM for these processes; the plan says so: {out}"
    );
    let (code, out, err) = wine.cli(&["kill", id, "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("worker {worker}: terminated")),
        "{out}"
    );

    let snap = wine.snapshot();
    for pid in &planned {
        assert!(
            proc_of(&snap, u32::try_from(*pid).unwrap()).is_none(),
            "planned pid {pid} is gone"
        );
    }
    let (code, doc) = audit(&wine);
    assert_eq!(code, 0, "healthy again: {doc:#}");
    client.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_on_windows_orphans_only_what_ran_outside_the_servers_job() {
    let _one = ONE_AT_A_TIME.lock().await;
    let wine = Wine::prepare();
    let mut server = WinServer::start(&wine);
    let (_client, session) = paused_mock_session(&server).await;
    let (_harness, stand_in, _) = seed_bug_stand_in(&wine, server.pid, server.dir.path());
    let (snap, stand_in_adapter) = wait_for(Duration::from_secs(60), || {
        let snap = wine.snapshot();
        let adapter = procs(&snap)
            .iter()
            .find(|p| p["ppid"] == stand_in && p["role"] == "adapter")
            .and_then(|p| p["pid"].as_u64())?;
        Some((snap, adapter))
    })
    .expect("the stand-in starts its adapter");
    let (worker, adapter) = chain_of(&snap, &session);

    // Monitors across the crash: one ticking every second, one every 30 s whose only early
    // tick can come from the exit watcher (thread-pool waits on process handles).
    let stream = wine.dir.path().join("watch.ndjson");
    let _watch = wine.cli_spawn(&["watch", "--json", "--interval", "1000"], &stream);
    let slow = wine.dir.path().join("slow.ndjson");
    let _slow = wine.cli_spawn(&["watch", "--json", "--interval", "30000"], &slow);
    for s in [&stream, &slow] {
        wait_for(Duration::from_secs(60), || {
            let text = std::fs::read_to_string(s).ok()?;
            (text.lines().count() >= 2).then_some(())
        })
        .expect("watch streams");
    }

    // The crash: the server's process ends at once, as Windows sees a crash.
    server.proc.signal(Signal::SIGKILL);
    server.proc.reap();
    let crashed = Instant::now();
    let exited = format!("server {} exited", server.pid);
    wait_for(Duration::from_secs(15), || {
        let text = std::fs::read_to_string(&slow).ok()?;
        text.contains(&exited).then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "the 30 s monitor did not tick on the server's exit: {}",
            std::fs::read_to_string(&slow).unwrap_or_default()
        )
    });
    eprintln!(
        "the 30 s monitor streamed the exit {:.1} s after the crash",
        crashed.elapsed().as_secs_f64()
    );
    let orphan = wait_for(Duration::from_secs(60), || {
        let text = std::fs::read_to_string(&stream).ok()?;
        text.lines().rev().find_map(|l| {
            let u: Value = serde_json::from_str(l).ok()?;
            u["snapshot"]["findings"]
                .as_array()?
                .iter()
                .find(|f| f["kind"] == "orphaned-worker" && f["pids"] == json!([stand_in]))
                .cloned()
        })
    })
    .expect("watch reports the orphaned stand-in");
    eprintln!(
        "watch --json named the orphan {:.1} s after the crash (interval 1 s)",
        crashed.elapsed().as_secs_f64()
    );
    assert!(
        orphan["evidence"]
            .to_string()
            .contains(&format!("no mcp-debugger server with pid {}", server.pid)),
        "{orphan:#}"
    );

    // Node on Windows puts what it spawns in a job object that dies with it: the server's own
    // worker and adapter are gone, and nothing of theirs is flagged.
    let snap = wine.snapshot();
    for pid in [worker, adapter] {
        assert!(
            proc_of(&snap, pid).is_none(),
            "{pid} died with the job: {snap:#}"
        );
    }
    let (code, doc) = audit(&wine);
    assert_eq!(code, 1, "{doc:#}");
    let all = findings(&doc);
    assert_eq!(all.len(), 1, "only the stand-in outside the job: {doc:#}");
    let f = &all[0];
    assert_eq!(f["kind"], "orphaned-worker");
    let planned = planned(&f["plan"]);
    assert!(
        planned.contains(&u64::from(stand_in)) && planned.contains(&stand_in_adapter),
        "the worker and its adapter: {planned:?}"
    );
    let (code, out, err) = wine.cli(&["kill", f["id"].as_str().unwrap(), "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("worker {stand_in}: terminated")),
        "{out}"
    );
    assert!(
        out.contains(&format!("adapter {stand_in_adapter}: terminated")),
        "{out}"
    );
    let (code, doc) = audit(&wine);
    assert_eq!(code, 0, "nothing left: {doc:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_windows_machine_is_a_cmd_target_of_the_linux_cli_audited_and_killed_across() {
    let _one = ONE_AT_A_TIME.lock().await;
    let wine = Wine::prepare();
    let server = WinServer::start(&wine);
    let (client, _session) = paused_mock_session(&server).await;
    let (_harness, worker, _) = seed_bug_stand_in(&wine, server.pid, server.dir.path());
    let target = format!("cmd:{}", wine.target_argv().join(" "));

    // The stream the app shows a target from: the Windows tree, live, across the command.
    let config = debugtop_core::targets::StreamConfig {
        judging: debugtop_core::judging::Judging {
            interval: Duration::from_millis(1000),
            ..Default::default()
        },
        stale_after: Duration::from_secs(10),
        restart_after: Duration::from_secs(60),
        hello_within: Duration::from_secs(60),
        backoff_first: Duration::from_millis(300),
        backoff_max: Duration::from_secs(2),
        engines: debugtop_core::targets::Engines::default(),
    };
    let feed = debugtop_core::targets::spawn_stream(
        debugtop_core::model::Target::Cmd {
            argv: wine.target_argv(),
        },
        config,
    );
    let end = Instant::now() + Duration::from_secs(90);
    let live = loop {
        let f = feed.feed.borrow().clone();
        let seen = f.update.as_ref().is_some_and(|u| {
            u.snapshot.servers.iter().any(|s| s.pid == server.pid)
                && u.snapshot.processes.iter().any(|p| p.pid == worker)
        });
        if f.status.state == debugtop_core::model::TargetState::Live && seen {
            break f;
        }
        assert!(
            Instant::now() < end,
            "no live Windows tree: {:#?}",
            f.status
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let hello = live.status.hello.expect("a hello");
    assert!(
        hello.kernel.contains("windows"),
        "the far side says it is Windows: {hello:?}"
    );
    drop(feed);
    let run = |args: &[&str]| {
        let out = std::process::Command::new(CLI).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let found = wait_for(Duration::from_secs(90), || {
        let (code, out, err) = run(&["audit", "--json", "--target", &target]);
        let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
        let remote = &doc["targets"][0];
        assert!(remote["error"].is_null(), "{doc:#}");
        let f = remote["result"]["findings"]
            .as_array()?
            .iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"] == json!([worker]))
            .cloned()?;
        assert_eq!(code, Some(1), "{err}");
        Some(f)
    })
    .expect("the Windows leak, seen from Linux through the cmd: target");
    assert_eq!(
        f_method(&found),
        "terminate",
        "the far side's plan: {found:#}"
    );
    let id = found["id"].as_str().unwrap();

    let (code, out, err) = run(&["kill", "--target", &target, id, "--yes"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("plan on cmd:env"), "{out}");
    assert!(
        out.contains("terminate worker"),
        "the far side's words: {out}"
    );
    assert!(out.contains("terminated"), "{out}");
    assert!(
        proc_of(&wine.snapshot(), worker).is_none(),
        "the worker is gone on the Windows side"
    );
    client.close().await;
}

fn f_method(f: &Value) -> String {
    f["plan"]["method"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_replaced_pid_is_refused_never_terminated_on_windows() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let exe = debugtop_e2e::wine::windows_build().join("replaced_pid.exe");
    let (code, out, err) = wine.run_built(&exe, &[]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines,
        [
            "replaced refused: identity changed since the plan (the pid now belongs to another process)",
            "alive-after-refusal true",
            "same terminated",
            "gone-after-terminate true",
        ],
        "{out}{err}"
    );
}

#[test]
fn a_stdio_server_outliving_its_crashed_host_on_windows_is_orphaned_with_the_check_it_could_not_make(
) {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let node = win(&debugtop_e2e::wine::windows_node());
    // The EOF-ignoring server (real MCP SDK, a child of its own) breaks away from the host's
    // job (detached); the memory server stays in it, as node's children do on Windows.
    let config = json!({"servers": [
        {"cmd": [node, win(Path::new(&fixture("stdio/eof-ignorer.mjs")))], "detached": true},
        {"cmd": [node, win(&tests.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js"))]},
    ]});
    let path = wine.dir.path().join("host.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = wine.dir.path().join("host.out");
    let mut host = wine.node(
        &[win(Path::new(&fixture("stdio/host.mjs"))), win(&path)],
        &out,
    );
    let pids: Vec<u32> = wait_for(Duration::from_secs(90), || {
        let text = std::fs::read_to_string(&out).ok()?;
        let line = text.lines().find(|l| l.starts_with("ready "))?;
        Some(
            line[6..]
                .split(' ')
                .filter_map(|p| p.parse().ok())
                .collect(),
        )
    })
    .unwrap_or_else(|| {
        panic!(
            "the host never got its servers ready: {}",
            std::fs::read_to_string(&out).unwrap_or_default()
        )
    });
    let (eof, memory) = (pids[0], pids[1]);

    // A live host: nothing (near miss).
    let (code, doc) = audit(&wine);
    assert_eq!(code, 0, "a live host's servers raise nothing: {doc:#}");
    let snap = wine.snapshot();
    let server = proc_of(&snap, eof).unwrap_or_else(|| panic!("{eof}: {snap:#}"));
    assert_eq!(server["role"], "server", "{server}");
    assert!(
        server["mcp"]
            .to_string()
            .contains("@modelcontextprotocol/sdk"),
        "its package says MCP: {server}"
    );

    // The host crashes.
    host.signal(Signal::SIGKILL);
    host.reap();
    let (code, doc) = wait_for(Duration::from_secs(60), || {
        let (code, doc) = audit(&wine);
        (!findings(&doc).is_empty()).then_some((code, doc))
    })
    .expect("a finding once the host is gone");
    assert_eq!(code, 1, "{doc:#}");
    let all = findings(&doc);
    assert_eq!(all.len(), 1, "only the server that broke away: {doc:#}");
    let f = &all[0];
    assert_eq!(f["kind"], "orphaned-server");
    assert_eq!(f["pids"], json!([eof]));
    let evidence = f["evidence"].to_string();
    assert!(
        evidence.contains("cannot be checked here") && evidence.contains("is gone"),
        "the evidence says which check was not possible: {evidence}"
    );
    let snap = wine.snapshot();
    assert!(
        proc_of(&snap, memory).is_none(),
        "the memory server died with the host's job"
    );
    let planned = planned(&f["plan"]);
    assert!(
        planned.len() >= 2 && planned.contains(&u64::from(eof)),
        "the server and its own child: {planned:?}"
    );
    let (code, out, err) = wine.cli(&["kill", f["id"].as_str().unwrap(), "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, doc) = audit(&wine);
    assert_eq!(code, 0, "nothing left: {doc:#}");
}

#[test]
fn force_on_windows_takes_a_process_outside_every_tree_after_checking_it() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let out = wine.dir.path().join("plain.out");
    let _plain = wine.node(
        &[
            "-e".into(),
            "console.log(process.pid); setInterval(() => {}, 1 << 30)".into(),
        ],
        &out,
    );
    let pid: u32 = wait_for(Duration::from_secs(60), || {
        std::fs::read_to_string(&out).ok()?.trim().parse().ok()
    })
    .expect("the plain node's Windows pid");
    let (code, out, _) = wine.cli(&["kill", &pid.to_string(), "--yes"]);
    assert_ne!(
        code, 0,
        "outside every tree: refused without --force: {out}"
    );
    assert!(out.contains("use --force"), "{out}");
    let (code, out, err) = wine.cli(&["kill", &pid.to_string(), "--force", "--yes"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("other {pid}: terminated")), "{out}");
}

#[test]
fn a_reconnecting_hosts_twins_under_wine_are_not_judged_and_the_table_says_why() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests");
    let node = win(&debugtop_e2e::wine::windows_node());
    let memory = win(&tests.join("node_modules/@modelcontextprotocol/server-memory/dist/index.js"));
    let store = win(&wine.dir.path().join("memory.json"));
    // The host reconnects the memory server (keeping the old one) and talks only to the new.
    let config = json!({
        "servers": [{"cmd": [node, memory], "env": {"MEMORY_FILE_PATH": store}}],
        "then": {"afterMs": 3000, "restart": [0], "pingMs": 2000},
    });
    let path = wine.dir.path().join("host.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let out = wine.dir.path().join("host.out");
    let mut host = wine.node(
        &[win(Path::new(&fixture("stdio/host.mjs"))), win(&path)],
        &out,
    );
    let said = |prefix: &str| {
        let text = std::fs::read_to_string(&out).ok()?;
        let line = text.lines().find(|l| l.starts_with(prefix))?;
        Some(
            line[prefix.len()..]
                .split(' ')
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>(),
        )
    };
    let old = wait_for(Duration::from_secs(90), || said("ready ")).unwrap_or_else(|| {
        panic!(
            "no ready: {}",
            std::fs::read_to_string(&out).unwrap_or_default()
        )
    })[0];
    let new = wait_for(Duration::from_secs(60), || said("twins ")).unwrap_or_else(|| {
        panic!(
            "no twin: {}",
            std::fs::read_to_string(&out).unwrap_or_default()
        )
    })[0];
    // Wine keeps no I/O counters (GetProcessIoCounters gives nothing usable): silence cannot be
    // told from talk, so no twin is judged — and the process table says so.
    let (code, stdout, err) = wine.cli(&["audit", "--json", "--watch-for", "35"]);
    let doc: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{err}"));
    assert_eq!(code, 0, "{doc:#}");
    let snap = wine.snapshot();
    for pid in [old, new] {
        let p = proc_of(&snap, pid).unwrap_or_else(|| panic!("{pid}: {snap:#}"));
        assert_eq!(p["role"], "server", "{p:#}");
        assert!(p.get("stdio_quiet_since").is_none(), "{p:#}");
    }
    let table = snap["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "process-table")
        .cloned()
        .unwrap_or_default();
    assert!(
        table["detail"]
            .to_string()
            .contains("the I/O of 2 stdio server(s) of live hosts cannot be read here"),
        "{table:#}"
    );
    host.signal(Signal::SIGKILL);
    host.reap();
}

/// `run` under Wine around `command`: its status, its JSON report, its stderr and stdout.
fn run_around(wine: &Wine, command: &[String]) -> (i32, Value, String, String) {
    let json = wine.dir.path().join("run.json");
    let _ = std::fs::remove_file(&json);
    let mut args = vec!["run".to_owned(), "--json".into(), win(&json), "--".into()];
    args.extend(command.iter().cloned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = wine.cli(&args);
    let text = std::fs::read_to_string(&json)
        .unwrap_or_else(|e| panic!("no run report ({e}): {out}{err}"));
    let report = serde_json::from_str(&text).expect("the run report is JSON");
    (code, report, err, out)
}

/// The pid printed after `word` on a line of `out`.
fn printed_pid(out: &str, word: &str) -> u64 {
    out.lines()
        .find_map(|l| l.strip_prefix(word)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no `{word}` pid in {out}"))
}

fn survivor_pids(report: &Value) -> Vec<u64> {
    report["survivors"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| pid_of_id(&s["id"]))
        .collect()
}

/// The pid of an identity (`"pid.start"`).
fn pid_of_id(id: &Value) -> Option<u64> {
    id.as_str()?.split_once('.')?.0.parse().ok()
}

fn windows_pids(wine: &Wine) -> Vec<u64> {
    procs(&wine.snapshot())
        .iter()
        .filter_map(|p| p["pid"].as_u64())
        .collect()
}

#[test]
fn run_on_windows_names_the_child_real_node_left_in_its_job_and_ends_exactly_it() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let node = win(&debugtop_e2e::wine::windows_node());
    let script = win(Path::new(&fixture("run/leak-a-child.js")));
    let (code, report, err, out) = run_around(&wine, &[node, script]);
    let detached = printed_pid(&out, "detached");
    let attached = printed_pid(&out, "attached");
    assert_eq!(code, 86, "the leak status: {err}");
    assert_eq!(report["scope"]["kind"], "job-object", "{report:#}");
    assert_eq!(report["verdict"], "leaked", "{report:#}");
    // The detached child outlived node; the attached one ended with node's own job, as it
    // does without debugtop.
    assert_eq!(survivor_pids(&report), [detached], "{report:#}");
    let s = &report["survivors"][0];
    assert_eq!(s["ended"]["outcome"], "terminated", "{s:#}");
    assert!(s.get("broke_away").is_none(), "it stayed in the job: {s:#}");
    assert!(
        s["argv"].to_string().contains("setTimeout"),
        "its command line: {s:#}"
    );
    let parent = &s["ancestry"][0];
    assert!(
        parent["argv"].to_string().contains("leak-a-child.js") && parent["gone"] == true,
        "under the script that started it: {s:#}"
    );
    assert!(err.contains("LEAK: process"), "{err}");
    let now = windows_pids(&wine);
    assert!(
        !now.contains(&detached) && !now.contains(&attached),
        "the leak was ended: {now:?}"
    );
}

#[test]
fn run_on_windows_is_clean_for_a_tidy_script_and_passes_its_status_on() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let node = win(&debugtop_e2e::wine::windows_node());
    let script = win(Path::new(&fixture("run/tidy.js")));
    let (code, report, err, _) = run_around(&wine, &[node.clone(), script.clone()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(report["verdict"], "clean", "{report:#}");
    assert_eq!(survivor_pids(&report), Vec::<u64>::new(), "{report:#}");
    // Near miss: a failing command is the command's failure, its own status, not a leak.
    let (code, report, err, _) = run_around(&wine, &[node, script, "3".into()]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(report["verdict"], "command-failed", "{report:#}");
    assert_eq!(survivor_pids(&report), Vec::<u64>::new(), "{report:#}");
}

#[test]
fn run_on_windows_says_which_process_broke_away_from_its_job_and_ends_it_too() {
    let _one = ONE_AT_A_TIME.blocking_lock();
    let wine = Wine::prepare();
    let exe = wine.place_built(&debugtop_e2e::wine::windows_build().join("breakaway.exe"));
    let (code, report, err, out) = run_around(&wine, &[win(&exe)]);
    let away = printed_pid(&out, "away");
    let stayed = printed_pid(&out, "stayed");
    assert_eq!(code, 86, "{err}");
    let mut pids = survivor_pids(&report);
    pids.sort_unstable();
    let mut want = vec![away, stayed];
    want.sort_unstable();
    assert_eq!(pids, want, "{report:#}");
    for s in report["survivors"].as_array().into_iter().flatten() {
        let pid = pid_of_id(&s["id"]);
        assert_eq!(
            s.get("broke_away") == Some(&json!(true)),
            pid == Some(away),
            "only the one that asked to leave is said to have left: {s:#}"
        );
        assert_eq!(s["ended"]["outcome"], "terminated", "{s:#}");
    }
    assert!(err.contains("left the run's scope"), "{err}");
    let now = windows_pids(&wine);
    assert!(!now.contains(&away) && !now.contains(&stayed), "{now:?}");
}
