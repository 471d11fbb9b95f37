//! The desktop app: Tauri wiring over `debugtop-core`, nothing more. The one sampler runs in the
//! backend and pushes updates over a channel; collection, reconciliation, verdicts and kills
//! live in the core; drawing lives in `ui/`.

mod commands;
mod error;
mod settings;
mod state;
#[cfg(test)]
mod tests;
mod webview_runtime;

use std::path::PathBuf;
use std::sync::Arc;

use tauri::{Builder, Manager, Runtime};

pub use commands::plan;
pub use error::AppError;
pub use settings::Settings;
pub use state::{AppState, Dialogs, Notifier};

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

/// Native dialogs (opened from Rust: the webview holds no dialog permission).
struct NativeDialogs<R: Runtime>(tauri::AppHandle<R>);

impl<R: Runtime> Dialogs for NativeDialogs<R> {
    fn save(&self, what: &str, ext: &str, default_name: String) -> Option<PathBuf> {
        use tauri_plugin_dialog::DialogExt;
        self.0
            .dialog()
            .file()
            .add_filter(what, &[ext])
            .set_file_name(default_name)
            .blocking_save_file()
            .and_then(|p| p.into_path().ok())
    }

    fn open(&self) -> Option<PathBuf> {
        use tauri_plugin_dialog::DialogExt;
        self.0
            .dialog()
            .file()
            .add_filter("debugtop snapshot", &["json"])
            .blocking_pick_file()
            .and_then(|p| p.into_path().ok())
    }

    fn confirm_command(&self, target: &str, command: &str) -> bool {
        use tauri_plugin_dialog::{DialogExt, MessageDialogButtons, MessageDialogKind};
        self.0
            .dialog()
            .message(format!(
                "To show {target}, debugtop runs this command as you, now and every time it \
                 starts:\n\n{command}\n\nRun it only if you typed this target yourself."
            ))
            .title("Run a command for a remote target?")
            .kind(MessageDialogKind::Warning)
            .buttons(MessageDialogButtons::OkCancelCustom(
                "Run it".into(),
                "Cancel".into(),
            ))
            .blocking_show()
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
        .invoke_handler(handlers())
}

/// The window's commands, written once; `extra` adds debug-only ones.
macro_rules! commands {
    ($($extra:tt)*) => {
        tauri::generate_handler![
            commands::subscribe,
            commands::resync,
            commands::subscribe_targets,
            commands::add_target,
            commands::remove_target,
            commands::select_target,
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
            $($extra)*
        ]
    };
}

/// Debug builds also start the repository's demo (`start_demo`).
#[cfg(debug_assertions)]
fn handlers<R: Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    commands!(commands::start_demo)
}

#[cfg(not(debug_assertions))]
fn handlers<R: Runtime>() -> impl Fn(tauri::ipc::Invoke<R>) -> bool + Send + Sync + 'static {
    commands!()
}

/// Where settings live: `DEBUGTOP_CONFIG_DIR` when set (portable setups), else the platform's
/// config directory. Read once, by the binary's setup hook; tests pass their own directory.
fn config_dir<R: Runtime>(app: &tauri::AppHandle<R>) -> PathBuf {
    match std::env::var_os("DEBUGTOP_CONFIG_DIR") {
        Some(d) => PathBuf::from(d),
        None => app
            .path()
            .app_config_dir()
            .unwrap_or_else(|_| std::env::temp_dir().join("debugtop")),
    }
}

/// Creates the state (settings from the config dir), starts the one sampler, and manages it.
/// Called by the setup hook.
pub fn install<R: Runtime>(app: &tauri::AppHandle<R>) -> Result<Arc<AppState>, AppError> {
    // The demo is a development aid: its permission exists only in debug builds.
    #[cfg(debug_assertions)]
    if let Err(e) = app.add_capability(
        tauri::ipc::CapabilityBuilder::new("dev-demo")
            .window("main")
            .permission("allow-start-demo"),
    ) {
        eprintln!("debugtop: the demo button is unavailable: {e}");
    }
    let picker: Arc<dyn Dialogs> = Arc::new(NativeDialogs(app.clone()));
    install_in(app, config_dir(app), picker)
}

/// [`install`] with an explicit config directory and file picker (tests, where no event loop
/// runs the hook and no dialog can be clicked).
pub fn install_in<R: Runtime>(
    app: &tauri::AppHandle<R>,
    dir: PathBuf,
    picker: Arc<dyn Dialogs>,
) -> Result<Arc<AppState>, AppError> {
    let notifier: Arc<dyn Notifier> = Arc::new(DesktopNotifier(app.clone()));
    let state = Arc::new(AppState::new(settings::path_in(dir), notifier, picker));
    let s = Arc::clone(&state);
    tauri::async_runtime::block_on(async move { s.start_sampler() })?;
    state.sync_targets();
    app.manage(Arc::clone(&state));
    Ok(state)
}

/// Without a GPU, WebKitGTK's DMABuf renderer still composites every frame through GL — Mesa's
/// software GL on the CPU — so a tick that changes one line of text cost the web process
/// ~35 ms (measured under Xvfb at a 500 ms interval: 8.0 % of a core, 1.8 % with the renderer
/// off, and 265 → 179 MB resident; BENCHMARKS.md). A window left open all day on a VM or a
/// remote desktop should not pay that: where no GPU render node exists, the renderer is turned
/// off before GTK starts. With a GPU, WebKit's default stands, and a user's own
/// `WEBKIT_DISABLE_DMABUF_RENDERER` (`0` keeps the renderer) is never overridden.
fn render_without_gpu() {
    #[cfg(target_os = "linux")]
    {
        const VAR: &str = "WEBKIT_DISABLE_DMABUF_RENDERER";
        if std::env::var_os(VAR).is_none() && !has_gpu_render_node() {
            // Before any thread is started: nothing else reads the environment yet.
            std::env::set_var(VAR, "1");
        }
    }
}

/// Whether the kernel offers a GPU render node (`/dev/dri/renderD128`, …).
#[cfg(target_os = "linux")]
fn has_gpu_render_node() -> bool {
    std::fs::read_dir("/dev/dri").is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("renderD"))
    })
}

/// Runs the app.
pub fn run() {
    // Without WebView2 (Windows) the window cannot be made: say so before trying.
    if !webview_runtime::present_or_explained() {
        std::process::exit(1);
    }
    render_without_gpu();
    let app = setup(tauri::Builder::default()).run(tauri::generate_context!());
    if let Err(e) = app {
        eprintln!("debugtop: cannot start the window: {e}");
        std::process::exit(1);
    }
}
