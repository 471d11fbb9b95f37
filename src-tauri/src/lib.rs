//! The desktop app: Tauri wiring over `debugtop-core`, nothing more. The one sampler runs in the
//! backend and pushes updates over a channel; collection, reconciliation, verdicts and kills
//! live in the core; drawing lives in `ui/`.

mod commands;
mod error;
mod settings;
mod state;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use tauri::{Builder, Manager, Runtime};

pub use commands::{load_offline, write_export, ExportFormat, KillRequest};
pub use error::AppError;
pub use settings::Settings;
pub use state::{AppState, Notifier};

struct DesktopNotifier<R: Runtime>(tauri::AppHandle<R>);

impl<R: Runtime> Notifier for DesktopNotifier<R> {
    fn notify(&self, title: &str, body: &str) {
        use tauri_plugin_notification::NotificationExt;
        // No notification daemon (a bare Xvfb) is not an error worth more than a log line.
        if let Err(e) = self
            .0
            .notification()
            .builder()
            .title(title)
            .body(body)
            .show()
        {
            eprintln!("debugtop: notification not shown: {e}");
        }
    }
}

/// Registers plugins, state and commands on a builder. Generic over the runtime so tests can
/// pass `tauri::test::mock_builder()`.
pub fn setup<R: Runtime>(builder: Builder<R>) -> Builder<R> {
    builder
        .plugin(tauri_plugin_dialog::init())
        .plugin(tauri_plugin_notification::init())
        .setup(|app| {
            install(app.handle())?;
            Ok(())
        })
        .invoke_handler(tauri::generate_handler![
            commands::subscribe,
            commands::current_snapshot,
            commands::plan_kill,
            commands::execute_kill,
            commands::run_audit,
            commands::export_snapshot,
            commands::open_snapshot,
            commands::close_snapshot,
            commands::get_settings,
            commands::set_settings,
            commands::set_paused,
            commands::start_demo,
        ])
}

/// Where settings live: `DEBUGTOP_CONFIG_DIR` when set (portable setups), else the platform's
/// config directory. Read once, by the binary's setup hook; tests pass their own directory.
fn config_dir<R: Runtime>(app: &tauri::AppHandle<R>) -> std::path::PathBuf {
    match std::env::var_os("DEBUGTOP_CONFIG_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => app
            .path()
            .app_config_dir()
            .unwrap_or_else(|_| std::env::temp_dir().join("debugtop")),
    }
}

/// Creates the state (settings from the config dir), starts the one sampler, and manages it.
/// Called by the setup hook.
pub fn install<R: Runtime>(app: &tauri::AppHandle<R>) -> Result<Arc<AppState>, AppError> {
    install_in(app, config_dir(app))
}

/// [`install`] with an explicit config directory (tests, where no event loop runs the hook).
pub fn install_in<R: Runtime>(
    app: &tauri::AppHandle<R>,
    dir: std::path::PathBuf,
) -> Result<Arc<AppState>, AppError> {
    let notifier: Arc<dyn Notifier> = Arc::new(DesktopNotifier(app.clone()));
    let state = Arc::new(AppState::new(settings::path_in(dir), notifier));
    let s = Arc::clone(&state);
    tauri::async_runtime::block_on(async move { s.start_sampler() })?;
    app.manage(Arc::clone(&state));
    Ok(state)
}

/// Runs the app.
pub fn run() {
    let app = setup(tauri::Builder::default()).run(tauri::generate_context!());
    if let Err(e) = app {
        eprintln!("debugtop: cannot start the window: {e}");
        std::process::exit(1);
    }
}
