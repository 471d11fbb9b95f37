//! Whether a program another target built (the Windows CLI under Wine, the static CLI in the
//! exporter's image) is older than what it was built from. A plain `cargo test` builds only the
//! host's side, so such a test would run yesterday's program; and an edit cargo does not rebuild
//! for (a `#[cfg(test)]` file) must not call the program stale either. Cargo's own dep-info
//! file beside the program (`<name>.d`) lists exactly the sources it was built from.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Sources of `exe` changed after it was built: those cargo's dep-info names (its own crates'
/// files; the lock file for its dependencies), or without one every file under the workspace
/// crates' `src/`, their manifests and the lock file.
fn newer_sources(exe: &Path) -> Vec<PathBuf> {
    let Some(built) = modified(exe) else {
        return Vec::new();
    };
    let sources = dep_info(exe).map_or_else(workspace_sources, |mut named| {
        named.push(workspace_root().join("Cargo.lock"));
        named
    });
    sources
        .into_iter()
        .filter(|p| modified(p).is_some_and(|t| t > built))
        .collect()
}

/// Fails, saying `fix`, when `exe` is older than a source it was built from.
pub fn assert_fresh(exe: &Path, fix: &str) {
    let newer = newer_sources(exe);
    assert!(
        newer.is_empty(),
        "{} is older than {} of the sources it is built from (e.g. {}): {fix}",
        exe.display(),
        newer.len(),
        newer
            .first()
            .map_or_else(String::new, |p| p.display().to_string())
    );
}

/// The sources cargo's `<exe stem>.d` names for `exe`, or `None` without one.
fn dep_info(exe: &Path) -> Option<Vec<PathBuf>> {
    let text = std::fs::read_to_string(exe.with_extension("d")).ok()?;
    let mut out = Vec::new();
    for line in text.lines() {
        // `target: source source…`, a space inside a path escaped as `\ `.
        let Some((_, deps)) = line.split_once(": ") else {
            continue;
        };
        let mut current = String::new();
        let mut chars = deps.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' if chars.peek() == Some(&' ') => {
                    current.push(' ');
                    chars.next();
                }
                ' ' => out.extend(take_path(&mut current)),
                c => current.push(c),
            }
        }
        out.extend(take_path(&mut current));
    }
    (!out.is_empty()).then_some(out)
}

fn take_path(current: &mut String) -> Option<PathBuf> {
    (!current.is_empty()).then(|| PathBuf::from(std::mem::take(current)))
}

/// Every file the CLI could be built from, without dep-info to say which.
fn workspace_sources() -> Vec<PathBuf> {
    let root = workspace_root();
    let mut out = vec![root.join("Cargo.lock")];
    for c in ["model", "redact", "collect", "core", "cli"] {
        let dir = root.join(format!("crates/debugtop-{c}"));
        out.push(dir.join("Cargo.toml"));
        files_under(&dir.join("src"), &mut out);
    }
    out
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn files_under(path: &Path, out: &mut Vec<PathBuf>) {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return;
    };
    if meta.is_dir() {
        for e in std::fs::read_dir(path).into_iter().flatten().flatten() {
            files_under(&e.path(), out);
        }
    } else {
        out.push(path.to_owned());
    }
}

fn modified(p: &Path) -> Option<SystemTime> {
    std::fs::metadata(p).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dep_info_names_only_what_the_program_was_built_from() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("prog.exe");
        let a = dir.path().join("a.rs");
        let spaced = dir.path().join("with space.rs");
        let unrelated = dir.path().join("only_in_tests.rs");
        for p in [&a, &spaced, &exe] {
            std::fs::write(p, "x").unwrap();
        }
        std::fs::write(
            dir.path().join("prog.d"),
            format!(
                "{}: {} {}\n",
                exe.display(),
                a.display(),
                spaced.display().to_string().replace(' ', "\\ ")
            ),
        )
        .unwrap();
        assert_eq!(dep_info(&exe), Some(vec![a.clone(), spaced.clone()]));
        // A file the dep-info does not name, changed after the build, is not stale.
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        std::fs::write(&unrelated, "x").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&unrelated)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(newer_sources(&exe).is_empty());
        // One it names is.
        std::fs::File::options()
            .write(true)
            .open(&spaced)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(newer_sources(&exe), vec![spaced]);
    }
}
