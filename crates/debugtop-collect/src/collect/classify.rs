//! Role signatures: what a single process *says* it is, from its argv and environment markers
//! alone (docs/server-behaviour.md, "The process chain"). Ancestry (a debuggee is whatever runs under an adapter) is applied
//! later, over the whole table, in [`super::relate`].
//!
//! Pure functions: the same input always gives the same signature, so they are read once per
//! process identity and cached.

use super::parse::{basename, option_value, session_from_run_dir};
use debugtop_model::{parse_pid, session_id, HostKind};
use debugtop_model::{EnvMarkers, Language, ServerMode};

/// What a process's own argv and markers say about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Signature {
    /// An mcp-debugger server.
    Server {
        /// Transport.
        mode: ServerMode,
        /// Port from argv (default 3001 for HTTP/SSE).
        port: Option<u16>,
        /// `--log-file`.
        log_file: Option<String>,
        /// The script token (`…/dist/cli.mjs`, `…/bin/mcp-debugger`).
        script: String,
    },
    /// A proxy worker (upstream's two-factor rule).
    Worker {
        /// `--mcp-owner-pid`.
        owner_pid: u32,
        /// `--mcp-session-id`.
        session_id: Option<String>,
    },
    /// A debug adapter.
    Adapter {
        /// Which adapter.
        language: Language,
        /// The session id, where the process carries one.
        session_id: Option<String>,
        /// The server that started it, where it says so (`--mcp-owner-pid=` on newer js-debug,
        /// `--owner-pid` on the JDI server).
        owner_pid: Option<u32>,
    },
    /// debugpy's launcher.
    Launcher {
        /// Session id from `DEBUGPY_LOG_DIR`.
        session_id: Option<String>,
    },
    /// A debuggee that says so itself (js bootloader, debugpy `--connect`, java tags).
    Debuggee {
        /// Which runtime.
        language: Language,
        /// Session id, where carried.
        session_id: Option<String>,
        /// The server that started it, where it says so (`-Dmcp.debugger.owner_pid=`).
        owner_pid: Option<u32>,
    },
    /// js-debug's watchdog.
    Watchdog {
        /// The debuggee pid named in `NODE_INSPECTOR_INFO`.
        debuggee_pid: Option<u32>,
    },
    /// Nothing recognisable on its own.
    None,
}

/// Should the environment of a process with this argv be read? Only interpreters and known
/// adapter binaries are candidates: reading every process's environment is neither cheap nor
/// polite.
pub fn is_env_candidate(argv: &[String]) -> bool {
    let argv = &*unix_view(argv);
    let Some(first) = argv.first() else {
        return false;
    };
    let b = basename(first);
    b.starts_with("node")
        || b.starts_with("python")
        || matches!(
            b,
            "dlv"
                | "codelldb"
                | "java"
                | "rdbg"
                | "ruby"
                | "dotnet"
                | "netcoredbg"
                | "bun"
                | "deno"
                | "uv"
                | "uvx"
                | "npx"
                | "npm"
        )
        || host_kind(argv).is_some()
        || mcp_hint(argv).is_some()
        || argv
            .iter()
            .any(|a| a.contains("debugpy") || a.contains("js-debug") || a.contains("mcp-debugger"))
}

/// Whether an argument is a Windows path: `C:\\…`, `C:/…` or `\\\\server\\…`.
fn is_windows_path(a: &str) -> bool {
    let b = a.as_bytes();
    (b.len() > 2 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/'))
        || a.starts_with("\\\\")
}

/// A Windows path as the signatures below are written: `/` between components and no `.exe`
/// (`Z:\\n\\node.exe` → `Z:/n/node`). Other arguments are returned as they are.
pub fn unix_slashes(a: &str) -> String {
    if !is_windows_path(a) {
        return a.to_owned();
    }
    let a = a.replace('\\', "/");
    match a.len().checked_sub(4) {
        Some(cut) if a.is_char_boundary(cut) && a[cut..].eq_ignore_ascii_case(".exe") => {
            a[..cut].to_owned()
        }
        _ => a,
    }
}

/// The argv as the signatures read it: Windows paths with `/` and without `.exe`, so one set
/// of signatures serves both (what is shown and kept is the argv as written).
fn unix_view(argv: &[String]) -> std::borrow::Cow<'_, [String]> {
    if argv.iter().any(|a| is_windows_path(a)) {
        std::borrow::Cow::Owned(argv.iter().map(|a| unix_slashes(a)).collect())
    } else {
        std::borrow::Cow::Borrowed(argv)
    }
}

/// Classifies one process from its own argv and markers.
pub fn classify(argv: &[String], env: &EnvMarkers) -> Signature {
    match classify_view(&unix_view(argv), env) {
        // The log file as written: the server opens it by that name.
        Signature::Server {
            mode,
            port,
            log_file: Some(_),
            script,
        } => Signature::Server {
            mode,
            port,
            log_file: option_value(argv, &["--log-file"]).map(str::to_owned),
            script,
        },
        other => other,
    }
}

/// [`classify`] over the argv as the signatures read it.
fn classify_view(argv: &[String], env: &EnvMarkers) -> Signature {
    if argv.is_empty() {
        return Signature::None;
    }
    if let Some(sig) = worker(argv) {
        return sig;
    }
    if let Some(sig) = server(argv) {
        return sig;
    }
    let env_session = env
        .debugpy_log_dir
        .as_deref()
        .and_then(session_from_run_dir);
    if let Some(sig) = adapter(argv, env_session.clone()) {
        return sig;
    }
    under_adapter(argv, env, env_session)
}

/// What runs under an adapter: debugpy's launcher, js-debug's watchdog, a debuggee by its
/// markers (debugpy's `--connect`, the JVM's session tag, js-debug's bootloader).
fn under_adapter(argv: &[String], env: &EnvMarkers, env_session: Option<String>) -> Signature {
    if argv.iter().any(|a| ends_with_path(a, "debugpy/launcher"))
        || module_arg(argv) == Some("debugpy.launcher")
    {
        return Signature::Launcher {
            session_id: env_session,
        };
    }
    if argv.iter().any(|a| {
        a.ends_with("/watchdog.js") && (a.contains("js-debug") || env.inspector_pid.is_some())
    }) {
        return Signature::Watchdog {
            debuggee_pid: env.inspector_pid,
        };
    }
    let python_debuggee = (argv.iter().any(|a| ends_with_path(a, "debugpy"))
        || module_arg(argv) == Some("debugpy"))
        && argv.iter().any(|a| a == "--connect");
    if python_debuggee {
        return Signature::Debuggee {
            language: Language::Python,
            session_id: env_session,
            owner_pid: None,
        };
    }
    if let Some(tag) = argv
        .iter()
        .find_map(|a| a.strip_prefix("-Dmcp.debugger.session_tag="))
    {
        return Signature::Debuggee {
            language: Language::Java,
            session_id: session_id(tag),
            owner_pid: argv
                .iter()
                .find_map(|a| a.strip_prefix("-Dmcp.debugger.owner_pid="))
                .and_then(parse_pid),
        };
    }
    if env.js_bootloader || env.js_inspector {
        return Signature::Debuggee {
            language: Language::Javascript,
            session_id: None,
            owner_pid: None,
        };
    }
    Signature::None
}

/// Upstream's own rule (proxy-reaper): a token containing `proxy-bootstrap` and a valid
/// `--mcp-owner-pid=`.
fn worker(argv: &[String]) -> Option<Signature> {
    if !argv.iter().any(|a| a.contains("proxy-bootstrap")) {
        return None;
    }
    let owner_pid = argv
        .iter()
        .find_map(|a| a.strip_prefix("--mcp-owner-pid="))
        .and_then(parse_pid)?;
    let session_id = argv
        .iter()
        .find_map(|a| a.strip_prefix("--mcp-session-id="))
        .and_then(session_id);
    Some(Signature::Worker {
        owner_pid,
        session_id,
    })
}

/// Is this token mcp-debugger's entry script?
fn is_server_script(tok: &str) -> bool {
    basename(tok) == "mcp-debugger"
        || ((tok.ends_with("/dist/cli.mjs") || tok.ends_with("/dist/cli"))
            && tok.contains("mcp-debugger"))
}

/// `node [node-flags] <script> [mode] [options]`, or the script run directly.
fn server(argv: &[String]) -> Option<Signature> {
    let script_at = if is_server_script(&argv[0]) {
        0
    } else if basename(&argv[0]).starts_with("node") {
        // The first argument that is not a node flag is the script.
        let i = argv.iter().skip(1).position(|a| !a.starts_with('-'))? + 1;
        if !is_server_script(&argv[i]) {
            return None;
        }
        i
    } else {
        return None;
    };
    let rest = &argv[script_at + 1..];
    // `--version`, `--help`, `check-rust-binary`: short-lived commands, not a server.
    if rest.iter().any(|a| {
        matches!(
            a.as_str(),
            "-V" | "--version" | "-h" | "--help" | "help" | "check-rust-binary"
        )
    }) {
        return None;
    }
    let mode = match rest
        .iter()
        .find(|a| !a.starts_with('-'))
        .map(String::as_str)
    {
        Some("http") => ServerMode::Http,
        Some("sse") => ServerMode::Sse,
        _ => ServerMode::Stdio,
    };
    let port = match mode {
        ServerMode::Stdio => None,
        ServerMode::Http | ServerMode::Sse => match option_value(rest, &["-p", "--port"]) {
            Some(p) => p.parse::<u16>().ok().filter(|p| *p != 0),
            None => Some(3001),
        },
    };
    Some(Signature::Server {
        mode,
        port,
        log_file: option_value(rest, &["--log-file"]).map(str::to_owned),
        script: argv[script_at].clone(),
    })
}

fn adapter(argv: &[String], env_session: Option<String>) -> Option<Signature> {
    let has = |f: &dyn Fn(&str) -> bool| argv.iter().any(|a| f(a));
    let tagged_owner = argv
        .iter()
        .find_map(|a| a.strip_prefix("--mcp-owner-pid="))
        .and_then(parse_pid);
    let tagged_session = argv
        .iter()
        .find_map(|a| a.strip_prefix("--mcp-session-id="))
        .and_then(session_id);
    if has(&|a| {
        let b = basename(a);
        b == "vsDebugServer.cjs" || b == "vsDebugServer.js" || b == "vsDebugServer"
    }) {
        // Newer servers tag js-debug like a worker (`--mcp-owner-pid= --mcp-session-id=`).
        return Some(Signature::Adapter {
            language: Language::Javascript,
            session_id: tagged_session.or(env_session),
            owner_pid: tagged_owner,
        });
    }
    if has(&|a| {
        let b = basename(a);
        b == "mock-adapter-process.cjs" || b == "mock-adapter-process.js"
    }) {
        return Some(Signature::Adapter {
            language: Language::Mock,
            session_id: option_value(argv, &["--session"]).and_then(session_id),
            owner_pid: tagged_owner,
        });
    }
    let language = other_adapter_language(argv)?;
    let owner_pid =
        tagged_owner.or_else(|| option_value(argv, &["--owner-pid"]).and_then(parse_pid));
    Some(Signature::Adapter {
        language,
        session_id: tagged_session.or(env_session),
        owner_pid,
    })
}

/// The language of an adapter that is neither js-debug nor the mock (those carry their own
/// tags), by its command line.
fn other_adapter_language(argv: &[String]) -> Option<Language> {
    let first = basename(&argv[0]);
    let has = |f: &dyn Fn(&str) -> bool| argv.iter().any(|a| f(a));
    Some(
        if module_arg(argv) == Some("debugpy.adapter")
            || has(&|a| ends_with_path(a, "debugpy/adapter"))
        {
            Language::Python
        } else if first == "dlv" && has(&|a| a == "dap") {
            Language::Go
        } else if first == "codelldb" || has(&|a| basename(a) == "codelldb") {
            Language::Lldb
        } else if has(&|a| a == "JdiDapServer" || a.ends_with(".JdiDapServer")) {
            Language::Java
        } else if has(&|a| basename(a) == "netcoredbg-bridge.js") {
            Language::Dotnet
        } else if has(&|a| basename(a) == "dap-stdio-bridge.js") {
            // `node …/dap-stdio-bridge.js --port N -- dart|flutter debug_adapter` (newer
            // servers): no owner tag; its parent worker ties it to its session.
            Language::Dart
        } else if (first == "rdbg" || has(&|a| a.ends_with("/rdbg")))
            && has(&|a| a.starts_with("--open"))
        {
            Language::Ruby
        } else {
            return None;
        },
    )
}

/// What kind of MCP host argv names (labels only; never a condition for a verdict).
pub fn host_kind(argv: &[String]) -> Option<HostKind> {
    let names: Vec<&str> = argv.iter().take(2).map(|a| basename(a)).collect();
    let is = |n: &str| {
        names
            .iter()
            .any(|b| *b == n || b.starts_with(&format!("{n}-")))
    };
    if is("opencode") {
        Some(HostKind::Opencode)
    } else if is("claude") {
        Some(HostKind::ClaudeCode)
    } else if is("codex") {
        Some(HostKind::Codex)
    } else if is("cursor") || is("Cursor") {
        Some(HostKind::Cursor)
    } else if is("code") {
        Some(HostKind::VsCode)
    } else if argv.iter().take(4).any(|a| {
        a.contains("@modelcontextprotocol/inspector") || a.ends_with("/inspector/cli/build/cli.js")
    }) {
        Some(HostKind::McpInspector)
    } else {
        None
    }
}

/// An argument that names MCP: a package of the MCP organisation, an `mcp-server-…` or
/// `…-mcp` program. mcp-debugger's own processes (known by their signatures) and MCP hosts
/// are not "hinted" servers.
pub fn mcp_hint(argv: &[String]) -> Option<&str> {
    if host_kind(argv).is_some() {
        return None;
    }
    argv.iter().take(6).map(String::as_str).find(|a| {
        let b = basename(a).to_ascii_lowercase();
        let lower = a.to_ascii_lowercase();
        !lower.contains("mcp-debugger")
            && !lower.contains("proxy-bootstrap")
            && (lower.contains("@modelcontextprotocol/")
                || lower.contains("modelcontextprotocol")
                || b.starts_with("mcp-server")
                || b.starts_with("mcp_server")
                || b.ends_with("-mcp")
                || b.ends_with("_mcp")
                || b.contains("-mcp-server")
                || b == "mcp")
    })
}

/// The module after `-m` (`python -m debugpy.adapter`).
fn module_arg(argv: &[String]) -> Option<&str> {
    let i = argv.iter().position(|a| a == "-m")?;
    argv.get(i + 1).map(String::as_str)
}

/// `a` is a path ending in the components `suffix` (also with a trailing `/` or `/__main__.py`).
fn ends_with_path(a: &str, suffix: &str) -> bool {
    let a = a
        .strip_suffix("/__main__.py")
        .unwrap_or(a)
        .trim_end_matches('/');
    a == suffix || a.ends_with(&format!("/{suffix}"))
}

/// The package directory (the folder holding `dist/cli.mjs`) from a resolved script path.
pub fn pkg_dir_of(script: &str) -> Option<String> {
    script
        .strip_suffix("/dist/cli.mjs")
        .or_else(|| script.strip_suffix("/dist/cli"))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }
    fn none() -> EnvMarkers {
        EnvMarkers::default()
    }

    #[test]
    fn server_forms() {
        let s = classify(&v("node /x/node_modules/@debugmcp/mcp-debugger/dist/cli.mjs http -p 3901 --log-file /l/s.log"), &none());
        assert_eq!(
            s,
            Signature::Server {
                mode: ServerMode::Http,
                port: Some(3901),
                log_file: Some("/l/s.log".into()),
                script: "/x/node_modules/@debugmcp/mcp-debugger/dist/cli.mjs".into()
            }
        );
        let s = classify(
            &v("/usr/bin/node --max-old-space-size=100 /usr/local/bin/mcp-debugger http"),
            &none(),
        );
        assert!(
            matches!(
                s,
                Signature::Server {
                    mode: ServerMode::Http,
                    port: Some(3001),
                    ..
                }
            ),
            "{s:?}"
        );
        let s = classify(&v("node /p/mcp-debugger/dist/cli stdio"), &none());
        assert!(matches!(
            s,
            Signature::Server {
                mode: ServerMode::Stdio,
                port: None,
                ..
            }
        ));
        let s = classify(&v("node /p/mcp-debugger/dist/cli.mjs"), &none());
        assert!(matches!(
            s,
            Signature::Server {
                mode: ServerMode::Stdio,
                ..
            }
        ));
        let s = classify(
            &v("node /p/mcp-debugger/dist/cli.mjs sse --port=4000"),
            &none(),
        );
        assert!(matches!(
            s,
            Signature::Server {
                mode: ServerMode::Sse,
                port: Some(4000),
                ..
            }
        ));
    }

    #[test]
    fn not_servers() {
        for argv in [
            "node /p/mcp-debugger/dist/cli.mjs --version",
            "npm exec mcp-debugger",
            "node /srv/app.js /p/mcp-debugger/dist/cli.mjs",
            "vim /p/mcp-debugger/dist/cli.mjs",
            "node",
        ] {
            assert_eq!(classify(&v(argv), &none()), Signature::None, "{argv}");
        }
        // A bad port is kept as unknown, not a failure.
        let s = classify(
            &v("node /p/mcp-debugger/dist/cli.mjs http -p 99999"),
            &none(),
        );
        assert!(matches!(s, Signature::Server { port: None, .. }));
    }

    #[test]
    fn worker_needs_both_factors() {
        let s = classify(
            &v("/usr/bin/node --trace-uncaught --trace-exit /p/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=4242 --mcp-session-id=b85b4926-1"),
            &none(),
        );
        assert_eq!(
            s,
            Signature::Worker {
                owner_pid: 4242,
                session_id: Some("b85b4926-1".into())
            }
        );
        assert_eq!(
            classify(&v("node /p/proxy-bootstrap.js"), &none()),
            Signature::None
        );
        assert_eq!(
            classify(&v("node /p/proxy-bootstrap.js --mcp-owner-pid"), &none()),
            Signature::None
        );
        assert_eq!(
            classify(&v("node /p/proxy-bootstrap.js --mcp-owner-pid=-3"), &none()),
            Signature::None
        );
        assert_eq!(
            classify(
                &v("node /p/proxy-bootstrap.js --mcp-owner-pid=abc"),
                &none()
            ),
            Signature::None
        );
        assert_eq!(
            classify(&v("node /p/other.js --mcp-owner-pid=12"), &none()),
            Signature::None
        );
        let s = classify(
            &v("node /p/proxy-bootstrap.js --mcp-owner-pid=12 --mcp-session-id=<script>"),
            &none(),
        );
        assert_eq!(
            s,
            Signature::Worker {
                owner_pid: 12,
                session_id: None
            }
        );
    }

    #[test]
    fn adapters_of_every_language() {
        let cases = [
            (
                "node /p/dist/vendor/js-debug/vsDebugServer.cjs 4711 127.0.0.1",
                Language::Javascript,
            ),
            (
                "python3 -m debugpy.adapter --host 127.0.0.1 --port 5678",
                Language::Python,
            ),
            ("dlv dap --listen=127.0.0.1:3000", Language::Go),
            ("/home/u/.vscode/codelldb --port 4000", Language::Lldb),
            (
                "java -cp x.jar dev.mcp.JdiDapServer --port 1 --owner-pid 3",
                Language::Java,
            ),
            ("node /p/netcoredbg-bridge.js --port 3", Language::Dotnet),
            ("rdbg --open --port 12345 -- app.rb", Language::Ruby),
        ];
        for (argv, lang) in cases {
            let owner = argv.contains("--owner-pid 3").then_some(3);
            assert_eq!(
                classify(&v(argv), &none()),
                Signature::Adapter {
                    language: lang,
                    session_id: None,
                    owner_pid: owner
                },
                "{argv}"
            );
        }
        let mock = classify(
            &v("node /p/dist/mock-adapter-process.cjs --port 1 --host 127.0.0.1 --session abc-1"),
            &none(),
        );
        assert_eq!(
            mock,
            Signature::Adapter {
                language: Language::Mock,
                session_id: Some("abc-1".into()),
                owner_pid: None
            }
        );
        let env = EnvMarkers {
            debugpy_log_dir: Some("/l/sessions/s-9/run-1".into()),
            ..none()
        };
        assert_eq!(
            classify(&v("python -m debugpy.adapter"), &env),
            Signature::Adapter {
                language: Language::Python,
                session_id: Some("s-9".into()),
                owner_pid: None
            }
        );
    }

    #[test]
    fn launcher_debuggee_watchdog() {
        let env = EnvMarkers {
            debugpy_log_dir: Some("/l/sessions/s-9/run-1".into()),
            ..none()
        };
        assert_eq!(
            classify(&v("python /site/debugpy/launcher 4711 -- app.py"), &env),
            Signature::Launcher {
                session_id: Some("s-9".into())
            }
        );
        assert_eq!(
            classify(&v("python -X frozen_modules=off /site/debugpy --connect 127.0.0.1:5 --adapter-access-token t app.py"), &env),
            Signature::Debuggee { language: Language::Python, session_id: Some("s-9".into()), owner_pid: None }
        );
        let js = EnvMarkers {
            js_bootloader: true,
            ..none()
        };
        assert_eq!(
            classify(&v("node ./script.js"), &js),
            Signature::Debuggee {
                language: Language::Javascript,
                session_id: None,
                owner_pid: None
            }
        );
        let wd = EnvMarkers {
            inspector_pid: Some(77),
            ..none()
        };
        assert_eq!(
            classify(&v("node /p/js-debug/watchdog.js"), &wd),
            Signature::Watchdog {
                debuggee_pid: Some(77)
            }
        );
        assert_eq!(
            classify(&v("node /srv/watchdog.js"), &none()),
            Signature::None
        );
    }

    #[test]
    fn the_dart_bridge_is_an_untagged_adapter_and_a_look_alike_name_is_not() {
        let s = classify(
            &v("node /p/dist/adapters/dart/dap-stdio-bridge.js --port 5000 --cwd /w -- flutter debug_adapter"),
            &none(),
        );
        assert_eq!(
            s,
            Signature::Adapter {
                language: Language::Dart,
                session_id: None,
                owner_pid: None
            }
        );
        assert_eq!(
            classify(&v("node /srv/dap-stdio-bridge.json"), &none()),
            Signature::None
        );
        assert_eq!(Language::from_server_name("flutter"), Some(Language::Dart));
        assert_eq!(Language::from_server_name("dart"), Some(Language::Dart));
    }

    #[test]
    fn newer_servers_tag_js_debug_and_the_jvm() {
        let s = classify(
            &v("node /p/vendor/js-debug/vsDebugServer.cjs 4711 127.0.0.1 --mcp-owner-pid=812 --mcp-session-id=s-7"),
            &none(),
        );
        assert_eq!(
            s,
            Signature::Adapter {
                language: Language::Javascript,
                session_id: Some("s-7".into()),
                owner_pid: Some(812)
            }
        );
        let s = classify(
            &v("java -Dmcp.debugger.jvm=true -Dmcp.debugger.owner_pid=812 -Dmcp.debugger.session_tag=s-8 -cp app.jar Main"),
            &none(),
        );
        assert_eq!(
            s,
            Signature::Debuggee {
                language: Language::Java,
                session_id: Some("s-8".into()),
                owner_pid: Some(812)
            }
        );
        let inspector = EnvMarkers {
            js_inspector: true,
            ..none()
        };
        assert!(matches!(
            classify(&v("node ./child.js"), &inspector),
            Signature::Debuggee {
                language: Language::Javascript,
                ..
            }
        ));
    }

    #[test]
    fn mcp_hints_and_host_labels_from_argv() {
        for (argv, hint) in [
            (
                "node /n/@modelcontextprotocol/server-memory/dist/index.js",
                true,
            ),
            ("/v/bin/python3 /v/bin/mcp-server-time", true),
            ("npx -y @modelcontextprotocol/server-filesystem /tmp", true),
            ("/usr/local/bin/github-mcp-server stdio", true),
            ("uvx mcp-server-fetch", true),
            ("node /p/mcp-debugger/dist/cli.mjs stdio", false),
            ("node /srv/app.js", false),
            (
                "node /p/dist/proxy/proxy-bootstrap.js --mcp-owner-pid=1",
                false,
            ),
            ("vim notes-about-mcp.txt", false),
        ] {
            assert_eq!(mcp_hint(&v(argv)).is_some(), hint, "{argv}");
        }
        assert_eq!(
            host_kind(&v("/home/u/.opencode/bin/opencode")),
            Some(HostKind::Opencode)
        );
        assert_eq!(
            host_kind(&v(
                "node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"
            )),
            None
        );
        assert_eq!(host_kind(&v("claude --resume")), Some(HostKind::ClaudeCode));
        assert_eq!(
            host_kind(&v("/usr/share/code/code --type=utility")),
            Some(HostKind::VsCode)
        );
        assert_eq!(host_kind(&v("node /srv/app.js")), None);
    }

    #[test]
    fn env_candidates() {
        assert!(is_env_candidate(&v("/usr/bin/node x")));
        assert!(is_env_candidate(&v("python3.11 -m x")));
        assert!(is_env_candidate(&v("dlv dap")));
        assert!(!is_env_candidate(&v("/bin/bash -l")));
        assert!(!is_env_candidate(&[]));
    }

    #[test]
    fn pkg_dir() {
        assert_eq!(
            pkg_dir_of("/a/mcp-debugger/dist/cli.mjs").as_deref(),
            Some("/a/mcp-debugger")
        );
        assert_eq!(
            pkg_dir_of("/a/mcp-debugger/dist/cli").as_deref(),
            Some("/a/mcp-debugger")
        );
        assert_eq!(pkg_dir_of("/usr/bin/mcp-debugger"), None);
    }

    #[test]
    fn windows_command_lines_have_the_same_roles() {
        let pkg = r"C:\Users\me\AppData\Roaming\npm\node_modules\@debugmcp\mcp-debugger";
        let node = r"C:\Program Files\nodejs\node.exe";
        let argv = |rest: &[&str]| -> Vec<String> {
            std::iter::once(node)
                .chain(rest.iter().copied())
                .map(String::from)
                .collect()
        };
        let server = classify(
            &argv(&[
                &format!(r"{pkg}\dist\cli.mjs"),
                "http",
                "-p",
                "3901",
                "--log-file",
                r"C:\l\s.log",
            ]),
            &none(),
        );
        assert_eq!(
            server,
            Signature::Server {
                mode: ServerMode::Http,
                port: Some(3901),
                // The log file as written: the server opens it by that name.
                log_file: Some(r"C:\l\s.log".into()),
                script: format!("{}/dist/cli.mjs", pkg.replace('\\', "/")),
            }
        );
        assert_eq!(
            pkg_dir_of(match &server {
                Signature::Server { script, .. } => script,
                _ => unreachable!(),
            }),
            Some(pkg.replace('\\', "/"))
        );
        let worker = classify(
            &argv(&[
                "--trace-uncaught",
                &format!(r"{pkg}\dist\proxy\proxy-bootstrap.js"),
                "--mcp-owner-pid=32",
                "--mcp-session-id=638a18ef-0000-4000-8000-000000000001",
            ]),
            &none(),
        );
        assert!(
            matches!(worker, Signature::Worker { owner_pid: 32, .. }),
            "{worker:?}"
        );
        let mock = classify(
            &argv(&[
                &format!(r"{pkg}\dist\mock-adapter-process.cjs"),
                "--port",
                "1",
                "--session",
                "638a18ef-0000-4000-8000-000000000001",
            ]),
            &none(),
        );
        assert!(
            matches!(
                mock,
                Signature::Adapter {
                    language: Language::Mock,
                    ..
                }
            ),
            "{mock:?}"
        );
        let py = classify(&v(r"C:\Python312\python.exe -m debugpy.adapter"), &none());
        assert!(
            matches!(
                py,
                Signature::Adapter {
                    language: Language::Python,
                    ..
                }
            ),
            "{py:?}"
        );
        let dlv = classify(&v(r"C:\Go\bin\dlv.exe dap --listen=127.0.0.1:1"), &none());
        assert!(
            matches!(
                dlv,
                Signature::Adapter {
                    language: Language::Go,
                    ..
                }
            ),
            "{dlv:?}"
        );
        assert!(is_env_candidate(&v(r"C:\Go\bin\dlv.exe dap")));
        // A shell shim is not the server: the node it starts is.
        assert_eq!(
            classify(
                &v(r"C:\Windows\system32\cmd.exe /d /s /c mcp-debugger.cmd stdio"),
                &none()
            ),
            Signature::None
        );
        // Near miss: a Linux argument with a backslash is not a Windows path.
        assert_eq!(unix_slashes(r"a\b.exe"), r"a\b.exe");
        assert_eq!(unix_slashes(r"Z:\n\node.EXE"), "Z:/n/node");
    }
}
