//! The app binary the real-window tests drive (`tests/ui`, run by `make test-ui` against
//! `target/debug/debugtop`) is the one this test run builds: an integration test is what makes
//! `cargo test --workspace` build the app's binary, with the features of that same run, so
//! `make test` compiles the app once instead of again with other features.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_app_binary_is_built_with_the_tests() {
    let app = std::path::Path::new(env!("CARGO_BIN_EXE_debugtop"));
    let meta = std::fs::metadata(app).expect("the app binary");
    assert!(
        meta.is_file() && meta.len() > 1_000_000,
        "{}",
        app.display()
    );
    assert!(
        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0,
        "executable"
    );
}
