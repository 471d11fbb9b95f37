//! The module graph as policy: data flows one way, and lower layers never import higher ones.
//! Below the engine are crates of their own — `debugtop-model`, `debugtop-redact`,
//! `debugtop-collect` — whose order Cargo holds; the engine re-exports them (`crate::model`,
//! `crate::redact`, `crate::collect`, `crate::os`, `crate::safe_fs`, `crate::win32`) and any of
//! its modules may name them, except that `state` is pure: it never reaches the OS layer. Within
//! the engine, every `crate::<module>` a source file names must sit in a strictly lower layer
//! than the file's own module (or be the module itself). Siblings in one layer do not import
//! each other (`state` never reaches `sources`).
//!
//! Files are parsed (`syn`), not searched: every production item is read — an item marked
//! `#[cfg(test)]` is skipped wherever it is, not the rest of the file after it, and a file is
//! test-only when the `mod` that declares it is (whatever its name) — and every way of naming a
//! module counts: paths in code and types, `use crate::x`, grouped `use crate::{x, y::z}`,
//! `super::x` in a top-level module's own file, a glob `use crate::*` (everything), and paths
//! inside macro invocations (`format!`, `matches!`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use quote::ToTokens;
use syn::visit::{self, Visit};

/// Layer of each top-level module.
fn layer(module: &str) -> Option<u8> {
    Some(match module {
        // The crates below the engine, re-exported.
        "model" | "redact" => 0,
        "win32" | "os" | "safe_fs" | "collect" => 1,
        "error" | "judging" => 2,
        "delta" => 3,
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

/// Whether attributes make an item test-only (`#[cfg(test)]`, `#[cfg(all(test, …))]`).
fn test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.meta.require_list().is_ok_and(|l| {
                let t = l.tokens.to_string();
                t == "test" || t.starts_with("all (test") || t.starts_with("all(test")
            })
    })
}

/// The top-level modules a file's production code names through `crate::` (and, in a
/// top-level module's own file, through `super::`, which is the crate there); and the string
/// literals of that code that name `/proc` (macro arguments included).
#[derive(Default)]
struct Named(BTreeSet<String>, bool, Vec<String>);

impl Named {
    fn in_tokens(&mut self, tokens: &str) {
        let mut rest = tokens;
        while let Some(i) = rest.find("crate ::") {
            rest = &rest[i + "crate ::".len()..];
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                self.0.insert(name);
            }
        }
    }

    fn use_tree(&mut self, t: &syn::UseTree, under_crate: bool) {
        match t {
            syn::UseTree::Path(p) if !under_crate => {
                let root = p.ident == "crate" || (self.1 && p.ident == "super");
                self.use_tree(&p.tree, root)
            }
            syn::UseTree::Glob(_) if under_crate => {
                self.0.insert("*".into());
            }
            syn::UseTree::Path(p) => {
                self.0.insert(p.ident.to_string());
            }
            syn::UseTree::Name(n) if under_crate => {
                self.0.insert(n.ident.to_string());
            }
            syn::UseTree::Rename(r) if under_crate => {
                self.0.insert(r.ident.to_string());
            }
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(item, under_crate);
                }
            }
            _ => {}
        }
    }
}

impl<'ast> Visit<'ast> for Named {
    fn visit_item(&mut self, i: &'ast syn::Item) {
        let attrs = match i {
            syn::Item::Fn(x) => &x.attrs,
            syn::Item::Mod(x) => &x.attrs,
            syn::Item::Use(x) => &x.attrs,
            syn::Item::Impl(x) => &x.attrs,
            syn::Item::Struct(x) => &x.attrs,
            syn::Item::Enum(x) => &x.attrs,
            syn::Item::Const(x) => &x.attrs,
            syn::Item::Static(x) => &x.attrs,
            syn::Item::Trait(x) => &x.attrs,
            syn::Item::Type(x) => &x.attrs,
            syn::Item::Macro(x) => &x.attrs,
            _ => return visit::visit_item(self, i),
        };
        if !test_only(attrs) {
            visit::visit_item(self, i);
        }
    }

    fn visit_impl_item(&mut self, i: &'ast syn::ImplItem) {
        let attrs = match i {
            syn::ImplItem::Fn(x) => &x.attrs,
            syn::ImplItem::Const(x) => &x.attrs,
            syn::ImplItem::Type(x) => &x.attrs,
            _ => return visit::visit_impl_item(self, i),
        };
        if !test_only(attrs) {
            visit::visit_impl_item(self, i);
        }
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        self.use_tree(&u.tree, false);
    }

    fn visit_path(&mut self, p: &'ast syn::Path) {
        let root = |i: &syn::Ident| i == "crate" || (self.1 && i == "super");
        if p.segments.len() > 1 && root(&p.segments[0].ident) {
            self.0.insert(p.segments[1].ident.to_string());
        }
        visit::visit_path(self, p);
    }

    fn visit_lit_str(&mut self, l: &'ast syn::LitStr) {
        let v = l.value();
        if v == "/proc" || v.starts_with("/proc/") {
            self.2.push(l.value());
        }
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        let tokens = m.tokens.to_token_stream().to_string();
        self.2.extend(
            tokens
                .match_indices("\"/proc")
                .filter(|(i, m)| matches!(tokens[i + m.len()..].chars().next(), Some('/' | '"')))
                .map(|(i, _)| tokens[i..].chars().take(40).collect::<String>()),
        );
        self.in_tokens(&tokens);
        if self.1 {
            self.in_tokens(&tokens.replace("super ::", "crate ::"));
        }
        visit::visit_macro(self, m);
    }
}

/// The modules `text` (one file) names through `crate::` outside its test-only items;
/// `top_level`: the file is a top-level module's own (`src/x.rs`, `src/x/mod.rs`), where
/// `super::` is the crate.
fn named(text: &str, top_level: bool) -> BTreeSet<String> {
    read(text, top_level).0
}

fn read(text: &str, top_level: bool) -> Named {
    let file = syn::parse_file(text).unwrap_or_else(|e| panic!("does not parse: {e}"));
    let mut n = Named(BTreeSet::new(), top_level, Vec::new());
    n.visit_file(&file);
    n
}

/// The `/proc` paths `text`'s production code names.
fn proc_paths(text: &str) -> Vec<String> {
    read(text, false).2
}

/// The files only tests compile: those a `#[cfg(test)] mod x;` declares, and everything under
/// them — found from the crate root down, whatever the files are called.
fn test_only_files(src: &Path) -> BTreeSet<PathBuf> {
    let mut out = BTreeSet::new();
    let mut todo = vec![(src.join("lib.rs"), false)];
    while let Some((file, test)) = todo.pop() {
        if test {
            out.insert(file.clone());
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        // A `foo.rs` declares its modules in `foo/`; `lib.rs` and `mod.rs` in their folder.
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let dir = if stem == "lib" || stem == "mod" {
            file.parent().unwrap().to_path_buf()
        } else {
            file.with_extension("")
        };
        for item in &parsed.items {
            let syn::Item::Mod(m) = item else { continue };
            if m.content.is_some() {
                continue;
            }
            let name = m.ident.to_string();
            let child = [
                dir.join(format!("{name}.rs")),
                dir.join(&name).join("mod.rs"),
            ]
            .into_iter()
            .find(|p| p.exists());
            if let Some(child) = child {
                todo.push((child, test || test_only(&m.attrs)));
            }
        }
    }
    out
}

#[test]
fn every_production_line_and_every_form_of_import_is_read() {
    let text = r#"
        use crate::model::Proc;
        use crate::{state::State, sources};
        #[cfg(test)]
        mod tests { use crate::testing::at; }
        fn f() -> String { format!("{:?}", crate::actions::audit::SAMPLES) }
        #[cfg(test)]
        fn only_in_tests() { crate::sampler::x(); }
        fn after_the_tests() { crate::targets::Engines::from_env(); }
    "#;
    let got: Vec<String> = named(text, false).into_iter().collect();
    assert_eq!(got, ["actions", "model", "sources", "state", "targets"]);
    // In a top-level module's own file `super::` is the crate; a glob names everything.
    let text = "use super::sampler::x; fn f() { super::report::y(); } use crate::*;";
    let got: Vec<String> = named(text, true).into_iter().collect();
    assert_eq!(got, ["*", "report", "sampler"]);
    assert!(
        named("use super::x::y;", false).is_empty(),
        "deeper, super is not the crate"
    );
}

#[test]
fn a_file_is_test_only_when_its_mod_is_whatever_its_name() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let test_only = test_only_files(&src);
    assert!(test_only.contains(&src.join("state/rules/tests.rs")));
    assert!(test_only.contains(&src.join("state/redaction_tests.rs")));
    assert!(!test_only.contains(&src.join("state/reconcile.rs")));
    assert!(!test_only.contains(&src.join("state/timeline.rs")));
}

/// The engine's source folder, every file in it, and those only tests compile.
fn engine_files() -> (PathBuf, Vec<PathBuf>, BTreeSet<PathBuf>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let test_only = test_only_files(&src);
    (src, all, test_only)
}

#[test]
fn lower_layers_never_import_higher_ones() {
    let (src, all, test_only) = engine_files();
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
        // The crate root, test-only modules kept in their own file (`#[cfg(test)] mod x;`),
        // and `src/bin`: a binary is a crate of its own, which uses this one by its name.
        if own == "lib" || own == "bin" || test_only.contains(f) {
            continue;
        }
        let own_layer = layer(&own).unwrap_or_else(|| panic!("{own} has no layer: add it"));
        let text = std::fs::read_to_string(f).unwrap();
        let top_level = rel.components().count() == 1
            || rel.ends_with("mod.rs") && rel.components().count() == 2;
        for name in named(&text, top_level) {
            let l = if name == "*" {
                Some(u8::MAX)
            } else {
                layer(&name)
            };
            let Some(l) = l else { continue };
            // The pure step never reaches the OS.
            let os = matches!(name.as_str(), "win32" | "os" | "safe_fs" | "collect");
            if name != own && (l >= own_layer || (own == "state" && os)) {
                wrong.push(format!(
                    "{}: {own} (layer {own_layer}) uses crate::{name} (layer {l})",
                    rel.display()
                ));
            }
        }
    }
    wrong.sort();
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn a_proc_path_is_found_in_production_code_only() {
    let text = r#"
        fn reads() -> String { std::fs::read_to_string("/proc/self/status").unwrap() }
        fn formats(pid: u32) -> String { format!("/proc/{pid}/ns/net") }
        fn elsewhere() -> &'static str { "/process" }
        #[cfg(test)]
        fn in_a_test() { let _ = "/proc/1/stat"; }
    "#;
    let found = proc_paths(text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[1].starts_with("\"/proc/{pid}/ns/net\""), "{found:?}");
}

/// The OS is read in `debugtop-collect`: the engine names no `/proc` path of its own.
#[test]
fn the_engine_reads_no_proc_path_itself() {
    let (src, all, test_only) = engine_files();
    let mut wrong = Vec::new();
    for f in all.iter().filter(|f| !test_only.contains(*f)) {
        let text = std::fs::read_to_string(f).unwrap();
        for p in proc_paths(&text) {
            wrong.push(format!("{}: {p}", f.strip_prefix(&src).unwrap().display()));
        }
    }
    assert!(
        wrong.is_empty(),
        "/proc read outside debugtop-collect:\n{}",
        wrong.join("\n")
    );
}
