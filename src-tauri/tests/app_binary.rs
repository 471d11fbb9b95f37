//! The app binary the real-window tests drive (`tests/ui`, run by `make test-ui` against
//! `target/debug/debugtop`) is the one this test run builds: an integration test is what makes
//! `cargo test --workspace` build the app's binary, with the features of that same run, so
//! `make test` compiles the app once instead of again with other features. It must embed the
//! current UI build: the window tests would otherwise drive an older window.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_app_binary_built_with_the_tests_embeds_the_current_ui_build() {
    let app = std::fs::read(env!("CARGO_BIN_EXE_debugtop")).expect("the app binary");
    let assets = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../ui/dist/assets");
    let names: Vec<String> = std::fs::read_dir(&assets)
        .unwrap_or_else(|e| panic!("{}: {e} (run `make ui`)", assets.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.is_empty(), "no built UI in {}", assets.display());
    for name in &names {
        // Asset names carry the hash of their content: an older build has other names.
        assert!(
            app.windows(name.len()).any(|w| w == name.as_bytes()),
            "the app does not embed {name} (a UI built after the app?)"
        );
    }
}
