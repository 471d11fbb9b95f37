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
async fn a_server_started_on_port_0_is_asked_on_the_port_it_really_listens_on() {
    // `-p 0`: argv names no port (0.25 prints the one it got only on stderr); the server's own
    // listening socket tells.
    let server = Server::start_on_any_port(60_000);
    assert_ne!(server.port, 0);
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("mock", "port-0").await;
    let (code, out, err) = tokio::task::spawn_blocking(|| run(&["snapshot"]))
        .await
        .unwrap();
    assert_eq!(code, Some(0), "{err}");
    let snap: Value = serde_json::from_str(&out).unwrap();
    let health = snap["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["source"] == "health" && s["server_pid"] == server.pid())
        .cloned()
        .unwrap_or_default();
    assert_eq!(health["state"], "ok", "{health:#}");
    assert!(
        health["detail"]
            .to_string()
            .contains(&format!("http://127.0.0.1:{}/health", server.port)),
        "{health:#}"
    );
    assert!(
        snap["debug_sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["id"] == session.as_str()),
        "{:#}",
        snap["debug_sessions"]
    );
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
    let mut lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The stream starts with who is speaking, then one update per line.
    let hello = lines.remove(0);
    assert_eq!(hello["hello"]["stream"], "debugtop.stream/1", "{hello}");
    assert!(
        hello["hello"]["capabilities"].to_string().contains("kill"),
        "{hello}"
    );
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

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = cli().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// docs/server-behaviour.md, "Failure shapes" 6, through the CLI a CI job would run: `audit` finds the leaked worker
/// (exit 1), `kill <finding-id>` previews, refuses without --yes, then removes it (exit 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_bug_stand_in_is_found_by_audit_and_removed_by_kill() {
    use debugtop_e2e::mcp::seed_bug_stand_in;
    let sentinel = debugtop_e2e::Spawned::spawn(Command::new("sleep").arg("600"));
    let server = Server::start(60_000);
    // Its proxy log goes where the real server puts its workers' logs (beside its own log):
    // a worker's own log must not count as the server having created the session.
    let (harness, worker, session) = seed_bug_stand_in(server.pid(), server.dir.path());
    let proxy_log = server
        .dir
        .path()
        .join(format!("sessions/{session}/run-1/proxy-{session}.log"));
    assert!(
        debugtop_e2e::wait_for(std::time::Duration::from_secs(20), || proxy_log
            .exists()
            .then_some(()))
        .is_some(),
        "the worker never wrote {}",
        proxy_log.display()
    );

    let mut found = None;
    for _ in 0..20 {
        let (code, out, err) = tokio::task::spawn_blocking(|| run(&["audit", "--json"]))
            .await
            .unwrap();
        assert!(
            code == Some(0) || code == Some(1),
            "audit could not run: {err}"
        );
        let doc: Value = serde_json::from_str(&out).unwrap();
        if let Some(f) = doc["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"][0] == worker)
        {
            assert_eq!(code, Some(1), "findings mean exit 1");
            found = Some(f.clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
    let f = found.expect("leaked-worker for the stand-in");
    assert_eq!(f["session_id"], session.as_str());
    assert_eq!(f["server_pid"], server.pid());
    let evidence = f["evidence"].to_string();
    // Both witnesses of a live owner that cannot hold the session fire: its own log never
    // created it, and its /health lists no HTTP session at all.
    assert!(evidence.contains("never created session"), "{evidence}");
    assert!(evidence.contains("lists no HTTP session"), "{evidence}");
    assert!(evidence.contains("not the server"), "{evidence}");
    let planned: Vec<(u64, u64)> = f["plan"]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["pid"].as_u64().unwrap(),
                t["start_ticks"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(
        planned.len() >= 2 && planned.iter().any(|(p, _)| *p == u64::from(worker)),
        "the worker and its mock adapter are in the plan: {planned:?}"
    );
    // Only what this test started (its harness's tree) before the kill executes, as root.
    let mut ours = Vec::new();
    debugtop_e2e::procs::remember_tree(harness.pid, &mut ours);
    for (pid, ticks) in &planned {
        assert!(
            ours.iter()
                .any(|(p, t)| u64::from(*p) == *pid && t == ticks),
            "{pid} is not a process this test started: {planned:?}"
        );
    }
    let id = f["id"].as_str().unwrap().to_owned();

    // The readable report names it and says how to fix it.
    let (code, out, _) = tokio::task::spawn_blocking(|| run(&["audit"]))
        .await
        .unwrap();
    assert_eq!(code, Some(1));
    assert!(
        out.contains("CRITICAL leaked-worker") && out.contains(&format!("debugtop-cli kill {id}")),
        "{out}"
    );

    let idc = id.clone();
    let (code, out, _) = tokio::task::spawn_blocking(move || run(&["kill", &idc, "--dry-run"]))
        .await
        .unwrap();
    assert_eq!(code, Some(0));
    assert!(out.contains(&format!("worker (pid {worker}")), "{out}");
    assert_eq!(
        debugtop_e2e::procs::state_of(worker).map(|s| s != 'Z'),
        Some(true),
        "a dry run kills nothing"
    );

    let idc = id.clone();
    let (code, _, err) = tokio::task::spawn_blocking(move || run(&["kill", &idc]))
        .await
        .unwrap();
    assert_eq!(code, Some(2));
    assert!(err.contains("pass --yes"), "{err}");

    let idc = id.clone();
    let (code, out, err) =
        tokio::task::spawn_blocking(move || run(&["kill", &idc, "--yes", "--grace-ms", "2000"]))
            .await
            .unwrap();
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains(&format!("worker {worker}: exited"))
            || out.contains(&format!("worker {worker}: killed")),
        "{out}"
    );
    for (pid, ticks) in &planned {
        let pid = u32::try_from(*pid).unwrap();
        assert!(
            debugtop_e2e::procs::start_ticks(pid) != Some(*ticks)
                || debugtop_e2e::procs::state_of(pid) == Some('Z'),
            "planned pid {pid} is still alive"
        );
    }
    assert_eq!(
        debugtop_e2e::procs::state_of(sentinel.pid),
        Some('S'),
        "the sentinel outside the tree was hit"
    );
    assert!(
        debugtop_e2e::procs::state_of(server.pid()).is_some_and(|s| s != 'Z'),
        "the server itself is untouched"
    );

    // A finding that no longer exists is a clear error, exit 2.
    let (code, _, err) = tokio::task::spawn_blocking(move || run(&["kill", &id, "--yes"]))
        .await
        .unwrap();
    assert_eq!(code, Some(2));
    assert!(err.contains("no current finding has the id"), "{err}");
}

/// Refusals are tested on the plan (`--dry-run`), never by trusting a refusal to hold while
/// real signals could be sent: if the refusal regressed, a root CI must not signal its init.
#[test]
fn kill_refuses_pid_1_and_strangers() {
    let (code, out, _) = run(&["kill", "1", "--dry-run"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("refuse 1: pid 0 and 1 are never signalled"),
        "{out}"
    );
    assert!(out.contains("nothing to kill"), "{out}");
    let stranger = debugtop_e2e::Spawned::spawn(Command::new("sleep").arg("600"));
    let (code, out, _) = run(&["kill", &stranger.pid.to_string(), "--dry-run"]);
    assert_eq!(code, Some(1));
    assert!(out.contains("not part of any debug server's tree"), "{out}");
    assert_eq!(debugtop_e2e::procs::state_of(stranger.pid), Some('S'));
}

/// The debugpy debuggee of a real python session carries `--adapter-access-token <secret>`:
/// the JSON export hides it unless `--no-redact` is given. The Markdown report is not checked
/// for it here: the debuggee of a healthy session is in no finding, and the tree cuts its label
/// before the token, so even an unredacted report lacks it (tried). Markdown redaction of
/// command lines is checked in `across_users.rs`, where an unredacted report shows each secret.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exports_redact_the_real_debugpy_access_token() {
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let session = client.create_session("python", "redact-me").await;
    let r = client.start(&session, &fixture("py-app/loop.py")).await;
    assert_eq!(r["success"], true, "{r}");
    // The real token, read from the real debuggee.
    let mut token = None;
    for _ in 0..100 {
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
                continue;
            };
            let argv: Vec<String> = raw
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            if let Some(i) = argv.iter().position(|a| a == "--adapter-access-token") {
                if argv.iter().any(|a| a.contains(&session))
                    || std::fs::read(e.path().join("environ"))
                        .is_ok_and(|env| String::from_utf8_lossy(&env).contains(&session))
                {
                    token = argv.get(i + 1).cloned();
                }
            }
        }
        if token.is_some() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let token = token.expect("a debugpy debuggee with an access token");
    assert!(token.len() >= 8);
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("s.json");
    let md = dir.path().join("s.md");
    let raw = dir.path().join("raw.json");
    let (j, m, r) = (json.clone(), md.clone(), raw.clone());
    tokio::task::spawn_blocking(move || {
        assert_eq!(run(&["snapshot", "--out", j.to_str().unwrap()]).0, Some(0));
        assert_eq!(
            run(&["snapshot", "--format", "md", "--out", m.to_str().unwrap()]).0,
            Some(0)
        );
        assert_eq!(
            run(&["snapshot", "--no-redact", "--out", r.to_str().unwrap()]).0,
            Some(0)
        );
    })
    .await
    .unwrap();
    let json = std::fs::read_to_string(json).unwrap();
    let md = std::fs::read_to_string(md).unwrap();
    assert!(
        json.contains("--adapter-access-token") && json.contains("‹redacted›"),
        "the debuggee is in the snapshot"
    );
    assert!(
        !json.contains(&token),
        "token leaked into the JSON snapshot"
    );
    assert!(md.contains(&session[..8]));
    let raw = std::fs::read_to_string(raw).unwrap();
    assert!(raw.contains(&token), "--no-redact keeps the argv as it is");
    let snap: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(snap["redacted"], true);
    // And the file reads back as what was written: every field, not just "it parses".
    let back = debugtop_core::actions::export::import(&json).unwrap();
    let again: Value =
        serde_json::from_str(&debugtop_core::actions::export::to_json(&back).unwrap()).unwrap();
    let differ: Vec<&String> = snap
        .as_object()
        .unwrap()
        .iter()
        .filter(|(k, v)| again.get(k.as_str()) != Some(v))
        .map(|(k, _)| k)
        .collect();
    assert!(differ.is_empty(), "read back differently: {differ:?}");
    assert_eq!(again, snap);
    assert!(back
        .processes
        .iter()
        .any(|p| p.argv.iter().any(|a| a == "--adapter-access-token")));
    client.close().await;
}

/// A real session whose adapter (the test's own) never answers `initialize`: `audit` reports
/// `stuck-session` like any finding, its report names the pending request, and `snapshot`
/// carries the session's stages and waiting requests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_reports_a_stuck_session_and_the_snapshot_carries_its_stages() {
    let server = Server::start(60_000);
    let client = std::sync::Arc::new(Client::connect(&server.url()).await);
    let r = client
        .call(
            "create_debug_session",
            serde_json::json!({"language": "python", "name": "stalled", "executablePath": fixture("stall/accept-never-answer")}),
        )
        .await;
    let id = r["sessionId"].as_str().unwrap().to_owned();
    let start = {
        let (c, id) = (std::sync::Arc::clone(&client), id.clone());
        tokio::spawn(async move { c.start(&id, &fixture("py-app/loop.py")).await })
    };
    // Past a 3 s threshold, well before the server's own 30 s.
    tokio::time::sleep(std::time::Duration::from_secs(6)).await;
    let out = tokio::task::spawn_blocking(|| {
        cli()
            .args(["audit", "--json", "--stuck-after", "3"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let f = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "stuck-session" && f["session_id"] == id.as_str())
        .unwrap_or_else(|| panic!("no stuck-session: {doc:#}"))
        .clone();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        f.to_string().contains("initialize request pending"),
        "{f:#}"
    );
    let text = tokio::task::spawn_blocking(|| {
        cli()
            .args(["audit", "--stuck-after", "3"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("stuck-session"),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
    let snap = tokio::task::spawn_blocking(|| cli().arg("snapshot").output().unwrap())
        .await
        .unwrap();
    let snap: Value = serde_json::from_slice(&snap.stdout).unwrap();
    let d = snap["debug_sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"] == id.as_str())
        .unwrap()
        .clone();
    let stages: Vec<&str> = d["progress"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["stage"]["stage"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        stages,
        ["adapter-spawned", "connect-attempt", "connected", "sent"],
        "{d:#}"
    );
    assert_eq!(
        d["progress"]["trace"]["pending"][0]["command"],
        "initialize"
    );
    start.abort();
}

#[test]
fn regression_force_was_refused_at_execution_now_it_takes_the_pid_and_its_descendants() {
    // A shell with a child of its own: nothing to do with any debug server.
    let mut sh =
        debugtop_e2e::Spawned::spawn(Command::new("sh").args(["-c", "sleep 600 & echo $!; wait"]));
    let child: u32 = sh
        .read_line(std::time::Duration::from_secs(10))
        .parse()
        .unwrap();
    let ids = [
        (sh.pid, debugtop_e2e::start_ticks(sh.pid).unwrap()),
        (child, debugtop_e2e::start_ticks(child).unwrap()),
    ];
    // Without --force: refused, untouched.
    let out = cli()
        .args(["kill", &sh.pid.to_string(), "--tree", "--yes"])
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(ids
        .iter()
        .all(|(p, t)| debugtop_e2e::procs::untouched(*p, *t)));
    // With it: the shell and, with --tree, its child.
    let out = cli()
        .args([
            "kill",
            &sh.pid.to_string(),
            "--force",
            "--tree",
            "--yes",
            "--grace-ms",
            "2000",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains(&format!("SIGTERM other (pid {child}")),
        "{text}"
    );
    sh.reap();
    for (p, t) in ids {
        assert!(
            debugtop_e2e::start_ticks(p) != Some(t)
                || debugtop_e2e::procs::state_of(p) == Some('Z'),
            "{p} still runs: {text}"
        );
    }
}

/// mimalloc asked the kernel for transparent huge pages on its arenas: a `watch` held 18 MB of
/// them within a second, and about twice the memory over an hour (docs/benchmarks/2026-12-04.md,
/// "Without transparent huge pages"). The allocator is built without (`no_thp`).
///
/// Judged in every THP mode by the asking itself: a mapping advised `MADV_HUGEPAGE` carries
/// `hg` in its `VmFlags` (`/proc/<pid>/smaps`) whatever the system's mode, and none of the
/// watch's may. What it holds (`AnonHugePages`) tells who asked only in `madvise` mode (in
/// `always` every process gets them, in `never` none does), so that is judged there too. Was a
/// silent pass outside `madvise` mode (it returned early); dropping `no_thp` fails it on
/// `VmFlags` alone (tried).
#[test]
fn regression_a_watch_held_transparent_huge_pages_it_asked_for() {
    let mode =
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    let mut watch =
        debugtop_e2e::Spawned::spawn(cli().args(["watch", "--json", "--interval", "100"]));
    let hello = watch.read_line(std::time::Duration::from_secs(30));
    assert!(hello.contains("hello"), "{hello}");
    for _ in 0..5 {
        watch.read_line(std::time::Duration::from_secs(30));
    }
    let smaps = std::fs::read_to_string(format!("/proc/{}/smaps", watch.pid))
        .expect("/proc/<pid>/smaps of the watch");
    let advised = huge_page_advised(&smaps);
    assert!(
        smaps.lines().any(|l| l.starts_with("VmFlags:")),
        "this kernel shows no VmFlags in smaps: nothing to judge by\n{smaps}"
    );
    assert!(
        advised.is_empty(),
        "the watch asked for huge pages (MADV_HUGEPAGE) on {} mapping(s):\n{}",
        advised.len(),
        advised.join("\n")
    );
    if mode.contains("[madvise]") {
        let huge_kb = debugtop_e2e::kib_field(watch.pid, "smaps_rollup", "AnonHugePages")
            .expect("smaps_rollup has AnonHugePages");
        let rss_kb = debugtop_e2e::kib_field(watch.pid, "status", "VmRSS").unwrap_or(0);
        assert_eq!(
            huge_kb, 0,
            "the watch holds {huge_kb} kB of huge pages (RSS {rss_kb} kB)"
        );
    } else {
        eprintln!(
            "AnonHugePages not judged (it tells who asked only in madvise mode): THP here is {:?}",
            mode.trim()
        );
    }
}

/// The mappings of an `smaps` whose `VmFlags` hold `hg` (advised `MADV_HUGEPAGE`), by their
/// header lines.
fn huge_page_advised(smaps: &str) -> Vec<String> {
    let mut header = "";
    let mut out = Vec::new();
    for line in smaps.lines() {
        if let Some(flags) = line.strip_prefix("VmFlags:") {
            if flags.split_whitespace().any(|f| f == "hg") {
                out.push(header.to_owned());
            }
        } else if line
            .split_whitespace()
            .next()
            .is_some_and(|range| range.contains('-') && !range.ends_with(':'))
        {
            header = line;
        }
    }
    out
}

/// One raw HTTP/1.1 exchange with `serve`: the status line, the head and the body.
fn http(port: u16, request: &[u8]) -> (String, String, String) {
    try_http(port, request).expect("connect to serve")
}

/// [`http`], or the error connecting (serve not listening yet).
fn try_http(port: u16, request: &[u8]) -> std::io::Result<(String, String, String)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    s.write_all(request).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let resp = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let status = head.lines().next().unwrap_or("").to_owned();
    Ok((status, head.to_owned(), body.to_owned()))
}

fn get(port: u16, path: &str, accept: &str) -> (String, String, String) {
    http(port, &get_request(path, accept))
}

fn get_request(path: &str, accept: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nConnection: close\r\n\r\n")
        .into_bytes()
}

/// Regression: the first look at `serve` came before it listened and the refused connection
/// failed the test instead of being tried again.
fn wait_until_serving(port: u16) {
    debugtop_e2e::wait_for(std::time::Duration::from_secs(30), || {
        try_http(port, &get_request("/metrics", "*/*"))
            .ok()
            .filter(|(status, _, _)| status.contains("200"))
            .map(|_| ())
    })
    .expect("serve answers");
}

fn promtool_accepts(text: &str) -> Result<(), String> {
    use std::io::Write;
    let mut p = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool (Debian's prometheus package: scripts/deps.sh test)");
    p.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = p.wait_with_output().unwrap();
    // promtool warns on stdout and still exits 0: any output is a failure here.
    let said =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success() && said.trim().is_empty())
        .then_some(())
        .ok_or(said)
}

#[test]
fn serve_answers_metrics_findings_and_health_and_refuses_everything_else() {
    let port = debugtop_e2e::mcp::free_port();
    let serve = debugtop_e2e::Spawned::spawn(cli().args([
        "serve",
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--interval",
        "300",
    ]));
    wait_until_serving(port);
    let (_, head, body) = get(port, "/metrics", "text/plain");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    promtool_accepts(&body).unwrap_or_else(|e| panic!("promtool: {e}\n{body}"));
    assert!(body.contains("debugtop_findings{"), "{body}");
    let (_, head, body) = get(
        port,
        "/metrics",
        "application/openmetrics-text; version=1.0.0",
    );
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert!(body.ends_with("# EOF\n"), "{body}");
    let (status, _, body) = get(port, "/api/findings", "application/json");
    assert!(status.contains("200"), "{status}");
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["schema"], "debugtop.findings/1");
    assert_eq!(doc["redacted"], true);
    assert!(get(port, "/healthz", "*/*").0.contains("200"));
    // Nothing changes the machine; nothing else is there.
    for (request, want) in [
        (
            &b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                [..],
            "405",
        ),
        (
            &b"DELETE /api/findings HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..],
            "405",
        ),
        (
            &b"GET /kill HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..],
            "404",
        ),
        (
            &b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"[..],
            "404",
        ),
        (&b"\x00\x01\x02 not http at all\r\n\r\n"[..], "400"),
    ] {
        let (status, head, _) = http(port, request);
        assert!(
            status.contains(want),
            "{:?}: {status}",
            String::from_utf8_lossy(request)
        );
        if want == "405" {
            assert!(
                head.to_ascii_lowercase().contains("allow: get, head"),
                "{head}"
            );
        }
    }
    // Still serving, never panicked.
    assert!(get(port, "/healthz", "*/*").0.contains("200"));
    let mut serve = serve;
    assert!(
        matches!(serve.child.try_wait(), Ok(None)),
        "serve is still running"
    );
}

#[test]
fn audit_and_watch_write_the_same_series_for_a_textfile_collector() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let prom = dir.path().join("debugtop.prom");
    let with = cli()
        .args(["audit", "--textfile"])
        .arg(&prom)
        .output()
        .unwrap();
    let text = std::fs::read_to_string(&prom).unwrap();
    // The audit's own exit code, agreeing with the series it wrote (the machine's findings
    // change while the other tests here run: a second audit to compare with could differ).
    let found: f64 = text
        .lines()
        .filter(|l| l.starts_with("debugtop_findings{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    assert_eq!(
        with.status.code(),
        Some(i32::from(found > 0.0)),
        "the audit's own exit code, with {found} findings in its series\n{text}"
    );
    assert!(text.ends_with('\n'));
    promtool_accepts(&text).unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
    let mode = std::fs::metadata(&prom).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "node_exporter runs as its own user");
    let audit_series = series(&text);
    std::fs::remove_file(&prom).unwrap();
    let watch = cli()
        .args(["watch", "--interval", "200", "--count", "3", "--textfile"])
        .arg(&prom)
        .output()
        .unwrap();
    assert!(
        watch.status.success(),
        "{}",
        String::from_utf8_lossy(&watch.stderr)
    );
    let text = std::fs::read_to_string(&prom).unwrap();
    promtool_accepts(&text).unwrap_or_else(|e| panic!("promtool: {e}\n{text}"));
    // The same series, each `name{labels}` (their values are the machine's of that moment).
    let watch_series = series(&text);
    assert!(audit_series.len() > 20, "{audit_series:?}");
    assert_eq!(
        audit_series, watch_series,
        "audit and watch write the same series"
    );
    let names = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(names, 1, "no temporary file left beside it");
}

/// The series of a text exposition: each sample line's `name{labels}`, its value cut off.
fn series(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.rsplit_once(' ').map(|(s, _)| s.to_owned()))
        .collect()
}
