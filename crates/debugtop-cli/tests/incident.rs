//! Incident scale, as the CLI meets it: a thousand real orphaned processes (cheap stand-ins
//! carrying the worker markers of one dead owner) are one group in the audit, several ids are
//! one plan, and `kill --kind orphaned-worker --server <owner>` kills the rest in one plan,
//! every pid verified gone and nothing else signalled. Its own binary: its findings would
//! break the healthy-machine assertions of the other CLI tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::process::Command;
use std::time::Instant;

use debugtop_e2e::procs::{state_of, StandIns};
use debugtop_e2e::{HeldZombie, Spawned};
use serde_json::Value;

const CLI: &str = env!("CARGO_BIN_EXE_debugtop-cli");

fn cli(args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(CLI).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The tests here read the whole machine's findings: one at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_one_shot_snapshot_names_what_an_audit_would_find_as_not_yet_confirmed() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let owner = HeldZombie::new();
    let orphan = StandIns::orphaned_workers(1, owner.pid);
    let (pid, _) = orphan.identities()[0];
    let (code, out, err) = cli(&["snapshot"]);
    assert_eq!(code, Some(0), "{err}");
    let snap: Value = serde_json::from_str(&out).unwrap();
    let about = |list: &Value| {
        list.as_array()
            .into_iter()
            .flatten()
            .find(|f| f["pids"][0] == pid)
            .cloned()
    };
    // Its owner is long gone, but a one-shot look waited for no grace: named, not confirmed.
    assert_eq!(about(&snap["findings"]), None, "{:#}", snap["findings"]);
    let pending = about(&snap["unconfirmed"]).unwrap_or_else(|| panic!("{snap:#}"));
    assert_eq!(pending["kind"], "orphaned-worker", "{pending:#}");
    // CPU from one read (its life's average), not nothing.
    let proc = snap["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["pid"] == pid)
        .cloned()
        .unwrap_or_default();
    assert!(proc["cpu_percent"].is_number(), "{proc:#}");
    // The audit confirms the same finding.
    let (code, out, _) = cli(&["audit", "--json"]);
    assert_eq!(code, Some(1));
    let doc: Value = serde_json::from_str(&out).unwrap();
    let confirmed = about(&doc["findings"]).unwrap_or_else(|| panic!("{doc:#}"));
    assert_eq!(confirmed["id"], pending["id"]);
}

#[test]
fn a_thousand_orphans_of_one_dead_server_are_one_group_and_one_bulk_kill() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let owner = HeldZombie::new();
    let sentinel = Spawned::spawn(Command::new("sleep").arg("600"));
    let orphans = StandIns::orphaned_workers(1000, owner.pid);
    assert_eq!(orphans.alive(), 1000);

    let t = Instant::now();
    let (code, out, err) = cli(&["audit", "--json", "--grace", "0"]);
    eprintln!("audit of 1,000 orphans: {:.1} s", t.elapsed().as_secs_f64());
    assert_eq!(code, Some(1), "{err}");
    let doc: Value = serde_json::from_str(&out).unwrap();
    let key = format!("orphaned-worker@{}", owner.pid);
    let group = doc["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["key"] == key.as_str())
        .cloned()
        .unwrap_or_else(|| panic!("no group {key}: {:#}", doc["groups"]));
    assert_eq!(
        group["title"],
        format!("1,000 orphaned workers of gone server {}", owner.pid)
    );
    assert_eq!(group["pids"], 1000);
    let ids: Vec<String> = group["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 1000);

    // The readable report: one line for the group, its bulk kill, five findings, the count.
    let (_, text, _) = cli(&["audit", "--grace", "0"]);
    let server = owner.pid.to_string();
    assert!(
        text.contains(&format!(
            "== 1,000 orphaned workers of gone server {server}"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "debugtop-cli kill --kind orphaned-worker --server {server}"
        )),
        "{text}"
    );
    assert!(text.contains("… and 995 more like these"), "{text}");

    // Two ids: one plan with exactly those two.
    let (code, out, err) = cli(&["kill", &ids[0], &ids[1], "--yes", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["plan"]["targets"].as_array().unwrap().len(), 2);
    assert_eq!(orphans.alive(), 998);

    // The rest by kind and server: one plan, every pid verified gone.
    let t = Instant::now();
    let (code, out, err) = cli(&[
        "kill",
        "--kind",
        "orphaned-worker",
        "--server",
        &server,
        "--yes",
        "--json",
    ]);
    eprintln!("bulk kill of 998: {:.1} s", t.elapsed().as_secs_f64());
    assert_eq!(code, Some(0), "{err}");
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["plan"]["targets"].as_array().unwrap().len(), 998);
    let report = &answer["report"]["outcomes"];
    assert_eq!(report.as_array().unwrap().len(), 998);
    assert_eq!(orphans.alive(), 0, "every stand-in is gone");
    for (pid, _) in orphans.identities() {
        assert!(matches!(state_of(pid), None | Some('Z')), "{pid}");
    }
    assert_eq!(
        state_of(sentinel.pid),
        Some('S'),
        "the sentinel was signalled"
    );

    // Near miss: nothing of that kind left, nothing planned.
    let (code, _, err) = cli(&[
        "kill",
        "--kind",
        "orphaned-worker",
        "--server",
        &server,
        "--dry-run",
    ]);
    assert_ne!(code, Some(0));
    assert!(err.contains("no current orphaned-worker finding"), "{err}");
}
