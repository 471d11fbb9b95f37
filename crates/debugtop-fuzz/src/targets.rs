//! The targets: what each parses or redacts, its seeds, and its property.

use debugtop_core::actions::export;
use debugtop_core::collect::parse::{parse_cmdline, parse_env_markers, parse_stat};
use debugtop_core::redact::redact_text;
use debugtop_core::sources::health;
use debugtop_core::sources::logs::LineParser;
use debugtop_core::testing::{host_snapshot, sample_snapshot};

/// A fuzz target: its seeds, and a check of one input (with a random word for choices).
pub struct Target {
    /// Its name on the command line.
    pub name: &'static str,
    /// The starting inputs.
    pub seeds: fn() -> Vec<Vec<u8>>,
    /// `Err` (or a panic) is a finding.
    pub check: fn(&[u8], u64) -> Result<(), String>,
}

/// Every target, in the order they run.
pub const TARGETS: &[Target] = &[
    Target {
        name: "stat",
        seeds: stat_seeds,
        check: |b, _| {
            let _ = parse_stat(b);
            Ok(())
        },
    },
    Target {
        name: "cmdline",
        seeds: cmdline_seeds,
        check: |b, _| {
            let _ = parse_cmdline(b);
            Ok(())
        },
    },
    Target {
        name: "environ",
        seeds: environ_seeds,
        check: |b, _| {
            let _ = parse_env_markers(b);
            Ok(())
        },
    },
    Target {
        name: "log-line",
        seeds: log_seeds,
        check: log_line,
    },
    Target {
        name: "health",
        seeds: health_seeds,
        check: |b, _| {
            let _ = health::parse("http://127.0.0.1:1", b);
            Ok(())
        },
    },
    Target {
        name: "import",
        seeds: import_seeds,
        check: |b, _| {
            let _ = export::import(&String::from_utf8_lossy(b));
            Ok(())
        },
    },
    Target {
        name: "redaction",
        seeds: redaction_seeds,
        check: redaction,
    },
];

const LOGS: [&str; 6] = [
    include_str!("../../debugtop-core/src/sources/testdata/server-0.24.2.log"),
    include_str!("../../debugtop-core/src/sources/testdata/cli-0.24.2.log"),
    include_str!("../../debugtop-core/src/sources/testdata/proxy-0.24.2.log"),
    include_str!("../../debugtop-core/src/sources/testdata/interleaved-0.24.2.log"),
    include_str!("../../debugtop-core/src/sources/testdata/next-release-lines.log"),
    include_str!("../../debugtop-core/src/sources/testdata/worker-finished-0.24.2.log"),
];

fn proc_files(name: &str) -> Vec<Vec<u8>> {
    ["self", "1"]
        .iter()
        .filter_map(|p| std::fs::read(format!("/proc/{p}/{name}")).ok())
        .collect()
}

fn stat_seeds() -> Vec<Vec<u8>> {
    let mut s = proc_files("stat");
    s.push(b"4242 (we ird) (name)) S 1 4242 4242 0 -1 4194304 100 0 0 0 7 3 0 0 20 0 1 0 123456 1000000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0".to_vec());
    s
}

fn cmdline_seeds() -> Vec<Vec<u8>> {
    let mut s = proc_files("cmdline");
    s.push(b"node\0/p/dist/proxy/proxy-bootstrap.js\0--mcp-owner-pid=997\0--mcp-session-id=b8487178-f7b0-4c7a-8a9d-7390e6b8c356\0".to_vec());
    s.push(
        b"python3\0/d/debugpy\0--connect\x00127.0.0.1:5678\0--adapter-access-token\x008f3a9c\0app.py\0"
            .to_vec(),
    );
    s
}

fn environ_seeds() -> Vec<Vec<u8>> {
    let mut s = proc_files("environ");
    s.push(b"MCP_DEBUGGER_MAIN_PID=997\0NODE_OPTIONS=--require /x/js-debug/src/bootloader.js\0VSCODE_INSPECTOR_OPTIONS=:::{\"inspectorIpc\":\"/tmp/x\"}\0NODE_INSPECTOR_INFO={\"pid\":1031}\0DEBUGPY_LOG_DIR=/tmp/s/run-1\0OPENCODE=1\0CLAUDECODE=1\0".to_vec());
    s
}

fn log_seeds() -> Vec<Vec<u8>> {
    LOGS.iter()
        .flat_map(|l| l.lines())
        .map(|l| l.as_bytes().to_vec())
        .collect()
}

fn log_line(b: &[u8], _: u64) -> Result<(), String> {
    let text = String::from_utf8_lossy(b);
    let mut p = LineParser::for_file(std::path::Path::new(
        "/l/sessions/b8487178-f7b0-4c7a-8a9d-7390e6b8c356/run-1/proxy-b8487178-f7b0-4c7a-8a9d-7390e6b8c356.log",
    ));
    for line in text.lines() {
        let _ = p.parse(line);
    }
    Ok(())
}

fn health_seeds() -> Vec<Vec<u8>> {
    vec![
        br#"{"status":"ok","mode":"http","connections":1,"sessions":["629143fa-5b1c-4f1e-9a43-2f4c1f1b2d10"]}"#.to_vec(),
        br#"{"status":"ok","sessions":[],"details":[{"id":"a","debugSessions":[{"id":"b","language":"mock","state":"paused"}]}]}"#.to_vec(),
    ]
}

fn import_seeds() -> Vec<Vec<u8>> {
    [sample_snapshot(), host_snapshot()]
        .iter()
        .filter_map(|s| export::to_json(s).ok())
        .map(String::into_bytes)
        .collect()
}

fn redaction_seeds() -> Vec<Vec<u8>> {
    let mut s = log_seeds();
    s.extend(
        cmdline_seeds()
            .into_iter()
            .map(|c| c.iter().map(|b| if *b == 0 { b' ' } else { *b }).collect()),
    );
    s
}

/// The shapes a planted secret takes (`S` is replaced).
const SHAPES: [&str; 19] = [
    "--password S",
    "--token=S",
    r#"{"token":"S"}"#,
    "Authorization: Basic S",
    "Bearer S",
    "https://S@host/x",
    "https://user:S@host/x",
    "see http://h/cb?access_token=S&x=1",
    r#"--pass "a S b""#,
    "-pS",
    "API_KEY=S",
    "--adapter-access-token S",
    "curl -u alice:S x",
    "--passphrase S",
    "--bearer S",
    "-PS",
    "apikey sk-S",
    "root:$6$salt$S:19000:0:99999:7:::",
    "--password 'a S'",
];

/// Hostile text with a secret planted after it in some shape: the secret never survives.
fn redaction(b: &[u8], r: u64) -> Result<(), String> {
    let secret = format!("Zq{r:x}");
    let shape = SHAPES[(r % SHAPES.len() as u64) as usize].replace('S', &secret);
    let text = format!("{} {shape}", String::from_utf8_lossy(b));
    let out = redact_text(&text, None);
    if out.contains(&secret) {
        return Err(format!(
            "{shape:?} survived redaction after the text: {out:?}"
        ));
    }
    Ok(())
}
