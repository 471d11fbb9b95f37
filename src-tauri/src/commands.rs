//! The IPC commands: each a thin call into the core's actions. Work that touches the disk or
//! `/proc` runs off the UI thread (async commands, blocking parts in `spawn_blocking`); streams
//! (updates, kill progress) go over `tauri::ipc::Channel`. The webview names what to do — a
//! pid, a finding id, a plan id — and never supplies a plan or a path of its own.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use debugtop_core::actions::export::{self, ExportFormat};
use debugtop_core::actions::fleet::{self, TargetSnapshot};
use debugtop_core::actions::kill::{self, HeldPlan, KillOptions, KillRequest, PlannedOn};
use debugtop_core::delta::Follower;
use debugtop_core::model::{
    statuses_look_alike, AuditResult, KillPlan, KillReport, Progress, Snapshot, Target,
    TargetAudit, TargetStatus, ViewMessage,
};
use tauri::ipc::Channel;
use tauri::State;

use crate::settings::Settings;
use crate::state::{AppState, Shown};
use crate::AppError;

type AppStateRef<'a> = State<'a, Arc<AppState>>;

/// Streams the view to the UI — the whole snapshot first, then only what changed since the
/// update this subscriber was sent last ([`debugtop_core::delta`]) — and every tick error
/// (`None` once ticks succeed again), replacing any earlier subscriber. The UI never polls; it
/// calls [`resync`] when a message does not follow the one it has.
#[tauri::command]
pub fn subscribe(
    state: AppStateRef<'_>,
    on_update: Channel<ViewMessage>,
    on_error: Channel<Option<String>>,
) {
    let st = Arc::clone(&state);
    let mut updates = st.view.subscribe();
    let mut errors = st.tick_error.subscribe();
    // An error that stands when the window subscribes (a first tick that failed, a reloaded
    // page) is told at once: a new receiver counts the current value as seen, and a standing
    // error is not sent again.
    if errors.borrow().is_some() {
        errors.mark_changed();
    }
    let mut resyncs = st.resync.subscribe();
    let task = tauri::async_runtime::spawn(async move {
        let mut follower = Follower::default();
        loop {
            if let Some(u) = updates.borrow_and_update().clone() {
                if st.is_paused() {
                    st.ipc.withheld.fetch_add(1, Ordering::Relaxed);
                } else if let Some(m) = follower.next(&u) {
                    if !send_update(&st, &on_update, m) {
                        break;
                    }
                }
            }
            tokio::select! {
                changed = updates.changed() => if changed.is_err() { break },
                changed = resyncs.changed() => {
                    if changed.is_err() { break }
                    resyncs.borrow_and_update();
                    follower.resync();
                }
                changed = errors.changed() => {
                    if changed.is_err() || on_error.send(errors.borrow_and_update().clone()).is_err() {
                        break;
                    }
                    st.ipc.errors.fetch_add(1, Ordering::Relaxed);
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

/// The UI lost track (a message that does not follow the one it has): the next message is the
/// whole snapshot, sent now.
#[tauri::command]
pub fn resync(state: AppStateRef<'_>) {
    state.resync.send_modify(|n| *n += 1);
}

/// Streams every target's status (local first), at most twice a second, and only when they
/// look different (a tick of the local sampler moves only the local target's update time,
/// which the window does not show).
#[tauri::command]
pub fn subscribe_targets(state: AppStateRef<'_>, on_status: Channel<Vec<TargetStatus>>) {
    let st = Arc::clone(&state);
    let mut statuses = st.statuses.subscribe();
    let task = tauri::async_runtime::spawn(async move {
        let mut sent: Option<Vec<TargetStatus>> = None;
        loop {
            let now = statuses.borrow_and_update().clone();
            if !sent
                .as_deref()
                .is_some_and(|s| statuses_look_alike(s, &now))
            {
                if on_status.send(now.clone()).is_err() {
                    break;
                }
                st.ipc.statuses.fetch_add(1, Ordering::Relaxed);
                sent = Some(now);
            }
            // Coalesced: twenty targets ticking each second are two messages, not twenty.
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
            if statuses.changed().await.is_err() {
                break;
            }
        }
    });
    if let Ok(mut g) = state.target_subscriber.lock() {
        if let Some(old) = g.replace(tokio_handle(task)) {
            old.abort();
        }
    }
}

/// Adds a remote target (`ssh:[user@]host[:port]`, `docker:C`, `kubectl:[-n NS] POD [-c C]`,
/// `cmd:COMMAND`), remembers it and starts streaming it; a string that is not a target is a
/// worded error.
#[tauri::command]
pub async fn add_target(state: AppStateRef<'_>, text: String) -> Result<Settings, AppError> {
    let target: Target = text.parse().map_err(debugtop_core::Error::from)?;
    if target.is_local() {
        return Err(AppError::NotFound("local is always there".into()));
    }
    let mut s = state.settings();
    if !s.targets.contains(&target) {
        s.targets.push(target.clone());
    }
    if !confirmed(&state, &mut s, &target).await? {
        return Err(AppError::Declined(format!(
            "{target} was not added: you did not let its command run"
        )));
    }
    s.target = target;
    save_settings(&state, s).await
}

/// Whether `target`'s command may run: already confirmed, or confirmed now by the person in
/// the backend's own dialog, which names the exact command (recorded in `s`).
async fn confirmed(
    state: &Arc<AppState>,
    s: &mut Settings,
    target: &Target,
) -> Result<bool, AppError> {
    if s.is_confirmed(target) {
        return Ok(true);
    }
    let config = debugtop_core::targets::StreamConfig {
        judging: s.judging(),
        engines: state.engines(),
        ..debugtop_core::targets::StreamConfig::default()
    };
    let command = debugtop_core::targets::stream_command(target, &config)
        .unwrap_or_else(|| target.to_string());
    let dialogs = Arc::clone(&state.picker);
    let shown = target.to_string();
    let yes = tokio::task::spawn_blocking(move || dialogs.confirm_command(&shown, &command))
        .await
        .map_err(|e| AppError::Task(e.to_string()))?;
    if yes {
        s.confirmed.push(target.clone());
    }
    Ok(yes)
}

/// The targets of `wanted` a person lets run (each new one asked in the backend's dialog);
/// the confirmations are the backend's own, whatever the window sent.
async fn confirm_all(state: &Arc<AppState>, mut wanted: Settings) -> Result<Settings, AppError> {
    wanted.confirmed = state.settings().confirmed;
    let mut kept = Vec::new();
    for t in std::mem::take(&mut wanted.targets) {
        if confirmed(state, &mut wanted, &t).await? {
            kept.push(t);
        }
    }
    wanted.targets = kept;
    Ok(wanted)
}

/// Forgets a remote target and stops its stream (the command is killed).
#[tauri::command]
pub async fn remove_target(state: AppStateRef<'_>, target: Target) -> Result<Settings, AppError> {
    let mut s = state.settings();
    s.targets.retain(|t| t != &target);
    if s.target == target {
        s.target = Target::Local;
    }
    save_settings(&state, s).await
}

/// Shows another target's tree (`local` or a remembered one).
#[tauri::command]
pub async fn select_target(state: AppStateRef<'_>, target: Target) -> Result<Settings, AppError> {
    let mut s = state.settings();
    if !target.is_local() && !s.targets.contains(&target) {
        return Err(AppError::NotFound(format!(
            "{target} is not a known target: add it first"
        )));
    }
    // A target remembered from before confirmations (or written into the file by hand) is
    // asked about when it is first shown.
    if !confirmed(&state, &mut s, &target).await? {
        return Err(AppError::Declined(format!(
            "{target} is not started: you did not let its command run"
        )));
    }
    s.target = target;
    save_settings(&state, s).await
}

/// Saves settings, applies them to the targets and the view (the local sampler is not
/// restarted for a target change).
async fn save_settings(state: &Arc<AppState>, s: Settings) -> Result<Settings, AppError> {
    let s = persist(state, s).await?;
    state.sync_targets();
    state.show(&s.target);
    Ok(s)
}

/// Clamps, writes (off the UI thread) and adopts settings; what applying them means is the
/// caller's.
async fn persist(state: &AppState, s: Settings) -> Result<Settings, AppError> {
    let s = s.clamped();
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
    Ok(s)
}

/// Sends one message and counts it (whole snapshots and changes apart); false when the UI is
/// gone.
fn send_update(st: &AppState, ch: &Channel<ViewMessage>, m: ViewMessage) -> bool {
    let bytes = serde_json::to_vec(&m).map_or(0, |b| b.len() as u64);
    st.ipc.messages.fetch_add(1, Ordering::Relaxed);
    st.ipc.bytes.fetch_add(bytes, Ordering::Relaxed);
    if matches!(m, ViewMessage::Full { .. }) {
        st.ipc.full.fetch_add(1, Ordering::Relaxed);
    }
    st.ipc.last_bytes.store(bytes, Ordering::Relaxed);
    ch.send(m).is_ok()
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
    if state.shown() == Shown::Offline {
        if let Some(s) = state.offline.lock().ok().and_then(|g| g.clone()) {
            return Some(s);
        }
    }
    state.view.borrow().as_ref().map(|u| u.snapshot.clone())
}

/// Plans a kill against what is shown — the latest live tick here, or on the selected target
/// (made and checked there), never an offline snapshot — and holds the plan in the backend;
/// the UI shows it and may execute it once, by id.
#[tauri::command]
pub async fn plan_kill(state: AppStateRef<'_>, request: KillRequest) -> Result<HeldPlan, AppError> {
    match state.shown() {
        Shown::Remote(target) => {
            let (_, answer) = fleet::plan_remote(&target, &request, None, &state.engines()).await?;
            hold(&state, answer.plan, PlannedOn::Target { target, request })
        }
        Shown::Local | Shown::Offline => plan(&state, &request),
    }
}

/// [`plan_kill`] on this machine, without IPC.
pub fn plan(state: &AppState, request: &KillRequest) -> Result<HeldPlan, AppError> {
    if state.shown() == Shown::Offline {
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
    hold(state, plan, PlannedOn::Here)
}

/// Holds a plan in the one registry, local and remote alike.
fn hold(state: &AppState, plan: KillPlan, on: PlannedOn) -> Result<HeldPlan, AppError> {
    Ok(state
        .plans
        .lock()
        .map_err(|_| AppError::Task("the plan registry is poisoned".into()))?
        .hold(plan, on))
}

/// Executes a held plan once, streaming progress, where it was made: here every refusal is
/// applied again against the latest live tick first, and on a target the far side does the
/// same — so a plan can only ever shrink.
#[tauri::command]
pub async fn execute_kill(
    state: AppStateRef<'_>,
    plan_id: u64,
    on_progress: Channel<Progress>,
) -> Result<KillReport, AppError> {
    let (plan, on) = state
        .plans
        .lock()
        .map_err(|_| AppError::Task("the plan registry is poisoned".into()))?
        .take(plan_id)?;
    if let PlannedOn::Target { target, request } = on {
        let answer = fleet::execute_remote(&target, &request, &plan, &state.engines()).await?;
        let report = answer.report.unwrap_or(KillReport {
            outcomes: Vec::new(),
        });
        // The far side's outcomes arrive together, at the end.
        for o in &report.outcomes {
            let _ = on_progress.send(Progress::Done {
                pid: o.pid,
                outcome: o.outcome.clone(),
            });
        }
        return Ok(report);
    }
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
    let settings = state.settings();
    let config = settings.audit_config();
    // The audit is of a live system: the selected one (this machine or a target), also while
    // a snapshot file is open; the fleet's recipe, whichever it is.
    let fleet = fleet::audit_targets(&[settings.target], &config, &state.engines()).await;
    match fleet.targets.into_iter().next() {
        Some(TargetAudit {
            result: Some(r), ..
        }) => Ok(r),
        Some(TargetAudit { error, .. }) => Err(AppError::Task(
            error.unwrap_or_else(|| "the audit gave no answer".into()),
        )),
        None => Err(AppError::Task("no target".into())),
    }
}

/// Writes the current (or open offline) snapshot where the user picks. A live snapshot is
/// enriched from this machine (log excerpts, versions); an offline one is written as it is.
/// Returns the path, or `None` when the dialog was cancelled.
#[tauri::command]
pub async fn export_snapshot(
    state: AppStateRef<'_>,
    format: ExportFormat,
) -> Result<Option<String>, AppError> {
    let shown = state.shown();
    let mut snap = shown_snapshot(&state, &shown).await?;
    // Only a live snapshot of this machine is enriched from this machine's files.
    let enrich = shown == Shown::Local;
    let redact = state.settings().sampler_config().state.redact;
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
        if enrich {
            snap = export::prepare(&snap, redact, home.as_deref());
        }
        let text = export::render(&snap, format)?;
        debugtop_core::safe_fs::write_atomic(
            &path,
            text.as_bytes(),
            debugtop_core::safe_fs::Visibility::Private,
        )
        .map_err(|source| AppError::File {
            what: "write",
            path: path.display().to_string(),
            source,
        })?;
        Ok(Some(path.display().to_string()))
    })
    .await
    .map_err(|e| AppError::Task(e.to_string()))?
}

/// The snapshot an export writes: what is shown — a target's own (enriched there), the open
/// file, or this machine's before redaction.
async fn shown_snapshot(state: &AppState, shown: &Shown) -> Result<Snapshot, AppError> {
    Ok(match shown {
        // The far side's own snapshot (enriched there, from its files); never enriched here.
        Shown::Remote(t) => {
            let fleet =
                fleet::snapshot_targets(std::slice::from_ref(t), None, false, &state.engines())
                    .await;
            let one = fleet.targets.into_iter().next();
            match one {
                Some(TargetSnapshot {
                    snapshot: Some(s), ..
                }) => s,
                Some(TargetSnapshot { error, .. }) => {
                    return Err(AppError::Task(
                        error.unwrap_or_else(|| "no snapshot".into()),
                    ))
                }
                None => return Err(AppError::Task("no target".into())),
            }
        }
        Shown::Offline => {
            current(state).ok_or_else(|| AppError::NotFound("nothing to export yet".into()))?
        }
        // Made from the snapshot before redaction: enriched through the real paths, then
        // redacted as the settings say (below, off the async runtime).
        Shown::Local => state
            .published()
            .map(|p| (*p.raw).clone())
            .ok_or_else(|| AppError::NotFound("nothing to export yet".into()))?,
    })
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
    let settings = confirm_all(&state, settings).await?;
    let s = persist(&state, settings).await?;
    state.start_sampler()?;
    state.sync_targets();
    state.show(&s.target);
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
