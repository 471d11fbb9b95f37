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

/// A root server's log folder with a part another user may write to (its session's folder made
/// world-writable, sticky, as `/tmp` is): `nobody` plants a newer run of the session there, whose
/// `proxy-<session>.log` says root's live worker is done. Root's debugtop reads a worker's log
/// only when the worker's user wrote it, so the planted line changes nothing — watched across
/// more than one relisting of the session's runs. Then the near miss: the very same file,
/// handed to root (as root's own worker would have written it), is read, and root's worker is a
/// leaked worker by its own log's word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_proxy_log_in_a_root_servers_log_folder_says_nothing_of_roots_worker() {
    use debugtop_core::model::{FactSource, FindingKind, Role};
    use debugtop_core::sources::server_logs::PROXY_RELIST;
    require_root(
        "another_users_proxy_log_in_a_root_servers_log_folder_says_nothing_of_roots_worker",
    );
    let server = debugtop_e2e::mcp::Server::start(60_000);
    let client = debugtop_e2e::mcp::Client::connect(&server.url()).await;
    let sid = client.create_session("mock", "planted-on").await;
    client
        .start(&sid, &debugtop_e2e::fixture("mock/script.js"))
        .await;
    // Root's worker wrote its own log under its run folder.
    let session_dir = server.dir.path().join("sessions").join(&sid);
    let real_run = debugtop_e2e::wait_for(Duration::from_secs(30), || {
        std::fs::read_dir(&session_dir)
            .ok()?
            .flatten()
            .map(|e| e.path())
            .find(|run| run.join(format!("proxy-{sid}.log")).exists())
    })
    .expect("root's worker never wrote its proxy log");
    let newest_ms = std::fs::read_dir(&session_dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("run-")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    // Root's log folder open to all (as a folder under /var/log or /tmp is), and a writable
    // part of it.
    std::fs::set_permissions(server.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&session_dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // `nobody` makes the newest run of root's session and writes its worker log, as an
    // unprivileged process does (setpriv: its uid, its gid, no groups).
    let planted_run = session_dir.join(format!("run-{}", newest_ms + 1));
    let line = |m: &str| {
        let at = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        serde_json::json!({"level": "info", "message": m,
                           "namespace": format!("dap-proxy:{sid}"), "timestamp": at})
        .to_string()
            + "\n"
    };
    let planted_text = line("[Worker] Shutdown sequence completed.");
    let planted_name = format!("proxy-{sid}.log");
    let nobody = debugtop_e2e::nobody::NOBODY.to_string();
    let status = std::process::Command::new("setpriv")
        .args([
            "--reuid",
            &nobody,
            "--regid",
            &nobody,
            "--clear-groups",
            "--",
        ])
        .args([
            "sh",
            "-c",
            "mkdir \"$1\" && printf '%s' \"$2\" > \"$1/$3\"",
            "sh",
        ])
        .arg(&planted_run)
        .arg(&planted_text)
        .arg(&planted_name)
        .status()
        .unwrap();
    assert!(status.success(), "nobody could not plant its log: {status}");
    let planted = planted_run.join(&planted_name);
    let meta = std::fs::metadata(&planted).unwrap();
    assert_eq!(
        std::os::unix::fs::MetadataExt::uid(&meta),
        debugtop_e2e::nobody::NOBODY,
        "the planted log is nobody's"
    );

    let mut c = Config::default();
    c.sources.health_timeout = Duration::from_millis(700);
    c.state.verdicts.grace = Duration::ZERO;
    let mut engine = Engine::new(c).expect("engine");
    // Root's debugtop follows the session: its worker is seen, and the worker's own log (in
    // root's run folder) is read.
    let real_log = real_run
        .join(format!("proxy-{sid}.log"))
        .to_string_lossy()
        .into_owned();
    let worker = tick_until(
        &mut engine,
        30,
        Duration::from_millis(300),
        "root's worker and its own log",
        |u| {
            let w = u
                .snapshot
                .processes
                .iter()
                .find(|p| p.role == Role::Worker && p.session_id.as_deref() == Some(&*sid))?;
            let d = u.snapshot.debug_sessions.iter().find(|d| d.id == sid)?;
            let from_its_log =
                |s: &FactSource| matches!(s, FactSource::Log { file, .. } if *file == real_log);
            let read = d.facts.iter().any(|f| from_its_log(&f.source))
                || d.progress
                    .last_sign
                    .as_ref()
                    .is_some_and(|s| s.file == real_log);
            (read && d.worker_pid == Some(w.pid)).then_some(w.pid)
        },
    )
    .await;
    let uid = std::fs::read_to_string(format!("/proc/{worker}/status"))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("Uid:")?
                .split_whitespace()
                .next()?
                .parse::<u32>()
                .ok()
        });
    assert_eq!(uid, Some(0), "the worker is root's");
    // Across more than one relisting of the session's runs: the planted log counts for nothing.
    let watch = PROXY_RELIST * 2 + Duration::from_secs(2);
    let end = std::time::Instant::now() + watch;
    let mut ticks = 0;
    while std::time::Instant::now() < end {
        let u = engine.tick().await.expect("tick");
        ticks += 1;
        if let Some(f) = debugtop_e2e::finding_of(&u, FindingKind::LeakedWorker, worker) {
            panic!(
                "tick {ticks}: nobody's log made root's worker a leaked worker: {:#?}",
                f.evidence
            );
        }
        let d = u
            .snapshot
            .debug_sessions
            .iter()
            .find(|d| d.id == sid)
            .expect("the session");
        assert!(
            d.worker_finished.is_none(),
            "tick {ticks}: nobody's log says root's worker is done: {d:#?}"
        );
        let json = serde_json::to_string(&u.snapshot).unwrap();
        assert!(
            !json.contains(&format!("run-{}", newest_ms + 1)),
            "tick {ticks}: the planted run was read: {json}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // The near miss: the same file, root's (as root's own worker would have written it).
    std::os::unix::fs::chown(&planted, Some(0), Some(0)).unwrap();
    let f = tick_until(
        &mut engine,
        30,
        Duration::from_millis(300),
        "root's own log read: its worker said it is done",
        |u| debugtop_e2e::finding_of(u, FindingKind::LeakedWorker, worker),
    )
    .await;
    let evidence = f.evidence.join("\n");
    assert!(
        evidence.contains("the worker's own log says it is done"),
        "{evidence}"
    );
    client.close().await;
}
