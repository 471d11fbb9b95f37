//! The commands through Tauri's IPC, without a window (`tauri::test`): every command, with
//! its refusal paths. Channels are real IPC channels (their messages go to the mock webview);
//! what was sent is read off the state's counters. Real processes are the test's own.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use debugtop_core::model::{KillPlan, KillTarget, Role, Via};
use debugtop_e2e::{wait_for, HeldZombie, Spawned};
use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow};

use crate::{AppState, Dialogs};

/// What a test's "person" answers in the backend's dialogs: fixed paths to save and open, and
/// a fixed answer to "may this command run?" (no by default), with every command asked about.
#[derive(Default)]
struct FixedDialogs {
    save: Mutex<Option<PathBuf>>,
    open: Mutex<Option<PathBuf>>,
    run: Mutex<bool>,
    asked: Mutex<Vec<String>>,
}

impl FixedDialogs {
    fn asked(&self) -> Vec<String> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

impl Dialogs for FixedDialogs {
    fn save(&self, _what: &str, _ext: &str, _default: String) -> Option<PathBuf> {
        self.save.lock().ok()?.clone()
    }
    fn open(&self) -> Option<PathBuf> {
        self.open.lock().ok()?.clone()
    }
    fn confirm_command(&self, target: &str, command: &str) -> bool {
        if let Ok(mut a) = self.asked.lock() {
            a.push(format!("{target}: {command}"));
        }
        self.run.lock().map(|r| *r).unwrap_or(false)
    }
}

/// A mock app with its own config directory (passed explicitly: tests run in parallel threads
/// and never share process-wide environment) and a fixed file picker.
struct TestApp {
    app: tauri::App<tauri::test::MockRuntime>,
    w: WebviewWindow<tauri::test::MockRuntime>,
    config: tempfile::TempDir,
    picker: Arc<FixedDialogs>,
}

impl TestApp {
    fn new() -> Self {
        Self::with_settings(None)
    }

    fn with_settings(settings: Option<&str>) -> Self {
        let config = tempfile::tempdir().expect("tempdir");
        if let Some(s) = settings {
            std::fs::write(config.path().join("settings.json"), s).expect("settings");
        }
        let app = crate::setup(mock_builder())
            .build(mock_context(noop_assets()))
            .expect("app");
        let picker = Arc::new(FixedDialogs::default());
        crate::install_in(app.handle(), config.path().to_path_buf(), picker.clone())
            .expect("state");
        let w = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
            .build()
            .expect("window");
        Self {
            app,
            w,
            config,
            picker,
        }
    }

    /// The person answers yes to "may this command run?" from now on.
    fn allow_commands(&self) {
        if let Ok(mut r) = self.picker.run.lock() {
            *r = true;
        }
    }

    fn state(&self) -> Arc<AppState> {
        Arc::clone(&self.app.state::<Arc<AppState>>())
    }

    fn call(&self, cmd: &str, args: Value) -> Result<Value, Value> {
        get_ipc_response(
            &self.w,
            InvokeRequest {
                cmd: cmd.into(),
                callback: CallbackFn(0),
                error: CallbackFn(1),
                url: "tauri://localhost".parse().expect("url"),
                body: InvokeBody::Json(args),
                headers: Default::default(),
                invoke_key: INVOKE_KEY.to_string(),
            },
        )
        .map(|b| b.deserialize::<Value>().expect("json"))
    }

    /// Subscribes to the updates and tick errors, on channels `id` and `id + 1`.
    fn subscribe(&self, id: u32) {
        let (update, error) = (
            format!("__CHANNEL__:{id}"),
            format!("__CHANNEL__:{}", id + 1),
        );
        self.call("subscribe", json!({ "onUpdate": update, "onError": error }))
            .expect("subscribe");
    }

    /// Waits for the first live snapshot.
    fn first_snapshot(&self) -> Value {
        wait_for(Duration::from_secs(10), || {
            let s = self.call("current_snapshot", json!({})).ok()?;
            (!s.is_null()).then_some(s)
        })
        .expect("a first snapshot")
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.state().stop_sampler();
    }
}

fn err_text(e: &Value) -> String {
    e.as_str().unwrap_or_default().to_owned()
}

#[test]
fn settings_round_trip_through_ipc_and_disk() {
    let t = TestApp::new();
    let s = t.call("get_settings", json!({})).expect("get");
    assert_eq!(s["interval_ms"], 1000);
    let saved = t.call("set_settings", json!({ "settings": { "interval_ms": 250, "grace_secs": 3.0, "extra_servers": ["http://127.0.0.1:3999", "file:///etc"], "notify_critical": false } })).expect("set");
    assert_eq!(saved["interval_ms"], 250);
    assert_eq!(saved["extra_servers"], json!(["http://127.0.0.1:3999"]));
    let on_disk = std::fs::read_to_string(t.config.path().join("settings.json")).expect("saved");
    assert!(on_disk.contains("250"));
}

#[test]
fn subscribe_streams_updates_and_set_paused_stops_them() {
    let t = TestApp::with_settings(Some(r#"{"interval_ms":100}"#));
    t.subscribe(11);
    let st = t.state();
    let sent = || st.ipc.messages.load(std::sync::atomic::Ordering::Relaxed);
    wait_for(Duration::from_secs(10), || (sent() >= 3).then_some(()))
        .expect("updates arrive over the channel");
    assert!(st.ipc.bytes.load(std::sync::atomic::Ordering::Relaxed) > 0);
    // The first message is the whole snapshot, the rest are changes; a resync sends it whole.
    let full = || st.ipc.full.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(full(), 1, "only the first message is whole");
    t.call("resync", json!({})).expect("resync");
    wait_for(Duration::from_secs(10), || (full() == 2).then_some(()))
        .expect("a resync sends the whole snapshot");
    let at = sent();
    wait_for(Duration::from_secs(10), || (sent() >= at + 2).then_some(()))
        .expect("changes again after the resync");
    assert_eq!(full(), 2);
    t.call("set_paused", json!({ "paused": true }))
        .expect("pause");
    // Once the forwarder has withheld an update, a send that was under way has finished
    // (one loop sends and withholds in turn); then nothing more may go out over several
    // ticks' updates.
    let withheld = || st.ipc.withheld.load(std::sync::atomic::Ordering::Relaxed);
    wait_for(Duration::from_secs(10), || (withheld() >= 1).then_some(()))
        .expect("an update withheld");
    let paused_at = sent();
    wait_for(Duration::from_secs(10), || (withheld() >= 6).then_some(()))
        .expect("five more updates withheld");
    assert_eq!(sent(), paused_at, "no update is sent while paused");
    t.call("set_paused", json!({ "paused": false }))
        .expect("resume");
    wait_for(Duration::from_secs(10), || {
        (sent() > paused_at).then_some(())
    })
    .expect("updates resume");
}

/// Regression: every tick sent the window a cleared tick error and every target's status
/// (the local one's update time moved), three messages a tick where one says it all.
#[test]
fn healthy_ticks_send_the_window_their_update_and_nothing_else() {
    let t = TestApp::with_settings(Some(r#"{"interval_ms":100}"#));
    t.subscribe(21);
    t.call("subscribe_targets", json!({ "onStatus": "__CHANNEL__:23" }))
        .expect("subscribe to statuses");
    let st = t.state();
    let count = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    wait_for(Duration::from_secs(20), || {
        (count(&st.ipc.messages) >= 30).then_some(())
    })
    .expect("thirty ticks' updates");
    // The statuses go when subscribed, and again if the first tick had not yet published the
    // local target then; the error channel stays quiet while ticks succeed.
    assert!(
        count(&st.ipc.statuses) <= 2,
        "{} status messages",
        count(&st.ipc.statuses)
    );
    assert_eq!(count(&st.ipc.errors), 0);
    let since = st.statuses.borrow()[0].since;
    let at = count(&st.ipc.messages);
    wait_for(Duration::from_secs(10), || {
        (count(&st.ipc.messages) >= at + 3).then_some(())
    })
    .expect("three more ticks' updates");
    assert_eq!(
        st.statuses.borrow()[0].since,
        since,
        "the local target's state did not change"
    );
}

/// An error that stands when the window subscribes reaches it at once (the error is sent
/// only when it changes, and a new subscriber counts the current value as seen).
#[test]
fn a_tick_error_standing_when_the_window_subscribes_is_told_at_once() {
    let t = TestApp::with_settings(Some(r#"{"interval_ms":60000}"#));
    t.first_snapshot();
    let st = t.state();
    // No tick after this one may clear the error before the window subscribes: on a loaded CI
    // machine another test's watched process exited, its exit-triggered tick landed after the
    // error was set and cleared it (the test failed in a fresh clone's run). The sampler stops;
    // a forwarding pass already under way ends first.
    let tasks = st.stop_sampler();
    tauri::async_runtime::block_on(async {
        for t in tasks {
            let _ = t.await;
        }
    });
    st.tick_error
        .send_replace(Some("cannot read the process table".into()));
    t.subscribe(31);
    let errors = || st.ipc.errors.load(std::sync::atomic::Ordering::Relaxed);
    wait_for(Duration::from_secs(10), || (errors() == 1).then_some(()))
        .expect("the standing error is sent when the window subscribes");
}

#[test]
fn run_audit_through_ipc_answers_like_the_cli() {
    let t = TestApp::new();
    let r = t.call("run_audit", json!({})).expect("audit");
    for k in [
        "clean",
        "taken_at",
        "host",
        "servers",
        "findings",
        "sources",
        "processes",
    ] {
        assert!(r.get(k).is_some(), "{k} missing from {r}");
    }
    assert_eq!(
        r["clean"],
        r["findings"]
            .as_array()
            .map(|f| f.is_empty())
            .unwrap_or(false)
    );
}

#[test]
fn export_writes_where_the_user_picked_and_a_cancel_writes_nothing() {
    let t = TestApp::new();
    t.first_snapshot();
    assert_eq!(
        t.call("export_snapshot", json!({ "format": "json" }))
            .expect("cancel"),
        Value::Null
    );
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.json");
    *t.picker.save.lock().expect("lock") = Some(path.clone());
    let got = t
        .call("export_snapshot", json!({ "format": "json" }))
        .expect("export");
    assert_eq!(got, json!(path.display().to_string()));
    let written = debugtop_core::actions::export::import_file(&path).expect("a snapshot");
    assert!(written.environment.is_some(), "a live export is enriched");
    let md = dir.path().join("s.md");
    *t.picker.save.lock().expect("lock") = Some(md.clone());
    t.call("export_snapshot", json!({ "format": "md" }))
        .expect("export md");
    assert!(std::fs::read_to_string(&md)
        .expect("md")
        .starts_with("# debugtop incident report"));
    let e = t
        .call("export_snapshot", json!({ "format": "pdf" }))
        .expect_err("bad format");
    assert!(err_text(&e).contains("pdf"));
}

#[test]
fn open_shows_a_snapshot_offline_refuses_kills_and_bad_files_say_why() {
    let t = TestApp::new();
    let dir = tempfile::tempdir().expect("dir");
    let good = dir.path().join("s.json");
    let mut fixed = debugtop_core::testing::sample_snapshot();
    fixed.environment = None;
    let text = debugtop_core::actions::export::to_json(&fixed).expect("json");
    std::fs::write(&good, &text).expect("write");
    *t.picker.open.lock().expect("lock") = Some(good);
    let shown = t.call("open_snapshot", json!({})).expect("open");
    assert_eq!(shown["host"], "devbox");
    assert_eq!(
        t.call("current_snapshot", json!({})).expect("current")["host"],
        "devbox"
    );
    let e = t
        .call(
            "plan_kill",
            json!({ "request": { "type": "pid", "pid": 1019, "tree": true } }),
        )
        .expect_err("offline");
    assert!(err_text(&e).contains("offline snapshot"));
    // Exporting what was opened writes it as it is: nothing of this machine is added.
    let out = dir.path().join("again.json");
    *t.picker.save.lock().expect("lock") = Some(out.clone());
    t.call("export_snapshot", json!({ "format": "json" }))
        .expect("re-export");
    let again = debugtop_core::actions::export::import_file(&out).expect("again");
    assert_eq!(again, fixed, "an imported snapshot is never enriched");
    t.call("close_snapshot", json!({})).expect("close");
    for (name, body, says) in [
        (
            "v0.json",
            text.replacen("debugtop.snapshot/1", "debugtop.snapshot/0", 1),
            "debugtop.snapshot/0; this build reads",
        ),
        (
            "v9.json",
            text.replacen("debugtop.snapshot/1", "debugtop.snapshot/9", 1),
            "newer debugtop",
        ),
        ("cut.json", text[..text.len() / 2].to_owned(), "truncated"),
    ] {
        let p = dir.path().join(name);
        std::fs::write(&p, body).expect("write");
        *t.picker.open.lock().expect("lock") = Some(p);
        let e = err_text(&t.call("open_snapshot", json!({})).expect_err(name));
        assert!(e.contains(says), "{name}: {e}");
    }
}

#[test]
fn plans_live_in_the_backend_and_run_once() {
    let t = TestApp::new();
    t.first_snapshot();
    let held = t
        .call(
            "plan_kill",
            json!({ "request": { "type": "pid", "pid": 1, "tree": true } }),
        )
        .expect("plan");
    assert_eq!(held["plan"]["targets"], json!([]));
    assert!(held["plan"]["refused"][0]["why"]
        .as_str()
        .unwrap_or("")
        .contains("never signalled"));
    let id = held["id"].as_u64().expect("id");
    let run = |id: u64| {
        t.call(
            "execute_kill",
            json!({ "planId": id, "onProgress": "__CHANNEL__:21" }),
        )
    };
    let report = run(id).expect("execute");
    assert_eq!(report["outcomes"][0]["outcome"]["outcome"], "refused");
    let e = err_text(&run(id).expect_err("a plan runs once"));
    assert!(
        e.contains("plans are made by plan_kill and run at most once"),
        "{e}"
    );
    let e = err_text(&run(999_999).expect_err("unknown"));
    assert!(e.contains("no kill plan 999999"), "{e}");
    let e = t
        .call(
            "plan_kill",
            json!({ "request": { "type": "finding", "id": "leaked-worker:1.1" } }),
        )
        .expect_err("no such finding");
    assert!(err_text(&e).contains("no current finding"), "{e}");
    let e = t
        .call("execute_kill", json!({ "plan": { "targets": [], "refused": [], "grace_ms": 0 }, "onProgress": "__CHANNEL__:22" }))
        .expect_err("a plan from the webview is not accepted");
    assert!(err_text(&e).contains("planId"), "{e}");
}

/// A plan forged into the registry (as if a compromised webview, or a bug, had built it) is
/// re-checked at execution against the live table: nothing is signalled.
#[test]
fn a_forged_plan_signals_nothing() {
    let t = TestApp::new();
    t.first_snapshot();
    let sentinel = Spawned::spawn(std::process::Command::new("sleep").arg("600"));
    let ticks = debugtop_e2e::start_ticks(sentinel.pid).expect("ticks");
    let target = |pid: u32, start_ticks: u64| KillTarget {
        pid,
        start_ticks,
        role: Role::Worker,
        pgid: pid,
        sid: pid,
        argv: vec!["forged".into()],
        via: Via::Target,
    };
    // Only the test's own sentinel is named — outside every tree, and then under 50 wrong
    // identities — so a regressed refusal would kill the sentinel, which the test sees, and
    // nothing else. (pid 1 and debugtop itself are refused by the same check, `plan::refusal`,
    // shown on plans in the core's tests, never by trusting a refusal with a real signal.)
    let mut targets = vec![target(sentinel.pid, ticks)];
    targets.extend((0..50).map(|g| target(sentinel.pid, ticks.saturating_sub(25) + g)));
    let forged = KillPlan {
        targets,
        refused: Vec::new(),
        grace_ms: 50,
        method: debugtop_core::model::KillMethod::Signals,
        container: None,
    };
    let id = t
        .state()
        .plans
        .lock()
        .expect("lock")
        .hold(forged, debugtop_core::actions::kill::PlannedOn::Here)
        .id;
    let report = t
        .call(
            "execute_kill",
            json!({ "planId": id, "onProgress": "__CHANNEL__:31" }),
        )
        .expect("execute");
    let outcomes = report["outcomes"].as_array().cloned().unwrap_or_default();
    assert!(
        outcomes
            .iter()
            .all(|o| o["outcome"]["outcome"] == "refused"),
        "{report:#}"
    );
    assert!(!outcomes.is_empty(), "{report:#}");
    let whys = report.to_string();
    assert!(whys.contains("not part of any debug server's tree"));
    assert!(
        debugtop_e2e::procs::untouched(sentinel.pid, ticks),
        "the sentinel was signalled"
    );
}

/// A notifier that records instead of showing.
#[derive(Default)]
struct Recorder(Mutex<Vec<String>>);

impl crate::Notifier for Recorder {
    fn notify(&self, title: &str, body: &str) {
        if let Ok(mut v) = self.0.lock() {
            v.push(format!("{title}: {body}"));
        }
    }
}

#[test]
fn a_new_critical_finding_raises_a_desktop_notification() {
    let dir = tempfile::tempdir().expect("dir");
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        r#"{"interval_ms":100,"grace_secs":0.0,"notify_critical":true}"#,
    )
    .expect("settings");
    let rec = Arc::new(Recorder::default());
    let state = Arc::new(AppState::new(
        settings,
        rec.clone(),
        Arc::new(FixedDialogs::default()),
    ));
    let s = Arc::clone(&state);
    tauri::async_runtime::block_on(async move { s.start_sampler() }).expect("sampler");
    // A real process shaped like a worker whose owner is gone: an orphaned worker (critical).
    // The owner pid is held as our zombie so that nothing else can take it meanwhile.
    let gone = HeldZombie::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/worker/dist/proxy/proxy-bootstrap.js");
    let worker = Spawned::spawn(
        std::process::Command::new("node")
            .arg(script)
            .arg(format!("--mcp-owner-pid={}", gone.pid))
            .arg("--mcp-session-id=notify-test-session"),
    );
    let (wpid, gpid) = (worker.pid, gone.pid);
    let ours = move |n: &String| {
        n.starts_with("debugtop: orphaned-worker:")
            && n.contains(&format!("worker {wpid} of session notify-t"))
            && n.contains(&format!("--mcp-owner-pid={gpid}"))
    };
    let seen = wait_for(Duration::from_secs(10), || {
        let v = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.iter().any(ours).then_some(v)
    });
    // The sampler goes on (20 more ticks at 100 ms) while the finding stays: a finding
    // notified again at a later tick would show here.
    std::thread::sleep(Duration::from_secs(2));
    let seen = seen.map(|_| rec.0.lock().map(|v| v.clone()).unwrap_or_default());
    state.stop_sampler();
    drop(worker);
    let seen = seen.unwrap_or_else(|| {
        panic!(
            "no notification for our worker; got {:?}",
            rec.0.lock().map(|v| v.clone())
        )
    });
    assert_eq!(
        seen.iter().filter(|n| ours(n)).count(),
        1,
        "one notification per new critical finding: {seen:?}"
    );
}

/// Processes (pid, argv) below this test process whose argv contains `needle`.
fn ours_running(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    debugtop_e2e::procs::descendants(me)
        .into_iter()
        .filter_map(|(pid, _)| {
            let argv = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let argv = String::from_utf8_lossy(&argv).replace('\0', " ");
            argv.contains(needle).then_some((pid, argv))
        })
        .collect()
}

/// A remote target's new critical finding is notified like a local one, naming the target;
/// a changed interval restarts its stream with the new interval.
#[test]
fn a_remote_targets_new_critical_is_notified_with_its_name_and_follows_the_interval() {
    let cli = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/debug/debugtop-cli");
    let target = format!("cmd:{cli}");
    let dir = tempfile::tempdir().expect("dir");
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        json!({"interval_ms": 200, "grace_secs": 0.0, "notify_critical": true, "targets": [target], "confirmed": [target]})
            .to_string(),
    )
    .expect("settings");
    let rec = Arc::new(Recorder::default());
    let state = Arc::new(AppState::new(
        settings,
        rec.clone(),
        Arc::new(FixedDialogs::default()),
    ));
    state.sync_targets();
    wait_for(Duration::from_secs(30), || {
        let u = state.remote_update(&target.parse().ok()?)?;
        (u.seq >= 2).then_some(())
    })
    .expect("the cmd target streams");
    assert_eq!(ours_running("--interval 200").len(), 1);

    let gone = HeldZombie::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/worker/dist/proxy/proxy-bootstrap.js");
    let worker = Spawned::spawn(
        std::process::Command::new("node")
            .arg(script)
            .arg(format!("--mcp-owner-pid={}", gone.pid))
            .arg("--mcp-session-id=remote-notify-session"),
    );
    let title = format!("debugtop: orphaned-worker on {target}:");
    let wpid = worker.pid;
    let ours = move |n: &String| n.starts_with(&title) && n.contains(&format!("worker {wpid} "));
    let seen = wait_for(Duration::from_secs(20), || {
        let v = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.iter().any(&ours).then_some(v)
    })
    .unwrap_or_else(|| panic!("no notification naming the target: {:?}", rec.0.lock()));
    assert_eq!(seen.iter().filter(|n| ours(n)).count(), 1, "{seen:?}");

    let mut s = state.settings();
    s.interval_ms = 700;
    if let Ok(mut g) = state.settings.lock() {
        *g = s;
    }
    state.sync_targets();
    wait_for(Duration::from_secs(20), || {
        (ours_running("--interval 200").is_empty() && ours_running("--interval 700").len() == 1)
            .then_some(())
    })
    .unwrap_or_else(|| {
        panic!(
            "not restarted with the new interval: {:?}",
            ours_running("--interval")
        )
    });
    state.stop_sampler();
    drop(worker);
    // Its own commands only (200 and 700 ms): tests run side by side in this process, and
    // the ssh target's test streams with `--interval 1000` meanwhile.
    let mine = || {
        let mut r = ours_running("--interval 200");
        r.extend(ours_running("--interval 700"));
        r
    };
    wait_for(Duration::from_secs(10), || mine().is_empty().then_some(()))
        .unwrap_or_else(|| panic!("the remote command ends with the app: {:?}", mine()));
}

/// The orphans of `owner` appear over a few ticks while they are spawned: still one
/// notification, naming the group (with as many as were there when it was raised).
fn assert_one_group_notification(rec: &Recorder, owner: u32) {
    let words = format!("orphaned workers of gone server {owner}:");
    let ours = |n: &&String| n.contains(&format!("--mcp-owner-pid={owner}"));
    wait_for(Duration::from_secs(10), || {
        let v = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.iter()
            .any(|n| n.starts_with("debugtop: ") && n.contains(&words))
            .then_some(())
    })
    .unwrap_or_else(|| panic!("no group notification: {:?}", rec.0.lock()));
    std::thread::sleep(Duration::from_secs(2));
    let seen = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
    assert_eq!(
        seen.iter().filter(ours).count(),
        1,
        "one notification, not a thousand: {seen:?}"
    );
}

/// Incident scale through the window's backend: a thousand real orphans of one dead server
/// raise one notification and one group, and the group's bulk plan (one held plan, executed
/// once) ends every one of them, verified, and nothing else.
#[test]
fn a_thousand_orphans_are_one_notification_one_group_and_one_bulk_kill_in_the_app() {
    let dir = tempfile::tempdir().expect("dir");
    let settings = dir.path().join("settings.json");
    std::fs::write(
        &settings,
        r#"{"interval_ms":300,"grace_secs":0.0,"notify_critical":true}"#,
    )
    .expect("settings");
    let rec = Arc::new(Recorder::default());
    let state = Arc::new(AppState::new(
        settings,
        rec.clone(),
        Arc::new(FixedDialogs::default()),
    ));
    let s = Arc::clone(&state);
    tauri::async_runtime::block_on(async move { s.start_sampler() }).expect("sampler");
    wait_for(Duration::from_secs(20), || state.published().map(|_| ())).expect("a first tick");
    let owner = HeldZombie::new();
    let sentinel = Spawned::spawn(std::process::Command::new("sleep").arg("600"));
    let orphans = debugtop_e2e::procs::StandIns::orphaned_workers(1000, owner.pid);
    let key = format!("orphaned-worker@{}", owner.pid);
    let group = wait_for(Duration::from_secs(60), || {
        let p = state.published()?;
        p.update
            .snapshot
            .groups
            .iter()
            .find(|g| g.key == key && g.findings.len() == 1000)
            .cloned()
    })
    .expect("one group of a thousand");
    assert_one_group_notification(&rec, owner.pid);
    state.stop_sampler();

    // The window's bulk kill: the group's ids, one plan held in the backend, executed once.
    let t = TestApp::with_settings(Some(
        r#"{"interval_ms":300,"grace_secs":0.0,"notify_critical":false}"#,
    ));
    wait_for(Duration::from_secs(60), || {
        let s = t.call("current_snapshot", json!({})).ok()?;
        s["groups"]
            .as_array()?
            .iter()
            .any(|g| {
                g["key"] == key.as_str() && g["findings"].as_array().map(Vec::len) == Some(1000)
            })
            .then_some(())
    })
    .expect("the app's own sampler sees the group");
    let held = t
        .call(
            "plan_kill",
            json!({ "request": { "type": "findings", "ids": group.findings } }),
        )
        .expect("one bulk plan");
    assert_eq!(identities(&held["plan"]).len(), 1000);
    let report = t
        .call(
            "execute_kill",
            json!({ "planId": held["id"], "onProgress": "__CHANNEL__:31" }),
        )
        .expect("execute");
    let outcomes = report["outcomes"].as_array().expect("outcomes");
    assert_eq!(outcomes.len(), 1000);
    assert!(
        outcomes
            .iter()
            .all(|o| o["outcome"]["outcome"] == "exited" || o["outcome"]["outcome"] == "killed"),
        "{:?}",
        outcomes
            .iter()
            .find(|o| o["outcome"]["outcome"] != "exited")
    );
    assert_eq!(orphans.alive(), 0, "every orphan is gone");
    assert_eq!(debugtop_e2e::procs::state_of(sentinel.pid), Some('S'));
}

/// One recorded world, the CLI's flag mapping and the app's settings mapping: the same audit
/// JSON to the byte, and the same kill plan from the app's `plan_kill` as from the CLI's path.
#[test]
fn the_cli_and_the_app_audit_and_plan_alike_on_the_same_world() {
    use debugtop_core::actions::{audit, kill};
    use debugtop_core::model::{LogEventKind, LogOrigin, Role};
    use debugtop_core::testing::{ObservationBuilder as Obs, ProcBuilder as P, Replay};
    let world = |t: i64| {
        Obs::at(t)
            .log(
                1,
                -30,
                LogOrigin::Server,
                LogEventKind::DebugSessionCreated {
                    session_id: "s-1".into(),
                    name: Some("n".into()),
                    language: Some("javascript".into()),
                },
            )
            .proc(
                P::new(300, Role::Adapter)
                    .ppid(1)
                    .main_pid(100)
                    .session("s-1")
                    .build(),
            )
            .proc(
                P::new(301, Role::Debuggee)
                    .ppid(300)
                    .group(300, 300)
                    .session("s-1")
                    .build(),
            )
            .proc(
                P::new(200, Role::Worker)
                    .ppid(1)
                    .owner(999)
                    .session("s-2")
                    .build(),
            )
            .build()
    };
    let replay = || Replay::new([world(0), world(1), world(2)]);
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let cli_config = debugtop_cli::audit_config(&debugtop_cli::AuditArgs::default());
    let app_config = crate::Settings::default().audit_config();
    let cli = rt
        .block_on(audit::audit(&mut replay(), &cli_config))
        .expect("cli audit");
    let app = rt
        .block_on(audit::audit(&mut replay(), &app_config))
        .expect("app audit");
    let (a, b) = (
        serde_json::to_string(&cli.result).expect("json"),
        serde_json::to_string(&app.result).expect("json"),
    );
    assert_eq!(a, b, "the CLI and the app audit differently");
    assert_eq!(cli.result.findings.len(), 2, "{a}");

    // Kill by finding id: the CLI plans from its audit run; the app from its latest tick.
    let t = TestApp::new();
    t.state().stop_sampler();
    let mut state = debugtop_core::state::State::new(debugtop_core::state::StateConfig::default());
    let mut update = None;
    for o in [world(0), world(6)] {
        update = Some(state.step(o));
    }
    let update = update.expect("update");
    t.state()
        .latest
        .send_replace(Some(debugtop_core::sampler::Published {
            update: Arc::new(update),
            live: Arc::new(state.live().clone()),
            raw: state.raw_snapshot(),
            took: std::time::Duration::from_millis(1),
        }));
    for f in &cli.result.findings {
        let request = kill::KillRequest::Finding { id: f.id.clone() };
        let from_cli = kill::plan_for(
            &request,
            &cli.findings,
            &cli.live,
            kill::KillOptions::default(),
        )
        .expect("cli plan");
        let held = t
            .call("plan_kill", json!({ "request": request }))
            .expect("app plan");
        assert_eq!(
            held["plan"],
            serde_json::to_value(&from_cli).expect("json"),
            "{}",
            f.id
        );
        assert!(!from_cli.targets.is_empty());
    }
}

/// The (pid, start ticks) of a plan's targets.
fn identities(plan: &Value) -> Vec<(u32, u64)> {
    plan["targets"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|x| {
                    (
                        u32::try_from(x["pid"].as_u64().unwrap_or(0)).unwrap_or(0),
                        x["start_ticks"].as_u64().unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Every identity is gone (or a zombie waiting for its parent).
fn assert_all_gone(ids: &[(u32, u64)]) {
    for (pid, ticks) in ids {
        assert!(
            debugtop_e2e::start_ticks(*pid) != Some(*ticks)
                || debugtop_e2e::procs::state_of(*pid) == Some('Z'),
            "planned pid {pid} is still alive"
        );
    }
}

/// A remote target through a real OpenSSH server (started by the test, throwaway keys) in
/// front of this machine's real mcp-debugger with the seed leak: the app streams the far
/// side's tree, plans the finding's kill there, executes it there, and the pids are gone.
#[test]
fn a_remote_target_over_real_ssh_shows_its_tree_and_kills_there() {
    let cli = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/debug/debugtop-cli");
    assert!(
        std::path::Path::new(cli).exists(),
        "{cli} is missing: `cargo build -p debugtop-cli` (cargo test --workspace builds it)"
    );
    let sshd = debugtop_e2e::sshd::Sshd::start();
    let server = debugtop_e2e::mcp::Server::start(60_000);
    let (_harness, worker, _session) =
        debugtop_e2e::mcp::seed_bug_stand_in(server.pid(), server.dir.path());
    let t = TestApp::new();
    let st = t.state();
    if let Ok(mut e) = st.engines.lock() {
        e.ssh = sshd
            .ssh_command()
            .split_whitespace()
            .map(String::from)
            .collect();
    }
    let target = format!("ssh:target --cli {cli}");
    t.allow_commands();
    let s = t
        .call("add_target", json!({ "text": target }))
        .expect("add a target");
    assert_eq!(s["target"], target.as_str());
    assert_eq!(s["targets"], json!([target]));
    let e = t
        .call("add_target", json!({ "text": "ssh:-oProxyCommand=id" }))
        .expect_err("an option is not a host");
    assert!(err_text(&e).contains("cannot start with '-'"), "{e}");

    // The far side's tree, with the seed leak's finding, arrives over ssh.
    let finding = wait_for(Duration::from_secs(60), || {
        let s = t.call("current_snapshot", json!({})).ok()?;
        s["findings"]
            .as_array()?
            .iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"][0] == worker)
            .cloned()
    })
    .expect("the seed leak over ssh");
    let live = st.statuses.borrow().clone();
    let remote = live
        .iter()
        .find(|x| x.target.to_string() == target)
        .expect("a status");
    assert_eq!(
        remote.state,
        debugtop_core::model::TargetState::Live,
        "{remote:?}"
    );
    assert!(remote.hello.is_some());

    let held = t
        .call(
            "plan_kill",
            json!({ "request": { "type": "finding", "id": finding["id"] } }),
        )
        .expect("a plan made on the target");
    let planned = identities(&held["plan"]);
    assert!(planned.iter().any(|(p, _)| *p == worker), "{held}");
    let report = t
        .call(
            "execute_kill",
            json!({ "planId": held["id"], "onProgress": "__CHANNEL__:31" }),
        )
        .expect("executed there");
    let outcomes = report["outcomes"].as_array().expect("outcomes");
    assert!(
        outcomes.iter().all(|o| ["exited", "killed", "already-gone"]
            .contains(&o["outcome"]["outcome"].as_str().unwrap_or(""))),
        "{report}"
    );
    assert_all_gone(&planned);
    // Back to this machine; the remote target is remembered until removed.
    let s = t
        .call("select_target", json!({ "target": "local" }))
        .expect("local");
    assert_eq!(s["target"], "local");
    let s = t
        .call("remove_target", json!({ "target": target }))
        .expect("remove");
    assert_eq!(s["targets"], json!([]));
}

/// A `cmd:` target as the window could add it: a shell that leaves a mark when it runs.
fn marking_target(dir: &std::path::Path, name: &str) -> (String, PathBuf) {
    let mark = dir.join(name);
    (
        format!("cmd:sh -c 'touch {}; sleep 30' sh", mark.display()),
        mark,
    )
}

/// A target that runs a command (`cmd:`, and ssh, docker, kubectl alike) runs only once a
/// person let it in the backend's own dialog, which names the exact command; nothing the
/// window sends — `add_target`, or settings carrying their own list of confirmations — runs
/// one without that answer.
#[test]
fn a_command_target_runs_only_after_a_person_confirms_its_exact_command() {
    let t = TestApp::new();
    let (target, mark) = marking_target(t.config.path(), "ran");
    let e = t
        .call("add_target", json!({ "text": target }))
        .expect_err("declined");
    assert!(
        err_text(&e).contains("was not added: you did not let its command run"),
        "{e}"
    );
    let asked = t.picker.asked();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].contains("sh -c 'touch ") && asked[0].contains("--hello watch --json --interval"),
        "the exact command is shown: {asked:?}"
    );
    // The window's own settings, claiming the target confirmed: asked again, and declined.
    let mut forged = t.call("get_settings", json!({})).expect("settings");
    forged["targets"] = json!([target]);
    forged["target"] = json!(target);
    forged["confirmed"] = json!([target]);
    let s = t
        .call("set_settings", json!({ "settings": forged }))
        .expect("saved");
    assert_eq!(s["targets"], json!([]), "{s}");
    assert_eq!(s["confirmed"], json!([]), "{s}");
    assert_eq!(t.picker.asked().len(), 2);
    // A fixed window: nothing ran in it.
    std::thread::sleep(Duration::from_secs(2));
    assert!(!mark.exists(), "a command ran without the person's yes");
    // Near miss: the person says yes: it runs, and is not asked about again.
    t.allow_commands();
    let s = t
        .call("add_target", json!({ "text": target }))
        .expect("added");
    assert_eq!(s["confirmed"], json!([target]));
    wait_for(Duration::from_secs(20), || mark.exists().then_some(()))
        .expect("the confirmed command ran");
    t.call("select_target", json!({ "target": "local" }))
        .expect("local");
    t.call("select_target", json!({ "target": target }))
        .expect("shown again");
    assert_eq!(t.picker.asked().len(), 3, "asked once per target");
}

/// A settings file naming a target nobody confirmed (written before confirmations existed, or
/// by hand): the target is listed, not started, and its status says why; showing it asks.
#[test]
fn a_remembered_target_nobody_confirmed_is_not_started() {
    let dir = tempfile::tempdir().expect("dir");
    let (target, mark) = marking_target(dir.path(), "ran-at-launch");
    let t = TestApp::with_settings(Some(
        &json!({"interval_ms": 500, "grace_secs": 6.0, "stuck_after_secs": 10.0,
                "extra_servers": [], "notify_critical": false, "targets": [target],
                "target": "local"})
        .to_string(),
    ));
    let st = t.state();
    let status = st
        .statuses
        .borrow()
        .iter()
        .find(|x| x.target.to_string() == target)
        .cloned()
        .expect("listed");
    assert_eq!(
        status.failure,
        Some(debugtop_core::model::TargetFailure::Unconfirmed),
        "{status:?}"
    );
    std::thread::sleep(Duration::from_secs(2));
    assert!(!mark.exists(), "an unconfirmed target ran at launch");
    let e = t
        .call("select_target", json!({ "target": target }))
        .expect_err("declined");
    assert!(err_text(&e).contains("is not started"), "{e}");
    assert_eq!(t.picker.asked().len(), 1);
    assert!(!mark.exists());
}

/// A setting changed in the app reaches a remote target: its far side's `watch` is started
/// again with every setting on its command line (it once got only the interval, so a grace,
/// a stuck threshold or a server set here did not reach it).
#[test]
fn a_setting_changed_in_the_app_reaches_a_cmd_targets_command_line() {
    let t = TestApp::new();
    t.allow_commands();
    let argv = t.config.path().join("argv");
    let target = format!(
        "cmd:sh -c 'echo \"$*\" > {0}.new; mv {0}.new {0}; sleep 60' sh",
        argv.display()
    );
    t.call("add_target", json!({ "text": target }))
        .expect("added");
    let read = |want: &str| {
        let want = want.to_owned();
        let argv = argv.clone();
        wait_for(Duration::from_secs(30), move || {
            std::fs::read_to_string(&argv)
                .ok()
                .filter(|a| a.contains(&want))
        })
    };
    let first = read("--grace").expect("the target ran");
    assert_eq!(
        first.trim(),
        "--hello watch --json --interval 1000 --grace 6 --stuck-after 10"
    );
    let mut s = t.call("get_settings", json!({})).expect("settings");
    s["grace_secs"] = json!(2.5);
    s["stuck_after_secs"] = json!(20.0);
    s["extra_servers"] = json!(["http://127.0.0.1:3999"]);
    t.call("set_settings", json!({ "settings": s }))
        .expect("saved");
    let second = read("--grace 2.5").expect("started again with the new settings");
    assert_eq!(
        second.trim(),
        "--hello watch --json --interval 1000 --grace 2.5 --stuck-after 20 --server \
         http://127.0.0.1:3999"
    );
}
