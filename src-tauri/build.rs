fn main() {
    // Declaring the app's commands makes each one need an explicit permission in
    // capabilities/: nothing is invokable by default.
    let attrs = tauri_build::Attributes::new()
        .app_manifest(tauri_build::AppManifest::new().commands(&["first_snapshot"]));
    if let Err(e) = tauri_build::try_build(attrs) {
        // build scripts report through stderr and a non-zero exit
        eprintln!("tauri-build failed: {e:#}");
        std::process::exit(1);
    }
}
