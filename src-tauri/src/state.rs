//! The app's state: the one background sampler (restarted when settings change), the latest
//! update, the offline snapshot when one is open, and the settings.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use debugtop_core::sampler::{self, Config, Update};
use debugtop_core::snapshot::Snapshot;
use debugtop_core::verdict::{Severity, VerdictConfig};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::settings::Settings;

/// Something that can show a desktop notification (the app, or nothing in tests).
pub trait Notifier: Send + Sync + 'static {
    /// Shows one notification.
    fn notify(&self, title: &str, body: &str);
}

/// Shared state behind every command.
pub struct AppState {
    /// The latest live update (survives sampler restarts).
    pub updates: watch::Sender<Option<Arc<Update>>>,
    /// Live updates are not forwarded to the UI while paused.
    pub paused: AtomicBool,
    /// An opened snapshot, shown instead of live data.
    pub offline: Mutex<Option<Snapshot>>,
    /// Current settings.
    pub settings: Mutex<Settings>,
    /// Where they are saved.
    pub settings_path: PathBuf,
    sampler: Mutex<Option<(JoinHandle<()>, JoinHandle<()>)>>,
    /// The task that forwards updates to the UI's channel.
    pub subscriber: Mutex<Option<JoinHandle<()>>>,
    notifier: Arc<dyn Notifier>,
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
    pub fn new(settings_path: PathBuf, notifier: Arc<dyn Notifier>) -> Self {
        let settings = Settings::load(&settings_path);
        Self {
            updates: watch::channel(None).0,
            paused: AtomicBool::new(false),
            offline: Mutex::new(None),
            settings: Mutex::new(settings),
            settings_path,
            sampler: Mutex::new(None),
            subscriber: Mutex::new(None),
            notifier,
        }
    }

    /// The current settings.
    pub fn settings(&self) -> Settings {
        self.settings.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// (Re)starts the one sampler with the current settings. Its updates go to `updates`.
    pub fn start_sampler(self: &Arc<Self>) -> Result<(), debugtop_core::Error> {
        let s = self.settings();
        let config = Config {
            interval: Duration::from_millis(s.interval_ms),
            extra_servers: s.extra_servers.clone(),
            verdicts: VerdictConfig {
                grace: Duration::try_from_secs_f64(s.grace_secs).unwrap_or(Duration::from_secs(6)),
                ..VerdictConfig::default()
            },
            ..Config::default()
        };
        // Commands may call this from a thread outside the runtime: enter Tauri's tokio runtime.
        let rt = tauri::async_runtime::handle();
        let _entered = rt.inner().enter();
        let mut running = sampler::spawn(config)?;
        let me = Arc::clone(self);
        let forward = tokio::spawn(async move {
            let mut critical_seen: BTreeSet<String> = BTreeSet::new();
            let mut first = true;
            while running.updates.changed().await.is_ok() {
                let Some(u) = running.updates.borrow_and_update().clone() else {
                    continue;
                };
                let critical: BTreeSet<String> = u
                    .snapshot
                    .findings
                    .iter()
                    .filter(|f| f.severity == Severity::Critical)
                    .map(|f| f.id.clone())
                    .collect();
                if me.settings().notify_critical && !first {
                    for f in u
                        .snapshot
                        .findings
                        .iter()
                        .filter(|f| critical.contains(&f.id) && !critical_seen.contains(&f.id))
                    {
                        let body = f.evidence.first().cloned().unwrap_or_default();
                        me.notifier
                            .notify(&format!("debugtop: {}", f.kind.as_str()), &body);
                    }
                }
                critical_seen = critical;
                first = false;
                me.updates.send_replace(Some(u));
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
