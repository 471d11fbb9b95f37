//! The IPC commands: each a thin call into the core. Long work runs off the UI thread; streams
//! (updates, kill progress) go over `tauri::ipc::Channel`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use debugtop_core::collect::{ProcessTable, ScanStats};
use debugtop_core::kill::{self, KillPlan, KillReport, PlanOptions, Progress};
use debugtop_core::sampler::{Config, Engine, Update};
use debugtop_core::snapshot::{self, Snapshot};
use debugtop_core::verdict::{Finding, Mode, VerdictConfig};
use serde::{Deserialize, Serialize};
use tauri::ipc::Channel;
use tauri::State;

use crate::settings::Settings;
use crate::state::AppState;
use crate::AppError;

type AppStateRef<'a> = State<'a, Arc<AppState>>;

/// Streams every live update to the UI (replacing any earlier subscriber). The UI never polls.
#[tauri::command]
pub fn subscribe(state: AppStateRef<'_>, on_update: Channel<Arc<Update>>) {
    let st = Arc::clone(&state);
    let mut rx = st.updates.subscribe();
    let task = tauri::async_runtime::spawn(async move {
        loop {
            if let Some(u) = rx.borrow_and_update().clone() {
                if !st.is_paused() && on_update.send(u).is_err() {
                    break;
                }
            }
            if rx.changed().await.is_err() {
                break;
            }
        }
    });
    if let Ok(mut g) = state.subscriber.lock() {
        if let Some(old) = g.replace(tokio_handle(task)) {
            old.abort();
        }
    }
}

fn tokio_handle(task: tauri::async_runtime::JoinHandle<()>) -> tokio::task::JoinHandle<()> {
    match task {
        tauri::async_runtime::JoinHandle::Tokio(h) => h,
    }
}

/// The latest live snapshot (or the open offline one).
#[tauri::command]
pub fn current_snapshot(state: AppStateRef<'_>) -> Option<Snapshot> {
    if let Some(s) = state.offline.lock().ok().and_then(|g| g.clone()) {
        return Some(s);
    }
    state.updates.borrow().as_ref().map(|u| u.snapshot.clone())
}

/// What to kill.
#[derive(Debug, Clone, Deserialize, Serialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "kebab-case")]
#[ts(export)]
pub enum KillRequest {
    /// A process (and, with `tree`, its descendants).
    Pid {
        /// The pid.
        pid: u32,
        /// Include descendants.
        tree: bool,
    },
    /// What a finding names.
    Finding {
        /// The finding id.
        id: String,
    },
}

/// Plans a kill against the latest live sample (never against an offline snapshot).
#[tauri::command]
pub fn plan_kill(state: AppStateRef<'_>, request: KillRequest) -> Result<KillPlan, AppError> {
    if state.offline.lock().is_ok_and(|g| g.is_some()) {
        return Err(AppError::NotFound(
            "an offline snapshot is open: nothing there can be killed".into(),
        ));
    }
    let latest = state
        .updates
        .borrow()
        .clone()
        .ok_or_else(|| AppError::NotFound("no sample yet".into()))?;
    let s = &latest.snapshot;
    let table = ProcessTable {
        taken_at: s.taken_at,
        procs: s
            .processes
            .iter()
            .filter(|p| p.state.is_alive())
            .cloned()
            .collect(),
        servers: s.servers.clone(),
        stats: ScanStats::default(),
    };
    let grace = Duration::from_millis(3000);
    Ok(match request {
        KillRequest::Pid { pid, tree } => kill::plan(
            &table,
            &[pid],
            PlanOptions {
                tree,
                force: false,
                grace,
            },
        ),
        KillRequest::Finding { id } => {
            let f = s.findings.iter().find(|f| f.id == id).ok_or_else(|| {
                AppError::NotFound(format!("finding {id} is not current any more"))
            })?;
            let mut plan = kill::plan(
                &table,
                &f.pids,
                PlanOptions {
                    tree: true,
                    force: false,
                    grace,
                },
            );
            if let Some(suggested) = &f.plan {
                plan.grace_ms = suggested.grace_ms;
            }
            plan
        }
    })
}

/// Executes a plan, streaming progress; the report says what happened to each pid.
#[tauri::command]
pub async fn execute_kill(
    plan: KillPlan,
    on_progress: Channel<Progress>,
) -> Result<KillReport, AppError> {
    tokio::task::spawn_blocking(move || {
        kill::execute(&plan, |p| {
            let _ = on_progress.send(p);
        })
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))
}

/// The audit's answer.
#[derive(Debug, Clone, Serialize, ts_rs::TS)]
#[ts(export)]
pub struct AuditResult {
    /// When it ran.
    pub taken_at: chrono::DateTime<chrono::Utc>,
    /// What it found (empty: all healthy).
    pub findings: Vec<Finding>,
    /// Servers audited.
    pub servers: u32,
    /// Processes looked at.
    pub processes: u32,
}

/// Runs the liveness audit now (two confirmed samples, like `debugtop-cli audit`).
#[tauri::command]
pub async fn run_audit(state: AppStateRef<'_>) -> Result<AuditResult, AppError> {
    let s = state.settings();
    let config = Config {
        extra_servers: s.extra_servers,
        verdicts: VerdictConfig {
            grace: Duration::try_from_secs_f64(s.grace_secs).unwrap_or(Duration::from_secs(6)),
            mode: Mode::Audit,
            ..VerdictConfig::default()
        },
        ..Config::default()
    };
    let mut engine = Engine::new(config)?;
    let mut last = None;
    for i in 0..3 {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        last = Some(engine.tick().await?);
    }
    let u = last.ok_or_else(|| AppError::Task("no sample".into()))?;
    Ok(AuditResult {
        taken_at: u.snapshot.taken_at,
        servers: u32::try_from(u.snapshot.servers.len()).unwrap_or(u32::MAX),
        processes: u32::try_from(u.snapshot.processes.len()).unwrap_or(u32::MAX),
        findings: u.snapshot.findings,
    })
}

/// Export format.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, ts_rs::TS)]
#[serde(rename_all = "kebab-case")]
#[ts(export)]
pub enum ExportFormat {
    /// `debugtop.snapshot/1` JSON.
    Json,
    /// Markdown incident report.
    Md,
}

/// Writes the current (or open offline) snapshot where the user picks in a native save dialog.
/// Returns the path, or `None` when the dialog was cancelled.
#[tauri::command]
pub async fn export_snapshot<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    state: AppStateRef<'_>,
    format: ExportFormat,
) -> Result<Option<String>, AppError> {
    use tauri_plugin_dialog::DialogExt;
    let mut snap = current_snapshot(state)
        .ok_or_else(|| AppError::NotFound("nothing to export yet".into()))?;
    let (ext, name) = match format {
        ExportFormat::Json => ("json", "JSON snapshot"),
        ExportFormat::Md => ("md", "Markdown report"),
    };
    let default = format!("debugtop-{}.{ext}", snap.taken_at.format("%Y%m%d-%H%M%S"));
    let picked = tokio::task::spawn_blocking(move || {
        app.dialog()
            .file()
            .add_filter(name, &[ext])
            .set_file_name(default)
            .blocking_save_file()
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))?;
    let Some(path) = picked.and_then(|p| p.into_path().ok()) else {
        return Ok(None);
    };
    let path_text = path.display().to_string();
    tokio::task::spawn_blocking(move || write_export(&mut snap, format, &path))
        .await
        .map_err(|e| AppError::Task(e.to_string()))??;
    Ok(Some(path_text))
}

/// Enriches and writes a snapshot (the part of export that needs no dialog).
pub fn write_export(
    snap: &mut Snapshot,
    format: ExportFormat,
    path: &std::path::Path,
) -> Result<(), AppError> {
    if snap.log_excerpts.is_empty() && snap.environment.is_none() {
        snap.enrich_for_export();
    }
    let text = match format {
        ExportFormat::Json => snap.to_json()?,
        ExportFormat::Md => snapshot::markdown::render(snap),
    };
    snapshot::write_atomic(path, text.as_bytes()).map_err(|source| AppError::File {
        what: "write",
        path: path.display().to_string(),
        source,
    })
}

/// Opens a snapshot file chosen in a native open dialog and shows it offline. `None` when the
/// dialog was cancelled.
#[tauri::command]
pub async fn open_snapshot<R: tauri::Runtime>(
    app: tauri::AppHandle<R>,
    state: AppStateRef<'_>,
) -> Result<Option<Snapshot>, AppError> {
    use tauri_plugin_dialog::DialogExt;
    let picked = tokio::task::spawn_blocking(move || {
        app.dialog()
            .file()
            .add_filter("debugtop snapshot", &["json"])
            .blocking_pick_file()
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))?;
    let Some(path) = picked.and_then(|p| p.into_path().ok()) else {
        return Ok(None);
    };
    load_offline(&state, &path).map(Some)
}

/// Imports a snapshot file and makes it the offline view.
pub fn load_offline(state: &AppState, path: &std::path::Path) -> Result<Snapshot, AppError> {
    let snap = snapshot::import_file(path)?;
    if let Ok(mut g) = state.offline.lock() {
        *g = Some(snap.clone());
    }
    Ok(snap)
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
pub fn set_settings(state: AppStateRef<'_>, settings: Settings) -> Result<Settings, AppError> {
    let s = settings.clamped();
    s.save(&state.settings_path)
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
/// orphan), as `make demo` does. Only available from a source checkout.
#[tauri::command]
pub fn start_demo() -> Result<String, AppError> {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/demo.sh");
    if !script.exists() {
        return Err(AppError::NotFound(format!(
            "the demo needs a source checkout ({} is missing)",
            script.display()
        )));
    }
    std::process::Command::new("bash")
        .arg(&script)
        .arg("--no-app")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|source| AppError::File {
            what: "run",
            path: script.display().to_string(),
            source,
        })?;
    Ok("demo starting: a real mcp-debugger with two healthy sessions, a leaked adapter chain and an orphan will appear in a few seconds".into())
}
