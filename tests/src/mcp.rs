//! The real `@debugmcp/mcp-debugger@0.24.2` (installed from the npm registry into
//! `tests/node_modules` by `make test`) and a real MCP client (rmcp, Streamable HTTP).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use nix::sys::signal::Signal;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{json, Value};

use crate::procs::{signal_if_same, start_ticks, wait_for, Spawned};

/// The installed package directory (`…/node_modules/@debugmcp/mcp-debugger`).
pub fn package_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("node_modules/@debugmcp/mcp-debugger");
    assert!(
        dir.join("dist/cli.mjs").exists(),
        "the real mcp-debugger is not installed at {}: run `make test` (or `npm ci --prefix tests`)",
        dir.display()
    );
    dir
}

/// A free loopback port.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("free port")
}

/// `GET /health` of a server on a loopback port, parsed.
pub fn health_at(port: u16) -> std::io::Result<Value> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(2)))?;
    s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
    let mut body = String::new();
    s.read_to_string(&mut body)?;
    let json = body.split("\r\n\r\n").nth(1).unwrap_or("");
    serde_json::from_str(json).map_err(std::io::Error::other)
}

/// The TCP ports `pid` listens on: `/proc/net/tcp{,6}` rows in state LISTEN whose socket is
/// one of its fds.
pub fn listening_ports(pid: u32) -> Vec<u16> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_link(e.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_owned())
        })
        .collect();
    let mut ports = Vec::new();
    for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
        let text = std::fs::read_to_string(table).unwrap_or_default();
        for row in text.lines().skip(1) {
            let f: Vec<&str> = row.split_whitespace().collect();
            if f.len() > 9 && f[3] == "0A" && inodes.iter().any(|i| i == f[9]) {
                let port = f[1]
                    .rsplit(':')
                    .next()
                    .and_then(|h| u16::from_str_radix(h, 16).ok());
                ports.extend(port);
            }
        }
    }
    ports
}

/// A running mcp-debugger in HTTP mode, owned by the test.
#[derive(Debug)]
pub struct Server {
    /// The node process.
    pub proc: Spawned,
    /// Its port.
    pub port: u16,
    /// `--log-file`.
    pub log_file: PathBuf,
    /// Folder holding the log and session run dirs.
    pub dir: tempfile::TempDir,
}

impl Server {
    /// Starts the server with `MCP_HTTP_STALE_SESSION_MS=stale_ms` and waits for `/health`.
    pub fn start(stale_ms: u64) -> Self {
        Self::start_on(stale_ms, free_port())
    }

    /// Starts the server with `-p 0` (the system picks the port; 0.25 prints it only on
    /// stderr) and finds the port it listens on from its own sockets.
    pub fn start_on_any_port(stale_ms: u64) -> Self {
        let mut server = Self::start_on(stale_ms, 0);
        server.port = wait_for(Duration::from_secs(30), || {
            listening_ports(server.proc.pid).into_iter().next()
        })
        .expect("the server never listened");
        wait_for(Duration::from_secs(30), || server.health().ok())
            .expect("server never answered /health");
        server
    }

    fn start_on(stale_ms: u64, port: u16) -> Self {
        let pkg = package_dir();
        let dir = tempfile::tempdir().expect("tempdir");
        let log_file = dir.path().join("server.log");
        let mut cmd = Command::new("node");
        cmd.arg(pkg.join("dist/cli.mjs"))
            .args(["http", "-p", &port.to_string(), "--log-file"])
            .arg(&log_file)
            .env("MCP_HTTP_STALE_SESSION_MS", stale_ms.to_string())
            // As with an activated venv: `python3` is the one with debugpy from PyPI (0.24.2
            // auto-detects the interpreter from PATH at launch).
            .env("PATH", venv_path())
            .stdout(std::process::Stdio::null());
        let proc = Spawned::spawn(&mut cmd);
        let server = Self {
            proc,
            port,
            log_file,
            dir,
        };
        if port != 0 {
            wait_for(Duration::from_secs(30), || server.health().ok())
                .expect("server never answered /health");
        }
        server
    }

    /// `GET /health`, parsed.
    pub fn health(&self) -> std::io::Result<Value> {
        health_at(self.port)
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.proc.pid
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        // Remember what the server started (by identity), stop it gracefully, then make sure
        // nothing it started outlives the test.
        // By marker and by parent links: detached adapters (the mock adapter's environment
        // carries no marker) are still children of their workers at this point.
        let mut descendants = descendants_of(self.proc.pid);
        for d in crate::procs::descendants(self.proc.pid) {
            if !descendants.contains(&d) {
                descendants.push(d);
            }
        }
        let ticks = start_ticks(self.proc.pid).unwrap_or(0);
        signal_if_same(self.proc.pid, ticks, Signal::SIGCONT);
        signal_if_same(self.proc.pid, ticks, Signal::SIGTERM);
        let _ = wait_for(Duration::from_secs(8), || {
            self.proc.child.try_wait().ok().flatten()
        });
        for (pid, ticks) in descendants {
            signal_if_same(pid, ticks, Signal::SIGCONT);
            signal_if_same(pid, ticks, Signal::SIGKILL);
        }
    }
}

/// Every process whose environment says it was started under `server` (the server exports
/// `MCP_DEBUGGER_MAIN_PID` to all its descendants), or whose parent chain leads to it.
pub fn descendants_of(server: u32) -> Vec<(u32, u64)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    let marker = format!("MCP_DEBUGGER_MAIN_PID={server}");
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == server {
            continue;
        }
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let ours = env.split(|b| *b == 0).any(|kv| kv == marker.as_bytes());
        if ours {
            if let Some(t) = start_ticks(pid) {
                out.push((pid, t));
            }
        }
    }
    out
}

/// A real MCP client session over Streamable HTTP.
pub struct Client {
    inner: RunningService<RoleClient, ()>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Client")
    }
}

impl Client {
    /// `initialize` + `notifications/initialized`.
    pub async fn connect(url: &str) -> Self {
        let transport = StreamableHttpClientTransport::from_uri(url.to_owned());
        let inner = ().serve(transport).await.expect("MCP initialize");
        Self { inner }
    }

    /// Calls a tool and parses `content[0].text` as JSON.
    pub async fn call(&self, tool: &'static str, args: Value) -> Value {
        let Value::Object(map) = args else {
            panic!("arguments must be an object")
        };
        let res = self
            .inner
            .call_tool(CallToolRequestParams::new(tool).with_arguments(map))
            .await
            .unwrap_or_else(|e| panic!("{tool} failed: {e}"));
        let v = serde_json::to_value(&res).expect("result to json");
        let text = v["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: no text in {v}"));
        serde_json::from_str(text).unwrap_or_else(|_| json!({ "raw": text }))
    }

    /// Creates a debug session; returns its id.
    pub async fn create_session(&self, language: &str, name: &str) -> String {
        let r = self
            .call(
                "create_debug_session",
                json!({ "language": language, "name": name }),
            )
            .await;
        r["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no sessionId in {r}"))
            .to_owned()
    }

    /// Starts debugging `script` with stop-on-entry.
    pub async fn start(&self, session: &str, script: &str) -> Value {
        self.call(
            "start_debugging",
            json!({ "sessionId": session, "scriptPath": script, "dapLaunchArgs": { "stopOnEntry": true } }),
        )
        .await
    }

    /// `n` mock debug sessions, each started (paused on entry) and its start checked, named
    /// `prefix-i`.
    pub async fn start_mock_sessions(&self, prefix: &str, n: usize) -> Vec<String> {
        let mut sessions = Vec::with_capacity(n);
        for i in 0..n {
            let s = self.create_session("mock", &format!("{prefix}-{i}")).await;
            let started = self.start(&s, &crate::fixture("mock/script.js")).await;
            assert_eq!(started["success"], true, "start_debugging: {started}");
            sessions.push(s);
        }
        sessions
    }

    /// Closes the MCP session cleanly (`DELETE /mcp`).
    pub async fn close(mut self) {
        let _ = self.inner.close().await;
    }
}

/// A bare MCP client over raw HTTP/1.1 that never opens a GET stream and never sends DELETE:
/// what a crashed client leaves behind. Its HTTP session is reaped at the server's next stale
/// sweep after `MCP_HTTP_STALE_SESSION_MS`.
#[derive(Debug)]
pub struct Abandoned {
    port: u16,
    /// The HTTP session id the server gave.
    pub http_session: String,
    next_id: u32,
}

impl Abandoned {
    /// `initialize` + `notifications/initialized`.
    pub fn connect(port: u16) -> Self {
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"abandoned","version":"1"}}});
        let (headers, _) = raw_post(port, None, &init);
        let http_session = headers
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_owned())
            })
            .expect("no Mcp-Session-Id header");
        raw_post(
            port,
            Some(&http_session),
            &json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        );
        Self {
            port,
            http_session,
            next_id: 2,
        }
    }

    /// Calls a tool and returns the parsed `content[0].text`.
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        self.next_id += 1;
        let req = json!({"jsonrpc":"2.0","id":self.next_id,"method":"tools/call","params":{"name":tool,"arguments":args}});
        let (_, body) = raw_post(self.port, Some(&self.http_session), &req);
        let data = body
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .unwrap_or(&body);
        let v: Value = serde_json::from_str(data).unwrap_or_else(|e| panic!("{tool}: {e}: {body}"));
        let text = v["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{tool}: {v}"));
        serde_json::from_str(text).unwrap_or_else(|_| json!({ "raw": text }))
    }
}

fn raw_post(port: u16, session: Option<&str>, body: &Value) -> (String, String) {
    let body = body.to_string();
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let sid = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{sid}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let (h, b) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    (h.to_owned(), b.to_owned())
}

fn venv_path() -> String {
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin");
    format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The python with debugpy from PyPI (`tests/.venv`, made by `make test`).
pub fn python_with_debugpy() -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    assert!(
        p.exists(),
        "no debugpy venv at {}: run `make test` (scripts/deps.sh test)",
        p.display()
    );
    p.to_string_lossy().into_owned()
}

/// The seed bug's stand-in: the real `proxy-bootstrap.js`, started by our own harness with a
/// live server as owner and a session id that server never created, initialised over IPC with
/// the mock adapter. Returns the harness (its child is the worker) and the worker's pid.
pub fn seed_bug_stand_in(owner: u32, dir: &Path) -> (Spawned, u32, String) {
    let session = uuid::Uuid::new_v4().to_string();
    let mut cmd = Command::new("node");
    cmd.arg(crate::fixture("seed-bug/harness.js"))
        .arg(package_dir())
        .arg(owner.to_string())
        .arg(&session)
        .arg(dir.join(format!("sessions/{session}/run-1")))
        .arg(crate::fixture("mock/script.js"));
    let mut h = Spawned::spawn(&mut cmd);
    let worker: u32 = h
        .read_line(Duration::from_secs(20))
        .parse()
        .expect("worker pid from the harness");
    (h, worker, session)
}
