//! The app's state: the one background sampler (restarted when settings change), the latest
//! published tick and tick error, the offline snapshot when one is open, the kill plans waiting
//! for confirmation, and the settings.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use debugtop_core::actions::kill::PlanRegistry;
use debugtop_core::model::{FindingId, Severity, Snapshot};
use debugtop_core::sampler::{self, Published};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::settings::Settings;

/// Something that can show a desktop notification (the app, or a recorder in tests).
pub trait Notifier: Send + Sync + 'static {
    /// Shows one notification.
    fn notify(&self, title: &str, body: &str);
}

/// Where files are saved and opened: native dialogs in the app, fixed paths in tests.
pub trait FilePicker: Send + Sync + 'static {
    /// A path to save `default_name` as a file of type `ext` (`None`: cancelled). Blocking.
    fn save(&self, what: &str, ext: &str, default_name: String) -> Option<PathBuf>;
    /// A snapshot file to open (`None`: cancelled). Blocking.
    fn open(&self) -> Option<PathBuf>;
}

/// Bytes and messages sent to the UI over the update channel (shown in the status bar and
/// measured by the benchmark).
#[derive(Debug, Default)]
pub struct IpcStats {
    /// Messages sent.
    pub messages: AtomicU64,
    /// Their JSON size, summed.
    pub bytes: AtomicU64,
}

/// Shared state behind every command.
pub struct AppState {
    /// The latest live tick (survives sampler restarts).
    pub latest: watch::Sender<Option<Published>>,
    /// The latest tick error (`None` after a good tick).
    pub tick_error: watch::Sender<Option<String>>,
    /// Live updates are not forwarded to the UI while paused.
    pub paused: AtomicBool,
    /// An opened snapshot, shown instead of live data.
    pub offline: Mutex<Option<Snapshot>>,
    /// Current settings.
    pub settings: Mutex<Settings>,
    /// Where they are saved.
    pub settings_path: PathBuf,
    /// Kill plans made by `plan_kill`, waiting to be executed once.
    pub plans: Mutex<PlanRegistry>,
    /// What was sent to the UI.
    pub ipc: IpcStats,
    sampler: Mutex<Option<(JoinHandle<()>, JoinHandle<()>)>>,
    /// The task that forwards updates to the UI's channel.
    pub subscriber: Mutex<Option<JoinHandle<()>>>,
    notifier: Arc<dyn Notifier>,
    /// Save and open dialogs.
    pub picker: Arc<dyn FilePicker>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings_path", &self.settings_path)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// New state; call [`AppState::start_sampler`] from inside the async runtime.
    pub fn new(
        settings_path: PathBuf,
        notifier: Arc<dyn Notifier>,
        picker: Arc<dyn FilePicker>,
    ) -> Self {
        let settings = Settings::load(&settings_path);
        Self {
            latest: watch::channel(None).0,
            tick_error: watch::channel(None).0,
            paused: AtomicBool::new(false),
            offline: Mutex::new(None),
            settings: Mutex::new(settings),
            settings_path,
            plans: Mutex::new(PlanRegistry::default()),
            ipc: IpcStats::default(),
            sampler: Mutex::new(None),
            subscriber: Mutex::new(None),
            notifier,
            picker,
        }
    }

    /// The current settings.
    pub fn settings(&self) -> Settings {
        self.settings.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The latest live tick.
    pub fn published(&self) -> Option<Published> {
        self.latest.borrow().clone()
    }

    /// (Re)starts the one sampler with the current settings. Its ticks go to `latest`, its
    /// errors to `tick_error`, new critical findings to the notifier.
    pub fn start_sampler(self: &Arc<Self>) -> Result<(), debugtop_core::Error> {
        // Commands may call this from a thread outside the runtime: enter Tauri's tokio runtime.
        let rt = tauri::async_runtime::handle();
        let _entered = rt.inner().enter();
        let mut running = sampler::spawn(self.settings().sampler_config())?;
        let me = Arc::clone(self);
        let forward = tokio::spawn(async move {
            let mut critical_seen: Option<BTreeSet<FindingId>> = None;
            loop {
                tokio::select! {
                    changed = running.updates.changed() => {
                        if changed.is_err() { break; }
                        let Some(p) = running.updates.borrow_and_update().clone() else { continue };
                        critical_seen = Some(me.notify_new_critical(&p, critical_seen.as_ref()));
                        me.latest.send_replace(Some(p));
                        me.tick_error.send_replace(None);
                    }
                    changed = running.errors.changed() => {
                        if changed.is_err() { break; }
                        let e = running.errors.borrow_and_update().clone();
                        if e.is_some() {
                            me.tick_error.send_replace(e);
                        }
                    }
                }
            }
        });
        let old = self
            .sampler
            .lock()
            .ok()
            .and_then(|mut g| g.replace((running.task, forward)));
        if let Some((a, b)) = old {
            a.abort();
            b.abort();
        }
        Ok(())
    }

    /// Notifies each critical finding not critical on the previous tick (none on the first);
    /// returns this tick's critical set.
    fn notify_new_critical(
        &self,
        p: &Published,
        before: Option<&BTreeSet<FindingId>>,
    ) -> BTreeSet<FindingId> {
        let findings = &p.update.snapshot.findings;
        let critical: BTreeSet<FindingId> = findings
            .iter()
            .filter(|f| f.severity == Severity::Critical)
            .map(|f| f.id.clone())
            .collect();
        if let (Some(before), true) = (before, self.settings().notify_critical) {
            for f in findings
                .iter()
                .filter(|f| critical.contains(&f.id) && !before.contains(&f.id))
            {
                let body = f.evidence.first().cloned().unwrap_or_default();
                self.notifier
                    .notify(&format!("debugtop: {}", f.kind), &body);
            }
        }
        critical
    }

    /// Stops the sampler (for tests and shutdown).
    pub fn stop_sampler(&self) {
        if let Some((a, b)) = self.sampler.lock().ok().and_then(|mut g| g.take()) {
            a.abort();
            b.abort();
        }
    }

    /// Whether live updates are paused.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
}
