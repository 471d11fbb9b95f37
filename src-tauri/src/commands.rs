//! The IPC commands: each a thin call into the core's actions. Work that touches the disk or
//! `/proc` runs off the UI thread (async commands, blocking parts in `spawn_blocking`); streams
//! (updates, kill progress) go over `tauri::ipc::Channel`. The webview names what to do — a
//! pid, a finding id, a plan id — and never supplies a plan or a path of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use debugtop_core::actions::audit;
use debugtop_core::actions::export::{self, ExportFormat};
use debugtop_core::actions::kill::{self, HeldPlan, KillOptions, KillRequest};
use debugtop_core::model::{AuditResult, KillReport, Progress, Snapshot, Update};
use debugtop_core::sources::Sources;
use tauri::ipc::Channel;
use tauri::State;

use crate::settings::Settings;
use crate::state::AppState;
use crate::AppError;

type AppStateRef<'a> = State<'a, Arc<AppState>>;

/// Streams every live update to the UI, and every tick error (`None` once ticks succeed
/// again), replacing any earlier subscriber. The UI never polls.
#[tauri::command]
pub fn subscribe(
    state: AppStateRef<'_>,
    on_update: Channel<Arc<Update>>,
    on_error: Channel<Option<String>>,
) {
    let st = Arc::clone(&state);
    let mut updates = st.latest.subscribe();
    let mut errors = st.tick_error.subscribe();
    let task = tauri::async_runtime::spawn(async move {
        loop {
            if let Some(p) = updates.borrow_and_update().clone() {
                if !st.is_paused() && !send_update(&st, &on_update, p.update) {
                    break;
                }
            }
            tokio::select! {
                changed = updates.changed() => if changed.is_err() { break },
                changed = errors.changed() => {
                    if changed.is_err() || on_error.send(errors.borrow_and_update().clone()).is_err() {
                        break;
                    }
                }
            }
        }
    });
    if let Ok(mut g) = state.subscriber.lock() {
        if let Some(old) = g.replace(tokio_handle(task)) {
            old.abort();
        }
    }
}

/// Sends one update and counts it; false when the UI is gone.
fn send_update(st: &AppState, ch: &Channel<Arc<Update>>, u: Arc<Update>) -> bool {
    let bytes = serde_json::to_vec(&*u).map_or(0, |b| b.len() as u64);
    st.ipc.messages.fetch_add(1, Ordering::Relaxed);
    st.ipc.bytes.fetch_add(bytes, Ordering::Relaxed);
    ch.send(u).is_ok()
}

fn tokio_handle(task: tauri::async_runtime::JoinHandle<()>) -> tokio::task::JoinHandle<()> {
    match task {
        tauri::async_runtime::JoinHandle::Tokio(h) => h,
    }
}

/// The latest live snapshot (or the open offline one).
#[tauri::command]
pub fn current_snapshot(state: AppStateRef<'_>) -> Option<Snapshot> {
    current(&state)
}

fn current(state: &AppState) -> Option<Snapshot> {
    if let Some(s) = state.offline.lock().ok().and_then(|g| g.clone()) {
        return Some(s);
    }
    state.published().map(|p| p.update.snapshot.clone())
}

/// Plans a kill against the latest live tick (never an offline snapshot) and holds the plan in
/// the backend; the UI shows it and may execute it once, by id.
#[tauri::command]
pub fn plan_kill(state: AppStateRef<'_>, request: KillRequest) -> Result<HeldPlan, AppError> {
    plan(&state, &request)
}

/// [`plan_kill`] without IPC.
pub fn plan(state: &AppState, request: &KillRequest) -> Result<HeldPlan, AppError> {
    if state.offline.lock().is_ok_and(|g| g.is_some()) {
        return Err(AppError::NotFound(
            "an offline snapshot is open: nothing there can be killed".into(),
        ));
    }
    let p = state
        .published()
        .ok_or_else(|| AppError::NotFound("no sample yet".into()))?;
    let plan = kill::plan_for(
        request,
        &p.update.snapshot.findings,
        &p.live,
        KillOptions::default(),
    )?;
    let mut plans = state
        .plans
        .lock()
        .map_err(|_| AppError::Task("the plan registry is poisoned".into()))?;
    Ok(plans.hold(plan))
}

/// Executes a held plan once, streaming progress: every refusal is applied again against the
/// latest live tick first, so a plan can only ever shrink.
#[tauri::command]
pub async fn execute_kill(
    state: AppStateRef<'_>,
    plan_id: u64,
    on_progress: Channel<Progress>,
) -> Result<KillReport, AppError> {
    let plan = state
        .plans
        .lock()
        .map_err(|_| AppError::Task("the plan registry is poisoned".into()))?
        .take(plan_id)?;
    let live = state
        .published()
        .ok_or_else(|| AppError::NotFound("no sample yet".into()))?
        .live;
    let plan = kill::recheck(&plan, &live);
    tokio::task::spawn_blocking(move || {
        kill::execute(&plan, |p| {
            let _ = on_progress.send(p);
        })
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))
}

/// Runs the liveness audit now — the same recipe and the same answer as `debugtop-cli audit`.
#[tauri::command]
pub async fn run_audit(state: AppStateRef<'_>) -> Result<AuditResult, AppError> {
    let config = state.settings().audit_config();
    let mut sources = Sources::new(&config.sources())?;
    Ok(audit::audit(&mut sources, &config).await?.result)
}

/// Writes the current (or open offline) snapshot where the user picks. A live snapshot is
/// enriched from this machine (log excerpts, versions); an offline one is written as it is.
/// Returns the path, or `None` when the dialog was cancelled.
#[tauri::command]
pub async fn export_snapshot(
    state: AppStateRef<'_>,
    format: ExportFormat,
) -> Result<Option<String>, AppError> {
    let offline = state.offline.lock().is_ok_and(|g| g.is_some());
    let mut snap =
        current(&state).ok_or_else(|| AppError::NotFound("nothing to export yet".into()))?;
    let (ext, what) = match format {
        ExportFormat::Json => ("json", "JSON snapshot"),
        ExportFormat::Md => ("md", "Markdown report"),
    };
    let default = format!("debugtop-{}.{ext}", snap.taken_at.format("%Y%m%d-%H%M%S"));
    let picker = Arc::clone(&state.picker);
    let home = state.settings().sampler_config().state.home;
    tokio::task::spawn_blocking(move || {
        let Some(path) = picker.save(what, ext, default) else {
            return Ok(None);
        };
        if !offline {
            export::enrich(&mut snap, home.as_deref());
        }
        let text = export::render(&snap, format)?;
        export::write_atomic(&path, text.as_bytes()).map_err(|source| AppError::File {
            what: "write",
            path: path.display().to_string(),
            source,
        })?;
        Ok(Some(path.display().to_string()))
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))?
}

/// Opens a snapshot file the user picks and shows it offline. `None` when cancelled.
#[tauri::command]
pub async fn open_snapshot(state: AppStateRef<'_>) -> Result<Option<Snapshot>, AppError> {
    let picker = Arc::clone(&state.picker);
    let loaded = tokio::task::spawn_blocking(move || {
        picker
            .open()
            .map(|path| export::import_file(&path))
            .transpose()
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))??;
    if let (Some(s), Ok(mut g)) = (&loaded, state.offline.lock()) {
        *g = Some(s.clone());
    }
    Ok(loaded)
}

/// Leaves the offline view.
#[tauri::command]
pub fn close_snapshot(state: AppStateRef<'_>) {
    if let Ok(mut g) = state.offline.lock() {
        *g = None;
    }
}

/// Current settings.
#[tauri::command]
pub fn get_settings(state: AppStateRef<'_>) -> Settings {
    state.settings()
}

/// Saves settings and restarts the sampler with them.
#[tauri::command]
pub async fn set_settings(
    state: AppStateRef<'_>,
    settings: Settings,
) -> Result<Settings, AppError> {
    let s = settings.clamped();
    let path = state.settings_path.clone();
    let saved = s.clone();
    tokio::task::spawn_blocking(move || saved.save(&path))
        .await
        .map_err(|e| AppError::Task(e.to_string()))?
        .map_err(|source| AppError::File {
            what: "save settings to",
            path: state.settings_path.display().to_string(),
            source,
        })?;
    if let Ok(mut g) = state.settings.lock() {
        *g = s.clone();
    }
    state.start_sampler()?;
    Ok(s)
}

/// Pauses or resumes live updates to the UI (the sampler keeps running).
#[tauri::command]
pub fn set_paused(state: AppStateRef<'_>, paused: bool) {
    state.paused.store(paused, Ordering::Relaxed);
}

/// Starts the demo (a real mcp-debugger with healthy sessions, a leaked adapter chain and an
/// orphan), as `make demo` does. Development builds only: the command is not registered in a
/// release build, and its permission is granted at run time only in debug builds.
#[cfg(debug_assertions)]
#[tauri::command]
pub async fn start_demo() -> Result<String, AppError> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/demo.sh");
    if !script.exists() {
        return Err(AppError::NotFound(format!(
            "the demo needs a source checkout ({} is missing)",
            script.display()
        )));
    }
    let shown = script.display().to_string();
    let mut child = tokio::process::Command::new("bash")
        .arg(&script)
        .arg("--no-app")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|source| AppError::File {
            what: "run",
            path: shown.clone(),
            source,
        })?;
    // Waited for: the script starts the demo's processes in the background and exits.
    let status = child.wait().await.map_err(|source| AppError::File {
        what: "wait for",
        path: shown,
        source,
    })?;
    if !status.success() {
        return Err(AppError::Task(format!("the demo script failed ({status})")));
    }
    Ok("demo started: a real mcp-debugger with two healthy sessions, a leaked adapter chain and an orphan; they appear within a second".into())
}
