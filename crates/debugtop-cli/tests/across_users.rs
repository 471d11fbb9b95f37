//! Root's `debugtop-cli` next to an unprivileged local user (`nobody`) who tries to turn it
//! against root: steer a kill onto root's real server, overwrite a root-only file through an
//! export, replace a device with a file, and hide a line of a plan with terminal escapes. Each
//! attack is the one a review made work; each test failed before its fix. Needs root (it drops
//! to `nobody` through `setpriv`). Nothing is ever killed here: plans are looked at with
//! `--dry-run`, and the test's own processes are ended by identity when it ends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::process::{Command, Output};

use debugtop_core::judging::DEFAULT_STUCK_AFTER;
use debugtop_e2e::mcp::Server;
use debugtop_e2e::nobody::{require_root, Nobody};
use serde_json::Value;

/// The CLI under test: this build's, or `DEBUGTOP_CLI` (to show a test fails on an older one).
fn cli_path() -> std::ffi::OsString {
    std::env::var_os("DEBUGTOP_CLI").unwrap_or_else(|| env!("CARGO_BIN_EXE_debugtop-cli").into())
}

fn cli() -> Command {
    Command::new(cli_path())
}

fn run(args: &[&str]) -> Output {
    cli().args(args).output().expect("run debugtop-cli")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// A look-alike session of `nobody`'s whose worker's log names root's real server as its
/// adapter: the claim is evidence, never a plan — in the audit's findings, and in `kill` of
/// the finding by id or by kind, which refuse it (exit 2: killing does not fix it).
///
/// The `kill` part could not fail: it ignored the exit code and looked only for root's pid,
/// and `kill` (default thresholds) did not see the finding yet, so both runs failed with "no
/// current finding" and passed. It now waits until the finding is current for `kill` and
/// asserts the refusal; with the log's claim trusted (the planner's tie check dropped) the
/// dry run plans root's server and exits 0, and this fails (tried, the audit's assertions set
/// aside).
#[test]
fn a_kill_is_never_steered_onto_roots_server_by_another_users_logs() {
    require_root("a_kill_is_never_steered_onto_roots_server_by_another_users_logs");
    let victim = Server::start(60_000);
    let evil = Nobody::new();
    let fake = evil.look_alike("evil-sess-1", victim.pid());
    let audit = run(&["audit", "--json", "--grace", "0", "--stuck-after", "0"]);
    let report: Value =
        serde_json::from_slice(&audit.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&audit)));
    let findings = report["findings"].as_array().expect("findings");
    let stuck = findings
        .iter()
        .find(|f| f["id"] == "stuck-session:evil-sess-1")
        .unwrap_or_else(|| panic!("the look-alike's session is judged: {report:#}"));
    // Every finding the look-alike raised plans nothing of root's.
    for f in findings
        .iter()
        .filter(|f| f.to_string().contains(&fake.sid))
    {
        for t in f["plan"]["targets"].as_array().into_iter().flatten() {
            assert_ne!(t["pid"], victim.pid(), "root's server planned: {f:#}");
            assert_eq!(t["role"], "worker", "{f:#}");
        }
    }
    let evidence = stuck["evidence"].to_string();
    assert!(
        evidence.contains(&format!(
            "the worker's log names pid {} as its adapter",
            victim.pid()
        )) && evidence.contains("an unconfirmed claim, not planned"),
        "{evidence}"
    );
    // `kill` on that finding, alone or by its kind for the look-alike's server, is refused:
    // the only adapter named is an unconfirmed claim, so killing does not fix the session and
    // nothing is planned, root's server least of all. A kill that cannot be planned exits 2
    // (a dry run of a plan 0, of one that refuses everything 1). `kill` judges with the
    // default thresholds: the finding is current once the start (dated by the look-alike's
    // log) has been stuck that long.
    let not_yet = "no current finding has the id stuck-session:evil-sess-1";
    let by_id = debugtop_e2e::wait_for(DEFAULT_STUCK_AFTER * 6, || {
        let out = run(&["kill", "stuck-session:evil-sess-1", "--dry-run"]);
        if text(&out).contains(not_yet) {
            std::thread::sleep(std::time::Duration::from_millis(500));
            return None;
        }
        Some(out)
    })
    .unwrap_or_else(|| panic!("the look-alike's start never became a stuck session for kill"));
    let server = fake.server.pid.to_string();
    let by_kind = run(&[
        "kill",
        "--kind",
        "stuck-session",
        "--server",
        &server,
        "--dry-run",
    ]);
    let victim_line = format!("(pid {},", victim.pid());
    for (out, refusal) in [
        (
            &by_id,
            "finding stuck-session:evil-sess-1 is not fixed by killing: close the session \
             (close_debug_session evil-sess-1)"
                .to_owned(),
        ),
        (
            &by_kind,
            format!("no current stuck-session finding of server {server} is fixed by killing"),
        ),
    ] {
        let shown = text(out);
        assert_eq!(out.status.code(), Some(2), "{shown}");
        assert!(shown.contains(&refusal), "{refusal:?} in:\n{shown}");
        assert!(
            !shown.contains(&victim_line) && !shown.contains("SIGTERM"),
            "nothing planned:\n{shown}"
        );
    }
    assert!(victim.health().is_ok(), "root's server still answers");
    drop(fake);
}

/// The pids the kernel hands out next (from `ns_last_pid`), for planting names.
fn next_pids(n: u32) -> impl Iterator<Item = u32> {
    let last: u32 = std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(1);
    (last + 1..).take(n as usize)
}

#[test]
fn an_export_into_another_users_folder_never_writes_through_their_links() {
    require_root("an_export_into_another_users_folder_never_writes_through_their_links");
    let root_only = tempfile::tempdir().unwrap();
    let precious = root_only.path().join("precious");
    std::fs::write(&precious, "root's own\n").unwrap();
    std::fs::set_permissions(&precious, std::fs::Permissions::from_mode(0o600)).unwrap();
    let evil = Nobody::new();
    std::fs::set_permissions(evil.dir(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    // The temporary file's name as it was (`.NAME.PID.tmp`) for the next pids, and the
    // target itself: links to root's file.
    for pid in next_pids(400) {
        evil.symlink(&format!(".report.json.{pid}.tmp"), &precious);
    }
    evil.symlink("report.json", &precious);
    let target = evil.path("report.json");
    let out = run(&["snapshot", "--out", &target.to_string_lossy()]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&precious).unwrap(), "root's own\n");
    let meta = std::fs::symlink_metadata(&target).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the link was replaced, not followed"
    );
    assert_eq!((meta.uid(), meta.mode() & 0o777), (0, 0o600));
    let snap: Value = serde_json::from_str(&std::fs::read_to_string(&target).unwrap()).unwrap();
    assert_eq!(snap["schema"], "debugtop.snapshot/1");
    // Near miss: into a folder of root's own, the same export just works.
    let own = root_only.path().join("mine.md");
    let out = run(&[
        "snapshot",
        "--format",
        "md",
        "--out",
        &own.to_string_lossy(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::read_to_string(&own).unwrap().contains("debugtop"));
}

#[test]
fn an_export_onto_a_device_or_fifo_is_refused_and_dash_is_stdout() {
    require_root("an_export_onto_a_device_or_fifo_is_refused_and_dash_is_stdout");
    let d = tempfile::tempdir().unwrap();
    // A device node of our own, the same as /dev/null (char 1:3), and a FIFO.
    let node = |name: &str, kind, dev| {
        let p = d.path().join(name);
        let mode = rustix::fs::Mode::from_raw_mode(0o600);
        rustix::fs::mknodat(rustix::fs::CWD, &p, kind, mode, dev).expect("mknod (root)");
        p
    };
    let dev = node(
        "null",
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::makedev(1, 3),
    );
    let fifo = node("fifo", rustix::fs::FileType::Fifo, 0);
    for p in [&dev, &fifo] {
        let out = run(&["snapshot", "--out", &p.to_string_lossy()]);
        assert!(!out.status.success());
        assert!(text(&out).contains("not a regular file"), "{}", text(&out));
    }
    let kind = |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().file_type();
    assert!(kind(&dev).is_char_device() && kind(&fifo).is_fifo());
    let out = run(&["snapshot", "--out", "-"]);
    assert!(out.status.success(), "{}", text(&out));
    let snap: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(snap["schema"], "debugtop.snapshot/1");
}

#[test]
fn another_users_terminal_escapes_are_shown_never_sent() {
    require_root("another_users_terminal_escapes_are_shown_never_sent");
    let evil = Nobody::new();
    let idle = b"setInterval(() => {}, 1 << 30);\n";
    let bootstrap = evil.write("dist/proxy/proxy-bootstrap.js", idle);
    // A worker whose owner is no server (this test): an orphaned worker, planned with its
    // command line, which carries a clipboard write, a title, and an erased line.
    let hostile = "\x1b]52;c;ZXZpbA==\x07\x1b]0;owned\x07\x1b[2K\rrefuse 1: hidden";
    let owner = format!("--mcp-owner-pid={}", std::process::id());
    let worker = evil.spawn(
        "node",
        &[
            &bootstrap.to_string_lossy(),
            &owner,
            "--mcp-session-id=esc-sess-1",
            hostile,
        ],
    );
    let id = format!(
        "orphaned-worker:{}.{}",
        worker.pid,
        debugtop_e2e::start_ticks(worker.pid).unwrap()
    );
    let audit = run(&["audit", "--grace", "0"]);
    let shown = text(&audit);
    assert!(shown.contains(&id), "{shown}");
    let plan = run(&["kill", &id, "--dry-run"]);
    for out in [&audit, &plan] {
        let bytes = [&out.stdout[..], &out.stderr[..]].concat();
        assert!(
            !bytes
                .iter()
                .any(|b| *b == 0x1b || *b == b'\r' || *b == 0x07),
            "a raw control byte reached the terminal:\n{}",
            text(out)
        );
    }
    // A dry run of a plan that signals something exits 0, and the plan names the worker.
    assert_eq!(plan.status.code(), Some(0), "{}", text(&plan));
    let plan = text(&plan);
    assert!(
        plan.contains(&format!("SIGTERM worker (pid {},", worker.pid)),
        "{plan}"
    );
    assert!(
        plan.contains("\\x1b]52;c;ZXZpbA==\\x07"),
        "shown as text: {plan}"
    );
    assert_eq!(
        plan.lines()
            .filter(|l| l.trim_start().starts_with("refuse"))
            .count(),
        0,
        "an argv word cannot pass for a line of the plan: {plan}"
    );
    drop(worker);
}

// Round two: what another user could still make root's debugtop leak, read, open and spend.

use debugtop_e2e::nobody::log_line;
use debugtop_e2e::procs::Spawned;

const IDLE: &str = "setInterval(() => {}, 1 << 30);\n";

/// Held by the tests whose look-alikes write logs: every `nobody` process is one user, whose
/// logs share one reading budget a tick — one test's 4 MB log would hold another's back.
static NOBODYS_LOGS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn nobodys_logs() -> std::sync::MutexGuard<'static, ()> {
    NOBODYS_LOGS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Root's `snapshot` (redacted JSON) and the same as Markdown.
fn snapshots() -> (String, String) {
    let json = run(&["snapshot"]);
    assert!(json.status.success(), "{}", text(&json));
    let md = run(&["snapshot", "--format", "md"]);
    assert!(md.status.success(), "{}", text(&md));
    (
        String::from_utf8_lossy(&json.stdout).into_owned(),
        String::from_utf8_lossy(&md.stdout).into_owned(),
    )
}

/// A process of root's that debugtop reports (an orphaned worker: its owner is this test, no
/// server), with `extra` on its command line.
fn roots_orphaned_worker(dir: &std::path::Path, sid: &str, extra: &[&str]) -> Spawned {
    let bootstrap = dir.join("dist/proxy/proxy-bootstrap.js");
    std::fs::create_dir_all(bootstrap.parent().unwrap()).unwrap();
    std::fs::write(&bootstrap, IDLE).unwrap();
    let mut cmd = Command::new("node");
    cmd.arg(&bootstrap)
        .arg(format!("--mcp-owner-pid={}", std::process::id()))
        .arg(format!("--mcp-session-id={sid}"))
        .args(extra);
    Spawned::spawn(&mut cmd)
}

#[test]
fn regression_a_session_id_shaped_like_a_key_switched_redaction_off() {
    require_root("regression_a_session_id_shaped_like_a_key_switched_redaction_off");
    let _logs = nobodys_logs();
    let root = tempfile::tempdir().unwrap();
    let _worker = roots_orphaned_worker(
        root.path(),
        "root-sess-1",
        &["--token", "ZqRootA1", "--api-key=ZqRootB2"],
    );
    // nobody's look-alike, whose own log creates a session named like a secret key and
    // pauses it (no worker runs it).
    let evil = Nobody::new();
    let log = evil.path("logs/server.log");
    let _server = evil.fake_server(IDLE, debugtop_e2e::mcp::free_port(), &log);
    let sid = "sk-0123456789abcdef";
    std::thread::sleep(std::time::Duration::from_millis(300));
    let lines = log_line(&format!(
        "[SessionManager] Created new session: s (ID: {sid}), state: created"
    )) + &log_line(&format!(
        "[SM _updateSessionState {sid}] State change: running -> paused"
    ));
    evil.write("logs/server.log", lines.as_bytes());
    // Unredacted, every one of them is there: the checks below can fail.
    let raw = text(&run(&["snapshot", "--no-redact"]));
    let raw_md = text(&run(&["snapshot", "--no-redact", "--format", "md"]));
    for shown in ["ZqRootA1", "ZqRootB2", sid] {
        assert!(
            raw.contains(shown),
            "{shown} never reached the JSON:\n{raw}"
        );
    }
    for shown in ["ZqRootA1", "ZqRootB2", sid] {
        assert!(
            raw_md.contains(shown),
            "{shown} never reached the Markdown:\n{raw_md}"
        );
    }
    let (json, md) = snapshots();
    for leaked in ["ZqRootA1", "ZqRootB2", sid] {
        assert!(!json.contains(leaked), "{leaked} in the JSON:\n{json}");
        assert!(!md.contains(leaked), "{leaked} in the Markdown:\n{md}");
    }
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(
        !v["sources"].as_array().unwrap().is_empty(),
        "sources kept: {:#}",
        v["sources"]
    );
    let unconfirmed = v["unconfirmed"].to_string();
    assert!(
        unconfirmed.contains("root-sess-1") && unconfirmed.contains("redacted-"),
        "root's worker judged, the session's id kept as a digest: {unconfirmed}"
    );
}

#[test]
fn every_secret_form_on_a_command_line_is_hidden_in_every_field() {
    require_root("every_secret_form_on_a_command_line_is_hidden_in_every_field");
    let forms: [&[&str]; 12] = [
        &["-ualice:ZqF01"],
        &["--requirepass", "ZqF02"],
        &["--accessKey", "ZqF03"],
        &["--privateKey", "ZqF04"],
        &["-H", "X-Auth-Token:ZqF05"],
        &[r#"{\"token\":\"ZqF06\"}"#],
        &["password:ZqF07"],
        &["{'password': 'ZqF08'}"],
        &["--password", "-ZqF09"],
        &["--password=alpha ZqF10"],
        &["--token", "x ZqF11"],
        &["--password", "alpha ZqF12"],
    ];
    let args: Vec<&str> = forms.iter().flat_map(|f| f.iter().copied()).collect();
    let evil = Nobody::new();
    let _w = evil.orphaned_worker(std::process::id(), "forms-sess-1", &args);
    // Unredacted, every form is in both: the checks below can fail.
    for format in ["json", "md"] {
        let raw = text(&run(&["snapshot", "--no-redact", "--format", format]));
        for n in 1..=12 {
            let secret = format!("ZqF{n:02}");
            assert!(
                raw.contains(&secret),
                "{secret} not in the {format}:\n{raw}"
            );
        }
    }
    let (json, md) = snapshots();
    assert!(
        json.contains("forms-sess-1"),
        "the worker is in the snapshot"
    );
    for out in [&json, &md] {
        let leaked: Vec<&str> = out
            .match_indices("ZqF")
            .map(|(i, _)| &out[i..i + 5])
            .collect();
        assert!(leaked.is_empty(), "{leaked:?} in\n{out}");
    }
}

#[test]
fn a_file_another_users_process_names_through_dot_dots_is_never_read() {
    require_root("a_file_another_users_process_names_through_dot_dots_is_never_read");
    // Root's private package: a folder of root's (0700), its package.json 0600.
    let private = tempfile::tempdir().unwrap();
    let app = private.path().join("app");
    std::fs::create_dir_all(app.join("dist")).unwrap();
    std::fs::write(
        app.join("package.json"),
        r#"{"name":"zq-roots-private-package","version":"9.9.9"}"#,
    )
    .unwrap();
    std::fs::set_permissions(
        app.join("package.json"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let evil = Nobody::new();
    evil.write("x/mcp-debugger/keep", b"");
    // From nobody's folder up to /tmp, then down into root's.
    let up = "../".repeat(evil.dir().components().count() + 1);
    let argv0 = format!(
        "{}/x/mcp-debugger/{up}{}/app/dist/cli.mjs",
        evil.dir().display(),
        private.path().strip_prefix("/").unwrap().display()
    );
    let _server = evil.spawn_as(&argv0, "sleep", &["600"]);
    // Near miss: nobody's own package, by a plain path, is read.
    let own = evil.write(
        "own/node_modules/@debugmcp/mcp-debugger/package.json",
        br#"{"name":"@debugmcp/mcp-debugger","version":"0.24.2"}"#,
    );
    let own_cli = own.parent().unwrap().join("dist/cli.mjs");
    let _own = evil.spawn_as(&own_cli.to_string_lossy(), "sleep", &["600"]);
    let out = run(&["snapshot", "--no-redact"]);
    let shown = text(&out);
    assert!(!shown.contains("zq-roots-private-package"), "{shown}");
    assert!(!shown.contains("9.9.9"), "{shown}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let versions = v["environment"]["servers"].to_string();
    assert!(
        versions.contains("0.24.2"),
        "nobody's own package read: {versions}"
    );
}

#[test]
fn a_device_another_user_names_as_a_log_is_never_opened() {
    require_root("a_device_another_user_names_as_a_log_is_never_opened");
    let evil = Nobody::new();
    let _server = evil.fake_server(
        IDLE,
        debugtop_e2e::mcp::free_port(),
        std::path::Path::new("/dev/zero"),
    );
    let trace = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(trace.path())
        .arg(cli_path())
        .args(["snapshot", "--no-redact"])
        .output()
        .expect("strace (Debian's strace package)");
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let logs = v["sources"].to_string();
    assert!(
        logs.contains("not a regular file (a device)"),
        "said why: {logs}"
    );
    let calls = std::fs::read_to_string(trace.path()).unwrap();
    let opened: Vec<&str> = calls
        .lines()
        .filter(|l| l.contains("\"/dev/zero\"") || l.contains("\"zero\""))
        .collect();
    assert!(!opened.is_empty(), "it was looked at:\n{calls}");
    for l in opened {
        assert!(l.contains("O_PATH"), "opened for more than a look: {l}");
    }
}

#[test]
fn the_caps_worth_of_http_sessions_from_a_fake_health_costs_seconds_not_minutes() {
    require_root("the_caps_worth_of_http_sessions_from_a_fake_health_costs_seconds_not_minutes");
    // About as many 16-character ids as /health's 1 MiB allows.
    let flood = r#"import http from 'node:http';
const port = Number(process.argv[process.argv.indexOf('-p') + 1]);
const ids = Array.from({ length: 55000 }, (_, i) => 'h' + i.toString(16).padStart(15, '0'));
const body = JSON.stringify({ status: 'ok', mode: 'http', connections: ids.length, sessions: ids });
http.createServer((q, r) => { r.writeHead(200, { 'content-type': 'application/json' }); r.end(body); })
  .listen(port, '127.0.0.1');
"#;
    let evil = Nobody::new();
    let port = debugtop_e2e::mcp::free_port();
    let server = evil.fake_server(flood, port, &evil.path("logs/server.log"));
    debugtop_e2e::procs::wait_for(std::time::Duration::from_secs(20), || {
        debugtop_e2e::mcp::listening_ports(server.pid)
            .contains(&port)
            .then_some(())
    })
    .expect("the fake /health listens");
    let started = std::time::Instant::now();
    let out = run(&["snapshot"]);
    let took = started.elapsed();
    assert!(out.status.success(), "{}", text(&out));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    // This server's: other tests' servers run beside this one.
    let n = v["http_sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|h| h["server_pid"] == server.pid)
        .count();
    eprintln!("redacted snapshot of {n} HTTP sessions: {took:?}");
    assert_eq!(n, 55_000, "every id /health listed");
    let json = String::from_utf8_lossy(&out.stdout);
    assert!(!json.contains("h000000000000fff"), "ids shortened");
    // A deadline far above what linear work takes here, far below the minutes of quadratic.
    assert!(took < std::time::Duration::from_secs(120), "{took:?}");
}

#[test]
fn hard_links_of_one_big_log_are_read_once_within_a_budget() {
    require_root("hard_links_of_one_big_log_are_read_once_within_a_budget");
    let _logs = nobodys_logs();
    let evil = Nobody::new();
    let mut servers = Vec::new();
    for s in 0..3 {
        let log = evil.path(&format!("s{s}/server.log"));
        evil.write(&format!("s{s}/.keep"), b"");
        servers.push(evil.fake_server(IDLE, debugtop_e2e::mcp::free_port(), &log));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    // One 4 MB file of session lines, dated after the servers started…
    let mut big = String::new();
    let mut i = 0u64;
    while big.len() < 4 << 20 {
        big.push_str(&log_line(&format!(
            "[SessionManager] Created new session: n{i} (ID: {i:08x}-aaaa-4bbb-8ccc-dddddddddddd), state: created"
        )));
        i += 1;
    }
    let first = evil.write("big.log", big.as_bytes());
    // …under thirty names: each server's --log-file and its nine rotated siblings.
    for s in 0..3 {
        for name in std::iter::once("server.log".to_owned())
            .chain((1..=9).map(|n| format!("server{n}.log")))
        {
            std::fs::hard_link(&first, evil.path(&format!("s{s}/{name}"))).unwrap();
        }
    }
    let out = Command::new("/usr/bin/time")
        .args(["-f", "peak %M KiB"])
        .arg(cli_path())
        .arg("snapshot")
        .output()
        .expect("/usr/bin/time (Debian's time package)");
    assert!(out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    let peak_kib: u64 = err
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("peak ")?.strip_suffix(" KiB")?.parse().ok())
        .unwrap_or_else(|| panic!("no peak in {err}"));
    let json_bytes = out.stdout.len();
    eprintln!(
        "{i} session lines under 30 names: peak {} MiB, {} KiB of JSON",
        peak_kib >> 10,
        json_bytes >> 10
    );
    // Was 665 MB and 15 MB. What is left is bounded by the caps, not by the file: one file of
    // 4 MiB a tick, 2,048 records a server, the timeline's 10,000 events.
    assert!(peak_kib < 200 << 10, "peak {peak_kib} KiB");
    assert!(json_bytes < 10 << 20, "{json_bytes} bytes of JSON");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let sources = v["sources"].to_string();
    assert!(
        sources.contains("the same file as one already read this tick"),
        "the status says so: {sources}"
    );
    drop(servers);
}

#[test]
fn terminal_controls_from_another_users_argv_are_escaped_in_json() {
    require_root("terminal_controls_from_another_users_argv_are_escaped_in_json");
    let evil = Nobody::new();
    let _w = evil.orphaned_worker(
        std::process::id(),
        "ctl-sess-1",
        &["a\u{202e}gnp.exe\u{9b}31m\u{2066}b"],
    );
    let out = run(&["snapshot"]);
    assert!(out.status.success(), "{}", text(&out));
    let json = String::from_utf8(out.stdout).unwrap();
    assert!(json.contains("ctl-sess-1"));
    for c in ['\u{202e}', '\u{9b}', '\u{2066}'] {
        assert!(!json.contains(c), "{:?} raw in the JSON", c);
    }
    assert!(
        json.contains("\\u202e") && json.contains("\\u009b"),
        "escaped instead"
    );
    // The same JSON to a parser.
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(v.to_string().contains('\u{202e}'));
}

#[test]
fn another_users_argv_cannot_make_root_ask_a_port_it_does_not_listen_on() {
    require_root("another_users_argv_cannot_make_root_ask_a_port_it_does_not_listen_on");
    // A port of root's (its listener counts who comes).
    let victim = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    victim.set_nonblocking(true).unwrap();
    let port = victim.local_addr().unwrap().port();
    let evil = Nobody::new();
    let _server = evil.fake_server(IDLE, port, &evil.path("logs/server.log"));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = run(&["snapshot"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        matches!(victim.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "root's debugtop connected to port {port}, named only by another user's argv"
    );
    // Near miss: root's own look-alike naming the same port is asked there.
    let root = tempfile::tempdir().unwrap();
    let cli = root
        .path()
        .join("node_modules/@debugmcp/mcp-debugger/dist/cli.mjs");
    std::fs::create_dir_all(cli.parent().unwrap()).unwrap();
    std::fs::write(&cli, IDLE).unwrap();
    let _own =
        Spawned::spawn(
            Command::new("node")
                .arg(&cli)
                .args(["http", "-p", &port.to_string()]),
        );
    std::thread::sleep(std::time::Duration::from_millis(300));
    let out = run(&["snapshot"]);
    assert!(out.status.success(), "{}", text(&out));
    victim.set_nonblocking(false).unwrap();
    let asked = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = asked.0.send(victim.accept().is_ok());
    });
    assert_eq!(
        asked.1.recv_timeout(std::time::Duration::from_secs(5)),
        Ok(true),
        "root's own server is asked on its argv's port"
    );
}
