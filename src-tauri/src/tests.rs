//! The commands through Tauri's IPC, without a window (`tauri::test`).

use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};
use tauri::ipc::{CallbackFn, InvokeBody};
use tauri::test::{get_ipc_response, mock_builder, mock_context, noop_assets, INVOKE_KEY};
use tauri::webview::InvokeRequest;
use tauri::{Manager, WebviewWindow};

use crate::AppState;

fn config_dir() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = tempfile::tempdir().expect("tempdir");
        std::env::set_var("DEBUGTOP_CONFIG_DIR", d.path());
        d
    })
}

fn app() -> (
    tauri::App<tauri::test::MockRuntime>,
    WebviewWindow<tauri::test::MockRuntime>,
) {
    config_dir();
    let app = crate::setup(mock_builder())
        .build(mock_context(noop_assets()))
        .expect("app");
    crate::install(app.handle()).expect("state");
    let w = tauri::WebviewWindowBuilder::new(&app, "main", Default::default())
        .build()
        .expect("window");
    (app, w)
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
    let (app, w) = app();
    let s = call(&w, "get_settings", json!({})).expect("get");
    assert_eq!(s["interval_ms"], 1000);
    let saved = call(&w, "set_settings", json!({ "settings": { "interval_ms": 250, "grace_secs": 3.0, "extra_servers": ["http://127.0.0.1:3999", "file:///etc"], "notify_critical": false } })).expect("set");
    assert_eq!(saved["interval_ms"], 250);
    assert_eq!(saved["extra_servers"], json!(["http://127.0.0.1:3999"]));
    let on_disk =
        std::fs::read_to_string(config_dir().path().join("settings.json")).expect("saved");
    assert!(on_disk.contains("250"));
    app.state::<Arc<AppState>>().stop_sampler();
}

#[test]
fn the_sampler_feeds_current_snapshot_and_kill_plans_refuse_init() {
    let (app, w) = app();
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
    let (app, w) = app();
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
    let mut dead = std::process::Command::new("true").spawn().expect("true");
    let gone = dead.id();
    dead.wait().expect("reap");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/worker/dist/proxy/proxy-bootstrap.js");
    let mut worker = std::process::Command::new("node")
        .arg(script)
        .arg(format!("--mcp-owner-pid={gone}"))
        .arg("--mcp-session-id=notify-test-session")
        .spawn()
        .expect("worker");
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = rec.0.lock().map(|v| v.clone()).unwrap_or_default();
        if seen
            .iter()
            .any(|n| n.contains("orphaned-worker") && n.contains(&worker.id().to_string()))
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = worker.kill();
    let _ = worker.wait();
    state.stop_sampler();
    assert!(
        seen.iter()
            .any(|n| n.starts_with("debugtop: orphaned-worker")),
        "{seen:?}"
    );
}
