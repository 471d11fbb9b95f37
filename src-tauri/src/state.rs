//! The app's state: the one background sampler (restarted when settings change), the latest
//! published tick and tick error, the offline snapshot when one is open, the kill plans waiting
//! for confirmation, and the settings.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use debugtop_core::actions::kill::PlanRegistry;
use debugtop_core::judging::Judging;
use debugtop_core::model::{Snapshot, Target, TargetState, TargetStatus, Update};
use debugtop_core::report::notices::Notices;
use debugtop_core::sampler::{self, Published};
use debugtop_core::targets::{spawn_stream, Engines, StreamConfig, TargetFeed};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::settings::Settings;

/// Something that can show a desktop notification (the app, or a recorder in tests).
pub trait Notifier: Send + Sync + 'static {
    /// Shows one notification.
    fn notify(&self, title: &str, body: &str);
}

/// What a person is asked in the backend's own dialogs — where files are saved and opened,
/// and whether a command may run: native dialogs in the app, fixed answers in tests. The
/// webview never opens one, so nothing it sends can answer for the person.
pub trait Dialogs: Send + Sync + 'static {
    /// A path to save `default_name` as a file of type `ext` (`None`: cancelled). Blocking.
    fn save(&self, what: &str, ext: &str, default_name: String) -> Option<PathBuf>;
    /// A snapshot file to open (`None`: cancelled). Blocking.
    fn open(&self) -> Option<PathBuf>;
    /// Whether the person lets debugtop run `command` (a target's), now and at every launch.
    /// Blocking.
    fn confirm_command(&self, target: &str, command: &str) -> bool;
}

/// Bytes and messages sent to the UI over the update channel (shown in the status bar and
/// measured by the benchmark).
#[derive(Debug, Default)]
pub struct IpcStats {
    /// Messages sent.
    pub messages: AtomicU64,
    /// Their JSON size, summed.
    pub bytes: AtomicU64,
    /// How many were whole snapshots (the rest were changes).
    pub full: AtomicU64,
    /// The size of the last one.
    pub last_bytes: AtomicU64,
    /// Messages on the tick-error channel (one per change: a failure, then its clearing).
    pub errors: AtomicU64,
    /// Messages on the target-status channel (one per change the window shows).
    pub statuses: AtomicU64,
    /// Updates not sent because the window paused them.
    pub withheld: AtomicU64,
}

/// What the window shows: the one answer every command that depends on it asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown {
    /// This machine, live.
    Local,
    /// A remote target, live (plans are made and executed there).
    Remote(Target),
    /// A snapshot file opened offline: nothing there can be killed or read again.
    Offline,
}

/// A remote target's stream and the task that forwards it to the view and the statuses.
struct Remote {
    feed: TargetFeed,
    forward: JoinHandle<()>,
    /// How its far side was started to judge (a change of any setting restarts the stream).
    judging: Judging,
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.forward.abort();
    }
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
    /// What the UI is shown: the selected target's latest update.
    pub view: watch::Sender<Option<Arc<Update>>>,
    /// Bumped when the UI asks for the whole snapshot again.
    pub resync: watch::Sender<u64>,
    /// Every target's status, `local` first.
    pub statuses: watch::Sender<Vec<TargetStatus>>,
    /// The local target's state and when it began (its status's `since`).
    local_since: Mutex<Option<(TargetState, DateTime<Utc>)>>,
    remotes: Mutex<Vec<Remote>>,
    /// How targets are reached (`DEBUGTOP_SSH_COMMAND` at start; tests set their own).
    pub engines: Mutex<Engines>,
    sampler: Mutex<Option<(JoinHandle<()>, JoinHandle<()>)>>,
    /// The task that forwards updates to the UI's channel.
    pub subscriber: Mutex<Option<JoinHandle<()>>>,
    /// The task that forwards target statuses to the UI.
    pub target_subscriber: Mutex<Option<JoinHandle<()>>>,
    notifier: Arc<dyn Notifier>,
    /// Save and open dialogs.
    pub picker: Arc<dyn Dialogs>,
}

impl std::fmt::Debug for AppState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AppState")
            .field("settings_path", &self.settings_path)
            .finish_non_exhaustive()
    }
}

impl AppState {
    /// What the window shows now: an open snapshot file first, else the selected target.
    pub fn shown(&self) -> Shown {
        if self.offline.lock().is_ok_and(|g| g.is_some()) {
            return Shown::Offline;
        }
        match self.settings().target {
            t if t.is_local() => Shown::Local,
            t => Shown::Remote(t),
        }
    }

    /// New state; call [`AppState::start_sampler`] from inside the async runtime.
    pub fn new(
        settings_path: PathBuf,
        notifier: Arc<dyn Notifier>,
        picker: Arc<dyn Dialogs>,
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
            view: watch::channel(None).0,
            resync: watch::channel(0).0,
            statuses: watch::channel(Vec::new()).0,
            local_since: Mutex::new(None),
            remotes: Mutex::new(Vec::new()),
            engines: Mutex::new(Engines::from_env()),
            sampler: Mutex::new(None),
            subscriber: Mutex::new(None),
            target_subscriber: Mutex::new(None),
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
            let mut seen = Notices::default();
            loop {
                tokio::select! {
                    changed = running.updates.changed() => {
                        if changed.is_err() { break; }
                        let Some(p) = running.updates.borrow_and_update().clone() else { continue };
                        // The error clears first: whoever sees this tick's update sees the
                        // error state it leaves (a test set an error between the two, and this
                        // clearing then hid it).
                        me.set_tick_error(None);
                        me.notify(&p.update, &mut seen, None);
                        if me.settings().target.is_local() {
                            me.view.send_replace(Some(Arc::clone(&p.update)));
                        }
                        me.latest.send_replace(Some(p));
                        me.publish_statuses();
                    }
                    changed = running.errors.changed() => {
                        if changed.is_err() { break; }
                        let e = running.errors.borrow_and_update().clone();
                        if e.is_some() && me.set_tick_error(e) {
                            me.publish_statuses();
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

    /// Shows what the notification policy (`report::notices`) calls for on this update of a
    /// feed; a remote one names its target.
    fn notify(&self, update: &Update, seen: &mut Notices, on: Option<&Target>) {
        let enabled = self.settings().notify_critical;
        for n in seen.next(&update.snapshot, enabled, on) {
            self.notifier.notify(&n.title, &n.body);
        }
    }

    /// Streams every remote target in the settings (starting new ones, dropping removed ones,
    /// which kills their commands, and restarting them all when how they judge changed: the far
    /// side gets every setting on its command line).
    pub fn sync_targets(self: &Arc<Self>) {
        let settings = self.settings();
        // Only what a person let run is run; the rest waits for a confirmation.
        let wanted: Vec<Target> = settings
            .targets
            .iter()
            .filter(|t| settings.is_confirmed(t))
            .cloned()
            .collect();
        let judging = settings.judging();
        let rt = tauri::async_runtime::handle();
        let _entered = rt.inner().enter();
        if let Ok(mut remotes) = self.remotes.lock() {
            remotes.retain(|r| wanted.contains(&r.feed.target) && r.judging == judging);
            for t in wanted {
                if !remotes.iter().any(|r| r.feed.target == t) {
                    remotes.push(self.stream(t));
                }
            }
        }
        self.publish_statuses();
    }

    fn stream(self: &Arc<Self>, target: Target) -> Remote {
        let judging = self.settings().judging();
        let config = StreamConfig {
            judging: judging.clone(),
            engines: self.engines(),
            ..StreamConfig::default()
        };
        let feed = spawn_stream(target.clone(), config);
        let mut rx = feed.feed.clone();
        let me = Arc::clone(self);
        let forward = tokio::spawn(async move {
            let mut seen = Notices::default();
            let mut last: Option<Arc<Update>> = None;
            while rx.changed().await.is_ok() {
                let update = rx.borrow_and_update().update.clone();
                if let Some(u) = update
                    .as_ref()
                    .filter(|u| !last.as_ref().is_some_and(|l| Arc::ptr_eq(l, u)))
                {
                    me.notify(u, &mut seen, Some(&target));
                    last = Some(Arc::clone(u));
                }
                if me.settings().target == target {
                    if let Some(u) = update {
                        me.view.send_if_modified(|v| {
                            let same = v.as_ref().is_some_and(|old| Arc::ptr_eq(old, &u));
                            *v = Some(Arc::clone(&u));
                            !same
                        });
                    }
                }
                me.publish_statuses();
            }
        });
        Remote {
            feed,
            forward,
            judging,
        }
    }

    /// Shows `target` (local, or a remote one in the settings): its latest update goes to the
    /// view at once when there is one.
    pub fn show(&self, target: &Target) {
        let update = if target.is_local() {
            self.published().map(|p| p.update)
        } else {
            self.remote_update(target)
        };
        self.view.send_replace(update);
        self.publish_statuses();
    }

    /// How targets are reached.
    pub fn engines(&self) -> Engines {
        self.engines.lock().map(|e| e.clone()).unwrap_or_default()
    }

    /// A remote target's latest update.
    pub fn remote_update(&self, target: &Target) -> Option<Arc<Update>> {
        self.remotes.lock().ok().and_then(|r| {
            r.iter()
                .find(|x| &x.feed.target == target)
                .and_then(|x| x.feed.feed.borrow().update.clone())
        })
    }

    fn local_status(&self) -> TargetStatus {
        let at = self.published().map(|p| p.update.snapshot.taken_at);
        let error = self.tick_error.borrow().clone();
        let state = if error.is_some() {
            TargetState::Failed
        } else {
            TargetState::Live
        };
        TargetStatus {
            target: Target::Local,
            state,
            failure: None,
            detail: error.unwrap_or_else(|| "this machine".to_owned()),
            hello: None,
            last_update_at: at,
            since: self.local_since(state),
            attempts: 1,
            retry_at: None,
        }
    }

    /// Sets the tick error (`None`: ticks succeed); whether it changed. The window hears of
    /// a change once, not of every tick that says the same.
    fn set_tick_error(&self, e: Option<String>) -> bool {
        self.tick_error.send_if_modified(|cur| {
            let changed = *cur != e;
            *cur = e;
            changed
        })
    }

    /// When the local target entered `state`: now, when it was in another one before.
    fn local_since(&self, state: TargetState) -> DateTime<Utc> {
        let Ok(mut g) = self.local_since.lock() else {
            return Utc::now();
        };
        match *g {
            Some((was, since)) if was == state => since,
            _ => {
                let now = Utc::now();
                *g = Some((state, now));
                now
            }
        }
    }

    /// Rebuilds the statuses (local first, then each remote target in settings order).
    pub fn publish_statuses(&self) {
        let mut all = vec![self.local_status()];
        if let Ok(r) = self.remotes.lock() {
            all.extend(r.iter().map(|x| x.feed.feed.borrow().status.clone()));
        }
        let s = self.settings();
        all.extend(
            s.targets
                .iter()
                .filter(|t| !s.is_confirmed(t))
                .map(unconfirmed_status),
        );
        self.statuses.send_replace(all);
    }

    /// Stops the sampler (for tests and shutdown). The tasks are aborted; awaiting the handles
    /// returned waits until they have ended (a pass already under way finishes first).
    pub fn stop_sampler(&self) -> Vec<JoinHandle<()>> {
        let tasks = self.sampler.lock().ok().and_then(|mut g| g.take());
        // The remote streams too (their commands are killed as their feeds drop).
        if let Ok(mut r) = self.remotes.lock() {
            r.clear();
        }
        tasks
            .map(|(a, b)| {
                a.abort();
                b.abort();
                vec![a, b]
            })
            .unwrap_or_default()
    }

    /// Whether live updates are paused.
    pub fn is_paused(&self) -> bool {
        self.paused.load(Ordering::Relaxed)
    }
}

/// A remembered target nobody has let run yet: listed, not started.
fn unconfirmed_status(t: &Target) -> TargetStatus {
    TargetStatus {
        target: t.clone(),
        state: TargetState::Failed,
        failure: Some(debugtop_core::model::TargetFailure::Unconfirmed),
        detail: "not started: select it to see the command it runs and confirm it".to_owned(),
        hello: None,
        last_update_at: None,
        since: chrono::Utc::now(),
        attempts: 0,
        retry_at: None,
    }
}
