//! Debian's real Prometheus and Alertmanager, started by a test on loopback (free ports, their
//! own temporary storage, no gossip port), and a webhook receiver the test runs, so that a test
//! can follow a finding from debugtop's `/metrics` through a rule to Alertmanager and into a
//! notification — and its resolution. Both programs end with the test (by identity).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::mcp::free_port;
use crate::procs::{wait_for, Spawned};

/// Where Debian puts them (`scripts/deps.sh test` installs them).
const PROMETHEUS: &str = "/usr/bin/prometheus";
const ALERTMANAGER: &str = "/usr/bin/prometheus-alertmanager";

/// Fails (never skips) when Debian's Prometheus or Alertmanager is missing.
pub fn require() {
    for bin in [PROMETHEUS, ALERTMANAGER, "/usr/bin/promtool"] {
        assert!(
            Path::new(bin).exists(),
            "{bin} is missing: run `scripts/deps.sh test` (Debian's prometheus and \
             prometheus-alertmanager packages)"
        );
    }
}

/// What a webhook receiver got: each POST's JSON body.
#[derive(Debug, Clone, Default)]
pub struct Received(Arc<Mutex<Vec<Value>>>);

impl Received {
    /// Every notification so far.
    pub fn all(&self) -> Vec<Value> {
        self.0.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

/// A webhook receiver on a free loopback port: each POST's body is kept, each answered 200.
#[derive(Debug)]
pub struct Webhook {
    /// Its URL.
    pub url: String,
    /// What it got.
    pub received: Received,
}

impl Webhook {
    /// Listens (a thread of the test's, for its life).
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the webhook");
        let port = listener.local_addr().expect("its address").port();
        let received = Received::default();
        let keep = received.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                if let Some(body) = read_post(stream) {
                    if let Ok(v) = serde_json::from_str(&body) {
                        if let Ok(mut all) = keep.0.lock() {
                            all.push(v);
                        }
                    }
                }
            }
        });
        Self {
            url: format!("http://127.0.0.1:{port}/hook"),
            received,
        }
    }
}

/// One HTTP request's body (by its Content-Length), answered 200.
fn read_post(mut stream: TcpStream) -> Option<String> {
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().ok()?;
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).ok()?;
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    String::from_utf8(body).ok()
}

/// A running Alertmanager that sends everything to one webhook, at once.
#[derive(Debug)]
pub struct Alertmanager {
    /// Its process.
    pub proc: Spawned,
    /// Its address (`127.0.0.1:PORT`).
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Alertmanager {
    /// Starts it with a route that notifies `webhook` after a second, resolutions included.
    pub fn start(webhook: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = format!(
            "route:\n  receiver: test\n  group_by: [alertname, instance, kind]\n  \
             group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n\
             receivers:\n  - name: test\n    webhook_configs:\n      - url: {webhook}\n        \
             send_resolved: true\n"
        );
        std::fs::write(dir.path().join("alertmanager.yml"), config).expect("write config");
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let proc = Spawned::spawn(
            Command::new(ALERTMANAGER)
                .arg(format!(
                    "--config.file={}",
                    dir.path().join("alertmanager.yml").display()
                ))
                .arg(format!(
                    "--storage.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--cluster.listen-address=")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        ready(&format!("http://{addr}/-/ready"), "Alertmanager");
        Self {
            proc,
            addr,
            _dir: dir,
        }
    }
}

/// A running Prometheus scraping one target every second, evaluating `rules` every second and
/// sending alerts to one Alertmanager.
#[derive(Debug)]
pub struct Prometheus {
    /// Its process.
    pub proc: Spawned,
    /// Its address.
    pub addr: String,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    /// Starts it: job `debugtop` scraping `target` (`host:port`), the rules in `rules` (the
    /// file's text), alerts to `alertmanager`.
    pub fn start(target: &str, rules: &str, alertmanager: &str) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("rules.yml"), rules).expect("write rules");
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files: [rules.yml]\n\
             alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['{alertmanager}']\n\
             scrape_configs:\n  - job_name: debugtop\n    static_configs:\n      - targets: ['{target}']\n"
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).expect("write config");
        let port = free_port();
        let addr = format!("127.0.0.1:{port}");
        let proc = Spawned::spawn(
            Command::new(PROMETHEUS)
                .arg(format!(
                    "--config.file={}",
                    dir.path().join("prometheus.yml").display()
                ))
                .arg(format!(
                    "--storage.tsdb.path={}",
                    dir.path().join("data").display()
                ))
                .arg(format!("--web.listen-address={addr}"))
                .arg("--rules.alert.resend-delay=1s")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null()),
        );
        ready(&format!("http://{addr}/-/ready"), "Prometheus");
        Self {
            proc,
            addr,
            _dir: dir,
        }
    }

    /// `GET` of an API path (`/api/v1/alerts`), its JSON.
    pub fn api(&self, path_and_query: &str) -> Option<Value> {
        let body = get(&format!("http://{}{path_and_query}", self.addr))?;
        serde_json::from_str(&body).ok()
    }

    /// An instant query's result vector.
    pub fn query(&self, promql: &str) -> Vec<Value> {
        let q: String = promql
            .bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect();
        self.api(&format!("/api/v1/query?query={q}"))
            .and_then(|v| v["data"]["result"].as_array().cloned())
            .unwrap_or_default()
    }
}

/// Waits for a program's readiness endpoint.
fn ready(url: &str, what: &str) {
    wait_for(Duration::from_secs(60), || {
        get(url).filter(|b| !b.is_empty()).map(|_| ())
    })
    .unwrap_or_else(|| panic!("{what} never became ready at {url}"));
}

/// A plain HTTP GET on loopback: the body of a 200, else `None`.
pub fn get(url: &str) -> Option<String> {
    let rest = url.strip_prefix("http://")?;
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
    let mut s = TcpStream::connect(host).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let resp = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = resp.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
        return None;
    }
    // Chunked bodies (Prometheus' API answers so): the chunks joined.
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Some(dechunk(body));
    }
    Some(body.to_owned())
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}
