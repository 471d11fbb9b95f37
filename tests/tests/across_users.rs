//! The engine, run as root, next to an unprivileged user (`nobody`) who swaps its own log folder
//! for a link to a root-only folder once root's debugtop has judged its session, so that the
//! export's log excerpts (read when the user clicks export) would carry root's lines. Needs
//! root; nothing is killed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use debugtop_core::actions::export;
use debugtop_core::sampler::{Config, Engine};
use debugtop_core::state::rules::stuck::StuckThresholds;
use debugtop_e2e::nobody::{require_root, Nobody};
use debugtop_e2e::tick_until;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_never_excerpts_root_only_lines_through_a_swapped_log_folder() {
    require_root("an_export_never_excerpts_root_only_lines_through_a_swapped_log_folder");
    let root_only = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root_only.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let secret = "rootonly shadow line";
    let secret_log = (1..=6)
        .map(|n| format!("{secret} {n}\n"))
        .collect::<String>();
    std::fs::write(root_only.path().join("server.log"), &secret_log).unwrap();

    let evil = Nobody::new();
    let fake = evil.look_alike("evil-sess-2", 1);
    let mut c = Config::default();
    c.state.verdicts.grace = Duration::ZERO;
    c.state.verdicts.stuck = StuckThresholds::default().after(Duration::ZERO);
    let mut engine = Engine::new(c).expect("engine");
    let snap = tick_until(
        &mut engine,
        30,
        Duration::from_millis(300),
        "the look-alike's session judged",
        |u| {
            u.snapshot
                .findings
                .iter()
                .any(|f| f.session_id.as_deref() == Some("evil-sess-2"))
                .then(|| u.snapshot.clone())
        },
    )
    .await;
    // Near miss: the user's own log is excerpted.
    let mut own = snap.clone();
    export::enrich(&mut own);
    assert!(
        own.log_excerpts
            .iter()
            .any(|x| x.lines.iter().any(|l| l.contains("evil-sess-2"))),
        "{:#?}",
        own.log_excerpts
    );
    // The swap: the log folder becomes a link to root's folder, which holds a server.log.
    std::fs::rename(evil.path("logs"), evil.path("logs.old")).unwrap();
    evil.symlink("logs", root_only.path());
    let mut swapped = snap;
    export::enrich(&mut swapped);
    let json = serde_json::to_string(&swapped).unwrap();
    assert!(!json.contains("rootonly"), "root's lines exported: {json}");
    assert!(!debugtop_core::report::markdown::render(&swapped).contains("rootonly"));
    drop(fake);
}

/// The near miss: the real worker's own log, in the real server's log folder, is excerpted in
/// an export of its finding (the seed bug's stand-in: the real `proxy-bootstrap.js` under a
/// live server that never created its session).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_servers_own_logs_are_still_excerpted() {
    use debugtop_core::model::FindingKind;
    let server = debugtop_e2e::mcp::Server::start(60_000);
    let (harness, worker, _session) =
        debugtop_e2e::mcp::seed_bug_stand_in(server.pid(), server.dir.path());
    // The worker and its detached adapter are the harness's descendants, not the server's:
    // ended by identity before the harness is (declared after it, dropped before it).
    let _chain = debugtop_e2e::TreeGuard::new(harness.pid);
    let mut engine = debugtop_e2e::engine(700);
    let snap = tick_until(
        &mut engine,
        60,
        Duration::from_millis(500),
        "the stand-in's leaked-worker",
        |u| {
            debugtop_e2e::finding_of(u, FindingKind::LeakedWorker, worker)
                .map(|f| (f.id, u.snapshot.clone()))
        },
    )
    .await;
    let (id, mut snap) = snap;
    export::enrich(&mut snap);
    let x = snap
        .log_excerpts
        .iter()
        .find(|x| x.finding_id.as_ref() == Some(&id))
        .unwrap_or_else(|| panic!("no excerpt for {id}: {:#?}", snap.log_excerpts));
    assert!(x.file.ends_with(".log") && !x.lines.is_empty(), "{x:#?}");
}
