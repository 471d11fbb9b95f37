//! Stuck sessions on the real `@debugmcp/mcp-debugger@0.24.2`: an adapter that accepts the
//! worker's connection and never answers `initialize` (given to the server as the python
//! interpreter, as a user points it at another interpreter), one that never listens, a running
//! python debuggee stopped by a signal; and real python, javascript and mock sessions left
//! paused, which must raise nothing at any tick. `DEBUGTOP_RECORD=1` copies the stalled
//! session's worker log and DAP trace into the parser tests' data.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use debugtop_core::model::{
    DebugSession, FactKind, Finding, FindingKind, ProcState, Role, SessionState, Severity, Stage,
    StartRequest, Update,
};
use debugtop_core::sampler::{Config, Engine};
use debugtop_e2e::mcp::{Client, Server};
use debugtop_e2e::procs::{signal_if_same, start_ticks, state_of};
use debugtop_e2e::{fixture, wait_for};
use nix::sys::signal::Signal;
use serde_json::json;

fn engine(stuck_after: f64) -> Engine {
    Engine::new(config(stuck_after)).expect("engine")
}

fn config(stuck_after: f64) -> Config {
    let mut c = Config::default();
    c.sources.health_timeout = Duration::from_millis(700);
    c.state.verdicts.stuck = c
        .state
        .verdicts
        .stuck
        .after(Duration::from_secs_f64(stuck_after));
    c
}

/// The server's start timeout as the stalled-adapter test tells the engine: 10 s before the
/// server's own 30 s, so that ticks certainly fall between the finding's escalation and the
/// server giving up (at the real 30 s a tick may or may not land in the gap).
const TOLD_SERVER_TIMEOUT: Duration = Duration::from_secs(20);

fn session<'a>(u: &'a Update, id: &str) -> Option<&'a DebugSession> {
    u.snapshot
        .debug_sessions
        .iter()
        .find(|d| d.id == id)
        .map(|d| &**d)
}

fn stuck<'a>(u: &'a Update, id: &str) -> Option<&'a Finding> {
    u.snapshot
        .findings
        .iter()
        .find(|f| f.kind == FindingKind::StuckSession && f.session_id.as_deref() == Some(id))
        .map(|f| &**f)
}

/// A python session whose "interpreter" is the stalling adapter of `tests/fixtures/stall`.
async fn stalled_session(client: &Client, adapter: &str) -> String {
    let r = client
        .call(
            "create_debug_session",
            json!({"language": "python", "name": "stalled", "executablePath": fixture(&format!("stall/{adapter}"))}),
        )
        .await;
    r["sessionId"].as_str().expect("sessionId").to_owned()
}

/// `start_debugging` in the background, on the client that created the session: with a
/// stalled adapter it returns only when the server gives up.
fn start_in_background(
    client: &Arc<Client>,
    id: String,
    script: String,
) -> tokio::task::JoinHandle<String> {
    let c = Arc::clone(client);
    tokio::spawn(async move { c.start(&id, &script).await.to_string() })
}

fn stage_names(d: &DebugSession) -> Vec<String> {
    d.progress
        .stages
        .iter()
        .map(|m| m.stage.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_never_answers_initialize_is_a_stuck_session_before_the_servers_timeout() {
    let server = Server::start(60_000);
    let client = Arc::new(Client::connect(&server.url()).await);
    let id = stalled_session(&client, "accept-never-answer").await;
    let start = start_in_background(&client, id.clone(), fixture("py-app/loop.py"));
    let mut c = config(10.0);
    c.state.verdicts.stuck.server_timeout = TOLD_SERVER_TIMEOUT;
    let mut e = Engine::new(c).expect("engine");
    let t0 = Instant::now();
    let mut quiet_ticks = 0;
    let (found, d) = loop {
        let u = e.tick().await.unwrap();
        let d = session(&u, &id).cloned();
        let spawned = d.as_ref().and_then(|d| {
            d.progress
                .last_of(|s| matches!(s, Stage::AdapterSpawned { .. }))
                .and_then(|m| m.at)
        });
        match (stuck(&u, &id), spawned) {
            (Some(f), Some(_)) => {
                // The start is timed from `initializing`, as the server times its own 30 s
                // (the adapter is spawned some time after: 0.7 s once under load, and this
                // bound, measured from the spawn, then failed at 9.3 s).
                let since = d.as_ref().and_then(|d| d.progress.state_since);
                let age =
                    (u.snapshot.taken_at - since.expect("initializing since")).num_milliseconds();
                assert!(
                    age >= 9_500,
                    "raised {age} ms after the start began: {f:#?}"
                );
                assert!(
                    age < 30_000,
                    "not before the server's own 30 s timeout: {age} ms"
                );
                break (f.clone(), d.unwrap());
            }
            (None, _) => quiet_ticks += 1,
            (Some(f), None) => panic!("stuck without a logged start: {f:#?}"),
        }
        assert!(
            !start.is_finished(),
            "the start returned before the finding"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(40),
            "no stuck-session in 40 s"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    eprintln!(
        "stuck-session after {quiet_ticks} quiet ticks: {:#?}",
        found.evidence
    );
    let ev = found.evidence.join("\n");
    assert!(ev.contains("initialize request pending for"), "{ev}");
    assert!(
        ev.contains(&format!("adapter {} alive", d.adapter_pid.unwrap())),
        "{ev}"
    );
    assert!(
        ev.contains("connected at") && ev.contains(&format!("proxy-{id}.log:")),
        "{ev}"
    );
    assert!(ev.contains("DAP request initialize (seq 1)"), "{ev}");
    assert_eq!(found.severity, Severity::Warning);
    // The strip: spawned → connect → connected → initialize pending.
    let names = stage_names(&d);
    assert_eq!(
        names[0],
        format!("adapter {} spawned", d.adapter_pid.unwrap())
    );
    assert!(
        names[1].starts_with("connect attempt 1/60 to 127.0.0.1:"),
        "{names:?}"
    );
    assert_eq!(names[2..], ["connected", "initialize sent"]);
    let pending = &d.progress.trace.as_ref().expect("a trace").pending;
    assert_eq!(
        (pending[0].command.as_str(), pending[0].seq),
        ("initialize", 1)
    );
    // The adapter chain is what a kill would end.
    let plan = found.plan.as_ref().expect("a plan for the adapter chain");
    assert!(plan.targets.iter().any(|t| Some(t.pid) == d.adapter_pid));
    record(&d);

    // Past the server's timeout as told (timed from `initializing`, as the server times its
    // own), and while the server still says initializing, the finding is critical; before it,
    // a warning.
    let mut critical_ticks = 0;
    let told = i64::try_from(TOLD_SERVER_TIMEOUT.as_millis()).unwrap();
    let answer = loop {
        let u = e.tick().await.unwrap();
        let now = session(&u, &id).filter(|d| d.state == Some(SessionState::Initializing));
        if let (Some(f), Some(d)) = (stuck(&u, &id), now) {
            let since = d.progress.state_since.unwrap();
            let age = (u.snapshot.taken_at - since).num_milliseconds();
            eprintln!("{age} ms: {:?}", f.severity);
            if age >= told {
                assert_eq!(f.severity, Severity::Critical, "{age} ms");
                critical_ticks += 1;
            } else {
                assert_eq!(f.severity, Severity::Warning, "{age} ms");
            }
        }
        if start.is_finished() {
            break start.await.unwrap();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(70),
            "the server never gave up"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    assert!(answer.contains("did not complete within 30s"), "{answer}");
    assert!(
        critical_ticks > 0,
        "no tick found the start critical between {told} ms and the server giving up"
    );
    // Once the server failed the start and stopped the worker, nothing is stuck.
    debugtop_e2e::tick_until(
        &mut e,
        20,
        Duration::from_millis(500),
        "the finding cleared",
        |u| stuck(u, &id).is_none().then_some(()),
    )
    .await;
    // The aftermath: the server lists the failed session in state `error` with no worker. It is
    // history (the server said why), not a session without a worker — at every tick until past
    // the grace after the worker is gone.
    let t1 = Instant::now();
    let mut said = None;
    while t1.elapsed() < Duration::from_secs(12) {
        let u = e.tick().await.unwrap();
        let ours: Vec<String> = u
            .snapshot
            .findings
            .iter()
            .filter(|f| f.session_id.as_deref() == Some(id.as_str()))
            .map(|f| format!("{}: {:?}", f.id, f.evidence))
            .collect();
        assert!(ours.is_empty(), "a failed start raised: {ours:?}");
        if let Some(d) = session(&u, &id) {
            said = d
                .facts
                .iter()
                .find(|x| matches!(x.what, FactKind::StartFailed { .. }))
                .map(|x| x.text.clone())
                .or(said);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let said = said.expect("the timeline keeps the server's word on the failed start");
    assert!(said.starts_with("the server could not start it"), "{said}");
    assert!(!said.contains("undefined"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_adapter_that_never_listens_is_stuck_on_connect_attempts() {
    let server = Server::start(60_000);
    let client = Arc::new(Client::connect(&server.url()).await);
    let id = stalled_session(&client, "never-listen").await;
    let start = start_in_background(&client, id.clone(), fixture("py-app/loop.py"));
    let mut e = engine(5.0);
    let f = debugtop_e2e::tick_until(
        &mut e,
        30,
        Duration::from_millis(400),
        "stuck on connect",
        |u| stuck(u, &id).cloned(),
    )
    .await;
    let ev = f.evidence.join("\n");
    eprintln!("{ev}");
    let attempt: u32 = ev
        .split("connect attempt ")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no connect attempt in {ev}"));
    assert!(attempt > 10, "attempts climb: {ev}");
    assert!(
        ev.contains("nothing accepts the connection") || ev.contains("gave up connecting"),
        "{ev}"
    );
    assert!(ev.contains("alive"), "{ev}");
    let _ = start.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_python_debuggee_stopped_by_a_signal_is_stuck_and_sigcont_clears_it() {
    let server = Server::start(60_000);
    let client = Client::connect(&server.url()).await;
    let id = client.create_session("python", "sigstopped").await;
    let r = client
        .call(
            "start_debugging",
            json!({"sessionId": id, "scriptPath": fixture("py-app/loop.py"), "dapLaunchArgs": {"stopOnEntry": false}}),
        )
        .await;
    assert_eq!(r["success"], true, "{r}");
    let mut e = engine(3.0);
    let debuggee = debugtop_e2e::tick_until(
        &mut e,
        30,
        Duration::from_millis(400),
        "a running debuggee",
        |u| {
            let d = session(u, &id)?;
            (d.state == Some(debugtop_core::model::SessionState::Running)).then_some(())?;
            u.snapshot
                .processes
                .iter()
                .find(|p| p.role == Role::Debuggee && p.session_id.as_deref() == Some(&id))
                .map(|p| (p.pid, p.start_ticks))
        },
    )
    .await;
    // Running and healthy first: nothing for a while past the threshold.
    let quiet = Instant::now();
    while quiet.elapsed() < Duration::from_secs(5) {
        let u = e.tick().await.unwrap();
        assert!(
            stuck(&u, &id).is_none(),
            "a healthy running session: {:#?}",
            stuck(&u, &id)
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    // The debuggee is our server's grandchild: signalled by pid and start time only.
    assert_eq!(start_ticks(debuggee.0), Some(debuggee.1));
    assert!(signal_if_same(debuggee.0, debuggee.1, Signal::SIGSTOP));
    wait_for(Duration::from_secs(5), || {
        (state_of(debuggee.0) == Some('T')).then_some(())
    });
    let f = debugtop_e2e::tick_until(
        &mut e,
        20,
        Duration::from_millis(400),
        "stuck on a stopped debuggee",
        |u| stuck(u, &id).cloned(),
    )
    .await;
    let ev = f.evidence.join("\n");
    assert!(
        ev.contains(&format!("debuggee {} is stopped by a signal", debuggee.0)),
        "{ev}"
    );
    assert!(
        f.suggested_action
            .contains(&format!("kill -CONT {}", debuggee.0)),
        "{}",
        f.suggested_action
    );
    assert!(f.plan.is_none(), "SIGCONT, not a kill, is the tool here");
    let u = e.tick().await.unwrap();
    let state = session(&u, &id)
        .and_then(|d| d.progress.debuggee.clone())
        .unwrap();
    assert_eq!((state.pid, state.state), (debuggee.0, ProcState::Stopped));
    assert!(signal_if_same(debuggee.0, debuggee.1, Signal::SIGCONT));
    debugtop_e2e::tick_until(
        &mut e,
        10,
        Duration::from_millis(400),
        "cleared by SIGCONT",
        |u| stuck(u, &id).is_none().then_some(()),
    )
    .await;
    client.close().await;
}

/// Real python, javascript and mock sessions started with stop-on-entry and left paused for two
/// minutes, watched from before their start: no finding about them at any tick, and every
/// start's stages are read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paused_python_javascript_and_mock_sessions_raise_nothing_at_any_tick() {
    let server = Server::start(600_000);
    let client = Client::connect(&server.url()).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let monitor = {
        let stop = std::sync::Arc::clone(&stop);
        let server_pid = server.pid();
        tokio::spawn(async move {
            let mut e = engine(10.0);
            let (mut ticks, mut raised, mut last) = (0u32, Vec::new(), None);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let u = e.tick().await.unwrap();
                ticks += 1;
                // Ours: joined to our server, or about a process our server started (by its
                // marker or its parent chain) that could not be joined — a reparented adapter
                // has no server pid. Other tests here stall sessions on purpose on servers
                // of their own.
                let started = debugtop_e2e::mcp::descendants_of(server_pid);
                let ours = |f: &&std::sync::Arc<debugtop_core::model::Finding>| {
                    f.server_pid == Some(server_pid)
                        || f.pids.iter().any(|p| started.iter().any(|(d, _)| d == p))
                };
                for f in u.snapshot.findings.iter().filter(ours) {
                    raised.push(format!("tick {ticks}: {}: {:?}", f.id, f.evidence));
                }
                last = Some(u);
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            (ticks, raised, last)
        })
    };
    let mut ids = Vec::new();
    for (lang, script) in [
        ("python", "py-app/loop.py"),
        ("javascript", "js-app/loop.js"),
        ("mock", "mock/script.js"),
    ] {
        let id = client.create_session(lang, &format!("paused-{lang}")).await;
        let t = Instant::now();
        let r = client.start(&id, &fixture(script)).await;
        eprintln!(
            "{lang}: start took {:.1} s: {}",
            t.elapsed().as_secs_f64(),
            r["state"]
        );
        assert_eq!(r["success"], true, "{lang}: {r}");
        ids.push((lang, id));
    }
    tokio::time::sleep(Duration::from_secs(120)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ticks, raised, last) = monitor.await.unwrap();
    assert!(
        raised.is_empty(),
        "paused sessions raised:\n{}",
        raised.join("\n")
    );
    let u = last.unwrap();
    for (lang, id) in &ids {
        let d = session(&u, id).unwrap_or_else(|| panic!("{lang} session not seen"));
        let names = stage_names(d);
        eprintln!(
            "{lang}: {names:?}; last sign {:?}",
            d.progress.last_sign.as_ref().map(|s| &s.text)
        );
        assert!(
            names.iter().any(|n| n == "initialize answered"),
            "{lang}: {names:?}"
        );
        assert!(
            d.progress.stages.iter().any(|m| m.stage
                == Stage::Answered {
                    request: StartRequest::ConfigurationDone
                }),
            "{lang}: {names:?}"
        );
        assert!(d.progress.last_sign.is_some(), "{lang}: no sign of life");
        if let Some(t) = &d.progress.trace {
            assert!(
                t.pending.is_empty(),
                "{lang}: waiting requests {:?}",
                t.pending
            );
        }
    }
    eprintln!("{ticks} ticks over two minutes, nothing raised");
    client.close().await;
}

/// With `DEBUGTOP_RECORD=1`: the stalled start's worker log and DAP trace become the parser
/// tests' data.
fn record(d: &DebugSession) {
    if std::env::var_os("DEBUGTOP_RECORD").is_none() {
        return;
    }
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/debugtop-core/src/sources/testdata");
    if let Some(t) = &d.progress.trace {
        std::fs::copy(&t.file, data.join("dap-trace-stalled.ndjson")).unwrap();
    }
    if let Some(m) = d.progress.stages.first() {
        std::fs::copy(&m.file, data.join("proxy-stalled.log")).unwrap();
    }
}
