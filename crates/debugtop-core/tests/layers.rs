//! The module graph as policy: data flows one way, and lower layers never import higher ones.
//! Every `crate::<module>` a source file names must sit in a strictly lower layer than the
//! file's own module (or be the module itself). Siblings in one layer do not import each other
//! (`state` is pure: it never reaches `sources` or `collect`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

/// Layer of each top-level module.
fn layer(module: &str) -> Option<u8> {
    Some(match module {
        "error" | "cost" | "win32" => 0,
        "model" | "os" => 1,
        "redact" | "safe_fs" | "delta" => 2,
        "collect" => 3,
        "sources" | "state" => 4,
        "report" | "targets" => 5,
        "actions" | "sampler" => 6,
        "testing" => 7,
        _ => return None,
    })
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut wrong = Vec::new();
    for f in &all {
        let rel = f.strip_prefix(&src).unwrap();
        let own = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_owned();
        // The crate root, and unit-test modules kept in their own file (`mod tests;`).
        if own == "lib" || rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let own_layer = layer(&own).unwrap_or_else(|| panic!("{own} has no layer: add it"));
        let text = std::fs::read_to_string(f).unwrap();
        // Only production code: the unit tests of a module may use the test support.
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for (i, _) in text.match_indices("crate::") {
            let name: String = text[i + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            let Some(l) = layer(&name) else { continue };
            if name != own && l >= own_layer {
                wrong.push(format!(
                    "{}: {own} (layer {own_layer}) uses crate::{name} (layer {l})",
                    rel.display()
                ));
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}
