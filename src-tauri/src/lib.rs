//! The desktop app: Tauri wiring over `debugtop-core`, nothing more. Collection, reconciliation
//! and verdicts live in the core; drawing lives in `ui/`.

mod commands;
mod error;

use tauri::{Builder, Runtime};

pub use error::AppError;

/// Registers state and commands on a builder. Generic over the runtime so tests can pass
/// `tauri::test::mock_builder()`.
pub fn setup<R: Runtime>(builder: Builder<R>) -> Builder<R> {
    builder.invoke_handler(tauri::generate_handler![commands::first_snapshot])
}

/// Runs the app.
pub fn run() {
    let app = setup(tauri::Builder::default()).run(tauri::generate_context!());
    if let Err(e) = app {
        eprintln!("debugtop: cannot start the window: {e}");
        std::process::exit(1);
    }
}
