//! The commands through Tauri's IPC, without a window (`tauri::test`).

use std::sync::Arc;

use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow};

use crate::AppState;

/// A mock app with its own config directory (passed explicitly: tests run in parallel threads
/// and never share process-wide environment).
struct TestApp {
    app: tauri::App<tauri::test::MockRuntime>,
    w: WebviewWindow<tauri::test::MockRuntime>,
    config: tempfile::TempDir,
}

fn app() -> TestApp {
    let config = tempfile::tempdir().expect("tempdir");
    let app = crate::setup(mock_builder())
        .build(mock_context(noop_assets()))
        .expect("app");
    crate::install_in(app.handle(), config.path().to_path_buf()).expect("state");
    let w = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .expect("window");
    TestApp { app, w, config }
}

fn call(
    w: &WebviewWindow<tauri::test::MockRuntime>,
    cmd: &str,
    args: Value,
) -> Result<Value, Value> {
    get_ipc_response(
        w,
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

#[test]
fn settings_round_trip_through_ipc_and_disk() {
    let TestApp { app, w, config } = app();
    let s = call(&w, "get_settings", json!({})).expect("get");
    assert_eq!(s["interval_ms"], 1000);
    let saved = call(&w, "set_settings", json!({ "settings": { "interval_ms": 250, "grace_secs": 3.0, "extra_servers": ["http://127.0.0.1:3999", "file:///etc"], "notify_critical": false } })).expect("set");
    assert_eq!(saved["interval_ms"], 250);
    assert_eq!(saved["extra_servers"], json!(["http://127.0.0.1:3999"]));
    let on_disk = std::fs::read_to_string(config.path().join("settings.json")).expect("saved");
    assert!(on_disk.contains("250"));
    app.state::<Arc<AppState>>().stop_sampler();
}

#[test]
fn the_sampler_feeds_current_snapshot_and_kill_plans_refuse_init() {
    let TestApp { app, w, .. } = app();
    let mut snap = Value::Null;
    for _ in 0..100 {
        snap = call(&w, "current_snapshot", json!({})).expect("current");
        if !snap.is_null() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_eq!(snap["schema"], "debugtop.snapshot/1");
    let plan = call(
        &w,
        "plan_kill",
        json!({ "request": { "type": "pid", "pid": 1, "tree": true } }),
    )
    .expect("plan");
    assert_eq!(plan["targets"], json!([]));
    assert!(plan["refused"][0]["why"]
        .as_str()
        .unwrap_or("")
        .contains("never signalled"));
    let err = call(
        &w,
        "plan_kill",
        json!({ "request": { "type": "finding", "id": "leaked-worker:1.1" } }),
    )
    .expect_err("no such finding");
    assert!(err.as_str().unwrap_or("").contains("not current"), "{err}");
    app.state::<Arc<AppState>>().stop_sampler();
}

#[test]
fn an_opened_snapshot_replaces_live_data_until_closed() {
    let TestApp { app, w, .. } = app();
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("s.json");
    let mut fixed = debugtop_core::snapshot::fixture::sample_snapshot();
    crate::write_export(&mut fixed, crate::ExportFormat::Json, &path).expect("export");
    let state = app.state::<Arc<AppState>>();
    crate::load_offline(&state, &path).expect("open");
    let shown = call(&w, "current_snapshot", json!({})).expect("current");
    assert_eq!(shown["host"], "devbox");
    let err = call(
        &w,
        "plan_kill",
        json!({ "request": { "type": "pid", "pid": 1019, "tree": true } }),
    )
    .expect_err("offline");
    assert!(
        err.as_str().unwrap_or("").contains("offline snapshot"),
        "{err}"
    );
    call(&w, "close_snapshot", json!({})).expect("close");
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\"schema\":\"debugtop.snapshot/9\"}").expect("write");
    let e = crate::load_offline(&state, &bad)
        .expect_err("newer major")
        .to_string();
    assert!(e.contains("newer debugtop"), "{e}");
    state.stop_sampler();
}

/// A notifier that records instead of showing.
#[derive(Default)]
struct Recorder(std::sync::Mutex<Vec<String>>);

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
    let state = Arc::new(AppState::new(settings, rec.clone()));
    let s = Arc::clone(&state);
    tauri::async_runtime::block_on(async move { s.start_sampler() }).expect("sampler");
    // A real process shaped like a worker whose owner is gone: an orphaned worker (critical).
    // The owner pid is held as our zombie so that nothing else can take it meanwhile.
    let gone = debugtop_e2e::HeldZombie::new();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/worker/dist/proxy/proxy-bootstrap.js");
    let worker = debugtop_e2e::Spawned::spawn(
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
    let seen = debugtop_e2e::wait_for(std::time::Duration::from_secs(10), || {
        let v = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
        v.iter().any(ours).then_some(v)
    });
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
