fn main() {
    // Declaring the app's commands makes each one need an explicit permission in
    // capabilities/: nothing is invokable by default.
    let attrs =
        tauri_build::Attributes::new().app_manifest(tauri_build::AppManifest::new().commands(&[
            "subscribe",
            "resync",
            "subscribe_targets",
            "add_target",
            "remove_target",
            "select_target",
            "current_snapshot",
            "plan_kill",
            "execute_kill",
            "run_audit",
            "export_snapshot",
            "open_snapshot",
            "close_snapshot",
            "get_settings",
            "set_settings",
            "set_paused",
            "start_demo",
        ]));
    if let Err(e) = tauri_build::try_build(attrs) {
        eprintln!("tauri-build failed: {e:#}");
        std::process::exit(1);
    }
}
