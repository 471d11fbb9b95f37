//! Root's `debugtop-cli` next to an unprivileged local user (`nobody`) who tries to turn it
//! against root: steer a kill onto root's real server, overwrite a root-only file through an
//! export, replace a device with a file, and hide a line of a plan with terminal escapes. Each
//! attack is the one a review made work; each test failed before its fix. Needs root (it drops
//! to `nobody` through `setpriv`). Nothing is ever killed here: plans are looked at with
//! `--dry-run`, and the test's own processes are ended by identity when it ends.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::process::{Command, Output};

use debugtop_e2e::mcp::Server;
use debugtop_e2e::nobody::{require_root, Nobody};
use serde_json::Value;

fn cli() -> Command {
    Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
}

fn run(args: &[&str]) -> Output {
    cli().args(args).output().expect("run debugtop-cli")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

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
    let victim_line = format!("(pid {},", victim.pid());
    for args in [
        &["kill", "stuck-session:evil-sess-1", "--dry-run"][..],
        &["kill", "--kind", "stuck-session", "--dry-run"][..],
    ] {
        let out = run(args);
        assert!(
            !text(&out).contains(&victim_line),
            "{args:?}:\n{}",
            text(&out)
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
    let plan = text(&plan);
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
