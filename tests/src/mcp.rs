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
        let pkg = package_dir();
        let dir = tempfile::tempdir().expect("tempdir");
        let log_file = dir.path().join("server.log");
        let port = free_port();
        let mut cmd = Command::new("node");
        cmd.arg(pkg.join("dist/cli.mjs"))
            .args(["http", "-p", &port.to_string(), "--log-file"])
            .arg(&log_file)
            .env("MCP_HTTP_STALE_SESSION_MS", stale_ms.to_string())
            .stdout(std::process::Stdio::null());
        let proc = Spawned::spawn(&mut cmd);
        let server = Self {
            proc,
            port,
            log_file,
            dir,
        };
        wait_for(Duration::from_secs(30), || server.health().ok())
            .expect("server never answered /health");
        server
    }

    /// `GET /health`, parsed.
    pub fn health(&self) -> std::io::Result<Value> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(2)))?;
        s.write_all(b"GET /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
        let mut body = String::new();
        s.read_to_string(&mut body)?;
        let json = body.split("\r\n\r\n").nth(1).unwrap_or("");
        serde_json::from_str(json).map_err(std::io::Error::other)
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
        let descendants = descendants_of(self.proc.pid);
        self.proc.signal(Signal::SIGCONT);
        self.proc.signal(Signal::SIGTERM);
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

    /// Closes the MCP session cleanly (`DELETE /mcp`).
    pub async fn close(mut self) {
        let _ = self.inner.close().await;
    }
}
